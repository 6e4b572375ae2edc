/*
 * A switch held for its evictions: the part of the server (server.c) that
 * orders, across processes, the evictions of a switch before its fills.
 *
 * At a switch from X to A the plan may evict memory of tasks other than A
 * (X, or others); each of them carries its orders out in its own process, on
 * its own migration stream, while A's fills and the fill ahead of B, the task
 * expected next, would run at once in theirs: on a full device the driver
 * would then evict what it likes, not what the plan chose. So when such a
 * switch evicts from tasks that do not hold the turn (those carry their
 * orders out on arrival; holders once they give the turn back, or at their
 * next grant: below), the server sends
 * each of them, after its orders, an EVICT PLAN with no ranges, which asks
 * for an EVICTED once the evictions are done on the GPU (proto.h), and holds
 * A's orders and GRANT, and B's AHEAD, until every one of them answered, or
 * left (a task that died or hung up has nothing more to move), or
 * opts->evict_wait_ns passed. No decision is taken while a switch is held
 * (the plan the arbiter made stays valid, dmn_arb_action_t, and a hold lasts
 * at most the bound), but one: a latency-class task that starts waiting
 * supersedes a held switch to a batch task (dmn_hold_supersede), whose
 * requests the next switch then waits for too. A hold whose granted task left (died, hung up, was
 * dropped), went idle or gave the turn back meanwhile ends at once: nothing
 * is left to send, and the turn it had is the next task's now, not at the
 * bound (a dead task is reclaimed within the bounds docs/daemon-faults.md
 * states, whatever the eviction wait); its requests stay in force as a
 * superseded switch's do. The granted task's quantum starts when its GRANT
 * goes. A switch that evicts nothing from other tasks, or a bound of 0,
 * holds nothing, but for the requests still in force (carried): a switch
 * that fills waits for those whatever it evicts (the placement planned its
 * fills into the room they free). A switch whose plan fills nothing (no
 * FILL, no AHEAD) is not held: nothing it sends needs that room; the
 * requests it made and those carried stay for the next switch that fills.
 * The exception: a switch that asks the granted task itself (evictions it
 * kept, below) holds, as holding the turn it could not answer later. A
 * switch whose only fill is the fill ahead (no FILL) holds that AHEAD
 * alone (dmn_hold_ahead): A's orders and GRANT go at once, its turn needs
 * none of that room, and decisions go on while B's AHEAD waits; a decision
 * that grants before it went hands it back (dmn_arb_hold_ahead), so no
 * later switch's order reaches B before it.
 *
 * Evictions kept by a holder. A task that holds the turn (shared mode), or
 * whose turn was taken and not given back yet (dmn_task_t.taken: its shim
 * still holds it as far as it knows), when a switch evicts its memory is
 * not asked: its shim keeps the orders until it
 * gives the turn back (released, idle) or is granted again, and carries them
 * out then. The hold remembers such a task (kept_id, kept_grant: the turn it
 * held), and a later switch whose plan fills memory (FILL or AHEAD) while
 * that task no longer holds that turn asks it for EVICTED like an evicted
 * task and holds the same way; so does the switch that grants it the turn again, whatever
 * it fills (holding again, it could not answer a later switch: the shim
 * carries out stored orders only without the turn). It is forgotten once it
 * answered the last request made for them (kept_asked), even after the hold
 * that made it ended early (its grantee left or went idle), once a hold that
 * waited for it ended at the bound (not waited for again), or when it leaves.
 * Until it gives the turn back, the arbiter counts that memory in use for
 * the placement (dmn_task_view_t.kept): no fill is planned into it.
 *
 * Counted for STATUS: switches held, those that ended at the bound, the time
 * held in all and the longest hold; each only once what it held went (the
 * GRANT of a held switch, a fill ahead held alone). A held switch superseded
 * or void, a fill ahead handed back unsent, or either one whose write failed
 * is not counted, as STATUS counts that grant neither as a switch nor its
 * orders as planned (until 2026-12-03 a held switch counted whatever its end).
 *
 * Thread-safety: none; the server's one thread owns it.
 */
#ifndef DMN_SERVER_HOLD_H
#define DMN_SERVER_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/arbiter.h"
#include "daemon/proto.h"

typedef struct dmn_srv dmn_srv_t;

