/* Chunk-granularity OPT placement across tasks; see place_chunk.h. */
#include "daemon/place_chunk.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/settings.h"
#include "daemon/chunk_runs.h"
#include "daemon/chunk_task.h"
#include "daemon/chunk_victims.h"
#include "daemon/place_opt.h"

#define PC_RANK_MAX  DMN_CV_RANK_MAX
#define PC_TASKS_MAX 256

struct dmn_place_chunk {
    dmn_placement_t pl;
    dmn_ct_ctx_t ct; /* the chunk size and the tasks' scratch (chunk_task.h) */
    uint64_t capacity, slots, total, gen;
    uint64_t total_bak; /* total when the switch under way started */
    /* chunks still on the device that no task counts resident: the views'
     * kept bytes, and this switch's evictions from holders (placement.h) */
    uint64_t withheld;
    int limited; /* a capacity was given (0 means none: nothing is filled ahead) */
    dmn_ct_task_t tasks[PC_TASKS_MAX];
    uint16_t hint[PC_TASKS_MAX];     /* view index -> slot at the last switch */
    dmn_ct_task_t *of[PC_TASKS_MAX]; /* view index -> its state this switch */
    dmn_cv_t cv;                     /* the victims' merge */
    dmn_runs_t vict;                 /* scratch kept across switches: the victims */
    /* The hand-back of the last switch's unsent orders (chunk_on_unsent),
     * made ready by the switch so that it cannot fail: the incoming task's
     * runs before the switch are its bak when the switch changed them
     * (bak_gen; unsent_to, switch unsent_gen, 0 once handed back), the task
     * filled ahead's before the fill ahead are ahead_bak and ahead_chunks
     * (ahead_id, 0: no fill ahead). */
    uint64_t unsent_gen, ahead_chunks;
    uint32_t unsent_to, ahead_id;
    dmn_runs_t ahead_bak;
};

static dmn_ct_task_t *find_task(dmn_place_chunk_t *pc, size_t k, uint32_t id, int create)
{
    dmn_ct_task_t *free_slot = NULL;
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
        dmn_ct_task_t *t = &pc->tasks[i];
        if (t->used && t->seen != pc->gen) {
            pc->total -= t->chunks;
            dmn_ct_free(t);
            t->used = 0;
        }
    }
}

/* Keeps a copy of t's resident runs and count as they were before this
 * switch, once per switch, before the switch changes them: a switch that
 * fails part-way is then undone (undo_switch), since none of its orders are
 * sent. The cut lists (out, in) need no copy: they are cut again from res. */
static gmux_status_t save(dmn_place_chunk_t *pc, dmn_ct_task_t *t)
{
    if (t->bak_gen == pc->gen)
        return GMUX_OK;
    gmux_status_t st = dmn_runs_reserve(&t->bak, t->res.n);
    if (st != GMUX_OK)
        return st;
    if (t->res.n)
        memcpy(t->bak.v, t->res.v, t->res.n * sizeof(*t->res.v));
    t->bak.n = t->res.n;
    t->bak_chunks = t->chunks;
    t->bak_gen = pc->gen;
    t->bak_inplace = 0;
    return GMUX_OK;
}

/* save for a task that loses all its runs and gets no fill in this switch
 * (not the incoming one): its runs stay where they are, only their count is
 * kept, as nothing writes to its array before the switch ends. */
static void save_in_place(dmn_place_chunk_t *pc, dmn_ct_task_t *t)
{
    if (t->bak_gen == pc->gen)
        return;
    t->bak_n = t->res.n;
    t->bak_chunks = t->chunks;
    t->bak_gen = pc->gen;
    t->bak_inplace = 1;
}

/* The victims' merge takes an idle task's runs from res itself: copied
 * first, and only for the tasks it takes from. */
static gmux_status_t save_source(void *ctx, const dmn_cv_src_t *src)
{
    dmn_place_chunk_t *pc = ctx;
    if (src->kind != DMN_CV_RES)
        return GMUX_OK;
    dmn_ct_task_t *t = find_task(pc, PC_TASKS_MAX, src->task, 0);
    return t ? save(pc, t) : GMUX_ERR_INVALID;
}

