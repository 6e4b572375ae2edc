/*
 * A program's memsets and copies, and its blocking streams, under libgmux.so
 * against the driver double (see shim_harness.h). CTest runs this under
 * every policy, like test_shim.
 *
 * test_stream_flags: streams keep the flags they were created with
 * (cuStreamGetFlags), and the shim's migration stream is a non-blocking one
 * (a blocking one would be ordered with the legacy stream's work, and a
 * capture of it would make the legacy stream unusable), and a launch is
 * ordered after its data's prefetch on a blocking stream and on the legacy
 * stream (proactive).
 *
 * test_stream_order: the double's model of stream order (fake_ordered).
 *
 * test_blocking_capture_*: while a stream created blocking (flags 0)
 * captures, in any mode, the legacy stream is unusable: a query of it fails
 * with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates nothing, work on
 * it (a memset, a batched or single prefetch) is refused so and invalidates the
 * capture; a capture of a non-blocking stream leaves it usable. A launch on
 * another stream meanwhile gets its data prefetched (proactive) and leaves
 * the capture alone; one on the capturing stream is captured, nothing
 * prefetched.
 *
 * test_copies_on_managed: 16-bit memsets, device-to-device, 2D (into an
 * allocation of cuMemAllocPitch, with the pitch the shim reports), 3D and
 * peer copies, synchronous and on a blocking stream, on the program's
 * allocations (managed where the policy redirects them), then a kernel
 * reading what they wrote: the data is what the program asked for under
 * every policy.
 *
 * test_capture_2d_copy: a 2D copy and a 16-bit memset captured on a
 * blocking stream are nodes of the graph (nothing ran), and run when it is
 * launched.
 */
#include <dlfcn.h>
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

static unsigned flags_of(CUstream s, CUresult *r)
{
    unsigned f = 0xdead;
    *r = GET(PFN_cuStreamGetFlags_v5050, "cuStreamGetFlags", 12000)(s, &f);
    return f;
}

static float *host(CUdeviceptr p)
{
    return (float *)(uintptr_t)p;
}

static void test_stream_flags(void **state)
{
    (void)state;
    CUresult r;
    CUstream b = new_stream_flags(CU_STREAM_DEFAULT), nb = new_stream_flags(CU_STREAM_NON_BLOCKING),
             p = NULL;
    assert_int_equal(GET(PFN_cuStreamCreateWithPriority_v5050, "cuStreamCreateWithPriority",
                         12000)(&p, CU_STREAM_NON_BLOCKING, -1),
                     CUDA_SUCCESS);
    assert_int_equal(flags_of(b, &r), CU_STREAM_DEFAULT);
    assert_int_equal(r, CUDA_SUCCESS);
    assert_int_equal(flags_of(nb, &r), CU_STREAM_NON_BLOCKING);
    assert_int_equal(r, CUDA_SUCCESS);
    assert_int_equal(flags_of(p, &r), CU_STREAM_NON_BLOCKING);
    assert_int_equal(r, CUDA_SUCCESS);
    assert_int_equal(flags_of(NULL, &r), CU_STREAM_DEFAULT);
    assert_int_equal(r, CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuStreamDestroy_v4000, "cuStreamDestroy", 12000)(nb), CUDA_SUCCESS);
    (void)flags_of(nb, &r);
    assert_int_equal(r, CUDA_ERROR_INVALID_HANDLE);

    /* the migration stream the shim prefetches on is non-blocking */
    CUdeviceptr x = alloc(N * 4), y = alloc(N * 4), z = alloc(N * 4);
    f_reset();
    launch_vadd(b, x, y, z, N);
    long pf = find_call(prefetch_form(3), 0);
    if (!mode_prefetch) {
        assert_int_equal(pf, -1);
        return;
    }
    assert_true(pf >= 0);
    CUstream mig = (CUstream)(uintptr_t)f_get((size_t)pf)->a[3];
    assert_int_equal(flags_of(mig, &r), CU_STREAM_NON_BLOCKING);
    assert_int_equal(r, CUDA_SUCCESS);
    /* the launch is ordered after its data's prefetch, on b and on the legacy stream */
    assert_int_equal(ordered(pf, find_call("cuLaunchKernel", 0)), 1);
    CUdeviceptr u = alloc(N * 4);
    f_reset();
    launch_vadd(NULL, u, y, z, N);
    pf = find_call(prefetch_form(1), 0); /* u only: y and z were prefetched already */
    assert_true(pf >= 0);
    assert_int_equal(f_get((size_t)pf)->a[0], u);
    assert_int_equal(ordered(pf, find_call("cuLaunchKernel", 0)), 1);
}

