/* Internals of the driver test double shared by its files: the symbol list, the log, kernels
 * and captures. */
#ifndef FAKE_CUDA_INTERNAL_H
#define FAKE_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "fake_cuda.h"

#define FAKE_API __attribute__((visibility("default")))

typedef CUresult (*fake_pfn_cuMemAlloc_v2000)(unsigned int *dptr, unsigned int bytesize);
/* old ABIs cudaTypedefs.h keeps to the driver's own build */
typedef CUresult (*fake_pfn_cuCtxDestroy_v2000)(CUcontext ctx);
typedef CUresult (*fake_pfn_cuStreamDestroy_v2000)(CUstream s);
typedef CUresult (*fake_pfn_cuDevicePrimaryCtx_v7000)(CUdevice dev);
typedef CUresult (*fake_pfn_cuStreamBeginCapture_v10000)(CUstream s); /* mode GLOBAL */
/* 2.0's arrays, of 32-bit sizes (CUDA_ARRAY_DESCRIPTOR_v1): only there to be resolved */
typedef CUresult (*fake_pfn_cuArrayCreate_v2000)(CUarray *a, const void *desc);

/* X(sym, base, version, PFN, per_thread): what the double implements. */
#define FAKE_LIST(X)                                                                               \
    X(cuInit, cuInit, 2000, PFN_cuInit_v2000, 0)                                                   \
    X(cuDriverGetVersion, cuDriverGetVersion, 2020, PFN_cuDriverGetVersion_v2020, 0)               \
    X(cuGetProcAddress, cuGetProcAddress, 11030, PFN_cuGetProcAddress_v11030, 0)                   \
    X(cuGetProcAddress_v2, cuGetProcAddress, 12000, PFN_cuGetProcAddress_v12000, 0)                \
    X(cuDeviceGet, cuDeviceGet, 2000, PFN_cuDeviceGet_v2000, 0)                                    \
    X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, PFN_cuCtxGetCurrent_v4000, 0)                        \
    X(cuCtxGetDevice, cuCtxGetDevice, 2000, PFN_cuCtxGetDevice_v2000, 0)                           \
    X(cuCtxCreate_v2, cuCtxCreate, 3020, PFN_cuCtxCreate_v3020, 0)                                 \
    X(cuCtxDestroy, cuCtxDestroy, 2000, fake_pfn_cuCtxDestroy_v2000, 0)                            \
    X(cuCtxDestroy_v2, cuCtxDestroy, 4000, PFN_cuCtxDestroy_v4000, 0)                              \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000,                                    \
      PFN_cuDevicePrimaryCtxRetain_v7000, 0)                                                       \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000,                                  \
      fake_pfn_cuDevicePrimaryCtx_v7000, 0)                                                        \
    X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000, fake_pfn_cuDevicePrimaryCtx_v7000,   \
      0)                                                                                           \
    X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000,                              \
      PFN_cuDevicePrimaryCtxRelease_v11000, 0)                                                     \
    X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000,                                  \
      PFN_cuDevicePrimaryCtxReset_v11000, 0)                                                       \
    X(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, 7000,                                \
      PFN_cuDevicePrimaryCtxGetState_v7000, 0)                                                     \
    X(cuDeviceTotalMem_v2, cuDeviceTotalMem, 3020, PFN_cuDeviceTotalMem_v3020, 0)                  \
    X(cuMemGetInfo_v2, cuMemGetInfo, 3020, PFN_cuMemGetInfo_v3020, 0)                              \
    X(cuMemAlloc, cuMemAlloc, 2000, fake_pfn_cuMemAlloc_v2000, 0)                                  \
    X(cuMemAlloc_v2, cuMemAlloc, 3020, PFN_cuMemAlloc_v3020, 0)                                    \
    X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, PFN_cuMemAllocPitch_v3020, 0)                     \
    /* a newer ABI of a hooked function than libgmux.so lists (same signature here) */             \
    X(cuMemAllocPitch_v9, cuMemAllocPitch, 12090, PFN_cuMemAllocPitch_v3020, 0)                    \
    X(cuMemAllocManaged, cuMemAllocManaged, 6000, PFN_cuMemAllocManaged_v6000, 0)                  \
    X(cuArrayCreate, cuArrayCreate, 2000, fake_pfn_cuArrayCreate_v2000, 0)                         \
    X(cuArrayCreate_v2, cuArrayCreate, 3020, PFN_cuArrayCreate_v3020, 0)                           \
    X(cuArray3DCreate, cuArray3DCreate, 2000, fake_pfn_cuArrayCreate_v2000, 0)                     \
    X(cuArray3DCreate_v2, cuArray3DCreate, 3020, PFN_cuArray3DCreate_v3020, 0)                     \
    X(cuArrayDestroy, cuArrayDestroy, 2000, PFN_cuArrayDestroy_v2000, 0)                           \
    X(cuMipmappedArrayCreate, cuMipmappedArrayCreate, 5000, PFN_cuMipmappedArrayCreate_v5000, 0)   \
    X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, 5000, PFN_cuMipmappedArrayDestroy_v5000,   \
      0)                                                                                           \
    X(cuMemFree_v2, cuMemFree, 3020, PFN_cuMemFree_v3020, 0)                                       \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, PFN_cuIpcGetMemHandle_v4010, 0)                  \
    X(cuMemAllocAsync, cuMemAllocAsync, 11020, PFN_cuMemAllocAsync_v11020, 0)                      \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, PFN_cuMemAllocAsync_v11020_ptsz, 1)            \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, PFN_cuMemAllocFromPoolAsync_v11020, \
      0)                                                                                           \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020,                                \
      PFN_cuMemAllocFromPoolAsync_v11020_ptsz, 1)                                                  \
    X(cuMemFreeAsync, cuMemFreeAsync, 11020, PFN_cuMemFreeAsync_v11020, 0)                         \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, PFN_cuMemFreeAsync_v11020_ptsz, 1)               \
    X(cuMemAddressReserve, cuMemAddressReserve, 10020, PFN_cuMemAddressReserve_v10020, 0)          \
    X(cuMemAddressFree, cuMemAddressFree, 10020, PFN_cuMemAddressFree_v10020, 0)                   \
    X(cuMemCreate, cuMemCreate, 10020, PFN_cuMemCreate_v10020, 0)                                  \
    X(cuMemRelease, cuMemRelease, 10020, PFN_cuMemRelease_v10020, 0)                               \
    X(cuMemMap, cuMemMap, 10020, PFN_cuMemMap_v10020, 0)                                           \
    X(cuMemUnmap, cuMemUnmap, 10020, PFN_cuMemUnmap_v10020, 0)                                     \
    X(cuMemMapArrayAsync, cuMemMapArrayAsync, 11010, PFN_cuMemMapArrayAsync_v11010, 0)             \
    X(cuMemMapArrayAsync_ptsz, cuMemMapArrayAsync, 11010, PFN_cuMemMapArrayAsync_v11010_ptsz, 1)   \
    X(cuMemPrefetchAsync, cuMemPrefetchAsync, 8000, PFN_cuMemPrefetchAsync_v8000, 0)               \
    X(cuMemPrefetchAsync_ptsz, cuMemPrefetchAsync, 8000, PFN_cuMemPrefetchAsync_v8000_ptsz, 1)     \
    X(cuMemPrefetchAsync_v2, cuMemPrefetchAsync, 12020, PFN_cuMemPrefetchAsync_v12020, 0)          \
    X(cuMemPrefetchAsync_v2_ptsz, cuMemPrefetchAsync, 12020, PFN_cuMemPrefetchAsync_v12020_ptsz,   \
      1)                                                                                           \
    X(cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync, 13000, PFN_cuMemPrefetchBatchAsync_v13000, \
      0)                                                                                           \
    X(cuMemPrefetchBatchAsync_ptsz, cuMemPrefetchBatchAsync, 13000,                                \
      PFN_cuMemPrefetchBatchAsync_v13000_ptsz, 1)                                                  \
    X(cuMemDiscardBatchAsync, cuMemDiscardBatchAsync, 13000, PFN_cuMemDiscardBatchAsync_v13000, 0) \
    X(cuMemDiscardBatchAsync_ptsz, cuMemDiscardBatchAsync, 13000,                                  \
      PFN_cuMemDiscardBatchAsync_v13000_ptsz, 1)                                                   \
    X(cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync, 13000,                 \
      PFN_cuMemDiscardAndPrefetchBatchAsync_v13000, 0)                                             \
    X(cuMemDiscardAndPrefetchBatchAsync_ptsz, cuMemDiscardAndPrefetchBatchAsync, 13000,            \
      PFN_cuMemDiscardAndPrefetchBatchAsync_v13000_ptsz, 1)                                        \
    X(cuMemcpyAsync, cuMemcpyAsync, 4000, PFN_cuMemcpyAsync_v4000, 0)                              \
    X(cuMemcpyAsync_ptsz, cuMemcpyAsync, 7000, PFN_cuMemcpyAsync_v7000_ptsz, 1)                    \
    X(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, 3020, PFN_cuMemcpyHtoDAsync_v3020, 0)               \
    X(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync, 7000, PFN_cuMemcpyHtoDAsync_v7000_ptsz, 1)     \
    X(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 3020, PFN_cuMemcpyDtoHAsync_v3020, 0)               \
    X(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, 7000, PFN_cuMemcpyDtoHAsync_v7000_ptsz, 1)     \
    X(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, 3020, PFN_cuMemcpyDtoDAsync_v3020, 0)               \
    X(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync, 7000, PFN_cuMemcpyDtoDAsync_v7000_ptsz, 1)     \
    X(cuMemsetD8Async, cuMemsetD8Async, 3020, PFN_cuMemsetD8Async_v3020, 0)                        \
    X(cuMemsetD8Async_ptsz, cuMemsetD8Async, 7000, PFN_cuMemsetD8Async_v7000_ptsz, 1)              \
    X(cuMemsetD32Async, cuMemsetD32Async, 3020, PFN_cuMemsetD32Async_v3020, 0)                     \
    X(cuMemsetD32Async_ptsz, cuMemsetD32Async, 7000, PFN_cuMemsetD32Async_v7000_ptsz, 1)           \
    X(cuMemsetD16Async, cuMemsetD16Async, 3020, PFN_cuMemsetD16Async_v3020, 0)                     \
    X(cuMemsetD16Async_ptsz, cuMemsetD16Async, 7000, PFN_cuMemsetD16Async_v7000_ptsz, 1)           \
    X(cuMemsetD8_v2, cuMemsetD8, 3020, PFN_cuMemsetD8_v3020, 0)                                    \
    X(cuMemsetD8_v2_ptds, cuMemsetD8, 7000, PFN_cuMemsetD8_v7000_ptds, 1)                          \
    X(cuMemsetD16_v2, cuMemsetD16, 3020, PFN_cuMemsetD16_v3020, 0)                                 \
    X(cuMemsetD16_v2_ptds, cuMemsetD16, 7000, PFN_cuMemsetD16_v7000_ptds, 1)                       \
    X(cuMemsetD32_v2, cuMemsetD32, 3020, PFN_cuMemsetD32_v3020, 0)                                 \
    X(cuMemsetD32_v2_ptds, cuMemsetD32, 7000, PFN_cuMemsetD32_v7000_ptds, 1)                       \
    X(cuMemcpy, cuMemcpy, 4000, PFN_cuMemcpy_v4000, 0)                                             \
    X(cuMemcpy_ptds, cuMemcpy, 7000, PFN_cuMemcpy_v7000_ptds, 1)                                   \
    X(cuMemcpyHtoD_v2, cuMemcpyHtoD, 3020, PFN_cuMemcpyHtoD_v3020, 0)                              \
    X(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, 7000, PFN_cuMemcpyHtoD_v7000_ptds, 1)                    \
    X(cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020, PFN_cuMemcpyDtoH_v3020, 0)                              \
    X(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, 7000, PFN_cuMemcpyDtoH_v7000_ptds, 1)                    \
    X(cuMemcpyDtoD_v2, cuMemcpyDtoD, 3020, PFN_cuMemcpyDtoD_v3020, 0)                              \
    X(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, 7000, PFN_cuMemcpyDtoD_v7000_ptds, 1)                    \
    X(cuMemcpy2D_v2, cuMemcpy2D, 3020, PFN_cuMemcpy2D_v3020, 0)                                    \
    X(cuMemcpy2D_v2_ptds, cuMemcpy2D, 7000, PFN_cuMemcpy2D_v7000_ptds, 1)                          \
    X(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned, 3020, PFN_cuMemcpy2DUnaligned_v3020, 0)         \
    X(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned, 7000, PFN_cuMemcpy2DUnaligned_v7000_ptds,  \
      1)                                                                                           \
    X(cuMemcpy3D_v2, cuMemcpy3D, 3020, PFN_cuMemcpy3D_v3020, 0)                                    \
    X(cuMemcpy3D_v2_ptds, cuMemcpy3D, 7000, PFN_cuMemcpy3D_v7000_ptds, 1)                          \
    X(cuMemcpy3DPeer, cuMemcpy3DPeer, 4000, PFN_cuMemcpy3DPeer_v4000, 0)                           \
    X(cuMemcpy3DPeer_ptds, cuMemcpy3DPeer, 7000, PFN_cuMemcpy3DPeer_v7000_ptds, 1)                 \
    X(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync, 4000, PFN_cuMemcpy3DPeerAsync_v4000, 0)            \
    X(cuMemcpy3DPeerAsync_ptsz, cuMemcpy3DPeerAsync, 7000, PFN_cuMemcpy3DPeerAsync_v7000_ptsz, 1)  \
    X(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync, 12080, PFN_cuMemcpy3DBatchAsync_v12080, 0)       \
    X(cuMemcpy3DBatchAsync_ptsz, cuMemcpy3DBatchAsync, 12080,                                      \
      PFN_cuMemcpy3DBatchAsync_v12080_ptsz, 1)                                                     \
    X(cuMemcpyBatchAsync, cuMemcpyBatchAsync, 12080, PFN_cuMemcpyBatchAsync_v12080, 0)             \
    X(cuMemcpyBatchAsync_ptsz, cuMemcpyBatchAsync, 12080, PFN_cuMemcpyBatchAsync_v12080_ptsz, 1)   \
    X(cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync, 13000, PFN_cuMemcpyBatchAsync_v13000, 0)          \
    X(cuMemcpyBatchAsync_v2_ptsz, cuMemcpyBatchAsync, 13000, PFN_cuMemcpyBatchAsync_v13000_ptsz,   \
      1)                                                                                           \
    X(cuMemsetD2D8_v2, cuMemsetD2D8, 3020, PFN_cuMemsetD2D8_v3020, 0)                              \
    X(cuMemsetD2D8_v2_ptds, cuMemsetD2D8, 7000, PFN_cuMemsetD2D8_v7000_ptds, 1)                    \
    X(cuMemsetD2D16_v2, cuMemsetD2D16, 3020, PFN_cuMemsetD2D16_v3020, 0)                           \
    X(cuMemsetD2D16_v2_ptds, cuMemsetD2D16, 7000, PFN_cuMemsetD2D16_v7000_ptds, 1)                 \
    X(cuMemsetD2D32_v2, cuMemsetD2D32, 3020, PFN_cuMemsetD2D32_v3020, 0)                           \
    X(cuMemsetD2D32_v2_ptds, cuMemsetD2D32, 7000, PFN_cuMemsetD2D32_v7000_ptds, 1)                 \
    X(cuMemsetD2D8Async, cuMemsetD2D8Async, 3020, PFN_cuMemsetD2D8Async_v3020, 0)                  \
    X(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async, 7000, PFN_cuMemsetD2D8Async_v7000_ptsz, 1)        \
    X(cuMemsetD2D16Async, cuMemsetD2D16Async, 3020, PFN_cuMemsetD2D16Async_v3020, 0)               \
    X(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async, 7000, PFN_cuMemsetD2D16Async_v7000_ptsz, 1)     \
    X(cuMemsetD2D32Async, cuMemsetD2D32Async, 3020, PFN_cuMemsetD2D32Async_v3020, 0)               \
    X(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async, 7000, PFN_cuMemsetD2D32Async_v7000_ptsz, 1)     \
    X(cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync, 13000, PFN_cuMemcpy3DBatchAsync_v13000, 0)    \
    X(cuMemcpy3DBatchAsync_v2_ptsz, cuMemcpy3DBatchAsync, 13000,                                   \
      PFN_cuMemcpy3DBatchAsync_v13000_ptsz, 1)                                                     \
    X(cuMemcpy2DAsync_v2, cuMemcpy2DAsync, 3020, PFN_cuMemcpy2DAsync_v3020, 0)                     \
    X(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync, 7000, PFN_cuMemcpy2DAsync_v7000_ptsz, 1)           \
    X(cuMemcpy3DAsync_v2, cuMemcpy3DAsync, 3020, PFN_cuMemcpy3DAsync_v3020, 0)                     \
    X(cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync, 7000, PFN_cuMemcpy3DAsync_v7000_ptsz, 1)           \
    X(cuMemcpyPeer, cuMemcpyPeer, 4000, PFN_cuMemcpyPeer_v4000, 0)                                 \
    X(cuMemcpyPeer_ptds, cuMemcpyPeer, 7000, PFN_cuMemcpyPeer_v7000_ptds, 1)                       \
    X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000, PFN_cuMemcpyPeerAsync_v4000, 0)                  \
    X(cuMemcpyPeerAsync_ptsz, cuMemcpyPeerAsync, 7000, PFN_cuMemcpyPeerAsync_v7000_ptsz, 1)        \
    X(cuStreamCreate, cuStreamCreate, 2000, PFN_cuStreamCreate_v2000, 0)                           \
    X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 5050,                                \
      PFN_cuStreamCreateWithPriority_v5050, 0)                                                     \
    X(cuStreamDestroy, cuStreamDestroy, 2000, fake_pfn_cuStreamDestroy_v2000, 0)                   \
    X(cuStreamDestroy_v2, cuStreamDestroy, 4000, PFN_cuStreamDestroy_v4000, 0)                     \
    X(cuStreamGetFlags, cuStreamGetFlags, 5050, PFN_cuStreamGetFlags_v5050, 0)                     \
    X(cuStreamGetFlags_ptsz, cuStreamGetFlags, 7000, PFN_cuStreamGetFlags_v7000_ptsz, 1)           \
    X(cuStreamSynchronize, cuStreamSynchronize, 2000, PFN_cuStreamSynchronize_v2000, 0)            \
    X(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000, PFN_cuStreamSynchronize_v7000_ptsz, 1)  \
    X(cuStreamWaitEvent, cuStreamWaitEvent, 3020, PFN_cuStreamWaitEvent_v3020, 0)                  \
    X(cuStreamWaitEvent_ptsz, cuStreamWaitEvent, 7000, PFN_cuStreamWaitEvent_v7000_ptsz, 1)        \
    X(cuStreamIsCapturing, cuStreamIsCapturing, 10000, PFN_cuStreamIsCapturing_v10000, 0)          \
    X(cuStreamIsCapturing_ptsz, cuStreamIsCapturing, 10000, PFN_cuStreamIsCapturing_v10000_ptsz,   \
      1)                                                                                           \
    X(cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo, 11030, PFN_cuStreamGetCaptureInfo_v11030, \
      0)                                                                                           \
    X(cuStreamUpdateCaptureDependencies, cuStreamUpdateCaptureDependencies, 11030,                 \
      PFN_cuStreamUpdateCaptureDependencies_v11030, 0)                                             \
    X(cuStreamUpdateCaptureDependencies_ptsz, cuStreamUpdateCaptureDependencies, 11030,            \
      PFN_cuStreamUpdateCaptureDependencies_v11030_ptsz, 1)                                        \
    X(cuStreamBeginCapture, cuStreamBeginCapture, 10000, fake_pfn_cuStreamBeginCapture_v10000, 0)  \
    X(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, 10000,                                      \
      fake_pfn_cuStreamBeginCapture_v10000, 1)                                                     \
    X(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, PFN_cuStreamBeginCapture_v10010, 0)    \
    X(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010,                                   \
      PFN_cuStreamBeginCapture_v10010_ptsz, 1)                                                     \
    X(cuStreamEndCapture, cuStreamEndCapture, 10000, PFN_cuStreamEndCapture_v10000, 0)             \
    X(cuStreamEndCapture_ptsz, cuStreamEndCapture, 10000, PFN_cuStreamEndCapture_v10000_ptsz, 1)   \
    X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, 10010,                 \
      PFN_cuThreadExchangeStreamCaptureMode_v10010, 0)                                             \
    X(cuEventCreate, cuEventCreate, 2000, PFN_cuEventCreate_v2000, 0)                              \
    X(cuEventRecord, cuEventRecord, 2000, PFN_cuEventRecord_v2000, 0)                              \
    X(cuEventRecord_ptsz, cuEventRecord, 7000, PFN_cuEventRecord_v7000_ptsz, 1)                    \
    X(cuEventRecordWithFlags, cuEventRecordWithFlags, 11010, PFN_cuEventRecordWithFlags_v11010, 0) \
    X(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags, 11010,                                  \
      PFN_cuEventRecordWithFlags_v11010_ptsz, 1)                                                   \
    X(cuEventQuery, cuEventQuery, 2000, PFN_cuEventQuery_v2000, 0)                                 \
    X(cuEventSynchronize, cuEventSynchronize, 2000, PFN_cuEventSynchronize_v2000, 0)               \
    X(cuEventDestroy_v2, cuEventDestroy, 4000, PFN_cuEventDestroy_v4000, 0)                        \
    X(cuLaunchKernel, cuLaunchKernel, 4000, PFN_cuLaunchKernel_v4000, 0)                           \
    X(cuLaunchKernel_ptsz, cuLaunchKernel, 7000, PFN_cuLaunchKernel_v7000_ptsz, 1)                 \
    X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, PFN_cuLaunchKernelEx_v11060, 0)                   \
    X(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060, PFN_cuLaunchKernelEx_v11060_ptsz, 1)         \
    X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000,                                  \
      PFN_cuLaunchCooperativeKernel_v9000, 0)                                                      \
    X(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 9000,                             \
      PFN_cuLaunchCooperativeKernel_v9000_ptsz, 1)                                                 \
    X(cuFuncGetParamInfo, cuFuncGetParamInfo, 12040, PFN_cuFuncGetParamInfo_v12040, 0)             \
    X(cuModuleUnload, cuModuleUnload, 2000, PFN_cuModuleUnload_v2000, 0)                           \
    X(cuLibraryUnload, cuLibraryUnload, 12000, PFN_cuLibraryUnload_v12000, 0)                      \
    X(cuKernelGetParamInfo, cuKernelGetParamInfo, 12040, PFN_cuKernelGetParamInfo_v12040, 0)       \
    X(cuGraphCreate, cuGraphCreate, 10000, PFN_cuGraphCreate_v10000, 0)                            \
    X(cuGraphDestroy, cuGraphDestroy, 10000, PFN_cuGraphDestroy_v10000, 0)                         \
    X(cuGraphAddKernelNode_v2, cuGraphAddKernelNode, 12000, PFN_cuGraphAddKernelNode_v12000, 0)    \
    X(cuGraphGetNodes, cuGraphGetNodes, 10000, PFN_cuGraphGetNodes_v10000, 0)                      \
    X(cuGraphNodeGetType, cuGraphNodeGetType, 10000, PFN_cuGraphNodeGetType_v10000, 0)             \
    X(cuGraphKernelNodeGetParams_v2, cuGraphKernelNodeGetParams, 12000,                            \
      PFN_cuGraphKernelNodeGetParams_v12000, 0)                                                    \
    X(cuGraphAddChildGraphNode, cuGraphAddChildGraphNode, 10000,                                   \
      PFN_cuGraphAddChildGraphNode_v10000, 0)                                                      \
    X(cuGraphChildGraphNodeGetGraph, cuGraphChildGraphNodeGetGraph, 10000,                         \
      PFN_cuGraphChildGraphNodeGetGraph_v10000, 0)                                                 \
    X(cuGraphExecUpdate, cuGraphExecUpdate, 10020, PFN_cuGraphExecUpdate_v10020, 0)                \
    X(cuGraphExecUpdate_v2, cuGraphExecUpdate, 12000, PFN_cuGraphExecUpdate_v12000, 0)             \
    X(cuGraphClone, cuGraphClone, 10000, PFN_cuGraphClone_v10000, 0)                               \
    X(cuGraphAddNode, cuGraphAddNode, 12020, PFN_cuGraphAddNode_v12020, 0)                         \
    X(cuGraphAddNode_v2, cuGraphAddNode, 12030, PFN_cuGraphAddNode_v12030, 0)                      \
    X(cuGraphConditionalHandleCreate, cuGraphConditionalHandleCreate, 12030,                       \
      PFN_cuGraphConditionalHandleCreate_v12030, 0)                                                \
    X(cuGraphDestroyNode, cuGraphDestroyNode, 10000, PFN_cuGraphDestroyNode_v10000, 0)             \
    X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040,                             \
      PFN_cuGraphInstantiateWithFlags_v11040, 0)                                                   \
    X(cuGraphLaunch, cuGraphLaunch, 10000, PFN_cuGraphLaunch_v10000, 0)                            \
    X(cuGraphLaunch_ptsz, cuGraphLaunch, 10000, PFN_cuGraphLaunch_v10000_ptsz, 1)                  \
    X(cuGraphExecDestroy, cuGraphExecDestroy, 10000, PFN_cuGraphExecDestroy_v10000, 0)             \
    X(cuFuncGetName, cuFuncGetName, 12030, PFN_cuFuncGetName_v12030, 0)                            \
    X(cuKernelGetName, cuKernelGetName, 12030, PFN_cuKernelGetName_v12030, 0)                      \
    X(cuCtxSynchronize, cuCtxSynchronize, 2000, PFN_cuCtxSynchronize_v2000, 0)                     \
    X(cuCtxPushCurrent_v2, cuCtxPushCurrent, 4000, PFN_cuCtxPushCurrent_v4000, 0)                  \
    X(cuCtxPopCurrent_v2, cuCtxPopCurrent, 4000, PFN_cuCtxPopCurrent_v4000, 0)                     \
    X(cuGreenCtxCreate, cuGreenCtxCreate, 12040, PFN_cuGreenCtxCreate_v12040, 0)                   \
    X(cuGreenCtxDestroy, cuGreenCtxDestroy, 12040, PFN_cuGreenCtxDestroy_v12040, 0)                \
    X(cuGreenCtxStreamCreate, cuGreenCtxStreamCreate, 12050, PFN_cuGreenCtxStreamCreate_v12050, 0) \
    X(cuCtxFromGreenCtx, cuCtxFromGreenCtx, 12040, PFN_cuCtxFromGreenCtx_v12040, 0)

