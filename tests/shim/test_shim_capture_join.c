/*
 * Captures that a second stream joins (it waits for an event recorded in
 * the capture) and that end well (its work joined back into the origin
 * stream before cuStreamEndCapture), against the driver double, which
 * models the join back (fake_cuda_join.c):
 *   - a launch on the joined stream is captured, nothing prefetched for it,
 *     and the graph holds the program's work only;
 *   - the graph's launch prefetches what the kernels captured on the joined
 *     stream use, except what the graph moves to the device itself;
 *   - the program's prefetches queued on the joined stream count at the
 *     graph's launches like the origin stream's (a move to the host makes
 *     the next launch prefetch the region again), and no longer once their
 *     node is removed;
 *   - nothing stays kept once the graph is destroyed, nor after a capture
 *     that ends unjoined;
 *   - the program's own event nodes (EXTERNAL) leave the graph's kernels
 *     seen, and its wait for an event from outside the capture fails through
 *     the shim as it does on the driver (ISOLATION).
 * CTest runs this under every policy, without plain allocations redirected
 * and with a driver that refuses batches (shim_harness.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shim_harness.h"

#define N 256 /* floats per region */

/* The program's prefetch of the region at p to the host or the device on s. */
static void move(CUdeviceptr p, bool to_device, CUstream s)
{
    CUmemLocation loc = {.type = to_device ? CU_MEM_LOCATION_TYPE_DEVICE
                                           : CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
                         .id = 0};
    assert_int_equal(
        GET(PFN_cuMemPrefetchAsync_v12020, "cuMemPrefetchAsync", 12020)(p, N * 4, loc, 0, s),
        CUDA_SUCCESS);
}

/* A capture of s that j joins: on j, a kernel on v[0..2], preceded by the
 * program's move of v[2] to the device where pre, followed by its move of
 * v[2] to the host where post; then j joins back into s (unless unjoined)
 * and the capture ends, with its graph (NULL and
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED when unjoined). Nothing is prefetched
 * by the shim meanwhile. */
static CUgraph capture_joined(CUstream s, CUstream j, const CUdeviceptr *v, bool pre, bool post,
                              bool unjoined)
{
    capture_begin(s);
    size_t mark = f_count();
    capture_join(j, s);
    if (pre)
        move(v[2], true, j);
    launch_vadd(j, v[0], v[1], v[2], N);
    if (post)
        move(v[2], false, j);
    if (!unjoined)
        capture_join(s, j);
    for (size_t i = mark; i < f_count(); i++) /* the program's own moves of v[2] only */
        assert_false(strncmp(f_get(i)->fn, "cuMemPrefetch", 13) == 0 && f_get(i)->a[0] != v[2]);
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g),
                     unjoined ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED : CUDA_SUCCESS);
    if (g) { /* the program's work only: the shim put no prefetch or wait in; the
              * program's two plain records make no node (cuda.h: only
              * CU_EVENT_RECORD_EXTERNAL does), and a wait of the shim's for an
              * event of its own would have invalidated the capture (ISOLATION) */
        assert_int_equal(graph_nodes_of(g, FAKE_NODE_KERNEL), 1);
        assert_int_equal(graph_nodes_of(g, FAKE_NODE_PREFETCH), pre + post);
        assert_int_equal(graph_nodes_of(g, FAKE_NODE_EVENT_WAIT), 0);
        assert_int_equal(graph_nodes_of(g, FAKE_NODE_EVENT_RECORD), 0);
    }
    return g;
}

/* Three regions, resident (a launch on s used them) where resident. */
static void regions(CUdeviceptr *v, CUstream s, bool resident)
{
    for (int i = 0; i < 3; i++)
        v[i] = managed_region(N * 4);
    if (resident)
        launch_vadd(s, v[0], v[1], v[2], N);
}

/* The kernel captured on the joined stream, on regions never prefetched,
 * preceded there by the program's move of c to the device where pre: the
 * graph's launch on s prefetches its regions (but c where pre: the graph
 * moves it itself), ordered before it; the graph destroyed, nothing stays
 * kept. */
