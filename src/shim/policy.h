/*
 * The shim's policy layer: what to do before a launch runs. The predicted
 * working set of a launch is every whole managed region one of its pointer
 * arguments points into, or, while managed memory exceeds the capacity and a
 * template database is loaded, the bytes the engine's predictor names
 * (predict.h).
 *
 *   off, demand  nothing (demand: the driver faults pages in)
 *   proactive    prefetch the regions not yet prefetched (once per region and
 *                generation; every time when managed memory exceeds the
 *                capacity, then the predicted ranges where a database is
 *                loaded) on the migration stream, then make the launch's
 *                stream wait on the migration event; nothing on a stream that
 *                is being captured into a graph (its launch will prefetch)
 *
 * Thread-safety: safe from any thread; allocates nothing.
 * LOCKING: takes the region table's lock (shared) inside; callers may hold
 * the graph table's lock (graph.h), never the other way round.
 */
#ifndef SHIM_POLICY_H
#define SHIM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

typedef struct shim_launch_info {
    CUstream stream;
    bool per_thread;  /* came through a _ptsz entry point */
    CUfunction func;  /* the kernel; NULL for a graph launch */
    uint32_t grid[3]; /* launch shape (what the engine's templates read) */
    uint32_t block[3];
    const uint64_t *vals; /* candidate pointer values (params.h) */
    size_t nvals;
    void **params; /* the launch's kernelParams and extra, for the predictor's */
    void **extra;  /* positional values (NULL, NULL: a graph launch) */
} shim_launch_info_t;

/* Runs the policy of the current mode for one launch. Never fails the launch. */
void shim_policy_before_launch(const shim_launch_info_t *l);

/* Starts a new generation: every region is prefetched again at its next use. */
void shim_policy_invalidate(void);

/* The current generation: what a region moved whole to the device, and
 * waited for, is marked with (gate_apply.c's FILL at a grant). Never 0, never
 * SHIM_GEN_EVICTED. */
uint32_t shim_policy_generation(void);

/* The generation of a region the daemon's orders moved to the host, even in
 * part (gate_apply.c): prefetched again at its next use, as generation 0 is,
 * unless a GRANT says the placement left it to demand paging
 * (shim_policy_evicted_to_paging). Generation 0 marks what must be
 * prefetched again in any case: moved away by the program itself, or a
 * daemon's fill the shim did not carry out (shim_policy_lost). */
#define SHIM_GEN_EVICTED UINT32_MAX

/* The daemon's eviction of [addr, addr+len) was issued (gate_apply.c): the
 * managed regions it overlaps are marked SHIM_GEN_EVICTED. */
void shim_policy_evicted(uint64_t addr, uint64_t len);

/* Whether a region may be marked SHIM_GEN_EVICTED: false when none has been
 * since the last shim_policy_evicted_to_paging (then a grant has nothing to
 * leave to demand paging, and nothing to wait for to do so). */
bool shim_policy_any_evicted(void);

/* Regions went (their context destroyed, hooks_ctx.c): says again whether
 * one is still marked SHIM_GEN_EVICTED (shim_policy_any_evicted), so that a
 * grant does not wait for a migration stream for marks that went with their
 * regions (until 2026-12-03 it did: test_gate_fence
 * test_no_fence_for_marks_gone). One pass over the region table under its
 * shared lock while one may be; safe beside shim_policy_evicted (the flag is
 * cleared before the pass, and set after a mark). */
void shim_policy_evicted_recount(void);

/* A GRANT with DMN_GRANT_PLANNED was taken and its orders carried out: the
 * regions the daemon evicted (SHIM_GEN_EVICTED) that no fill brought back
 * whole are the placement's to leave to demand paging, so they count as
 * prefetched in this generation. */
void shim_policy_evicted_to_paging(void);

/* A GRANT was taken after a store of the daemon's orders overflowed
 * (gate_plan.h), and its orders carried out: which memory the orders
 * carried out since then moved beyond what the daemon sent (bytes an
 * eviction joined with another took along) or left out (a fill piece given
 * up) is not known, so every region still marked SHIM_GEN_EVICTED is marked
 * generation 0: prefetched again at its next use, whatever a later GRANT
 * says. */
void shim_policy_evicted_lost(void);

/* A daemon's fill of [addr, addr+len) was not carried out (given up, or
 * dropped unused): the managed regions it overlaps are prefetched again at
 * their next use (generation 0), whatever a later GRANT says. */
void shim_policy_lost(uint64_t addr, uint64_t len);

/*
 * The program's own prefetch of [addr, addr+len) was queued. To the host
 * (to_device false, or a location that is not device dev): the managed
 * regions it overlaps are prefetched again at their next use. To device dev,
 * the device of the calling thread's current context (where the policy
 * prefetches): the regions it covers whole count as prefetched in this
 * generation for launches on the same stream (shim_policy_stream_key); a
 * launch on another stream, not ordered after that prefetch by the shim's
 * knowledge, prefetches them again and waits for that. Cheap: one shared lock of the region table,
 * no allocation.
 */
void shim_policy_program_prefetched(uint64_t addr, uint64_t len, bool to_device, uint64_t stream);

/* The stream a launch or prefetch through a hook names, as one value: the
 * stream, CU_STREAM_LEGACY for stream 0 of a plain entry point, and the
 * calling thread's own value for its per-thread default stream. Never 0. */
uint64_t shim_policy_stream_key(CUstream s, bool per_thread);

#endif /* SHIM_POLICY_H */