/* Puts back what this switch changed: the saved runs and counts, the total;
 * the cut lists of the tasks it touched are cut again when next needed. */
static void undo_switch(dmn_place_chunk_t *pc)
{
    for (int i = 0; i < PC_TASKS_MAX; i++) {
        dmn_ct_task_t *t = &pc->tasks[i];
        if (!t->used)
            continue;
        if (t->bak_gen == pc->gen) {
            if (t->bak_inplace) {
                t->res.n = t->bak_n;
            } else {
                dmn_runs_t x = t->res;
                t->res = t->bak;
                t->bak = x;
            }
            t->chunks = t->bak_chunks;
            t->bak_gen = 0;
            t->xl_ok = 0;
        }
        if (t->src_gen == pc->gen)
            t->xl_ok = 0;
    }
    pc->total = pc->total_bak;
}

/* Writes the EVICT orders of the victims (sorted by task and address) and
 * takes them out of their tasks' resident runs. */
static gmux_status_t apply_evictions(dmn_place_chunk_t *pc, const dmn_ct_task_t *in,
                                     dmn_plan_t *plan)
{
    gmux_status_t st = dmn_runs_sort(pc->vict.v, pc->vict.n, &pc->ct.scratch);
    if (st == GMUX_OK)
        st = dmn_plan_reserve(plan, pc->vict.n);
    for (size_t b = 0, e; b < pc->vict.n && st == GMUX_OK; b = e) {
        uint64_t n = 0, out = 0;
        for (e = b; e < pc->vict.n && pc->vict.v[e].key == pc->vict.v[b].key; e++) {
            const dmn_seg_t *v = &pc->vict.v[e];
            uint64_t k = (v->hi - v->lo) >> pc->ct.shift;
            dmn_plan_put(plan, (uint32_t)v->key, DMN_PLAN_EVICT,
                         (dmn_range_t){v->lo, v->hi - v->lo});
            n += k;
            out += v->wlo == DMN_CV_OUT ? k : 0;
        }
        dmn_ct_task_t *t = find_task(pc, PC_TASKS_MAX, (uint32_t)pc->vict.v[b].key, 0);
        if (t->res_src) { /* taken from res itself, saved before (save_source) */
            t->xl_ok = 0;
        } else if (n == t->chunks && t != in) { /* all of it */
            save_in_place(pc, t);
            t->res.n = 0;
        } else if (n == t->chunks) {
            if ((st = save(pc, t)) == GMUX_OK)
                t->res.n = 0;
        } else if ((st = save(pc, t)) == GMUX_OK) {
            st = dmn_runs_subtract(&t->res, &pc->vict.v[b], e - b, &pc->ct.scratch);
        }
        if (st != GMUX_OK)
            break;
        t->chunks -= n;
        t->out_chunks -= out;
        pc->total -= n;
        pc->withheld += t->holding ? n : 0; /* freed once it gives the turn back */
    }
    return st;
}

/* Every resident chunk but the incoming slice's is a candidate: the lists
 * of every task with chunks resident; returns how many candidates. */
