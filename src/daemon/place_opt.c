/* Slice-granularity OPT placement across tasks; see place_opt.h. */
#include "daemon/place_opt.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"
#include "common/settings.h"
#include "daemon/place_alloc.h"

#define OPT_MAX_TASKS 256 /* as many as the arbiter has slots */

typedef struct iv {
    uint64_t lo, hi; /* [lo, hi), chunk-aligned */
} iv_t;

typedef struct ivset {
    iv_t *v;
    uint32_t n, cap;
    uint64_t bytes;
} ivset_t;

typedef struct opt_task {
    int used;
    uint32_t id;
    uint64_t seen; /* generation of the last switch that listed it */
    ivset_t res;
    ivset_t bak;      /* res before the switch of generation bak_gen (undo_switch) */
    uint64_t bak_gen; /* 0: no copy for the switch under way */
    /* Its working set (normalize), kept while its ranges keep their
     * generation (dmn_task_view_t.ranges_gen; ws_gen 0: none kept). */
    ivset_t ws;
    uint64_t ws_gen;
    uint32_t ws_n;
} opt_task_t;

struct dmn_place_opt {
    dmn_placement_t pl;
    uint64_t capacity, chunk, resident, gen;
    uint64_t resident_bak; /* resident when the switch under way started */
    /* memory still on the device though no task counts it resident: the
     * views' kept bytes, and what this switch evicts from the other tasks
     * holding the turn (placement.h) */
    uint64_t withheld;
    /* The hand-back of the last switch's unsent orders (opt_on_unsent), made
     * ready by the switch so that it cannot fail: the incoming task's
     * resident set before the switch is its bak once the switch changed it
     * (bak_gen; unsent_to, switch unsent_gen, 0 once handed back), the task
     * filled ahead's before the fill ahead is ahead_bak (ahead_id, 0: no
     * fill ahead). */
    uint64_t unsent_gen;
    uint32_t unsent_to, ahead_id;
    ivset_t ahead_bak;
    opt_task_t tasks[OPT_MAX_TASKS];
    int ws_cache;        /* keep working sets across switches (the default) */
    const ivset_t *want; /* the working set of the task being planned */
    ivset_t need, merged;
    const dmn_task_view_t *order[OPT_MAX_TASKS];
};

static gmux_status_t iv_push(ivset_t *s, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return GMUX_OK;
    if (s->n && s->v[s->n - 1].hi >= lo) { /* sorted input: extend the last one */
        if (hi > s->v[s->n - 1].hi) {
            s->bytes += hi - s->v[s->n - 1].hi;
            s->v[s->n - 1].hi = hi;
        }
        return GMUX_OK;
    }
    if (s->n == s->cap) {
        if (dmn_place_alloc_fails())
            return GMUX_ERR_NOMEM;
        gmux_status_t st =
            com_array_grow_u32((void **)&s->v, &s->cap, (size_t)s->n + 1, sizeof(*s->v), 16);
        if (st != GMUX_OK)
            return st;
    }
    s->v[s->n++] = (iv_t){lo, hi};
    s->bytes += hi - lo;
    return GMUX_OK;
}

static void iv_clear(ivset_t *s)
{
    s->n = 0;
    s->bytes = 0;
}

