/*
 * Every CUDA driver entry point the shim touches, listed once.
 *
 * SHIM_HOOK_LIST: the intercepted functions. libgmux.so exports each under
 * its driver symbol name (sym), hands out its hook through dlsym() and
 * cuGetProcAddress(), and reaches the real one through the dispatch table.
 * SHIM_CALL_LIST: driver functions the shim only calls (never hooks); they
 * live in the same dispatch table so that the real driver is reached through
 * that table and nothing else.
 *
 *   X(sym, base, version, PFN, per_thread)
 *     sym         exported driver symbol (cuMemAlloc_v2, cuLaunchKernel_ptsz)
 *     base        the name cuGetProcAddress is asked for (cuMemAlloc)
 *     version     the CUDA version of that ABI (the PFN's _vNNNN)
 *     PFN         the cudaTypedefs.h pointer type of that ABI
 *     per_thread  1 for the per-thread default stream variant (_ptsz), else 0
 *
 * cuGetProcAddress(base, version, flags) resolves, like the driver, to the
 * entry with the highest version <= the requested one, preferring the
 * per-thread variant when flags ask for it. A base may appear several times
 * (cuGetProcAddress v11030 and v12000); a version of a base that is not
 * listed is never wrapped (see shim.c: the real pointer of the request must
 * equal the table's pointer for the chosen entry).
 *
 * Identifiers are only ever built from sym with ## or # (never used bare),
 * because cuda.h #defines several of these names to other names.
 */
#ifndef SHIM_SYMS_H
#define SHIM_SYMS_H

#include <cuda.h>
#include <cudaTypedefs.h>

/* The oldest ABIs of functions whose newer ABIs are listed too.
 * cudaTypedefs.h declares these only for the driver's own build
 * (__CUDA_API_VERSION_INTERNAL); their signatures are those of the newer
 * ones, what changed is the driver's behaviour (cuCtxDestroy_v2's context
 * stack, cuDevicePrimaryCtxRelease_v2 past a reset). A program built against
 * an old toolkit, or a runtime asking cuGetProcAddress for an old version,
 * gets these, and they destroy what the new ones do. */
typedef CUresult(CUDAAPI *shim_pfn_cuCtxDestroy_v2000)(CUcontext ctx);
typedef CUresult(CUDAAPI *shim_pfn_cuStreamDestroy_v2000)(CUstream hStream);
typedef CUresult(CUDAAPI *shim_pfn_cuDevicePrimaryCtxRelease_v7000)(CUdevice_v1 dev);
typedef CUresult(CUDAAPI *shim_pfn_cuDevicePrimaryCtxReset_v7000)(CUdevice_v1 dev);
typedef CUresult(CUDAAPI *shim_pfn_cuStreamBeginCapture_v10000)(CUstream hStream);