static gmux_status_t sources_build(dmn_place_chunk_t *pc, const dmn_task_view_t *tasks,
                                   size_t n_tasks, dmn_ct_task_t *in, uint64_t *n_cand)
{
    gmux_status_t st = GMUX_OK;
    pc->cv.n_srcs = 0;
    *n_cand = 0;
    for (size_t k = 0; k < n_tasks && st == GMUX_OK; k++) {
        dmn_ct_task_t *t = pc->of[k];
        if (!t || t->chunks == 0 || t->src_gen == pc->gen) /* once, even if listed twice */
            continue;
        t->src_gen = pc->gen;
        t->res_src = 0;
        t->holding = t != in && tasks[k].turn == 0;
        if (t == in) {
            if (!t->xl_ok)
                st = dmn_ct_cut(&pc->ct, t);
            dmn_cv_add(&pc->cv, &t->out, t->id, DMN_CV_OUT, 0, 0);
            *n_cand += t->out_chunks;
        } else if (tasks[k].turn == DMN_TURN_NONE) { /* idle: no next use known */
            t->res_src = 1;
            dmn_cv_add(&pc->cv, &t->res, t->id, DMN_CV_RES, 0, 0);
            *n_cand += t->chunks;
        } else {
            st = dmn_ct_ws_prepare(&pc->ct, t, &tasks[k]);
            if (st == GMUX_OK && !t->xl_ok)
                st = dmn_ct_cut(&pc->ct, t);
            dmn_cv_add(&pc->cv, &t->out, t->id, DMN_CV_OUT, tasks[k].turn, 0);
            dmn_cv_add(&pc->cv, &t->in, t->id, DMN_CV_IN, tasks[k].turn, t->chunks - t->out_chunks);
            *n_cand += t->chunks;
        }
    }
    return st;
}

/* Writes the FILL (or AHEAD) orders of pc->ct.want[0..m) (address order) and
 * adds them to the task's resident runs; with none resident, both in one pass.
 * On success *old holds the runs the task had (the union's scratch, left
 * empty when it had none): what a hand-back puts back, with no copy. */
static gmux_status_t fills_apply(dmn_place_chunk_t *pc, dmn_ct_task_t *t, dmn_plan_t *plan,
                                 size_t m, dmn_plan_kind_t kind, dmn_runs_t *old)
{
    const dmn_seg_t *w = pc->ct.want.v;
    int direct = t->res.n == 0;
    gmux_status_t st = direct ? dmn_runs_reserve(&t->res, m) : GMUX_OK;
    if (st == GMUX_OK)
        st = dmn_plan_reserve(plan, m);
    for (size_t i = 0; i < m && st == GMUX_OK; i++) {
        dmn_plan_put(plan, t->id, kind, (dmn_range_t){w[i].lo, w[i].hi - w[i].lo});
        if (direct)
            dmn_runs_put_joined(&t->res, w[i].lo, w[i].hi);
    }
    if (st == GMUX_OK && !direct)
        st = dmn_runs_union(&t->res, w, m, old);
    else if (st == GMUX_OK)
        old->n = 0;
    return st;
}

/* For a hand-back (chunk_on_unsent): t's runs before this switch are in
 * bak, with the count before, once its fill kept them there (*old of
 * fills_apply) when no eviction had copied them (save). */
static void kept_before(dmn_place_chunk_t *pc, dmn_ct_task_t *t, uint64_t chunks)
{
    t->bak_chunks = chunks;
    t->bak_gen = pc->gen;
    t->bak_inplace = 0;
}

/* Fills the whole working set of a task with nothing resident, from fa
 * (address order, one run per working-set interval) without copying it. */
static gmux_status_t fill_whole(dmn_place_chunk_t *pc, dmn_ct_task_t *t, dmn_plan_t *plan)
{
    gmux_status_t st = dmn_plan_reserve(plan, t->fa.n);
    for (size_t i = 0; i < t->fa.n && st == GMUX_OK; i++)
        dmn_plan_put(plan, t->id, DMN_PLAN_FILL,
                     (dmn_range_t){t->fa.v[i].lo, t->fa.v[i].hi - t->fa.v[i].lo});
    if (st == GMUX_OK)
        st = dmn_runs_fill_ranked(&t->fa, pc->ct.shift, PC_RANK_MAX, &t->res, &t->in,
                                  &pc->ct.scratch);
    if (st != GMUX_OK) {
        t->res.n = t->in.n = 0;
        t->xl_ok = 0;
        return st;
    }
    t->chunks += t->ws_chunks;
    pc->total += t->ws_chunks;
    return GMUX_OK;
}

