/*
 * Launch gating end to end, EVICTED (protocol v6; harness: gate_evict.h;
 * the cases during a graph capture: test_gate_evicted_capture.c). A
 * scripted daemon grants the program a turn, revokes it while the program
 * is paused (its launching thread out of the gate, so the watcher thread
 * reads what comes), and then sends an eviction of grant 2:
 *
 * - with the empty EVICT PLAN after it, which asks for EVICTED: the driver
 *   double answers cuEventQuery "not ready" while the file `hold` exists
 *   (and says it was asked, in `hold.busy`). The shim must not send EVICTED
 *   while the event recorded after the eviction is incomplete (the script
 *   waits until it was asked twice, then finds no EVICTED among what came),
 *   and must send it, for grant 2, once the event completed (`hold` removed).
 * - sent while the program held the turn, without the request (shared
 *   mode: kept until the turn is given back), and the request only after
 *   the program gave the turn back, for a later grant: EVICTED for that
 *   grant once the event recorded after the eviction completed.
 * - without it (a switch gmuxd does not hold): no EVICTED, and no event
 *   asked about, over two of the program's STATS reports after it.
 *
 * - with the request, the event's query then failing (FAKE_CUDA_EVENT_FAIL):
 *   EVICTED flagged failed, counted (evicted_unknown); until 2026-12-02 the
 *   gate took the failure for completion and reported the eviction done.
 * - with the request, after the program destroyed the context it waited in
 *   (the watcher cannot enter it; the memory went with it): EVICTED at once,
 *   failed 0, counted (evicted_ctx_gone).
 * - kept while the program held its turn, its context then destroyed and
 *   the same allocated again at the same addresses: EVICTED at once, failed
 *   1 (memory is tracked there again), and the eviction carried out on the
 *   new memory at the program's next wait (gmuxd counts those addresses as
 *   the task's until its next announcement).
 * - with the request, the mark then polled while the program waits for its
 *   turn in a second context: EVICTED before the grant.
 * - with the request, sent while the program waits for its turn with no
 *   context current (gate_prog CAPTURE 11), or in a 65th live context, which
 *   the shim keeps no state for (CAPTURE 13): carried out, and the event
 *   polled, in the context it waited in before; EVICTED before the grant.
 *
 * Either way the eviction itself is carried out (the double's record), but
 * for the context that went.
 *
 * One process, two contexts: the program waited for its turn in its first
 * context, where the watcher carries out the eviction, and goes on in a
 * second one, where its next wait prefetches a fill ahead sent with the
 * eviction. Each context has its own migration stream: the fill ahead must
 * wait, on the GPU, for an event recorded after the eviction (the double's
 * record, gate_prog's "O" line: prefetches to the device not ordered after
 * the eviction before them).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "daemon/proto.h"
#include "gate_evict.h"
#include "gate_harness.h"
#include "gate_script.h"
#include "tproc.h"

/* Reads task's messages up to the program's second STATS report (the
 * watcher read what was sent before that one): 0 when no EVICTED came, 31
 * when one did, 30 when the program went. */
static int no_evicted_two_stats(int task, uint8_t *buf)
{
    dmn_msg_t m;
    for (int stats = 0; stats < 2;) {
        if (tmsg_read(task, buf, &m) != 0)
            return 30;
        if (m.hdr.type == DMN_MSG_EVICTED)
            return 31;
        stats += m.hdr.type == DMN_MSG_STATS;
    }
    return 0;
}

static int scripted_held_event(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    int task = evict_after_turn(ready, buf, fds, &nfd, 1);
    if (task < 0)
        return -task;
    int rc = evicted_after_hold(task, buf, 2);
    return rc ? rc : finish(task, buf, fds, nfd);
}

/* Shared mode (docs/daemon-evict.md): the eviction of
 * grant 2 comes while the program holds the turn, unasked (the shim keeps
 * it: nothing answered over two STATS reports); the turn is given back
 * (RELEASE), and only then a later switch (grant 3) asks for EVICTED, with
 * nothing new to evict. The answer must wait for the event recorded after
 * the eviction carried out at the give-back, and then come for grant 3. */
