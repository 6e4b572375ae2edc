/*
 * A program's copies beyond those of test_shim_copies, under libgmux.so
 * against the driver double (see shim_harness.h): the shim hooks none of
 * them, so each reaches the program as the driver hands it out and must work
 * on the program's allocations (managed where the policy redirects them).
 * CTest runs this under every policy, like test_shim.
 *
 * test_sync_copies_per_thread: a program built for per-thread default
 * streams asks cuGetProcAddress with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 * and gets the driver's _ptds synchronous memsets and copies (else the plain
 * ones); they copy what was asked, on the calling thread's per-thread default
 * stream: usable while a blocking stream captures (work on the legacy stream
 * is refused then), ordered with the legacy stream and the thread's own
 * _ptsz work, not with another blocking stream.
 *
 * test_unaligned_and_peer_3d: cuMemcpy2DUnaligned and cuMemcpy3DPeer(Async)
 * (also _ptds / _ptsz) copy what was asked; a 3D peer copy without a context
 * is refused.
 *
 * test_batched_3d_copies: CUDA 13's cuMemcpy3DBatchAsync (also _ptsz) runs
 * each copy, then a kernel reads them; a batch with one wrong copy, flags, or
 * on the legacy stream is refused whole; captured, the copies are nodes of
 * the graph that run when it is launched.
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

static float *fl(CUdeviceptr p)
{
    return (float *)(uintptr_t)p;
}

static unsigned char *by(CUdeviceptr p)
{
    return (unsigned char *)(uintptr_t)p;
}

/* The synchronous entry point of base (driver symbol sym) a program gets
 * through the shim with per-thread default streams (pt) or without: the
 * driver's own _ptds one, or its plain one. */
static void *sync_entry(const char *base, const char *sym, int pt)
{
    void *fn = get(base, 12000, pt ? PT : LEGACY);
    char name[64];
    snprintf(name, sizeof(name), "%s%s", sym, pt ? "_ptds" : "");
    assert_non_null(fn);
    assert_ptr_equal(fn, f_entry(name));
    return fn;
}

