/*
 * Stream captures and what the shim's record of prefetched regions keeps of
 * them, against the driver double:
 *   - a launch captured into a graph voids only its own claims: regions
 *     other launches made resident are not prefetched again;
 *   - the program's prefetches captured into a graph whose capture fails
 *     (cuStreamEndCapture after an invalidation) are forgotten, those queued
 *     on a stream that joined the capture too: a graph the driver later
 *     gives the same handle does not take them over;
 *   - a captured prefetch whose node the program removes from the graph
 *     (cuGraphDestroyNode) no longer counts at the graph's launch;
 *   - one in a graph embedded in another (cuGraphAddChildGraphNode, which
 *     copies it) counts at the launch of the other;
 *   - a batched prefetch's ranges (the double: one node per range) with one
 *     node removed, cloned, or in a graph an executable graph is updated from.
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
#include <dlfcn.h>

#include "shim_harness.h"

#define N 256 /* floats per region */

/* The graph s captures into (asked of the double, not through the shim). */
static CUgraph capture_graph(CUstream s)
{
    CUstreamCaptureStatus st;
    CUgraph g = NULL;
    assert_int_equal(GET(PFN_cuStreamGetCaptureInfo_v11030, "cuStreamGetCaptureInfo",
                         11030)(s, &st, NULL, &g, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_non_null(g);
    return g;
}

/* The program's prefetch of the region at p to the host on s. */
static void to_host(CUdeviceptr p, CUstream s)
{
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, .id = 0};
    assert_int_equal(
        GET(PFN_cuMemPrefetchAsync_v12020, "cuMemPrefetchAsync", 12020)(p, N * 4, loc, 0, s),
        CUDA_SUCCESS);
}

/* b resident; a launch on a, never prefetched, is captured; then a plain
 * launch on b must not prefetch b again, and one on a must prefetch a (the
 * captured launch's claim of a is void). */
static void test_captured_launch_voids_only_its_claims(void **state)
{
    (void)state;
    CUdeviceptr a = managed_region(N * 4), b = managed_region(N * 4);
    CUstream s = new_stream();
    launch_vadd(s, b, b, b, N);
    capture_begin(s);
    size_t mark = f_count();
    launch_vadd(s, a, a, a, N);
    assert_int_equal(shim_prefetches_of(mark, a), 0); /* captured: nothing moved */
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
    mark = f_count();
    launch_vadd(s, b, b, b, N);
    /* on main 1: the captured claim started a new generation, and b, resident
     * all along, was prefetched again */
    assert_int_equal(shim_prefetches_of(mark, b), 0);
    mark = f_count();
    launch_vadd(s, a, a, a, N);
    assert_int_equal(shim_prefetches_of(mark, a), mode_proactive ? 1 : 0);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g), CUDA_SUCCESS);
}

/* A capture that holds the program's prefetch of c to the host is
 * invalidated (a cuCtxSynchronize of the capturing thread, mode GLOBAL) and
 * fails to end; the double destroys its graph and gives the handle to the
 * next capture's graph, which holds a launch on a, b, c only. That graph's
 * launch must not count the dead capture's prefetch: c, resident, is not
 * prefetched by the next launch. */
static void test_failed_capture_forgets_prefetch(void **state)
{
    (void)state;
    CUdeviceptr a = managed_region(N * 4), b = managed_region(N * 4), c = managed_region(N * 4);
    CUstream s = new_stream();
    launch_vadd(s, a, b, c, N);
    capture_begin(s);
    CUgraph dead = capture_graph(s);
    launch_vadd(s, a, b, c, N);
    to_host(c, s);
    assert_int_equal(GET(PFN_cuCtxSynchronize_v2000, "cuCtxSynchronize", 2000)(),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(g);
    capture_begin(s);
    launch_vadd(s, a, b, c, N);
    assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
    assert_ptr_equal(g, dead); /* the handle reused: else this shows nothing */
    CUgraphExec e = graph_run(g, s, NULL);
    size_t mark = f_count();
    launch_vadd(s, a, b, c, N);
    /* on main 1: the dead capture's move of c to the host counted at the
     * graph's launch */
    assert_int_equal(shim_prefetches_of(mark, c), 0);
    graph_done(e, g);
}

/* The program moves c to the device on stream s1; a launch on s2 using c
 * is captured (its claim of c, which cleared the prefetch's stream, is
 * void). A plain launch on s2 after it is not ordered after the program's
 * prefetch and must prefetch c (on main 0: the void claim left c taken for
 * ordered on every stream). */
static void test_captured_launch_keeps_prefetch_stream(void **state)
{
    (void)state;
    CUdeviceptr c = managed_region(N * 4);
    CUstream s1 = new_stream(), s2 = new_stream();
    launch_vadd(s1, c, c, c, N);
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    assert_int_equal(
        GET(PFN_cuMemPrefetchAsync_v12020, "cuMemPrefetchAsync", 12020)(c, N * 4, loc, 0, s1),
        CUDA_SUCCESS);
    capture_begin(s2);
    launch_vadd(s2, c, c, c, N);
    CUgraph g = NULL;
    assert_int_equal(capture_end(s2, &g), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g), CUDA_SUCCESS);
    size_t mark = f_count();
    launch_vadd(s2, c, c, c, N);
    assert_int_equal(shim_prefetches_of(mark, c), mode_proactive ? 1 : 0);
}

