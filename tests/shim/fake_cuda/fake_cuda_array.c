/*
 * CUDA arrays in the driver double: cuArrayCreate_v2, cuArray3DCreate_v2
 * and cuMipmappedArrayCreate make a host block of the descriptor's size
 * (width x height x depth x channels x bytes per channel, height and depth
 * at least 1; a layered or cubemap array's depth is its layers or faces;
 * a mipmapped array the sum of its levels, each half the one before in
 * every dimension but the layers), counted as device memory like any
 * allocation (cuMemGetInfo's free) and freed with its context. Only the
 * formats of one size per channel are accepted: others fail
 * CUDA_ERROR_INVALID_VALUE, as do zero widths, channel counts other than
 * 1, 2 and 4, and zero mipmap levels. The handle is the block's address;
 * a destroy of anything else fails CUDA_ERROR_INVALID_VALUE.
 *
 * cuMemMapArrayAsync (and _ptsz) maps nothing: it checks that every entry
 * is an array or mipmapped array with a map or unmap of a generic handle
 * (CUDA_ERROR_INVALID_VALUE otherwise) and succeeds.
 *
 * Logged: create (handle or 0, bytes, format, channels), destroy (handle);
 * cuMemMapArrayAsync, one entry per map info (array, handle, operation,
 * stream).
 */
#include "fake_cuda_internal.h"

#include <stddef.h>
#include <stdint.h>

/* The formats the double takes, with the bytes of one channel. */
static const struct {
    CUarray_format fmt;
    uint8_t bytes;
} fake_formats[] = {
    {CU_AD_FORMAT_UNSIGNED_INT8, 1},  {CU_AD_FORMAT_SIGNED_INT8, 1},
    {CU_AD_FORMAT_UNORM_INT8X1, 1},   {CU_AD_FORMAT_UNORM_INT8X2, 1},
    {CU_AD_FORMAT_UNORM_INT8X4, 1},   {CU_AD_FORMAT_SNORM_INT8X1, 1},
    {CU_AD_FORMAT_SNORM_INT8X2, 1},   {CU_AD_FORMAT_SNORM_INT8X4, 1},
    {CU_AD_FORMAT_UNSIGNED_INT16, 2}, {CU_AD_FORMAT_SIGNED_INT16, 2},
    {CU_AD_FORMAT_HALF, 2},           {CU_AD_FORMAT_UNORM_INT16X1, 2},
    {CU_AD_FORMAT_UNORM_INT16X2, 2},  {CU_AD_FORMAT_UNORM_INT16X4, 2},
    {CU_AD_FORMAT_SNORM_INT16X1, 2},  {CU_AD_FORMAT_SNORM_INT16X2, 2},
    {CU_AD_FORMAT_SNORM_INT16X4, 2},  {CU_AD_FORMAT_UNSIGNED_INT32, 4},
    {CU_AD_FORMAT_SIGNED_INT32, 4},   {CU_AD_FORMAT_FLOAT, 4},
};

/* Bytes of one channel of fmt; 0: a format the double does not take. */
static uint64_t fake_channel_bytes(CUarray_format fmt)
{
    for (size_t i = 0; i < sizeof(fake_formats) / sizeof(fake_formats[0]); i++)
        if (fake_formats[i].fmt == fmt)
            return fake_formats[i].bytes;
    return 0;
}

/* The bytes of d's `levels` levels into *bytes_p; CUDA_ERROR_INVALID_VALUE
 * for what the double refuses (an overflow too). */
