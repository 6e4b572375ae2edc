/*
 * The shared part of the EVICTED tests (test_gate_evicted.c,
 * test_gate_evicted_capture.c): one program (gate_prog, 20 kernels, a pause
 * at half of them until the file `go` exists) against a scripted daemon
 * (gate_script.h) that grants it a turn, revokes it at the pause and sends
 * an eviction of grant 2, with the driver double's event held (the file
 * `hold`) until a script lets it complete. The steps below return the
 * task's socket or 0 on success, and the number of the step that failed
 * otherwise (negative where a socket is returned): gate_evict.c says which.
 */
#ifndef GATE_EVICT_H
#define GATE_EVICT_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/proto.h"
#include "gate_harness.h"

extern char go[256], hold[256];
extern gh_spec_t spec;       /* the program; .capture set by a case, restored after */
extern const char *policy;   /* its GMUX_POLICY ("demand" unless a case needs another) */
extern const char *prog_log; /* its standard error goes there, if set */

#define EVICT_OFF 8192u /* where in the big range the eviction falls */

int revoked(int task, uint8_t *buf);
int send_eviction(int task, uint8_t *buf, dmn_range_t big, int ask);
/* Grants the first PENDING and revokes the turn once the program paused
 * (the range the orders go in: *big). */
int turn_revoked(int ready, uint8_t *buf, int *fds, int *nfd, dmn_range_t *big);
int evict_after_turn(int ready, uint8_t *buf, int *fds, int *nfd, int ask);
int grant_seq_to_end(int task, uint8_t *buf, int *fds, int nfd, uint64_t seq, uint64_t pending);
int grant_to_end(int task, uint8_t *buf, int *fds, int nfd, uint64_t pending);
int finish(int task, uint8_t *buf, int *fds, int nfd);
int evicted_after_hold(int task, uint8_t *buf, uint64_t seq);
int answered_at_once(int ready, uint32_t failed);
int go_on_to_wait(int task, uint8_t *buf, const char *name, uint64_t *pending_p);
int go_to_wait(int task, uint8_t *buf, uint64_t *pending_p);
int evict_polled(int ready, uint8_t *buf, int *fds, int *nfd, int step);
int evict_in_wait(int ready, uint8_t *buf, int *fds, int *nfd, int ask, uint64_t *pending_p);

/* Runs script against the program with the double's event held; asserts
 * that it ended well with nh evictions carried out; its counters in *o. */
void run_case_out(int (*script)(int), size_t nh, gh_out_t *o);
void run_case(int (*script)(int));
/* The same in gate_prog mode capture, its turn waits long. */
void run_case_long_wait(const char *capture, int (*script)(int));

#endif /* GATE_EVICT_H */