/* A capture invalidated (a cuCtxSynchronize of the capturing thread, mode
 * GLOBAL) answers as cuda.h says: status INVALIDATED until it ends, nothing
 * else valid (on main the double answered ACTIVE, with the capture's id). */
static void test_invalidated_capture_status(void **state)
{
    (void)state;
    CUstream s = new_stream();
    capture_begin(s);
    assert_int_equal(GET(PFN_cuCtxSynchronize_v2000, "cuCtxSynchronize", 2000)(),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    assert_int_equal(GET(PFN_cuStreamIsCapturing_v10000, "cuStreamIsCapturing", 12000)(s, &st),
                     CUDA_SUCCESS);
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    cuuint64_t id = 1;
    CUgraph g = (CUgraph)&id;
    assert_int_equal(GET(PFN_cuStreamGetCaptureInfo_v11030, "cuStreamGetCaptureInfo",
                         11030)(s, &st, &id, &g, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(id, 0);
    assert_null(g);
    assert_int_equal(capture_end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(GET(PFN_cuStreamIsCapturing_v10000, "cuStreamIsCapturing", 12000)(s, &st),
                     CUDA_SUCCESS);
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
}

/* Invalidates the capture begun on s (a cuCtxSynchronize of the capturing
 * thread, mode GLOBAL), which then fails to end; after that the shim keeps
 * no prefetch recorded into a graph. */
static void invalidated_end_keeps_nothing(CUstream s)
{
    assert_int_equal(GET(PFN_cuCtxSynchronize_v2000, "cuCtxSynchronize", 2000)(),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(unrelated_destroy_walks(), 0);
}

/* The program's prefetch recorded by a capture that is then invalidated is
 * forgotten when the capture fails to end, though the driver no longer says
 * which capture the stream recorded: with nothing kept, destroying an
 * unrelated graph walks nothing (on main the dead capture's prefetch stayed
 * pending, and the destruction walked the graph, cuGraphGetNodes). */
static void test_invalidated_capture_forgets_prefetch(void **state)
{
    (void)state;
    CUdeviceptr c = managed_region(N * 4);
    CUstream s = new_stream();
    launch_vadd(s, c, c, c, N);
    capture_begin(s);
    to_host(c, s);
    invalidated_end_keeps_nothing(s);
}

/* The same for a prefetch queued on a stream that joined the capture (it
 * waits for an event recorded on the capturing stream): the driver says
 * nothing of the invalidated capture at its end, and the joined stream's
 * prefetch is not on the stream the capture ends on. It is forgotten all
 * the same (on main it stayed pending: the destruction of an unrelated
 * graph walked it, cuGraphGetNodes). */
static void test_invalidated_capture_forgets_joined_prefetch(void **state)
{
    (void)state;
    CUdeviceptr c = managed_region(N * 4);
    CUstream s = new_stream(), joined = new_stream();
    launch_vadd(s, c, c, c, N);
    capture_begin(s);
    capture_join(joined, s);
    assert_ptr_equal(capture_graph(joined), capture_graph(s)); /* joined: else this shows nothing */
    to_host(c, joined);
    invalidated_end_keeps_nothing(s);
}

/* Three resident regions a, b, c on a new stream *s_p, and the graph a
 * capture of s records: a kernel on a, b, c, then the program's move of c
 * to the host. */
static CUgraph capture_c_to_host(CUdeviceptr *v, CUstream *s_p)
{
    for (int i = 0; i < 3; i++)
        v[i] = managed_region(N * 4);
    CUstream s = *s_p = new_stream();
    launch_vadd(s, v[0], v[1], v[2], N);
    capture_begin(s);
    launch_vadd(s, v[0], v[1], v[2], N);
    to_host(v[2], s);
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
    return g;
}

/* The graph of capture_c_to_host with its node of kind type removed, then
 * launched: the launch after it prefetches c want times. */
static void removed_node(CUgraphNodeType type, size_t want)
{
    CUdeviceptr v[3];
    CUstream s;
    CUgraph g = capture_c_to_host(v, &s);
    assert_int_equal(GET(PFN_cuGraphDestroyNode_v10000, "cuGraphDestroyNode",
                         12000)(graph_node_of_type(g, type)),
                     CUDA_SUCCESS);
    CUgraphExec e = graph_run(g, s, NULL);
    size_t mark = f_count();
    launch_vadd(s, v[0], v[1], v[2], N);
    assert_int_equal(shim_prefetches_of(mark, v[2]), want);
    graph_done(e, g);
}

/* The program removes the prefetch's node (the double records a captured
 * prefetch as an EMPTY node) before instantiating the graph: its launch then
 * moves nothing, and the launch after it must not prefetch c, which stayed
 * resident (on main 1: the removed node's move to the host still counted). */
static void test_removed_prefetch_node_forgotten(void **state)
{
    (void)state;
    removed_node(CU_GRAPH_NODE_TYPE_EMPTY, 0);
}

/* The kernel's node removed instead: the prefetch still runs at each
 * launch, and c is prefetched again after it. */
static void test_other_node_removed_prefetch_kept(void **state)
{
    (void)state;
    removed_node(CU_GRAPH_NODE_TYPE_KERNEL, mode_proactive ? 1 : 0);
}

/* A captured graph that runs a kernel on a, b, c and then moves c to the
 * host is embedded in another graph (cuGraphAddChildGraphNode, which copies
 * it) and destroyed; the outer graph's launch runs the copy's prefetch, so
 * the launch after it must prefetch c again. */
static void test_child_graph_copy_keeps_prefetch(void **state)
{
    (void)state;
    CUdeviceptr v[3];
    CUstream s;
    CUgraph inner = capture_c_to_host(v, &s), outer = NULL, copy = NULL;
    assert_int_equal(GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000)(&outer, 0),
                     CUDA_SUCCESS);
    CUgraphNode child;
    assert_int_equal(GET(PFN_cuGraphAddChildGraphNode_v10000, "cuGraphAddChildGraphNode",
                         12000)(&child, outer, NULL, 0, inner),
                     CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuGraphChildGraphNodeGetGraph_v10000, "cuGraphChildGraphNodeGetGraph",
                         12000)(child, &copy),
                     CUDA_SUCCESS);
    assert_ptr_not_equal(copy, inner); /* a copy: else this shows nothing */
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(inner), CUDA_SUCCESS);
    size_t mark;
    CUgraphExec e = graph_run(outer, s, &mark);
    assert_int_equal(shim_prefetches_of(mark, v[2]),
                     0); /* resident: the launch moves nothing of c */
    mark = f_count();
    launch_vadd(s, v[0], v[1], v[2], N);
    /* on main 0: the copy's move of c to the host went unseen */
    assert_int_equal(shim_prefetches_of(mark, v[2]), mode_proactive ? 1 : 0);
    graph_done(e, outer);
}

/* A captured graph that runs a kernel on a, b, c and then moves c to the
 * host is cloned (cuGraphClone) and destroyed; the clone's launch runs the
 * prefetch, so the launch after it must prefetch c again (on main 0: the
 * clone's move of c to the host went unseen). */
static void test_clone_keeps_prefetch(void **state)
{
    (void)state;
    CUdeviceptr v[3];
    CUstream s;
    CUgraph original = capture_c_to_host(v, &s), clone = NULL;
    assert_int_equal(GET(PFN_cuGraphClone_v10000, "cuGraphClone", 12000)(&clone, original),
                     CUDA_SUCCESS);
    assert_ptr_not_equal(clone, original);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(original),
                     CUDA_SUCCESS);
    size_t mark;
    CUgraphExec e = graph_run(clone, s, &mark);
    assert_int_equal(shim_prefetches_of(mark, v[2]), 0);
    mark = f_count();
    launch_vadd(s, v[0], v[1], v[2], N);
    assert_int_equal(shim_prefetches_of(mark, v[2]), mode_proactive ? 1 : 0);
    graph_done(e, clone);
}

/* The graph a capture of s records: a kernel on a, b, c and, where move is
 * set, the program's move of c to the device. */
static CUgraph capture_kernel(CUstream s, const CUdeviceptr *v, bool move)
{
    capture_begin(s);
    launch_vadd(s, v[0], v[1], v[2], N);
    if (move) {
        CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
        assert_int_equal(
            GET(PFN_cuMemPrefetchAsync_v12020, "cuMemPrefetchAsync", 12020)(v[2], N * 4, loc, 0, s),
            CUDA_SUCCESS);
    }
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
    return g;
}

/* An executable graph made from capture_c_to_host's graph is updated
 * (cuGraphExecUpdate, CUDA 12's ABI) from one that moves c to the device
 * instead: its launch then leaves c resident, and the launch after it must
 * not prefetch c (on main 1: the update went unseen, and the old graph's
 * move of c to the host counted). */
static void test_exec_update_takes_new_prefetches(void **state)
{
    (void)state;
    CUdeviceptr v[3];
    CUstream s;
    CUgraph old = capture_c_to_host(v, &s), upd = capture_kernel(s, v, true);
    CUgraphExec e = NULL;
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&e, old, 0),
                     CUDA_SUCCESS);
    CUgraphExecUpdateResultInfo info;
    assert_int_equal(GET(PFN_cuGraphExecUpdate_v12000, "cuGraphExecUpdate", 12000)(e, upd, &info),
                     CUDA_SUCCESS);
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(e, s), CUDA_SUCCESS);
    size_t mark = f_count();
    launch_vadd(s, v[0], v[1], v[2], N);
    assert_int_equal(shim_prefetches_of(mark, v[2]), 0);
    graph_done(e, upd);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(old), CUDA_SUCCESS);
}

