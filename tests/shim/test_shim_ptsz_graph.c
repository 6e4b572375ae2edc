/*
 * Graphs, memsets and copies on per-thread default streams in libgmux.so
 * against the driver double (see shim_harness.h; launches:
 * test_shim_ptsz.c). CTest runs this under every policy, like test_shim.
 *
 * test_capture_copies_*: a program captures into a graph, on its
 * per-thread default stream, a memset, a copy from the host, a kernel and a
 * copy of the kernel's result. libgmux.so hooks no memset or copy, and the
 * graph must hold exactly the program's four operations (nothing of the
 * shim's: no prefetch, event record or wait), nothing may run at capture
 * time, and the graph's launch on the per-thread stream must prefetch the
 * kernel's data (proactive), order the launch after it on that stream, and
 * compute what the program asked.
 *
 * test_graph_launch_*: while one thread captures its per-thread default
 * stream (mode THREAD_LOCAL), it launches a graph into it (captured: a
 * child-graph node, so the shim must not prefetch for it), and a second
 * thread launches another graph on its own per-thread default stream and
 * synchronizes that stream: that graph runs, its data prefetched before it
 * and the order placed on that thread's stream, never on the legacy stream
 * (which a capturing per-thread stream makes unusable: the capture would be
 * invalidated). The captured graph's own launch then prefetches the child's
 * data.
 *
 * Each both ways a program names the stream: stream 0 through the _ptsz
 * entry points, CU_STREAM_PER_THREAD through the legacy ones.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include "shim_harness.h"

#define N 64

typedef struct {
    cuuint64_t flags; /* PT: the _ptsz entry points; LEGACY: the legacy ones */
    CUstream s;       /* stream 0, or CU_STREAM_PER_THREAD */
} pt_way_t;

static float *host(CUdeviceptr p)
{
    return (float *)(uintptr_t)p;
}

static void fill(CUdeviceptr p, float k, float v0)
{
    for (int i = 0; i < N; i++)
        host(p)[i] = v0 + k * (float)i;
}

static size_t graph_nodes(void *g, fake_node_info_t *out, size_t max)
{
    fake_graph_nodes_fn nodes = (fake_graph_nodes_fn)dlsym(drv, "fake_graph_nodes");
    assert_non_null(nodes);
    return nodes(g, out, max);
}

/* The entry point of base for the way the program names its stream. */
static void *entry(const pt_way_t *way, const char *base)
{
    void *f = get(base, 12000, way->flags);
    assert_non_null(f);
    return f;
}

static const char *launch_fn(const pt_way_t *way)
{
    return way->flags == PT ? "cuGraphLaunch_ptsz" : "cuGraphLaunch";
}

static CUgraphExec instantiate(CUgraph g)
{
    CUgraphExec exec = NULL;
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&exec, g, 0),
                     CUDA_SUCCESS);
    return exec;
}

static void destroy(CUgraphExec exec, CUgraph g)
{
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(exec),
                     CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g), CUDA_SUCCESS);
}

