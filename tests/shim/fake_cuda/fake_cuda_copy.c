/*
 * The driver double's memsets and copies: asynchronous ones
 * (cuMemsetD8Async, cuMemsetD16Async, cuMemsetD32Async, cuMemcpyAsync,
 * cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2, cuMemcpyDtoDAsync_v2,
 * cuMemcpy2DAsync_v2, cuMemcpy3DAsync_v2, cuMemcpyPeerAsync,
 * cuMemcpy3DPeerAsync, cuMemsetD2D8Async, cuMemsetD2D16Async,
 * cuMemsetD2D32Async, each also _ptsz) and synchronous ones (cuMemsetD8_v2,
 * cuMemsetD16_v2, cuMemsetD32_v2, cuMemsetD2D8_v2, cuMemsetD2D16_v2,
 * cuMemsetD2D32_v2,
 * cuMemcpy, cuMemcpyHtoD_v2, cuMemcpyDtoH_v2, cuMemcpyDtoD_v2,
 * cuMemcpy2D_v2, cuMemcpy2DUnaligned_v2, cuMemcpy3D_v2, cuMemcpyPeer,
 * cuMemcpy3DPeer, each also _ptds). "Device" memory is host memory, so each
 * runs at once with memset or memmove, or, queued on a stream that captures
 * (fake_capture_graph), becomes a memset or copy node of the capture's graph,
 * run when the graph runs (fake_cuda_graph.c). On the legacy stream while a
 * blocking stream captures it is refused (fake_legacy_work). A synchronous
 * one is work on the legacy stream, or, through its _ptds entry point (what
 * cuGetProcAddress gives with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
 * on the calling thread's per-thread default stream; a synchronous copy also
 * waits for the host, so it is a potentially unsafe call
 * (fake_unsafe_refused); a synchronous memset of device memory does not wait
 * (the driver's "API synchronization behavior") and is not. 2D and 3D copies
 * take host, device and unified memory (not arrays: CUDA_ERROR_NOT_SUPPORTED);
 * an unaligned 2D copy is a 2D copy; a peer copy is a plain copy (no devices
 * here). Logged as (destination, source or value, count, stream); a 2D or 3D
 * copy as (first destination byte, first source byte, width * height *
 * depth, stream), a 2D memset as (destination, value, width * height
 * elements, stream); a synchronous one with stream 0, or
 * CU_STREAM_PER_THREAD through its _ptds entry point. Batched copies:
 * fake_cuda_batch.c.
 */
#include <stdint.h>
#include <string.h>

#include "fake_cuda_internal.h"

/* The address of byte (x, y, z) of one side of a 2D/3D copy, or 0. */
static uintptr_t fake_copy3d_at(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x,
                                size_t y, size_t z, size_t pitch, size_t height)
{
    uintptr_t base = type == CU_MEMORYTYPE_HOST                                      ? U(host)
                     : type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED ? dev
                                                                                     : 0;
    return base ? base + (z * height + y) * pitch + x : 0;
}

static void fake_copy3d_run(const CUDA_MEMCPY3D *c)
{
    for (size_t z = 0; z < c->Depth; z++)
        for (size_t y = 0; y < c->Height; y++) {
            uintptr_t d = fake_copy3d_at(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes,
                                         c->dstY + y, c->dstZ + z, c->dstPitch, c->dstHeight);
            uintptr_t s = fake_copy3d_at(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes,
                                         c->srcY + y, c->srcZ + z, c->srcPitch, c->srcHeight);
            memmove((void *)d, (const void *)s, c->WidthInBytes);
        }
}