/* An executable graph of a kernel on resident a, b, c is updated (CUDA
 * 10.2's ABI) from one of the same kernel on d, never prefetched: its
 * launch must prefetch d (on main 0: the launch prefetched what the old
 * graph's kernel used). A refused update (another topology) changes
 * nothing. */
static void test_exec_update_takes_new_arguments(void **state)
{
    (void)state;
    CUdeviceptr v[3], d[3];
    for (int i = 0; i < 3; i++)
        v[i] = managed_region(N * 4);
    d[0] = d[1] = d[2] = managed_region(N * 4);
    CUstream s = new_stream();
    launch_vadd(s, v[0], v[1], v[2], N);
    CUgraph old = capture_kernel(s, v, false), upd = capture_kernel(s, d, false);
    CUgraph other = capture_kernel(s, d, true); /* a node more */
    CUgraphExec e = NULL;
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&e, old, 0),
                     CUDA_SUCCESS);
    PFN_cuGraphExecUpdate_v10020 update =
        GET(PFN_cuGraphExecUpdate_v10020, "cuGraphExecUpdate", 11000);
    CUgraphNode err;
    CUgraphExecUpdateResult res;
    assert_int_equal(update(e, other, &err, &res), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(update(e, upd, &err, &res), CUDA_SUCCESS);
    assert_int_equal(res, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    size_t mark = f_count();
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(e, s), CUDA_SUCCESS);
    assert_int_equal(shim_prefetches_of(mark, d[0]), mode_proactive ? 1 : 0);
    graph_done(e, upd);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(old), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(other), CUDA_SUCCESS);
}