#define FAKE_DECL_(sym, base, ver, pfn, pt)                                                        \
    __typeof__(*(pfn)0) fk_##sym __asm__(#sym) __attribute__((visibility("default")));
FAKE_LIST(FAKE_DECL_)
#undef FAKE_DECL_

/* The test API of fake_cuda.h, exported. */
FAKE_API void fake_reset(void);
FAKE_API size_t fake_log_count(void);
FAKE_API const fake_call_t *fake_log_get(size_t i);
FAKE_API void fake_set_logging(int on);
FAKE_API void *fake_register_kernel(const char *name, unsigned nparams, const size_t *sizes,
                                    fake_kernel_fn fn);
FAKE_API void fake_reload_kernel(void *f, const char *name, unsigned nparams, const size_t *sizes,
                                 fake_kernel_fn fn);
FAKE_API void *fake_entry(const char *sym);
FAKE_API void fake_set_capturing(void *stream);
FAKE_API void fake_set_capturing_blocking(void *stream);
FAKE_API int fake_capture_invalidated(void);
FAKE_API unsigned fake_unsafe_relaxed(void);
FAKE_API void fake_arm_capture(void *stream, void *begin);
FAKE_API void fake_arm_capture_also(void *stream, void *begin);
FAKE_API int fake_armed_capture_join(void);
FAKE_API void fake_arm_last_release(void (*fn)(void));
FAKE_API void fake_last_release_join(void);
FAKE_API void fake_arm_push(void *ctx, void (*fn)(void));
FAKE_API int fake_armed_push_join(void);
FAKE_API void fake_arm_stall(const char *mark, const char *until);
FAKE_API void fake_arm_stall_prefetch(const char *mark, const char *until);
FAKE_API void fake_arm_stall_param_info(const char *mark, const char *until);
FAKE_API void fake_arm_stall_query(void *stream, const char *mark, const char *until);
FAKE_API unsigned fake_ctx_destroyed_in_use(void);
FAKE_API void fake_ctx_next_handle(void *ctx);
FAKE_API void fake_arm_ctx_meet(unsigned n);
FAKE_API void fake_capture_creations(unsigned *relaxed_p, unsigned *strict_p);
FAKE_API size_t fake_graph_nodes(void *graph, fake_node_info_t *out, size_t max);
FAKE_API int fake_ordered(size_t before, size_t after);
/* Host kernels declare what they touch (fake CUPTI, see fake_cuda.h). */
FAKE_API void fake_touch(const void *addr, uint64_t len, int mode);
FAKE_API size_t gmux_test_cupti_touched(uint64_t *addr, uint64_t *len, uint8_t *mode, size_t max);
FAKE_API void fake_spend(uint64_t ns);
FAKE_API uint64_t gmux_test_cupti_kernel_ns(void);