void fake_copy_run(int kind, uint64_t a0, uint64_t a1, uint64_t a2)
{
    if (kind == FAKE_NODE_MEMCPY3D) {
        fake_copy3d_run((const CUDA_MEMCPY3D *)(uintptr_t)a0);
        return;
    }
    if (kind == FAKE_NODE_MEMSET2D) {
        const CUDA_MEMSET_NODE_PARAMS *m = (const CUDA_MEMSET_NODE_PARAMS *)(uintptr_t)a0;
        for (size_t y = 0; y < m->height; y++)
            fake_copy_run(FAKE_NODE_MEMSET, m->dst + y * m->pitch, m->width,
                          (uint64_t)m->elementSize << 32 | m->value);
        return;
    }
    if (kind == FAKE_NODE_MEMCPY) {
        memmove((void *)(uintptr_t)a0, (const void *)(uintptr_t)a2, a1);
        return;
    }
    unsigned size = (unsigned)(a2 >> 32);
    uint32_t value = (uint32_t)a2;
    unsigned char *p = (unsigned char *)(uintptr_t)a0;
    for (uint64_t i = 0; i < a1; i++)
        memcpy(p + i * size, &value, size); /* little-endian: the low bytes */
}

/* Runs or captures one memset or copy queued on s. */
static CUresult fake_copy_queue(int kind, uint64_t a0, uint64_t a1, uint64_t a2, CUstream s,
                                int ptsz)
{
    if (!a0 || (kind == FAKE_NODE_MEMCPY && !a2))
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_legacy_work(fake_stream_of(s, ptsz)))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    CUgraph g = fake_capture_graph(s, ptsz);
    if (g)
        return fake_capture_op(g, kind, a0, a1, a2);
    fake_order_work(fake_stream_of(s, ptsz), fake_rec_last());
    fake_copy_run(kind, a0, a1, a2);
    return CUDA_SUCCESS;
}

#define FAKE_MEMSET(name, type, ptsz)                                                              \
    CUresult fk_##name(CUdeviceptr dst, type v, size_t n, CUstream s)                              \
    {                                                                                              \
        REC(dst, (uint64_t)v, n, U(s));                                                            \
        uint64_t a2 = (uint64_t)sizeof(type) << 32 | (uint32_t)v;                                  \
        return fake_copy_queue(FAKE_NODE_MEMSET, dst, n, a2, s, ptsz);                             \
    }
FAKE_MEMSET(cuMemsetD8Async, unsigned char, 0)
FAKE_MEMSET(cuMemsetD8Async_ptsz, unsigned char, 1)
FAKE_MEMSET(cuMemsetD16Async, unsigned short, 0)
FAKE_MEMSET(cuMemsetD16Async_ptsz, unsigned short, 1)
FAKE_MEMSET(cuMemsetD32Async, unsigned int, 0)
FAKE_MEMSET(cuMemsetD32Async_ptsz, unsigned int, 1)
#undef FAKE_MEMSET

/* The stream a synchronous call is logged with: 0, or CU_STREAM_PER_THREAD (_ptds). */
#define FAKE_SYNC_STREAM(ptds) ((ptds) ? U(CU_STREAM_PER_THREAD) : 0)

/* The synchronous memsets: the legacy stream's work, or (ptds) the per-thread default stream's. */
#define FAKE_MEMSET_SYNC(name, type, ptds)                                                         \
    CUresult fk_##name(CUdeviceptr dst, type v, size_t n)                                          \
    {                                                                                              \
        REC(dst, (uint64_t)v, n, FAKE_SYNC_STREAM(ptds));                                          \
        uint64_t a2 = (uint64_t)sizeof(type) << 32 | (uint32_t)v;                                  \
        return fake_copy_queue(FAKE_NODE_MEMSET, dst, n, a2, NULL, ptds);                          \
    }
FAKE_MEMSET_SYNC(cuMemsetD8_v2, unsigned char, 0)
FAKE_MEMSET_SYNC(cuMemsetD8_v2_ptds, unsigned char, 1)
FAKE_MEMSET_SYNC(cuMemsetD16_v2, unsigned short, 0)
FAKE_MEMSET_SYNC(cuMemsetD16_v2_ptds, unsigned short, 1)
FAKE_MEMSET_SYNC(cuMemsetD32_v2, unsigned int, 0)
FAKE_MEMSET_SYNC(cuMemsetD32_v2_ptds, unsigned int, 1)
#undef FAKE_MEMSET_SYNC

