/*
 * The program's own prefetches: cuMemPrefetchAsync at the CUDA 8.0 ABI (a
 * device ordinal, CU_DEVICE_CPU for the host) and the 12.2 one (a location),
 * each also _ptsz, and CUDA 13's cuMemPrefetchBatchAsync(_ptsz). Each goes to
 * the driver unchanged; once the driver took it, the policy's record of what
 * it prefetched follows it (shim_policy_program_prefetched): a region the
 * program moved (even in part) to the host is prefetched again before the
 * next launch that uses it, and one it moved whole to the device the shim
 * prefetches to is not. A prefetch recorded into a graph (its stream being
 * captured) moves nothing yet: it is kept with that graph, and each launch
 * of the graph tells the policy (graph.h).
 *
 * CUDA 13's discards (cuMemDiscardBatchAsync, cuMemDiscardAndPrefetchBatchAsync,
 * each also _ptsz) are followed too. A discard gives up a range's contents
 * and lets the driver free its pages (cuda.h: "can also help reduce memory
 * pressure"); what is on the device afterwards is not known, so a discarded
 * region counts as moved away: the next launch that uses it prefetches it
 * (cuda.h: a prefetch undoes a discard), rather than fault it in. A discard
 * followed by a prefetch is, per cuda.h, the two in turn: it counts as the
 * prefetch alone.
 */
#include <stdbool.h>

#include "shim/graph.h"
#include "shim/policy.h"
#include "shim/shim.h"

/* Where a prefetch went: the device of the current context, or elsewhere. */
typedef enum { TO_ELSEWHERE, TO_DEVICE } prefetch_dest_t;

static prefetch_dest_t dest_of_device(CUdevice dev)
{
    CUdevice cur = 0;
    if (dev == CU_DEVICE_CPU || dev < 0 || SHIM_CALL(cuCtxGetDevice, &cur) != CUDA_SUCCESS ||
        cur != dev)
        return TO_ELSEWHERE;
    return TO_DEVICE;
}

static prefetch_dest_t dest_of(CUmemLocation loc)
{
    return loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? dest_of_device(loc.id) : TO_ELSEWHERE;
}

/* Records a prefetch the driver took. One recorded into a graph (s is being
 * captured) is kept with that graph; where that graph is not known, a move
 * to the device counts for nothing and one to the host at once (the region
 * is prefetched again: one prefetch more at worst). *cap: whether s
 * captures, -1 not asked yet, and *c what the driver says of the capture,
 * asked after the driver took the prefetch, so that its last node is the
 * prefetch's (a batch asks once, batch_capture). */
static void moved(CUdeviceptr p, size_t len, prefetch_dest_t d, CUstream s, bool per_thread,
                  int *cap, shim_graph_capture_t *c)
{
    if (*cap < 0)
        *cap = shim_graph_capture_of(s, per_thread, c);
    if (*cap && (shim_graph_note_prefetch(c, p, len, d == TO_DEVICE) || d == TO_DEVICE))
        return;
    shim_policy_program_prefetched((uint64_t)p, (uint64_t)len, d == TO_DEVICE,
                                   shim_policy_stream_key(s, per_thread));
}

static void one_moved(CUdeviceptr p, size_t len, prefetch_dest_t d, CUstream s, bool per_thread)
{
    int cap = -1;
    shim_graph_capture_t c = {0};
    moved(p, len, d, s, per_thread, &cap, &c);
}

/* Only the proactive policy keeps a record of what it prefetched. */
static bool tracking(void)
{
    return shim_state.mode == SHIM_MODE_PROACTIVE;
}

CUresult shim_hook_cuMemPrefetchAsync(CUdeviceptr p, size_t len, CUdevice dev, CUstream s)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemPrefetchAsync, p, len, dev, s);
    if (r == CUDA_SUCCESS && tracking())
        one_moved(p, len, dest_of_device(dev), s, false);
    return r;
}

CUresult shim_hook_cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t len, CUdevice dev, CUstream s)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemPrefetchAsync_ptsz, p, len, dev, s);
    if (r == CUDA_SUCCESS && tracking())
        one_moved(p, len, dest_of_device(dev), s, true);
    return r;
}

CUresult shim_hook_cuMemPrefetchAsync_v2(CUdeviceptr p, size_t len, CUmemLocation loc,
                                         unsigned int flags, CUstream s)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemPrefetchAsync_v2, p, len, loc, flags, s);
    if (r == CUDA_SUCCESS && tracking())
        one_moved(p, len, dest_of(loc), s, false);
    return r;
}

CUresult shim_hook_cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t len, CUmemLocation loc,
                                              unsigned int flags, CUstream s)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuMemPrefetchAsync_v2_ptsz, p, len, loc, flags, s);
    if (r == CUDA_SUCCESS && tracking())
        one_moved(p, len, dest_of(loc), s, true);
    return r;
}

/* What a batch of count ranges on s (taken by the driver) was captured
 * into, where it was: how many nodes it became is not documented, so the
 * nodes it added to the capture's graph are found from before's, the
 * graph's nodes asked before it (graph.h). */
static int batch_capture(CUstream s, bool per_thread, size_t count,
                         const shim_graph_nodes_t *before, shim_graph_capture_t *c)
{
    *c = (shim_graph_capture_t){0};
    int cap = shim_graph_capture_of(s, per_thread, c);
    if (cap)
        shim_graph_batch_nodes(c, before, count);
    return cap;
}

