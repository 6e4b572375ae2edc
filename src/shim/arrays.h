/*
 * CUDA arrays: the memory of cuArrayCreate, cuArray3DCreate and
 * cuMipmappedArrayCreate (textures, surfaces). It has no address a kernel
 * takes as an argument and cannot be made managed, so the shim tracks it as
 * pinned: counted (pinned_allocs, pinned_bytes, and the region table's
 * SHIM_REGION_ARRAY bytes, hence the budgeted cuMemGetInfo and the STATS
 * gmuxd gets) from a successful create to its destroy or its context's
 * destruction, never migrated, never in the working set announced.
 *
 * The bytes are the descriptor's (shim_array_bytes): what the driver adds
 * for alignment and tiling is not seen. Sparse and deferred-mapping arrays
 * hold no memory of their own: not counted here. Theirs is cuMemCreate
 * handles mapped into them with cuMemMapArrayAsync (not hooked), counted
 * through the handles from their creation (hooks_mem.c). Creates that fail count nothing; a destroy
 * of a handle the shim never saw created passes through and uncounts nothing.
 *
 * Thread-safety: any thread. LOCKING: one mutex, taken after the driver
 * call (at a context's destruction inside hooks_ctx.c's primary-context
 * lock), then the region table's lock inside it. Nothing here runs on the
 * launch path.
 */
#ifndef SHIM_ARRAYS_H
#define SHIM_ARRAYS_H

#include <stdint.h>

#include <cuda.h>

/* The bytes of an array of descriptor d with `levels` mipmap levels (1: a
 * plain array): width x height x depth x channels x bytes per channel,
 * height and depth at least 1, summed over the levels, each halving every
 * dimension but the layers of a layered or cubemap array (its depth). 0
 * for a sparse or deferred-mapping array; saturates at UINT64_MAX. */
uint64_t shim_array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels);

/* Forgets (uncounts) every array created in ctx, destroyed with it. */
void shim_arrays_forget_ctx(CUcontext ctx);

#endif /* SHIM_ARRAYS_H */
