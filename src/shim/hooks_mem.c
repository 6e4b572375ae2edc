/*
 * Allocation hooks: every allocation and free goes into the region table;
 * plain allocations are redirected to managed memory where the mode allows
 * it; what cannot be redirected (stream-ordered pool memory, VMM mappings,
 * or a redirect the driver refused) is tracked as pinned and counted.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/array.h"
#include "common/log.h"

#include "shim/policy.h"
#include "shim/record.h"
#include "shim/shim.h"
#include "shim/stats.h"

#define PITCH_ALIGN 512 /* the pitch alignment the runtime's cudaMallocPitch reports */

/* Tracks an allocation of the calling thread's current context (its region
 * goes with the context: hooks_ctx.c). */
static void mem_track(CUdeviceptr base, size_t size, shim_region_kind_t kind, uint8_t loc)
{
    CUcontext ctx = NULL;
    if (SHIM_CALL(cuCtxGetCurrent, &ctx) != CUDA_SUCCESS)
        ctx = NULL;
    if (shim_regions_insert_in(&shim_state.regions, (uint64_t)base, size, kind, loc,
                               (uint64_t)(uintptr_t)ctx, 0) != GMUX_OK)
        COM_WARN(SHIM, "cannot track allocation %#llx (+%zu)", (unsigned long long)base, size);
    shim_record_alloc((uint64_t)base, size);
    if (kind == SHIM_REGION_MANAGED) {
        SHIM_STAT_ADD(managed_allocs, 1);
    } else {
        SHIM_STAT_ADD(pinned_allocs, 1);
        SHIM_STAT_ADD(pinned_bytes, size);
    }
}

static void mem_untrack(CUdeviceptr base)
{
    shim_record_free((uint64_t)base);
    if (shim_regions_remove(&shim_state.regions, (uint64_t)base, NULL) == GMUX_OK)
        SHIM_STAT_ADD(frees, 1);
}

/* Managed allocation in place of a plain one; false when the driver refused. */
static bool mem_try_managed(CUdeviceptr *dptr, size_t size)
{
    if (!shim_redirects())
        return false;
    if (SHIM_CALL(cuMemAllocManaged, dptr, size, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS)
        return true;
    SHIM_STAT_ADD(redirect_failures, 1);
    return false;
}

CUresult shim_hook_cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    shim_ensure_init();
    if (dptr && size && mem_try_managed(dptr, size)) {
        mem_track(*dptr, size, SHIM_REGION_MANAGED, SHIM_MANAGED_REDIRECTED);
        return CUDA_SUCCESS;
    }
    CUresult r = SHIM_CALL(cuMemAlloc_v2, dptr, size);
    if (r == CUDA_SUCCESS)
        mem_track(*dptr, size, SHIM_REGION_DEVICE, 0);
    return r;
}

/* The program's own managed memory: tracked as it is (nothing to redirect). */
CUresult shim_hook_cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemAllocManaged, dptr, size, flags);
    if (r == CUDA_SUCCESS && size)
        mem_track(*dptr, size, SHIM_REGION_MANAGED, 0);
    return r;
}

CUresult shim_hook_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                      unsigned int elem)
{
    shim_ensure_init();
    /* a width too large to round up to a pitch is left to the driver to refuse */
    bool valid = dptr && pitch && width && height && (elem == 4 || elem == 8 || elem == 16) &&
                 width <= SIZE_MAX - (PITCH_ALIGN - 1);
    size_t p = valid ? (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN : PITCH_ALIGN;
    if (valid && height <= SIZE_MAX / p && mem_try_managed(dptr, p * height)) {
        *pitch = p;
        mem_track(*dptr, p * height, SHIM_REGION_MANAGED, SHIM_MANAGED_REDIRECTED);
        return CUDA_SUCCESS;
    }
    CUresult r = SHIM_CALL(cuMemAllocPitch_v2, dptr, pitch, width, height, elem);
    if (r == CUDA_SUCCESS)
        mem_track(*dptr, *pitch * height, SHIM_REGION_DEVICE, 0);
    return r;
}

/*
 * Managed memory cannot be shared between processes: a program that hands
 * cudaMalloc'd memory to another process (PyTorch's CUDA tensor sharing,
 * NCCL's intra-node buffers) fails here once libgmux.so redirected it. The
 * driver's error stands; the shim says once why and what to do.
 */
CUresult shim_hook_cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr dptr)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuIpcGetMemHandle, handle, dptr);
    shim_region_t reg;
    if (r != CUDA_SUCCESS && shim_regions_find(&shim_state.regions, (uint64_t)dptr, &reg) &&
        reg.kind == SHIM_REGION_MANAGED && reg.loc_type == SHIM_MANAGED_REDIRECTED) {
        static atomic_flag said = ATOMIC_FLAG_INIT;
        SHIM_STAT_ADD(ipc_refused, 1);
        if (!atomic_flag_test_and_set(&said))
            COM_WARN(SHIM,
                     "cuIpcGetMemHandle failed on %#llx: libgmux.so redirected that allocation to "
                     "managed memory, which cannot be shared between processes; run this "
                     "program with `gmux run --no-managed` (GMUX_SHIM_MANAGED=0)",
                     (unsigned long long)dptr);
    }
    return r;
}