/* The switch to `to`: its evictions and fills. */
static gmux_status_t switch_to(dmn_place_chunk_t *pc, const dmn_task_view_t *tasks, size_t n_tasks,
                               const dmn_task_view_t *to, dmn_plan_t *plan)
{
    dmn_ct_task_t *in = find_task(pc, PC_TASKS_MAX, to->id, 1);
    if (!in)
        return GMUX_ERR_CAPACITY;
    in->seen = pc->gen;
    for (size_t k = 0; k < n_tasks; k++)
        if (tasks[k].id == to->id)
            pc->of[k] = in;
    uint64_t nwant = 0;
    gmux_status_t st = dmn_ct_ws_prepare(&pc->ct, in, to);
    /* Nothing resident and all of it fits: the wanted chunks are fa itself. */
    int whole = st == GMUX_OK && in->res.n == 0 && in->in.n == 0 && in->xl_ok && in->fa_sorted &&
                in->fa.n == in->ws.n && in->ws_chunks <= pc->slots;
    if (whole)
        nwant = in->ws_chunks;
    else if (st == GMUX_OK)
        st = dmn_ct_want(&pc->ct, in, pc->slots, &nwant);
    if (st != GMUX_OK)
        return st;
    uint64_t used = pc->total + pc->withheld, room = pc->slots > used ? pc->slots - used : 0;
    pc->vict.n = 0;
    if (nwant > room) {
        uint64_t ncand = 0, short_by = nwant - room;
        st = sources_build(pc, tasks, n_tasks, in, &ncand);
        if (short_by > ncand) { /* the working set alone is too big: fill what fits */
            nwant -= short_by - ncand;
            short_by = ncand;
        }
        if (st == GMUX_OK)
            st = dmn_cv_take(&pc->cv, short_by, &pc->vict);
        dmn_cv_settle(&pc->cv);
        if (st == GMUX_OK)
            st = apply_evictions(pc, in, plan);
        if (st != GMUX_OK)
            return st;
        /* a holder's victims free nothing before it gives the turn back */
        used = pc->total + pc->withheld;
        room = pc->slots > used ? pc->slots - used : 0;
        nwant = nwant > room ? room : nwant;
    }
    if (nwant == 0)
        return GMUX_OK;
    /* The fills change the model only when they succeed: no copy of T's
     * runs, but the fill keeps those it replaces for a hand-back when no
     * eviction copied them (kept_before). */
    bool keep = in->bak_gen != pc->gen;
    uint64_t before = in->chunks;
    if (whole && nwant == in->ws_chunks) {
        if ((st = fill_whole(pc, in, plan)) == GMUX_OK && keep) {
            in->bak.n = 0; /* it had none */
            kept_before(pc, in, before);
        }
        return st;
    }
    uint64_t n_all = 0;
    if (whole && (st = dmn_ct_want(&pc->ct, in, pc->slots, &n_all)) != GMUX_OK)
        return st;
    /* The first nwant wanted chunks, filled in address order. */
    size_t m = dmn_runs_keep(&pc->ct.want, nwant, pc->ct.shift);
    if (!in->fa_sorted) /* else dmn_ct_want went in address order */
        st = dmn_runs_sort(pc->ct.want.v, m, &pc->ct.scratch);
    if (st == GMUX_OK)
        st = fills_apply(pc, in, plan, m, DMN_PLAN_FILL, keep ? &in->bak : &pc->ct.scratch);
    if (st == GMUX_OK) {
        if (keep)
            kept_before(pc, in, before);
        in->chunks += nwant;
        pc->total += nwant;
    }
    if (st != GMUX_OK || (in->xl_ok && dmn_ct_in_add_fills(&pc->ct, in, m) != GMUX_OK))
        in->xl_ok = 0; /* cut again when next needed */
    return st;
}

/* The fill ahead (placement.h): the task marked for it gets its chunks that
 * are not resident, in use order, into the slots still free after the
 * switch; nothing is evicted, so the running task's chunks stay. */
