/*
 * The scripted steps and the runner the EVICTED tests share (gate_evict.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/proto.h"
#include "gate_evict.h"
#include "gate_harness.h"
#include "gate_script.h"
#include "tproc.h"

char go[256], hold[256];
/* 20 kernels, a pause at half of them until `go` exists; 1 MiB more of
 * working set, where the eviction falls */
gh_spec_t spec = {"batch", "9", "20", "1000", "0", "1", go, NULL, NULL};

/* Revokes grant 1 and reads the program's RELEASE: 0, or -16. */
int revoked(int task, uint8_t *buf)
{
    dmn_msg_t m;
    dmn_msg_grant_t r1 = {1, 0, 0, 0, 0};
    if (tmsg_write_all(task, buf, dmn_proto_encode_grant(buf, 64, 3, DMN_MSG_REVOKE, &r1)) != 0 ||
        gs_read_until(task, buf, DMN_MSG_RELEASE, &m) != 0)
        return -16;
    return 0;
}

/* Sends the eviction of grant 2 in big (with the request for EVICTED when
 * ask): 0, or -17. */
int send_eviction(int task, uint8_t *buf, dmn_range_t big, int ask)
{
    dmn_range_t ev = {big.base + EVICT_OFF, 4096};
    size_t at = dmn_proto_encode_ranges(buf, 256, 4, DMN_MSG_PLAN, DMN_PLAN_EVICT, 2, &ev, 1);
    if (ask)
        at += dmn_proto_encode_ranges(buf + at, 256, 5, DMN_MSG_PLAN, DMN_PLAN_EVICT, 2, NULL, 0);
    return tmsg_write_all(task, buf, at) == 0 ? 0 : -17;
}

/* Grants the first PENDING and revokes the turn once the program paused
 * (the range the orders go in: *big). The task's socket, or minus the step
 * that failed. */
int turn_revoked(int ready, uint8_t *buf, int *fds, int *nfd, dmn_range_t *big)
{
    int task = gs_grant_to_pause(ready, buf, fds, nfd, big);
    if (task < 0)
        return task;
    return revoked(task, buf) == 0 ? task : -16;
}

/* Grants the first PENDING, revokes the turn once the program paused, and
 * sends the eviction of grant 2 (with the request for EVICTED when ask).
 * Returns the task's socket, or minus the step that failed. */
int evict_after_turn(int ready, uint8_t *buf, int *fds, int *nfd, int ask)
{
    dmn_range_t big;
    int task = turn_revoked(ready, buf, fds, nfd, &big);
    if (task < 0)
        return task;
    return send_eviction(task, buf, big, ask) == 0 ? task : -17;
}

/* Grants (grant seq) the PENDING numbered pending and waits for the
 * program to end. */
int grant_seq_to_end(int task, uint8_t *buf, int *fds, int nfd, uint64_t seq, uint64_t pending)
{
    if (gs_grant(task, buf, 6, seq, pending) != 0)
        return 41;
    return gs_finish(task, buf, fds, nfd);
}

int grant_to_end(int task, uint8_t *buf, int *fds, int nfd, uint64_t pending)
{
    return grant_seq_to_end(task, buf, fds, nfd, 3, pending);
}

/* Lets the program go on, grants its next PENDING and waits for it to end. */
int finish(int task, uint8_t *buf, int *fds, int nfd)
{
    dmn_msg_t m;
    gh_touch("go");
    if (gs_read_until(task, buf, DMN_MSG_PENDING, &m) != 0)
        return 40;
    return grant_to_end(task, buf, fds, nfd, m.u.ranges.seq);
}

/* Whether an EVICTED is among the messages that wait on fd now (read all). */
static int evicted_waiting(int fd, uint8_t *buf)
{
    dmn_msg_t m;
    struct pollfd pf = {fd, POLLIN, 0};
    while (poll(&pf, 1, 0) == 1) {
        if (tmsg_read(fd, buf, &m) != 0)
            return 1; /* the program went: counts as wrong */
        if (m.hdr.type == DMN_MSG_EVICTED)
            return 1;
    }
    return 0;
}

/* EVICTED for grant seq, asked for on task: not while the double's event is
 * held (asked twice, told not ready), then once it completed. 0, or the
 * step that failed. */
int evicted_after_hold(int task, uint8_t *buf, uint64_t seq)
{
    /* asked, told not ready; asked again (a round later), told not ready */
    if (gs_wait_file("hold.busy") != 0 || unlink(gh_path("hold.busy")) != 0 ||
        gs_wait_file("hold.busy") != 0)
        return 20;
    if (evicted_waiting(task, buf))
        return 21;
    unlink(hold); /* the event completes */
    dmn_msg_t m;
    if (gs_read_until(task, buf, DMN_MSG_EVICTED, &m) != 0)
        return 22;
    return m.u.evicted.grant_seq == seq ? 0 : 23;
}

