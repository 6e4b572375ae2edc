/* Chunk-granularity OPT placement across tasks; see place_chunk.h. */
#include "daemon/place_chunk.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/settings.h"
#include "daemon/chunk_runs.h"
#include "daemon/place_opt.h"

#define PC_SLICE_SH  40 /* position = slice << 40 | rank inside the slice */
#define PC_RANK_MAX  ((1ull << PC_SLICE_SH) - 1)
#define PC_TASKS_MAX 256

typedef struct pc_task {
    int used;
    uint32_t id;
    uint64_t seen;   /* generation of the last switch that listed it */
    dmn_runs_t res;  /* resident runs: sorted, disjoint, coalesced */
    uint64_t chunks; /* resident chunks */
} pc_task_t;

/* One list of eviction candidates, segments src.v[off, off + n) in
 * increasing order of their top chunk: the best is last. */
typedef struct pc_src {
    uint32_t task;
    uint64_t slice; /* turn << 40 */
    size_t off, n;
    size_t low; /* lowest index pushed on the heap */
} pc_src_t;

/* Eviction order of a chunk: farthest next use, then highest address, then
 * highest task id, first. */
typedef struct pc_key {
    uint64_t pos, addr;
    uint32_t task;
} pc_key_t;

typedef struct pc_hent {
    pc_key_t top;
    uint32_t src;
    size_t seg;
} pc_hent_t;