static int scripted_kept_then_asked(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    dmn_range_t big;
    int task = gs_grant_to_pause(ready, buf, fds, &nfd, &big);
    if (task < 0)
        return -task;
    if (send_eviction(task, buf, big, 0) != 0)
        return 17;
    if (no_evicted_two_stats(task, buf) != 0)
        return 18;
    if (revoked(task, buf) != 0)
        return 16;
    size_t at = dmn_proto_encode_ranges(buf, 256, 5, DMN_MSG_PLAN, DMN_PLAN_EVICT, 3, NULL, 0);
    if (tmsg_write_all(task, buf, at) != 0)
        return 19;
    int rc = evicted_after_hold(task, buf, 3);
    return rc ? rc : finish(task, buf, fds, nfd);
}

static int scripted_no_request(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    int task = evict_after_turn(ready, buf, fds, &nfd, 0);
    if (task < 0)
        return -task;
    int rc = no_evicted_two_stats(task, buf);
    if (rc != 0)
        return rc;
    if (access(gh_path("hold.busy"), F_OK) == 0) /* no event was asked about */
        return 32;
    return finish(task, buf, fds, nfd);
}

/* The program destroyed the context it waited in at the pause (CAPTURE 10):
 * the watcher cannot enter it to evict, and the memory went with it: answered
 * at once, done (failed 0); until 2026-12-02 at the program's next wait. */
static int scripted_ctx_gone(int ready)
{
    return answered_at_once(ready, 0);
}

/* The eviction comes while the program holds its turn (kept), and only
 * then the program destroys the context it waited in and allocates the same
 * again in a new one (CAPTURE 17), at the same addresses (FAKE_CUDA_REUSE).
 * gmuxd counts the addresses it evicts as the task's until the task
 * announces its working set again, and the room as free once evicted: the
 * eviction must still move what the task holds there now. At the REVOKE,
 * with the request, EVICTED comes at once (the watcher cannot enter the
 * context that went) with failed 1 (memory is still tracked there), and the
 * program's next wait carries the eviction out on the new allocation. */
static int scripted_kept_then_ctx_gone(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    dmn_range_t big;
    dmn_msg_t m;
    int task = gs_grant_to_pause(ready, buf, fds, &nfd, &big);
    if (task < 0)
        return -task;
    if (send_eviction(task, buf, big, 0) != 0)
        return 17;
    if (no_evicted_two_stats(task, buf) != 0) /* the watcher read it, and kept it */
        return 18;
    gh_touch("go");
    if (gs_wait_file("out0.paused2") != 0)
        return 70;
    dmn_msg_grant_t r1 = {1, 0, 0, 0, 0};
    size_t at = dmn_proto_encode_grant(buf, 64, 5, DMN_MSG_REVOKE, &r1);
    at += dmn_proto_encode_ranges(buf + at, 256, 6, DMN_MSG_PLAN, DMN_PLAN_EVICT, 2, NULL, 0);
    if (tmsg_write_all(task, buf, at) != 0 || gs_read_until(task, buf, DMN_MSG_EVICTED, &m) != 0)
        return 71;
    if (m.u.evicted.grant_seq != 2 || m.u.evicted.failed != 1)
        return 72;
    gh_touch("go2"); /* the watcher's PENDING came with its RELEASE, before EVICTED */
    if (gs_read_until(task, buf, DMN_MSG_PENDING, &m) != 0)
        return 73;
    return grant_seq_to_end(task, buf, fds, nfd, 3, m.u.ranges.seq);
}

/* The watcher marked the eviction in the first context (the event held);
 * the program goes on in a second one (CAPTURE 9) and waits for its turn
 * there, holding the gate's lock, so the watcher cannot poll the mark. The
 * event completes while it waits: EVICTED must come before the program's
 * grant (its wait does not time out: GMUX_DAEMON_TURN_TIMEOUT_MS is long),
 * polled by the waiting thread inside the mark's context. */
