/*
 * daemon_soak's shared page (daemon_soak.c): one slot per client process,
 * written by the client (counters) and the supervisor (pid, born_ns), read
 * by both and by the other clients, with atomics; and the starvation rule
 * (soak_turns.c), judged by counts of turns, not by time.
 */
#ifndef SOAK_H
#define SOAK_H

#include <stdint.h>

#include "daemon/proto.h"

#define SOAK_MAX_CLIENTS 32
#define SOAK_RING        256 /* grant numbers a client keeps of its last turns */

#define SOAK_UNLISTED (DMN_STATE_HELD + 1) /* timeout_as: no state known */

/* One client's place; the supervisor writes pid and born_ns, the client
 * the counters (atomics: two processes share the page). */
typedef struct soak_slot {
    int32_t pid;
    int32_t parked; /* the client stopped churning and holds a registration */
    uint64_t born_ns;
    uint64_t turns, timeouts, opens, open_errors, local_turns;
    uint64_t wait_max_ns; /* the longest wait for a turn that was granted */
    /* waits unanswered after 2 s, by the state the daemon gave the task in a
     * STATUS asked right after: DMN_STATE_*, and SOAK_UNLISTED: not listed or
     * no answer */
    uint64_t timeout_as[SOAK_UNLISTED + 1];
    /* of those still pending: how many had another task holding the turn */
    uint64_t timeout_held;
    /* the most turns one other client had during one of this client's
     * waits, less its registrations meanwhile; waits over the bound */
    uint64_t overtaken_max, starved;
    /* the daemon's grant number of turn k at [k % SOAK_RING], written
     * before turns counts it */
    uint64_t grant[SOAK_RING];
} soak_slot_t;

typedef struct soak_shared {
    int32_t stop; /* finish churning, stay registered */
    int32_t quit; /* close and exit */
    soak_slot_t slot[SOAK_MAX_CLIENTS];
} soak_shared_t;

/* The page, mapped MAP_SHARED before the clients fork. */
extern soak_shared_t *sh;

#define LOAD(p)     __atomic_load_n(p, __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_SEQ_CST)
#define BUMP(p)     __atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST)

/* What the other clients had done when this one began to wait. */
typedef struct soak_seen {
    uint64_t born[SOAK_MAX_CLIENTS], opens[SOAK_MAX_CLIENTS], turns[SOAK_MAX_CLIENTS];
} soak_seen_t;

/* Notes the others' counts; called once the PENDING is in the socket. */
void soak_seen_take(soak_seen_t *v, int n_clients);

/* Judges client i's wait (the rule of daemon_soak.c's header) against the
 * turns the others were granted before the daemon's grant number
 * before_grant (UINT64_MAX: not granted, the daemon still has it pending)
 * and counted since v; over the bound, bumps s->starved and says so. */
void soak_seen_judge(const soak_seen_t *v, int n_clients, soak_slot_t *s, int i,
                     uint64_t before_grant);

#endif /* SOAK_H */