/* Requests waited for at most: one per task. A task asked again before it
 * answered (a switch superseded or ended early, then the next one asks it
 * too) answers the newer request only (its shim keeps one, and the event it
 * marks comes after every earlier eviction on its migration stream,
 * gate_evicted.h), and that answer covers the older one: the newer request
 * takes the older one's entry, with its own grant and bound. The requests
 * of tasks gone are dropped before a switch asks, so the table holds at
 * most one request per task present and no switch finds it full. Until
 * 2026-12-02 it kept both, sized twice the tasks: the older one was waited
 * for until its bound (its answer never came), and a run of switches ended
 * early could fill the table, after which tasks were no longer asked. */
#define DMN_HOLD_MAX_WAITS DMN_ARB_MAX_TASKS

typedef struct dmn_hold {
    bool active;
    /* only the fill ahead of act is held: its GRANT went, and decisions go
     * on (act.plan stays valid until one grants: dmn_arb_hold_ahead) */
    bool ahead_only;
    uint32_t ahead_id;           /* then the id of the task it is for */
    dmn_arb_action_t act;        /* the grant held; act.plan stays valid (no decision meanwhile) */
    uint32_t grant_id;           /* the granted task's id (its slot may be reused once it left) */
    uint64_t since_ns, until_ns; /* until_ns: the next request's bound */
    bool expired;                /* a request's bound passed during the hold */
    /* requests for EVICTED not answered yet, at most one per task (the
     * latest): those of the held switch and those made by switches
     * superseded (dmn_hold_supersede) or ended early (dmn_hold_poll), which
     * the next switch waits for too (with no switch held: carried) */
    uint32_t n_wait;
    uint32_t wait_id[DMN_HOLD_MAX_WAITS];    /* the tasks asked; 0 once answered or gone */
    uint64_t wait_grant[DMN_HOLD_MAX_WAITS]; /* the grant_seq each was asked for */
    uint64_t wait_until[DMN_HOLD_MAX_WAITS]; /* when waiting for it ends: its switch's bound */
    /* per slot: the id of a task sent evictions while it held the turn and
     * not known to have carried them out (0: none), and the grant_seq of
     * that turn */
    uint32_t kept_id[DMN_ARB_MAX_TASKS];
    uint64_t kept_grant[DMN_ARB_MAX_TASKS];
    /* the grant_seq of the request for EVICTED last sent for them (0: none
     * yet): its answer clears kept_id, whenever it comes */
    uint64_t kept_asked[DMN_ARB_MAX_TASKS];
    /* what the hold that ended last held is being sent (dmn_hold_poll
     * said so): counted once the caller says it went (dmn_hold_sent) */
    bool sending;
    uint64_t held_ns;                          /* how long the hold that ended last lasted */
    uint64_t waits, timeouts, wait_ns, max_ns; /* for STATUS */
} dmn_hold_t;

/* What dmn_hold_begin holds. */
typedef enum dmn_hold_what {
    DMN_HOLD_NONE,   /* nothing: the caller sends the granted task's part and the fill ahead now */
    DMN_HOLD_SWITCH, /* the granted task's orders, its GRANT and the fill ahead */
    DMN_HOLD_AHEAD,  /* the fill ahead only: its fills are the only ones (dmn_hold_ahead) */
} dmn_hold_what_t;

/*
 * After the plan's orders for every task but the granted one were sent:
 * asks the evicted tasks that do not hold the turn, and those that gave back
 * a turn whose evictions they kept (above), for EVICTED and, when any
 * request is in force and the plan fills (or it asked the granted task),
 * holds the switch (DMN_HOLD_SWITCH): the caller sends the granted task's
 * orders, its GRANT and the fill ahead only once dmn_hold_poll says so. A
 * plan whose only fill is the fill ahead (no FILL), not asking the granted
 * task, gives DMN_HOLD_AHEAD: nothing is held yet; the caller sends the
 * granted task's orders and GRANT now, and, once they went, holds the fill
 * ahead (dmn_hold_ahead). DMN_HOLD_NONE: nothing held, the caller sends
 * them all now.
 */
dmn_hold_what_t dmn_hold_begin(dmn_srv_t *s, const dmn_arb_action_t *act, uint64_t now);