static int scripted_wait_other_context(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    int task = evict_polled(ready, buf, fds, &nfd, 60);
    if (task < 0)
        return -task;
    uint64_t pending;
    if (go_to_wait(task, buf, &pending) != 0)
        return 61;
    dmn_msg_t m;
    unlink(hold); /* the event completes */
    if (gs_read_until(task, buf, DMN_MSG_EVICTED, &m) != 0)
        return 62;
    if (m.u.evicted.grant_seq != 2 || m.u.evicted.failed != 0)
        return 63;
    return grant_to_end(task, buf, fds, nfd, pending);
}

/* The program waits for its turn with no context current (CAPTURE 11),
 * holding the gate's lock, and the eviction comes, with the request, during
 * that wait: the waiting thread must carry it out, and poll the event,
 * inside the context it waited in before (the watcher cannot take the lock);
 * EVICTED must come once the event completed, before the program's grant
 * (its wait does not time out: GMUX_DAEMON_TURN_TIMEOUT_MS is long). */
static int scripted_wait_no_context(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    uint64_t pending;
    int task = evict_in_wait(ready, buf, fds, &nfd, 1, &pending);
    if (task < 0)
        return -task;
    int rc = evicted_after_hold(task, buf, 2);
    return rc ? rc : grant_to_end(task, buf, fds, nfd, pending);
}

/* The eviction and, in the same write, a fill ahead of grant 2 elsewhere in
 * the big range; no request for EVICTED. */
static int scripted_two_contexts(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    dmn_msg_t m;
    dmn_range_t big;
    dmn_msg_grant_t r1 = {1, 0, 0, 0, 0};
    int task = gs_grant_to_pause(ready, buf, fds, &nfd, &big);
    if (task < 0)
        return -task;
    if (tmsg_write_all(task, buf, dmn_proto_encode_grant(buf, 64, 3, DMN_MSG_REVOKE, &r1)) != 0 ||
        gs_read_until(task, buf, DMN_MSG_RELEASE, &m) != 0)
        return 16;
    dmn_range_t ev = {big.base + EVICT_OFF, 4096}, ahead = {big.base + 65536, 4096};
    size_t at = dmn_proto_encode_ranges(buf, 256, 4, DMN_MSG_PLAN, DMN_PLAN_EVICT, 2, &ev, 1);
    at += dmn_proto_encode_ranges(buf + at, 256, 5, DMN_MSG_PLAN, DMN_PLAN_AHEAD, 2, &ahead, 1);
    if (tmsg_write_all(task, buf, at) != 0)
        return 17;
    /* the watcher read both and carried out the eviction before its next report */
    if (gs_read_until(task, buf, DMN_MSG_STATS, &m) != 0 ||
        gs_read_until(task, buf, DMN_MSG_STATS, &m) != 0)
        return 18;
    return finish(task, buf, fds, nfd);
}

/* The mark polled (held), then its query fails: EVICTED for grant 2 must
 * come flagged failed (the gate cannot tell whether the eviction completed). */
static int scripted_query_fails(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    int task = evict_polled(ready, buf, fds, &nfd, 90);
    if (task < 0)
        return -task;
    gh_touch("fail");
    dmn_msg_t m;
    if (gs_read_until(task, buf, DMN_MSG_EVICTED, &m) != 0)
        return 91;
    if (m.u.evicted.grant_seq != 2 || m.u.evicted.failed == 0)
        return 92;
    unlink(gh_path("fail"));
    unlink(hold);
    return finish(task, buf, fds, nfd);
}

static void test_evicted_after_event(void **state)
{
    (void)state;
    run_case(scripted_held_event);
}

static void test_kept_evictions_answered_after_event(void **state)
{
    (void)state;
    run_case(scripted_kept_then_asked);
}

static void test_no_request_no_evicted(void **state)
{
    (void)state;
    run_case(scripted_no_request);
}

