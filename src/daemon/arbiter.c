/* The arbiter of time slices; see arbiter.h. */
#include "daemon/arbiter.h"
#include "daemon/place_alloc.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Generations of declared ranges, unique in the process (several arbiters
 * may share one placement), so that placements may cache per task. */
static atomic_uint_fast64_t ranges_gens;

void dmn_arb_init(dmn_arbiter_t *arb, uint64_t quantum_ns, uint64_t grace_ns,
                  const dmn_placement_t *placement, uint64_t now)
{
    memset(arb, 0, sizeof(*arb));
    arb->quantum_ns = quantum_ns;
    arb->grace_ns = grace_ns;
    arb->start_ns = now;
    arb->holder = -1;
    arb->last_holder = -1;
    arb->next_id = 1;
    arb->placement = placement ? placement : dmn_placement_find("none");
    dmn_share_init(&arb->share, NULL);
    arb->share_dirty = 1;
    arb->ahead = 1;
    dmn_plan_init(&arb->plan);
}

void dmn_arb_set_ahead(dmn_arbiter_t *arb, int on)
{
    arb->ahead = on != 0;
}

void dmn_arb_set_share(dmn_arbiter_t *arb, const dmn_share_params_t *p)
{
    uint32_t mode = arb->share.mode;
    uint64_t changes = arb->share.changes;
    dmn_share_init(&arb->share, p);
    arb->share.mode = mode;
    arb->share.changes = changes;
    arb->share_dirty = 1;
}

static int holds(const dmn_task_t *t)
{
    return t->used && (t->state == DMN_STATE_RUNNING || t->state == DMN_STATE_REVOKED);
}

/* Whether its shim holds the turn as far as it knows: a holder, or a task
 * whose turn was taken and not given back (dmn_task_t.taken). */
static int keeps(const dmn_task_t *t)
{
    return holds(t) || (t->used && t->taken);
}

uint32_t dmn_arb_holders(const dmn_arbiter_t *arb)
{
    return arb->n_holders;
}

void dmn_arb_fini(dmn_arbiter_t *arb)
{
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++)
        free(arb->tasks[i].ranges);
    dmn_plan_fini(&arb->plan);
    memset(arb->tasks, 0, sizeof(arb->tasks));
}

int dmn_arb_add(dmn_arbiter_t *arb, const dmn_msg_register_t *reg, uint64_t now)
{
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        dmn_task_t *t = &arb->tasks[i];
        if (t->used)
            continue;
        memset(t, 0, sizeof(*t));
        t->used = 1;
        t->id = arb->next_id++;
        t->reg = *reg;
        t->state = DMN_STATE_IDLE;
        t->registered_ns = now;
        arb->share_dirty = 1;
        return i;
    }
    return GMUX_ERR_CAPACITY;
}

/* The turn of slot (a holder) ends in new_state; arb->holder moves to
 * another holder if there is one. */
static void drop_holder(dmn_arbiter_t *arb, int slot, uint32_t new_state)
{
    arb->tasks[slot].state = new_state;
    arb->n_holders--;
    if (arb->holder != slot)
        return;
    arb->holder = -1;
    for (int i = 0; i < DMN_ARB_MAX_TASKS && arb->holder < 0 && arb->n_holders; i++)
        if (holds(&arb->tasks[i]))
            arb->holder = i;
}

/* Ends the turn of slot (a holder) and accounts its time. */
static void end_turn(dmn_arbiter_t *arb, int slot, uint64_t now, uint32_t new_state)
{
    dmn_task_t *t = &arb->tasks[slot];
    if (!t->held) /* a GRANT held never went: that was no turn */
        t->run_ns += now - t->granted_ns;
    t->held = 0;
    arb->last_holder = slot;
    drop_holder(arb, slot, new_state);
}

