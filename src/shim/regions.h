/*
 * The shim's region table: every allocation the task made, as an interval
 * map keyed by device address (sorted array, binary search).
 *
 * A region is one allocation [base, base+size): managed (redirected, the
 * engine may move it), or pinned (plain device memory where redirection is
 * off or failed, stream-ordered pool memory, VMM mappings). Pinned regions
 * are tracked and counted but never migrated. CUDA arrays have no address
 * range: their bytes are counted here (SHIM_REGION_ARRAY) by their owner
 * (arrays.c), with no region.
 *
 * Ownership: the table owns its array; callers pass and receive copies.
 * Thread-safety: every function is safe from any thread.
 * LOCKING: one rwlock per table; lookups (the launch path) take it shared,
 * insert and remove exclusive. No other lock is taken while it is held.
 */
#ifndef SHIM_REGIONS_H
#define SHIM_REGIONS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

typedef enum shim_region_kind {
    SHIM_REGION_MANAGED = 0, /* cuMemAllocManaged (redirected cuMemAlloc / pitch) */
    SHIM_REGION_DEVICE = 1,  /* plain cuMemAlloc / pitch memory, not redirected: pinned */
    SHIM_REGION_ASYNC = 2,   /* cuMemAllocAsync / FromPoolAsync: pinned */
    SHIM_REGION_VMM = 3,     /* a cuMemMap of a cuMemCreate handle: pinned */
    SHIM_REGION_ARRAY = 4,   /* CUDA arrays (arrays.h): pinned; bytes only, never a region */
    SHIM_REGION_KIND_COUNT = 5,
} shim_region_kind_t;

typedef struct shim_region {
    uint64_t base;
    uint64_t size;
    uint64_t ctx;     /* CUcontext it was allocated in; 0: none (VMM mappings) */
    uint8_t kind;     /* shim_region_kind_t */
    uint8_t loc_type; /* CUmemLocationType of VMM memory; for managed memory
                         SHIM_MANAGED_REDIRECTED when libgmux.so made it so */
    uint8_t flags;    /* SHIM_REGION_UNCOUNTED */
    uint32_t gen;     /* prefetch generation last claimed (see shim_regions_claim) */
    /* The stream (shim_policy_stream_key) the program's own prefetch of the
     * region to the device was queued on, which a launch on another stream
     * is not ordered after; 0: none, or ordered by a prefetch of the shim's. */
    uint64_t order;
} shim_region_t;

#define SHIM_MANAGED_REDIRECTED 1 /* loc_type of a managed region the shim redirected */

/* A region whose bytes its owner counts itself (shim_regions_count_bytes): a
 * VMM mapping, whose physical handle may be mapped more than once. */
#define SHIM_REGION_UNCOUNTED 1

/* What a claim found in a region before it changed it (shim_regions_unclaim). */
typedef struct shim_region_was {
    uint32_t gen;
    uint64_t order;
} shim_region_was_t;

typedef struct shim_range {
    uint64_t addr;
    uint64_t len;
} shim_range_t;

typedef struct shim_regions {
    pthread_rwlock_t lock;
    shim_region_t *v; /* sorted by base, non-overlapping */
    size_t n, cap;
    uint64_t
        bytes[SHIM_REGION_KIND_COUNT]; /* changed under the lock, atomically: read without it */
    uint64_t count[SHIM_REGION_KIND_COUNT];
    /* Regions inserted and removed so far (under the lock): what a reader
     * derives from the whole table (the gate's working set, gate_ws.h)
     * stays valid while this does not move. */
    uint64_t changes;
} shim_regions_t;

gmux_status_t shim_regions_init(shim_regions_t *t);
void shim_regions_fini(shim_regions_t *t);

/*
 * Adds [base, base+size). Regions it overlaps are stale (freed through a path
 * the shim does not see) and are dropped first. GMUX_ERR_INVALID for size 0
 * or a range that wraps; GMUX_ERR_NOMEM when the array cannot grow.
 */
gmux_status_t shim_regions_insert(shim_regions_t *t, uint64_t base, uint64_t size,
                                  shim_region_kind_t kind, uint8_t loc_type);

/* shim_regions_insert of a region allocated in context ctx (0: none), with
 * flags (SHIM_REGION_UNCOUNTED: its size is not added to the kind's bytes). */
