/* Victims of the chunk placement; see chunk_victims.h. */
#include "daemon/chunk_victims.h"
#include "daemon/place_alloc.h"

#include <stdlib.h>

/* Eviction order of a chunk: farthest next use, then highest address, then
 * highest task id, first. */
typedef struct cv_key {
    uint64_t pos, addr;
    uint32_t task;
} cv_key_t;

typedef struct dmn_cv_hent {
    cv_key_t top;
    uint32_t src;
    size_t seg;
} cv_hent_t;

static cv_key_t key_at(const dmn_cv_t *cv, const dmn_cv_src_t *src, const dmn_seg_t *s, uint64_t a)
{
    uint64_t pos =
        s->wrank == DMN_RUNS_NONE ? DMN_RUNS_NONE : src->slice | dmn_cv_rank(s, a, cv->shift);
    return (cv_key_t){pos, a, src->task};
}

static int key_gt(cv_key_t x, cv_key_t y)
{
    if (x.pos != y.pos)
        return x.pos > y.pos;
    if (x.addr != y.addr)
        return x.addr > y.addr;
    return x.task > y.task;
}

/* Where a taken run came from, kept in its wrank while dmn_cv_take runs (for
 * undo_take): the index of its run in its list and of its source. */
static uint64_t origin(size_t src, size_t seg)
{
    return (uint64_t)seg * DMN_CV_SRCS_MAX + src;
}

/* Every chunk of the untouched inside source si beats every other candidate
 * (its slice is later than the best of the rest) and all of it is needed:
 * its runs go to cv->vict whole and it is left empty (unchanged if the room
 * for them cannot be had). */
static int take_whole(dmn_cv_t *cv, uint32_t si, size_t nh, uint64_t need, gmux_status_t *st)
{
    dmn_cv_src_t *s = &cv->srcs[si];
    if (!s->whole || s->whole > need || (nh > 0 && cv->heap[0].top.pos >= s->slice))
        return 0;
    if ((*st = dmn_runs_reserve(cv->vict, cv->vict->n + s->runs->n)) != GMUX_OK)
        return 1;
    for (size_t i = 0; i < s->runs->n; i++) { /* in address order: sorted */
        const dmn_seg_t *g = &s->runs->v[i];
        cv->vict->v[cv->vict->n++] = (dmn_seg_t){g->lo, g->hi, DMN_CV_IN, origin(si, i), s->task};
    }
    s->runs->n = s->low = 0;
    return 1;
}

/* A take that failed: every run taken since vict had n0 goes back where it
 * came from (the latest first, so that each run gets its top back), and
 * dmn_cv_settle will leave the lists as they are. */
static void undo_take(dmn_cv_t *cv, size_t n0)
{
    for (size_t i = cv->vict->n; i-- > n0;) {
        const dmn_seg_t *e = &cv->vict->v[i];
        dmn_cv_src_t *s = &cv->srcs[e->wrank % DMN_CV_SRCS_MAX];
        size_t seg = (size_t)(e->wrank / DMN_CV_SRCS_MAX);
        s->runs->v[seg].hi = e->hi; /* a run taken whole kept its bounds */
        if (seg >= s->runs->n)
            s->runs->n = seg + 1;
    }
    cv->vict->n = n0;
    for (size_t k = 0; k < cv->n_srcs; k++)
        cv->srcs[k].low = cv->srcs[k].runs->n;
}

static void heap_push(dmn_cv_t *cv, size_t *n, uint32_t src, size_t seg)
{
    const dmn_cv_src_t *s = &cv->srcs[src];
    const dmn_seg_t *g = &s->runs->v[seg];
    cv_hent_t e = {key_at(cv, s, g, g->hi - cv->chunk), src, seg};
    size_t i = (*n)++;
    while (i > 0 && key_gt(e.top, cv->heap[(i - 1) / 2].top)) {
        cv->heap[i] = cv->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    cv->heap[i] = e;
}

static cv_hent_t heap_pop(dmn_cv_t *cv, size_t *n)
{
    cv_hent_t top = cv->heap[0], last = cv->heap[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && key_gt(cv->heap[c + 1].top, cv->heap[c].top))
            c++;
        if (!key_gt(cv->heap[c].top, last.top))
            break;
        cv->heap[i] = cv->heap[c];
        i = c;
    }
    if (*n)
        cv->heap[i] = last;
    return top;
}