/* Whether the driver takes the program's batched prefetches (not
 * FAKE_CUDA_NO_BATCH=1, which refuses them: nothing is captured then). */
static bool batches(void)
{
    return strcmp(prefetch_form(2), "cuMemPrefetchBatchAsync") == 0;
}

/* The graph a capture of s records: a kernel on k[0..2], then the
 * program's batched move of v[1] and v[2] to the location loc (the double
 * records one node per range, in the batch's order). */
static CUgraph capture_batch_on(CUstream s, const CUdeviceptr *k, const CUdeviceptr *v,
                                CUmemLocationType loc)
{
    capture_begin(s);
    launch_vadd(s, k[0], k[1], k[2], N);
    CUdeviceptr ptrs[2] = {v[1], v[2]};
    size_t sizes[2] = {N * 4, N * 4}, idx[1] = {0};
    CUmemLocation locs[1] = {{.type = loc, .id = 0}};
    assert_int_equal(GET(PFN_cuMemPrefetchBatchAsync_v13000, "cuMemPrefetchBatchAsync",
                         13000)(ptrs, sizes, 2, locs, idx, 1, 0, s),
                     CUDA_SUCCESS);
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
    return g;
}

/* Three regions a, b, c on a new stream *s_p and the graph of a batched move
 * of b and c to loc: to the host, all three resident and the graph's kernel
 * on a, b, c; to the device, only a resident (b and c never prefetched) and
 * the graph's kernel on a alone, so that only the batch moves b and c. */