/* The program's prefetch of one range, batched (the double's, which the shim
 * passes through), or single where the driver refuses batches
 * (FAKE_CUDA_NO_BATCH=1) and on the legacy stream, which a batch must not
 * use (cuda.h; refused: test_shim_own_prefetch): the two follow the same
 * rules. */
static CUresult program_prefetch(CUdeviceptr p, size_t len, CUstream s)
{
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    if (strcmp(prefetch_form(2), "cuMemPrefetchBatchAsync") != 0 || s == NULL ||
        s == CU_STREAM_LEGACY)
        return GET(PFN_cuMemPrefetchAsync_v12020, "cuMemPrefetchAsync", 12020)(p, len, loc, 0, s);
    CUdeviceptr ptrs[] = {p};
    size_t sizes[] = {len}, idx[] = {0};
    PFN_cuMemPrefetchBatchAsync_v13000 batch =
        GET(PFN_cuMemPrefetchBatchAsync_v13000, "cuMemPrefetchBatchAsync", 13000);
    assert_non_null(batch);
    return batch(ptrs, sizes, 1, &loc, idx, 1, 0, s);
}

static CUdeviceptr managed(size_t size)
{
    CUdeviceptr p = 0;
    assert_int_equal(GET(PFN_cuMemAllocManaged_v6000, "cuMemAllocManaged",
                         12000)(&p, size, CU_MEM_ATTACH_GLOBAL),
                     CUDA_SUCCESS);
    return p;
}