/* Whether the calling thread may make a potentially unsafe call (a
 * synchronization, an event query, an allocation) now; if not, the captures that refuse it are
 * invalidated and the caller answers CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * (fake_cuda_capture.c). */
__attribute__((visibility("hidden"))) int fake_unsafe_refused(void);

/* The same question for a call no documentation names potentially unsafe
 * (creating a stream or an event): never refused, counted by whether the
 * caller was RELAXED (fake_capture_creations). */
__attribute__((visibility("hidden"))) void fake_unsafe_watched(void);

#define FAKE_MAX_PARAMS 64

typedef struct fake_kernel {
    char name[4096]; /* as long as PyTorch's mangled kernel names */
    unsigned n;
    size_t size[FAKE_MAX_PARAMS];
    size_t offset[FAKE_MAX_PARAMS];
    fake_kernel_fn fn;
} fake_kernel_t;

/* Runs kernel k now, with either argument form (fake_cuda_exec.c). */
__attribute__((visibility("hidden"))) CUresult fake_run(const fake_kernel_t *k,
                                                        const unsigned grid[3],
                                                        const unsigned block[3], void **params,
                                                        void **extra);

/* The stream s names for the calling thread, passed to a _ptsz entry point
 * or not (ptsz): CU_STREAM_LEGACY is the legacy stream (NULL);
 * CU_STREAM_PER_THREAD, and NULL through a _ptsz entry point, the thread's
 * per-thread default stream, one of its own; any other, itself. For capture
 * purposes (fake_cuda_stream.c). */
