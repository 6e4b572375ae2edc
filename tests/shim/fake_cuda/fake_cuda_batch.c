/*
 * The driver double's batched copies: CUDA 12.8's cuMemcpyBatchAsync and
 * cuMemcpy3DBatchAsync (with failIdx) and CUDA 13's cuMemcpyBatchAsync_v2
 * and cuMemcpy3DBatchAsync_v2 (without), each also _ptsz. Every copy is
 * checked and logged first, one entry each (a 1D copy as (destination,
 * source, bytes, stream), a 3D copy as a 3D copy is, fake_cuda_copy.c), and
 * the whole batch refused if one is wrong, or its layout, flags or stream
 * are (the legacy stream: "must not be legacy NULL stream"); else each runs,
 * or is captured as a copy node, in turn. The only code cuda.h lists for
 * them is CUDA_ERROR_INVALID_VALUE; CUDA_ERROR_NOT_SUPPORTED for an array
 * operand is the double's (it has no arrays). Through the 12.8 forms,
 * *failIdx (where given) is set on a refusal: the index of the first wrong
 * copy, or SIZE_MAX when the error is the batch's own (CUDA 12.8's
 * documentation of failIdx; CUDA 13's cuda.h no longer has it); a batch
 * taken leaves it as it was.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fake_cuda_internal.h"

bool fake_batch_idx_ok(size_t count, const size_t *idx, size_t n)
{
    if (!idx || !n || n > count || idx[0] != 0)
        return false;
    for (size_t k = 1; k < n; k++)
        if (idx[k] <= idx[k - 1] || idx[k] >= count)
            return false;
    return true;
}

/* Whether a source access order is one cuda.h defines (not INVALID). */
static bool fake_order_ok(CUmemcpySrcAccessOrder o)
{
    return o >= CU_MEMCPY_SRC_ACCESS_ORDER_STREAM && o <= CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

static void fake_fail_at(size_t *fail, size_t i)
{
    if (fail)
        *fail = i;
}

/* One side of a batched 3D copy as a side of CUDA_MEMCPY3D: pointers only
 * (elements of 1 byte; a row length or layer height of 0 is the copy's). */
static bool fake_batch_side(const CUmemcpy3DOperand *o, const CUextent3D *e, CUdeviceptr *ptr,
                            size_t *pitch, size_t *height)
{
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER)
        return false;
    *ptr = o->op.ptr.ptr;
    *pitch = o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width;
    *height = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
    return true;
}

/* The batch's copy i as a CUDA_MEMCPY3D: CUDA_ERROR_NOT_SUPPORTED for an
 * array, CUDA_ERROR_INVALID_VALUE for a zero extent, a row length or layer
 * height below the copy's, or no valid source access order. */
static CUresult fake_batch_op(const CUDA_MEMCPY3D_BATCH_OP *op, CUDA_MEMCPY3D *c)
{
    const CUextent3D *e = &op->extent;
    *c = (CUDA_MEMCPY3D){.srcMemoryType = CU_MEMORYTYPE_UNIFIED,
                         .dstMemoryType = CU_MEMORYTYPE_UNIFIED,
                         .WidthInBytes = e->width,
                         .Height = e->height,
                         .Depth = e->depth};
    if (!fake_batch_side(&op->src, e, &c->srcDevice, &c->srcPitch, &c->srcHeight) ||
        !fake_batch_side(&op->dst, e, &c->dstDevice, &c->dstPitch, &c->dstHeight))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!e->width || !e->height || !e->depth || c->srcPitch < e->width || c->dstPitch < e->width ||
        c->srcHeight < e->height || c->dstHeight < e->height || !fake_order_ok(op->srcAccessOrder))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* A batch of 3D copies; fail: the 12.8 form's failIdx (NULL: the 13.0 form,
 * or none given). */
static CUresult fake_copy3d_batch(const char *fn, size_t n, CUDA_MEMCPY3D_BATCH_OP *ops,
                                  size_t *fail, unsigned long long flags, CUstream s, int ptsz)
{
    if (!n || !ops || flags || !fake_stream_of(s, ptsz)) {
        fake_fail_at(fail, SIZE_MAX);
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult r = CUDA_SUCCESS;
    size_t logged[64]; /* the first 64 copies' log entries, placed in the stream's order */
    for (size_t i = 0; i < n; i++) {
        CUDA_MEMCPY3D c;
        uint64_t d0 = 0, s0 = 0;
        CUresult ri = fake_batch_op(&ops[i], &c);
        if (ri == CUDA_SUCCESS)
            ri = fake_copy3d_check(&c, &d0, &s0);
        fake_rec(fn, d0, s0, (uint64_t)c.WidthInBytes * c.Height * c.Depth, U(s));
        if (i < 64)
            logged[i] = fake_rec_last();
        if (r == CUDA_SUCCESS && ri != CUDA_SUCCESS) {
            r = ri;
            fake_fail_at(fail, i);
        }
    }
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        CUDA_MEMCPY3D c;
        (void)fake_batch_op(&ops[i], &c);
        r = fake_copy3d_queue(&c, s, ptsz, i < 64 ? logged[i] : SIZE_MAX);
    }
    return r;
}