#define SHIM_HOOK_LIST(X)                                                                          \
    X(cuGetProcAddress, cuGetProcAddress, 11030, PFN_cuGetProcAddress_v11030, 0)                   \
    X(cuGetProcAddress_v2, cuGetProcAddress, 12000, PFN_cuGetProcAddress_v12000, 0)                \
    X(cuMemAlloc_v2, cuMemAlloc, 3020, PFN_cuMemAlloc_v3020, 0)                                    \
    X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, PFN_cuMemAllocPitch_v3020, 0)                     \
    X(cuMemFree_v2, cuMemFree, 3020, PFN_cuMemFree_v3020, 0)                                       \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, PFN_cuIpcGetMemHandle_v4010, 0)                  \
    X(cuMemAllocManaged, cuMemAllocManaged, 6000, PFN_cuMemAllocManaged_v6000, 0)                  \
    X(cuMemAllocAsync, cuMemAllocAsync, 11020, PFN_cuMemAllocAsync_v11020, 0)                      \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, PFN_cuMemAllocAsync_v11020_ptsz, 1)            \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, PFN_cuMemAllocFromPoolAsync_v11020, \
      0)                                                                                           \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020,                                \
      PFN_cuMemAllocFromPoolAsync_v11020_ptsz, 1)                                                  \
    X(cuMemFreeAsync, cuMemFreeAsync, 11020, PFN_cuMemFreeAsync_v11020, 0)                         \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, PFN_cuMemFreeAsync_v11020_ptsz, 1)               \
    X(cuMemCreate, cuMemCreate, 10020, PFN_cuMemCreate_v10020, 0)                                  \
    X(cuMemRelease, cuMemRelease, 10020, PFN_cuMemRelease_v10020, 0)                               \
    X(cuMemMap, cuMemMap, 10020, PFN_cuMemMap_v10020, 0)                                           \
    X(cuMemUnmap, cuMemUnmap, 10020, PFN_cuMemUnmap_v10020, 0)                                     \
    X(cuMemGetInfo_v2, cuMemGetInfo, 3020, PFN_cuMemGetInfo_v3020, 0)                              \
    X(cuArrayCreate_v2, cuArrayCreate, 3020, PFN_cuArrayCreate_v3020, 0)                           \
    X(cuArray3DCreate_v2, cuArray3DCreate, 3020, PFN_cuArray3DCreate_v3020, 0)                     \
    X(cuArrayDestroy, cuArrayDestroy, 2000, PFN_cuArrayDestroy_v2000, 0)                           \
    X(cuMipmappedArrayCreate, cuMipmappedArrayCreate, 5000, PFN_cuMipmappedArrayCreate_v5000, 0)   \
    X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, 5000, PFN_cuMipmappedArrayDestroy_v5000,   \
      0)                                                                                           \
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
    X(cuCtxDestroy, cuCtxDestroy, 2000, shim_pfn_cuCtxDestroy_v2000, 0)                            \
    X(cuCtxDestroy_v2, cuCtxDestroy, 4000, PFN_cuCtxDestroy_v4000, 0)                              \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000,                                    \
      PFN_cuDevicePrimaryCtxRetain_v7000, 0)                                                       \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000,                                  \
      shim_pfn_cuDevicePrimaryCtxRelease_v7000, 0)                                                 \
    X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000,                              \
      PFN_cuDevicePrimaryCtxRelease_v11000, 0)                                                     \
    X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000,                                      \
      shim_pfn_cuDevicePrimaryCtxReset_v7000, 0)                                                   \
    X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000,                                  \
      PFN_cuDevicePrimaryCtxReset_v11000, 0)                                                       \
    X(cuGreenCtxCreate, cuGreenCtxCreate, 12040, PFN_cuGreenCtxCreate_v12040, 0)                   \
    X(cuGreenCtxDestroy, cuGreenCtxDestroy, 12040, PFN_cuGreenCtxDestroy_v12040, 0)                \
    X(cuModuleUnload, cuModuleUnload, 2000, PFN_cuModuleUnload_v2000, 0)                           \
    X(cuLibraryUnload, cuLibraryUnload, 12000, PFN_cuLibraryUnload_v12000, 0)                      \
    X(cuLaunchKernel, cuLaunchKernel, 4000, PFN_cuLaunchKernel_v4000, 0)                           \
    X(cuLaunchKernel_ptsz, cuLaunchKernel, 7000, PFN_cuLaunchKernel_v7000_ptsz, 1)                 \
    X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, PFN_cuLaunchKernelEx_v11060, 0)                   \
    X(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060, PFN_cuLaunchKernelEx_v11060_ptsz, 1)         \
    X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000,                                  \
      PFN_cuLaunchCooperativeKernel_v9000, 0)                                                      \
    X(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 9000,                             \
      PFN_cuLaunchCooperativeKernel_v9000_ptsz, 1)                                                 \
    X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040,                             \
      PFN_cuGraphInstantiateWithFlags_v11040, 0)                                                   \
    X(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams, 12000,                           \
      PFN_cuGraphInstantiateWithParams_v12000, 0)                                                  \
    X(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams, 12000,                      \
      PFN_cuGraphInstantiateWithParams_v12000_ptsz, 1)                                             \
    X(cuGraphLaunch, cuGraphLaunch, 10000, PFN_cuGraphLaunch_v10000, 0)                            \
    X(cuGraphLaunch_ptsz, cuGraphLaunch, 10000, PFN_cuGraphLaunch_v10000_ptsz, 1)                  \
    X(cuGraphExecDestroy, cuGraphExecDestroy, 10000, PFN_cuGraphExecDestroy_v10000, 0)             \
    X(cuGraphAddNode, cuGraphAddNode, 12020, PFN_cuGraphAddNode_v12020, 0)                         \
    X(cuGraphAddNode_v2, cuGraphAddNode, 12030, PFN_cuGraphAddNode_v12030, 0)                      \
    X(cuGraphAddChildGraphNode, cuGraphAddChildGraphNode, 10000,                                   \
      PFN_cuGraphAddChildGraphNode_v10000, 0)                                                      \
    X(cuGraphExecUpdate, cuGraphExecUpdate, 10020, PFN_cuGraphExecUpdate_v10020, 0)                \
    X(cuGraphExecUpdate_v2, cuGraphExecUpdate, 12000, PFN_cuGraphExecUpdate_v12000, 0)             \
    X(cuGraphClone, cuGraphClone, 10000, PFN_cuGraphClone_v10000, 0)                               \
    X(cuGraphDestroyNode, cuGraphDestroyNode, 10000, PFN_cuGraphDestroyNode_v10000, 0)             \
    X(cuGraphDestroy, cuGraphDestroy, 10000, PFN_cuGraphDestroy_v10000, 0)                         \
    X(cuStreamCreate, cuStreamCreate, 2000, PFN_cuStreamCreate_v2000, 0)                           \
    X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 5050,                                \
      PFN_cuStreamCreateWithPriority_v5050, 0)                                                     \
    X(cuGreenCtxStreamCreate, cuGreenCtxStreamCreate, 12050, PFN_cuGreenCtxStreamCreate_v12050, 0) \
    X(cuStreamDestroy, cuStreamDestroy, 2000, shim_pfn_cuStreamDestroy_v2000, 0)                   \
    X(cuStreamDestroy_v2, cuStreamDestroy, 4000, PFN_cuStreamDestroy_v4000, 0)                     \
    X(cuStreamBeginCapture, cuStreamBeginCapture, 10000, shim_pfn_cuStreamBeginCapture_v10000, 0)  \
    X(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, 10000,                                      \
      shim_pfn_cuStreamBeginCapture_v10000, 1)                                                     \
    X(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, PFN_cuStreamBeginCapture_v10010, 0)    \
    X(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010,                                   \
      PFN_cuStreamBeginCapture_v10010_ptsz, 1)                                                     \
    X(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030,                             \
      PFN_cuStreamBeginCaptureToGraph_v12030, 0)                                                   \
    X(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph, 12030,                        \
      PFN_cuStreamBeginCaptureToGraph_v12030_ptsz, 1)                                              \
    X(cuStreamEndCapture, cuStreamEndCapture, 10000, PFN_cuStreamEndCapture_v10000, 0)             \
    X(cuStreamEndCapture_ptsz, cuStreamEndCapture, 10000, PFN_cuStreamEndCapture_v10000_ptsz, 1)