static void capture_copies(const pt_way_t *way)
{
    CUdeviceptr a = alloc(N * 4), b = alloc(N * 4), c = alloc(N * 4), d = alloc(N * 4);
    CUdeviceptr e = alloc(N * 4);
    static float src[N];
    for (int i = 0; i < N; i++)
        src[i] = (float)i;
    fill(a, 0.0f, -7.0f);
    fill(b, 0.5f, 0.0f);
    fill(c, 0.0f, -1.0f);
    fill(d, 0.0f, -1.0f);
    fill(e, 0.0f, -1.0f);
    PFN_cuStreamBeginCapture_v10010 begin =
        (PFN_cuStreamBeginCapture_v10010)entry(way, "cuStreamBeginCapture");
    PFN_cuStreamEndCapture_v10000 end =
        (PFN_cuStreamEndCapture_v10000)entry(way, "cuStreamEndCapture");
    PFN_cuMemsetD32Async_v3020 memset32 =
        (PFN_cuMemsetD32Async_v3020)entry(way, "cuMemsetD32Async");
    PFN_cuMemcpyHtoDAsync_v3020 htod = (PFN_cuMemcpyHtoDAsync_v3020)entry(way, "cuMemcpyHtoDAsync");
    PFN_cuMemcpyDtoDAsync_v3020 dtod = (PFN_cuMemcpyDtoDAsync_v3020)entry(way, "cuMemcpyDtoDAsync");
    PFN_cuLaunchKernel_v4000 launch = (PFN_cuLaunchKernel_v4000)entry(way, "cuLaunchKernel");
    PFN_cuGraphLaunch_v10000 glaunch = (PFN_cuGraphLaunch_v10000)entry(way, "cuGraphLaunch");
    PFN_cuStreamSynchronize_v2000 sync =
        (PFN_cuStreamSynchronize_v2000)entry(way, "cuStreamSynchronize");
    const unsigned one = 0x3f800000u; /* 1.0f */
    int n = N;
    void *args[] = {&a, &b, &c, &n}; /* c = a + b */

    f_reset();
    assert_int_equal(begin(way->s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(memset32(d, one, N, way->s), CUDA_SUCCESS); /* d = 1 */
    assert_int_equal(htod(a, src, N * 4, way->s), CUDA_SUCCESS); /* a = src */
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, N, 1, 1, 0, way->s, args, NULL), CUDA_SUCCESS);
    assert_int_equal(dtod(e, c, N * 4, way->s), CUDA_SUCCESS); /* e = c */
    CUgraph g = NULL;
    assert_int_equal(end(way->s, &g), CUDA_SUCCESS);
    assert_non_null(g);

    /* nothing ran, nothing moved */
    assert_true(host(a)[1] == -7.0f && host(c)[1] == -1.0f);
    assert_true(host(d)[1] == -1.0f && host(e)[1] == -1.0f);
    assert_int_equal(count_prefetches(), 0);
    /* the program's four operations, in order, and nothing else */
    fake_node_info_t nd[8];
    assert_int_equal(graph_nodes(g, nd, 8), 4);
    assert_int_equal(nd[0].kind, FAKE_NODE_MEMSET);
    assert_int_equal(nd[0].a0, d);
    assert_int_equal(nd[0].a1, N);
    assert_int_equal(nd[0].a2, (uint64_t)4 << 32 | one);
    assert_int_equal(nd[1].kind, FAKE_NODE_MEMCPY);
    assert_int_equal(nd[1].a0, a);
    assert_int_equal(nd[1].a1, N * 4);
    assert_int_equal(nd[1].a2, (uint64_t)(uintptr_t)src);
    assert_int_equal(nd[2].kind, FAKE_NODE_KERNEL);
    assert_ptr_equal(nd[2].func, vadd_fn());
    assert_int_equal(nd[2].a0, a);
    assert_int_equal(nd[3].kind, FAKE_NODE_MEMCPY);
    assert_int_equal(nd[3].a0, e);
    assert_int_equal(nd[3].a2, c);

    CUgraphExec exec = instantiate(g);
    f_reset();
    assert_int_equal(glaunch(exec, way->s), CUDA_SUCCESS);
    /* the kernel's three regions, ordered before the launch on the per-thread
     * stream; the memset's and copies' memory is left to the driver */
    const CUdeviceptr bases[] = {a, b, c};
    const size_t sizes[] = {N * 4, N * 4, N * 4};
    assert_prefetched_before(launch_fn(way), way->s, bases, sizes, 3);
    assert_int_equal(sync(way->s), CUDA_SUCCESS);
    for (int i = 0; i < N; i++) {
        assert_true(host(d)[i] == 1.0f);
        assert_true(host(a)[i] == (float)i);
        assert_true(host(c)[i] == 1.5f * (float)i);
        assert_true(host(e)[i] == 1.5f * (float)i);
    }
    assert_int_equal(graph_nodes(g, nd, 8), 4); /* the launch added nothing */
    destroy(exec, g);
}

static void test_capture_copies_ptsz(void **state)
{
    (void)state;
    const pt_way_t way = {PT, NULL};
    capture_copies(&way);
}

static void test_capture_copies_handle(void **state)
{
    (void)state;
    const pt_way_t way = {LEGACY, CU_STREAM_PER_THREAD};
    capture_copies(&way);
}

/* A graph of one kernel, c = a + b. */
static CUgraph vadd_graph(CUdeviceptr *a, CUdeviceptr *b, CUdeviceptr *c)
{
    static int n = N;
    void *args[] = {a, b, c, &n};
    CUgraph g = NULL;
    CUgraphNode node;
    assert_int_equal(GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000)(&g, 0), CUDA_SUCCESS);
    CUDA_KERNEL_NODE_PARAMS p = {.func = vadd_fn(),
                                 .gridDimX = 1,
                                 .gridDimY = 1,
                                 .gridDimZ = 1,
                                 .blockDimX = N,
                                 .blockDimY = 1,
                                 .blockDimZ = 1,
                                 .kernelParams = args};
    assert_int_equal(
        GET(PFN_cuGraphAddKernelNode_v12000, "cuGraphAddKernelNode", 12000)(&node, g, NULL, 0, &p),
        CUDA_SUCCESS);
    return g;
}

/* The second thread: launches exec on its own per-thread stream, then
 * synchronizes that stream. */
typedef struct {
    PFN_cuGraphLaunch_v10000 launch;
    PFN_cuStreamSynchronize_v2000 sync;
    CUgraphExec exec;
    CUstream s;
    CUresult launched, synced;
} other_t;