static void graph_launch_prefetches(bool pre)
{
    CUstream s = new_stream(), j = new_stream();
    CUdeviceptr v[3];
    regions(v, s, false);
    CUgraph g = capture_joined(s, j, v, pre, false, false);
    size_t mark;
    CUgraphExec e = graph_run(g, s, &mark);
    for (int i = 0; i < 3; i++)
        assert_int_equal(shim_prefetches_of(mark, v[i]), mode_proactive && !(pre && i == 2));
    size_t of = 0;
    long at = -1;
    (void)shim_prefetches_since(mark, v[0], &of, &at);
    if (mode_proactive)
        assert_int_equal(ordered(at, find_call("cuGraphLaunch", mark)), 1);
    graph_done(e, g);
    assert_int_equal(unrelated_destroy_walks(), 0);
}

static void test_joined_kernel_prefetched_at_graph_launch(void **state)
{
    (void)state;
    graph_launch_prefetches(false);
}

static void test_joined_prefetch_to_device_counts(void **state)
{
    (void)state;
    graph_launch_prefetches(true);
}

/* The program's move of resident c to the host on the joined stream, after
 * the kernel there: the graph's launch moves nothing of c, and the launch
 * after it prefetches c again (the graph took it off the device). */
static void test_joined_prefetch_to_host_counts(void **state)
{
    (void)state;
    CUstream s = new_stream(), j = new_stream();
    CUdeviceptr v[3];
    regions(v, s, true);
    CUgraph g = capture_joined(s, j, v, false, true, false);
    size_t mark;
    CUgraphExec e = graph_run(g, s, &mark);
    assert_int_equal(shim_prefetches_of(mark, v[2]), 0);
    mark = f_count();
    launch_vadd(s, v[0], v[1], v[2], N);
    assert_int_equal(shim_prefetches_of(mark, v[2]), mode_proactive ? 1 : 0);
    assert_int_equal(shim_prefetches_of(mark, v[0]), 0);
    graph_done(e, g);
    assert_int_equal(unrelated_destroy_walks(), 0);
}

/* The node of the joined stream's move to the host (the double records a
 * captured prefetch as an EMPTY node) removed before instantiation: the
 * graph's launch moves nothing, and c stays taken for resident. */
static void test_joined_prefetch_node_removed(void **state)
{
    (void)state;
    CUstream s = new_stream(), j = new_stream();
    CUdeviceptr v[3];
    regions(v, s, true);
    CUgraph g = capture_joined(s, j, v, false, true, false);
    CUgraphNode pf = graph_node_of_type(g, CU_GRAPH_NODE_TYPE_EMPTY);
    assert_int_equal(GET(PFN_cuGraphDestroyNode_v10000, "cuGraphDestroyNode", 12000)(pf),
                     CUDA_SUCCESS);
    CUgraphExec e = graph_run(g, s, NULL);
    size_t mark = f_count();
    launch_vadd(s, v[0], v[1], v[2], N);
    assert_int_equal(shim_prefetches_of(mark, v[2]), 0);
    graph_done(e, g);
}

/* The same capture never joined back: its end fails unjoined, the joined
 * stream's move of c to the host is forgotten (c, resident, is not
 * prefetched by the next launch) and nothing stays kept. */
static void test_unjoined_capture_forgets_joined_prefetch(void **state)
{
    (void)state;
    CUstream s = new_stream(), j = new_stream();
    CUdeviceptr v[3];
    regions(v, s, true);
    assert_null(capture_joined(s, j, v, false, true, true));
    assert_int_equal(unrelated_destroy_walks(), 0);
    size_t mark = f_count();
    launch_vadd(s, v[0], v[1], v[2], N);
    assert_int_equal(shim_prefetches_of(mark, v[2]), 0);
}

/* The program ends the capture on the joined stream by mistake
 * (CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, the capture invalidated), then on
 * the origin (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED): the joined stream's
 * move of c to the host is forgotten and nothing stays kept. */