static void test_failed_query_reported_not_done(void **state)
{
    (void)state;
    static char fail[256];
    snprintf(fail, sizeof(fail), "%s", gh_path("fail"));
    unlink(fail);
    setenv("FAKE_CUDA_EVENT_FAIL", fail, 1);
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    run_case_out(scripted_query_fails, 1, o);
    unsetenv("FAKE_CUDA_EVENT_FAIL");
    assert_int_equal(o->evicted_unknown, 1);
    assert_int_equal(o->evicted_reports, 0);
    free(o);
}

static void test_fill_ahead_after_other_context(void **state)
{
    (void)state;
    gh_spec_t two = spec;
    two.capture = "9";
    gh_spec_t saved = spec;
    spec = two;
    run_case(scripted_two_contexts);
    spec = saved;
    FILE *f = fopen(gh_path("out0"), "r");
    assert_non_null(f);
    char line[256];
    long unordered = -1, device = 0;
    while (fgets(line, sizeof(line), f)) {
        if (line[0] == 'O')
            unordered = strtol(line + 2, NULL, 10);
        device += line[0] == 'D';
    }
    fclose(f);
    assert_int_equal(device, 1); /* the fill ahead (demand policy: nothing of its own) */
    assert_int_equal(unordered, 0);
}

static void test_ctx_gone_evicted_at_once(void **state)
{
    (void)state;
    gh_spec_t saved = spec;
    spec.capture = "10";
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    run_case_out(scripted_ctx_gone, 0, o);
    spec = saved;
    assert_int_equal(o->evicted_ctx_gone, 1);
    free(o);
}

static void test_kept_evictions_follow_address(void **state)
{
    (void)state;
    gh_spec_t saved = spec;
    spec.capture = "17";
    setenv("FAKE_CUDA_REUSE", "1", 1);
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    run_case_out(scripted_kept_then_ctx_gone, 1, o); /* carried out once, in the new context */
    unsetenv("FAKE_CUDA_REUSE");
    spec = saved;
    assert_int_equal(o->armed, 1); /* the new allocations are at the old addresses */
    assert_int_equal(o->evicted_ctx_gone, 1);
    free(o);
}

static void test_mark_of_other_context_polled_in_wait(void **state)
{
    (void)state;
    run_case_long_wait("9", scripted_wait_other_context);
}

static void test_request_in_wait_without_context(void **state)
{
    (void)state;
    run_case_long_wait("11", scripted_wait_no_context);
}

/* The same as test_request_in_wait_without_context, the program waiting in
 * a context it launches in, the 65th live one (CAPTURE 13, proactive policy:
 * 64 contexts hold the shim's entries of context state), for which the shim
 * keeps no state: gated all the same (the script grants only after
 * EVICTED), and the eviction carried out, and its event polled, in the
 * context the program waited in before. */
static void test_request_in_wait_in_untracked_context(void **state)
{
    (void)state;
    policy = "proactive";
    static char log[256];
    snprintf(log, sizeof(log), "%s", gh_path("log0")); /* gh_path's buffers rotate */
    prog_log = log;
    setenv("FAKE_CUDA_MAX_CTX", "80", 1);
    run_case_long_wait("13", scripted_wait_no_context);
    unsetenv("FAKE_CUDA_MAX_CTX");
    policy = "demand";
    prog_log = NULL;
    /* the shim kept no state for it: said once */
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[1024];
    int said = 0;
    while (fgets(line, sizeof(line), f))
        said += strstr(line, "live CUDA contexts: no migration stream") != NULL;
    fclose(f);
    assert_int_equal(said, 1);
}

int main(void)
{
    gh_init();
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        GH_TEST(test_evicted_after_event),
        GH_TEST(test_kept_evictions_answered_after_event),
        GH_TEST(test_no_request_no_evicted),
        GH_TEST(test_failed_query_reported_not_done),
        GH_TEST(test_fill_ahead_after_other_context),
        GH_TEST(test_ctx_gone_evicted_at_once),
        GH_TEST(test_kept_evictions_follow_address),
        GH_TEST(test_mark_of_other_context_polled_in_wait),
        GH_TEST(test_request_in_wait_without_context),
        GH_TEST(test_request_in_wait_in_untracked_context),
    };
    /* clang-format on */
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