static void *other_thread(void *arg)
{
    other_t *o = arg;
    o->launched = o->launch(o->exec, o->s);
    o->synced = o->sync(o->s);
    return NULL;
}

/* No wait of the legacy stream in the log (a per-thread default stream
 * captures: the legacy stream is unusable). */
static void assert_no_legacy_wait(void)
{
    for (long w = find_call("cuStreamWaitEvent", 0); w >= 0;
         w = find_call("cuStreamWaitEvent", (size_t)w + 1))
        assert_true(f_get((size_t)w)->a[0] != 0);
}

static void graph_launch_per_thread(const pt_way_t *way)
{
    CUdeviceptr a = alloc(N * 4), b = alloc(N * 4), c = alloc(N * 4);
    CUdeviceptr x = alloc(N * 4), y = alloc(N * 4), z = alloc(N * 4);
    fill(a, 1.0f, 0.0f);
    fill(b, 0.5f, 0.0f);
    fill(c, 0.0f, -1.0f);
    fill(x, 1.0f, 0.0f);
    fill(y, 1.0f, 0.0f);
    fill(z, 0.0f, -1.0f);
    CUgraph mine = vadd_graph(&a, &b, &c), theirs = vadd_graph(&x, &y, &z);
    CUgraphExec mine_exec = instantiate(mine), theirs_exec = instantiate(theirs);
    PFN_cuStreamBeginCapture_v10010 begin =
        (PFN_cuStreamBeginCapture_v10010)entry(way, "cuStreamBeginCapture");
    PFN_cuStreamEndCapture_v10000 end =
        (PFN_cuStreamEndCapture_v10000)entry(way, "cuStreamEndCapture");
    PFN_cuGraphLaunch_v10000 glaunch = (PFN_cuGraphLaunch_v10000)entry(way, "cuGraphLaunch");
    PFN_cuStreamSynchronize_v2000 sync =
        (PFN_cuStreamSynchronize_v2000)entry(way, "cuStreamSynchronize");

    f_reset();
    assert_int_equal(begin(way->s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    assert_int_equal(glaunch(mine_exec, way->s), CUDA_SUCCESS); /* captured */
    other_t o = {glaunch, sync, theirs_exec, way->s, CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_thread, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(o.launched, CUDA_SUCCESS);
    assert_int_equal(o.synced, CUDA_SUCCESS);
    CUgraph g = NULL;
    assert_int_equal(end(way->s, &g), CUDA_SUCCESS); /* nothing invalidated it */

    /* the other thread's graph ran, the captured launch did not */
    for (int i = 0; i < N; i++)
        assert_true(host(z)[i] == 2.0f * (float)i);
    assert_true(host(c)[N - 1] == -1.0f);
    fake_node_info_t nd[4];
    assert_int_equal(graph_nodes(g, nd, 4), 1);
    assert_int_equal(nd[0].kind, FAKE_NODE_GRAPH);
    assert_int_equal(nd[0].a0, (uint64_t)(uintptr_t)mine);
    long first = find_call(launch_fn(way), 0);
    long other = first >= 0 ? find_call(launch_fn(way), (size_t)first + 1) : -1;
    assert_true(first >= 0 && other > first);
    assert_int_equal(f_get((size_t)other)->a[0], (uint64_t)(uintptr_t)theirs_exec);
    const CUdeviceptr theirs_set[] = {x, y, z};
    assert_prefetched_only(theirs_set, 3, first, other);
    assert_no_legacy_wait();

    /* the captured graph's launch prefetches the child's kernel data */
    CUgraphExec exec = instantiate(g);
    f_reset();
    assert_int_equal(glaunch(exec, way->s), CUDA_SUCCESS);
    const CUdeviceptr bases[] = {a, b, c};
    const size_t sizes[] = {N * 4, N * 4, N * 4};
    assert_prefetched_before(launch_fn(way), way->s, bases, sizes, 3);
    assert_int_equal(sync(way->s), CUDA_SUCCESS);
    for (int i = 0; i < N; i++)
        assert_true(host(c)[i] == 1.5f * (float)i);
    destroy(exec, g);
    destroy(mine_exec, mine);
    destroy(theirs_exec, theirs);
}

static void test_graph_launch_ptsz(void **state)
{
    (void)state;
    const pt_way_t way = {PT, NULL};
    graph_launch_per_thread(&way);
}

static void test_graph_launch_handle(void **state)
{
    (void)state;
    const pt_way_t way = {LEGACY, CU_STREAM_PER_THREAD};
    graph_launch_per_thread(&way);
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_copies_ptsz),
        cmocka_unit_test(test_capture_copies_handle),
        cmocka_unit_test(test_graph_launch_ptsz),
        cmocka_unit_test(test_graph_launch_handle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
