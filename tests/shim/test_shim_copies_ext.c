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
 * the graph that run when it is launched. CUDA 12.8's form (with failIdx)
 * reports which copy was wrong, or SIZE_MAX for the batch's own error.
 *
 * test_batched_copies: cuMemcpyBatchAsync, CUDA 12.8's form (with failIdx)
 * and 13's (_v2), each also _ptsz: every copy with the attributes its index
 * range gives, read right by a kernel after them; refused whole for one
 * copy's attributes, a wrong layout of them, or the legacy stream;
 * captured, one copy node per copy.
 *
 * test_2d_memsets: cuMemsetD2D8/16/32, synchronous (_v2, _ptds) and
 * asynchronous (also _ptsz), set width elements of each row and nothing
 * between rows; refused for a destination or pitch not aligned to the
 * element or rows longer than the pitch; captured, one memset node.
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

static void begin_capture(CUstream b)
{
    assert_int_equal(GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture",
                         12000)(b, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
}

/* Ends the capture on b: its graph holds exactly n nodes, all of kind. */
static CUgraph end_capture(CUstream b, size_t n, int kind)
{
    CUgraph g = NULL;
    assert_int_equal(GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000)(b, &g),
                     CUDA_SUCCESS);
    fake_graph_nodes_fn nodes = (fake_graph_nodes_fn)dlsym(drv, "fake_graph_nodes");
    fake_node_info_t nd[4];
    assert_int_equal(nodes(g, nd, 4), n);
    for (size_t i = 0; i < n && i < 4; i++)
        assert_int_equal(nd[i].kind, kind);
    return g;
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
    begin_capture(b);
    assert_int_equal(batch(2, ops, 0, b), CUDA_SUCCESS);
    CUgraph g = end_capture(b, 2, FAKE_NODE_MEMCPY3D);
    assert_true(fl(x)[5] == 0.0f && fl(y)[5] == 0.0f);
    CUgraphExec exec = graph_run(g, b, NULL);
    assert_true(fl(x)[5] == 5.0f && fl(y)[5] == (float)(N / 2 + 5));
    graph_done(exec, g);
}

/* CUDA 12.8's batched 3D copies report the copy that was wrong (failIdx),
 * SIZE_MAX for the batch's own error; a batch taken leaves it. */