static void blocking_capture(CUstreamCaptureMode mode)
{
    PFN_cuStreamBeginCapture_v10010 begin =
        GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture", 12000);
    PFN_cuStreamEndCapture_v10000 end =
        GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000);
    PFN_cuStreamIsCapturing_v10000 is_capturing =
        GET(PFN_cuStreamIsCapturing_v10000, "cuStreamIsCapturing", 12000);
    PFN_cuMemsetD16Async_v3020 memset16 =
        GET(PFN_cuMemsetD16Async_v3020, "cuMemsetD16Async", 12000);
    CUstream b = new_stream_flags(CU_STREAM_DEFAULT), nb = new_stream_flags(CU_STREAM_NON_BLOCKING);
    CUdeviceptr x = managed(N * 4), y = managed(N * 4), z = managed(N * 4), w = managed(N * 4);
    for (int i = 0; i < N; i++) {
        host(x)[i] = (float)i;
        host(y)[i] = 1.0f;
        host(z)[i] = -1.0f;
        host(w)[i] = -1.0f;
    }
    CUgraph g = NULL;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;

    /* the query fails, nothing is invalidated; another stream's launch runs */
    f_reset();
    assert_int_equal(begin(b, mode), CUDA_SUCCESS);
    assert_int_equal(is_capturing(NULL, &cs), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_int_equal(is_capturing(b, &cs), CUDA_SUCCESS);
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    launch_vadd(nb, x, y, z, N);                                   /* runs: z = x + 1 */
    launch_vadd(b, x, x, w, N);                                    /* captured */
    assert_int_equal(program_prefetch(x, N * 4, b), CUDA_SUCCESS); /* captured */
    assert_true(host(z)[3] == 4.0f && host(w)[3] == -1.0f);
    size_t moved = 0;
    for (size_t i = 0; i < f_count(); i++)
        moved += strncmp(f_get(i)->fn, "cuMemPrefetch", 13) == 0 && f_get(i)->a[3] != (uintptr_t)b;
    /* the run launch's three regions (the program's own managed memory) */
    assert_int_equal(moved, mode_proactive ? 3 : 0);
    assert_int_equal(end(b, &g), CUDA_SUCCESS);
    fake_node_info_t nd[8];
    fake_graph_nodes_fn nodes = (fake_graph_nodes_fn)dlsym(drv, "fake_graph_nodes");
    assert_int_equal(nodes(g, nd, 8), 2); /* the program's kernel and prefetch */
    assert_int_equal(nd[0].kind, FAKE_NODE_KERNEL);
    assert_int_equal(nd[1].kind, FAKE_NODE_PREFETCH);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g), CUDA_SUCCESS);

    /* work on the legacy stream is refused and invalidates the capture */
    assert_int_equal(begin(b, mode), CUDA_SUCCESS);
    assert_int_equal(memset16(w, 7, 2, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_int_equal(end(b, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(begin(b, mode), CUDA_SUCCESS);
    assert_int_equal(program_prefetch(x, N * 4, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_int_equal(end(b, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_true(host(w)[0] == -1.0f);

    /* a non-blocking stream's capture leaves the legacy stream usable */
    assert_int_equal(begin(nb, mode), CUDA_SUCCESS);
    assert_int_equal(is_capturing(NULL, &cs), CUDA_SUCCESS);
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(memset16(w, 7, 2, NULL), CUDA_SUCCESS);
    assert_int_equal(program_prefetch(x, N * 4, NULL), CUDA_SUCCESS);
    /* a synchronous copy waits for the host: a potentially unsafe call, which
     * the capturing thread may make only in a RELAXED capture */
    CUresult want = mode == CU_STREAM_CAPTURE_MODE_RELAXED ? CUDA_SUCCESS
                                                           : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    assert_int_equal(GET(PFN_cuMemcpyDtoD_v3020, "cuMemcpyDtoD", 12000)(y, x, 4), want);
    CUDA_MEMCPY2D row = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                         .srcDevice = x + 8,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                         .dstDevice = y + 8,
                         .WidthInBytes = 4,
                         .Height = 1};
    assert_int_equal(GET(PFN_cuMemcpy2D_v3020, "cuMemcpy2D", 12000)(&row), want);
    assert_int_equal(end(nb, &g),
                     want == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(((const uint16_t *)host(w))[1], 7);
    assert_true(host(y)[0] == (want == CUDA_SUCCESS ? 0.0f : 1.0f));
    assert_true(host(y)[2] == (want == CUDA_SUCCESS ? 2.0f : 1.0f));
    if (g)
        assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g), CUDA_SUCCESS);
}

static long memset_on(CUstream s, CUdeviceptr p)
{
    assert_int_equal(GET(PFN_cuMemsetD8Async_v3020, "cuMemsetD8Async", 12000)(p, 1, 1, s),
                     CUDA_SUCCESS);
    return (long)f_count() - 1;
}

/* The double's stream order: the legacy stream and blocking streams are
 * ordered with each other, non-blocking ones only through events. */
static void test_stream_order(void **state)
{
    (void)state;
    CUstream b1 = new_stream_flags(CU_STREAM_DEFAULT), b2 = new_stream_flags(CU_STREAM_DEFAULT);
    CUstream nb = new_stream_flags(CU_STREAM_NON_BLOCKING);
    CUdeviceptr p = alloc(64);
    f_reset();
    long w1 = memset_on(b1, p), l1 = memset_on(NULL, p), w2 = memset_on(b2, p);
    long n1 = memset_on(nb, p), l2 = memset_on(CU_STREAM_LEGACY, p);
    long pt = memset_on(CU_STREAM_PER_THREAD, p);
    assert_int_equal(ordered(w1, l1), 1); /* legacy after a blocking stream */
    assert_int_equal(ordered(l1, w2), 1); /* a blocking stream after legacy */
    assert_int_equal(ordered(w1, w2), 1); /* so one blocking stream after another */
    assert_int_equal(ordered(w2, w1), 0);
    assert_int_equal(ordered(w2, n1), 0); /* non-blocking: neither way */
    assert_int_equal(ordered(n1, l2), 0);
    assert_int_equal(ordered(l2, pt), 1); /* a per-thread default stream is blocking */
    /* an event orders a non-blocking stream's work before a blocking one's */
    CUevent ev;
    assert_int_equal(GET(PFN_cuEventCreate_v2000, "cuEventCreate", 12000)(&ev, 0), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuEventRecord_v2000, "cuEventRecord", 12000)(ev, nb), CUDA_SUCCESS);
    long n2 = memset_on(nb, p);
    assert_int_equal(GET(PFN_cuStreamWaitEvent_v3020, "cuStreamWaitEvent", 12000)(b1, ev, 0),
                     CUDA_SUCCESS);
    long w3 = memset_on(b1, p);
    assert_int_equal(ordered(n1, w3), 1);
    assert_int_equal(ordered(n2, w3), 0); /* queued after the record */
    long l3 = memset_on(NULL, p);         /* and on to legacy, through b1 */
    assert_int_equal(ordered(n1, l3), 1);
    assert_int_equal(ordered(n2, l3), 0);
    assert_int_equal(ordered(w3, (long)f_count() + 5), -1); /* not work */
}

static void test_blocking_capture_global(void **state)
{
    (void)state;
    blocking_capture(CU_STREAM_CAPTURE_MODE_GLOBAL);
}

static void test_blocking_capture_relaxed(void **state)
{
    (void)state;
    blocking_capture(CU_STREAM_CAPTURE_MODE_RELAXED);
}

static CUDA_MEMCPY2D as_2d(const CUDA_MEMCPY3D *c)
{
    return (CUDA_MEMCPY2D){.dstMemoryType = c->dstMemoryType,
                           .dstHost = c->dstHost,
                           .dstDevice = c->dstDevice,
                           .dstPitch = c->dstPitch,
                           .dstXInBytes = c->dstXInBytes,
                           .dstY = c->dstY,
                           .srcMemoryType = c->srcMemoryType,
                           .srcHost = c->srcHost,
                           .srcDevice = c->srcDevice,
                           .srcPitch = c->srcPitch,
                           .srcXInBytes = c->srcXInBytes,
                           .srcY = c->srcY,
                           .WidthInBytes = c->WidthInBytes,
                           .Height = c->Height};
}

#define W 100 /* bytes per row of the pitched allocation */
#define H 8

static void test_copies_on_managed(void **state)
{
    (void)state;
    CUstream b = new_stream_flags(CU_STREAM_DEFAULT);
    CUcontext ctx = NULL;
    assert_int_equal(GET(PFN_cuCtxGetCurrent_v4000, "cuCtxGetCurrent", 12000)(&ctx), CUDA_SUCCESS);
    CUdeviceptr a = alloc(N * 4), c = alloc(N * 4), d = alloc(N * 4), e = alloc(N * 4);
    CUdeviceptr pitched = 0, box = alloc(4 * 4 * 3 * 4);
    size_t pitch = 0;
    assert_int_equal(
        GET(PFN_cuMemAllocPitch_v3020, "cuMemAllocPitch", 12000)(&pitched, &pitch, W, H, 4),
        CUDA_SUCCESS);
    assert_true(pitch >= W);
    memset(host(e), 0, N * 4);

    /* 16-bit memsets: a = 1.0f (0x3f80 in the high half, 0 in the low one) */
    assert_int_equal(GET(PFN_cuMemsetD16_v3020, "cuMemsetD16", 12000)(a, 0, 2 * N), CUDA_SUCCESS);
    assert_int_equal(
        GET(PFN_cuMemsetD16Async_v3020, "cuMemsetD16Async", 12000)(a + 2, 0x3f80, 1, b),
        CUDA_SUCCESS);
    for (int i = 1; i < N; i++)
        assert_int_equal(GET(PFN_cuMemsetD16Async_v3020, "cuMemsetD16Async",
                             12000)(a + 4 * (size_t)i + 2, 0x3f80, 1, b),
                         CUDA_SUCCESS);
    /* c = a (device to device), d = c (peer), e[0..N/2) = d (async peer) */
    assert_int_equal(GET(PFN_cuMemcpyDtoD_v3020, "cuMemcpyDtoD", 12000)(c, a, N * 4), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuMemcpyPeer_v4000, "cuMemcpyPeer", 12000)(d, ctx, c, ctx, N * 4),
                     CUDA_SUCCESS);
    assert_int_equal(
        GET(PFN_cuMemcpyPeerAsync_v4000, "cuMemcpyPeerAsync", 12000)(e, ctx, d, ctx, N * 2, b),
        CUDA_SUCCESS);
    /* a 2D copy of H rows of W bytes from the host into the pitched memory,
     * back out through a DtoD 2D copy into a plain allocation (pitch W), and
     * a 3D copy of a 4 x 4 x 3 box of floats into the middle of another */
    static unsigned char rows[H][W], back[H * W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            rows[y][x] = (unsigned char)(y * 31 + x);
    CUDA_MEMCPY3D in = copy3d(CU_MEMORYTYPE_DEVICE, pitched, pitch, CU_MEMORYTYPE_HOST,
                              (uintptr_t)rows, W, W, H, 1);
    CUDA_MEMCPY2D in2 = as_2d(&in);
    assert_int_equal(GET(PFN_cuMemcpy2D_v3020, "cuMemcpy2D", 12000)(&in2), CUDA_SUCCESS);
    CUdeviceptr flat = alloc(H * W);
    CUDA_MEMCPY3D out =
        copy3d(CU_MEMORYTYPE_DEVICE, flat, W, CU_MEMORYTYPE_UNIFIED, pitched, pitch, W, H, 1);
    CUDA_MEMCPY2D out2 = as_2d(&out);
    assert_int_equal(GET(PFN_cuMemcpy2DAsync_v3020, "cuMemcpy2DAsync", 12000)(&out2, b),
                     CUDA_SUCCESS);
    static float cube[3][4][4];
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++)
                cube[z][y][x] = (float)(100 * z + 10 * y + x);
    memset(host(box), 0, 4 * 4 * 3 * 4);
    CUDA_MEMCPY3D c3 = copy3d(CU_MEMORYTYPE_DEVICE, box, 16, CU_MEMORYTYPE_HOST, (uintptr_t)cube,
                              16, 8, 2, 2); /* 2 x 2 x 2 floats */
    c3.srcXInBytes = 4;                     /* from (1, 1, 1) */
    c3.srcY = 1;
    c3.srcZ = 1;
    c3.srcHeight = 4;
    c3.dstXInBytes = 8; /* to (2, 2, 1) */
    c3.dstY = 2;
    c3.dstZ = 1;
    c3.dstHeight = 4;
    assert_int_equal(GET(PFN_cuMemcpy3DAsync_v3020, "cuMemcpy3DAsync", 12000)(&c3, b),
                     CUDA_SUCCESS);
    CUDA_MEMCPY3D c3s = c3;
    c3s.dstZ = 0; /* the same into plane 0, synchronously */
    assert_int_equal(GET(PFN_cuMemcpy3D_v3020, "cuMemcpy3D", 12000)(&c3s), CUDA_SUCCESS);

    /* a kernel reads what they wrote: c = a + d on the blocking stream */
    launch_vadd(b, a, d, c, N);
    assert_int_equal(GET(PFN_cuStreamSynchronize_v2000, "cuStreamSynchronize", 12000)(b),
                     CUDA_SUCCESS);
    for (int i = 0; i < N; i++) {
        assert_true(host(a)[i] == 1.0f);
        assert_true(host(d)[i] == 1.0f);
        assert_true(host(c)[i] == 2.0f);
        assert_true(host(e)[i] == (i < N / 2 ? 1.0f : 0.0f));
    }
    memcpy(back, (const void *)(uintptr_t)flat, H * W);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            assert_int_equal(back[y * W + x], rows[y][x]);
    const float *bx = host(box);
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++) {
                /* plane 0 from the source's plane 1, planes 1 and 2 from its 2
                 * (the synchronous copy came last) */
                bool in_box = y >= 2 && x >= 2;
                float want = (float)(100 * (z ? 2 : 1) + 10 * (y - 1) + (x - 1));
                want = in_box ? want : 0.0f;
                assert_true(bx[(z * 4 + y) * 4 + x] == want);
            }
}

static void test_capture_2d_copy(void **state)
{
    (void)state;
    CUstream b = new_stream_flags(CU_STREAM_DEFAULT);
    CUdeviceptr pitched = 0;
    size_t pitch = 0;
    assert_int_equal(
        GET(PFN_cuMemAllocPitch_v3020, "cuMemAllocPitch", 12000)(&pitched, &pitch, W, H, 4),
        CUDA_SUCCESS);
    static unsigned char rows[H][W];
    memset(rows, 0x5a, sizeof(rows));
    memset((void *)(uintptr_t)pitched, 0, pitch * H);
    CUDA_MEMCPY3D in = copy3d(CU_MEMORYTYPE_DEVICE, pitched, pitch, CU_MEMORYTYPE_HOST,
                              (uintptr_t)rows, W, W, H, 1);
    CUDA_MEMCPY2D in2 = as_2d(&in);
    assert_int_equal(GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture",
                         12000)(b, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuMemcpy2DAsync_v3020, "cuMemcpy2DAsync", 12000)(&in2, b),
                     CUDA_SUCCESS);
    assert_int_equal(
        GET(PFN_cuMemsetD16Async_v3020, "cuMemsetD16Async", 12000)(pitched, 0x0101, 1, b),
        CUDA_SUCCESS);
    CUgraph g = NULL;
    assert_int_equal(GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000)(b, &g),
                     CUDA_SUCCESS);
    const unsigned char *p = (const unsigned char *)(uintptr_t)pitched;
    assert_int_equal(p[0], 0); /* nothing ran */
    assert_int_equal(p[pitch + 5], 0);
    fake_graph_nodes_fn nodes = (fake_graph_nodes_fn)dlsym(drv, "fake_graph_nodes");
    fake_node_info_t nd[4];
    assert_int_equal(nodes(g, nd, 4), 2);
    assert_int_equal(nd[0].kind, FAKE_NODE_MEMCPY3D);
    assert_int_equal(nd[1].kind, FAKE_NODE_MEMSET);
    assert_int_equal(nd[1].a2, (uint64_t)2 << 32 | 0x0101);
    CUgraphExec exec = graph_run(g, b, NULL);
    assert_int_equal(p[0], 1);
    assert_int_equal(p[1], 1);
    assert_int_equal(p[2], 0x5a);
    for (int y = 1; y < H; y++) {
        assert_int_equal(p[(size_t)y * pitch], 0x5a);
        assert_int_equal(p[(size_t)y * pitch + W - 1], 0x5a);
        if (pitch > W)
            assert_int_equal(p[(size_t)y * pitch + W], 0); /* the padding untouched */
    }
    graph_done(exec, g);
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_flags),
        cmocka_unit_test(test_stream_order),
        cmocka_unit_test(test_blocking_capture_global),
        cmocka_unit_test(test_blocking_capture_relaxed),
        cmocka_unit_test(test_copies_on_managed),
        cmocka_unit_test(test_capture_2d_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