static gmux_status_t ahead_fill(dmn_place_chunk_t *pc, const dmn_task_view_t *tasks, size_t n_tasks,
                                const dmn_task_view_t *to, dmn_plan_t *plan)
{
    uint64_t used = pc->total + pc->withheld, n = 0;
    uint64_t room = pc->slots > used ? pc->slots - used : 0;
    size_t k = 0;
    if (!pc->limited || room == 0)
        return GMUX_OK;
    while (k < n_tasks && !(tasks[k].ahead && tasks[k].turn == 1 && tasks[k].id != to->id))
        k++;
    if (k == n_tasks)
        return GMUX_OK;
    dmn_ct_task_t *t = pc->of[k] ? pc->of[k] : find_task(pc, PC_TASKS_MAX, tasks[k].id, 1);
    if (!t)
        return GMUX_ERR_CAPACITY;
    t->seen = pc->gen;
    pc->of[k] = t;
    gmux_status_t st = dmn_ct_ws_prepare(&pc->ct, t, &tasks[k]);
    if (st == GMUX_OK)
        st = dmn_ct_want(&pc->ct, t, room, &n);
    if (st != GMUX_OK || n == 0)
        return st;
    size_t m = dmn_runs_keep(&pc->ct.want, n, pc->ct.shift);
    if (!t->fa_sorted)
        st = dmn_runs_sort(pc->ct.want.v, m, &pc->ct.scratch);
    if (st == GMUX_OK) /* the runs it had kept in ahead_bak, for chunk_on_unsent */
        st = fills_apply(pc, t, plan, m, DMN_PLAN_AHEAD, &pc->ahead_bak);
    if (st == GMUX_OK) {
        pc->ahead_chunks = t->chunks;
        pc->ahead_id = t->id;
        t->chunks += n;
        pc->total += n;
    }
    if (st != GMUX_OK || (t->xl_ok && dmn_ct_in_add_fills(&pc->ct, t, m) != GMUX_OK))
        t->xl_ok = 0;
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
    /* A switch that fails part-way sends nothing: the model stays as it was. */
    pc->total_bak = pc->total;
    pc->withheld = 0;
    pc->unsent_gen = 0;
    pc->ahead_id = 0;
    /* rounded up (a part of a chunk holds it), without a wrap for any value,
     * summed up to the slots: kept and pinned memory (every task's) are no
     * room for managed memory */
    for (size_t k = 0; k < n_tasks && pc->withheld < pc->slots; k++) {
        uint64_t c = (tasks[k].kept >> pc->ct.shift) + ((tasks[k].kept & (pc->ct.chunk - 1)) != 0);
        pc->withheld = c < pc->slots - pc->withheld ? pc->withheld + c : pc->slots;
    }
    pc->withheld += dmn_views_pinned_chunks(tasks, n_tasks, pc->ct.chunk, pc->slots);
    size_t n0 = plan->n;
    gmux_status_t st = switch_to(pc, tasks, n_tasks, to, plan);
    if (st != GMUX_OK) {
        undo_switch(pc);
        plan->n = n0;
        return st;
    }
    /* what the model misses of to's working set and does not fill is left
     * to demand paging: its shim must not prefetch it (proto.h) */
    plan->grant_flags |= DMN_GRANT_PLANNED;
    n0 = plan->n;
    if (ahead_fill(pc, tasks, n_tasks, to, plan) != GMUX_OK)
        plan->n = n0; /* left out (and not made resident); the switch itself stands */
    pc->unsent_gen = pc->gen;
    pc->unsent_to = to->id;
    return st;
}

/* Puts back t's runs from *from (swapped with it) and its count, and the
 * total; its cut lists are cut again when next needed. */
static void restore(dmn_place_chunk_t *pc, dmn_ct_task_t *t, dmn_runs_t *from, uint64_t chunks)
{
    dmn_runs_t x = t->res;
    t->res = *from;
    *from = x;
    pc->total = pc->total - t->chunks + chunks;
    t->chunks = chunks;
    t->xl_ok = 0;
}

/* The hand-back of the last switch (its incoming task's orders, its fill
 * ahead): the runs the switch kept for it are put back, with no allocation.
 * Returns false when the orders are not that. */