static CUresult fake_array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels,
                                 uint64_t *bytes_p)
{
    uint64_t texel = fake_channel_bytes(d->Format) * d->NumChannels;
    if (!d->Width || !texel ||
        (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4) || !levels ||
        levels > 32)
        return CUDA_ERROR_INVALID_VALUE;
    int layers = (d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    uint64_t sum = 0, w = d->Width, h = d->Height ? d->Height : 1, z = d->Depth ? d->Depth : 1;
    for (unsigned l = 0; l < levels; l++) {
        uint64_t level;
        if (__builtin_mul_overflow(w, h, &level) || __builtin_mul_overflow(level, z, &level) ||
            __builtin_mul_overflow(level, texel, &level) ||
            __builtin_add_overflow(sum, level, &sum))
            return CUDA_ERROR_INVALID_VALUE;
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : 1;
        z = layers || z == 1 ? z : z / 2;
    }
    *bytes_p = sum;
    return CUDA_SUCCESS;
}

/* The create of a kind (FAKE_ARRAY_*) called as fn. */
static CUresult fake_array_make(const char *fn, void *handle_p, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                unsigned levels, int kind)
{
    uint64_t bytes = 0;
    CUdeviceptr p = 0;
    CUresult r = handle_p && d ? fake_array_bytes(d, levels, &bytes) : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = fake_alloc_array(&p, (size_t)bytes, kind);
    if (r == CUDA_SUCCESS)
        *(void **)handle_p = (void *)(uintptr_t)p;
    fake_rec(fn, r == CUDA_SUCCESS ? p : 0, bytes, d ? (uint64_t)d->Format : 0,
             d ? d->NumChannels : 0);
    return r;
}

CUresult fk_cuArrayCreate(CUarray *a, const void *desc)
{
    (void)a;
    (void)desc;
    REC0();
    return CUDA_ERROR_NOT_SUPPORTED; /* 32-bit sizes: only there to be resolved */
}

CUresult fk_cuArray3DCreate(CUarray *a, const void *desc)
{
    (void)a;
    (void)desc;
    REC0();
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fk_cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    CUDA_ARRAY3D_DESCRIPTOR d = {0};
    if (desc)
        d = (CUDA_ARRAY3D_DESCRIPTOR){.Width = desc->Width,
                                      .Height = desc->Height,
                                      .Format = desc->Format,
                                      .NumChannels = desc->NumChannels};
    return fake_array_make(__func__ + 3, a, desc ? &d : NULL, 1, FAKE_ARRAY_PLAIN);
}

CUresult fk_cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    return fake_array_make(__func__ + 3, a, desc, 1, FAKE_ARRAY_PLAIN);
}

CUresult fk_cuMipmappedArrayCreate(CUmipmappedArray *m, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                   unsigned int levels)
{
    return fake_array_make(__func__ + 3, m, desc, levels, FAKE_ARRAY_MIPMAPPED);
}

CUresult fk_cuArrayDestroy(CUarray a)
{
    REC(U(a), 0, 0, 0);
    return fake_free_array((CUdeviceptr)U(a), FAKE_ARRAY_PLAIN);
}

CUresult fk_cuMipmappedArrayDestroy(CUmipmappedArray m)
{
    REC(U(m), 0, 0, 0);
    return fake_free_array((CUdeviceptr)U(m), FAKE_ARRAY_MIPMAPPED);
}

static CUresult fake_map_array(const char *name, CUarrayMapInfo *list, unsigned count, CUstream s)
{
    if (!list || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++) {
        const CUarrayMapInfo *m = &list[i];
        if ((m->resourceType != CU_RESOURCE_TYPE_ARRAY &&
             m->resourceType != CU_RESOURCE_TYPE_MIPMAPPED_ARRAY) ||
            (m->memOperationType != CU_MEM_OPERATION_TYPE_MAP &&
             m->memOperationType != CU_MEM_OPERATION_TYPE_UNMAP) ||
            m->memHandleType != CU_MEM_HANDLE_TYPE_GENERIC)
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned i = 0; i < count; i++)
        fake_rec(name, (uint64_t)(uintptr_t)list[i].resource.array, list[i].memHandle.memHandle,
                 (uint64_t)list[i].memOperationType, (uint64_t)(uintptr_t)s);
    return CUDA_SUCCESS;
}

CUresult fk_cuMemMapArrayAsync(CUarrayMapInfo *list, unsigned count, CUstream s)
{
    return fake_map_array("cuMemMapArrayAsync", list, count, s);
}

CUresult fk_cuMemMapArrayAsync_ptsz(CUarrayMapInfo *list, unsigned count, CUstream s)
{
    return fake_map_array("cuMemMapArrayAsync_ptsz", list, count, s);
}