gmux_status_t dmn_arb_unsent(dmn_arbiter_t *arb, uint32_t task_id, uint64_t grant_seq)
{
    dmn_plan_t *p = &arb->plan;
    if (grant_seq != arb->grant_seq || !arb->switch_counted)
        return GMUX_OK; /* not the last grant, or handed back already */
    arb->ahead_held = 0;
    arb->switches--;
    arb->switch_counted = 0;
    size_t n = 0;
    bool ahead = false;
    for (size_t i = 0; i < p->n; i++) { /* the unsent orders, moved to the front */
        dmn_plan_entry_t e = p->entries[i];
        if (e.kind != DMN_PLAN_AHEAD && e.task_id != task_id)
            continue;
        if (e.kind <= DMN_PLAN_AHEAD)
            arb->planned_bytes[e.kind] -= e.range.len;
        ahead |= e.kind == DMN_PLAN_AHEAD;
        p->entries[n++] = e;
    }
    arb->ahead_plans -= ahead;
    gmux_status_t st = GMUX_OK;
    if (n && arb->placement->on_unsent)
        st = arb->placement->on_unsent(arb->placement->ctx, p->entries, n);
    dmn_plan_clear(p);
    return st;
}

gmux_status_t dmn_arb_ahead_unsent(dmn_arbiter_t *arb, uint64_t grant_seq)
{
    dmn_plan_t *p = &arb->plan;
    if (grant_seq != arb->grant_seq || !arb->switch_counted)
        return GMUX_OK;
    arb->ahead_held = 0;
    size_t i = p->n;
    while (i > 0 && p->entries[i - 1].kind == DMN_PLAN_AHEAD) /* written last */
        i--;
    if (i == p->n)
        return GMUX_OK;
    for (size_t k = i; k < p->n; k++)
        arb->planned_bytes[DMN_PLAN_AHEAD] -= p->entries[k].range.len;
    arb->ahead_plans--;
    gmux_status_t st = GMUX_OK;
    if (arb->placement->on_unsent)
        st = arb->placement->on_unsent(arb->placement->ctx, p->entries + i, p->n - i);
    p->n = i; /* not handed back twice */
    return st;
}

void dmn_arb_hold_ahead(dmn_arbiter_t *arb, uint64_t grant_seq)
{
    arb->ahead_held = grant_seq;
}

gmux_status_t dmn_arb_withdraw(dmn_arbiter_t *arb, int slot)
{
    dmn_task_t *t = &arb->tasks[slot];
    if (!holds(t))
        return GMUX_OK;
    t->rr_stamp = t->rr_before;
    t->held = 0;
    drop_holder(arb, slot, DMN_STATE_PENDING);
    return dmn_arb_unsent(arb, t->id, t->grant_seq);
}

void dmn_arb_remove(dmn_arbiter_t *arb, int slot, uint64_t now)
{
    dmn_task_t *t = &arb->tasks[slot];
    if (!t->used)
        return;
    if (holds(t))
        end_turn(arb, slot, now, DMN_STATE_IDLE);
    if (arb->last_holder == slot)
        arb->last_holder = -1;
    free(t->ranges);
    memset(t, 0, sizeof(*t));
    arb->share_dirty = 1;
    arb->reclaimed++;
}

gmux_status_t dmn_arb_pending(dmn_arbiter_t *arb, int slot, uint32_t n_launches,
                              const dmn_msg_ranges_t *ranges, uint64_t now)
{
    (void)now;
    dmn_task_t *t = &arb->tasks[slot];
    uint32_t n = ranges ? ranges->n_ranges : 0;
    int changed = n != t->n_ranges || t->ranges_gen == 0;
    gmux_status_t st = GMUX_OK;
    if (n != t->n_ranges) {
        dmn_range_t *r = n && !dmn_place_alloc_fails() ? realloc(t->ranges, n * sizeof(*r)) : NULL;
        if (n && !r) {
            st = GMUX_ERR_NOMEM; /* the ranges it had stay: its plans may miss, not its turn */
        } else {
            if (!n)
                free(t->ranges);
            t->ranges = r;
            t->n_ranges = n;
        }
    }
    if (st == GMUX_OK) {
        t->ws_bytes = 0;
        for (uint32_t i = 0; i < n; i++) {
            dmn_range_t r = dmn_proto_range_at(ranges, i);
            if (!changed) /* the new slots of a grown array were never written */
                changed = r.base != t->ranges[i].base || r.len != t->ranges[i].len;
            t->ranges[i] = r;
            /* saturates: overlapping ranges may add up past 2^64, and a sum that
             * wrapped would count a huge working set as a small footprint */
            t->ws_bytes = t->ws_bytes + r.len < t->ws_bytes ? UINT64_MAX : t->ws_bytes + r.len;
        }
        if (changed) /* the same working set again keeps its generation */
            t->ranges_gen = atomic_fetch_add(&ranges_gens, 1) + 1;
    }
    t->n_pending = n_launches;
    arb->share_dirty = 1;
    if (t->state == DMN_STATE_IDLE)
        t->state = DMN_STATE_PENDING;
    return st;
}