__attribute__((visibility("hidden"))) CUstream fake_stream_of(CUstream s, int ptsz);
/* The graph work queued on s (fake_stream_of(s, ptsz)) now goes into: that of
 * a capture begun with cuStreamBeginCapture that s takes part in (it began
 * it, or joined it); NULL when s does not capture (fake_cuda_capture.c). */
__attribute__((visibility("hidden"))) CUgraph fake_capture_graph(CUstream s, int ptsz);
/* Whether s (fake_stream_of) takes part in a capture in progress, begun with
 * cuStreamBeginCapture or fake_set_capturing; whether s is a legacy stream
 * that a blocking stream's capture makes unusable (fake_cuda_capture.c). */
__attribute__((visibility("hidden"))) bool fake_in_capture(uintptr_t s);
__attribute__((visibility("hidden"))) bool fake_legacy_blocked(CUstream s);
/* The capture status of s (fake_stream_of) and the id of its capture (0
 * where none, or a fake_set_capturing one) (fake_cuda_capture.c). */
__attribute__((visibility("hidden"))) CUstreamCaptureStatus fake_capture_status(uintptr_t s,
                                                                                uint64_t *id_p);
/* cuStreamBeginCapture and cuStreamEndCapture on s (fake_stream_of)
 * (fake_cuda_capture.c). */
