/*
 * Launch gating end to end, EVICTED while the program captures a graph
 * (protocol v6; harness: gate_evict.h, the cases without a capture:
 * test_gate_evicted.c). A scripted daemon grants the program a turn,
 * revokes it while the program is paused, and then sends an eviction of
 * grant 2:
 *
 * - while a graph capture puts the eviction off (gate_prog CAPTURE 1): the
 *   request answered at once, flagged failed, counted (evicted_put_off).
 * - with the request, the event polled again while another thread of the
 *   program captures in mode GLOBAL (CAPTURE 14): the poll (an event query)
 *   made in mode RELAXED, the capture ends well, EVICTED once the event
 *   completed. Until 2026-12-02 the watcher queried in its default mode
 *   GLOBAL: the driver double refused the query and invalidated the
 *   capture (the program exited 16).
 * - without the request, sent while the program waits for its turn with no
 *   context current and a graph capture puts it off (gate_prog CAPTURE 12),
 *   and still stored at the grant: kept, and carried out once the turn is
 *   given back after the capture ended. Until 2026-12-02 the grant dropped
 *   it, never carried out (the thread that got the turn had no context to
 *   move it in).
 * - unasked, while a capture begins on the program's non-blocking launch
 *   stream where the shim does not see it, right after the shim's query of
 *   that stream, as the watcher orders the eviction after the program's two
 *   non-blocking streams (gate_prog CAPTURE 18): the migration stream joins
 *   the capture (its wait for the event recorded on the launch stream). It
 *   must be left to the capture at once: the capture ends well with none of
 *   the shim's work in it, the eviction goes later on a new migration
 *   stream, and the joined one is destroyed once the capture ended. Until
 *   2026-12-04 the shim went on to wait there for the event recorded on the
 *   second stream, outside the capture: refused (ISOLATION), the program's
 *   capture invalidated (exit 16), the join not seen, and the eviction
 *   issued on the joined stream.
 * - the same while a launch without a turn (its wait timed out) holds the
 *   migration stream, its prefetch stalled by the double (gate_prog
 *   CAPTURE 20): the ordering must be put off until the launch queued its
 *   prefetch and event. Until 2026-12-04 they went on the stream that had
 *   just joined the capture and pulled the launch's stream in (exit 16).
 *   That launch found no ordering in progress: it prefetched
 *   (launch_no_prefetch_ordering 0).
 * - the other way round, without a capture: a launch without a turn, held
 *   past its gate, meets the watcher's ordering of the eviction in progress
 *   (held at its query of the launch stream until the launch returned,
 *   gate_prog CAPTURE 21): the launch goes on without its prefetch, and
 *   that is counted (launch_no_prefetch_ordering 1). Until 2026-12-04
 *   nothing counted it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/proto.h"
#include "gate_evict.h"
#include "gate_harness.h"
#include "gate_script.h"
#include "tproc.h"

/* A blocking stream captures a graph through the pause (gate_prog CAPTURE
 * 1): the shim puts the eviction off until the capture ends, and must answer
 * at once, flagged failed (1 range not done); until 2026-12-02 it answered
 * once the capture ended (gmuxd held its switch for the bound). */
static int scripted_capture_deferred(int ready)
{
    return answered_at_once(ready, 1);
}

/* The program waits for its turn with no context current while a blocking
 * stream captures a graph (CAPTURE 12); the eviction comes, unasked, during
 * that wait and is put off (the capture), then grant 3. The program pushes
 * its context back, ends the capture and stops (out0.pushed) holding the
 * turn; the turn is revoked, and the watcher, now free to, must carry out
 * the eviction kept (run_case_out: one eviction in the double's record). */
static int scripted_grant_without_context(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    uint64_t pending;
    int task = evict_in_wait(ready, buf, fds, &nfd, 0, &pending);
    if (task < 0)
        return -task;
    dmn_msg_grant_t r3 = {3, 0, 0, 0, 0};
    if (gs_grant(task, buf, 6, 3, pending) != 0 || gs_wait_file("out0.pushed") != 0)
        return 70;
    if (tmsg_write_all(task, buf, dmn_proto_encode_grant(buf, 64, 7, DMN_MSG_REVOKE, &r3)) != 0)
        return 71;
    if (go_on_to_wait(task, buf, "out0.resume", &pending) != 0)
        return 72;
    return grant_seq_to_end(task, buf, fds, nfd, 4, pending);
}

