/*
 * The reference of the "chunk" placement: the straightforward algorithm it
 * replaced, kept for tests and the benchmark only; see place_chunk_ref.h.
 */
#include "place_chunk_ref.h"

#include <stdlib.h>
#include <string.h>

#define PC_INF       UINT64_MAX
#define PC_SLICE_SH  40 /* position = slice << 40 | rank inside the slice */
#define PC_RANK_MAX  ((1ull << PC_SLICE_SH) - 1)
#define PC_TASKS_MAX 256

typedef struct pc_chunk {
    uint32_t task;
    uint64_t addr;
} pc_chunk_t;

typedef struct pc_iv {
    uint64_t lo, hi; /* chunk-aligned */
    uint64_t rank;   /* use order of the chunk at lo inside the task's slice */
} pc_iv_t;

typedef struct pc_ws {
    pc_iv_t *v;
    uint32_t n;
} pc_ws_t;

typedef struct pc_want {
    uint64_t addr, rank;
} pc_want_t;

typedef struct pc_cand {
    uint64_t pos, addr;
    uint32_t task;
    uint32_t idx;  /* in res */
    uint32_t hold; /* of a task holding the turn beside the incoming one */
} pc_cand_t;

struct dmn_place_chunk_ref {
    dmn_placement_t pl;
    uint64_t capacity, chunk;
    int limited;     /* a capacity was given: fills ahead are planned */
    pc_chunk_t *res; /* sorted by (task, addr) */
    size_t nres;
};