static CUgraph capture_batch(CUdeviceptr *v, CUstream *s_p, CUmemLocationType loc)
{
    for (int i = 0; i < 3; i++)
        v[i] = managed_region(N * 4);
    bool host = loc != CU_MEM_LOCATION_TYPE_DEVICE;
    const CUdeviceptr k[3] = {v[0], host ? v[1] : v[0], host ? v[2] : v[0]};
    *s_p = new_stream();
    launch_vadd(*s_p, k[0], k[1], k[2], N);
    return capture_batch_on(*s_p, k, v, loc);
}

/* The node of g the double recorded for the prefetch of the range at p. */
static CUgraphNode prefetch_node_of(CUgraph g, CUdeviceptr p)
{
    CUgraphNode nodes[16], found = NULL;
    size_t n = 16;
    assert_int_equal(GET(PFN_cuGraphGetNodes_v10000, "cuGraphGetNodes", 12000)(g, nodes, &n),
                     CUDA_SUCCESS);
    fake_graph_nodes_fn info = (fake_graph_nodes_fn)dlsym(drv, "fake_graph_nodes");
    assert_non_null(info);
    fake_node_info_t v[16];
    assert_int_equal(info(g, v, 16), n); /* the same nodes, in the same order */
    for (size_t i = 0; i < n; i++)
        if (v[i].kind == FAKE_NODE_PREFETCH && v[i].a0 == p) {
            assert_null(found);
            found = nodes[i];
        }
    assert_non_null(found);
    return found;
}

/* The graph of capture_batch to loc with the node of range gone (0: b's,
 * the batch's first; 1: c's, its last; -1: none) removed, then launched;
 * the launch after it prefetches b and c want[0] and want[1] times (under
 * the proactive policy; none else). */
static void batch_node_removed(CUmemLocationType loc, int gone, const size_t *want)
{
    if (!batches())
        skip();
    CUdeviceptr v[3];
    CUstream s;
    CUgraph g = capture_batch(v, &s, loc);
    if (gone >= 0)
        assert_int_equal(GET(PFN_cuGraphDestroyNode_v10000, "cuGraphDestroyNode",
                             12000)(prefetch_node_of(g, v[1 + gone])),
                         CUDA_SUCCESS);
    assert_int_equal(graph_nodes_of(g, FAKE_NODE_PREFETCH), gone >= 0 ? 1 : 2);
    CUgraphExec e = graph_run(g, s, NULL);
    size_t mark = f_count();
    launch_vadd(s, v[0], v[1], v[2], N);
    for (int i = 0; i < 2; i++)
        assert_int_equal(shim_prefetches_of(mark, v[1 + i]), mode_proactive ? want[i] : 0);
    graph_done(e, g);
}

/*
 * Which node of a batch moves which range is not documented, nor how many
 * nodes a batch becomes; the double makes one per range. Once one of a
 * batch's several nodes is removed, its moves to the device no longer
 * count and its moves to the host still do, until the last of its nodes is
 * removed: either way a wrong guess costs one prefetch more, not faults.
 */

/* A batch to the host, its first node removed: b and c are prefetched
 * again (b's move may still run; c's does). */
static void test_batch_host_first_node_removed(void **state)
{
    (void)state;
    batch_node_removed(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0, (const size_t[]){1, 1});
}

/* Its last node removed: b's move to the host still runs, and b must be
 * prefetched again (on main 0: all the batch's ranges were kept with its
 * last node, and removing it forgot b's move too: b taken for resident). */
static void test_batch_host_last_node_removed(void **state)
{
    (void)state;
    batch_node_removed(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 1, (const size_t[]){1, 1});
}

/* A batch to the device, nothing removed: b and c stay resident after the
 * graph's launch, and are not prefetched again. */
static void test_batch_device_kept(void **state)
{
    (void)state;
    batch_node_removed(CU_MEM_LOCATION_TYPE_DEVICE, -1, (const size_t[]){0, 0});
}