/* Asks for EVICTED after the eviction at the pause; the answer must come at
 * once, for grant 2 with the failed count given, before two of the
 * program's STATS reports (not when the program waits again or the
 * eviction is carried out at last, which gmuxd would hold its switch for). */
int answered_at_once(int ready, uint32_t failed)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    int task = evict_after_turn(ready, buf, fds, &nfd, 1);
    if (task < 0)
        return -task;
    dmn_msg_t m;
    for (int stats = 0; stats < 2;) {
        if (tmsg_read(task, buf, &m) != 0)
            return 50;
        if (m.hdr.type == DMN_MSG_EVICTED) {
            if (m.u.evicted.grant_seq != 2 || m.u.evicted.failed != failed)
                return 51;
            return finish(task, buf, fds, nfd);
        }
        stats += m.hdr.type == DMN_MSG_STATS;
    }
    return 52; /* not answered */
}

/* Lets the program go on (creates the file `name`) to its next wait and
 * reads its PENDING (in *pending_p): the watcher's, sent with its RELEASE
 * (the task stays queued), then the launching thread's, sent holding the
 * gate's lock through its wait (until that one the watcher could still read
 * and poll itself). 0, or -1. */
int go_on_to_wait(int task, uint8_t *buf, const char *name, uint64_t *pending_p)
{
    dmn_msg_t m;
    gh_touch(name);
    if (gs_next_pending(task, buf, &m) != 0)
        return -1;
    *pending_p = m.u.ranges.seq;
    return 0;
}

int go_to_wait(int task, uint8_t *buf, uint64_t *pending_p)
{
    return go_on_to_wait(task, buf, "go", pending_p);
}

/* evict_after_turn, asked; then the mark polled (held). Socket, or -step. */
int evict_polled(int ready, uint8_t *buf, int *fds, int *nfd, int step)
{
    int task = evict_after_turn(ready, buf, fds, nfd, 1);
    if (task >= 0 && gs_wait_file("hold.busy") != 0)
        return -step;
    return task;
}

/* Grants the first PENDING, revokes the turn once the program paused, lets
 * it go on to its next wait (its PENDING in *pending_p) and, during that
 * wait, sends the eviction of grant 2 (with the request for EVICTED when
 * ask). Returns the task's socket, or minus the step that failed. */
int evict_in_wait(int ready, uint8_t *buf, int *fds, int *nfd, int ask, uint64_t *pending_p)
{
    dmn_range_t big;
    int task = turn_revoked(ready, buf, fds, nfd, &big);
    if (task < 0)
        return task;
    if (go_to_wait(task, buf, pending_p) != 0)
        return -61;
    return send_eviction(task, buf, big, ask) == 0 ? task : -17;
}

/* The program's policy: demand, no prefetch of its own (the double's record
 * holds only the orders), unless a case needs the proactive one. */
const char *policy = "demand";
const char *prog_log; /* the program's standard error goes there, if set */

/* Runs script against program 0 with the double's event held; the program
 * must end well, with nh evictions carried out (1: the one sent; 0: its
 * memory went with its context). Its counters in *o. */
void run_case_out(int (*script)(int), size_t nh, gh_out_t *o)
{
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    snprintf(hold, sizeof(hold), "%s", gh_path("hold"));
    unlink(go);
    unlink(gh_path("out0.paused"));
    unlink(gh_path("hold.busy"));
    gh_touch("hold");
    setenv("FAKE_CUDA_EVENT_HOLD", hold, 1);
    setenv("GMUX_POLICY", policy, 1);
    setenv("GMUX_GATE_IDLE_MS", "600000", 1); /* no IDLE while paused */
    pid_t fake, prog;
    gs_start_pair_log(&spec, script, prog_log, &fake, &prog);
    unsetenv("FAKE_CUDA_EVENT_HOLD");
    gs_wait_pair(fake, prog);
    gh_read_out(0, o);
    assert_int_equal(o->n, 20);
    assert_int_equal(o->nh, nh); /* the eviction, carried out on arrival */
    if (nh)
        assert_int_equal(o->h[0][2], 4096);
}

void run_case(int (*script)(int))
{
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    run_case_out(script, 1, o);
    free(o);
}

/* Runs script against the program in gate_prog mode capture, its turn
 * waits long (they do not time out). */
void run_case_long_wait(const char *capture, int (*script)(int))
{
    gh_spec_t saved = spec;
    spec.capture = capture;
    setenv("GMUX_DAEMON_TURN_TIMEOUT_MS", "600000", 1);
    run_case(script);
    unsetenv("GMUX_DAEMON_TURN_TIMEOUT_MS");
    spec = saved;
}