static int chunk_cmp(const void *a, const void *b)
{
    const pc_chunk_t *x = a, *y = b;
    if (x->task != y->task)
        return x->task < y->task ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int iv_cmp(const void *a, const void *b)
{
    const pc_iv_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int want_by_addr(const void *a, const void *b)
{
    const pc_want_t *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int want_by_rank(const void *a, const void *b)
{
    const pc_want_t *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Farthest next use first; among equals the highest address. */
static int cand_cmp(const void *a, const void *b)
{
    const pc_cand_t *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos > y->pos ? -1 : 1;
    if (x->addr != y->addr)
        return x->addr > y->addr ? -1 : 1;
    return x->task > y->task ? -1 : x->task < y->task;
}

/* Reorders c[0..n) so that c[0..k) are the k first by cand_cmp (k < n):
 * quickselect, O(n) on average, no sort of the whole candidate list. */
static void select_first(pc_cand_t *c, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        pc_cand_t pivot = c[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (cand_cmp(&c[i], &pivot) < 0)
                i++;
            while (cand_cmp(&c[j], &pivot) > 0)
                j--;
            if (i <= j) {
                pc_cand_t t = c[i];
                c[i] = c[j];
                c[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

/* EVICT orders by task and address, so contiguous chunks merge. */
static int evict_cmp(const void *a, const void *b)
{
    const pc_cand_t *x = a, *y = b;
    if (x->task != y->task)
        return x->task < y->task ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The task's working set: its ranges rounded out to chunks, sorted and
 * merged, each with the use rank of its first chunk. */
static gmux_status_t ws_build(const dmn_place_chunk_ref_t *pc, const dmn_task_view_t *v,
                              pc_ws_t *ws)
{
    ws->v = NULL;
    ws->n = 0;
    if (v->n_ranges == 0)
        return GMUX_OK;
    pc_iv_t *t = malloc(v->n_ranges * sizeof(*t));
    if (!t)
        return GMUX_ERR_NOMEM;
    uint64_t mask = pc->chunk - 1, top = UINT64_MAX & ~mask, rank = 0;
    for (uint32_t i = 0; i < v->n_ranges; i++) {
        uint64_t end = v->ranges[i].base + v->ranges[i].len; /* no wrap (protocol) */
        t[i].lo = v->ranges[i].base & ~mask;
        t[i].hi = end > top ? top : (end + mask) & ~mask;
        t[i].rank = rank;
        uint64_t n = (t[i].hi - t[i].lo) / pc->chunk;
        rank = n > PC_RANK_MAX - rank ? PC_RANK_MAX : rank + n;
    }
    qsort(t, v->n_ranges, sizeof(*t), iv_cmp);
    uint32_t n = 0;
    for (uint32_t i = 0; i < v->n_ranges; i++) {
        if (t[i].hi <= t[i].lo)
            continue;
        if (n && t[i].lo <= t[n - 1].hi) { /* overlap: the earlier rank wins */
            t[n - 1].hi = t[i].hi > t[n - 1].hi ? t[i].hi : t[n - 1].hi;
            t[n - 1].rank = t[i].rank < t[n - 1].rank ? t[i].rank : t[n - 1].rank;
            continue;
        }
        t[n++] = t[i];
    }
    ws->v = t;
    ws->n = n;
    return GMUX_OK;
}

/* Rank of the chunk at addr in the working set, PC_INF if not in it. */
static uint64_t ws_rank(const dmn_place_chunk_ref_t *pc, const pc_ws_t *ws, uint64_t addr)
{
    uint32_t lo = 0, hi = ws->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ws->v[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr >= ws->v[lo - 1].hi)
        return PC_INF;
    uint64_t r = ws->v[lo - 1].rank + (addr - ws->v[lo - 1].lo) / pc->chunk;
    return r > PC_RANK_MAX ? PC_RANK_MAX : r;
}

static int res_has(const dmn_place_chunk_ref_t *pc, uint32_t task, uint64_t addr)
{
    pc_chunk_t key = {task, addr};
    return pc->nres > 0 && bsearch(&key, pc->res, pc->nres, sizeof(key), chunk_cmp) != NULL;
}

/* The incoming task's chunks that are not resident, in use order, at most
 * cap of them (its ranges are expanded up to cap + its resident chunks). */
static gmux_status_t want_build(const dmn_place_chunk_ref_t *pc, const dmn_task_view_t *to,
                                uint64_t cap, pc_want_t **out, size_t *n_out)
{
    size_t mine = 0;
    for (size_t i = 0; i < pc->nres; i++)
        mine += pc->res[i].task == to->id;
    uint64_t limit = cap + mine, mask = pc->chunk - 1, top = UINT64_MAX & ~mask;
    size_t n = 0, alloc = 0;
    pc_want_t *w = NULL;
    uint64_t rank = 0;
    for (uint32_t i = 0; i < to->n_ranges && n < limit; i++) {
        uint64_t end = to->ranges[i].base + to->ranges[i].len;
        uint64_t lo = to->ranges[i].base & ~mask, hi = end > top ? top : (end + mask) & ~mask;
        for (uint64_t a = lo; a < hi && n < limit; a += pc->chunk, rank++) {
            if (n == alloc) {
                size_t na = alloc ? 2 * alloc : 64;
                pc_want_t *nw = realloc(w, na * sizeof(*nw));
                if (!nw) {
                    free(w);
                    return GMUX_ERR_NOMEM;
                }
                w = nw, alloc = na;
            }
            w[n++] = (pc_want_t){a, rank};
        }
    }
    if (n) {
        qsort(w, n, sizeof(*w), want_by_addr);
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if ((m == 0 || w[m - 1].addr != w[i].addr) && !res_has(pc, to->id, w[i].addr))
                w[m++] = w[i];
        n = m;
        qsort(w, n, sizeof(*w), want_by_rank);
    }
    *out = w;
    *n_out = n > cap ? (size_t)cap : n;
    return GMUX_OK;
}

/* FILL (or AHEAD) orders of want[0..nwant) in address order; the chunks
 * join the resident set, merged into the task's run of it (res stays sorted). */
static gmux_status_t fill_task(dmn_place_chunk_ref_t *pc, uint32_t id, dmn_plan_kind_t kind,
                               pc_want_t *want, size_t nwant, dmn_plan_t *plan)
{
    pc_chunk_t *next = realloc(pc->res, (pc->nres + nwant + 1) * sizeof(*next));
    if (!next)
        return GMUX_ERR_NOMEM;
    pc->res = next;
    if (nwant > 0)
        qsort(want, nwant, sizeof(*want), want_by_addr);
    gmux_status_t st = GMUX_OK;
    for (size_t i = 0; i < nwant && st == GMUX_OK; i++)
        st = dmn_plan_add(plan, id, kind, (dmn_range_t){want[i].addr, pc->chunk});
    size_t b = 0, e;
    while (b < pc->nres && pc->res[b].task < id)
        b++;
    for (e = b; e < pc->nres && pc->res[e].task == id;)
        e++;
    memmove(&pc->res[e + nwant], &pc->res[e], (pc->nres - e) * sizeof(*pc->res));
    /* merge res[b, e) and want from the top down into res[b, e + nwant) */
    size_t i = e, j = nwant, o = e + nwant;
    while (j > 0) {
        if (i > b && pc->res[i - 1].addr > want[j - 1].addr)
            pc->res[--o] = pc->res[--i];
        else
            pc->res[--o] = (pc_chunk_t){id, want[--j].addr};
    }
    pc->nres += nwant;
    return st;
}

/* The slots neither resident chunks nor pinned ones take. */
static uint64_t free_slots(const dmn_place_chunk_ref_t *pc, uint64_t slots, uint64_t pinned)
{
    uint64_t used = pc->nres + pinned;
    return used < slots ? slots - used : 0;
}

static gmux_status_t chunk_on_switch(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                                     const dmn_task_view_t *from, const dmn_task_view_t *to,
                                     dmn_plan_t *plan)
{
    (void)from;
    dmn_place_chunk_ref_t *pc = ctx;
    if (n_tasks > PC_TASKS_MAX)
        return GMUX_ERR_CAPACITY;
    pc_ws_t ws[PC_TASKS_MAX];
    memset(ws, 0, sizeof(ws));
    pc_want_t *want = NULL;
    pc_cand_t *cand = NULL;
    size_t nwant = 0, ncand = 0;
    gmux_status_t st = GMUX_OK;
    /* Forget tasks that left (their memory went with them); index the rest. */
    size_t keep = 0;
    int listed = 0;
    for (size_t i = 0; i < pc->nres; i++) {
        if (i == 0 || pc->res[i].task != pc->res[i - 1].task) { /* res is sorted by task */
            listed = 0;
            for (size_t k = 0; k < n_tasks && !listed; k++)
                listed = tasks[k].id == pc->res[i].task;
        }
        if (listed)
            pc->res[keep++] = pc->res[i];
    }
    pc->nres = keep;
    for (size_t k = 0; k < n_tasks && st == GMUX_OK; k++)
        st = ws_build(pc, &tasks[k], &ws[k]);
    uint64_t slots = pc->capacity / pc->chunk;
    if (st == GMUX_OK)
        st = want_build(pc, to, slots, &want, &nwant);
    if (st != GMUX_OK)
        goto free_all;
    /* Every task's pinned memory is no room (daemon.md "Pinned memory"). */
    uint64_t pinned = 0;
    for (size_t k = 0; k < n_tasks; k++) {
        uint64_t c = tasks[k].pinned / pc->chunk + (tasks[k].pinned % pc->chunk != 0);
        pinned = c < slots - pinned ? pinned + c : slots;
    }
    /* Every task's kept bytes, each rounded up to whole chunks, are still
     * on the device (placement.h, dmn_task_view_t.kept): no room either. */
    uint64_t withheld = pinned;
    for (size_t k = 0; k < n_tasks; k++) {
        uint64_t c = tasks[k].kept / pc->chunk + (tasks[k].kept % pc->chunk != 0);
        withheld = c < slots - withheld ? withheld + c : slots;
    }
    uint64_t room = free_slots(pc, slots, withheld);
    if (nwant > room) {
        /* Every resident chunk but the incoming slice's, keyed by next use. */
        cand = malloc((pc->nres ? pc->nres : 1) * sizeof(*cand));
        if (!cand) {
            st = GMUX_ERR_NOMEM;
            goto free_all;
        }
        size_t k = 0;
        for (size_t i = 0; i < pc->nres; i++) {
            const pc_chunk_t *c = &pc->res[i];
            while (tasks[k].id != c->task) /* res is sorted by task: k moves on */
                k = (k + 1) % n_tasks;
            uint64_t r = ws_rank(pc, &ws[k], c->addr);
            uint64_t pos = PC_INF;
            if (c->task == to->id) {
                if (r != PC_INF)
                    continue; /* the running slice needs it */
            } else if (r != PC_INF && tasks[k].turn != DMN_TURN_NONE) {
                pos = ((uint64_t)tasks[k].turn << PC_SLICE_SH) | r;
            }
            uint32_t hold = c->task != to->id && tasks[k].turn == 0;
            cand[ncand++] = (pc_cand_t){pos, c->addr, c->task, (uint32_t)i, hold};
        }
        size_t short_by = nwant - room;
        if (short_by > ncand) /* the working set alone is too big: fill what fits */
            short_by = ncand;
        if (short_by < ncand)
            select_first(cand, ncand, short_by);
        ncand = short_by;
        for (size_t i = 0; i < ncand; i++) {
            pc->res[cand[i].idx].task = UINT32_MAX; /* marked: evicted */
            /* a holder's victims stay on the device until it gives the turn back */
            withheld += cand[i].hold && withheld < slots;
        }
        qsort(cand, ncand, sizeof(*cand), evict_cmp);
        for (size_t i = 0; i < ncand && st == GMUX_OK; i++)
            st = dmn_plan_add(plan, cand[i].task, DMN_PLAN_EVICT,
                              (dmn_range_t){cand[i].addr, pc->chunk});
        keep = 0;
        for (size_t i = 0; i < pc->nres; i++)
            if (pc->res[i].task != UINT32_MAX)
                pc->res[keep++] = pc->res[i];
        pc->nres = keep;
        if (st != GMUX_OK)
            goto free_all;
        /* what the evictions freed; with the pinned bytes over the
         * capacity, possibly less than the fill wants, or nothing */
        room = free_slots(pc, slots, withheld);
        nwant = nwant > room ? room : nwant;
    }
    st = fill_task(pc, to->id, DMN_PLAN_FILL, want, nwant, plan);
    /* The fill ahead: the task marked for it (placement.h), its chunks that
     * are not resident in use order, into the slots still free; no eviction. */
    const dmn_task_view_t *next_v = NULL;
    for (size_t k = 0; k < n_tasks && !next_v; k++)
        if (tasks[k].ahead && tasks[k].turn == 1 && tasks[k].id != to->id)
            next_v = &tasks[k];
    room = free_slots(pc, slots, withheld);
    if (st == GMUX_OK && pc->limited && next_v && room > 0) {
        free(want);
        want = NULL;
        st = want_build(pc, next_v, room, &want, &nwant);
        if (st == GMUX_OK)
            st = fill_task(pc, next_v->id, DMN_PLAN_AHEAD, want, nwant, plan);
    }
free_all:
    free(cand);
    free(want);
    for (size_t k = 0; k < n_tasks; k++)
        free(ws[k].v);
    return st;
}

gmux_status_t dmn_place_chunk_ref_create(uint64_t capacity, uint64_t chunk,
                                         dmn_place_chunk_ref_t **out)
{
    if (chunk == 0 || (chunk & (chunk - 1)) != 0)
        return GMUX_ERR_INVALID;
    dmn_place_chunk_ref_t *pc = calloc(1, sizeof(*pc));
    if (!pc)
        return GMUX_ERR_NOMEM;
    pc->limited = capacity != 0;
    if (capacity == 0)
        capacity = 1ull << 40;
    pc->capacity = capacity & ~(chunk - 1);
    if (!pc->capacity)
        pc->capacity = chunk;
    pc->chunk = chunk;
    pc->pl = (dmn_placement_t){"chunk-ref", pc, chunk_on_switch, NULL};
    *out = pc;
    return GMUX_OK;
}

void dmn_place_chunk_ref_destroy(dmn_place_chunk_ref_t *pc)
{
    if (!pc)
        return;
    free(pc->res);
    free(pc);
}

const dmn_placement_t *dmn_place_chunk_ref_placement(dmn_place_chunk_ref_t *pc)
{
    return &pc->pl;
}

uint64_t dmn_place_chunk_ref_resident(const dmn_place_chunk_ref_t *pc, uint32_t task_id)
{
    uint64_t n = 0;
    for (size_t i = 0; i < pc->nres; i++)
        n += pc->res[i].task == task_id;
    return n * pc->chunk;
}

uint64_t dmn_place_chunk_ref_total(const dmn_place_chunk_ref_t *pc)
{
    return (uint64_t)pc->nres * pc->chunk;
}