static void test_batched_3d_copies_fail_index(void **state)
{
    (void)state;
    PFN_cuMemcpy3DBatchAsync_v12080 batch =
        (PFN_cuMemcpy3DBatchAsync_v12080)get("cuMemcpy3DBatchAsync", 12080, LEGACY);
    PFN_cuMemcpy3DBatchAsync_v12080_ptsz batch_pt =
        (PFN_cuMemcpy3DBatchAsync_v12080_ptsz)get("cuMemcpy3DBatchAsync", 12080, PT);
    assert_non_null(batch);
    assert_ptr_equal(batch, f_entry("cuMemcpy3DBatchAsync"));
    assert_ptr_equal(batch_pt, f_entry("cuMemcpy3DBatchAsync_ptsz"));
    CUstream b = new_stream_flags(CU_STREAM_DEFAULT);
    CUdeviceptr a = alloc(N), x = alloc(N), y = alloc(N);
    for (int i = 0; i < N; i++)
        by(a)[i] = (unsigned char)i;
    memset(by(x), 0, N);
    memset(by(y), 0, N);
    CUDA_MEMCPY3D_BATCH_OP ops[3] = {batch_op(x, a, N / 4, N / 4, 4, 1),
                                     batch_op(y, a, N / 4, N / 4, 2, 1),
                                     batch_op(y + N / 2, a, N / 4, N / 4, 2, 1)};
    size_t fail = 77;
    assert_int_equal(batch(3, ops, &fail, 0, b), CUDA_SUCCESS);
    assert_int_equal(fail, 77);
    assert_int_equal(by(x)[N - 1], N - 1);
    assert_int_equal(by(y)[N - 1], N / 2 - 1);
    memset(by(x), 0, N);
    ops[1].extent.width = 0; /* copy 1 wrong, and copy 2 too: the first is named */
    ops[2].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    assert_int_equal(batch(3, ops, &fail, 0, b), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(fail, 1);
    ops[1].extent.width = N / 4;
    assert_int_equal(batch_pt(3, ops, &fail, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(fail, 2);
    assert_int_equal(by(x)[5], 0); /* nothing copied */
    ops[2].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    assert_int_equal(batch(3, ops, &fail, 1, b), CUDA_ERROR_INVALID_VALUE); /* flags */
    assert_int_equal(fail, SIZE_MAX);
    fail = 77;
    assert_int_equal(batch(3, ops, &fail, 0, NULL), CUDA_ERROR_INVALID_VALUE); /* legacy */
    assert_int_equal(fail, SIZE_MAX);
    assert_int_equal(batch(3, ops, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(by(x)[5], 0);
    assert_int_equal(batch_pt(1, ops, NULL, 0, NULL), CUDA_SUCCESS);
    assert_int_equal(by(x)[5], 5);
}

typedef CUresult (*copy_batch_fn)(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                  CUmemcpyAttributes *attrs, size_t *attr_idx, size_t nattrs,
                                  size_t *fail, CUstream s);

/* One batch of 1D copies through the form of version v (12080 with fail,
 * 13000 without: fail is then left as it was). */
static CUresult copy_batch(void *fn, int v, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                           size_t count, CUmemcpyAttributes *attrs, size_t *attr_idx, size_t nattrs,
                           size_t *fail, CUstream s)
{
    if (v == 12080)
        return ((copy_batch_fn)fn)(dsts, srcs, sizes, count, attrs, attr_idx, nattrs, fail, s);
    return ((PFN_cuMemcpyBatchAsync_v13000)fn)(dsts, srcs, sizes, count, attrs, attr_idx, nattrs,
                                               s);
}

static void test_batched_copies(void **state)
{
    (void)state;
    static const struct {
        int version, pt;
        const char *sym;
    } forms[] = {{12080, 0, "cuMemcpyBatchAsync"},
                 {12080, 1, "cuMemcpyBatchAsync_ptsz"},
                 {13000, 0, "cuMemcpyBatchAsync_v2"},
                 {13000, 1, "cuMemcpyBatchAsync_v2_ptsz"}};
    for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
        int v = forms[f].version;
        void *fn = get("cuMemcpyBatchAsync", v, forms[f].pt ? PT : LEGACY);
        assert_non_null(fn);
        assert_ptr_equal(fn, f_entry(forms[f].sym));
        CUstream b = new_stream_flags(CU_STREAM_DEFAULT), on = forms[f].pt ? NULL : b;
        CUdeviceptr a = alloc(N * 4), x = alloc(N * 4), y = alloc(N * 4), c = alloc(N * 4);
        float host[N];
        for (int i = 0; i < N; i++) {
            fl(a)[i] = (float)i;
            host[i] = (float)(2 * i);
            fl(x)[i] = -1.0f;
            fl(y)[i] = -1.0f;
        }
        /* x = a, y[0..N/2) = host[N/2..N) (a stack source: copied during the call) */
        CUdeviceptr dsts[] = {x, y}, srcs[] = {a, (CUdeviceptr)(uintptr_t)(host + N / 2)};
        size_t sizes[] = {N * 4, N * 2};
        CUmemcpyAttributes attrs[2] = {
            {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM},
            {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL,
             .flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE}};
        size_t idx[] = {0, 1}, fail = 77;
        size_t from = f_count();
        assert_int_equal(copy_batch(fn, v, dsts, srcs, sizes, 2, attrs, idx, 2, &fail, on),
                         CUDA_SUCCESS);
        assert_int_equal(fail, 77);
        for (size_t k = 0; k < 2; k++) { /* each copy logged as it was asked */
            long i = find_call(forms[f].sym, from);
            assert_true(i >= 0);
            assert_int_equal(f_get((size_t)i)->a[0], dsts[k]);
            assert_int_equal(f_get((size_t)i)->a[1], srcs[k]);
            assert_int_equal(f_get((size_t)i)->a[2], sizes[k]);
            from = (size_t)i + 1;
        }
        launch_vadd(b, x, y, c, N);
        for (int i = 0; i < N; i++)
            assert_true(fl(c)[i] == (float)i + (i < N / 2 ? (float)(2 * (i + N / 2)) : -1.0f));

        /* refused whole, nothing copied */
        memset(fl(x), 0, N * 4);
        attrs[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
        assert_int_equal(copy_batch(fn, v, dsts, srcs, sizes, 2, attrs, idx, 2, &fail, on),
                         CUDA_ERROR_INVALID_VALUE);
        assert_int_equal(fail, v == 12080 ? 1 : 77);
        attrs[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
        attrs[0].flags = 2; /* not a CUmemcpyFlags */
        assert_int_equal(copy_batch(fn, v, dsts, srcs, sizes, 2, attrs, idx, 2, &fail, on),
                         CUDA_ERROR_INVALID_VALUE);
        assert_int_equal(fail, v == 12080 ? 0 : 77);
        attrs[0].flags = 0;
        size_t first_not_0[] = {1, 1}, past_end[] = {0, 2}, one[] = {0};
        assert_int_equal(copy_batch(fn, v, dsts, srcs, sizes, 2, attrs, first_not_0, 2, &fail, on),
                         CUDA_ERROR_INVALID_VALUE);
        assert_int_equal(fail, v == 12080 ? SIZE_MAX : 77);
        fail = 77;
        assert_int_equal(copy_batch(fn, v, dsts, srcs, sizes, 2, attrs, past_end, 2, &fail, on),
                         CUDA_ERROR_INVALID_VALUE);
        assert_int_equal(copy_batch(fn, v, dsts, srcs, sizes, 1, attrs, idx, 2, &fail, on),
                         CUDA_ERROR_INVALID_VALUE); /* more attributes than copies */
        assert_int_equal(
            copy_batch(fn, v, dsts, srcs, sizes, 2, attrs, one, 1, &fail, CU_STREAM_LEGACY),
            CUDA_ERROR_INVALID_VALUE);
        if (!forms[f].pt) /* NULL: the legacy stream through the plain entry point */
            assert_int_equal(copy_batch(fn, v, dsts, srcs, sizes, 2, attrs, one, 1, &fail, NULL),
                             CUDA_ERROR_INVALID_VALUE);
        assert_int_equal(fail, v == 12080 ? SIZE_MAX : 77);
        assert_true(fl(x)[5] == 0.0f);

        /* captured on b: a copy node per copy, run at the graph's launch (the
         * second's source must outlive the graph: a, not the stack) */
        srcs[1] = a;
        memset(fl(x), 0, N * 4);
        memset(fl(y), 0, N * 4);
        begin_capture(b);
        assert_int_equal(copy_batch(fn, v, dsts, srcs, sizes, 2, attrs, one, 1, NULL, b),
                         CUDA_SUCCESS);
        CUgraph g = end_capture(b, 2, FAKE_NODE_MEMCPY);
        assert_true(fl(x)[5] == 0.0f && fl(y)[5] == 0.0f);
        CUgraphExec exec = graph_run(g, b, NULL);
        assert_true(fl(x)[5] == 5.0f && fl(y)[5] == 5.0f);
        graph_done(exec, g);
    }
}

typedef CUresult (*memset2d_fn)(CUdeviceptr dst, size_t pitch, unsigned v, size_t w, size_t h);
typedef CUresult (*memset2d_async_fn)(CUdeviceptr dst, size_t pitch, unsigned v, size_t w, size_t h,
                                      CUstream s);

/* A 2D memset of element size sz (1, 2, 4): the synchronous form (s unused)
 * or the asynchronous one. */
static CUresult memset2d(void *fn, bool async, unsigned sz, CUdeviceptr dst, size_t pitch,
                         unsigned v, size_t w, size_t h, CUstream s)
{
    /* the driver's types differ in the value's width only: pass it as the callee reads it */
    if (sz == 1) {
        if (async)
            return ((PFN_cuMemsetD2D8Async_v3020)fn)(dst, pitch, (unsigned char)v, w, h, s);
        return ((PFN_cuMemsetD2D8_v3020)fn)(dst, pitch, (unsigned char)v, w, h);
    }
    if (sz == 2) {
        if (async)
            return ((PFN_cuMemsetD2D16Async_v3020)fn)(dst, pitch, (unsigned short)v, w, h, s);
        return ((PFN_cuMemsetD2D16_v3020)fn)(dst, pitch, (unsigned short)v, w, h);
    }
    if (async)
        return ((memset2d_async_fn)fn)(dst, pitch, v, w, h, s);
    return ((memset2d_fn)fn)(dst, pitch, v, w, h);
}

/* Whether rows [0, h) of pitch bytes at p hold w elements of sz bytes set
 * to v (low bytes) and the rest of each row 0. */
static bool rows_set(CUdeviceptr p, size_t pitch, unsigned sz, size_t w, size_t h, unsigned v)
{
    for (size_t y = 0; y < h; y++)
        for (size_t i = 0; i < pitch; i++) {
            unsigned want = i < w * sz ? (v >> (8 * (i % sz))) & 0xff : 0;
            if (by(p)[y * pitch + i] != want)
                return false;
        }
    return true;
}

static void test_2d_memsets(void **state)
{
    (void)state;
    static const struct {
        const char *base, *sym;
        unsigned sz;
    } kinds[] = {{"cuMemsetD2D8", "cuMemsetD2D8_v2", 1},
                 {"cuMemsetD2D16", "cuMemsetD2D16_v2", 2},
                 {"cuMemsetD2D32", "cuMemsetD2D32_v2", 4}};
    const size_t pitch = 32, w = 4, h = 3;
    CUdeviceptr p = alloc(pitch * h);
    CUstream b = new_stream_flags(CU_STREAM_DEFAULT);
    for (size_t k = 0; k < 3; k++) {
        unsigned sz = kinds[k].sz, v = 0x5a6b7c8d;
        char async_base[32], async_sym[40];
        snprintf(async_base, sizeof(async_base), "%sAsync", kinds[k].base);
        for (int pt = 0; pt < 2; pt++) {
            /* synchronous: on the legacy stream, or through _ptds the per-thread one */
            void *fn = sync_entry(kinds[k].base, kinds[k].sym, pt);
            memset(by(p), 0, pitch * h);
            size_t from = f_count();
            assert_int_equal(memset2d(fn, false, sz, p, pitch, v, w, h, NULL), CUDA_SUCCESS);
            assert_true(rows_set(p, pitch, sz, w, h, v));
            long i = (long)f_count() - 1;
            assert_true(i >= (long)from);
            assert_int_equal(f_get((size_t)i)->a[2], w * h);
            assert_int_equal(f_get((size_t)i)->a[3],
                             pt ? (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD : 0);
            /* asynchronous */
            snprintf(async_sym, sizeof(async_sym), "%s%s", async_base, pt ? "_ptsz" : "");
            void *afn = get(async_base, 12000, pt ? PT : LEGACY);
            assert_non_null(afn);
            assert_ptr_equal(afn, f_entry(async_sym));
            memset(by(p), 0, pitch * h);
            assert_int_equal(memset2d(afn, true, sz, p, pitch, v, w, h, pt ? NULL : b),
                             CUDA_SUCCESS);
            assert_true(rows_set(p, pitch, sz, w, h, v));
            /* refused, nothing set: rows longer than the pitch; an unaligned
             * destination or pitch (cuda.h: aligned to the element) */
            memset(by(p), 0, pitch * h);
            assert_int_equal(memset2d(fn, false, sz, p, w * sz - 1, v, w, h, NULL),
                             CUDA_ERROR_INVALID_VALUE);
            if (sz > 1) {
                assert_int_equal(memset2d(afn, true, sz, p + 1, pitch, v, w, h, b),
                                 CUDA_ERROR_INVALID_VALUE);
                assert_int_equal(memset2d(fn, false, sz, p, pitch + 1, v, w, h, NULL),
                                 CUDA_ERROR_INVALID_VALUE);
            }
            assert_true(rows_set(p, pitch, sz, 0, h, 0));
            /* one row: the pitch is unused */
            assert_int_equal(memset2d(fn, false, sz, p, 0, v, w, 1, NULL), CUDA_SUCCESS);
            assert_true(rows_set(p, pitch, sz, w, 1, v));
        }
        /* captured on b: one memset node, run at the graph's launch */
        void *afn = get(async_base, 12000, LEGACY);
        memset(by(p), 0, pitch * h);
        begin_capture(b);
        assert_int_equal(memset2d(afn, true, sz, p, pitch, v, w, h, b), CUDA_SUCCESS);
        CUgraph g = end_capture(b, 1, FAKE_NODE_MEMSET2D);
        assert_true(rows_set(p, pitch, sz, 0, h, 0));
        CUgraphExec exec = graph_run(g, b, NULL);
        assert_true(rows_set(p, pitch, sz, w, h, v));
        graph_done(exec, g);
    }
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_copies_per_thread),
        cmocka_unit_test(test_unaligned_and_peer_3d),
        cmocka_unit_test(test_batched_3d_copies),
        cmocka_unit_test(test_batched_3d_copies_fail_index),
        cmocka_unit_test(test_batched_copies),
        cmocka_unit_test(test_2d_memsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
