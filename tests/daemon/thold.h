/*
 * The helpers shared by the tests of a switch held for its evictions
 * (src/daemon/server_hold.c): test_server_hold.c (the wait itself, shared
 * mode, the setting) and test_server_hold_ends.c (holds that end early or
 * are superseded). A real server in a forked child (tsrv.h), with a
 * placement that evicts the previous holder's ranges, fills the incoming
 * task's and fills the task expected next ahead; the tasks are raw protocol
 * clients of the test, so each message is seen as it comes; what the server
 * hands back to the placement (on_unsent) is recorded where the test reads
 * it (unsent_log). The same scenarios run with the real placements too
 * (thold_place: "opt" or "chunk" under a small capacity): then what the
 * model counts resident per task is copied where the test reads it after
 * every call of the placement, and thold_end checks it against the orders
 * the clients read (thold_read keeps that ledger). A helper that
 * fails fails the test (cmocka).
 */
#ifndef THOLD_H
#define THOLD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/placement.h"
#include "daemon/proto.h"
#include "daemon/report.h"

extern char path[128];   /* the server's socket */
extern pid_t server_pid; /* the server child, 0 when none */
extern uint8_t buf[DMN_PROTO_MAX_MSG];
extern int evict_none;                           /* set: the placement evicts nothing */
extern uint64_t grace_ns;                        /* the grace of the next server started */
extern const dmn_range_t ws_x, ws_a, ws_b, ws_l; /* the working sets of X, A, B, L */

/* The orders the server handed back to the placement (on_unsent) since it
 * started, in memory shared with the server child: its calls and, in the
 * order given, the first THOLD_UNSENT_MAX orders. */
#define THOLD_UNSENT_MAX 16
typedef struct thold_unsent {
    uint32_t calls, n;
    dmn_plan_entry_t e[THOLD_UNSENT_MAX];
} thold_unsent_t;
extern thold_unsent_t *unsent_log;

/* The placement of the next server started: the recording one above, or the
 * real "opt" or "chunk" with chunks of THOLD_CHUNK bytes and a capacity of
 * thold_capacity bytes (the working sets ws_* are whole chunks). */
typedef enum { THOLD_REC, THOLD_OPT, THOLD_CHUNK } thold_place_t;
#define THOLD_CHUNK 0x1000ull
extern thold_place_t thold_place;
extern uint64_t thold_capacity;
extern int thold_ahead_off; /* set: the next server fills nothing ahead */

/* Whether the recording placement runs: its plans are those the
 * scenarios' comments describe. The real ones run under a capacity of two
 * chunks: X's working set is one chunk, A's two, B's three, L's four, so
 * the switch from X to A must evict X, and B's and L's fills are cut to
 * what fits (no room is left for a fill ahead then). */
static inline int thold_rec(void)
{
    return thold_place == THOLD_REC;
}

/* A test file's main: tests[0..n) with the recording placement, then
 * real[0..n_real) with "opt" and with "chunk" (the two lists may be one
 * array); nonzero when any failed. */
struct CMUnitTest;
int thold_main(const struct CMUnitTest *tests, size_t n, const struct CMUnitTest *real,
               size_t n_real);
/* The server handed back, in one call, exactly want[0..n) (n 0: nothing,
 * no call). Read once the server answered a message sent after the
 * hand-back (a STATUS). */
void handed_back(const dmn_plan_entry_t *want, uint32_t n);

/* A server child waiting at most wait_ms for evictions; quantum 20 ms, grace
 * grace_ns; time slices, or shared mode with shared set (the placement then
 * evicts the ranges of the tasks holding the turn beside the incoming one
 * instead of the previous holder's). start_server: time slices. */
void start_mode(int wait_ms, int shared);
void start_server(int wait_ms);
/* cmocka teardown: kills and reaps a server an early failure left. */
int teardown(void **state);

/* A registered raw client of class cls, priority prio and budget (reads
 * time out after 10 s); raw_client: batch, priority 0, no budget. */
int raw_client_of(const char *name, uint32_t cls, int32_t prio, uint64_t budget);
int raw_client(const char *name);