gmux_status_t shim_regions_insert_in(shim_regions_t *t, uint64_t base, uint64_t size,
                                     shim_region_kind_t kind, uint8_t loc_type, uint64_t ctx,
                                     uint8_t flags);

/* Adds delta (may be negative) to the bytes of kind: what an owner of
 * uncounted regions counts for them. */
void shim_regions_count_bytes(shim_regions_t *t, shim_region_kind_t kind, int64_t delta);

/* Removes up to max regions allocated in context ctx (non-zero), copying
 * them to out; returns how many (fewer than max: none is left). */
size_t shim_regions_remove_ctx(shim_regions_t *t, uint64_t ctx, shim_region_t *out, size_t max);

/* Removes the region that starts exactly at base; GMUX_ERR_NOT_FOUND if none. */
gmux_status_t shim_regions_remove(shim_regions_t *t, uint64_t base, shim_region_t *out_p);

/* Removes every region overlapping [base, base+size); returns how many. */
size_t shim_regions_remove_range(shim_regions_t *t, uint64_t base, uint64_t size);

/* The region containing addr, copied to *out_p; false if none. */
bool shim_regions_find(shim_regions_t *t, uint64_t addr, shim_region_t *out_p);

/* The regions containing each of addrs[0..n), under one shared lock: out[i]
 * is a copy, or all zero (size 0) where none contains addrs[i]. Returns how
 * many were found. */
size_t shim_regions_find_n(shim_regions_t *t, const uint64_t *addrs, size_t n, shim_region_t *out);

/* Bytes and count of regions of one kind. */
uint64_t shim_regions_bytes(shim_regions_t *t, shim_region_kind_t kind);
uint64_t shim_regions_count(shim_regions_t *t, shim_region_kind_t kind);
uint64_t shim_regions_total_bytes(shim_regions_t *t);

/*
 * The launch path's lookup, under one shared lock and without allocating:
 * maps each of the n candidate values to the region containing it, and
 * writes the distinct managed regions that need a prefetch into out (at most
 * max): a region needs one when its generation differs from gen, or always
 * when the managed bytes exceed force_above (oversubscribed: residency is
 * unknown), or when the program's own prefetch made it current on a stream
 * other than stream (the launch's, shim_policy_stream_key: the launch is not
 * ordered after that prefetch; the claim then clears it). Claiming sets the region's generation to
 * gen, so a region is prefetched once per generation even when several threads launch at once. olds
 * (optional, max entries) receives the generation and stream each region of out had before (for
 * shim_regions_unclaim); *hits_p (optional) how many values fell in any tracked region.
 */
size_t shim_regions_claim(shim_regions_t *t, const uint64_t *vals, size_t n, uint32_t gen,
                          uint64_t stream, uint64_t force_above, shim_range_t *out,
                          shim_region_was_t *olds, size_t max, size_t *hits_p);

/*
 * Voids a claim: each region that starts at out[i].addr and still has
 * generation gen gets olds[i] back (what shim_regions_claim wrote): its
 * generation, and the stream of the program's prefetch the claim cleared
 * (unless one was set since), so its next claim finds it again; one
 * another claim or mark changed since is left as it is. Under one shared lock, without allocating.
 */
void shim_regions_unclaim(shim_regions_t *t, const shim_range_t *out, const shim_region_was_t *olds,
                          size_t n, uint32_t gen);

/*
 * Sets the generation of the managed regions that [addr, addr+len) covers
 * to gen, and their order (shim_region_t) to stream: every one it
 * overlaps, or (whole) only those it contains whole. What the program's own
 * prefetches tell the policy (policy.h). Under one shared lock, without
 * allocating; returns how many regions were marked.
 */
size_t shim_regions_mark(shim_regions_t *t, uint64_t addr, uint64_t len, uint32_t gen,
                         uint64_t stream, bool whole);

/*
 * Sets to gen the generation of every managed region whose generation is
 * from (gate_apply.c: the regions the daemon evicted, once a grant leaves them to
 * demand paging, or marks them lost after a store overflowed). Under one shared lock, without
 * allocating; returns how many regions were marked.
 */
size_t shim_regions_remark(shim_regions_t *t, uint32_t from, uint32_t gen);

#endif /* SHIM_REGIONS_H */