/* Its first node removed: b no longer moves and must be prefetched (on main
 * 0: the batch's ranges were kept with its last node, still there, and b
 * was taken for resident). */
static void test_batch_device_first_node_removed(void **state)
{
    (void)state;
    batch_node_removed(CU_MEM_LOCATION_TYPE_DEVICE, 0, (const size_t[]){1, 1});
}

/* Its last node removed: c no longer moves and must be prefetched. */
static void test_batch_device_last_node_removed(void **state)
{
    (void)state;
    batch_node_removed(CU_MEM_LOCATION_TYPE_DEVICE, 1, (const size_t[]){1, 1});
}

/* A graph holding a batched move of b and c to the host is cloned and the
 * original destroyed: the clone's launch moves both, and the launch after it
 * prefetches both again. */
static void test_batch_clone_keeps_prefetches(void **state)
{
    (void)state;
    if (!batches())
        skip();
    CUdeviceptr v[3];
    CUstream s;
    CUgraph original = capture_batch(v, &s, CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT), clone = NULL;
    assert_int_equal(GET(PFN_cuGraphClone_v10000, "cuGraphClone", 12000)(&clone, original),
                     CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(original),
                     CUDA_SUCCESS);
    CUgraphExec e = graph_run(clone, s, NULL);
    size_t mark = f_count();
    launch_vadd(s, v[0], v[1], v[2], N);
    for (int i = 1; i < 3; i++)
        assert_int_equal(shim_prefetches_of(mark, v[i]), mode_proactive ? 1 : 0);
    graph_done(e, clone);
}

/* An executable graph of a batched move of b and c to the device (never
 * prefetched else) is launched, then updated (cuGraphExecUpdate) from one of
 * the same topology moving them to the host, then back: the launch after
 * each of its launches prefetches b and c after the move to the host only. */
static void test_batch_exec_update(void **state)
{
    (void)state;
    if (!batches())
        skip();
    CUdeviceptr v[3];
    CUstream s;
    CUgraph dev = capture_batch(v, &s, CU_MEM_LOCATION_TYPE_DEVICE);
    CUgraph host = capture_batch_on(s, (const CUdeviceptr[]){v[0], v[0], v[0]}, v,
                                    CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
    CUgraphExec e = NULL;
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&e, dev, 0),
                     CUDA_SUCCESS);
    PFN_cuGraphExecUpdate_v12000 update =
        GET(PFN_cuGraphExecUpdate_v12000, "cuGraphExecUpdate", 12000);
    CUgraphExecUpdateResultInfo info;
    CUgraph order[3] = {NULL, host, dev};
    for (int k = 0; k < 3; k++) {
        if (order[k]) {
            assert_int_equal(update(e, order[k], &info), CUDA_SUCCESS);
            assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
        }
        assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(e, s), CUDA_SUCCESS);
        size_t mark = f_count();
        launch_vadd(s, v[0], v[1], v[2], N);
        for (int i = 1; i < 3; i++)
            assert_int_equal(shim_prefetches_of(mark, v[i]), mode_proactive && k == 1 ? 1 : 0);
    }
    graph_done(e, dev);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(host), CUDA_SUCCESS);
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captured_launch_voids_only_its_claims),
        cmocka_unit_test(test_captured_launch_keeps_prefetch_stream),
        cmocka_unit_test(test_failed_capture_forgets_prefetch),
        cmocka_unit_test(test_invalidated_capture_status),
        cmocka_unit_test(test_invalidated_capture_forgets_prefetch),
        cmocka_unit_test(test_invalidated_capture_forgets_joined_prefetch),
        cmocka_unit_test(test_removed_prefetch_node_forgotten),
        cmocka_unit_test(test_other_node_removed_prefetch_kept),
        cmocka_unit_test(test_child_graph_copy_keeps_prefetch),
        cmocka_unit_test(test_clone_keeps_prefetch),
        cmocka_unit_test(test_exec_update_takes_new_prefetches),
        cmocka_unit_test(test_exec_update_takes_new_arguments),
        cmocka_unit_test(test_batch_host_first_node_removed),
        cmocka_unit_test(test_batch_host_last_node_removed),
        cmocka_unit_test(test_batch_device_kept),
        cmocka_unit_test(test_batch_device_first_node_removed),
        cmocka_unit_test(test_batch_device_last_node_removed),
        cmocka_unit_test(test_batch_clone_keeps_prefetches),
        cmocka_unit_test(test_batch_exec_update),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