__attribute__((visibility("hidden"))) CUresult fake_begin_capture(CUstream s,
                                                                  CUstreamCaptureMode mode);
__attribute__((visibility("hidden"))) CUresult fake_end_capture(CUstream s, CUgraph *g);
/* The stream the calling thread's next captured node comes from
 * (fake_capture_graph says; fake_cuda_graph.c). */
__attribute__((visibility("hidden"))) void fake_capture_from_stream(uintptr_t s);
/* The streams taking part in each capture in progress, their dependency
 * sets and the captured events (fake_cuda_join.c): e recorded on s (a
 * captured event if s takes part in a capture); s waits for e
 * (fake_ev_state_t); s's dependency set (at most max nodes);
 * cuStreamUpdateCaptureDependencies. */
__attribute__((visibility("hidden"))) void fake_join_record(CUevent e, uintptr_t s);
/* What a wait of s for e found (fake_join_wait): e never recorded (an empty
 * set of work), recorded outside any capture in progress (before it, in an
 * ended one, or on a stream taking no part), captured in the capture s takes
 * part in or in one s then joined (s joined it, or merged e's set into its
 * own), or captured in a capture other than the one s takes part in (a
 * merge: both captures invalidated). */
typedef enum { FAKE_EV_EMPTY, FAKE_EV_OUTSIDE, FAKE_EV_CAPTURED, FAKE_EV_MERGE } fake_ev_state_t;
__attribute__((visibility("hidden"))) fake_ev_state_t fake_join_wait(uintptr_t s, CUevent e);
__attribute__((visibility("hidden"))) size_t fake_join_deps(uintptr_t s, CUgraphNode *out,
                                                            size_t max);
