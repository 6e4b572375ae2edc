/*
 * The task side of gmuxd: launch gating for one process. The shim links it
 * (static library gmux_daemon_client) and calls, at each kernel boundary:
 *
 *   dmn_client_pending(c, n, ranges, k)  launches are queued (and what they touch)
 *   dmn_client_wait_turn(c, timeout)     blocks until this task may launch
 *   ... launch ...
 *   dmn_client_idle(c)                   the queue ran dry: give the GPU back
 *   dmn_client_report(c, &stats)         counters for `gmux top`
 *
 * Holding the turn, dmn_client_wait_turn returns at once unless the daemon
 * has revoked it: then it releases the turn (the switch happens at this
 * kernel boundary) and waits for the next one. Each call costs one
 * non-blocking receive on the socket.
 *
 * Local mode: when no daemon is listening, or the daemon dies (EOF on the
 * socket), the client carries on without gating (every wait returns GMUX_OK
 * at once) and tries to reconnect on later calls, with a backoff that
 * doubles from 10 ms to 1 s; on reconnection it registers again and resends
 * its last stats. A reconnection never waits: the call that makes it
 * connects without waiting (a full queue of connections is a failed try)
 * and sends REGISTER; later calls look for the answer without waiting, and
 * the client stays in local mode until it comes, or gives the try up 2 s
 * after REGISTER went unanswered. Only dmn_client_open waits, up to those
 * 2 s, for its first registration. No call waits to send: what the socket
 * does not take waits in the client's queue, in order, and goes out at later
 * calls (dmn_client_poll, the shim's watcher thread, sends it as the daemon
 * reads). A daemon that is alive but does not read (stopped, swapped out) is
 * given up, and the client goes local, at the first call once nothing went
 * out for DMN_ENDPOINT_SEND_WAIT_MS (2 s) while bytes wait, or once more than
 * four of the largest messages wait; what waited is dropped then, with a
 * warning that says how many bytes. No call allocates memory after
 * dmn_client_open: the queue, the last PENDING's ranges and the message
 * buffers are fixed parts of the client (about 450 KiB of address space,
 * its pages given by the kernel as they are first written), so a send never
 * fails, nor the connection drops, for want of memory.
 *
 * PLAN orders from the daemon are handed to the on_plan callback, from
 * inside whichever client call received them, never lost for want of memory
 * (an eviction lost would leave the daemon counting as freed memory the task
 * still holds): the ranges of one PLAN message come in order, in one call or
 * in several (256 ranges at most each) of the same kind and grant sequence,
 * and one plan may come in several messages; a callback appends what each
 * call brings. After a PLAN message's last on_plan call comes one call of
 * on_plan_end, when set, with the message's whole range count. Once all
 * that had arrived was handed over (the socket has nothing more for now),
 * on_read_end, when set, is called, from the same client call: a caller
 * that acts on orders as they come acts there, on all of them at once, so
 * an order a later one of the same read takes back (an eviction of a range
 * filled ahead) is never carried out first. They are the orders of the
 * daemon on the other end of the connection they came on, and void once it
 * ends: dmn_client_epoch changes whenever a connection begins or ends, so a
 * caller that keeps orders for later drops those of another epoch (a daemon
 * that died, and the one registered with after it, both number their grants
 * from 1).
 *
 * The end of a switch's evictions (protocol v6): an EVICT PLAN with no
 * ranges says that every eviction of its grant was sent, and asks the task to
 * answer EVICTED once they are done on the GPU (gmuxd holds the grant of the
 * task they make room for until then, or a bound). It goes to on_evict_end,
 * never to on_plan; the caller answers with dmn_client_evicted once an event
 * recorded after the evictions completed. Without on_evict_end the client
 * answers at once (it carries nothing out, so nothing waits). While
 * dmn_client_wait_turn waits it calls on_wait between its reads: a caller
 * with an event to poll looks at it there (a nonzero return makes the next
 * read wait 1 ms instead of up to 100 ms).
 *
 * Thread-safety: a client is used by one thread at a time (the shim
 * serialises launches); different clients are independent.
 */
#ifndef DMN_CLIENT_H
#define DMN_CLIENT_H

#include <stdint.h>

#include <gmux/status.h>

#include "daemon/proto.h"

typedef void (*dmn_plan_fn)(void *arg, uint64_t grant_seq, dmn_plan_kind_t kind,
                            const dmn_range_t *ranges, uint32_t n);
typedef void (*dmn_plan_end_fn)(void *arg, uint64_t grant_seq, dmn_plan_kind_t kind,
                                uint32_t n_ranges);
typedef void (*dmn_read_end_fn)(void *arg);
typedef void (*dmn_evict_end_fn)(void *arg, uint64_t grant_seq);
typedef int (*dmn_wait_fn)(void *arg);

