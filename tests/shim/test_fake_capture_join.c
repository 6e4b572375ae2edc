/*
 * The driver double itself (no shim preloaded): streams joining a capture
 * through a captured event and joining back into its origin, as cuda.h and
 * the CUDA programming guide describe them (fake_cuda_join.c):
 *   - a stream that waits for an event recorded in the capture joins it and
 *     captures until the capture ends; one waiting for an event recorded
 *     before the capture began does not;
 *   - the capture ends with its graph once the joined streams' work is
 *     joined back into the origin (directly or through another joined
 *     stream), and fails CUDA_ERROR_STREAM_CAPTURE_UNJOINED, with no graph,
 *     while some of it is not; either way every stream leaves the capture;
 *   - cuStreamGetCaptureInfo gives a joined stream's dependency set, and
 *     cuStreamUpdateCaptureDependencies can drop a fork from it;
 *   - a plain cuEventRecord in a capture makes no node (only
 *     CU_EVENT_RECORD_EXTERNAL does), and a wait from a capturing stream for
 *     an event recorded outside the capture fails
 *     CUDA_ERROR_STREAM_CAPTURE_ISOLATION, invalidating it, unless made
 *     CU_EVENT_WAIT_EXTERNAL (an event wait node; fake_cuda_event.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <dlfcn.h>

#include "shim_harness.h"

#define N 64

static CUevent new_event(void)
{
    CUevent e;
    assert_int_equal(GET(PFN_cuEventCreate_v2000, "cuEventCreate", 12000)(&e, 0), CUDA_SUCCESS);
    return e;
}

/* A new event recorded on s. */
static CUevent recorded(CUstream s)
{
    CUevent e = new_event();
    assert_int_equal(GET(PFN_cuEventRecord_v2000, "cuEventRecord", 12000)(e, s), CUDA_SUCCESS);
    return e;
}

/* cuEventRecordWithFlags / cuStreamWaitEvent with flags. */
static CUresult record_with(CUevent e, CUstream s, unsigned flags)
{
    PFN_cuEventRecordWithFlags_v11010 f =
        GET(PFN_cuEventRecordWithFlags_v11010, "cuEventRecordWithFlags", 11010);
    assert_non_null(f);
    return f(e, s, flags);
}

static CUresult wait_with(CUstream s, CUevent e, unsigned flags)
{
    return GET(PFN_cuStreamWaitEvent_v3020, "cuStreamWaitEvent", 12000)(s, e, flags);
}

static void wait_for(CUstream s, CUevent e)
{
    assert_int_equal(wait_with(s, e, 0), CUDA_SUCCESS);
}

static CUstreamCaptureStatus status(CUstream s)
{
    CUstreamCaptureStatus st;
    assert_int_equal(GET(PFN_cuStreamIsCapturing_v10000, "cuStreamIsCapturing", 12000)(s, &st),
                     CUDA_SUCCESS);
    return st;
}

/* What cuStreamGetCaptureInfo says of s (active): id, graph, dependencies. */
static size_t info(CUstream s, cuuint64_t *id, CUgraph *g, const CUgraphNode **deps)
{
    CUstreamCaptureStatus st;
    size_t n = 0;
    assert_int_equal(GET(PFN_cuStreamGetCaptureInfo_v11030, "cuStreamGetCaptureInfo",
                         11030)(s, &st, id, g, deps, &n),
                     CUDA_SUCCESS);
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    return n;
}

static int invalidated(void)
{
    fake_capture_invalidated_fn f =
        (fake_capture_invalidated_fn)dlsym(drv, "fake_capture_invalidated");
    assert_non_null(f);
    return f();
}

static void destroy(CUgraph g)
{
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g), CUDA_SUCCESS);
}

