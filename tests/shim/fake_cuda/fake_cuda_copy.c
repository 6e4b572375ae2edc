/*
 * The driver double's asynchronous memsets and copies (cuMemsetD8Async,
 * cuMemsetD32Async, cuMemcpyAsync, cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2,
 * cuMemcpyDtoDAsync_v2, each also _ptsz): "device" memory is host memory,
 * so each runs at once with memset or memmove, or, queued on a stream that
 * captures (fake_capture_graph), becomes a memset or copy node of the
 * capture's graph, run when the graph runs (fake_cuda_graph.c). On the
 * legacy stream while a blocking stream captures it is refused
 * (fake_legacy_work). Logged as (destination, source or value, count,
 * stream).
 */
#include <string.h>

#include "fake_cuda_internal.h"

void fake_copy_run(int kind, uint64_t a0, uint64_t a1, uint64_t a2)
{
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
FAKE_MEMSET(cuMemsetD32Async, unsigned int, 0)
FAKE_MEMSET(cuMemsetD32Async_ptsz, unsigned int, 1)
#undef FAKE_MEMSET

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