CUresult shim_hook_cuMemFree_v2(CUdeviceptr dptr)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemFree_v2, dptr);
    if (r == CUDA_SUCCESS)
        mem_untrack(dptr);
    return r;
}

/*
 * Stream-ordered memory stays what it is: a managed block could not honour
 * the stream-ordered free (and pools carry their own properties), so it is
 * tracked as pinned.
 */
CUresult shim_hook_cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemAllocAsync, dptr, size, s);
    if (r == CUDA_SUCCESS)
        mem_track(*dptr, size, SHIM_REGION_ASYNC, 0);
    return r;
}

CUresult shim_hook_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemAllocAsync_ptsz, dptr, size, s);
    if (r == CUDA_SUCCESS)
        mem_track(*dptr, size, SHIM_REGION_ASYNC, 0);
    return r;
}

CUresult shim_hook_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                                           CUstream s)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemAllocFromPoolAsync, dptr, size, pool, s);
    if (r == CUDA_SUCCESS)
        mem_track(*dptr, size, SHIM_REGION_ASYNC, 0);
    return r;
}

CUresult shim_hook_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                                                CUstream s)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemAllocFromPoolAsync_ptsz, dptr, size, pool, s);
    if (r == CUDA_SUCCESS)
        mem_track(*dptr, size, SHIM_REGION_ASYNC, 0);
    return r;
}

CUresult shim_hook_cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemFreeAsync, dptr, s);
    if (r == CUDA_SUCCESS)
        mem_untrack(dptr);
    return r;
}

CUresult shim_hook_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemFreeAsync_ptsz, dptr, s);
    if (r == CUDA_SUCCESS)
        mem_untrack(dptr);
    return r;
}

/* --- virtual memory management: handles, then mappings ------------------- */

/*
 * A cuMemCreate handle is one piece of physical memory however many times it
 * is mapped: cuMemCreate allocates it, and the driver frees it once it is
 * released and its last mapping is gone (cuda.h, cuMemRelease). Its bytes
 * count once, from its creation to then; a handle created before the shim
 * saw it counts from its first mapping. So memory mapped into sparse arrays
 * (cuMemMapArrayAsync, not hooked) is counted through its handle; a handle
 * released while an array still maps it is uncounted at its release. Each
 * mapping is a region of its own for lookups, inserted uncounted; the bytes
 * are counted here.
 * LOCKING: vmm_lock, then the region table's lock inside it.
 */
typedef struct vmm_handle {
    CUmemGenericAllocationHandle h;
    uint64_t size;
    uint32_t nmaps; /* mappings now */
    bool released;  /* cuMemRelease'd: forgotten at its last unmap */
    bool created;   /* its cuMemCreate was seen */
    bool counted;   /* its bytes are in the region table's VMM bytes */
    uint8_t loc_type;
} vmm_handle_t;

typedef struct vmm_map {
    uint64_t base, size;
    CUmemGenericAllocationHandle h;
} vmm_map_t;

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static vmm_handle_t *vmm_handles;
static size_t vmm_n, vmm_cap;
static vmm_map_t *vmm_maps;
static size_t vmm_nmaps, vmm_mapcap;

/* The record of handle h, or NULL. vmm_lock held. */
static vmm_handle_t *vmm_find(CUmemGenericAllocationHandle h)
{
    for (size_t i = 0; i < vmm_n; i++)
        if (vmm_handles[i].h == h)
            return &vmm_handles[i];
    return NULL;
}

/* A record for h (size: the bytes it counts); NULL when out of memory. vmm_lock held. */
static vmm_handle_t *vmm_add(CUmemGenericAllocationHandle h, uint64_t size, uint8_t loc)
{
    if (vmm_n == vmm_cap && com_array_grow((void **)&vmm_handles, &vmm_cap, vmm_n + 1,
                                           sizeof(*vmm_handles), 64, SIZE_MAX) != GMUX_OK)
        return NULL;
    vmm_handles[vmm_n] = (vmm_handle_t){.h = h, .size = size, .loc_type = loc};
    return &vmm_handles[vmm_n++];
}

static void vmm_drop(vmm_handle_t *e)
{
    *e = vmm_handles[--vmm_n];
}

/* Counts or uncounts e's bytes as its state says (held: created and not
 * released, or mapped); forgets it once released and unmapped. The bytes
 * counted change by what *delta_p gets (may be NULL: counted at once).
 * vmm_lock held. */