static void test_end_on_joined_stream_forgets_prefetch(void **state)
{
    (void)state;
    CUstream s = new_stream(), j = new_stream();
    CUdeviceptr v[3];
    regions(v, s, true);
    capture_begin(s);
    capture_join(j, s);
    move(v[2], false, j);
    CUgraph g = NULL;
    assert_int_equal(capture_end(j, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    assert_int_equal(capture_end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(g);
    assert_int_equal(unrelated_destroy_walks(), 0);
    size_t mark = f_count();
    launch_vadd(s, v[0], v[1], v[2], N);
    assert_int_equal(shim_prefetches_of(mark, v[2]), 0);
}

/* The program's own event nodes (cuda.h: CU_EVENT_RECORD_EXTERNAL and
 * CU_EVENT_WAIT_EXTERNAL) around the kernel on the joined stream, the wait
 * for an event recorded before the capture: the graph holds both event
 * nodes, and its launch prefetches the kernel's regions (the inspection at
 * instantiation reads the kernel among them). The same wait made without
 * the flag is the program's error: refused
 * CUDA_ERROR_STREAM_CAPTURE_ISOLATION through the shim, the capture
 * invalidated, nothing of it kept. */
static void test_program_event_nodes_around_joined_kernel(void **state)
{
    (void)state;
    CUstream s = new_stream(), j = new_stream(), t = new_stream();
    CUdeviceptr v[3];
    regions(v, s, false);
    CUevent before, mark;
    assert_int_equal(GET(PFN_cuEventCreate_v2000, "cuEventCreate", 12000)(&before, 0),
                     CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuEventCreate_v2000, "cuEventCreate", 12000)(&mark, 0), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuEventRecord_v2000, "cuEventRecord", 12000)(before, t), CUDA_SUCCESS);
    PFN_cuStreamWaitEvent_v3020 wait = GET(PFN_cuStreamWaitEvent_v3020, "cuStreamWaitEvent", 12000);
    PFN_cuEventRecordWithFlags_v11010 record =
        GET(PFN_cuEventRecordWithFlags_v11010, "cuEventRecordWithFlags", 11010);
    assert_non_null(record);
    for (int external = 1; external >= 0; external--) {
        capture_begin(s);
        capture_join(j, s);
        assert_int_equal(wait(j, before, external ? CU_EVENT_WAIT_EXTERNAL : 0),
                         external ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
        launch_vadd(j, v[0], v[1], v[2], N);
        assert_int_equal(record(mark, j, CU_EVENT_RECORD_EXTERNAL), CUDA_SUCCESS);
        capture_join(s, j);
        CUgraph g = NULL;
        assert_int_equal(capture_end(s, &g),
                         external ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        if (!external) {
            assert_null(g);
            assert_int_equal(unrelated_destroy_walks(), 0);
            break;
        }
        assert_int_equal(graph_nodes_of(g, FAKE_NODE_KERNEL), 1);
        assert_int_equal(graph_nodes_of(g, FAKE_NODE_EVENT_WAIT), 1);
        assert_int_equal(graph_nodes_of(g, FAKE_NODE_EVENT_RECORD), 1);
        size_t mark_at;
        CUgraphExec e = graph_run(g, s, &mark_at);
        for (int i = 0; i < 3; i++)
            assert_int_equal(shim_prefetches_of(mark_at, v[i]), mode_proactive);
        graph_done(e, g);
    }
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_joined_kernel_prefetched_at_graph_launch),
        cmocka_unit_test(test_joined_prefetch_to_device_counts),
        cmocka_unit_test(test_joined_prefetch_to_host_counts),
        cmocka_unit_test(test_joined_prefetch_node_removed),
        cmocka_unit_test(test_unjoined_capture_forgets_joined_prefetch),
        cmocka_unit_test(test_end_on_joined_stream_forgets_prefetch),
        cmocka_unit_test(test_program_event_nodes_around_joined_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