#define SHIM_CALL_LIST(X)                                                                          \
    X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, PFN_cuCtxGetCurrent_v4000, 0)                        \
    X(cuCtxGetDevice, cuCtxGetDevice, 2000, PFN_cuCtxGetDevice_v2000, 0)                           \
    X(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, 7000,                                \
      PFN_cuDevicePrimaryCtxGetState_v7000, 0)                                                     \
    X(cuDeviceTotalMem_v2, cuDeviceTotalMem, 3020, PFN_cuDeviceTotalMem_v3020, 0)                  \
    X(cuStreamSynchronize, cuStreamSynchronize, 2000, PFN_cuStreamSynchronize_v2000, 0)            \
    X(cuStreamWaitEvent, cuStreamWaitEvent, 3020, PFN_cuStreamWaitEvent_v3020, 0)                  \
    X(cuStreamIsCapturing, cuStreamIsCapturing, 10000, PFN_cuStreamIsCapturing_v10000, 0)          \
    X(cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo, 11030, PFN_cuStreamGetCaptureInfo_v11030, \
      0)                                                                                           \
    X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, 10010,                 \
      PFN_cuThreadExchangeStreamCaptureMode_v10010, 0)                                             \
    X(cuEventCreate, cuEventCreate, 2000, PFN_cuEventCreate_v2000, 0)                              \
    X(cuEventRecord, cuEventRecord, 2000, PFN_cuEventRecord_v2000, 0)                              \
    X(cuEventQuery, cuEventQuery, 2000, PFN_cuEventQuery_v2000, 0)                                 \
    X(cuEventDestroy_v2, cuEventDestroy, 4000, PFN_cuEventDestroy_v4000, 0)                        \
    X(cuFuncGetParamInfo, cuFuncGetParamInfo, 12040, PFN_cuFuncGetParamInfo_v12040, 0)             \
    X(cuKernelGetParamInfo, cuKernelGetParamInfo, 12040, PFN_cuKernelGetParamInfo_v12040, 0)       \
    X(cuGraphGetNodes, cuGraphGetNodes, 10000, PFN_cuGraphGetNodes_v10000, 0)                      \
    X(cuGraphNodeGetType, cuGraphNodeGetType, 10000, PFN_cuGraphNodeGetType_v10000, 0)             \
    X(cuGraphKernelNodeGetParams_v2, cuGraphKernelNodeGetParams, 12000,                            \
      PFN_cuGraphKernelNodeGetParams_v12000, 0)                                                    \
    X(cuGraphChildGraphNodeGetGraph, cuGraphChildGraphNodeGetGraph, 10000,                         \
      PFN_cuGraphChildGraphNodeGetGraph_v10000, 0)                                                 \
    X(cuFuncGetName, cuFuncGetName, 12030, PFN_cuFuncGetName_v12030, 0)                            \
    X(cuKernelGetName, cuKernelGetName, 12030, PFN_cuKernelGetName_v12030, 0)                      \
    X(cuCtxSynchronize, cuCtxSynchronize, 2000, PFN_cuCtxSynchronize_v2000, 0)                     \
    X(cuCtxPushCurrent_v2, cuCtxPushCurrent, 4000, PFN_cuCtxPushCurrent_v4000, 0)                  \
    X(cuCtxPopCurrent_v2, cuCtxPopCurrent, 4000, PFN_cuCtxPopCurrent_v4000, 0)                     \
    X(cuCtxFromGreenCtx, cuCtxFromGreenCtx, 12040, PFN_cuCtxFromGreenCtx_v12040, 0)

#endif /* SHIM_SYMS_H */