void dmn_arb_release(dmn_arbiter_t *arb, int slot, uint64_t now)
{
    arb->tasks[slot].taken = 0;
    if (holds(&arb->tasks[slot]))
        end_turn(arb, slot, now, DMN_STATE_PENDING);
}

void dmn_arb_idle(dmn_arbiter_t *arb, int slot, uint64_t now)
{
    arb->tasks[slot].taken = 0;
    if (holds(&arb->tasks[slot]))
        end_turn(arb, slot, now, DMN_STATE_IDLE);
    else
        arb->tasks[slot].state = DMN_STATE_IDLE;
    arb->tasks[slot].n_pending = 0;
}

void dmn_arb_hold_turn(dmn_arbiter_t *arb, int slot)
{
    if (holds(&arb->tasks[slot]))
        arb->tasks[slot].held = 1;
}

void dmn_arb_restart_turn(dmn_arbiter_t *arb, int slot, uint64_t now)
{
    dmn_task_t *t = &arb->tasks[slot];
    t->held = 0;
    if (holds(t) && now > t->granted_ns)
        t->granted_ns = now;
}

void dmn_arb_stats(dmn_arbiter_t *arb, int slot, const dmn_msg_stats_t *stats)
{
    arb->tasks[slot].stats = *stats;
    arb->share_dirty = 1;
}

static int level(const dmn_task_t *t)
{
    return (int)t->reg.cls * 1000 + t->reg.priority;
}

int dmn_arb_preempted(const dmn_arbiter_t *arb, int slot)
{
    if (!holds(&arb->tasks[slot]) || arb->tasks[slot].reg.cls != DMN_CLASS_BATCH)
        return 0;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        const dmn_task_t *t = &arb->tasks[i];
        if (t->used && t->state == DMN_STATE_PENDING && t->reg.cls == DMN_CLASS_LATENCY)
            return 1;
    }
    return 0;
}

/* The waiting task to run next, -1 if none. */
static int best_waiting(const dmn_arbiter_t *arb)
{
    int best = -1;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        const dmn_task_t *t = &arb->tasks[i];
        if (!t->used || t->state != DMN_STATE_PENDING)
            continue;
        if (best < 0 || level(t) > level(&arb->tasks[best]) ||
            (level(t) == level(&arb->tasks[best]) && t->rr_stamp < arb->tasks[best].rr_stamp))
            best = i;
    }
    return best;
}

/* Whether waiting task a would run before waiting task b. */
static int runs_before(const dmn_arbiter_t *arb, int a, int b)
{
    const dmn_task_t *x = &arb->tasks[a], *y = &arb->tasks[b];
    if (level(x) != level(y))
        return level(x) > level(y);
    return x->rr_stamp != y->rr_stamp ? x->rr_stamp < y->rr_stamp : a < b;
}

/* The predicted slice order into turns[slot]: 0 for the incoming task and
 * for the tasks still holding the turn (shared mode: they run beside it, so
 * their next use is now; idle tasks have none), 1.. for the others waiting,
 * in the order the policy would run them. */
static void predict_turns(dmn_arbiter_t *arb, int incoming)
{
    int n = 0;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        arb->turns[i] = DMN_TURN_NONE;
        if (i != incoming && arb->tasks[i].used && arb->tasks[i].state == DMN_STATE_PENDING) {
            int k = n++; /* insertion sort: few waiting tasks, already nearly in order */
            while (k > 0 && runs_before(arb, i, arb->waiting[k - 1])) {
                arb->waiting[k] = arb->waiting[k - 1];
                k--;
            }
            arb->waiting[k] = i;
        }
    }
    for (int k = 0; k < n; k++)
        arb->turns[arb->waiting[k]] = (uint32_t)k + 1;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++)
        if (keeps(&arb->tasks[i]))
            arb->turns[i] = 0;
    arb->turns[incoming] = 0;
}

