/*
 * One task's state in the "chunk" placement (place_chunk.h): its resident
 * runs and what its declared ranges give, kept across switches while they
 * keep their generation: its working set with use ranks, its chunks at
 * their first use, and its resident runs cut by its working set (the lists
 * the victims' merge takes from, chunk_victims.h); and the chunks it wants
 * filled. place_chunk.c decides the switches with them, and owns the undo
 * of a switch that fails (the bak fields).
 *
 * Ownership: a task owns its run arrays (dmn_ct_free); a context owns its
 * scratch arrays (dmn_ct_ctx_fini). Thread-safety: none.
 */
#ifndef DMN_CHUNK_TASK_H
#define DMN_CHUNK_TASK_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "daemon/chunk_runs.h"
#include "daemon/placement.h"

/* The chunk size and the scratch shared by the tasks of one placement. */
typedef struct dmn_ct_ctx {
    uint64_t chunk;
    unsigned shift;  /* chunk = 1 << shift */
    dmn_runs_t want; /* dmn_ct_want's answer */
    dmn_runs_t tmp, scratch;
} dmn_ct_ctx_t;

typedef struct dmn_ct_task {
    int used;
    uint32_t id;
    uint64_t seen;   /* generation of the last switch that listed it */
    dmn_runs_t res;  /* resident runs: sorted, disjoint, coalesced */
    uint64_t chunks; /* resident chunks */
    /* From its declared ranges, kept while they keep their generation: */
    uint64_t gen;
    uint32_t n_ranges;
    int ws_ok;
    dmn_runs_t ws;      /* its working set: sorted, merged, with ranks */
    dmn_runs_t fa;      /* its chunks at their first use, by position */
    int fa_sorted;      /* fa is in address order too */
    uint64_t ws_chunks; /* chunks in the working set */
    /* res cut by ws, kept while neither changes other than by a take: */
    int xl_ok;
    dmn_runs_t out; /* outside ws, address order */
    dmn_runs_t in;  /* inside ws, by key of the top chunk */
    uint64_t out_chunks;
    int res_src;      /* this switch: its runs are taken from res itself (idle) */
    int holding;      /* this switch: it holds the turn beside the incoming task */
    uint64_t src_gen; /* the switch that last listed its runs as candidates */
    /* res and chunks before the switch of generation bak_gen (place_chunk.c undo_switch):
     * in bak, or still in res's array, its first bak_n runs (bak_inplace) */
    dmn_runs_t bak;
    uint64_t bak_chunks, bak_gen;
    size_t bak_n;
    int bak_inplace;
} dmn_ct_task_t;

void dmn_ct_ctx_fini(dmn_ct_ctx_t *c);
void dmn_ct_free(dmn_ct_task_t *t);

/* What the task's declared ranges (v's) give, rebuilt when they changed:
 * - ws: the ranges rounded out to chunks, sorted and merged, each with the
 *   use rank of its first chunk (ranks add up in the order given; where
 *   ranges overlap or touch, the earliest rank wins);
 * - fa: every chunk of them at its first position in use order. */
gmux_status_t dmn_ct_ws_prepare(dmn_ct_ctx_t *c, dmn_ct_task_t *t, const dmn_task_view_t *v);

/* Cuts the task's resident runs by its working set: out (no next use,
 * address order) and in (keyed by the rank of their top chunk); xl_ok. */
gmux_status_t dmn_ct_cut(dmn_ct_ctx_t *c, dmn_ct_task_t *t);

/* The filled runs (c->want[0..m), address order, inside the working set)
 * join the task's inside runs, which stay cut and ordered; an error when
 * they have grown much beyond the resident runs: cut them again. */
gmux_status_t dmn_ct_in_add_fills(dmn_ct_ctx_t *c, dmn_ct_task_t *t, size_t m);

/* c->want = the task's chunks that are not resident, in order of first use
 * (first uses at positions below cap + its resident chunks, as far as the
 * reference expands), at most cap of them; *n_out: how many. */
gmux_status_t dmn_ct_want(dmn_ct_ctx_t *c, const dmn_ct_task_t *t, uint64_t cap, uint64_t *n_out);

#endif /* DMN_CHUNK_TASK_H */