/* The watcher marked the eviction and polled the mark (the event held);
 * then another thread of the program begins a capture in mode GLOBAL
 * (gate_prog CAPTURE 14, from out0.cap on) and the watcher polls again
 * during it. The poll is an event query, a potentially unsafe call: a
 * thread in the default mode GLOBAL may not make it while another thread
 * captures in mode GLOBAL (the driver refuses it, and the capture is
 * invalidated). No EVICTED while the event is held, one once it
 * completed, and the program's capture must end well (run_case: exit 0, not
 * 16). */
static int scripted_query_in_capture(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    int task = evict_polled(ready, buf, fds, &nfd, 80); /* polled before the capture */
    if (task < 0)
        return -task;
    gh_touch("out0.cap");
    if (gs_wait_file("out0.capturing") != 0)
        return 81;
    int rc = evicted_after_hold(task, buf, 2); /* its next polls come during the capture */
    return rc ? rc : finish(task, buf, fds, nfd);
}

static void test_deferred_answered_at_once(void **state)
{
    (void)state;
    gh_spec_t saved = spec;
    spec.capture = "1";
    run_case(scripted_capture_deferred);
    spec = saved;
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    gh_read_out(0, o);
    assert_int_equal(o->evict_deferred, 1);
    assert_int_equal(o->evicted_put_off, 1);
    assert_int_equal(o->evicted_reports, 0);
    assert_int_equal(o->gate_no_turn, 0); /* every wait got its turn */
    free(o);
}

static void test_mark_polled_relaxed_in_capture(void **state)
{
    (void)state;
    gh_spec_t saved = spec;
    spec.capture = "14";
    unlink(gh_path("out0.cap"));
    unlink(gh_path("out0.capturing"));
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    run_case_out(scripted_query_in_capture, 1, o);
    spec = saved;
    print_message("unsafe calls let through as RELAXED during the capture: %llu\n", o->relaxed);
    assert_true(o->relaxed >= 1); /* the query during it, made RELAXED */
    free(o);
}

static void test_kept_at_grant_without_context(void **state)
{
    (void)state;
    run_case_long_wait("12", scripted_grant_without_context);
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    gh_read_out(0, o);
    assert_int_equal(o->evict_deferred, 1); /* put off in the wait (the capture) */
    assert_int_equal(o->evict_early, 1);    /* carried out once, without the turn */
    free(o);
}
/* The eviction sent once the program paused (its capture armed); the
 * program goes on once it ended the capture. */
static int scripted_capture_joined(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    int task = evict_after_turn(ready, buf, fds, &nfd, 0);
    if (task < 0)
        return -task;
    if (gs_wait_file("out0.capended") != 0)
        return 90;
    return finish(task, buf, fds, nfd);
}

/* gate_prog CAPTURE capture (STREAM 1) against scripted_capture_joined: the
 * armed captures began, the shim found its stream joined once, and the
 * eviction went later (exit 0: see gate_prog's 16, 21, 22). */
static int (*joined_script)(int) = scripted_capture_joined;

static unsigned long long joined_no_prefetch; /* the last joined_case's count */

static void joined_case(const char *capture)
{
    gh_spec_t saved = spec;
    spec.capture = capture;
    spec.stream = "1";
    unlink(gh_path("out0.capended"));
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    run_case_out(joined_script, 1, o);
    spec = saved;
    assert_int_equal(o->armed, 1);          /* the capture(s) began */
    assert_int_equal(o->capture_joined, 1); /* the shim found its stream in one */
    assert_true(o->evict_deferred >= 1);    /* the eviction went later */
    joined_no_prefetch = o->no_prefetch_ordering;
    free(o);
}

static void test_joined_migration_stream_left(void **state)
{
    (void)state;
    joined_case("18");
}

/* Two captures of the program (its launch stream and a second non-blocking
 * one) begin unseen between the shim's queries and its records: the
 * migration stream joins the first; a wait of it on the event recorded in
 * the second would merge the two (CUDA_ERROR_STREAM_CAPTURE_MERGE) and
 * invalidate both. Both must end valid with none of the shim's nodes. */
static void test_joined_migration_stream_two_captures(void **state)
{
    (void)state;
    joined_case("19");
}

/* The turn revoked at the pause, the program launches (gate_prog CAPTURE
 * 20) and goes on without a turn once its wait timed out; its prefetch is
 * stalled after it took the context's migration stream, while the eviction
 * comes (EVICTED asked) and the watcher orders it after the program's
 * streams, a capture begun unseen on the launch stream meanwhile. Once
 * answered, the launch goes on. */