static void make_view(const dmn_arbiter_t *arb, int slot, dmn_task_view_t *v)
{
    const dmn_task_t *t = &arb->tasks[slot];
    memset(v, 0, sizeof(*v));
    v->id = t->id;
    v->cls = t->reg.cls;
    v->priority = t->reg.priority;
    v->budget = t->reg.budget;
    v->resident = t->stats.resident;
    v->total = t->stats.total;
    v->pinned = t->stats.pinned;
    v->n_pending = t->n_pending;
    v->ranges = t->ranges;
    v->n_ranges = t->n_ranges;
    v->ranges_gen = t->ranges_gen;
    v->turn = arb->turns[slot];
    v->ahead = arb->ahead && arb->share.mode == DMN_MODE_SLICED && v->turn == 1;
    v->kept = keeps(t) && t->kept_grant == t->grant_seq ? t->kept_bytes : 0;
}

/* Adds up what the plan evicts from the tasks that hold the turn beside the
 * incoming one (slot): they keep those orders until they give the turn back
 * (dmn_task_view_t.kept). */
static void count_kept(dmn_arbiter_t *arb, int slot)
{
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        dmn_task_t *t = &arb->tasks[i];
        if (i == slot || !keeps(t))
            continue;
        if (t->kept_grant != t->grant_seq) { /* an earlier turn's: carried out since */
            t->kept_bytes = 0;
            t->kept_grant = t->grant_seq;
        }
        for (size_t k = 0; k < arb->plan.n; k++) {
            const dmn_plan_entry_t *e = &arb->plan.entries[k];
            if (e->task_id == t->id && e->kind == DMN_PLAN_EVICT)
                t->kept_bytes += e->range.len;
        }
    }
}

static gmux_status_t grant(dmn_arbiter_t *arb, int slot, uint64_t now, dmn_arb_action_t *act)
{
    size_t n = 0;
    const dmn_task_view_t *from = NULL, *to = NULL;
    if (arb->ahead_held) { /* never sent: out of the model before it plans */
        act->ahead_back = arb->ahead_held;
        act->ahead_back_st = dmn_arb_ahead_unsent(arb, arb->ahead_held);
        arb->ahead_held = 0;
    }
    predict_turns(arb, slot);
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        if (!arb->tasks[i].used)
            continue;
        make_view(arb, i, &arb->views[n]);
        if (i == arb->last_holder)
            from = &arb->views[n];
        if (i == slot)
            to = &arb->views[n];
        n++;
    }
    dmn_plan_clear(&arb->plan);
    gmux_status_t st =
        arb->placement->on_switch(arb->placement->ctx, arb->views, n, from, to, &arb->plan);
    if (st != GMUX_OK)
        dmn_plan_clear(&arb->plan); /* a failed plan costs faults, never the turn */
    count_kept(arb, slot);
    bool ahead = false;
    for (size_t i = 0; i < arb->plan.n; i++) {
        const dmn_plan_entry_t *e = &arb->plan.entries[i];
        if (e->kind <= DMN_PLAN_AHEAD)
            arb->planned_bytes[e->kind] += e->range.len;
        ahead |= e->kind == DMN_PLAN_AHEAD;
    }
    arb->ahead_plans += ahead;
    dmn_task_t *t = &arb->tasks[slot];
    /* every grant is a switch, the last holder granted again too: its plan
     * may evict and fill, and its GRANT wait for evictions, as any other's */
    arb->switch_counted = 1;
    arb->switches++;
    t->state = DMN_STATE_RUNNING;
    t->held = 0;
    t->taken = 0; /* the server asks it for what it kept (server_hold.h) */
    arb->n_holders++;
    t->granted_ns = now;
    t->rr_before = t->rr_stamp;
    t->rr_stamp = ++arb->stamp;
    arb->holder = slot;
    act->grant = slot;
    act->grant_seq = t->grant_seq = ++arb->grant_seq;
    act->plan = &arb->plan;
    return st;
}