__attribute__((visibility("hidden"))) CUresult
fake_join_update(uintptr_t s, const CUgraphNode *nodes, size_t n, unsigned flags);
/* Whether e was last recorded in a capture still in progress (then that
 * capture is invalidated: querying or synchronizing e is an invalid
 * operation, CUDA_ERROR_CAPTURED_EVENT) (fake_cuda_join.c). */
__attribute__((visibility("hidden"))) bool fake_event_captured(CUevent e);
/* After a query of s: the capture fake_arm_capture armed on s begins, from
 * another thread (fake_cuda_arm.c). */
__attribute__((visibility("hidden"))) void fake_arm_fire(CUstream s);
/* Records a captured kernel launch (its argument values copied), or another
 * captured operation (kind: FAKE_NODE_*, a0/a1/a2 as fake_node_info_t), as a
 * node of the capture's graph g (fake_cuda_graph.c). */
__attribute__((visibility("hidden"))) CUresult
fake_capture_kernel(CUgraph g, const CUDA_KERNEL_NODE_PARAMS *p);
__attribute__((visibility("hidden"))) CUresult fake_capture_op(CUgraph g, int kind, uint64_t a0,
                                                               uint64_t a1, uint64_t a2);
/* Runs a memset (FAKE_NODE_MEMSET, FAKE_NODE_MEMSET2D) or a copy
 * (FAKE_NODE_MEMCPY, FAKE_NODE_MEMCPY3D) now, its arguments as
 * fake_node_info_t's (fake_cuda_copy.c). */