static bool unsent_last(dmn_place_chunk_t *pc, const dmn_plan_entry_t *e, size_t n)
{
    bool ahead = false, own = false;
    if (pc->unsent_gen != pc->gen)
        return false;
    for (size_t i = 0; i < n; i++) {
        ahead |= e[i].kind == DMN_PLAN_AHEAD;
        own |= e[i].kind != DMN_PLAN_AHEAD;
        if (e[i].task_id != (e[i].kind == DMN_PLAN_AHEAD ? pc->ahead_id : pc->unsent_to))
            return false;
    }
    dmn_ct_task_t *in = own ? find_task(pc, PC_TASKS_MAX, pc->unsent_to, 0) : NULL;
    dmn_ct_task_t *a = ahead ? find_task(pc, PC_TASKS_MAX, pc->ahead_id, 0) : NULL;
    if (in && in->bak_gen == pc->gen && !in->bak_inplace) {
        restore(pc, in, &in->bak, in->bak_chunks);
        in->bak_gen = 0;
    }
    if (a)
        restore(pc, a, &pc->ahead_bak, pc->ahead_chunks);
    pc->unsent_gen = 0;
    return true;
}

/* Orders never sent (placement.h): those the arbiter hands back put back
 * what the switch kept for them (unsent_last: a hand-back that failed
 * part-way would leave fills counted resident); any other, a fill out of
 * its task's resident runs, an eviction back into them (may fail); the cut
 * lists are cut again when needed. */
static gmux_status_t chunk_on_unsent(void *ctx, const dmn_plan_entry_t *e, size_t n)
{
    dmn_place_chunk_t *pc = ctx;
    if (unsent_last(pc, e, n))
        return GMUX_OK;
    gmux_status_t st = GMUX_OK;
    for (size_t i = 0; i < n && st == GMUX_OK; i++) {
        dmn_ct_task_t *t = find_task(pc, PC_TASKS_MAX, e[i].task_id, 0);
        if (!t)
            continue; /* left: its memory went with it */
        dmn_seg_t one = {e[i].range.base, e[i].range.base + e[i].range.len, 0, DMN_RUNS_NONE, 0};
        if (e[i].kind == DMN_PLAN_EVICT)
            st = dmn_runs_union(&t->res, &one, 1, &pc->ct.scratch);
        else
            st = dmn_runs_subtract(&t->res, &one, 1, &pc->ct.scratch);
        int sorted;
        uint64_t before = t->chunks;
        t->chunks = dmn_runs_chunks(&t->res, pc->ct.shift, &sorted);
        pc->total = pc->total - before + t->chunks;
        t->xl_ok = 0;
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
    pc->limited = capacity != 0;
    if (capacity == 0)
        capacity = 1ull << 40;
    pc->capacity = capacity & ~(chunk - 1);
    if (!pc->capacity)
        pc->capacity = chunk;
    pc->ct.chunk = chunk;
    pc->slots = pc->capacity / chunk;
    while ((1ull << pc->ct.shift) < chunk)
        pc->ct.shift++;
    pc->cv.chunk = chunk;
    pc->cv.shift = pc->ct.shift;
    pc->cv.before_take = save_source;
    pc->cv.ctx = pc;
    pc->pl = (dmn_placement_t){"chunk", pc, chunk_on_switch, chunk_on_unsent};
    *out = pc;
    return GMUX_OK;
}

void dmn_place_chunk_destroy(dmn_place_chunk_t *pc)
{
    if (!pc)
        return;
    for (int i = 0; i < PC_TASKS_MAX; i++)
        dmn_ct_free(&pc->tasks[i]);
    dmn_ct_ctx_fini(&pc->ct);
    dmn_runs_free(&pc->vict);
    dmn_runs_free(&pc->ahead_bak);
    dmn_cv_fini(&pc->cv);
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
            return pc->tasks[i].chunks * pc->ct.chunk;
    return 0;
}

uint64_t dmn_place_chunk_total(const dmn_place_chunk_t *pc)
{
    return pc->total * pc->ct.chunk;
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