static void revoke(dmn_arbiter_t *arb, int slot, uint64_t now, dmn_arb_action_t *act)
{
    arb->tasks[slot].state = DMN_STATE_REVOKED;
    arb->tasks[slot].revoked_ns = now;
    act->revoke = slot;
}

/* The sum of the tasks' footprints and the smallest device memory they
 * reported (0: none), as they are now. */
static void footprints(const dmn_arbiter_t *arb, uint64_t *sum_p, uint64_t *device_p)
{
    uint64_t sum = 0, device = 0;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        const dmn_task_t *t = &arb->tasks[i];
        if (!t->used)
            continue;
        uint64_t f = dmn_share_footprint(t->reg.budget, t->stats.total, t->ws_bytes);
        sum = sum + f < sum ? UINT64_MAX : sum + f;
        if (t->stats.device && (!device || t->stats.device < device))
            device = t->stats.device;
    }
    *sum_p = sum;
    *device_p = device;
}

/* Recomputes the footprints and the mode (share.h) after a change. */
static void update_mode(dmn_arbiter_t *arb)
{
    if (!arb->share_dirty)
        return;
    arb->share_dirty = 0;
    uint64_t sum, device;
    footprints(arb, &sum, &device);
    (void)dmn_share_update(&arb->share, sum, device);
}

/* Time slices: one holder; see arbiter.h. */
static gmux_status_t decide_sliced(dmn_arbiter_t *arb, uint64_t now, dmn_arb_action_t *act)
{
    int keep = -1, revoked = 0, running = 0;
    for (int i = 0; i < DMN_ARB_MAX_TASKS && arb->n_holders; i++) {
        const dmn_task_t *t = &arb->tasks[i];
        revoked |= holds(t) && t->state == DMN_STATE_REVOKED;
        if (!t->used || t->state != DMN_STATE_RUNNING)
            continue;
        running++;
        const dmn_task_t *k = keep >= 0 ? &arb->tasks[keep] : NULL;
        if (!k || level(t) > level(k) || (level(t) == level(k) && t->granted_ns < k->granted_ns))
            keep = i;
    }
    for (int i = 0; running > 1 && i < DMN_ARB_MAX_TASKS; i++) /* back from shared: one stays */
        if (i != keep && arb->tasks[i].used && arb->tasks[i].state == DMN_STATE_RUNNING) {
            revoke(arb, i, now, act);
            return GMUX_OK;
        }
    if (keep >= 0) {
        dmn_task_t *h = &arb->tasks[keep];
        int w = best_waiting(arb);
        if (w >= 0) {
            const dmn_task_t *b = &arb->tasks[w];
            int preempt = b->reg.cls == DMN_CLASS_LATENCY && h->reg.cls == DMN_CLASS_BATCH;
            int expired = now - h->granted_ns >= arb->quantum_ns && level(b) >= level(h);
            if (preempt || expired)
                revoke(arb, keep, now, act);
        }
        return GMUX_OK;
    }
    if (revoked)
        return GMUX_OK; /* the next turn starts once the revoked holders released */
    int next = best_waiting(arb);
    return next >= 0 ? grant(arb, next, now, act) : GMUX_OK;
}

/* Shared: every waiting task of the top class holds the turn; see arbiter.h. */
static gmux_status_t decide_shared(dmn_arbiter_t *arb, uint64_t now, dmn_arb_action_t *act)
{
    uint32_t top = DMN_CLASS_BATCH;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        const dmn_task_t *t = &arb->tasks[i];
        if (t->used && t->reg.cls == DMN_CLASS_LATENCY && t->state != DMN_STATE_IDLE)
            top = DMN_CLASS_LATENCY;
    }
    int lower_holds = 0, next = -1;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        const dmn_task_t *t = &arb->tasks[i];
        if (holds(t) && t->reg.cls < top) {
            if (t->state == DMN_STATE_RUNNING) {
                revoke(arb, i, now, act);
                return GMUX_OK;
            }
            lower_holds = 1;
        }
        if (t->used && t->state == DMN_STATE_PENDING && t->reg.cls == top &&
            (next < 0 || runs_before(arb, i, next)))
            next = i;
    }
    if (lower_holds || next < 0)
        return GMUX_OK;
    return grant(arb, next, now, act);
}