/*
 * A 2D memset of height rows of width elements, pitch bytes apart. Refused
 * (CUDA_ERROR_INVALID_VALUE, a code cuda.h lists) for no destination, a
 * destination or pitch not aligned to the element (cuda.h: "must be two
 * byte aligned", "four byte aligned"), or (the double's choice: cuda.h
 * names no rule) rows longer than the pitch; the pitch is "unused if
 * Height is 1". Runs, or is captured as one memset node, as a memset does;
 * a synchronous one (sync) is the legacy stream's work, or through _ptds the
 * per-thread default stream's.
 */
static CUresult fake_memset2d(const char *fn, CUdeviceptr dst, size_t pitch, uint32_t v,
                              unsigned size, size_t width, size_t height, CUstream s, int ptsz,
                              bool sync)
{
    fake_rec(fn, dst, v, (uint64_t)width * height, sync ? FAKE_SYNC_STREAM(ptsz) : U(s));
    if (!dst || dst % size || (height > 1 && (pitch % size || pitch < width * size)))
        return CUDA_ERROR_INVALID_VALUE;
    CUstream on = sync ? NULL : s;
    if (fake_legacy_work(fake_stream_of(on, ptsz)))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    CUDA_MEMSET_NODE_PARAMS m = {.dst = dst,
                                 .pitch = height > 1 ? pitch : width * size,
                                 .value = v,
                                 .elementSize = size,
                                 .width = width,
                                 .height = height};
    CUgraph g = fake_capture_graph(on, ptsz);
    if (g)
        return fake_capture_op(g, FAKE_NODE_MEMSET2D, U(&m), sizeof(m), 0);
    fake_order_work(fake_stream_of(on, ptsz), fake_rec_last());
    fake_copy_run(FAKE_NODE_MEMSET2D, U(&m), sizeof(m), 0);
    return CUDA_SUCCESS;
}

#define FAKE_MEMSET2D(name, type, ptsz)                                                            \
    CUresult fk_##name(CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h, CUstream s)      \
    {                                                                                              \
        return fake_memset2d(__func__ + 3, dst, pitch, v, sizeof(type), w, h, s, ptsz, false);     \
    }
FAKE_MEMSET2D(cuMemsetD2D8Async, unsigned char, 0)
FAKE_MEMSET2D(cuMemsetD2D8Async_ptsz, unsigned char, 1)
FAKE_MEMSET2D(cuMemsetD2D16Async, unsigned short, 0)
FAKE_MEMSET2D(cuMemsetD2D16Async_ptsz, unsigned short, 1)
FAKE_MEMSET2D(cuMemsetD2D32Async, unsigned int, 0)
FAKE_MEMSET2D(cuMemsetD2D32Async_ptsz, unsigned int, 1)
#undef FAKE_MEMSET2D

#define FAKE_MEMSET2D_SYNC(name, type, ptds)                                                       \
    CUresult fk_##name(CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h)                  \
    {                                                                                              \
        return fake_memset2d(__func__ + 3, dst, pitch, v, sizeof(type), w, h, NULL, ptds, true);   \
    }
FAKE_MEMSET2D_SYNC(cuMemsetD2D8_v2, unsigned char, 0)
FAKE_MEMSET2D_SYNC(cuMemsetD2D8_v2_ptds, unsigned char, 1)
FAKE_MEMSET2D_SYNC(cuMemsetD2D16_v2, unsigned short, 0)
FAKE_MEMSET2D_SYNC(cuMemsetD2D16_v2_ptds, unsigned short, 1)
FAKE_MEMSET2D_SYNC(cuMemsetD2D32_v2, unsigned int, 0)
FAKE_MEMSET2D_SYNC(cuMemsetD2D32_v2_ptds, unsigned int, 1)
#undef FAKE_MEMSET2D_SYNC

