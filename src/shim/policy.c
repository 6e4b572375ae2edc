/* Proactive fallback policy: whole-region prefetch ordered by an event. */
#include "shim/policy.h"

#include <pthread.h>
#include <stdatomic.h>

#include "shim/backend_cuda.h"
#include "shim/params.h"
#include "shim/predict.h"
#include "shim/shim.h"
#include "shim/stats.h"

static _Atomic uint32_t policy_gen = 1;
static _Atomic uint64_t policy_capacity; /* 0: not known yet */
/* Set once a region is marked SHIM_GEN_EVICTED (shim_policy_evicted),
 * cleared just before shim_policy_evicted_to_paging remarks them all: false
 * means no region is so marked. */
static atomic_bool policy_evicted_marked;

/* Generations 0 and SHIM_GEN_EVICTED are never current: they mark a region
 * moved away (see shim_policy_program_prefetched, and gate_apply.c's gate_move of
 * the daemon's evictions), which the next claim prefetches. */
static bool policy_gen_current(uint32_t gen)
{
    return gen != 0 && gen != SHIM_GEN_EVICTED;
}

void shim_policy_invalidate(void)
{
    while (!policy_gen_current(atomic_fetch_add(&policy_gen, 1) + 1))
        ;
}

uint32_t shim_policy_generation(void)
{
    uint32_t gen = atomic_load_explicit(&policy_gen, memory_order_relaxed);
    /* an invalidation passing a mark just now: any other will do */
    return policy_gen_current(gen) ? gen : 1;
}

void shim_policy_evicted(uint64_t addr, uint64_t len)
{
    /* the regions first, then the flag: a remark that cleared the flag
     * before this set it either saw the mark or leaves the flag set */
    if (shim_regions_mark(&shim_state.regions, addr, len, SHIM_GEN_EVICTED, 0, false))
        atomic_store(&policy_evicted_marked, true);
}

bool shim_policy_any_evicted(void)
{
    return atomic_load(&policy_evicted_marked);
}

/* Every region marked SHIM_GEN_EVICTED gets generation gen: none is so
 * marked after (the flag first: see shim_policy_evicted). */
static void policy_remark_evicted(uint32_t gen)
{
    atomic_store(&policy_evicted_marked, false);
    (void)shim_regions_remark(&shim_state.regions, SHIM_GEN_EVICTED, gen);
}

void shim_policy_evicted_to_paging(void)
{
    policy_remark_evicted(shim_policy_generation());
}

void shim_policy_evicted_recount(void)
{
    if (!atomic_load(&policy_evicted_marked))
        return;
    /* the flag first, as in policy_remark_evicted; a region found still
     * marked (remarked as it was) sets it again */
    atomic_store(&policy_evicted_marked, false);
    if (shim_regions_remark(&shim_state.regions, SHIM_GEN_EVICTED, SHIM_GEN_EVICTED))
        atomic_store(&policy_evicted_marked, true);
}

void shim_policy_evicted_lost(void)
{
    policy_remark_evicted(0);
}

void shim_policy_lost(uint64_t addr, uint64_t len)
{
    (void)shim_regions_mark(&shim_state.regions, addr, len, 0, 0, false);
}

uint64_t shim_policy_stream_key(CUstream s, bool per_thread)
{
    if (per_thread && (s == NULL || s == CU_STREAM_PER_THREAD))
        return (uint64_t)pthread_self() | (1ull << 63);
    if (s == NULL)
        return (uint64_t)(uintptr_t)CU_STREAM_LEGACY;
    if (s == CU_STREAM_PER_THREAD)
        return (uint64_t)pthread_self() | (1ull << 63);
    return (uint64_t)(uintptr_t)s;
}

void shim_policy_program_prefetched(uint64_t addr, uint64_t len, bool to_device, uint64_t stream)
{
    uint32_t gen = 0;
    if (to_device) {
        gen = atomic_load_explicit(&policy_gen, memory_order_relaxed);
        if (!policy_gen_current(gen)) /* an invalidation passing a mark just now */
            return;
    }
    size_t n =
        shim_regions_mark(&shim_state.regions, addr, len, gen, to_device ? stream : 0, to_device);
    SHIM_STAT_ADD(own_prefetches, 1);
    if (!to_device)
        SHIM_STAT_ADD(own_evicted, n);
}