CUresult fk_cuMemcpy3DBatchAsync_v2(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                    CUstream s)
{
    return fake_copy3d_batch(__func__ + 3, n, ops, NULL, flags, s, 0);
}

CUresult fk_cuMemcpy3DBatchAsync_v2_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops,
                                         unsigned long long flags, CUstream s)
{
    return fake_copy3d_batch(__func__ + 3, n, ops, NULL, flags, s, 1);
}

CUresult fk_cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                                 unsigned long long flags, CUstream s)
{
    return fake_copy3d_batch(__func__ + 3, n, ops, fail, flags, s, 0);
}

CUresult fk_cuMemcpy3DBatchAsync_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                                      unsigned long long flags, CUstream s)
{
    return fake_copy3d_batch(__func__ + 3, n, ops, fail, flags, s, 1);
}

/* Whether a copy's attributes are valid: a source access order cuda.h
 * defines, and flags of CUmemcpyFlags only (the double's reading of "see
 * CUmemcpyFlags"); location hints are hints, not checked. */
static bool fake_attr_ok(const CUmemcpyAttributes *a)
{
    return fake_order_ok(a->srcAccessOrder) &&
           (a->flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE) == 0;
}

/*
 * A batch of 1D copies: copy i copies sizes[i] bytes from srcs[i] to
 * dsts[i] with attrs[k], the last k whose attrsIdxs[k] <= i (laid out as a
 * prefetch batch's locations: attrsIdxs[0] 0, strictly ascending, all below
 * count). A copy is wrong if its attributes are, or an address is 0.
 */
static CUresult fake_copy_batch(const char *fn, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                size_t count, CUmemcpyAttributes *attrs, size_t *attr_idx,
                                size_t nattrs, size_t *fail, CUstream s, int ptsz)
{
    if (!dsts || !srcs || !sizes || !count || !attrs ||
        !fake_batch_idx_ok(count, attr_idx, nattrs) || !fake_stream_of(s, ptsz)) {
        fake_fail_at(fail, SIZE_MAX);
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult r = CUDA_SUCCESS;
    size_t logged[64]; /* the first 64 copies' log entries, placed in the stream's order */
    size_t k = 0;      /* the attributes of copy i */
    for (size_t i = 0; i < count; i++) {
        if (k + 1 < nattrs && attr_idx[k + 1] == i)
            k++;
        fake_rec(fn, dsts[i], srcs[i], sizes[i], U(s));
        if (i < 64)
            logged[i] = fake_rec_last();
        if (r == CUDA_SUCCESS && (!fake_attr_ok(&attrs[k]) || !dsts[i] || !srcs[i])) {
            r = CUDA_ERROR_INVALID_VALUE;
            fake_fail_at(fail, i);
        }
    }
    CUgraph g = r == CUDA_SUCCESS ? fake_capture_graph(s, ptsz) : NULL;
    for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++) {
        if (g) {
            r = fake_capture_op(g, FAKE_NODE_MEMCPY, dsts[i], sizes[i], srcs[i]);
            continue;
        }
        if (i < 64)
            fake_order_work(fake_stream_of(s, ptsz), logged[i]);
        fake_copy_run(FAKE_NODE_MEMCPY, dsts[i], sizes[i], srcs[i]);
    }
    return r;
}

CUresult fk_cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                  CUmemcpyAttributes *attrs, size_t *attr_idx, size_t nattrs,
                                  CUstream s)
{
    return fake_copy_batch(__func__ + 3, dsts, srcs, sizes, count, attrs, attr_idx, nattrs, NULL, s,
                           0);
}

CUresult fk_cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                       size_t count, CUmemcpyAttributes *attrs, size_t *attr_idx,
                                       size_t nattrs, CUstream s)
{
    return fake_copy_batch(__func__ + 3, dsts, srcs, sizes, count, attrs, attr_idx, nattrs, NULL, s,
                           1);
}

CUresult fk_cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                               CUmemcpyAttributes *attrs, size_t *attr_idx, size_t nattrs,
                               size_t *fail, CUstream s)
{
    return fake_copy_batch(__func__ + 3, dsts, srcs, sizes, count, attrs, attr_idx, nattrs, fail, s,
                           0);
}

CUresult fk_cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                    size_t count, CUmemcpyAttributes *attrs, size_t *attr_idx,
                                    size_t nattrs, size_t *fail, CUstream s)
{
    return fake_copy_batch(__func__ + 3, dsts, srcs, sizes, count, attrs, attr_idx, nattrs, fail, s,
                           1);
}