static void iv_free(ivset_t *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static int iv_cmp(const void *a, const void *b)
{
    const iv_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* out = the ranges rounded out to chunks, sorted and merged. */
static gmux_status_t normalize(const dmn_place_opt_t *o, const dmn_range_t *r, uint32_t n,
                               ivset_t *out)
{
    iv_clear(out);
    iv_t *tmp = n && !dmn_place_alloc_fails() ? malloc(n * sizeof(*tmp)) : NULL;
    if (n && !tmp)
        return GMUX_ERR_NOMEM;
    uint64_t mask = o->chunk - 1, top = UINT64_MAX & ~mask;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t end = r[i].base + r[i].len; /* the protocol forbids wrapping */
        tmp[i].lo = r[i].base & ~mask;
        tmp[i].hi = end > top ? top : (end + mask) & ~mask;
    }
    int sorted = 1; /* clients usually send their ranges in address order */
    for (uint32_t i = 1; i < n && sorted; i++)
        sorted = tmp[i - 1].lo <= tmp[i].lo;
    if (!sorted)
        qsort(tmp, n, sizeof(*tmp), iv_cmp);
    gmux_status_t st = GMUX_OK;
    for (uint32_t i = 0; i < n && st == GMUX_OK; i++)
        st = iv_push(out, tmp[i].lo, tmp[i].hi);
    free(tmp);
    return st;
}

/* out = a minus b (both sorted and disjoint). */
static gmux_status_t difference(const ivset_t *a, const ivset_t *b, ivset_t *out)
{
    iv_clear(out);
    uint32_t j = 0;
    gmux_status_t st = GMUX_OK;
    for (uint32_t i = 0; i < a->n && st == GMUX_OK; i++) {
        uint64_t lo = a->v[i].lo, hi = a->v[i].hi;
        while (j < b->n && b->v[j].hi <= lo)
            j++;
        for (uint32_t k = j; k < b->n && b->v[k].lo < hi && st == GMUX_OK; k++) {
            st = iv_push(out, lo, b->v[k].lo);
            lo = b->v[k].hi > lo ? b->v[k].hi : lo;
        }
        if (st == GMUX_OK && lo < hi)
            st = iv_push(out, lo, hi);
    }
    return st;
}

/* a = a union b, through scratch. */
static gmux_status_t merge_into(ivset_t *a, const ivset_t *b, ivset_t *scratch)
{
    iv_clear(scratch);
    uint32_t i = 0, j = 0;
    gmux_status_t st = GMUX_OK;
    while ((i < a->n || j < b->n) && st == GMUX_OK) {
        const iv_t *x =
            (j >= b->n || (i < a->n && a->v[i].lo <= b->v[j].lo)) ? &a->v[i++] : &b->v[j++];
        st = iv_push(scratch, x->lo, x->hi);
    }
    if (st != GMUX_OK)
        return st;
    ivset_t t = *a;
    *a = *scratch;
    *scratch = t;
    return GMUX_OK;
}

/* dst = a copy of src. */
static gmux_status_t iv_copy(ivset_t *dst, const ivset_t *src)
{
    if (dst->cap < src->n) {
        if (dmn_place_alloc_fails())
            return GMUX_ERR_NOMEM;
        gmux_status_t st =
            com_array_grow_u32((void **)&dst->v, &dst->cap, src->n, sizeof(*dst->v), 16);
        if (st != GMUX_OK)
            return st;
    }
    if (src->n)
        memcpy(dst->v, src->v, src->n * sizeof(*src->v));
    dst->n = src->n;
    dst->bytes = src->bytes;
    return GMUX_OK;
}

static opt_task_t *find_task(dmn_place_opt_t *o, uint32_t id, int create)
{
    opt_task_t *free_slot = NULL;
    for (int i = 0; i < OPT_MAX_TASKS; i++) {
        if (o->tasks[i].used && o->tasks[i].id == id)
            return &o->tasks[i];
        if (!o->tasks[i].used && !free_slot)
            free_slot = &o->tasks[i];
    }
    if (!create || !free_slot)
        return NULL;
    memset(free_slot, 0, sizeof(*free_slot));
    free_slot->used = 1;
    free_slot->id = id;
    return free_slot;
}

/* Points o->want at t's working set from v's ranges: the one kept when they
 * still have the generation it was built from, else built now (a failure
 * leaves none kept). */
static gmux_status_t working_set(dmn_place_opt_t *o, opt_task_t *t, const dmn_task_view_t *v)
{
    o->want = &t->ws;
    if (o->ws_cache && v->ranges_gen && t->ws_gen == v->ranges_gen && t->ws_n == v->n_ranges)
        return GMUX_OK;
    t->ws_gen = 0;
    gmux_status_t st = normalize(o, v->ranges, v->n_ranges, &t->ws);
    if (st == GMUX_OK) {
        t->ws_gen = v->ranges_gen;
        t->ws_n = v->n_ranges;
    }
    return st;
}

/* Keeps a copy of t's resident set as it was before this switch, once per
 * switch, before the switch changes it: a switch that fails part-way is then
 * undone (undo_switch), since none of its orders are sent. */
static gmux_status_t save(dmn_place_opt_t *o, opt_task_t *t)
{
    if (t->bak_gen == o->gen)
        return GMUX_OK;
    gmux_status_t st = iv_copy(&t->bak, &t->res);
    if (st == GMUX_OK)
        t->bak_gen = o->gen;
    return st;
}

/* Puts back the resident sets saved during this switch, and the total. */
static void undo_switch(dmn_place_opt_t *o)
{
    for (int i = 0; i < OPT_MAX_TASKS; i++) {
        opt_task_t *t = &o->tasks[i];
        if (t->used && t->bak_gen == o->gen) {
            ivset_t x = t->res;
            t->res = t->bak;
            t->bak = x;
            t->bak_gen = 0;
        }
    }
    o->resident = o->resident_bak;
}

/* Takes up to bytes from the top of t's resident set, as EVICT orders.
 * When dmn_plan_add fails it has cut that interval already (t's set and
 * o->resident): the model then counts as evicted a range no order evicts.
 * Harmless: the failure goes back to opt_on_switch, which drops the whole switch, its
 * orders and its changes (undo_switch), and t is either a task whose set
 * save() copied first or evict_stale's temporary copy, thrown away. A new
 * caller must keep both: save t before, and undo the switch on failure
 * (test_place_fail fails each allocation in turn and compares the model
 * with the plans sent). */
static gmux_status_t evict_from(dmn_place_opt_t *o, opt_task_t *t, uint64_t *bytes,
                                dmn_plan_t *plan)
{
    gmux_status_t st = GMUX_OK;
    while (*bytes > 0 && t->res.n > 0 && st == GMUX_OK) {
        iv_t *last = &t->res.v[t->res.n - 1];
        uint64_t take = last->hi - last->lo < *bytes ? last->hi - last->lo : *bytes;
        st = dmn_plan_add(plan, t->id, DMN_PLAN_EVICT, (dmn_range_t){last->hi - take, take});
        last->hi -= take;
        t->res.bytes -= take;
        o->resident -= take;
        *bytes -= take;
        if (last->hi == last->lo)
            t->res.n--;
    }
    return st;
}

/* Evicts up to bytes of the incoming task's chunks outside its working set
 * (o->want), highest first, and cuts them out of its resident set. */
static gmux_status_t evict_stale(dmn_place_opt_t *o, opt_task_t *in, uint64_t *bytes,
                                 dmn_plan_t *plan)
{
    opt_task_t left = {.used = 1, .id = in->id}; /* the stale set, shrunk by evict_from */
    ivset_t all = {0}, gone = {0}, rest = {0};
    gmux_status_t st = save(o, in);
    if (st == GMUX_OK)
        st = difference(&in->res, o->want, &left.res);
    if (st == GMUX_OK)
        st = evict_from(o, &left, bytes, plan);
    if (st == GMUX_OK)
        st = difference(&in->res, o->want, &all);
    if (st == GMUX_OK)
        st = difference(&all, &left.res, &gone);
    if (st == GMUX_OK)
        st = difference(&in->res, &gone, &rest);
    if (st == GMUX_OK) {
        ivset_t t = in->res;
        in->res = rest;
        rest = t;
    }
    iv_free(&left.res);
    iv_free(&all);
    iv_free(&gone);
    iv_free(&rest);
    return st;
}

/* Keeps the lowest bytes of s (chunk multiples). */
static void iv_keep(ivset_t *s, uint64_t bytes)
{
    uint64_t keep = bytes;
    for (uint32_t i = 0; i < s->n; i++) {
        uint64_t len = s->v[i].hi - s->v[i].lo;
        if (len > keep) {
            s->v[i].hi = s->v[i].lo + keep;
            s->n = s->v[i].hi > s->v[i].lo ? i + 1 : i;
            break;
        }
        keep -= len;
    }
    if (s->bytes > bytes)
        s->bytes = bytes;
}

/* Writes o->need as orders of kind for t and makes it resident; on success
 * *old (the merge's scratch) holds t's resident set as it was, with no copy. */
static gmux_status_t fill(dmn_place_opt_t *o, opt_task_t *t, dmn_plan_kind_t kind, dmn_plan_t *plan,
                          ivset_t *old)
{
    gmux_status_t st = GMUX_OK;
    for (uint32_t i = 0; i < o->need.n && st == GMUX_OK; i++)
        st = dmn_plan_add(plan, t->id, kind,
                          (dmn_range_t){o->need.v[i].lo, o->need.v[i].hi - o->need.v[i].lo});
    if (st == GMUX_OK) /* *old: the set t had, what a hand-back puts back */
        st = merge_into(&t->res, &o->need, old);
    if (st == GMUX_OK)
        o->resident += o->need.bytes;
    return st;
}

/* Counts bytes in use that no fill may take (kept by holders, pinned), up to
 * the capacity: any more leaves no room all the same, and the sums of
 * reported sizes (each up to UINT64_MAX) must not wrap. */
static void withhold(dmn_place_opt_t *o, uint64_t bytes)
{
    uint64_t cap = o->capacity;
    o->withheld = bytes >= cap - o->withheld ? cap : o->withheld + bytes;
}

/* The fill ahead (placement.h): the task marked for it gets its working set
 * minus what is resident, lowest addresses first, into the capacity still
 * free after the switch; nothing is evicted. */
static gmux_status_t ahead_fill(dmn_place_opt_t *o, const dmn_task_view_t *tasks, size_t n_tasks,
                                const dmn_task_view_t *to, dmn_plan_t *plan)
{
    const dmn_task_view_t *v = NULL;
    if (!o->capacity || o->resident + o->withheld >= o->capacity)
        return GMUX_OK;
    for (size_t k = 0; k < n_tasks && !v; k++)
        if (tasks[k].ahead && tasks[k].turn == 1 && tasks[k].id != to->id)
            v = &tasks[k];
    if (!v)
        return GMUX_OK;
    opt_task_t *t = find_task(o, v->id, 1);
    if (!t)
        return GMUX_ERR_CAPACITY;
    t->seen = o->gen;
    gmux_status_t st = working_set(o, t, v);
    if (st == GMUX_OK)
        st = difference(o->want, &t->res, &o->need);
    if (st != GMUX_OK || o->need.bytes == 0)
        return st;
    uint64_t room = o->capacity - o->resident - o->withheld;
    if (o->need.bytes > room)
        iv_keep(&o->need, room);
    st = fill(o, t, DMN_PLAN_AHEAD, plan, &o->ahead_bak); /* for opt_on_unsent */
    if (st == GMUX_OK)
        o->ahead_id = t->id;
    return st;
}

static int later_turn(const void *a, const void *b)
{
    const dmn_task_view_t *x = *(const dmn_task_view_t *const *)a;
    const dmn_task_view_t *y = *(const dmn_task_view_t *const *)b;
    return x->turn > y->turn ? -1 : x->turn < y->turn;
}

/* The switch to `to`: its evictions and fills. It changes the model as it
 * goes, each task's resident set saved first (save). */
static gmux_status_t switch_to(dmn_place_opt_t *o, const dmn_task_view_t *tasks, size_t n_tasks,
                               const dmn_task_view_t *to, dmn_plan_t *plan)
{
    opt_task_t *in = find_task(o, to->id, 0);
    if (!in)
        return GMUX_ERR_CAPACITY;
    gmux_status_t st = working_set(o, in, to);
    if (st == GMUX_OK)
        st = difference(o->want, &in->res, &o->need);
    if (st != GMUX_OK)
        return st;
    uint64_t need = o->need.bytes;
    if (o->capacity) {
        uint64_t used = o->resident + o->withheld;
        uint64_t room = o->capacity > used ? o->capacity - used : 0;
        uint64_t short_by = need > room ? need - room : 0;
        size_t nv = 0;
        for (size_t i = 0; i < n_tasks; i++)
            if (tasks[i].id != to->id)
                o->order[nv++] = &tasks[i];
        qsort(o->order, nv, sizeof(o->order[0]), later_turn);
        /* Farthest next use first: idle tasks (none known), then the incoming
         * task's own chunks outside its working set (not before its next
         * slice), then the waiting tasks from the last turn back. */
        size_t i = 0;
        for (; i < nv && o->order[i]->turn == DMN_TURN_NONE && short_by && st == GMUX_OK; i++) {
            opt_task_t *v = find_task(o, o->order[i]->id, 0);
            if (v && (st = save(o, v)) == GMUX_OK)
                st = evict_from(o, v, &short_by, plan);
        }
        if (short_by && st == GMUX_OK)
            st = evict_stale(o, in, &short_by, plan);
        /* A holder's evictions free nothing before it gives the turn back:
         * they are ordered all the same, but the fill leaves their room. */
        uint64_t held = 0;
        for (; i < nv && short_by > 0 && st == GMUX_OK; i++) {
            opt_task_t *v = find_task(o, o->order[i]->id, 0);
            uint64_t before = short_by;
            if (v && (st = save(o, v)) == GMUX_OK)
                st = evict_from(o, v, &short_by, plan);
            held += o->order[i]->turn == 0 ? before - short_by : 0;
        }
        if (st != GMUX_OK)
            return st;
        withhold(o, held);
        /* Too big, or its room not yet free: fill what fits, which is what
         * was evicted (less the holders') unless the device was already
         * over the capacity (pinned memory reported after the rest): the
         * room left now, less what it is over. */
        uint64_t used_now = o->resident + o->withheld;
        uint64_t fits = (o->capacity > used_now ? o->capacity - used_now : 0) & ~(o->chunk - 1);
        if (short_by + held > 0 || fits < need)
            iv_keep(&o->need, need - short_by - held < fits ? need - short_by - held : fits);
    }
    /* The fill changes the model only when it succeeds; it keeps in's set
     * as it was before the switch (bak, for opt_on_unsent) unless an
     * eviction copied it there (save). */
    bool keep = in->bak_gen != o->gen;
    st = fill(o, in, DMN_PLAN_FILL, plan, keep ? &in->bak : &o->merged);
    if (st == GMUX_OK && keep)
        in->bak_gen = o->gen;
    return st;
}

static gmux_status_t opt_on_switch(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                                   const dmn_task_view_t *from, const dmn_task_view_t *to,
                                   dmn_plan_t *plan)
{
    (void)from;
    dmn_place_opt_t *o = ctx;
    o->gen++;
    /* Forget tasks that left: their memory went with them. */
    for (size_t i = 0; i < n_tasks; i++) {
        opt_task_t *t = find_task(o, tasks[i].id, tasks[i].id == to->id);
        if (t)
            t->seen = o->gen;
    }
    for (int i = 0; i < OPT_MAX_TASKS; i++) {
        opt_task_t *t = &o->tasks[i];
        if (t->used && t->seen != o->gen) {
            o->resident -= t->res.bytes;
            iv_free(&t->res);
            iv_free(&t->bak);
            iv_free(&t->ws);
            t->used = 0;
        }
    }
    /* A switch that fails part-way sends nothing: the model stays as it was. */
    o->resident_bak = o->resident;
    o->withheld = 0;
    o->unsent_gen = 0;
    o->ahead_id = 0;
    for (size_t i = 0; i < n_tasks; i++)
        withhold(o, tasks[i].kept);
    /* pinned memory (every task's) is no room for managed memory */
    withhold(o,
             o->chunk * dmn_views_pinned_chunks(tasks, n_tasks, o->chunk, o->capacity / o->chunk));
    size_t n0 = plan->n;
    gmux_status_t st = switch_to(o, tasks, n_tasks, to, plan);
    if (st != GMUX_OK) {
        undo_switch(o);
        plan->n = n0;
        return st;
    }
    /* what the model misses of to's working set and does not fill is left
     * to demand paging: its shim must not prefetch it (proto.h) */
    plan->grant_flags |= DMN_GRANT_PLANNED;
    n0 = plan->n;
    if (ahead_fill(o, tasks, n_tasks, to, plan) != GMUX_OK)
        plan->n = n0; /* left out (and not made resident); the switch itself stands */
    o->unsent_gen = o->gen;
    o->unsent_to = to->id;
    return st;
}

/* Puts back t's resident set from *from (swapped with it), and the total. */
static void restore(dmn_place_opt_t *o, opt_task_t *t, ivset_t *from)
{
    ivset_t x = t->res;
    o->resident = o->resident - t->res.bytes + from->bytes;
    t->res = *from;
    *from = x;
}

/* Orders never sent (placement.h). Those the arbiter hands back, the last
 * switch's for its incoming task and its fill ahead, put back the sets the
 * switch kept for them, with no allocation: a hand-back that failed part-way
 * would leave fills counted resident. Any other orders: a fill out of its
 * task's resident set, an eviction back into it (may fail, placement.h). */
static gmux_status_t opt_on_unsent(void *ctx, const dmn_plan_entry_t *e, size_t n)
{
    dmn_place_opt_t *o = ctx;
    bool last = o->unsent_gen == o->gen, ahead = false, own = false;
    for (size_t i = 0; i < n && last; i++) {
        ahead |= e[i].kind == DMN_PLAN_AHEAD;
        own |= e[i].kind != DMN_PLAN_AHEAD;
        last = e[i].kind == DMN_PLAN_AHEAD ? e[i].task_id == o->ahead_id
                                           : e[i].task_id == o->unsent_to;
    }
    if (last) {
        opt_task_t *in = own ? find_task(o, o->unsent_to, 0) : NULL;
        opt_task_t *a = ahead ? find_task(o, o->ahead_id, 0) : NULL;
        if (in && in->bak_gen == o->gen) {
            restore(o, in, &in->bak);
            in->bak_gen = 0;
        }
        if (a)
            restore(o, a, &o->ahead_bak);
        o->unsent_gen = 0;
        return GMUX_OK;
    }
    gmux_status_t st = GMUX_OK;
    for (size_t i = 0; i < n && st == GMUX_OK; i++) {
        opt_task_t *t = find_task(o, e[i].task_id, 0);
        if (!t)
            continue; /* left: its memory went with it */
        iv_t one = {e[i].range.base, e[i].range.base + e[i].range.len};
        ivset_t r = {&one, 1, 1, one.hi - one.lo};
        uint64_t before = t->res.bytes;
        if (e[i].kind == DMN_PLAN_EVICT) {
            st = merge_into(&t->res, &r, &o->merged);
        } else if ((st = difference(&t->res, &r, &o->merged)) == GMUX_OK) {
            ivset_t x = t->res;
            t->res = o->merged;
            o->merged = x;
        }
        o->resident = o->resident - before + t->res.bytes;
    }
    return st;
}

gmux_status_t dmn_place_opt_create(uint64_t capacity, uint64_t chunk, dmn_place_opt_t **out)
{
    if (chunk == 0 || (chunk & (chunk - 1)) != 0)
        return GMUX_ERR_INVALID;
    dmn_place_opt_t *o = calloc(1, sizeof(*o));
    if (!o)
        return GMUX_ERR_NOMEM;
    o->capacity = capacity & ~(chunk - 1);
    if (capacity && !o->capacity)
        o->capacity = chunk;
    o->chunk = chunk;
    o->ws_cache = 1;
    o->pl = (dmn_placement_t){"opt", o, opt_on_switch, opt_on_unsent};
    *out = o;
    return GMUX_OK;
}

void dmn_place_opt_destroy(dmn_place_opt_t *o)
{
    if (!o)
        return;
    for (int i = 0; i < OPT_MAX_TASKS; i++) {
        iv_free(&o->tasks[i].res);
        iv_free(&o->tasks[i].bak);
        iv_free(&o->tasks[i].ws);
    }
    iv_free(&o->need);
    iv_free(&o->merged);
    iv_free(&o->ahead_bak);
    free(o);
}

void dmn_place_opt_set_ws_cache(dmn_place_opt_t *o, int on)
{
    o->ws_cache = on != 0;
    for (int i = 0; i < OPT_MAX_TASKS; i++)
        o->tasks[i].ws_gen = 0;
}

const dmn_placement_t *dmn_place_opt_placement(dmn_place_opt_t *o)
{
    return &o->pl;
}

uint64_t dmn_place_opt_resident(const dmn_place_opt_t *o, uint32_t task_id)
{
    for (int i = 0; i < OPT_MAX_TASKS; i++)
        if (o->tasks[i].used && o->tasks[i].id == task_id)
            return o->tasks[i].res.bytes;
    return 0;
}

uint64_t dmn_place_opt_total(const dmn_place_opt_t *o)
{
    return o->resident;
}

const dmn_placement_t *dmn_place_opt_default(void)
{
    static dmn_place_opt_t *inst;
    if (!inst &&
        dmn_place_opt_create(COM_SETTING_SIZE(DAEMON_CAPACITY), DMN_OPT_CHUNK, &inst) != GMUX_OK) {
        COM_ERROR(DAEMON, "opt placement: cannot create it");
        return NULL;
    }
    return &inst->pl;
}