#define FAKE_MEMCPY(name, dtype, stype, ptsz)                                                      \
    CUresult fk_##name(dtype dst, stype src, size_t bytes, CUstream s)                             \
    {                                                                                              \
        REC(U(dst), U(src), bytes, U(s));                                                          \
        return fake_copy_queue(FAKE_NODE_MEMCPY, U(dst), bytes, U(src), s, ptsz);                  \
    }
FAKE_MEMCPY(cuMemcpyAsync, CUdeviceptr, CUdeviceptr, 0)
FAKE_MEMCPY(cuMemcpyAsync_ptsz, CUdeviceptr, CUdeviceptr, 1)
FAKE_MEMCPY(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void *, 0)
FAKE_MEMCPY(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, const void *, 1)
FAKE_MEMCPY(cuMemcpyDtoHAsync_v2, void *, CUdeviceptr, 0)
FAKE_MEMCPY(cuMemcpyDtoHAsync_v2_ptsz, void *, CUdeviceptr, 1)
FAKE_MEMCPY(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr, 0)
FAKE_MEMCPY(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, CUdeviceptr, 1)
#undef FAKE_MEMCPY

/* The synchronous copies: potentially unsafe, then as the memsets above. */
#define FAKE_MEMCPY_SYNC(name, dtype, stype, ptds)                                                 \
    CUresult fk_##name(dtype dst, stype src, size_t bytes)                                         \
    {                                                                                              \
        REC(U(dst), U(src), bytes, FAKE_SYNC_STREAM(ptds));                                        \
        if (fake_unsafe_refused())                                                                 \
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;                                          \
        return fake_copy_queue(FAKE_NODE_MEMCPY, U(dst), bytes, U(src), NULL, ptds);               \
    }
FAKE_MEMCPY_SYNC(cuMemcpy, CUdeviceptr, CUdeviceptr, 0)
FAKE_MEMCPY_SYNC(cuMemcpy_ptds, CUdeviceptr, CUdeviceptr, 1)
FAKE_MEMCPY_SYNC(cuMemcpyHtoD_v2, CUdeviceptr, const void *, 0)
FAKE_MEMCPY_SYNC(cuMemcpyHtoD_v2_ptds, CUdeviceptr, const void *, 1)
FAKE_MEMCPY_SYNC(cuMemcpyDtoH_v2, void *, CUdeviceptr, 0)
FAKE_MEMCPY_SYNC(cuMemcpyDtoH_v2_ptds, void *, CUdeviceptr, 1)
FAKE_MEMCPY_SYNC(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr, 0)
FAKE_MEMCPY_SYNC(cuMemcpyDtoD_v2_ptds, CUdeviceptr, CUdeviceptr, 1)
#undef FAKE_MEMCPY_SYNC

/* A peer copy: contexts are named, devices are not modelled. */
static CUresult fake_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                          size_t bytes, CUstream s, int ptsz)
{
    if (!dctx || !sctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    return fake_copy_queue(FAKE_NODE_MEMCPY, dst, bytes, src, s, ptsz);
}

#define FAKE_PEER_SYNC(name, ptds)                                                                 \
    CUresult fk_##name(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,           \
                       size_t bytes)                                                               \
    {                                                                                              \
        REC(dst, src, bytes, FAKE_SYNC_STREAM(ptds));                                              \
        if (fake_unsafe_refused())                                                                 \
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;                                          \
        return fake_peer(dst, dctx, src, sctx, bytes, NULL, ptds);                                 \
    }
FAKE_PEER_SYNC(cuMemcpyPeer, 0)
FAKE_PEER_SYNC(cuMemcpyPeer_ptds, 1)
#undef FAKE_PEER_SYNC

#define FAKE_PEER_ASYNC(name, ptsz)                                                                \
    CUresult fk_##name(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,           \
                       size_t bytes, CUstream s)                                                   \
    {                                                                                              \
        REC(dst, src, bytes, U(s));                                                                \
        return fake_peer(dst, dctx, src, sctx, bytes, s, ptsz);                                    \
    }
