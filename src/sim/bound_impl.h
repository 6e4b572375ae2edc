/*
 * Internals of the transfer bound, shared by bound.c (the chunk-level passes:
 * Belady's fetches, the fewest write-backs, the released write-back term) and
 * bound_blocks.c (the same first two at the level of fault blocks). Not part
 * of sim/bound.h's contract; see there and docs/sim.md, "The transfer bound".
 *
 * The string: one uint32_t per reference, REF_END closing each launch. A
 * partial reference (REF_PART) has its mask of touched blocks in pmask, in
 * the order of the partial references; a whole one touches every block.
 *
 * Thread-safety: one thread.
 */
#ifndef SIM_BOUND_IMPL_H
#define SIM_BOUND_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/bound.h"

#define REF_END      0xFFFFFFFFu
#define REF_WRITE    (1u << 31)
#define REF_FREE     (1u << 30)
#define REF_PART     (1u << 29) /* touches some blocks only: its mask is in pmask */
#define REF_CHUNK(r) ((r) & ~(REF_WRITE | REF_FREE | REF_PART))
#define INF32        UINT32_MAX

struct sim_refstr {
    uint32_t *refs;
    uint64_t n, cap, max;
    uint32_t *pmask; /* blocks touched, per partial reference in order */
    uint64_t npart, pcap;
    uint64_t launches;
    uint64_t *compute; /* per launch, ns */
    size_t compute_cap;
    uint32_t chunk_limit;
    uint32_t nblocks; /* blocks per chunk, 1..32 */
    bool cut;
};

/* The mask of every block of a chunk. */
static inline uint32_t sim_refstr_full(const sim_refstr_t *rs)
{
    return rs->nblocks >= 32 ? UINT32_MAX : (1u << rs->nblocks) - 1;
}

/* A max-heap of chunk ids on key[] (ties: higher id first), positions in
 * pos[] (INF32: not in the heap). The caller owns the arrays. */
typedef struct sim_refheap {
    uint32_t *a;
    uint32_t n;
    uint32_t *key;
    uint32_t *pos;
} sim_refheap_t;

/* Restores the order after a[i]'s key changed. */
void sim_refheap_fix(sim_refheap_t *h, uint32_t i);
void sim_refheap_push(sim_refheap_t *h, uint32_t c);
void sim_refheap_remove(sim_refheap_t *h, uint32_t c);

/* GMUX_ERR_CAPACITY when a launch references more chunks than the capacity,
 * partial references included. */
gmux_status_t sim_refstr_launch_fits(const sim_refstr_t *rs, uint64_t capacity_chunks);

#endif /* SIM_BOUND_IMPL_H */
