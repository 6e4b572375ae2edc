/*
 * Scripted daemons for the launch-gating tests (test_gate_epoch.c,
 * test_gate_order.c): a child process of the test that speaks gmuxd's
 * protocol to one gate_prog (harness: gate_harness.h) and sends it exactly
 * the messages a case needs, in the order it needs them. Reads use blocking
 * sockets with a receive timeout; every wait is bounded.
 *
 * Thread-safety: none (one scripted daemon per process).
 */
#ifndef GATE_SCRIPT_H
#define GATE_SCRIPT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/proto.h"
#include "gate_harness.h"
#include "msg_io.h"

/* Reads messages until one of the given type (others skipped). */
int gs_read_until(int fd, uint8_t *buf, dmn_msg_type_t type, dmn_msg_t *m);
/* Reads messages until one of type `type` that follows one of type `after`. */
int gs_read_after(int fd, uint8_t *buf, dmn_msg_type_t after, dmn_msg_type_t type, dmn_msg_t *m);

/* Listens on gh_sock, says so on `ready`, accepts connections until the
 * shim's REGISTER and answers it, then reads the program's first PENDING
 * into *m and the largest range it announces into *big (the buffer the
 * scripts place their orders in). The connections go to fds/nfd. The task's
 * socket, or minus the step that failed (14: no range of 1 MiB or more). */
int gs_accept_big(int ready, uint8_t *buf, int *fds, int *nfd, dmn_msg_t *m, dmn_range_t *big);

/* gs_accept_big, then grants that PENDING (turn 1) and waits until the
 * program paused holding it (out0.paused: its launching thread is out of
 * the gate, so what comes next is read by the watcher thread). The task's
 * socket, or minus the step that failed (15: the grant or the pause). */
int gs_grant_to_pause(int ready, uint8_t *buf, int *fds, int *nfd, dmn_range_t *big);

/* Sends GRANT grant_seq (a 20 ms quantum) for the PENDING numbered
 * request, as message seq. 0, or -1. */
int gs_grant(int task, uint8_t *buf, uint32_t seq, uint64_t grant_seq, uint64_t request);
/* Reads the program's next wait, two PENDINGs: the watcher's, sent with its
 * RELEASE (the task stays queued), then the launching thread's, sent holding
 * the gate's lock through its wait. The second goes to *m. 0, or -1. */
int gs_next_pending(int task, uint8_t *buf, dmn_msg_t *m);
/* gs_next_pending, then grants that PENDING (gs_grant). 0, or -1. */
int gs_grant_next(int task, uint8_t *buf, uint32_t seq, uint64_t grant_seq);
/* The scripted daemon goes: its socket file is removed and its connections
 * fds[0..nfd) closed, so the program sees the daemon gone. */
void gs_close(int *fds, int nfd);
/* Reads until the program ends (its connection closes), then gs_close. 0. */
int gs_finish(int task, uint8_t *buf, int *fds, int nfd);

/* Messages gathered to go to the program in one write, so that one read of
 * its gets them all (the orders of a case, and the REVOKE that shows by its
 * RELEASE that the program read them). */
typedef struct gs_batch {
    uint8_t b[2 * DMN_PROTO_MAX_MSG]; /* a PLAN of the most ranges, and more */
    size_t at;
    int failed; /* a message did not fit */
} gs_batch_t;
/* Appends PLAN seq of kind (DMN_PLAN_*) for grant grant_seq: r[0..n). */
void gs_batch_plan(gs_batch_t *w, uint32_t seq, uint32_t kind, uint64_t grant_seq,
                   const dmn_range_t *r, uint32_t n);
/* Appends GRANT grant_seq (a 20 ms quantum) for the PENDING numbered request. */
void gs_batch_grant(gs_batch_t *w, uint32_t seq, uint64_t grant_seq, uint64_t request);
/* The same with GRANT flags (DMN_GRANT_*, protocol v8). */
void gs_batch_grant_flags(gs_batch_t *w, uint32_t seq, uint64_t grant_seq, uint64_t request,
                          uint32_t flags);
/* Appends REVOKE grant_seq. */
void gs_batch_revoke(gs_batch_t *w, uint32_t seq, uint64_t grant_seq);
/* Writes the batch to task in one write and empties it. 0, or -1 (a
 * message did not fit, or the write failed). */
int gs_batch_send(int task, gs_batch_t *w);

/* A scripted daemon's side of its program: the connections it accepted
 * (fds[0..nfd)), the task's socket among them, the largest range the
 * program announced (the buffer the scripts place their orders in), the
 * last message read, a read buffer and a batch to write. Large: static in
 * the script. */
typedef struct gs_conn {
    uint8_t buf[DMN_PROTO_MAX_MSG];
    gs_batch_t w;
    dmn_msg_t m;
    dmn_range_t big;
    int fds[8], nfd, task;
} gs_conn_t;

/* gs_grant_to_pause into c. 0, or the step that failed (an exit status). */
int gs_conn_paused(int ready, gs_conn_t *c);
/* Sends c's batch (ending in a REVOKE) and reads until the RELEASE: the
 * program read what came before it. 0, or -1. */
int gs_conn_released(gs_conn_t *c);

/* gs_conn_released, then creates gh_dir/go (the program goes on), reads
 * its next wait (gs_next_pending) and appends to c's batch GRANT grant_seq
 * for it with flags (DMN_GRANT_*), as message seq. 0, or -1. */
int gs_conn_regrant(gs_conn_t *c, const char *go, uint32_t seq, uint64_t grant_seq, uint32_t flags);

/* Sends c's batch, then reads until the program ends (gs_finish). 0, or
 * 18 (the send failed). */
int gs_conn_send_finish(gs_conn_t *c);

/* Waits (a minute at most) until gh_dir/name exists: 0, or -1. */
int gs_wait_file(const char *name);

/* Starts the scripted daemon script (a child that writes one byte to its
 * pipe once it listens) and then program 0 of spec under the gate; the
 * program's environment (GMUX_POLICY, GMUX_GATE_IDLE_MS) is the caller's,
 * set back to "proactive" and 200 once it started. */
void gs_start_pair(const gh_spec_t *spec, int (*script)(int), pid_t *fake, pid_t *prog);
/* The same, with the program's standard error (the shim's log) written to
 * the file log (truncated) when log is not NULL. */
void gs_start_pair_log(const gh_spec_t *spec, int (*script)(int), const char *log, pid_t *fake,
                       pid_t *prog);

/* Waits (120 s at most) for the scripted daemon to end its script; fails
 * the test, killing both, unless it exited 0. */
void gs_wait_script(pid_t fake, pid_t prog);

/* gs_wait_script, then waits for the program and asserts it exited 0. */
void gs_wait_pair(pid_t fake, pid_t prog);

/* Runs script against program 0 of spec under GMUX_POLICY policy, with no
 * IDLE while it pauses (GMUX_GATE_IDLE_MS 600000), the program's log in
 * gh_dir/log0; waits for both (gs_wait_pair) and returns gs_out0(). */
gh_out_t *gs_run_logged(const gh_spec_t *spec, int (*script)(int), const char *policy);

/* Program 0's output (gh_read_out), allocated (the caller frees it), its
 * prefetches to the device and to the host printed. */
gh_out_t *gs_out0(void);

#endif /* GATE_SCRIPT_H */
