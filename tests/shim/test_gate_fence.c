/*
 * Launch gating end to end, the gate's wait for its migration stream at a
 * GRANT with the flag PLANNED (protocol v8; harness: gate_harness.h,
 * scripted daemons: gate_script.h). A scripted daemon grants the program
 * turn 1 (no flag), revokes it while the program is paused and grants its
 * next wait (grant 4) with the flag and no orders, under
 * GMUX_POLICY=proactive:
 *
 * - with nothing evicted before: the grant has nothing to leave to demand
 *   paging and nothing in flight to wait for, so no synchronization of the
 *   migration stream may reach the driver. The shim waited for the stream
 *   once per flagged grant (the driver double logged one
 *   cuStreamSynchronize).
 * - with an eviction of the program's largest allocation (grant 2) sent
 *   with the REVOKE: the eviction, issued in the wait and not waited for,
 *   is in flight at the grant, which leaves that region to demand paging
 *   (counts it resident): the stream must be waited for once, after the
 *   eviction and before the launches of the turn.
 * - with that eviction carried out (the region marked evicted by the
 *   daemon) and then the program's context destroyed, its allocations with
 *   it, before it allocates the same again in a new one (gate_prog CAPTURE
 *   17): no region is marked any more, and the new context's stream has
 *   nothing of the eviction in flight: no synchronization either. The shim
 *   still took a region for marked and waited once.
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
#include "gate_harness.h"
#include "gate_script.h"

static char go[256];
/* 20 kernels, a pause at half of them until `go` exists; 1 MiB more of
 * working set (the allocation the second case evicts, never touched) */
static gh_spec_t spec = {"batch", "9", "20", "1000", "0", "1", go, NULL, NULL};

/* Turn 1, its REVOKE (with an eviction of the largest allocation if evict)
 * and grant 4 with the flag PLANNED and no orders; then reads until the
 * program ends. 0, or the step that failed. */
static int flagged_grant_after(int ready, int evict)
{
    static gs_conn_t c;
    int rc = gs_conn_paused(ready, &c);
    if (rc != 0)
        return rc;
    if (evict)
        gs_batch_plan(&c.w, 3, DMN_PLAN_EVICT, 2, &c.big, 1);
    gs_batch_revoke(&c.w, 4, 1);
    if (gs_conn_regrant(&c, "go", 10, 4, DMN_GRANT_PLANNED) != 0)
        return 16;
    return gs_conn_send_finish(&c);
}

static int scripted_nothing_evicted(int ready)
{
    return flagged_grant_after(ready, 0);
}

static int scripted_big_evicted(int ready)
{
    return flagged_grant_after(ready, 1);
}

/* Turn 1, its REVOKE with an eviction of the largest allocation, carried
 * out by the watcher in the program's context (its next STATS report comes
 * after); then the program destroys that context and allocates the same in
 * a new one (CAPTURE 17), and its next wait gets grant 4 with the flag and
 * no orders. 0, or the step that failed. */
static int scripted_evicted_ctx_gone(int ready)
{
    static gs_conn_t c;
    int rc = gs_conn_paused(ready, &c);
    if (rc != 0)
        return rc;
    gs_batch_plan(&c.w, 3, DMN_PLAN_EVICT, 2, &c.big, 1);
    gs_batch_revoke(&c.w, 4, 1);
    if (gs_conn_released(&c) != 0 || gs_read_until(c.task, c.buf, DMN_MSG_STATS, &c.m) != 0)
        return 16;
    gh_touch("go");
    if (gs_wait_file("out0.paused2") != 0)
        return 17;
    gh_touch("go2"); /* the watcher's PENDING came with its RELEASE */
    if (gs_read_until(c.task, c.buf, DMN_MSG_PENDING, &c.m) != 0)
        return 18;
    gs_batch_grant_flags(&c.w, 10, 4, c.m.u.ranges.seq, DMN_GRANT_PLANNED);
    return gs_conn_send_finish(&c);
}

/* Runs script against program 0 under the proactive policy and reads its
 * output; the program's log goes to gh_dir/log0. */
static gh_out_t *run_script(int (*script)(int))
{
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    unlink(gh_path("go"));
    unlink(gh_path("out0.paused"));
    unlink(gh_path("out0.paused2"));
    unlink(gh_path("go2"));
    gh_out_t *o = gs_run_logged(&spec, script, "proactive");
    assert_int_equal(o->n, 20);
    for (size_t i = 0; i < o->nsync && i < 64; i++)
        print_message("  stream synchronized at %llu\n", o->sync_ns[i]);
    return o;
}

static void test_no_fence_for_nothing(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_nothing_evicted);
    assert_int_equal(o->nh, 0); /* nothing went to the host */
    assert_int_equal(o->nsync, 0);
    free(o);
}

static void test_fence_for_eviction_in_flight(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_big_evicted);
    assert_int_equal(o->nh, 1); /* the eviction, issued in the wait */
    assert_int_equal(o->nsync, 1);
    assert_true(o->sync_ns[0] > o->h[0][0]);
    /* before the first launch of turn 4 (the kernels after the pause) */
    assert_true(o->sync_ns[0] < o->t[10][0]);
    free(o);
}

static void test_no_fence_for_marks_gone(void **state)
{
    (void)state;
    spec.capture = "17";
    gh_out_t *o = run_script(scripted_evicted_ctx_gone);
    spec.capture = NULL;
    assert_int_equal(o->nh, 1); /* the eviction, carried out before the context went */
    assert_int_equal(o->nsync, 0);
    free(o);
}

int main(void)
{
    gh_init();
    const struct CMUnitTest tests[] = {
        GH_TEST(test_no_fence_for_nothing),
        GH_TEST(test_fence_for_eviction_in_flight),
        GH_TEST(test_no_fence_for_marks_gone),
    };
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