/* A batch's ranges: range i goes to locs[k], the last k whose idx[k] <= i
 * (idx ascending: each location's first range). */
static void batch_moved(CUdeviceptr *ptrs, size_t *sizes, size_t count, CUmemLocation *locs,
                        size_t *idx, size_t nlocs, CUstream s, bool per_thread,
                        const shim_graph_nodes_t *before)
{
    if (!ptrs || !sizes || !locs || !idx || !nlocs)
        return;
    size_t k = 0;
    shim_graph_capture_t c;
    int cap = batch_capture(s, per_thread, count, before, &c);
    prefetch_dest_t d = dest_of(locs[0]);
    for (size_t i = 0; i < count; i++) {
        while (k + 1 < nlocs && idx[k + 1] <= i)
            d = dest_of(locs[++k]);
        moved(ptrs[i], sizes[i], d, s, per_thread, &cap, &c);
    }
}

CUresult shim_hook_cuMemPrefetchBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                           CUmemLocation *locs, size_t *idx, size_t nlocs,
                                           unsigned long long flags, CUstream s)
{
    shim_ensure_init();
    shim_graph_nodes_t before;
    shim_graph_nodes_before(s, false, count, &before);
    CUresult r = SHIM_CALL(cuMemPrefetchBatchAsync, ptrs, sizes, count, locs, idx, nlocs, flags, s);
    if (r == CUDA_SUCCESS && tracking())
        batch_moved(ptrs, sizes, count, locs, idx, nlocs, s, false, &before);
    shim_graph_nodes_free(&before);
    return r;
}

CUresult shim_hook_cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                                CUmemLocation *locs, size_t *idx, size_t nlocs,
                                                unsigned long long flags, CUstream s)
{
    shim_ensure_init();
    shim_graph_nodes_t before;
    shim_graph_nodes_before(s, true, count, &before);
    CUresult r =
        SHIM_CALL(cuMemPrefetchBatchAsync_ptsz, ptrs, sizes, count, locs, idx, nlocs, flags, s);
    if (r == CUDA_SUCCESS && tracking())
        batch_moved(ptrs, sizes, count, locs, idx, nlocs, s, true, &before);
    shim_graph_nodes_free(&before);
    return r;
}

/* A batch of discards: each range's region is no longer taken for resident. */
static void batch_discarded(CUdeviceptr *ptrs, size_t *sizes, size_t count, CUstream s,
                            bool per_thread, const shim_graph_nodes_t *before)
{
    if (!ptrs || !sizes)
        return;
    shim_graph_capture_t c;
    int cap = batch_capture(s, per_thread, count, before, &c);
    for (size_t i = 0; i < count; i++)
        moved(ptrs[i], sizes[i], TO_ELSEWHERE, s, per_thread, &cap, &c);
}

CUresult shim_hook_cuMemDiscardBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                          unsigned long long flags, CUstream s)
{
    shim_ensure_init();
    shim_graph_nodes_t before;
    shim_graph_nodes_before(s, false, count, &before);
    CUresult r = SHIM_CALL(cuMemDiscardBatchAsync, ptrs, sizes, count, flags, s);
    if (r == CUDA_SUCCESS && tracking())
        batch_discarded(ptrs, sizes, count, s, false, &before);
    shim_graph_nodes_free(&before);
    return r;
}

CUresult shim_hook_cuMemDiscardBatchAsync_ptsz(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                               unsigned long long flags, CUstream s)
{
    shim_ensure_init();
    shim_graph_nodes_t before;
    shim_graph_nodes_before(s, true, count, &before);
    CUresult r = SHIM_CALL(cuMemDiscardBatchAsync_ptsz, ptrs, sizes, count, flags, s);
    if (r == CUDA_SUCCESS && tracking())
        batch_discarded(ptrs, sizes, count, s, true, &before);
    shim_graph_nodes_free(&before);
    return r;
}

CUresult shim_hook_cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                                     CUmemLocation *locs, size_t *idx, size_t nlocs,
                                                     unsigned long long flags, CUstream s)
{
    shim_ensure_init();
    shim_graph_nodes_t before;
    shim_graph_nodes_before(s, false, count, &before);
    CUresult r = SHIM_CALL(cuMemDiscardAndPrefetchBatchAsync, ptrs, sizes, count, locs, idx, nlocs,
                           flags, s);
    if (r == CUDA_SUCCESS && tracking())
        batch_moved(ptrs, sizes, count, locs, idx, nlocs, s, false, &before);
    shim_graph_nodes_free(&before);
    return r;
}

CUresult shim_hook_cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr *ptrs, size_t *sizes,
                                                          size_t count, CUmemLocation *locs,
                                                          size_t *idx, size_t nlocs,
                                                          unsigned long long flags, CUstream s)
{
    shim_ensure_init();
    shim_graph_nodes_t before;
    shim_graph_nodes_before(s, true, count, &before);
    CUresult r = SHIM_CALL(cuMemDiscardAndPrefetchBatchAsync_ptsz, ptrs, sizes, count, locs, idx,
                           nlocs, flags, s);
    if (r == CUDA_SUCCESS && tracking())
        batch_moved(ptrs, sizes, count, locs, idx, nlocs, s, true, &before);
    shim_graph_nodes_free(&before);
    return r;
}
