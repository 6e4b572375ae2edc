/*
 * Internals of the transfer bound, shared by bound.c (the chunk-level passes:
 * Belady's fetches, the fewest write-backs, the released write-back term) and
 * bound_blocks.c (the same first two at the level of fault blocks). Not part
 * of sim/bound.h's contract; see there and docs/sim-bound.md.
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

/* Per byte of m, how many of its bits are set (SWAR). */
static inline uint32_t sim_byte_pops(uint32_t m)
{
    m = m - ((m >> 1) & 0x55555555u);
    m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
    return (m + (m >> 4)) & 0x0F0F0F0Fu;
}

/* The bits set in m; inline, as the bound's block passes count masks a few
 * times a reference (without a popcnt instruction in the target, gcc calls
 * libgcc's for __builtin_popcount). */
static inline uint32_t sim_pop32(uint32_t m)
{
    return (sim_byte_pops(m) * 0x01010101u) >> 24;
}

/* The lowest `count` bits set in m (all of m when it has no more): the
 * bytes' counts summed from the low end find the byte holding the last bit
 * taken, so at most 7 steps a bit at a time are left. */
static inline uint32_t sim_mask_lowest(uint32_t m, uint64_t count)
{
    uint32_t upto = sim_byte_pops(m) * 0x01010101u; /* byte i: the bits of bytes 0..i */
    if (count >= upto >> 24)
        return m;
    uint32_t i = 0, before = 0; /* whole bytes taken, their bits */
    while (((upto >> (8 * i)) & 0xFF) <= count)
        before = (upto >> (8 * i++)) & 0xFF;
    uint32_t out = i ? m & ((1u << (8 * i)) - 1) : 0, byte = (m >> (8 * i)) & 0xFF;
    for (uint64_t left = count - before; left; left--, byte &= byte - 1)
        out |= (byte & -byte) << (8 * i);
    return out;
}

/*
 * The chunks of a pass by key, the largest first: keys are launch indices
 * 0..nkeys-2 and INF32 (stored in the last bucket), so a bucket per key, a
 * list of chunks in each, and a bitmap of non-empty buckets with a bitmap of
 * its non-zero words above it (and so on, 64-ary) find the largest key in a
 * few word operations, and moving a chunk to another key costs O(1) and a
 * few bit updates. Of ties, the chunk that entered its bucket last comes out
 * first (the counts the passes take, Belady's misses and the greedy sweep's
 * drops, are meant to be the same for any order; tests/sim/test_bound_bq.c
 * holds this one). Memory: 4 bytes per key and 12 per chunk. The caller
 * owns it.
 *
 * The passes ask for the top and re-key a chunk to the key it has already
 * millions of times a run, so both are inline: the largest non-empty bucket
 * is kept (`top`, found again from the bitmaps only when that bucket
 * empties), and a re-key to the same key returns before any call.
 */
#define SIM_BQ_LEVELS 6 /* 64^6 buckets cover every uint32_t key */

typedef struct sim_bq {
    uint32_t *head;              /* per bucket: first chunk, INF32 if none */
    uint32_t *nxt, *prv, *qk;    /* per chunk: list links, bucket (INF32: not queued) */
    uint64_t *lv[SIM_BQ_LEVELS]; /* level 0: a bit per bucket; l+1: per word of l */
    size_t lvn[SIM_BQ_LEVELS];   /* words per level */
    size_t nc;
    uint32_t nlv, inf, n; /* levels, the INF32 bucket, chunks queued */
    uint32_t top;         /* the largest non-empty bucket while n > 0 */
} sim_bq_t;

gmux_status_t sim_bq_init(sim_bq_t *q, size_t nc, uint32_t nkeys);
void sim_bq_free(sim_bq_t *q);
/* Empties the queue. */
void sim_bq_clear(sim_bq_t *q);
/* Queues c in bucket b (not its bucket now), moving it if it was queued. */
void sim_bq_move(sim_bq_t *q, uint32_t c, uint32_t b);
void sim_bq_remove(sim_bq_t *q, uint32_t c);

/* Queues c under key (0..nkeys-2 or INF32), moving it if it was queued. A
 * chunk moved, or queued, goes first in its bucket; one whose key does not
 * change keeps its place. */
static inline void sim_bq_set(sim_bq_t *q, uint32_t c, uint32_t key)
{
    uint32_t b = key == INF32 ? q->inf : key;
    if (q->qk[c] != b)
        sim_bq_move(q, c, b);
}

/* A chunk of the largest key, the first in its bucket; the queue must not be
 * empty. */
static inline uint32_t sim_bq_top(const sim_bq_t *q)
{
    return q->head[q->top];
}

static inline bool sim_bq_queued(const sim_bq_t *q, uint32_t c)
{
    return q->qk[c] != INF32;
}

/* c's key (c queued). */
static inline uint32_t sim_bq_key(const sim_bq_t *q, uint32_t c)
{
    return q->qk[c] == q->inf ? INF32 : q->qk[c];
}

/* The block-level lists of sim_refuses_opt_blocks (bound_blocks.c). */
typedef struct sim_bgroups sim_bgroups_t;
void sim_bgroups_free(sim_bgroups_t *g);

/*
 * What the passes of every capacity share (sim/bound.h): per reference its
 * next use (next[i], set for whole references only) and, per whole write
 * reference in string order, where its dirty interval ends (iv_end[w]);
 * the most chunks one launch references; the distinct chunks; and the
 * block-level lists, built on first use (blocks_st caches GMUX_OK or
 * GMUX_ERR_RANGE once built or refused).
 */
struct sim_refuses {
    const sim_refstr_t *rs;
    uint32_t *next;
    uint32_t *iv_end;
    uint64_t nwrites;
    uint64_t max_launch;
    uint64_t distinct;
    sim_bgroups_t *blocks;
    gmux_status_t blocks_st;
    bool blocks_done;
};

/* What every pass, at either level, checks of a capacity first:
 * GMUX_ERR_RANGE for none, GMUX_ERR_CAPACITY when a launch references more
 * chunks than it, partly used ones included (no policy can run it, and the
 * chunk-level passes, which skip partial references, would not see it). */
gmux_status_t sim_refuses_fits(const sim_refuses_t *u, uint64_t capacity_chunks);
/* Sets q up as the passes' queue: u's chunks keyed by launch index. */
gmux_status_t sim_refuses_queue(const sim_refuses_t *u, sim_bq_t *q);

/* sim_refuses_wb_released, its samples pruned as there (prune true) or all
 * swept (false: the reference the tests compare the pruning with); *sweeps_p
 * gets the samples swept. */
gmux_status_t sim_refuses_wb_released_how(const sim_refuses_t *u, uint64_t capacity_chunks,
                                          double fetch_ns, double wb_ns, bool prune, uint64_t *ns_p,
                                          uint32_t *sweeps_p);

#endif /* SIM_BOUND_IMPL_H */