void send_pending(int fd, uint64_t request, dmn_range_t ws);
/* A PENDING of one launch whose working set is unknown (no ranges). */
void send_pending_none(int fd, uint64_t request);
void send_simple(int fd, dmn_msg_type_t type);
void send_evicted(int fd, uint64_t grant);

/* Reads one message from fd (a client of raw_client_of), noting the PLAN
 * orders it carries in the ledger that thold_end checks. */
void thold_read(int fd, dmn_msg_t *m);
/* Once no switch is held: reads what is left on each client fds[0..n) (the
 * ledger), then checks that STATUS's planned bytes are those of the orders
 * the clients read in all (every client that read orders is among fds, or
 * was given to thold_gone with what it had read), and, with a real
 * placement, that what the model counts resident for each of these tasks is
 * what the orders it read leave resident. */
void thold_agree(const int *fds, int n);
/* thold_agree(fds, n), then the clients closed and the server stopped. */
void thold_end(const int *fds, int n);
/* A client that hangs up now: its ledger still counts in thold_agree's
 * total (it read what it read), and it is closed. */
void thold_gone(int fd);
/* rep's holds: waits in all, and of those, the ones that gave up. */
void holds_are(const dmn_report_t *rep, uint64_t waits, uint64_t timeouts);

/* Reads until a message of type (a PLAN of kind `kind` when type is PLAN);
 * counts the PLAN ranges of each kind it passes in plans[] (may be NULL). */
void read_until(int fd, dmn_msg_type_t type, int kind, dmn_msg_t *m, int *plans);
/* Whether nothing waits to be read on fd, once the daemon answered a QUERY
 * sent after (so anything it sent with that switch has been written); *rep:
 * that QUERY's report. */
int nothing_for(int fd, dmn_report_t *rep);
/* Reads fd's EVICT PLANs up to the empty one that asks for EVICTED (into
 * *m), counting the ranges of each kind it passes in plans[] as read_until. */
void read_evictions(int fd, dmn_msg_t *m, int *plans);
/* The next message on x is its fill ahead (a PLAN AHEAD), and nothing comes
 * after it; no switch waited for evictions. */
void ahead_then_nothing(int x);
/* Waits (at most 1,000 STATUS queries) until the daemon shows the task
 * named name in state. */
void until_state(const char *name, uint32_t state);
/* The state rep shows the task named name in (it must be listed). */
uint32_t state_in(const dmn_report_t *rep, const char *name);

/* X holds the turn, A (and B when b >= 0) wait, X's quantum ends and it
 * releases. */
void x_released(int x, int a, int b);
/* A server waiting at most wait_ms for evictions; X, A (and B when b is not
 * NULL) registered; x_released: the switch to A evicts X's working set.
 * Returns its grant (2), marked on X's empty EVICT PLAN. */
uint64_t switched_x_to_a(int wait_ms, int *x, int *a, int *b);
/* Shared mode, evicting the holders beside the incoming task: X is granted
 * (1), A beside it (2: X, holding, gets its EVICT orders and is not asked
 * for EVICTED: it keeps them), then X gives the turn back (IDLE), and B asks
 * for it: the switch to B (3) fills B's working set and evicts A, holding. */
void shared_x_gave_back(int wait_ms, int *x, int *a, int *b);
/* B's FILL at its switch (3) after shared_x_gave_back: its working set with
 * the recording placement; one chunk with the real ones (the room left: A's
 * chunk, evicted as A holds the turn, is not free). */
dmn_range_t b_fill_3(void);
/* shared_x_gave_back, then X's request for EVICTED for B's switch (3) read. */
void shared_x_asked(int wait_ms, int *x, int *a, int *b);
/* L, granted (seq g + 1) after A's switch (g) was superseded, goes idle:
 * the switch to A (g + 2) evicts L's memory and asks it; once it answered,
 * A's GRANT goes. */
void l_idle_a_granted(int l, int a, uint64_t g);
/* B, idle after the switch that asked X (3), asks again: its switch (4)
 * neither asks X nor holds: STATUS counts holds in all (the first's, 1,
 * once its GRANT went; 0 when it was void). */
void b_again_unheld(int x, int b, uint64_t holds);

#endif