gmux_status_t dmn_arb_decide(dmn_arbiter_t *arb, uint64_t now, dmn_arb_action_t *act)
{
    *act = (dmn_arb_action_t){-1, -1, -1, 0, NULL, 0, GMUX_OK};
    update_mode(arb);
    for (int i = 0; i < DMN_ARB_MAX_TASKS && arb->n_holders; i++) {
        dmn_task_t *t = &arb->tasks[i];
        if (t->used && t->state == DMN_STATE_REVOKED && now - t->revoked_ns >= arb->grace_ns) {
            act->forced = i;
            arb->forced++;
            end_turn(arb, i, now, DMN_STATE_PENDING);
            t->taken = 1;
            break; /* one per decision, like every other action */
        }
    }
    if (arb->share.mode == DMN_MODE_SHARED)
        return decide_shared(arb, now, act);
    return decide_sliced(arb, now, act);
}

uint64_t dmn_arb_next_deadline(const dmn_arbiter_t *arb)
{
    uint64_t next = UINT64_MAX;
    int running = -1, n_running = 0;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        const dmn_task_t *t = &arb->tasks[i];
        if (!holds(t))
            continue;
        if (t->state == DMN_STATE_REVOKED) {
            if (t->revoked_ns + arb->grace_ns < next)
                next = t->revoked_ns + arb->grace_ns;
        } else {
            running = i;
            n_running++;
        }
    }
    /* The quantum's end changes the answer only when the task waiting could
     * take the turn then (decide_sliced); a past deadline that decides nothing
     * would make the server poll with a timeout of 0, burning a CPU. */
    int w = n_running == 1 ? best_waiting(arb) : -1;
    if (arb->share.mode == DMN_MODE_SLICED && w >= 0 &&
        level(&arb->tasks[w]) >= level(&arb->tasks[running])) {
        uint64_t q = arb->tasks[running].granted_ns + arb->quantum_ns;
        next = q < next ? q : next;
    }
    return next;
}

void dmn_arb_status_head(const dmn_arbiter_t *arb, uint64_t now, dmn_msg_status_t *head)
{
    uint64_t sum, device;
    footprints(arb, &sum, &device);
    memset(head, 0, sizeof(*head));
    head->mode = arb->share.mode;
    head->uptime_ns = now - arb->start_ns;
    head->switches = arb->switches;
    head->reclaimed = arb->reclaimed;
    head->capacity = dmn_share_capacity(&arb->share, device);
    head->footprint = sum;
    head->mode_changes = arb->share.changes;
    head->evict_bytes = arb->planned_bytes[DMN_PLAN_EVICT];
    head->fill_bytes = arb->planned_bytes[DMN_PLAN_FILL];
    head->ahead_bytes = arb->planned_bytes[DMN_PLAN_AHEAD];
    head->ahead_plans = arb->ahead_plans;
}

uint32_t dmn_arb_snapshot(const dmn_arbiter_t *arb, uint64_t now, dmn_status_task_t *out,
                          uint32_t cap)
{
    uint32_t n = 0;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        const dmn_task_t *t = &arb->tasks[i];
        if (!t->used)
            continue;
        if (n < cap) {
            dmn_status_task_t *s = &out[n];
            memset(s, 0, sizeof(*s));
            s->id = t->id;
            s->pid = t->reg.pid;
            /* a GRANT held: granted, yet it may not launch */
            s->state = t->held && t->state == DMN_STATE_RUNNING ? DMN_STATE_HELD : t->state;
            s->cls = t->reg.cls;
            s->priority = t->reg.priority;
            s->budget = t->reg.budget;
            s->resident = t->stats.resident;
            s->pinned = t->stats.pinned;
            s->total = t->stats.total;
            s->faults = t->stats.faults;
            s->migrated = t->stats.migrated;
            s->kernels = t->stats.kernels;
            s->run_ns = t->run_ns + (holds(t) && !t->held ? now - t->granted_ns : 0);
            s->age_ns = now - t->registered_ns;
            memcpy(s->name, t->reg.name, DMN_NAME_MAX);
            s->footprint = dmn_share_footprint(t->reg.budget, t->stats.total, t->ws_bytes);
        }
        n++;
    }
    return n;
}