/* The memory managed regions may fill before residency is unknown. */
static uint64_t policy_capacity_of(const shim_cuctx_t *c)
{
    uint64_t cap = atomic_load_explicit(&policy_capacity, memory_order_relaxed);
    if (cap)
        return cap;
    size_t total = 0;
    CUdevice dev = 0;
    (void)c;
    if (SHIM_CALL(cuCtxGetDevice, &dev) != CUDA_SUCCESS ||
        SHIM_CALL(cuDeviceTotalMem_v2, &total, dev) != CUDA_SUCCESS)
        total = 0;
    cap = total ? total : UINT64_MAX;
    if (shim_state.budget && shim_state.budget < cap)
        cap = shim_state.budget;
    atomic_store_explicit(&policy_capacity, cap, memory_order_relaxed);
    return cap;
}

/* The policy of one launch, c held (shim_backend_take). */
static void policy_launch(const shim_launch_info_t *l, shim_cuctx_t *c)
{
    shim_range_t ranges[SHIM_MAX_CANDIDATES];
    shim_region_was_t olds[SHIM_MAX_CANDIDATES];
    uint32_t gen = 0;
    size_t hits = 0, n = 0;
    uint64_t capacity = policy_capacity_of(c);
    bool predicted = false, narrow = false;
    /* oversubscribed: every launch prefetches, so what it moves should be
     * what it touches, not whole regions (predict.h) */
    if (shim_regions_bytes(&shim_state.regions, SHIM_REGION_MANAGED) > capacity)
        n = shim_predict_ranges(l, ranges, SHIM_MAX_CANDIDATES, &predicted, &narrow);
    if (predicted) {
        SHIM_STAT_ADD(predicted_launches, 1);
        SHIM_STAT_ADD(template_launches, narrow);
    } else {
        gen = shim_policy_generation();
        n = shim_regions_claim(&shim_state.regions, l->vals, l->nvals, gen,
                               shim_policy_stream_key(l->stream, l->per_thread), capacity, ranges,
                               olds, SHIM_MAX_CANDIDATES, &hits);
        SHIM_STAT_ADD(pointer_args, hits);
    }
    if (n == 0)
        return;
    if (shim_backend_capturing(l->stream, l->per_thread)) {
        /* Recorded into a graph, not run: the graph's launch prefetches. The
         * claims just made are void: those regions get their generation back
         * (a new generation would prefetch every region again). A predicted
         * launch claimed nothing. */
        SHIM_STAT_ADD(capture_skips, 1);
        if (!predicted)
            shim_regions_unclaim(&shim_state.regions, ranges, olds, n, gen);
        return;
    }
    uint64_t addr[SHIM_MAX_CANDIDATES], len[SHIM_MAX_CANDIDATES], bytes = 0;
    for (size_t i = 0; i < n; i++) {
        addr[i] = ranges[i].addr;
        len[i] = ranges[i].len;
    }
    size_t issued = shim_backend_prefetch_ranges(c, addr, len, n, &bytes);
    SHIM_STAT_ADD(prefetch_bytes, bytes);
    SHIM_STAT_ADD(prefetch_errors, n - issued);
    SHIM_STAT_ADD(prefetches, issued);
    if (issued && shim_backend_order(c, l->stream, l->per_thread) == CUDA_SUCCESS)
        SHIM_STAT_ADD(order_waits, 1);
}

/* The entry is held from before the claims to after the launch's event: an
 * ordering of evictions that found it held is put off, so the migration
 * stream joins no capture while this launch queues on it (a launch without
 * a turn; until 2026-12-04 one could queue its prefetch and event on a
 * stream that had just joined a capture of the program, which pulled the
 * launch's stream in: test_gate_evicted_capture
 * test_launch_without_turn_joined). */
void shim_policy_before_launch(const shim_launch_info_t *l)
{
    if (shim_state.mode != SHIM_MODE_PROACTIVE || l->nvals == 0)
        return;
    shim_cuctx_t *c = shim_backend_take();
    if (!c)
        return;
    policy_launch(l, c);
    shim_backend_put(c);
}