/* The turn revoked at the pause, then the program told to launch
 * (out0.launch), and that launch held by the double (out0.stalled): the
 * task's socket, or minus the step that failed (step: the wait's). */
static int launch_held(int ready, uint8_t *buf, int *fds, int *nfd, dmn_range_t *big, int step)
{
    int task = turn_revoked(ready, buf, fds, nfd, big);
    if (task < 0)
        return task;
    gh_touch("out0.launch");
    return gs_wait_file("out0.stalled") == 0 ? task : -step;
}

static int scripted_launch_without_turn(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    dmn_range_t big;
    dmn_msg_t m;
    int task = launch_held(ready, buf, fds, &nfd, &big, 95);
    if (task < 0)
        return -task;
    if (send_eviction(task, buf, big, 1) != 0 || gs_read_until(task, buf, DMN_MSG_EVICTED, &m) != 0)
        return 96;
    gh_touch("out0.resume");
    if (gs_wait_file("out0.capended") != 0)
        return 97;
    return finish(task, buf, fds, nfd);
}

/* The migration stream joins the capture while a launch without a turn
 * holds it (scenario above): that launch must queue nothing on the joined
 * stream, or its prefetch is captured and its stream pulled into the
 * capture (gate_prog exit 16 or 21). The stream is found joined once, the
 * eviction goes later. */
static void test_launch_without_turn_joined(void **state)
{
    (void)state;
    static const char *const files[] = {"out0.launch", "out0.stalled", "out0.resume"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        unlink(gh_path(files[i]));
    const char *was_policy = policy;
    policy = "proactive"; /* the launch prefetches */
    setenv("GMUX_DAEMON_TURN_TIMEOUT_MS", "1000", 1);
    joined_script = scripted_launch_without_turn;
    joined_case("20");
    joined_script = scripted_capture_joined;
    unsetenv("GMUX_DAEMON_TURN_TIMEOUT_MS");
    policy = was_policy;
    assert_int_equal(joined_no_prefetch, 0); /* the launch took the stream first */
}

/* The turn revoked at the pause, the program launches (gate_prog CAPTURE
 * 21) and goes on without a turn once its wait timed out, held past its
 * gate; the eviction comes (unasked), and the watcher orders it after the
 * program's streams, its query of the launch stream held until the launch
 * returned. */
static int scripted_launch_meets_ordering(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    dmn_range_t big;
    int task = launch_held(ready, buf, fds, &nfd, &big, 100);
    if (task < 0)
        return -task;
    if (send_eviction(task, buf, big, 0) != 0)
        return 101;
    if (gs_wait_file("out0.launched") != 0)
        return 102;
    return finish(task, buf, fds, nfd);
}

/* A launch that meets an ordering in progress goes on without its prefetch
 * (shim_backend_take): counted once, in the stats a `gmux run --stats`
 * user reads. The ordering itself goes on: the eviction is carried out. */
static void test_launch_meets_ordering_counted(void **state)
{
    (void)state;
    static const char *const files[] = {"out0.launch", "out0.stalled", "out0.ordering",
                                        "out0.launched"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        unlink(gh_path(files[i]));
    const char *was_policy = policy;
    gh_spec_t saved = spec;
    policy = "proactive"; /* the launch would prefetch */
    spec.capture = "21";
    spec.stream = "1";
    setenv("GMUX_DAEMON_TURN_TIMEOUT_MS", "1000", 1);
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    run_case_out(scripted_launch_meets_ordering, 1, o);
    unsetenv("GMUX_DAEMON_TURN_TIMEOUT_MS");
    spec = saved;
    policy = was_policy;
    assert_int_equal(access(gh_path("out0.ordering"), F_OK), 0); /* the ordering was held */
    assert_int_equal(o->evict_early, 1); /* and went on: the eviction carried out */
    assert_int_equal(o->no_prefetch_ordering, 1);
    assert_int_equal(o->gate_no_turn, 1); /* the launch's wait timed out */
    free(o);
}

int main(void)
{
    gh_init();
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        GH_TEST(test_deferred_answered_at_once),
        GH_TEST(test_mark_polled_relaxed_in_capture),
        GH_TEST(test_kept_at_grant_without_context),
        GH_TEST(test_joined_migration_stream_left),
        GH_TEST(test_joined_migration_stream_two_captures),
        GH_TEST(test_launch_without_turn_joined),
        GH_TEST(test_launch_meets_ordering_counted),
    };
    /* clang-format on */
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