__attribute__((visibility("hidden"))) void fake_copy_run(int kind, uint64_t a0, uint64_t a1,
                                                         uint64_t a2);
/* Checks a 2D/3D copy and gives its first destination and source bytes
 * (CUDA_ERROR_NOT_SUPPORTED for arrays, CUDA_ERROR_INVALID_VALUE for a
 * missing address or rows that overlap); runs or captures a checked one
 * queued on s, logged at log_index (fake_cuda_copy.c). */
__attribute__((visibility("hidden"))) CUresult fake_copy3d_check(const CUDA_MEMCPY3D *c,
                                                                 uint64_t *d0, uint64_t *s0);
__attribute__((visibility("hidden"))) CUresult fake_copy3d_queue(const CUDA_MEMCPY3D *c, CUstream s,
                                                                 int ptsz, size_t log_index);
/* Whether a batch's index array idx[0..n) lays out count operations as
 * cuda.h requires: idx[0] 0, strictly ascending, all below count (so n <=
 * count) (fake_cuda_batch.c). */
__attribute__((visibility("hidden"))) bool fake_batch_idx_ok(size_t count, const size_t *idx,
                                                             size_t n);
/* Whether s (fake_stream_of) is a blocking stream: a per-thread default
 * stream, or one created without CU_STREAM_NON_BLOCKING
 * (fake_cuda_stream.c). */