typedef struct dmn_client_opts {
    const char *path; /* socket; NULL: GMUX_SOCKET or the default */
    const char *name; /* shown by gmux top; truncated to 31 bytes */
    dmn_class_t cls;
    int32_t priority; /* DMN_PRIORITY_MIN..MAX */
    uint64_t budget;  /* device bytes asked for; 0: unspecified */
    dmn_plan_fn on_plan;
    void *plan_arg;                /* the first argument of the three callbacks */
    dmn_plan_end_fn on_plan_end;   /* NULL: not called */
    dmn_read_end_fn on_read_end;   /* NULL: not called */
    dmn_evict_end_fn on_evict_end; /* NULL: EVICTED answered at once */
    dmn_wait_fn on_wait;           /* NULL: not called */
} dmn_client_opts_t;

typedef struct dmn_client dmn_client_t;

/* Creates a client and tries once to register (waiting up to 2 s for a
 * daemon that accepted the connection to answer; never for a connection);
 * without a daemon it starts in local mode (still GMUX_OK). Errors: bad options (GMUX_ERR_RANGE: a
 * socket path too long for a socket address), no memory, or a daemon that refused the registration.
 */
gmux_status_t dmn_client_open(const dmn_client_opts_t *opts, dmn_client_t **out);

/* The room a dmn_client_open_why reason needs: the socket path and the
 * system's words. */
#define DMN_CLIENT_WHY_MAX 512

/* As dmn_client_open; when it fails, why (why_cap bytes, DMN_CLIENT_WHY_MAX
 * is enough) says what failed for a log line, ending in the status's name:
 * "cannot connect to PATH: Permission denied (GMUX_ERR_PERM)" for a socket
 * the task may not use (until 2026-12-03 said "gmuxd refused the task"),
 * "gmuxd refused the task (GMUX_ERR_PERM)" for a refusal (the daemon's
 * reason was logged as it came), the socket path too long, no memory. */
gmux_status_t dmn_client_open_why(const dmn_client_opts_t *opts, dmn_client_t **out, char *why,
                                  size_t why_cap);
/* Sends IDLE (without waiting, like every send) and closes the connection.
 * What still waits in the send queue is not flushed: nothing in it matters
 * once the task has gone. The daemon reclaims the task at the connection's
 * end (its turn, its place in the queue, its accounting; every task's
 * record, STATS included, goes with it, and the reclaim count grows with or
 * without the IDLE), or, when a forked child keeps the socket open, once it
 * sees the pid dead (daemon-faults.md). */
void dmn_client_close(dmn_client_t *c);

/* Announces n_launches queued launches and their predicted working set
 * (copied; at most DMN_MAX_RANGES ranges). */
gmux_status_t dmn_client_pending(dmn_client_t *c, uint32_t n_launches, const dmn_range_t *ranges,
                                 uint32_t n_ranges);

/* Blocks until the task may launch. GMUX_OK: granted, or local mode.
 * GMUX_ERR_TIMEOUT: not granted within timeout_ns (the request stays). */
gmux_status_t dmn_client_wait_turn(dmn_client_t *c, uint64_t timeout_ns);

/* Nothing is queued any more; gives the turn back if held. */
gmux_status_t dmn_client_idle(dmn_client_t *c);

/* The evictions of grant_seq (announced by on_evict_end) are done on the GPU;
 * failed: ranges the driver refused. Sends EVICTED, from a callback too (then
 * once the read that called it is over). Nothing in local mode. */
gmux_status_t dmn_client_evicted(dmn_client_t *c, uint64_t grant_seq, uint32_t failed);

/* Sends counters (kept and resent after a reconnection). */
gmux_status_t dmn_client_report(dmn_client_t *c, const dmn_msg_stats_t *stats);

/* GMUX_DAEMON_TURN_TIMEOUT_MS in ns: the shim's bound for dmn_client_wait_turn. */
uint64_t dmn_client_turn_timeout_ns(void);

/* Reads what the daemon sent without blocking (and tries to reconnect when
 * due) and answers whether the task may go on launching: 1 in local mode or
 * when it holds the turn unrevoked, 0 otherwise. Releases nothing: the next
 * dmn_client_wait_turn does. For a shim thread that watches for REVOKE. */
int dmn_client_poll(dmn_client_t *c);

/* The socket (for poll(2) on it: readable when an answer to a pending
 * REGISTER comes, too), -1 when there is none. */
int dmn_client_fd(const dmn_client_t *c);

int dmn_client_is_local(const dmn_client_t *c);           /* not registered with a daemon now */
int dmn_client_holds_turn(const dmn_client_t *c);         /* granted and not released */
uint32_t dmn_client_task_id(const dmn_client_t *c);       /* 0 in local mode */
uint32_t dmn_client_registrations(const dmn_client_t *c); /* successful REGISTERs */
/* Changes whenever the connection to a daemon begins or ends (never goes back
 * to a value it had): orders received under one value are void under another. */
uint64_t dmn_client_epoch(const dmn_client_t *c);
/* The grant sequence of the turn held (the GRANT's u64), 0 when none is held:
 * a PLAN fill names the grant it belongs to, and is void at any other. */
uint64_t dmn_client_grant_seq(const dmn_client_t *c);
/* The flags of that GRANT (DMN_GRANT_*, proto.h), 0 when none is held:
 * DMN_GRANT_PLANNED says the placement's fills are all it moves in. */
uint32_t dmn_client_grant_flags(const dmn_client_t *c);

#endif /* DMN_CLIENT_H */