/* s forks to j, each captures a kernel, j joins back into s: the capture
 * ends with a graph of both kernels, and j leaves it (on main:
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED, the double modelling no join back). */
static void test_join_and_rejoin_ends_with_graph(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream s = new_stream(), j = new_stream();
    capture_begin(s);
    launch_vadd(s, a, a, a, N);
    capture_join(j, s);
    assert_int_equal(status(j), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cuuint64_t id_s, id_j;
    CUgraph g_s, g_j;
    (void)info(s, &id_s, &g_s, NULL);
    (void)info(j, &id_j, &g_j, NULL);
    assert_int_equal(id_j, id_s);
    assert_ptr_equal(g_j, g_s);
    launch_vadd(j, a, a, a, N);
    capture_join(s, j);
    launch_vadd(s, a, a, a, N);
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
    assert_ptr_equal(g, g_s);
    assert_int_equal(graph_nodes_of(g, FAKE_NODE_KERNEL), 3);
    assert_int_equal(status(j), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_false(invalidated());
    destroy(g);
}

/* j joins and captures a kernel, never joined back, or joined back and
 * then capturing more: the capture stays active (not invalidated) until
 * its end, which fails unjoined with no graph and takes j out; the next
 * capture starts afresh. */
static void test_fork_not_joined_back_unjoined(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream s = new_stream(), j = new_stream();
    for (int back = 0; back < 2; back++) {
        capture_begin(s);
        capture_join(j, s);
        launch_vadd(j, a, a, a, N);
        if (back) {
            capture_join(s, j);
            launch_vadd(j, a, a, a, N); /* after the join back */
        }
        assert_int_equal(status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
        assert_true(invalidated()); /* a fork not joined back, as things stand */
        CUgraph g = (CUgraph)&g;
        assert_int_equal(capture_end(s, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
        assert_null(g);
        assert_int_equal(status(j), CU_STREAM_CAPTURE_STATUS_NONE);
        assert_true(invalidated());
        capture_begin(s);
        launch_vadd(s, a, a, a, N);
        assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
        assert_false(invalidated());
        destroy(g);
    }
}

/* The capture of s ends with its graph, which is destroyed. */
static void ends_with_graph(CUstream s)
{
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
    assert_non_null(g);
    destroy(g);
}

/* s forks to j1, j1 to j2; j2 joins back into j1, j1 into s: all joined.
 * Without j1's join into s, j2's work is not joined either. */
static void test_rejoin_through_another_stream(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream s = new_stream(), j1 = new_stream(), j2 = new_stream();
    for (int back = 1; back >= 0; back--) {
        capture_begin(s);
        capture_join(j1, s);
        capture_join(j2, j1);
        assert_int_equal(status(j2), CU_STREAM_CAPTURE_STATUS_ACTIVE);
        launch_vadd(j2, a, a, a, N);
        launch_vadd(j1, a, a, a, N);
        capture_join(j1, j2);
        if (back)
            capture_join(s, j1);
        CUgraph g = NULL;
        assert_int_equal(capture_end(s, &g),
                         back ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
        assert_int_equal(status(j2), CU_STREAM_CAPTURE_STATUS_NONE);
        if (g)
            destroy(g);
    }
}

/* The capture ended on the joined stream: CUDA_ERROR_STREAM_CAPTURE_UNMATCHED
 * and the capture invalidated, still in progress until its end on the
 * origin, which fails invalidated (on main: CUDA_ERROR_ILLEGAL_STATE, the
 * capture left valid). */
static void test_end_on_joined_stream_unmatched(void **state)
{
    (void)state;
    CUstream s = new_stream(), j = new_stream();
    capture_begin(s);
    capture_join(j, s);
    CUgraph g = (CUgraph)&g;
    assert_int_equal(capture_end(j, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    assert_int_equal(status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(status(j), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(capture_end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(g);
    assert_int_equal(status(j), CU_STREAM_CAPTURE_STATUS_NONE);
}

/* A stream that joins and captures nothing leaves nothing unjoined: its
 * dependency set (the event's) is the origin's own work (the double's
 * reading of cuda.h: what must be reachable from the origin stream at the
 * end are the nodes, not the streams). */
static void test_join_without_work_ends_with_graph(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream s = new_stream(), j = new_stream();
    capture_begin(s);
    launch_vadd(s, a, a, a, N);
    capture_join(j, s);
    launch_vadd(s, a, a, a, N);
    ends_with_graph(s);
}

/* An event recorded on s before its capture began is not captured: a
 * stream waiting for it does not join (on main it did, and the capture
 * ended unjoined). */
static void test_event_before_capture_does_not_join(void **state)
{
    (void)state;
    CUstream s = new_stream(), j = new_stream();
    CUevent e = recorded(s);
    capture_begin(s);
    wait_for(j, e);
    assert_int_equal(status(j), CU_STREAM_CAPTURE_STATUS_NONE);
    ends_with_graph(s);
}

/* A joined stream's dependency set (cuStreamGetCaptureInfo): the captured
 * event's set when it joins, then the node it captured last; the origin's,
 * after a join back, its own last node and the joined stream's. */
static void test_joined_stream_dependencies(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream s = new_stream(), j = new_stream();
    capture_begin(s);
    launch_vadd(s, a, a, a, N);
    const CUgraphNode *deps;
    assert_int_equal(info(s, NULL, NULL, &deps), 1);
    CUgraphNode s_last = deps[0];
    CUevent e = recorded(s);
    assert_int_equal(info(s, NULL, NULL, &deps), 1);
    assert_ptr_equal(deps[0], s_last); /* a plain record makes no node */
    wait_for(j, e);
    assert_int_equal(info(j, NULL, NULL, &deps), 1);
    assert_ptr_equal(deps[0], s_last);
    launch_vadd(j, a, a, a, N);
    assert_int_equal(info(j, NULL, NULL, &deps), 1);
    CUgraphNode j_last = deps[0];
    assert_ptr_not_equal(j_last, s_last);
    CUevent back = recorded(j);
    assert_int_equal(info(j, NULL, NULL, &deps), 1);
    assert_ptr_equal(deps[0], j_last);
    wait_for(s, back);
    assert_int_equal(info(s, NULL, NULL, &deps), 2);
    assert_true((deps[0] == s_last && deps[1] == j_last) ||
                (deps[0] == j_last && deps[1] == s_last));
    ends_with_graph(s);
}

/* cuStreamUpdateCaptureDependencies: j's fork, replaced in its dependency
 * set by a node the origin reaches, no longer counts (cuda.h: nodes removed
 * through it do not make the end fail unjoined); refused on a stream that
 * does not capture and for a node of another graph. */
static void test_update_dependencies_drops_fork(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream s = new_stream(), j = new_stream(), idle = new_stream();
    PFN_cuStreamUpdateCaptureDependencies_v11030 update = GET(
        PFN_cuStreamUpdateCaptureDependencies_v11030, "cuStreamUpdateCaptureDependencies", 11030);
    CUgraph other = NULL;
    assert_int_equal(GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000)(&other, 0),
                     CUDA_SUCCESS);
    capture_begin(s);
    launch_vadd(s, a, a, a, N);
    const CUgraphNode *deps;
    assert_int_equal(info(s, NULL, NULL, &deps), 1);
    CUgraphNode s_last = deps[0];
    capture_join(j, s);
    launch_vadd(j, a, a, a, N);
    assert_int_equal(update(idle, &s_last, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES),
                     CUDA_ERROR_ILLEGAL_STATE);
    CUgraphNode foreign = (CUgraphNode)other;
    assert_int_equal(update(j, &foreign, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(update(j, &s_last, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES), CUDA_SUCCESS);
    assert_int_equal(info(j, NULL, NULL, &deps), 2); /* added: the fork still in */
    assert_int_equal(update(j, &s_last, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES), CUDA_SUCCESS);
    assert_int_equal(info(j, NULL, NULL, &deps), 1);
    assert_ptr_equal(deps[0], s_last);
    ends_with_graph(s);
    destroy(other);
}

/* A plain record in a capture makes no node (cuda.h: only
 * CU_EVENT_RECORD_EXTERNAL makes an event record node): the stream's
 * dependency set stays its kernel, and the graph holds the kernel alone but
 * for the one record made EXTERNAL; that flag outside a capture, and an
 * unknown flag, are refused (on main: every record in a capture was a node,
 * and cuEventRecordWithFlags was missing). */
static void test_plain_record_makes_no_node(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream s = new_stream(), idle = new_stream();
    CUevent e = new_event();
    assert_int_equal(record_with(e, idle, CU_EVENT_RECORD_EXTERNAL), CUDA_ERROR_INVALID_VALUE);
    capture_begin(s);
    launch_vadd(s, a, a, a, N);
    const CUgraphNode *deps;
    assert_int_equal(info(s, NULL, NULL, &deps), 1);
    CUgraphNode last = deps[0];
    (void)recorded(s);
    assert_int_equal(record_with(e, s, CU_EVENT_RECORD_DEFAULT), CUDA_SUCCESS);
    assert_int_equal(record_with(e, s, 2), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(info(s, NULL, NULL, &deps), 1);
    assert_ptr_equal(deps[0], last);
    assert_int_equal(record_with(e, s, CU_EVENT_RECORD_EXTERNAL), CUDA_SUCCESS);
    assert_int_equal(info(s, NULL, NULL, &deps), 1);
    assert_ptr_not_equal(deps[0], last);
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
    assert_int_equal(graph_nodes_of(g, FAKE_NODE_KERNEL), 1);
    assert_int_equal(graph_nodes_of(g, FAKE_NODE_EVENT_RECORD), 1);
    destroy(g);
}

/* From a stream taking part in a capture, a wait for an event recorded
 * outside it (before it began, or in an earlier capture) is refused
 * CUDA_ERROR_STREAM_CAPTURE_ISOLATION and invalidates the capture, which
 * ends with no graph; made CU_EVENT_WAIT_EXTERNAL it is an event wait node;
 * a wait for an event never recorded waits for nothing; EXTERNAL from a
 * stream not capturing, and an unknown flag, are refused (on main: every
 * such wait was a node, flags ignored). */
static void test_wait_outside_capture_isolation(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream s = new_stream(), t = new_stream(), j = new_stream();
    CUevent before = recorded(t), never = new_event();
    assert_int_equal(wait_with(t, before, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_INVALID_VALUE);
    capture_begin(s);
    launch_vadd(s, a, a, a, N);
    assert_int_equal(wait_with(s, never, 0), CUDA_SUCCESS);
    assert_int_equal(wait_with(s, before, 2), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(wait_with(s, before, CU_EVENT_WAIT_EXTERNAL), CUDA_SUCCESS);
    assert_false(invalidated());
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
    assert_int_equal(graph_nodes_of(g, FAKE_NODE_KERNEL), 1);
    assert_int_equal(graph_nodes_of(g, FAKE_NODE_EVENT_WAIT), 1);
    destroy(g);
    CUevent earlier = NULL;
    for (int joined = 0; joined < 3;
         joined++) { /* s itself, a joined stream, an earlier capture's event */
        capture_begin(s);
        CUstream w = s;
        if (joined == 1) {
            capture_join(j, s);
            w = j;
        }
        assert_int_equal(wait_with(w, joined == 2 ? earlier : before, 0),
                         CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
        assert_int_equal(status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        earlier = recorded(s);
        g = (CUgraph)&g;
        assert_int_equal(capture_end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        assert_null(g);
        assert_int_equal(status(j), CU_STREAM_CAPTURE_STATUS_NONE);
    }
}

/* The same through the _ptsz entry points on the calling thread's
 * per-thread default stream (stream 0): a plain record makes no node, an
 * EXTERNAL one does, and a wait for an event recorded outside the capture
 * is refused ISOLATION. */
static void test_per_thread_record_and_wait(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream t = new_stream();
    CUevent before = recorded(t), e = new_event();
    PFN_cuEventRecordWithFlags_v11010_ptsz record =
        (PFN_cuEventRecordWithFlags_v11010_ptsz)get("cuEventRecordWithFlags", 11010, PT);
    PFN_cuStreamWaitEvent_v7000_ptsz wait =
        (PFN_cuStreamWaitEvent_v7000_ptsz)get("cuStreamWaitEvent", 12000, PT);
    PFN_cuStreamBeginCapture_v10010_ptsz begin =
        (PFN_cuStreamBeginCapture_v10010_ptsz)get("cuStreamBeginCapture", 12000, PT);
    PFN_cuStreamEndCapture_v10000_ptsz end =
        (PFN_cuStreamEndCapture_v10000_ptsz)get("cuStreamEndCapture", 12000, PT);
    assert_non_null(record);
    assert_non_null(wait);
    assert_non_null(begin);
    assert_non_null(end);
    for (int refused = 0; refused < 2; refused++) {
        assert_int_equal(begin(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
        launch_vadd(CU_STREAM_PER_THREAD, a, a, a, N);
        assert_int_equal(record(e, NULL, 0), CUDA_SUCCESS);
        assert_int_equal(record(e, NULL, CU_EVENT_RECORD_EXTERNAL), CUDA_SUCCESS);
        assert_int_equal(wait(NULL, before, refused ? 0 : CU_EVENT_WAIT_EXTERNAL),
                         refused ? CUDA_ERROR_STREAM_CAPTURE_ISOLATION : CUDA_SUCCESS);
        CUgraph g = NULL;
        assert_int_equal(end(NULL, &g),
                         refused ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS);
        if (refused) {
            assert_null(g);
            break;
        }
        assert_int_equal(graph_nodes_of(g, FAKE_NODE_KERNEL), 1);
        assert_int_equal(graph_nodes_of(g, FAKE_NODE_EVENT_RECORD), 1);
        assert_int_equal(graph_nodes_of(g, FAKE_NODE_EVENT_WAIT), 1);
        destroy(g);
    }
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_and_rejoin_ends_with_graph),
        cmocka_unit_test(test_fork_not_joined_back_unjoined),
        cmocka_unit_test(test_rejoin_through_another_stream),
        cmocka_unit_test(test_end_on_joined_stream_unmatched),
        cmocka_unit_test(test_join_without_work_ends_with_graph),
        cmocka_unit_test(test_event_before_capture_does_not_join),
        cmocka_unit_test(test_joined_stream_dependencies),
        cmocka_unit_test(test_update_dependencies_drops_fork),
        cmocka_unit_test(test_plain_record_makes_no_node),
        cmocka_unit_test(test_wait_outside_capture_isolation),
        cmocka_unit_test(test_per_thread_record_and_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