__attribute__((visibility("hidden"))) bool fake_stream_blocking(CUstream s);
/* The context stream s (fake_stream_of, not the legacy stream) belongs to:
 * the one current at its creation; a per-thread default stream's, or a
 * handle the double did not hand out: the calling thread's current one. */
__attribute__((visibility("hidden"))) uintptr_t fake_stream_ctx(CUstream s);
/* Stream order (fake_cuda_order.c): work queued on s (fake_stream_of) that
 * runs, logged at log_index (fake_rec_last); an event recorded on s; s
 * waiting for an event; the log emptied (fake_reset). */
__attribute__((visibility("hidden"))) void fake_order_work(CUstream s, size_t log_index);
__attribute__((visibility("hidden"))) void fake_order_record(CUevent e, CUstream s);
__attribute__((visibility("hidden"))) void fake_order_wait(CUstream s, CUevent e);
__attribute__((visibility("hidden"))) void fake_order_reset(void);
/* The log index of the calling thread's last logged call. */
__attribute__((visibility("hidden"))) size_t fake_rec_last(void);
/* Invalidates the capture s (fake_stream_of) takes part in, if any
 * (fake_capture_invalidated). */
__attribute__((visibility("hidden"))) void fake_capture_invalidate(uintptr_t s);
/* Whether work queued on s (fake_stream_of) is refused because s is the
 * legacy stream and a blocking stream captures: then each such capture is
 * invalidated too, and the caller answers CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
 * (fake_cuda_capture.c). */
__attribute__((visibility("hidden"))) bool fake_legacy_work(CUstream s);

/* Where an armed stall fires (fake_cuda_stall.c): the armed thread's next
 * cuCtxGetCurrent, its next cuMemPrefetchAsync_v2 or batched prefetch, its
 * next cuFuncGetParamInfo; any thread's next cuStreamIsCapturing of the
 * armed stream. One stall of each kind may be armed at once. */
enum {
    FAKE_STALL_CTX_GET_CURRENT = 1,
    FAKE_STALL_PREFETCH = 2,
    FAKE_STALL_PARAM_INFO = 3,
    FAKE_STALL_QUERY = 4,
    FAKE_STALL_N
};
/* Stalls the calling thread here if it armed a stall at `at` (one-shot). */
__attribute__((visibility("hidden"))) void fake_stall_fire(int at);
/* The same for a stall armed on stream, by any thread (FAKE_STALL_QUERY). */
__attribute__((visibility("hidden"))) void fake_stall_fire_on(int at, uintptr_t stream);

/* The calling thread's current context (fake_cuda_ctx.c). */
__attribute__((visibility("hidden"))) CUcontext fake_current(void);
/* A context went: so did what was allocated in it (fake_cuda.c). */
__attribute__((visibility("hidden"))) void fake_free_ctx(CUcontext ctx);

/* The memory of CUDA arrays (fake_cuda_array.c): a host block of size
 * counted as device memory, of the current context, made or freed as the
 * kind given (an array's block is never a plain allocation's, nor a
 * mipmapped array's an array's); its address is the handle. */
enum { FAKE_ARRAY_PLAIN = 1, FAKE_ARRAY_MIPMAPPED = 2 };
__attribute__((visibility("hidden"))) CUresult fake_alloc_array(CUdeviceptr *p, size_t size,
                                                                int array);
/* CUDA_ERROR_INVALID_VALUE where no block of that kind is at p. */
__attribute__((visibility("hidden"))) CUresult fake_free_array(CUdeviceptr p, int array);

/* Appends one call to the log (fn: the symbol name). */
__attribute__((visibility("hidden"))) void fake_rec(const char *fn, uint64_t a0, uint64_t a1,
                                                    uint64_t a2, uint64_t a3);
#define REC(...) fake_rec(__func__ + 3, __VA_ARGS__) /* "fk_cuX" -> "cuX" */
#define REC0()   REC(0, 0, 0, 0)
#define U(x)     ((uint64_t)(uintptr_t)(x))

#endif /* FAKE_CUDA_INTERNAL_H */