static void vmm_settle(vmm_handle_t *e, int64_t *delta_p)
{
    bool held = (e->created && !e->released) || e->nmaps > 0;
    int64_t d = held == e->counted ? 0 : held ? (int64_t)e->size : -(int64_t)e->size;
    e->counted = held;
    if (delta_p)
        *delta_p += d;
    else if (d)
        shim_regions_count_bytes(&shim_state.regions, SHIM_REGION_VMM, d);
    if (e->released && e->nmaps == 0)
        vmm_drop(e);
}

CUresult shim_hook_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                               const CUmemAllocationProp *prop, unsigned long long flags)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemCreate, handle, size, prop, flags);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&vmm_lock);
    vmm_handle_t *e = vmm_add(*handle, size, (uint8_t)prop->location.type);
    if (e) {
        e->created = true;
        vmm_settle(e, NULL);
    } else {
        COM_WARN(SHIM, "cannot track VMM handle %#llx: its mappings count their own sizes",
                 (unsigned long long)*handle);
    }
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

CUresult shim_hook_cuMemRelease(CUmemGenericAllocationHandle handle)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemRelease, handle);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&vmm_lock);
    vmm_handle_t *e = vmm_find(handle);
    if (e) {
        e->released = true; /* the memory lasts until its last unmap */
        vmm_settle(e, NULL);
    }
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

CUresult shim_hook_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                            CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemMap, ptr, size, offset, handle, flags);
    if (r != CUDA_SUCCESS || !size)
        return r;
    pthread_mutex_lock(&vmm_lock);
    vmm_handle_t *e = vmm_find(handle);
    if (!e) /* created before the shim saw it: the mapping stands for the handle */
        e = vmm_add(handle, size, 0);
    bool room = e && (vmm_nmaps < vmm_mapcap ||
                      com_array_grow((void **)&vmm_maps, &vmm_mapcap, vmm_nmaps + 1,
                                     sizeof(*vmm_maps), 64, SIZE_MAX) == GMUX_OK);
    uint8_t loc = e ? e->loc_type : 0;
    /* an untracked mapping counts its own size, like any allocation, unless
     * its handle counts (created: from then on) */
    uint8_t uncounted = e && (room || e->created) ? SHIM_REGION_UNCOUNTED : 0;
    if (!room)
        e = NULL;
    if (shim_regions_insert_in(&shim_state.regions, (uint64_t)ptr, size, SHIM_REGION_VMM, loc, 0,
                               uncounted) != GMUX_OK)
        COM_WARN(SHIM, "cannot track mapping %#llx (+%zu)", (unsigned long long)ptr, size);
    if (e) {
        vmm_maps[vmm_nmaps++] = (vmm_map_t){.base = ptr, .size = size, .h = handle};
        e->nmaps++;
        vmm_settle(e, NULL);
    }
    pthread_mutex_unlock(&vmm_lock);
    shim_record_alloc((uint64_t)ptr, size);
    SHIM_STAT_ADD(pinned_allocs, 1);
    SHIM_STAT_ADD(pinned_bytes, size);
    return r;
}

CUresult shim_hook_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemUnmap, ptr, size);
    if (r != CUDA_SUCCESS)
        return r;
    uint64_t end = ptr + size < ptr ? UINT64_MAX : ptr + size;
    int64_t gone = 0;
    shim_record_free_range((uint64_t)ptr, size);
    pthread_mutex_lock(&vmm_lock);
    for (size_t i = 0; i < vmm_nmaps;) {
        const vmm_map_t *m = &vmm_maps[i];
        if (!(m->base < end && ptr < m->base + m->size)) {
            i++;
            continue;
        }
        vmm_handle_t *e = vmm_find(m->h);
        if (e) {
            e->nmaps--;
            vmm_settle(e, &gone);
        }
        vmm_maps[i] = vmm_maps[--vmm_nmaps];
    }
    SHIM_STAT_ADD(frees, shim_regions_remove_range(&shim_state.regions, ptr, size));
    shim_regions_count_bytes(&shim_state.regions, SHIM_REGION_VMM, gone);
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

/* --- the task's view of device memory ------------------------------------ */

CUresult shim_hook_cuMemGetInfo_v2(size_t *free_p, size_t *total_p)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemGetInfo_v2, free_p, total_p);
    if (r != CUDA_SUCCESS || !shim_state.budget || !free_p || !total_p)
        return r;
    uint64_t total = *total_p < shim_state.budget ? *total_p : shim_state.budget;
    uint64_t used = shim_regions_total_bytes(&shim_state.regions);
    uint64_t left = used < total ? total - used : 0;
    *total_p = (size_t)total;
    *free_p = (size_t)(left < *free_p ? left : *free_p);
    return r;
}
