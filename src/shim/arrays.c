/*
 * CUDA array hooks (arrays.h): each array the driver created is recorded
 * with its bytes and context, its bytes added to the region table's
 * SHIM_REGION_ARRAY count, and taken out again at its destroy or its
 * context's. Arrays have no address range, so they are counts, never
 * regions: nothing on the launch path looks at them.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/array.h"
#include "common/log.h"

#include "shim/arrays.h"
#include "shim/shim.h"
#include "shim/stats.h"

typedef struct shim_array {
    uint64_t handle; /* CUarray or CUmipmappedArray */
    uint64_t bytes;
    uint64_t ctx; /* CUcontext current at its creation; 0: unknown */
    bool mipmapped;
} shim_array_t;

static pthread_mutex_t array_lock = PTHREAD_MUTEX_INITIALIZER;
static shim_array_t *arrays;
static size_t array_n, array_cap;

/* Bytes of one channel of a texel of fmt (the video formats', whose
 * samples are 8 to 16 bits, taken as 1); 0 for a block-compressed format
 * (array_block_bytes). */
static uint64_t array_channel_bytes(CUarray_format fmt)
{
    switch (fmt) {
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    case CU_AD_FORMAT_BC1_UNORM ... CU_AD_FORMAT_BC7_UNORM_SRGB:
        return 0;
    default:
        return 1;
    }
}

/* Bytes of one 4x4 block of a block-compressed format: BC1 and BC4 8, the others 16. */
static uint64_t array_block_bytes(CUarray_format fmt)
{
    bool eight = fmt == CU_AD_FORMAT_BC1_UNORM || fmt == CU_AD_FORMAT_BC1_UNORM_SRGB ||
                 fmt == CU_AD_FORMAT_BC4_UNORM || fmt == CU_AD_FORMAT_BC4_SNORM;
    return eight ? 8 : 16;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

uint64_t shim_array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
        return 0;
    uint64_t texel = array_channel_bytes(d->Format) * d->NumChannels;
    bool layers = (d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    uint64_t w = d->Width, h = d->Height ? d->Height : 1, z = d->Depth ? d->Depth : 1;
    uint64_t sum = 0;
    for (unsigned l = 0; l < levels && w; l++) {
        uint64_t plane =
            texel ? mul_sat(mul_sat(w, h), texel)
                  : mul_sat(mul_sat((w + 3) / 4, (h + 3) / 4), array_block_bytes(d->Format));
        uint64_t level = mul_sat(plane, z);
        sum = sum + level < sum ? UINT64_MAX : sum + level;
        if (w == 1 && h == 1 && (layers || z == 1))
            break; /* every level past the last is 1 x 1 x 1: the driver allows none */
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : 1;
        z = layers || z == 1 ? z : z / 2;
    }
    return sum;
}

/* The record of handle (of an array, or a mipmapped array), or NULL. array_lock held. */
static shim_array_t *array_find(uint64_t handle, bool mipmapped)
{
    for (size_t i = 0; i < array_n; i++)
        if (arrays[i].handle == handle && arrays[i].mipmapped == mipmapped)
            return &arrays[i];
    return NULL;
}

/* Takes out the record e (its bytes uncounted). array_lock held. */
static void array_drop(shim_array_t *e)
{
    shim_regions_count_bytes(&shim_state.regions, SHIM_REGION_ARRAY, -(int64_t)e->bytes);
    *e = arrays[--array_n];
}

/* A create of the driver succeeded: handle holds bytes. */
static void array_track(uint64_t handle, bool mipmapped, uint64_t bytes)
{
    if (!bytes)
        return;
    CUcontext ctx = NULL;
    if (SHIM_CALL(cuCtxGetCurrent, &ctx) != CUDA_SUCCESS)
        ctx = NULL;
    pthread_mutex_lock(&array_lock);
    shim_array_t *e = array_find(handle, mipmapped);
    if (e) /* gone through a path the shim does not see, its handle given out again */
        array_drop(e);
    if (array_n == array_cap && com_array_grow((void **)&arrays, &array_cap, array_n + 1,
                                               sizeof(*arrays), 64, SIZE_MAX) != GMUX_OK) {
        pthread_mutex_unlock(&array_lock);
        COM_WARN(SHIM, "cannot track CUDA array %#llx (%llu bytes): not counted",
                 (unsigned long long)handle, (unsigned long long)bytes);
        return;
    }
    arrays[array_n++] = (shim_array_t){handle, bytes, (uint64_t)(uintptr_t)ctx, mipmapped};
    shim_regions_count_bytes(&shim_state.regions, SHIM_REGION_ARRAY, (int64_t)bytes);
    pthread_mutex_unlock(&array_lock);
    SHIM_STAT_ADD(pinned_allocs, 1);
    SHIM_STAT_ADD(pinned_bytes, bytes);
}

/* A destroy of the driver succeeded. */
static void array_untrack(uint64_t handle, bool mipmapped)
{
    pthread_mutex_lock(&array_lock);
    shim_array_t *e = array_find(handle, mipmapped);
    if (e)
        array_drop(e);
    pthread_mutex_unlock(&array_lock);
    if (e)
        SHIM_STAT_ADD(frees, 1);
}

void shim_arrays_forget_ctx(CUcontext ctx)
{
    uint64_t c = (uint64_t)(uintptr_t)ctx;
    size_t gone = 0;
    pthread_mutex_lock(&array_lock);
    for (size_t i = 0; c && i < array_n;) {
        if (arrays[i].ctx == c) {
            array_drop(&arrays[i]);
            gone++;
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&array_lock);
    SHIM_STAT_ADD(frees, gone);
}

CUresult shim_hook_cuArrayCreate_v2(CUarray *handle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuArrayCreate_v2, handle, desc);
    if (r == CUDA_SUCCESS && handle && desc) {
        CUDA_ARRAY3D_DESCRIPTOR d = {.Width = desc->Width,
                                     .Height = desc->Height,
                                     .Format = desc->Format,
                                     .NumChannels = desc->NumChannels};
        array_track((uint64_t)(uintptr_t)*handle, false, shim_array_bytes(&d, 1));
    }
    return r;
}

CUresult shim_hook_cuArray3DCreate_v2(CUarray *handle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuArray3DCreate_v2, handle, desc);
    if (r == CUDA_SUCCESS && handle && desc)
        array_track((uint64_t)(uintptr_t)*handle, false, shim_array_bytes(desc, 1));
    return r;
}

CUresult shim_hook_cuMipmappedArrayCreate(CUmipmappedArray *handle,
                                          const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned int levels)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMipmappedArrayCreate, handle, desc, levels);
    if (r == CUDA_SUCCESS && handle && desc)
        array_track((uint64_t)(uintptr_t)*handle, true, shim_array_bytes(desc, levels));
    return r;
}

CUresult shim_hook_cuArrayDestroy(CUarray handle)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuArrayDestroy, handle);
    if (r == CUDA_SUCCESS)
        array_untrack((uint64_t)(uintptr_t)handle, false);
    return r;
}

CUresult shim_hook_cuMipmappedArrayDestroy(CUmipmappedArray handle)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMipmappedArrayDestroy, handle);
    if (r == CUDA_SUCCESS)
        array_untrack((uint64_t)(uintptr_t)handle, true);
    return r;
}
