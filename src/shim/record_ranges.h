/*
 * Touched-range arithmetic of the shim's recorder (record.c), kept apart so
 * it can be tested without a driver: turning fault addresses into ranges at
 * fault granularity, clipping ranges to the live allocations (a trace range
 * must lie inside one allocation), and merging.
 *
 * Pure functions over caller-owned arrays; thread-safe.
 */
#ifndef SHIM_RECORD_RANGES_H
#define SHIM_RECORD_RANGES_H

#include <stddef.h>
#include <stdint.h>

#include "engine/launch.h"

/* One live allocation as the recorder knows it. */
typedef struct shim_rec_alloc {
    uint64_t id;
    uint64_t base;
    uint64_t size;
} shim_rec_alloc_t;

/*
 * Ranges of gran bytes (a power of two) around each fault address, mode
 * ENG_ACCESS_RW (a fault does not say read or write). Returns how many were
 * written to out (at most max), merged.
 */
size_t shim_rec_ranges_from_faults(const uint64_t *addrs, size_t n, uint64_t gran, eng_range_t *out,
                                   size_t max);

/*
 * Intersects each of the n ranges with the nlive allocations (a range
 * spanning two allocations is split; parts outside every allocation are
 * dropped). Returns how many were written to out (at most max).
 */
size_t shim_rec_ranges_clip(const eng_range_t *in, size_t n, const shim_rec_alloc_t *live,
                            size_t nlive, eng_range_t *out, size_t max);

/*
 * Sorts r by address and merges overlapping or adjacent ranges (their modes
 * combined). Returns the new count.
 */
size_t shim_rec_ranges_merge(eng_range_t *r, size_t n);

#endif /* SHIM_RECORD_RANGES_H */
