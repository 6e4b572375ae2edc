/*
 * Victims of the chunk placement (place_chunk.c): from lists of eviction
 * candidates, one per task and kind (outside its working set, inside it, or
 * all of an idle task), takes the chunks whose next use is farthest
 * (Belady): farthest position (slice << 40 | use rank), then highest
 * address, then highest task id, first.
 *
 * A list is a dmn_runs_t in increasing order of the key of its runs' top
 * chunk; runs are taken in place, from their top. The merge state (sources,
 * heap) is kept across switches to keep its memory.
 *
 * Ownership: a dmn_cv_t owns its heap (dmn_cv_fini); the lists stay their
 * owners'. Thread-safety: none.
 */
#ifndef DMN_CHUNK_VICTIMS_H
#define DMN_CHUNK_VICTIMS_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "daemon/chunk_runs.h"

#define DMN_CV_SLICE_SH 40 /* position = slice << 40 | rank inside the slice */
#define DMN_CV_RANK_MAX ((1ull << DMN_CV_SLICE_SH) - 1)
#define DMN_CV_SRCS_MAX 512

/* Kinds of lists: outside runs and an idle task's runs have no next use
 * (wrank DMN_RUNS_NONE); inside runs carry their working-set rank. */
enum { DMN_CV_OUT, DMN_CV_IN, DMN_CV_RES };

typedef struct dmn_cv_src {
    dmn_runs_t *runs;
    uint32_t task;
    int kind;
    uint64_t slice; /* turn << 40 */
    size_t low;     /* lowest index pushed on the heap */
    uint64_t whole; /* inside runs untouched so far: their chunks; else 0 */
    int touched;    /* before_take was called for it */
} dmn_cv_src_t;

typedef struct dmn_cv {
    uint64_t chunk;
    unsigned shift; /* chunk = 1 << shift */
    dmn_cv_src_t srcs[DMN_CV_SRCS_MAX];
    size_t n_srcs;
    dmn_runs_t *vict; /* during dmn_cv_take */
    struct dmn_cv_hent *heap;
    size_t heap_cap;
    /* If set, called once per source before anything is taken from it (so
     * that its owner may keep a copy); an error fails dmn_cv_take (the
     * calls already made stay made). */
    gmux_status_t (*before_take)(void *ctx, const dmn_cv_src_t *src);
    void *ctx;
} dmn_cv_t;

/* Use rank of the chunk at a inside its working-set interval (s->wlo,
 * s->wrank), saturating at DMN_CV_RANK_MAX. */
static inline uint64_t dmn_cv_rank(const dmn_seg_t *s, uint64_t a, unsigned shift)
{
    uint64_t d = (a - s->wlo) >> shift, r = s->wrank + d;
    return r < d || r > DMN_CV_RANK_MAX ? DMN_CV_RANK_MAX : r;
}

/* Lists a source (a non-empty one; at most DMN_CV_SRCS_MAX per switch).
 * whole: for an inside list, its chunks (it may then be taken whole). */
static inline void dmn_cv_add(dmn_cv_t *cv, dmn_runs_t *runs, uint32_t task, int kind,
                              uint32_t turn, uint64_t whole)
{
    if (runs->n && cv->n_srcs < DMN_CV_SRCS_MAX)
        cv->srcs[cv->n_srcs++] = (dmn_cv_src_t){
            runs, task, kind, (uint64_t)turn << DMN_CV_SLICE_SH, 0, kind == DMN_CV_IN ? whole : 0,
            0};
}

/* Takes the need best chunks of the listed sources into vict (appended:
 * key = task, wlo = kind of its list, wrank 0). All or nothing: on an error
 * (an allocation, before_take) vict and every list are as they were, and
 * dmn_cv_settle then only forgets the lists. */
gmux_status_t dmn_cv_take(dmn_cv_t *cv, uint64_t need, dmn_runs_t *vict);

/* After dmn_cv_take: puts the lists back in order (empty runs go, a partly
 * taken inside run gets the key of its new top) and forgets them. */
void dmn_cv_settle(dmn_cv_t *cv);

void dmn_cv_fini(dmn_cv_t *cv);

#endif /* DMN_CHUNK_VICTIMS_H */