struct dmn_place_chunk {
    dmn_placement_t pl;
    uint64_t capacity, chunk, slots, total, gen;
    pc_task_t tasks[PC_TASKS_MAX];
    uint16_t hint[PC_TASKS_MAX]; /* view index -> slot at the last switch */
    pc_task_t *of[PC_TASKS_MAX]; /* view index -> its state this switch */
    size_t wofs[PC_TASKS_MAX], wn[PC_TASKS_MAX];
    pc_src_t srcs[2 * PC_TASKS_MAX];
    /* Scratch kept across switches: working sets, sources, the incoming
     * task's first uses, wanted and evicted runs, sort and merge buffers. */
    dmn_runs_t ws, tmp, src, lsegs, fa, want, vict, scratch;
    pc_hent_t *heap;
    size_t heap_cap;
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* A range rounded out to chunks, as the reference rounds it. */
static void round_range(const dmn_place_chunk_t *pc, dmn_range_t r, uint64_t *lo, uint64_t *hi)
{
    uint64_t mask = pc->chunk - 1, top = UINT64_MAX & ~mask;
    uint64_t end = r.base + r.len; /* no wrap (protocol) */
    *lo = r.base & ~mask;
    *hi = end > top ? top : (end + mask) & ~mask;
}

/* Appends the task's working set to pc->ws: its ranges rounded out to
 * chunks, sorted and merged, each with the use rank of its first chunk
 * (ranks add up in the order given; where ranges overlap or touch, the
 * earliest rank wins). */
static gmux_status_t ws_build(dmn_place_chunk_t *pc, const dmn_task_view_t *v, size_t k)
{
    gmux_status_t st = dmn_runs_reserve(&pc->tmp, v->n_ranges);
    if (st != GMUX_OK)
        return st;
    uint64_t rank = 0;
    for (uint32_t i = 0; i < v->n_ranges; i++) {
        dmn_seg_t *s = &pc->tmp.v[i];
        round_range(pc, v->ranges[i], &s->lo, &s->hi);
        s->wlo = s->lo;
        s->wrank = rank;
        s->key = 0;
        uint64_t n = s->hi > s->lo ? (s->hi - s->lo) / pc->chunk : 0;
        rank = n > PC_RANK_MAX - rank ? PC_RANK_MAX : rank + n;
    }
    pc->tmp.n = v->n_ranges;
    st = dmn_runs_sort(pc->tmp.v, pc->tmp.n, &pc->scratch);
    pc->wofs[k] = pc->ws.n;
    for (size_t i = 0; i < pc->tmp.n && st == GMUX_OK; i++) {
        const dmn_seg_t *s = &pc->tmp.v[i];
        if (s->hi <= s->lo)
            continue;
        dmn_seg_t *last = pc->ws.n > pc->wofs[k] ? &pc->ws.v[pc->ws.n - 1] : NULL;
        if (last && s->lo <= last->hi) {
            last->hi = s->hi > last->hi ? s->hi : last->hi;
            last->wrank = s->wrank < last->wrank ? s->wrank : last->wrank;
            continue;
        }
        st = dmn_runs_push(&pc->ws, *s);
    }
    pc->wn[k] = pc->ws.n - pc->wofs[k];
    return st;
}

/* Use rank of the chunk at a inside its working-set interval. */
static uint64_t rank_at(const dmn_place_chunk_t *pc, const dmn_seg_t *s, uint64_t a)
{
    uint64_t r = sat_add(s->wrank, (a - s->wlo) / pc->chunk);
    return r > PC_RANK_MAX ? PC_RANK_MAX : r;
}

static pc_key_t key_at(const dmn_place_chunk_t *pc, const pc_src_t *src, const dmn_seg_t *s,
                       uint64_t a)
{
    uint64_t pos = s->wrank == DMN_RUNS_NONE ? DMN_RUNS_NONE : src->slice | rank_at(pc, s, a);
    return (pc_key_t){pos, a, src->task};
}

static int key_gt(pc_key_t x, pc_key_t y)
{
    if (x.pos != y.pos)
        return x.pos > y.pos;
    if (x.addr != y.addr)
        return x.addr > y.addr;
    return x.task > y.task;
}

/* Splits a task's resident runs by its working set: the parts outside it
 * (no next use) become one source, the parts inside, keyed by the rank of
 * their top chunk, another (with_inside). */
static gmux_status_t add_sources(dmn_place_chunk_t *pc, const pc_task_t *t, size_t k,
                                 const dmn_task_view_t *v, int with_inside, size_t *n_srcs,
                                 uint64_t *n_chunks)
{
    const dmn_seg_t *w = &pc->ws.v[pc->wofs[k]];
    size_t nw = pc->wn[k], j = 0, x0 = pc->src.n;
    uint64_t slice = (uint64_t)v->turn << PC_SLICE_SH;
    gmux_status_t st = GMUX_OK;
    pc->lsegs.n = 0;
    for (size_t i = 0; i < t->res.n && st == GMUX_OK; i++) {
        uint64_t a = t->res.v[i].lo, b = t->res.v[i].hi;
        while (a < b && st == GMUX_OK) {
            while (j < nw && w[j].hi <= a)
                j++;
            if (j == nw || w[j].lo >= b || w[j].lo > a) {
                uint64_t e = (j == nw || w[j].lo >= b) ? b : w[j].lo;
                st = dmn_runs_push(&pc->src, (dmn_seg_t){a, e, 0, DMN_RUNS_NONE, 0});
                a = e;
                continue;
            }
            uint64_t e = b < w[j].hi ? b : w[j].hi;
            if (with_inside) {
                dmn_seg_t s = {a, e, w[j].lo, w[j].wrank, 0};
                s.key = rank_at(pc, &s, e - pc->chunk);
                st = dmn_runs_push(&pc->lsegs, s);
            }
            a = e;
        }
    }
    if (st != GMUX_OK)
        return st;
    size_t nx = pc->src.n - x0;
    if (nx)
        pc->srcs[(*n_srcs)++] = (pc_src_t){t->id, slice, x0, nx, 0};
    if (pc->lsegs.n) {
        st = dmn_runs_sort(pc->lsegs.v, pc->lsegs.n, &pc->scratch);
        size_t l0 = pc->src.n;
        for (size_t i = 0; i < pc->lsegs.n && st == GMUX_OK; i++)
            st = dmn_runs_push(&pc->src, pc->lsegs.v[i]);
        pc->srcs[(*n_srcs)++] = (pc_src_t){t->id, slice, l0, pc->lsegs.n, 0};
    }
    for (size_t i = x0; i < pc->src.n; i++)
        *n_chunks += (pc->src.v[i].hi - pc->src.v[i].lo) / pc->chunk;
    return st;
}

/* An idle task: every resident chunk has no next use; address order. */
static gmux_status_t add_idle_source(dmn_place_chunk_t *pc, const pc_task_t *t, size_t *n_srcs,
                                     uint64_t *n_chunks)
{
    size_t off = pc->src.n;
    gmux_status_t st = GMUX_OK;
    for (size_t i = 0; i < t->res.n && st == GMUX_OK; i++) {
        dmn_seg_t s = t->res.v[i];
        s.wrank = DMN_RUNS_NONE;
        st = dmn_runs_push(&pc->src, s);
    }
    if (st == GMUX_OK && t->res.n)
        pc->srcs[(*n_srcs)++] = (pc_src_t){t->id, 0, off, t->res.n, 0};
    *n_chunks += t->chunks;
    return st;
}

static void heap_push(dmn_place_chunk_t *pc, size_t *n, uint32_t src, size_t seg)
{
    const pc_src_t *s = &pc->srcs[src];
    const dmn_seg_t *g = &pc->src.v[s->off + seg];
    pc_hent_t e = {key_at(pc, s, g, g->hi - pc->chunk), src, seg};
    size_t i = (*n)++;
    while (i > 0 && key_gt(e.top, pc->heap[(i - 1) / 2].top)) {
        pc->heap[i] = pc->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    pc->heap[i] = e;
}

static pc_hent_t heap_pop(dmn_place_chunk_t *pc, size_t *n)
{
    pc_hent_t top = pc->heap[0], last = pc->heap[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && key_gt(pc->heap[c + 1].top, pc->heap[c].top))
            c++;
        if (!key_gt(pc->heap[c].top, last.top))
            break;
        pc->heap[i] = pc->heap[c];
        i = c;
    }
    if (*n)
        pc->heap[i] = last;
    return top;
}

/* Takes the need best candidates of all sources into pc->vict (key = task):
 * a merge of the sources' segments, each taken from its top for as long as
 * it beats the best of the others. */
static gmux_status_t take_victims(dmn_place_chunk_t *pc, size_t n_srcs, uint64_t need)
{
    if (pc->heap_cap < pc->src.n) {
        pc_hent_t *h = realloc(pc->heap, pc->src.n * sizeof(*h));
        if (!h)
            return GMUX_ERR_NOMEM;
        pc->heap = h;
        pc->heap_cap = pc->src.n;
    }
    size_t nh = 0;
    for (uint32_t s = 0; s < n_srcs; s++) {
        pc->srcs[s].low = pc->srcs[s].n - 1;
        heap_push(pc, &nh, s, pc->srcs[s].low);
    }
    gmux_status_t st = GMUX_OK;
    const uint64_t c = pc->chunk;
    while (need > 0 && nh > 0 && st == GMUX_OK) {
        pc_hent_t e = heap_pop(pc, &nh);
        pc_src_t *s = &pc->srcs[e.src];
        dmn_seg_t *g = &pc->src.v[s->off + e.seg];
        if (e.seg == s->low && s->low > 0) /* what is below it in its source may come next */
            heap_push(pc, &nh, e.src, --s->low);
        uint64_t len = (g->hi - g->lo) / c, m = len;
        if (nh > 0 && !key_gt(key_at(pc, s, g, g->lo), pc->heap[0].top)) {
            uint64_t lo = 1, hi = len - 1; /* the top chunk beats it, the bottom one not */
            while (lo < hi) {
                uint64_t mid = lo + (hi - lo) / 2;
                if (key_gt(key_at(pc, s, g, g->hi - (mid + 1) * c), pc->heap[0].top))
                    lo = mid + 1;
                else
                    hi = mid;
            }
            m = lo;
        }
        m = m < need ? m : need;
        st = dmn_runs_push(&pc->vict, (dmn_seg_t){g->hi - m * c, g->hi, 0, 0, s->task});
        g->hi -= m * c;
        need -= m;
        if (g->hi > g->lo)
            heap_push(pc, &nh, e.src, e.seg);
    }
    return st;
}

/* The incoming task's chunks in order of first use (pc->fa, key = the
 * position of the chunk at lo in its ranges expanded to chunks), first uses
 * at positions below limit only. */
static gmux_status_t first_uses(dmn_place_chunk_t *pc, const dmn_task_view_t *to, uint64_t limit)
{
    gmux_status_t st = dmn_runs_reserve(&pc->tmp, to->n_ranges);
    if (st != GMUX_OK)
        return st;
    uint64_t pos = 0;
    pc->tmp.n = 0;
    for (uint32_t i = 0; i < to->n_ranges && pos < limit; i++) {
        dmn_seg_t s = {0, 0, 0, pos, 0};
        round_range(pc, to->ranges[i], &s.lo, &s.hi);
        if (s.hi <= s.lo)
            continue;
        uint64_t n = (s.hi - s.lo) / pc->chunk;
        if (n > limit - pos) /* past limit the expansion stops */
            s.hi = s.lo + (limit - pos) * pc->chunk;
        s.wlo = s.lo;
        pc->tmp.v[pc->tmp.n++] = s;
        pos = sat_add(pos, n);
    }
    return dmn_runs_first_cover(&pc->tmp, pc->chunk, &pc->fa, &pc->scratch);
}

/* pc->want = the incoming task's chunks that are not resident, in order of
 * first use, at most cap of them; returns how many. */
static gmux_status_t want_build(dmn_place_chunk_t *pc, const dmn_task_view_t *to,
                                const pc_task_t *t, uint64_t *n_out)
{
    uint64_t cap = pc->slots, n = 0;
    gmux_status_t st = first_uses(pc, to, cap + (t ? t->chunks : 0));
    pc->want.n = 0;
    for (size_t i = 0; i < pc->fa.n && n < cap && st == GMUX_OK; i++) {
        const dmn_seg_t *f = &pc->fa.v[i];
        size_t j = t ? dmn_runs_find(&t->res, f->lo) : 0;
        uint64_t a = f->lo;
        while (a < f->hi && n < cap && st == GMUX_OK) {
            uint64_t e = f->hi;
            if (t && j < t->res.n && t->res.v[j].lo <= a) { /* resident: skip it */
                a = t->res.v[j++].hi;
                continue;
            }
            if (t && j < t->res.n && t->res.v[j].lo < e)
                e = t->res.v[j].lo;
            uint64_t k = (e - a) / pc->chunk;
            if (k > cap - n)
                e = a + (cap - n) * pc->chunk, k = cap - n;
            st = dmn_runs_push(&pc->want, (dmn_seg_t){a, e, 0, 0, f->key});
            n += k;
            a = e;
        }
    }
    *n_out = n;
    return st;
}

static pc_task_t *find_task(dmn_place_chunk_t *pc, size_t k, uint32_t id, int create)
{
    pc_task_t *free_slot = NULL;
    if (k < PC_TASKS_MAX && pc->tasks[pc->hint[k]].used && pc->tasks[pc->hint[k]].id == id)
        return &pc->tasks[pc->hint[k]];
    for (int i = 0; i < PC_TASKS_MAX; i++) {
        if (pc->tasks[i].used && pc->tasks[i].id == id) {
            if (k < PC_TASKS_MAX)
                pc->hint[k] = (uint16_t)i;
            return &pc->tasks[i];
        }
        if (!pc->tasks[i].used && !free_slot)
            free_slot = &pc->tasks[i];
    }
    if (!create || !free_slot)
        return NULL;
    memset(free_slot, 0, sizeof(*free_slot));
    free_slot->used = 1;
    free_slot->id = id;
    return free_slot;
}

/* Forgets tasks that left (their memory went with them); maps the views to
 * their states. */
static void forget_gone(dmn_place_chunk_t *pc, const dmn_task_view_t *tasks, size_t n_tasks)
{
    pc->gen++;
    for (size_t k = 0; k < n_tasks; k++) {
        pc->of[k] = find_task(pc, k, tasks[k].id, 0);
        if (pc->of[k])
            pc->of[k]->seen = pc->gen;
    }
    for (int i = 0; i < PC_TASKS_MAX; i++) {
        pc_task_t *t = &pc->tasks[i];
        if (t->used && t->seen != pc->gen) {
            pc->total -= t->chunks;
            dmn_runs_free(&t->res);
            t->used = 0;
        }
    }
}

/* Removes the victims (sorted by task and address) from their tasks'
 * resident runs and writes the EVICT orders. */
static gmux_status_t apply_evictions(dmn_place_chunk_t *pc, dmn_plan_t *plan)
{
    gmux_status_t st = dmn_runs_sort(pc->vict.v, pc->vict.n, &pc->scratch);
    for (size_t i = 0; i < pc->vict.n && st == GMUX_OK; i++) {
        const dmn_seg_t *v = &pc->vict.v[i];
        st = dmn_plan_add(plan, (uint32_t)v->key, DMN_PLAN_EVICT,
                          (dmn_range_t){v->lo, v->hi - v->lo});
    }
    for (size_t b = 0, e; b < pc->vict.n && st == GMUX_OK; b = e) {
        uint64_t n = 0;
        for (e = b; e < pc->vict.n && pc->vict.v[e].key == pc->vict.v[b].key; e++)
            n += (pc->vict.v[e].hi - pc->vict.v[e].lo) / pc->chunk;
        pc_task_t *t = find_task(pc, PC_TASKS_MAX, (uint32_t)pc->vict.v[b].key, 0);
        st = dmn_runs_subtract(&t->res, &pc->vict.v[b], e - b, &pc->scratch);
        t->chunks -= n;
        pc->total -= n;
    }
    return st;
}

static gmux_status_t chunk_on_switch(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                                     const dmn_task_view_t *from, const dmn_task_view_t *to,
                                     dmn_plan_t *plan)
{
    (void)from;
    dmn_place_chunk_t *pc = ctx;
    if (n_tasks > PC_TASKS_MAX)
        return GMUX_ERR_CAPACITY;
    forget_gone(pc, tasks, n_tasks);
    pc_task_t *in = find_task(pc, PC_TASKS_MAX, to->id, 0);
    uint64_t nwant = 0;
    gmux_status_t st = want_build(pc, to, in, &nwant);
    if (st != GMUX_OK)
        return st;
    uint64_t room = pc->slots - pc->total;
    pc->vict.n = 0;
    if (nwant > room) {
        /* Every resident chunk but the incoming slice's is a candidate. */
        size_t n_srcs = 0;
        uint64_t ncand = 0;
        pc->ws.n = pc->src.n = 0;
        for (size_t k = 0; k < n_tasks && st == GMUX_OK; k++) {
            const pc_task_t *t = pc->of[k];
            if (!t || t->chunks == 0)
                continue;
            if (tasks[k].turn == DMN_TURN_NONE && tasks[k].id != to->id) {
                st = add_idle_source(pc, t, &n_srcs, &ncand);
                continue;
            }
            st = ws_build(pc, &tasks[k], k);
            if (st == GMUX_OK)
                st = add_sources(pc, t, k, &tasks[k], tasks[k].id != to->id, &n_srcs, &ncand);
        }
        uint64_t short_by = nwant - room;
        if (short_by > ncand) { /* the working set alone is too big: fill what fits */
            nwant -= short_by - ncand;
            short_by = ncand;
        }
        if (st == GMUX_OK)
            st = take_victims(pc, n_srcs, short_by);
        if (st == GMUX_OK)
            st = apply_evictions(pc, plan);
        if (st != GMUX_OK)
            return st;
    }
    if (nwant == 0)
        return GMUX_OK;
    /* The first nwant wanted chunks, filled in address order. */
    size_t m = 0;
    for (uint64_t left = nwant; left > 0; m++) {
        dmn_seg_t *w = &pc->want.v[m];
        uint64_t k = (w->hi - w->lo) / pc->chunk;
        if (k > left)
            w->hi = w->lo + left * pc->chunk, k = left;
        w->key = 0;
        left -= k;
    }
    pc->want.n = m;
    st = dmn_runs_sort(pc->want.v, m, &pc->scratch);
    for (size_t i = 0; i < m && st == GMUX_OK; i++)
        st = dmn_plan_add(plan, to->id, DMN_PLAN_FILL,
                          (dmn_range_t){pc->want.v[i].lo, pc->want.v[i].hi - pc->want.v[i].lo});
    if (st == GMUX_OK && !in && !(in = find_task(pc, PC_TASKS_MAX, to->id, 1)))
        st = GMUX_ERR_CAPACITY;
    if (st == GMUX_OK)
        st = dmn_runs_union(&in->res, pc->want.v, m, &pc->scratch);
    if (st == GMUX_OK) {
        in->chunks += nwant;
        pc->total += nwant;
    }
    return st;
}

gmux_status_t dmn_place_chunk_create(uint64_t capacity, uint64_t chunk, dmn_place_chunk_t **out)
{
    if (chunk == 0 || (chunk & (chunk - 1)) != 0)
        return GMUX_ERR_INVALID;
    dmn_place_chunk_t *pc = calloc(1, sizeof(*pc));
    if (!pc)
        return GMUX_ERR_NOMEM;
    if (capacity == 0)
        capacity = 1ull << 40;
    pc->capacity = capacity & ~(chunk - 1);
    if (!pc->capacity)
        pc->capacity = chunk;
    pc->chunk = chunk;
    pc->slots = pc->capacity / chunk;
    pc->pl = (dmn_placement_t){"chunk", pc, chunk_on_switch};
    *out = pc;
    return GMUX_OK;
}

void dmn_place_chunk_destroy(dmn_place_chunk_t *pc)
{
    if (!pc)
        return;
    for (int i = 0; i < PC_TASKS_MAX; i++)
        dmn_runs_free(&pc->tasks[i].res);
    dmn_runs_t *scratch[] = {&pc->ws, &pc->tmp,  &pc->src,  &pc->lsegs,
                             &pc->fa, &pc->want, &pc->vict, &pc->scratch};
    for (size_t i = 0; i < sizeof(scratch) / sizeof(scratch[0]); i++)
        dmn_runs_free(scratch[i]);
    free(pc->heap);
    free(pc);
}

const dmn_placement_t *dmn_place_chunk_placement(dmn_place_chunk_t *pc)
{
    return &pc->pl;
}

uint64_t dmn_place_chunk_resident(const dmn_place_chunk_t *pc, uint32_t task_id)
{
    for (int i = 0; i < PC_TASKS_MAX; i++)
        if (pc->tasks[i].used && pc->tasks[i].id == task_id)
            return pc->tasks[i].chunks * pc->chunk;
    return 0;
}

uint64_t dmn_place_chunk_total(const dmn_place_chunk_t *pc)
{
    return pc->total * pc->chunk;
}

const dmn_placement_t *dmn_place_chunk_default(void)
{
    static dmn_place_chunk_t *inst;
    if (!inst && dmn_place_chunk_create(COM_SETTING_SIZE(DAEMON_CAPACITY), DMN_OPT_CHUNK, &inst) !=
                     GMUX_OK) {
        COM_ERROR(DAEMON, "chunk placement: cannot create it");
        return NULL;
    }
    return &inst->pl;
}