static void test_sync_copies_per_thread(void **state)
{
    (void)state;
    static const char *const syms[][2] = {
        {"cuMemsetD8", "cuMemsetD8_v2"},
        {"cuMemsetD16", "cuMemsetD16_v2"},
        {"cuMemsetD32", "cuMemsetD32_v2"},
        {"cuMemcpy", "cuMemcpy"},
        {"cuMemcpyHtoD", "cuMemcpyHtoD_v2"},
        {"cuMemcpyDtoH", "cuMemcpyDtoH_v2"},
        {"cuMemcpyDtoD", "cuMemcpyDtoD_v2"},
        {"cuMemcpy2D", "cuMemcpy2D_v2"},
        {"cuMemcpy2DUnaligned", "cuMemcpy2DUnaligned_v2"},
        {"cuMemcpy3D", "cuMemcpy3D_v2"},
        {"cuMemcpyPeer", "cuMemcpyPeer"},
        {"cuMemcpy3DPeer", "cuMemcpy3DPeer"},
    };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
        for (int pt = 0; pt < 2; pt++)
            (void)sync_entry(syms[i][0], syms[i][1], pt);

    PFN_cuMemsetD8_v7000_ptds set8 = sync_entry("cuMemsetD8", "cuMemsetD8_v2", 1);
    PFN_cuMemsetD8_v3020 set8_legacy = sync_entry("cuMemsetD8", "cuMemsetD8_v2", 0);
    PFN_cuMemsetD32_v7000_ptds set32 = sync_entry("cuMemsetD32", "cuMemsetD32_v2", 1);
    PFN_cuMemcpy_v7000_ptds cpy = sync_entry("cuMemcpy", "cuMemcpy", 1);
    PFN_cuMemcpyHtoD_v7000_ptds htod = sync_entry("cuMemcpyHtoD", "cuMemcpyHtoD_v2", 1);
    PFN_cuMemcpyDtoH_v7000_ptds dtoh = sync_entry("cuMemcpyDtoH", "cuMemcpyDtoH_v2", 1);
    PFN_cuMemcpyDtoD_v7000_ptds dtod = sync_entry("cuMemcpyDtoD", "cuMemcpyDtoD_v2", 1);

    /* the data: a = in, c = 1.0f, c[0..N/2) = a, a = c, out = a */
    CUdeviceptr a = alloc(N * 4), c = alloc(N * 4);
    float in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)i;
    f_reset();
    assert_int_equal(htod(a, in, N * 4), CUDA_SUCCESS);
    assert_int_equal(set32(c, 0x3f800000u, N), CUDA_SUCCESS);
    assert_int_equal(cpy(c, a, N * 2), CUDA_SUCCESS);
    assert_int_equal(dtod(a, c, N * 4), CUDA_SUCCESS);
    assert_int_equal(dtoh(out, a, N * 4), CUDA_SUCCESS);
    for (int i = 0; i < N; i++)
        assert_true(out[i] == (i < N / 2 ? (float)i : 1.0f));
    size_t ptds = 0;
    for (size_t i = 0; i < f_count(); i++)
        if (strstr(f_get(i)->fn, "_ptds")) {
            ptds++;
            assert_int_equal(f_get(i)->a[3], (uintptr_t)CU_STREAM_PER_THREAD);
        }
    assert_int_equal(ptds, 5);

    /* while a blocking stream captures, the per-thread default stream is
     * usable (its synchronous copy a potentially unsafe call: RELAXED) and
     * the capture goes on; the legacy stream's memset is refused */
    PFN_cuStreamBeginCapture_v10010 begin =
        GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture", 12000);
    PFN_cuStreamEndCapture_v10000 end =
        GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000);
    CUstream b = new_stream_flags(CU_STREAM_DEFAULT), b2 = new_stream_flags(CU_STREAM_DEFAULT);
    CUgraph g = NULL;
    assert_int_equal(begin(b, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    assert_int_equal(set8(a, 0, 4), CUDA_SUCCESS);
    assert_int_equal(dtod(c, a, 4), CUDA_SUCCESS);
    launch_vadd(b, a, a, c, N); /* captured */
    assert_int_equal(end(b, &g), CUDA_SUCCESS);
    assert_true(fl(c)[0] == 0.0f && fl(c)[1] == 1.0f);
    fake_graph_nodes_fn nodes = (fake_graph_nodes_fn)dlsym(drv, "fake_graph_nodes");
    fake_node_info_t nd[4];
    assert_int_equal(nodes(g, nd, 4), 1);
    assert_int_equal(nd[0].kind, FAKE_NODE_KERNEL);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g), CUDA_SUCCESS);
    assert_int_equal(begin(b, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    assert_int_equal(set8_legacy(a, 0, 4), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    assert_int_equal(end(b, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* order: the per-thread default stream's work is ordered before the
     * thread's _ptsz work on stream 0 and the legacy stream's, and not
     * before another blocking stream's (the legacy stream's is) */
    PFN_cuMemsetD8Async_v3020 set8_on = GET(PFN_cuMemsetD8Async_v3020, "cuMemsetD8Async", 12000);
    PFN_cuMemsetD8Async_v7000_ptsz set8_ptsz =
        (PFN_cuMemsetD8Async_v7000_ptsz)get("cuMemsetD8Async", 12000, PT);
    f_reset();
    assert_int_equal(set8(a, 1, 1), CUDA_SUCCESS);
    long p1 = (long)f_count() - 1;
    assert_int_equal(set8_on(a, 1, 1, b2), CUDA_SUCCESS);
    long w1 = (long)f_count() - 1;
    assert_int_equal(set8_ptsz(a, 1, 1, NULL), CUDA_SUCCESS);
    long t1 = (long)f_count() - 1;
    assert_int_equal(set8_legacy(a, 1, 1), CUDA_SUCCESS);
    long l1 = (long)f_count() - 1;
    assert_int_equal(set8_on(a, 1, 1, b2), CUDA_SUCCESS);
    long w2 = (long)f_count() - 1;
    assert_int_equal(ordered(p1, w1), 0);
    assert_int_equal(ordered(p1, t1), 1);
    assert_int_equal(ordered(p1, l1), 1);
    assert_int_equal(ordered(l1, w2), 1);
}

/* A 3D peer copy of w x h x d bytes between pitched memory (pitch, planes
 * of h rows), both sides in context ctx. */
static CUDA_MEMCPY3D_PEER peer3d(CUmemorytype dt, uintptr_t dst, CUmemorytype st, uintptr_t src,
                                 size_t pitch, size_t w, size_t h, size_t d, CUcontext ctx)
{
    CUDA_MEMCPY3D c = copy3d(dt, dst, pitch, st, src, pitch, w, h, d);
    return (CUDA_MEMCPY3D_PEER){.dstMemoryType = c.dstMemoryType,
                                .dstHost = c.dstHost,
                                .dstDevice = c.dstDevice,
                                .dstContext = ctx,
                                .dstPitch = c.dstPitch,
                                .dstHeight = c.dstHeight,
                                .srcMemoryType = c.srcMemoryType,
                                .srcHost = c.srcHost,
                                .srcDevice = c.srcDevice,
                                .srcContext = ctx,
                                .srcPitch = c.srcPitch,
                                .srcHeight = c.srcHeight,
                                .WidthInBytes = c.WidthInBytes,
                                .Height = c.Height,
                                .Depth = c.Depth};
}

#define W 100 /* bytes per row */
#define H 8

static void test_unaligned_and_peer_3d(void **state)
{
    (void)state;
    CUcontext ctx = NULL;
    assert_int_equal(GET(PFN_cuCtxGetCurrent_v4000, "cuCtxGetCurrent", 12000)(&ctx), CUDA_SUCCESS);
    CUstream b = new_stream_flags(CU_STREAM_DEFAULT);
    static unsigned char rows[H][W], back[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            rows[y][x] = (unsigned char)(y * 7 + x);
    CUdeviceptr pitched = 0, flat = alloc(H * W), cube = alloc(2 * H * W), cube2 = alloc(2 * H * W);
    size_t pitch = 0;
    assert_int_equal(
        GET(PFN_cuMemAllocPitch_v3020, "cuMemAllocPitch", 12000)(&pitched, &pitch, W, H, 4),
        CUDA_SUCCESS);

    /* unaligned 2D: rows 1.. of the host rows, from byte 3, into the pitched
     * memory (plain entry point), then out into flat (_ptds) */
    CUDA_MEMCPY2D in = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                        .srcHost = rows,
                        .srcPitch = W,
                        .srcXInBytes = 3,
                        .srcY = 1,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = pitched,
                        .dstPitch = pitch,
                        .WidthInBytes = W - 3,
                        .Height = H - 1};
    PFN_cuMemcpy2DUnaligned_v3020 un =
        sync_entry("cuMemcpy2DUnaligned", "cuMemcpy2DUnaligned_v2", 0);
    PFN_cuMemcpy2DUnaligned_v7000_ptds un_pt =
        sync_entry("cuMemcpy2DUnaligned", "cuMemcpy2DUnaligned_v2", 1);
    assert_int_equal(un(&in), CUDA_SUCCESS);
    CUDA_MEMCPY2D out = {.srcMemoryType = CU_MEMORYTYPE_UNIFIED,
                         .srcDevice = pitched,
                         .srcPitch = pitch,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                         .dstDevice = flat,
                         .dstPitch = W,
                         .WidthInBytes = W - 3,
                         .Height = H - 1};
    memset(by(flat), 0, H * W);
    assert_int_equal(un_pt(&out), CUDA_SUCCESS);
    memcpy(back, by(flat), H * W);
    for (int y = 0; y < H - 1; y++)
        for (int x = 0; x < W - 3; x++)
            assert_int_equal(back[y][x], rows[y + 1][x + 3]);
    assert_int_equal(back[0][W - 3], 0);

    /* 3D peer: the rows as 2 planes of H/2 rows into cube (plain), cube to
     * cube2 on b (async), cube2's second plane back to the host (_ptds) */
    CUDA_MEMCPY3D_PEER p = peer3d(CU_MEMORYTYPE_DEVICE, cube, CU_MEMORYTYPE_HOST, (uintptr_t)rows,
                                  W, W, H / 2, 2, ctx);
    PFN_cuMemcpy3DPeer_v4000 peer = sync_entry("cuMemcpy3DPeer", "cuMemcpy3DPeer", 0);
    PFN_cuMemcpy3DPeer_v7000_ptds peer_pt = sync_entry("cuMemcpy3DPeer", "cuMemcpy3DPeer", 1);
    PFN_cuMemcpy3DPeerAsync_v4000 peer_async =
        GET(PFN_cuMemcpy3DPeerAsync_v4000, "cuMemcpy3DPeerAsync", 12000);
    PFN_cuMemcpy3DPeerAsync_v7000_ptsz peer_async_pt =
        (PFN_cuMemcpy3DPeerAsync_v7000_ptsz)get("cuMemcpy3DPeerAsync", 12000, PT);
    assert_ptr_equal(peer_async_pt, f_entry("cuMemcpy3DPeerAsync_ptsz"));
    assert_int_equal(peer(&p), CUDA_SUCCESS);
    CUDA_MEMCPY3D_PEER q =
        peer3d(CU_MEMORYTYPE_DEVICE, cube2, CU_MEMORYTYPE_DEVICE, cube, W, W, H / 2, 2, ctx);
    assert_int_equal(peer_async(&q, b), CUDA_SUCCESS);
    static unsigned char plane[H / 2][W];
    CUDA_MEMCPY3D_PEER r = peer3d(CU_MEMORYTYPE_HOST, (uintptr_t)plane, CU_MEMORYTYPE_DEVICE, cube2,
                                  W, W, H / 2, 1, ctx);
    r.srcZ = 1;
    assert_int_equal(peer_pt(&r), CUDA_SUCCESS);
    for (int y = 0; y < H / 2; y++)
        for (int x = 0; x < W; x++)
            assert_int_equal(plane[y][x], rows[H / 2 + y][x]);
    /* the per-thread stream's async form: the first plane back into cube2's second */
    r = peer3d(CU_MEMORYTYPE_DEVICE, cube2, CU_MEMORYTYPE_DEVICE, cube, W, W, H / 2, 1, ctx);
    r.dstZ = 1;
    assert_int_equal(peer_async_pt(&r, NULL), CUDA_SUCCESS);
    assert_int_equal(memcmp(by(cube2) + H / 2 * W, by(cube), H / 2 * W), 0);
    /* without a context: refused, nothing copied */
    memset(by(cube2), 0, 2 * H * W);
    q.srcContext = NULL;
    assert_int_equal(peer_async(&q, b), CUDA_ERROR_INVALID_CONTEXT);
    q.srcContext = ctx;
    q.dstContext = NULL;
    assert_int_equal(peer(&q), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(by(cube2)[W + 1], 0);
}

/* A batched 3D copy of w x h x d bytes between pointers (rows of pitch
 * bytes, planes of h rows). */
static CUDA_MEMCPY3D_BATCH_OP batch_op(CUdeviceptr dst, CUdeviceptr src, size_t pitch, size_t w,
                                       size_t h, size_t d)
{
    CUDA_MEMCPY3D_BATCH_OP op = {.extent = {w, h, d},
                                 .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    op.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op.src.op.ptr.ptr = src;
    op.src.op.ptr.rowLength = pitch;
    op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op.dst.op.ptr.ptr = dst;
    op.dst.op.ptr.rowLength = pitch;
    return op;
}

static void test_batched_3d_copies(void **state)
{
    (void)state;
    PFN_cuMemcpy3DBatchAsync_v13000 batch =
        (PFN_cuMemcpy3DBatchAsync_v13000)get("cuMemcpy3DBatchAsync", 13000, LEGACY);
    PFN_cuMemcpy3DBatchAsync_v13000_ptsz batch_pt =
        (PFN_cuMemcpy3DBatchAsync_v13000_ptsz)get("cuMemcpy3DBatchAsync", 13000, PT);
    assert_ptr_equal(batch, f_entry("cuMemcpy3DBatchAsync_v2"));
    assert_ptr_equal(batch_pt, f_entry("cuMemcpy3DBatchAsync_v2_ptsz"));
    CUstream b = new_stream_flags(CU_STREAM_DEFAULT);
    CUdeviceptr a = alloc(N * 4), x = alloc(N * 4), y = alloc(N * 4), c = alloc(N * 4);
    for (int i = 0; i < N; i++) {
        fl(a)[i] = (float)i;
        fl(x)[i] = -1.0f;
        fl(y)[i] = -1.0f;
    }
    /* x = a as 4 rows of N bytes; y[0..N/2) = a[N/2..N) as 4 planes of 2 rows
     * of N/4 bytes (rows of N/4 bytes on both sides: contiguous) */
    CUDA_MEMCPY3D_BATCH_OP ops[2] = {batch_op(x, a, N, N, 4, 1),
                                     batch_op(y, a + N * 2, N / 4, N / 4, 2, 4)};
    assert_int_equal(batch(2, ops, 0, b), CUDA_SUCCESS);
    launch_vadd(b, x, y, c, N);
    for (int i = 0; i < N; i++) {
        assert_true(fl(x)[i] == (float)i);
        assert_true(fl(c)[i] == (float)i + (i < N / 2 ? (float)(i + N / 2) : -1.0f));
    }
    /* rows of their own length: the first 4 floats of every 8 of a, packed
     * into x (a destination row length of 0 is the copy's width) */
    CUDA_MEMCPY3D_BATCH_OP strided = batch_op(x, a, 0, 16, N / 8, 1);
    strided.src.op.ptr.rowLength = 32;
    memset(fl(x), 0, N * 4);
    assert_int_equal(batch(1, &strided, 0, b), CUDA_SUCCESS);
    for (int i = 0; i < N / 2; i++)
        assert_true(fl(x)[i] == (float)(i / 4 * 8 + i % 4));
    assert_true(fl(x)[N / 2] == 0.0f);
    /* refused whole: one copy without a source access order, flags, the
     * legacy stream; nothing copied */
    memset(fl(x), 0, N * 4);
    ops[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    assert_int_equal(batch(2, ops, 0, b), CUDA_ERROR_INVALID_VALUE);
    ops[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
    assert_int_equal(batch(2, ops, 1, b), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(batch(2, ops, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_true(fl(x)[5] == 0.0f);
    /* the per-thread default stream is not the legacy one */
    assert_int_equal(batch_pt(1, ops, 0, NULL), CUDA_SUCCESS);
    assert_true(fl(x)[5] == 5.0f);

    /* captured on b: two copy nodes, run at the graph's launch */
    memset(fl(x), 0, N * 4);
    memset(fl(y), 0, N * 4);
    assert_int_equal(GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture",
                         12000)(b, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    assert_int_equal(batch(2, ops, 0, b), CUDA_SUCCESS);
    CUgraph g = NULL;
    assert_int_equal(GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000)(b, &g),
                     CUDA_SUCCESS);
    assert_true(fl(x)[5] == 0.0f && fl(y)[5] == 0.0f);
    fake_graph_nodes_fn nodes = (fake_graph_nodes_fn)dlsym(drv, "fake_graph_nodes");
    fake_node_info_t nd[4];
    assert_int_equal(nodes(g, nd, 4), 2);
    assert_int_equal(nd[0].kind, FAKE_NODE_MEMCPY3D);
    assert_int_equal(nd[1].kind, FAKE_NODE_MEMCPY3D);
    CUgraphExec exec = graph_run(g, b, NULL);
    assert_true(fl(x)[5] == 5.0f && fl(y)[5] == (float)(N / 2 + 5));
    graph_done(exec, g);
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_copies_per_thread),
        cmocka_unit_test(test_unaligned_and_peer_3d),
        cmocka_unit_test(test_batched_3d_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
