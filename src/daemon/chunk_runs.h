/*
 * Runs of chunks: growable arrays of chunk-aligned address ranges, the
 * building block of the "chunk" placement (place_chunk.c). A run may carry
 * where it lies in a working set (wlo, wrank) and a sort key.
 *
 * Operations: sort by (key, lo) in O(n) when the input is already in order or
 * in reverse order, O(n log n) otherwise; union and difference of sorted
 * disjoint sets in one pass; the first-use cover of a list of ranges.
 *
 * Ownership: a dmn_runs_t owns its array (dmn_runs_free). Thread-safety:
 * none.
 */
#ifndef DMN_CHUNK_RUNS_H
#define DMN_CHUNK_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#define DMN_RUNS_NONE UINT64_MAX /* wrank of a run outside any working set */

typedef struct dmn_seg {
    uint64_t lo, hi;     /* [lo, hi), chunk-aligned */
    uint64_t wlo, wrank; /* start of its working-set interval and that chunk's use rank */
    uint64_t key;        /* sort key, before lo */
} dmn_seg_t;

typedef struct dmn_runs {
    dmn_seg_t *v;
    size_t n, cap;
} dmn_runs_t;

gmux_status_t dmn_runs_reserve(dmn_runs_t *r, size_t n);
void dmn_runs_free(dmn_runs_t *r);

/* Appends s (inline: the decisions push runs in their inner loops). */
static inline gmux_status_t dmn_runs_push(dmn_runs_t *r, dmn_seg_t s)
{
    if (r->n == r->cap) {
        gmux_status_t st = dmn_runs_reserve(r, r->n + 1);
        if (st != GMUX_OK)
            return st;
    }
    r->v[r->n++] = s;
    return GMUX_OK;
}

/* Appends [lo, hi), above the last run, into reserved room: merged into the
 * last run when it touches it (a resident run: wrank DMN_RUNS_NONE). */
static inline void dmn_runs_put_joined(dmn_runs_t *r, uint64_t lo, uint64_t hi)
{
    if (r->n && lo <= r->v[r->n - 1].hi)
        r->v[r->n - 1].hi = hi;
    else
        r->v[r->n++] = (dmn_seg_t){lo, hi, 0, DMN_RUNS_NONE, 0};
}

/* Sorts v[0..n) by (key, lo); scratch is a buffer it may grow. */
gmux_status_t dmn_runs_sort(dmn_seg_t *v, size_t n, dmn_runs_t *scratch);

/* Index of the first run of r (sorted, disjoint) whose hi is above addr. */
size_t dmn_runs_find(const dmn_runs_t *r, uint64_t addr);

/* r = r minus v[0..nv) (sorted by lo, disjoint). */
gmux_status_t dmn_runs_subtract(dmn_runs_t *r, const dmn_seg_t *v, size_t nv, dmn_runs_t *scratch);
/* r = r union v[0..nv) (sorted by lo, disjoint); touching runs merge. */
gmux_status_t dmn_runs_union(dmn_runs_t *r, const dmn_seg_t *v, size_t nv, dmn_runs_t *scratch);

/* Chunks in r (runs of 1 << shift); *addr_order = its runs are disjoint and
 * in address order. */
uint64_t dmn_runs_chunks(const dmn_runs_t *r, unsigned shift, int *addr_order);

/* out = in (sorted by lo) with overlapping or touching runs merged into the
 * first of them, which keeps the least wrank of them. */
gmux_status_t dmn_runs_merge_ranked(const dmn_runs_t *in, dmn_runs_t *out);

/* Keeps the first n chunks of r (it has at least n), cutting the last run
 * kept; returns how many runs are left. */
size_t dmn_runs_keep(dmn_runs_t *r, uint64_t n, unsigned shift);

/* The whole of fa (disjoint, address order, each run keyed by the use
 * position of its lo) made resident: res = its runs, joined where they touch;
 * in = its runs with wlo = lo, wrank = their key capped at rank_max and key
 * = the rank of their top chunk (capped), sorted by (key, lo). */
gmux_status_t dmn_runs_fill_ranked(const dmn_runs_t *fa, unsigned shift, uint64_t rank_max,
                                   dmn_runs_t *res, dmn_runs_t *in, dmn_runs_t *scratch);

/* in: non-empty ranges in the order of use, each with wrank = the position of
 * its first chunk when all of them are laid end to end in chunks. out: every
 * chunk of them once, at its first position: runs keyed by the position of
 * their lo, in increasing key order. */
gmux_status_t dmn_runs_first_cover(const dmn_runs_t *in, uint64_t chunk, dmn_runs_t *out,
                                   dmn_runs_t *scratch);

#endif /* DMN_CHUNK_RUNS_H */