/* How many chunks from the top of g beat y (the top one does). */
static uint64_t beats(const dmn_cv_t *cv, const dmn_cv_src_t *s, const dmn_seg_t *g, cv_key_t y)
{
    uint64_t len = (g->hi - g->lo) >> cv->shift;
    if (key_gt(key_at(cv, s, g, g->lo), y))
        return len;
    uint64_t lo = 1, hi = len - 1; /* the bottom one does not */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (key_gt(key_at(cv, s, g, g->hi - (mid + 1) * cv->chunk), y))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Takes the need best candidates of all sources into cv->vict (key = task,
 * wlo = source kind), in place: a merge of the sources, each run taken from
 * its top for as long as it beats the best of the others. A run taken whole
 * goes on to the next of its source without the heap when that one is the
 * best. */
gmux_status_t dmn_cv_take(dmn_cv_t *cv, uint64_t need, dmn_runs_t *vict)
{
    size_t nseg = 0, nh = 0, n0 = vict->n;
    cv->vict = vict;
    for (size_t s = 0; s < cv->n_srcs; s++)
        nseg += cv->srcs[s].runs->n;
    if (cv->heap_cap < nseg) {
        cv_hent_t *h = dmn_place_alloc_fails() ? NULL : realloc(cv->heap, nseg * sizeof(*h));
        if (!h) {
            undo_take(cv, n0);
            return GMUX_ERR_NOMEM;
        }
        cv->heap = h;
        cv->heap_cap = nseg;
    }
    for (uint32_t s = 0; s < cv->n_srcs; s++) {
        cv->srcs[s].low = cv->srcs[s].runs->n - 1;
        heap_push(cv, &nh, s, cv->srcs[s].low);
    }
    gmux_status_t st = GMUX_OK;
    while (need > 0 && nh > 0 && st == GMUX_OK) {
        cv_hent_t e = heap_pop(cv, &nh);
        uint32_t si = e.src;
        size_t idx = e.seg;
        dmn_cv_src_t *first = &cv->srcs[si];
        if (!first->touched && cv->before_take && (st = cv->before_take(cv->ctx, first)) != GMUX_OK)
            break;
        first->touched = 1;
        if (take_whole(cv, si, nh, need, &st)) {
            need -= cv->srcs[si].whole;
            continue;
        }
        cv->srcs[si].whole = 0; /* taken from below */
        for (;;) {
            dmn_cv_src_t *s = &cv->srcs[si];
            dmn_seg_t *g = &s->runs->v[idx];
            int pred = 0, have_y = 0; /* pred: the next of its source is the best of the rest */
            cv_key_t y = {0, 0, 0};
            if (idx == s->low && s->low > 0) { /* the next of its source is not on the heap */
                const dmn_seg_t *p = &s->runs->v[idx - 1];
                y = key_at(cv, s, p, p->hi - cv->chunk);
                if (nh == 0 || key_gt(y, cv->heap[0].top))
                    pred = have_y = 1;
                else
                    heap_push(cv, &nh, si, --s->low);
            }
            if (!pred && nh > 0)
                y = cv->heap[0].top, have_y = 1;
            uint64_t m = have_y ? beats(cv, s, g, y) : (g->hi - g->lo) >> cv->shift;
            m = m < need ? m : need;
            st = dmn_runs_push(cv->vict, (dmn_seg_t){g->hi - m * cv->chunk, g->hi,
                                                     (uint64_t)s->kind, origin(si, idx), s->task});
            if (st != GMUX_OK)
                break;
            g->hi -= m * cv->chunk;
            need -= m;
            if (g->hi > g->lo) { /* beaten, or enough */
                if (pred)
                    heap_push(cv, &nh, si, --s->low);
                heap_push(cv, &nh, si, idx);
                break;
            }
            if (!pred || need == 0)
                break;
            idx = --s->low;
        }
    }
    if (st != GMUX_OK) {
        undo_take(cv, n0);
        return st;
    }
    for (size_t i = n0; i < vict->n; i++)
        vict->v[i].wrank = 0;
    return GMUX_OK;
}

/* Puts the sources' runs back in order after the takes: empty ones go, a
 * partly taken inside run gets the key of its new top. */
void dmn_cv_settle(dmn_cv_t *cv)
{
    for (size_t k = 0; k < cv->n_srcs; k++) {
        dmn_cv_src_t *s = &cv->srcs[k];
        dmn_runs_t *r = s->runs;
        size_t n = s->low;
        for (size_t i = s->low; i < r->n; i++) {
            dmn_seg_t x = r->v[i];
            if (x.hi == x.lo)
                continue;
            if (s->kind == DMN_CV_IN)
                x.key = dmn_cv_rank(&x, x.hi - cv->chunk, cv->shift);
            size_t j = n++; /* insertion: it rarely moves */
            while (j > 0 &&
                   (x.key != r->v[j - 1].key ? x.key < r->v[j - 1].key : x.lo < r->v[j - 1].lo)) {
                r->v[j] = r->v[j - 1];
                j--;
            }
            r->v[j] = x;
        }
        r->n = n;
    }
    cv->n_srcs = 0;
}

void dmn_cv_fini(dmn_cv_t *cv)
{
    free(cv->heap);
    cv->heap = NULL;
    cv->heap_cap = 0;
}
