/*
 * Shares of a region's fault units that launches touched, for the
 * whole-region rule of the simulator's learned prediction (sim/predict.h).
 *
 * A whole-region fallback is a rent-or-buy choice: prefetch the region
 * (S bytes at the prefetch rate h: buy) or leave it to faults, which move
 * the fault units the launches touch at the demand-paging rate f (rent).
 * Faulting one launch's units costs less than the prefetch while they are
 * under f / h of the region's units; but the prefetch serves every later
 * launch that touches the region while it stays, and the faults add up. The
 * break-even rule of rent-or-buy (pay rent until it has cost what buying
 * would have, then buy: never more than twice the best choice in hindsight)
 * counts the units touched *so far*: a unit faulted in once is paid for
 * once. So the table keeps, per (task, kernel, argument, region), the set of
 * the region's units the kernel's launches through that argument have
 * touched since the first, and its share; sim/predict.c prefetches the
 * whole region once that share reaches f / h. A block sweep (CSR SpMV's
 * gathers of x's band, 4% of x per launch) reaches it after a few launches;
 * random pieces (BFS's 256 per launch, under 1%) only after many.
 *
 * Memory is bounded: `slots` entries (a key takes a free slot among the few
 * after the one it hashes to; when none is free it is not tracked), each a
 * bitmap of at most max_bytes / unit bits: larger regions are never
 * prefetched whole and are not tracked. A region freed and allocated again
 * at the same address with the same size keeps its set (the caller sees no
 * frees).
 *
 * Ownership: the table owns its bitmaps. Thread-safety: one thread at a time.
 */
#ifndef SIM_SHARE_H
#define SIM_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

#include "engine/launch.h"

typedef struct sim_share sim_share_t;

typedef struct sim_share_key {
    uint32_t task, kernel, arg;
    uint64_t base, size; /* the region */
} sim_share_key_t;

/* unit: bytes per fault unit (> 0); max_bytes: largest region tracked. */
gmux_status_t sim_share_create(uint32_t slots, uint64_t unit, uint64_t max_bytes,
                               sim_share_t **s_p);
void sim_share_destroy(sim_share_t *s);

/* The share of the region's units that ranges[0..n) touch (any order, may
 * overlap; each unit counted once): what one launch touched. */
gmux_status_t sim_share_launch(sim_share_t *s, uint64_t base, uint64_t size, const eng_range_t *r,
                               uint32_t n, double *share_p);

/* Adds the region's units that ranges[0..n) touch to key's set (nothing for an
 * untracked key). */
gmux_status_t sim_share_observe(sim_share_t *s, const sim_share_key_t *k, const eng_range_t *r,
                                uint32_t n);

/* The share of the region's units touched so far through key; false if none
 * was observed (or the key is not tracked). */
bool sim_share_get(const sim_share_t *s, const sim_share_key_t *k, double *share_p);

#endif /* SIM_SHARE_H */