/*
 * After dmn_hold_begin said DMN_HOLD_AHEAD and act's GRANT went: holds the
 * fill ahead alone, until the requests in force are answered (or their
 * tasks left, or the bound passed), the task it is for left, or a later
 * decision grants (the arbiter hands it back first: dmn_arb_hold_ahead).
 * Decisions go on meanwhile: the granted task holds its turn, and only the
 * fill ahead needs the room the evictions free. Counted as a hold once the
 * fill ahead went.
 */
void dmn_hold_ahead(dmn_srv_t *s, const dmn_arb_action_t *act, uint64_t now);

/* An EVICTED of grant_seq from the task in slot; failed: evictions it did not
 * carry out (refused, or put off by a graph capture): it has answered all the
 * same, the switch does not wait for them. An answer to the last request for
 * the evictions it kept counts whenever it comes (the hold that asked may
 * have ended early); any other for a switch that went on is ignored. */
void dmn_hold_evicted(dmn_srv_t *s, int slot, uint64_t grant_seq, uint32_t failed);

/* What dmn_hold_poll says to send. */
typedef enum dmn_hold_send {
    DMN_HOLD_SEND_NONE,
    DMN_HOLD_SEND_SWITCH, /* act's orders for the granted task, its GRANT, the fill ahead */
    DMN_HOLD_SEND_AHEAD,  /* act's fill ahead only (its GRANT went) */
} dmn_hold_send_t;

/*
 * Whether decisions may go on at now: false while a switch is held (its
 * GRANT not sent); true when none is, or only a fill ahead is held
 * (dmn_hold_ahead). When a wait ends (all answered or gone, the bound, or
 * the held grant no longer the granted task's to send: it left, went idle
 * or gave the turn back meanwhile) *send says what to send of act (the
 * caller then says with dmn_hold_sent whether it went: only then is it
 * counted): a held switch's orders, GRANT and fill ahead (its quantum
 * restarts now), or a held fill ahead, which also ends at once when the
 * task it is for left (the caller's send hands it back then). Ended early
 * (*send NONE), a held switch's requests not answered yet stay: the next
 * switch held waits for them too, each until its own bound, as after
 * dmn_hold_supersede; the orders it never sent are handed back to the
 * arbiter (dmn_arb_unsent: the placement and STATUS). A held fill ahead
 * that a later grant handed back (dmn_arb_hold_ahead) ends with nothing to
 * send; its requests stay likewise.
 */
bool dmn_hold_poll(dmn_srv_t *s, uint64_t now, dmn_hold_send_t *send, dmn_arb_action_t *act);

/*
 * After dmn_hold_poll said to send (*send not NONE): went, whether what the
 * hold held was written to its task, the held switch's GRANT or the held
 * fill ahead (not handed back: the task left, or its connection failed as
 * it was written). The hold is counted for STATUS only when it went.
 */
void dmn_hold_sent(dmn_hold_t *h, bool went);

/*
 * While a switch is held (dmn_hold_poll said false): when its granted task
 * is of the batch class and a latency-class task waits, the held switch is
 * superseded: the grant is taken back (dmn_arb_withdraw: its orders, GRANT
 * and fill ahead are never sent, and no REVOKE is needed; the placement
 * forgets them and STATUS counts neither them, the switch nor the hold), and true says the
 * caller may decide again. The requests for EVICTED it made stay: the next
 * switch held waits for them too (its fills must not overlap the evictions
 * already ordered), each until its own switch's bound. false: nothing done.
 */
bool dmn_hold_supersede(dmn_srv_t *s, uint64_t now);

/* The grant grant_seq to task id, the last one made, never went (void:
 * its task left, went idle or gave the turn back before its GRANT was
 * sent, or its connection failed while its orders or GRANT were written):
 * its orders and the fill ahead are handed back (dmn_arb_unsent), a
 * failure logged. */
void dmn_hold_unsent(dmn_srv_t *s, uint32_t id, uint64_t grant_seq);

/* Whether a switch is held now: no decision is taken until it ends. */
static inline bool dmn_hold_blocks(const dmn_hold_t *h)
{
    return h->active && !h->ahead_only;
}

/* When the held switch or fill ahead gives up waiting; UINT64_MAX when
 * none is held. */
uint64_t dmn_hold_deadline(const dmn_hold_t *h);

/* The STATUS head's counters (v6). */
void dmn_hold_status(const dmn_hold_t *h, dmn_msg_status_t *head);

#endif /* DMN_SERVER_HOLD_H */