FAKE_PEER_ASYNC(cuMemcpyPeerAsync, 0)
FAKE_PEER_ASYNC(cuMemcpyPeerAsync_ptsz, 1)
#undef FAKE_PEER_ASYNC

/* The first bytes a 2D/3D copy writes and reads (*d0, *s0), after checking
 * it: CUDA_ERROR_NOT_SUPPORTED for arrays, CUDA_ERROR_INVALID_VALUE for a
 * missing address or rows that overlap their pitch or planes. */
CUresult fake_copy3d_check(const CUDA_MEMCPY3D *c, uint64_t *d0, uint64_t *s0)
{
    *d0 = fake_copy3d_at(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY,
                         c->dstZ, c->dstPitch, c->dstHeight);
    *s0 = fake_copy3d_at(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY,
                         c->srcZ, c->srcPitch, c->srcHeight);
    if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
        return CUDA_ERROR_NOT_SUPPORTED;
    bool rows = c->Height > 1 || c->Depth > 1;
    bool planes = c->Depth > 1;
    if (!*d0 || !*s0 ||
        (rows && (c->dstPitch < c->dstXInBytes + c->WidthInBytes ||
                  c->srcPitch < c->srcXInBytes + c->WidthInBytes)) ||
        (planes && (c->dstHeight < c->dstY + c->Height || c->srcHeight < c->srcY + c->Height)))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Runs or captures a checked 2D/3D copy queued on s, as fake_copy_queue
 * does; logged at log_index (fake_rec_last). */
CUresult fake_copy3d_queue(const CUDA_MEMCPY3D *c, CUstream s, int ptsz, size_t log_index)
{
    if (fake_legacy_work(fake_stream_of(s, ptsz)))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    CUgraph g = fake_capture_graph(s, ptsz);
    if (g)
        return fake_capture_op(g, FAKE_NODE_MEMCPY3D, U(c), sizeof(*c), 0);
    fake_order_work(fake_stream_of(s, ptsz), log_index);
    fake_copy3d_run(c);
    return CUDA_SUCCESS;
}

/* One 2D/3D copy entry point fn: checks, logs (a synchronous one with
 * FAKE_SYNC_STREAM), then runs or captures; sync: a synchronous copy (a
 * potentially unsafe call, on the legacy stream or, ptsz, the per-thread
 * default stream). */
static CUresult fake_copy3d(const char *fn, const CUDA_MEMCPY3D *c, CUstream s, int ptsz, bool sync)
{
    uint64_t d0, s0;
    CUresult r = fake_copy3d_check(c, &d0, &s0);
    fake_rec(fn, d0, s0, (uint64_t)c->WidthInBytes * c->Height * c->Depth,
             sync ? FAKE_SYNC_STREAM(ptsz) : U(s));
    if (r != CUDA_SUCCESS)
        return r;
    if (sync && fake_unsafe_refused())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return fake_copy3d_queue(c, s, ptsz, fake_rec_last());
}

/* A 2D copy is a 3D copy of depth 1. */
static CUDA_MEMCPY3D fake_2d_as_3d(const CUDA_MEMCPY2D *c)
{
    return (CUDA_MEMCPY3D){.srcXInBytes = c->srcXInBytes,
                           .srcY = c->srcY,
                           .srcMemoryType = c->srcMemoryType,
                           .srcHost = c->srcHost,
                           .srcDevice = c->srcDevice,
                           .srcArray = c->srcArray,
                           .srcPitch = c->srcPitch,
                           .srcHeight = c->srcY + c->Height,
                           .dstXInBytes = c->dstXInBytes,
                           .dstY = c->dstY,
                           .dstMemoryType = c->dstMemoryType,
                           .dstHost = c->dstHost,
                           .dstDevice = c->dstDevice,
                           .dstArray = c->dstArray,
                           .dstPitch = c->dstPitch,
                           .dstHeight = c->dstY + c->Height,
                           .WidthInBytes = c->WidthInBytes,
                           .Height = c->Height,
                           .Depth = 1};
}

#define FAKE_COPY2D(s, ptsz, sync)                                                                 \
    {                                                                                              \
        if (!c)                                                                                    \
            return CUDA_ERROR_INVALID_VALUE;                                                       \
        CUDA_MEMCPY3D c3 = fake_2d_as_3d(c);                                                       \
        return fake_copy3d(__func__ + 3, &c3, s, ptsz, sync);                                      \
    }
#define FAKE_COPY3D(s, ptsz, sync)                                                                 \
    {                                                                                              \
        if (!c)                                                                                    \
            return CUDA_ERROR_INVALID_VALUE;                                                       \
        CUDA_MEMCPY3D c3 = *c;                                                                     \
        return fake_copy3d(__func__ + 3, &c3, s, ptsz, sync);                                      \
    }
/* clang-format off */
CUresult fk_cuMemcpy2D_v2(const CUDA_MEMCPY2D *c) FAKE_COPY2D(NULL, 0, true)
CUresult fk_cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *c) FAKE_COPY2D(NULL, 1, true)
CUresult fk_cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *c) FAKE_COPY2D(NULL, 0, true)
CUresult fk_cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *c) FAKE_COPY2D(NULL, 1, true)
CUresult fk_cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s) FAKE_COPY2D(s, 0, false)
CUresult fk_cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *c, CUstream s) FAKE_COPY2D(s, 1, false)
CUresult fk_cuMemcpy3D_v2(const CUDA_MEMCPY3D *c) FAKE_COPY3D(NULL, 0, true)
CUresult fk_cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *c) FAKE_COPY3D(NULL, 1, true)
CUresult fk_cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *c, CUstream s) FAKE_COPY3D(s, 0, false)
CUresult fk_cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *c, CUstream s) FAKE_COPY3D(s, 1, false)
/* clang-format on */
#undef FAKE_COPY2D
#undef FAKE_COPY3D

    /* A 3D peer copy: a 3D copy whose sides name their contexts (not an array's). */
    static CUresult
    fake_copy3d_peer(const char *fn, const CUDA_MEMCPY3D_PEER *p, CUstream s, int ptsz, bool sync)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((p->srcMemoryType != CU_MEMORYTYPE_ARRAY && !p->srcContext) ||
        (p->dstMemoryType != CU_MEMORYTYPE_ARRAY && !p->dstContext))
        return CUDA_ERROR_INVALID_CONTEXT;
    CUDA_MEMCPY3D c = {.srcXInBytes = p->srcXInBytes,
                       .srcY = p->srcY,
                       .srcZ = p->srcZ,
                       .srcMemoryType = p->srcMemoryType,
                       .srcHost = p->srcHost,
                       .srcDevice = p->srcDevice,
                       .srcArray = p->srcArray,
                       .srcPitch = p->srcPitch,
                       .srcHeight = p->srcHeight,
                       .dstXInBytes = p->dstXInBytes,
                       .dstY = p->dstY,
                       .dstZ = p->dstZ,
                       .dstMemoryType = p->dstMemoryType,
                       .dstHost = p->dstHost,
                       .dstDevice = p->dstDevice,
                       .dstArray = p->dstArray,
                       .dstPitch = p->dstPitch,
                       .dstHeight = p->dstHeight,
                       .WidthInBytes = p->WidthInBytes,
                       .Height = p->Height,
                       .Depth = p->Depth};
    return fake_copy3d(fn, &c, s, ptsz, sync);
}

CUresult fk_cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p)
{
    return fake_copy3d_peer(__func__ + 3, p, NULL, 0, true);
}

CUresult fk_cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p)
{
    return fake_copy3d_peer(__func__ + 3, p, NULL, 1, true);
}

CUresult fk_cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
    return fake_copy3d_peer(__func__ + 3, p, s, 0, false);
}

CUresult fk_cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
    return fake_copy3d_peer(__func__ + 3, p, s, 1, false);
}
