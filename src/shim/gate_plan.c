/* The gate's stores of gmuxd's orders: see gate_plan.h. */
#include "shim/gate_plan.h"

#include <stdbool.h>

#include "common/log.h"
#include "shim/gate_ranges.h"
#include "shim/policy.h"
#include "shim/stats.h"

static dmn_range_t plan[3][SHIM_GATE_PLAN_CAP]; /* [dmn_plan_kind_t] */
static uint32_t plan_n[3];
/* The client's epoch the stored orders came in (gate_plan.h). */
static uint64_t plan_epoch;
/* The grant the stored FILL orders belong to (gate_plan.h). */
static uint64_t plan_fill_seq;
/* EVICT ranges stored since the store of evictions was last put off by a
 * graph capture (or empty): counted in evict_deferred at their first
 * put-off, not at each try after it. */
static uint32_t plan_evict_new;
/* Ranges of the PLAN message being read that the store kept, and evictions
 * of it joined with a stored one for want of room (on_plan_end). */
static uint32_t plan_msg_kept, plan_msg_joined;
static dmn_range_t plan_cut_tmp[SHIM_GATE_PLAN_CAP];
/* A store overflowed since shim_gate_plan_overflowed last said (gate_plan.h). */
static bool plan_overflowed;

void shim_gate_plan_give_up(dmn_plan_kind_t kind)
{
    for (uint32_t i = 0; i < plan_n[kind]; i++)
        shim_policy_lost(plan[kind][i].base, plan[kind][i].len);
    plan_n[kind] = 0;
}

bool shim_gate_plan_overflowed(void)
{
    bool was = plan_overflowed;
    plan_overflowed = false;
    return was;
}

void shim_gate_plan_overflow_kept(void)
{
    plan_overflowed = true;
}

void shim_gate_plan_current(const dmn_client_t *cl)
{
    uint64_t epoch = dmn_client_epoch(cl);
    if (epoch == plan_epoch)
        return;
    if (plan_n[0] + plan_n[1] + plan_n[2])
        COM_DEBUG(SHIM, "daemon plan: %u orders of a connection that ended dropped",
                  plan_n[0] + plan_n[1] + plan_n[2]);
    shim_gate_plan_give_up(DMN_PLAN_FILL);
    shim_gate_plan_give_up(DMN_PLAN_AHEAD);
    plan_n[DMN_PLAN_EVICT] = 0;
    plan_epoch = epoch;
}

const dmn_range_t *shim_gate_plan_ranges(dmn_plan_kind_t kind, uint32_t *n)
{
    *n = plan_n[kind];
    return plan[kind];
}

uint32_t shim_gate_plan_count(dmn_plan_kind_t kind)
{
    return plan_n[kind];
}

void shim_gate_plan_clear(dmn_plan_kind_t kind)
{
    plan_n[kind] = 0;
}

uint64_t shim_gate_plan_fill_seq(void)
{
    return plan_fill_seq;
}

uint32_t shim_gate_plan_evict_put_off(void)
{
    uint32_t n = plan_evict_new;
    plan_evict_new = 0;
    return n;
}

/* Takes the ranges of an eviction that just arrived out of the stored fills
 * of one kind (FILL or AHEAD; pieces that no longer fit the store are
 * dropped: a fill left out costs faults, never memory), or the ranges of a
 * fill that just arrived out of the stored evictions (kind EVICT: see
 * shim_gate_plan_on_plan; there a range whose pieces would not fit is left
 * whole, as an eviction left out would cost memory). The eviction comes
 * from a switch after theirs: the daemon's model counts that memory as
 * given to the task then granted, and carried out after it (the fill ahead
 * at the next wait, a fill at its grant) they would take it back. The rest
 * is still this task's in the model, which sends an eviction for any of it
 * it gives away. */
static void gate_plan_cut(dmn_plan_kind_t kind, const dmn_range_t *ev, uint32_t n)
{
    uint64_t bytes = 0;
    uint32_t whole = 0;
    uint32_t dropped =
        shim_gate_ranges_cut(plan[kind], &plan_n[kind], SHIM_GATE_PLAN_CAP, plan_cut_tmp, ev, n,
                             kind == DMN_PLAN_EVICT, &whole, &bytes);
    plan_overflowed |= dropped + whole > 0;
    SHIM_STAT_ADD(fill_dropped, dropped);
    SHIM_STAT_ADD(fill_dropped_bytes, bytes);
}

/* The bytes of the stored orders of one kind. */
static uint64_t gate_plan_bytes(dmn_plan_kind_t kind)
{
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < plan_n[kind]; i++)
        bytes += plan[kind][i].len;
    return bytes;
}

void shim_gate_plan_on_plan(void *arg, uint64_t grant_seq, dmn_plan_kind_t kind,
                            const dmn_range_t *ranges, uint32_t n)
{
    if (kind != DMN_PLAN_EVICT && kind != DMN_PLAN_FILL && kind != DMN_PLAN_AHEAD)
        return;
    shim_gate_plan_current(*(dmn_client_t **)arg); /* these came on the connection of now */
    if (kind == DMN_PLAN_EVICT) {
        /* that memory went to another task: see gate_plan_cut */
        gate_plan_cut(DMN_PLAN_AHEAD, ranges, n);
        gate_plan_cut(DMN_PLAN_FILL, ranges, n);
    } else {
        /* That memory is this task's again. An eviction of it still stored
         * (deferred by a graph capture of the program, or kept for want of
         * a context) is over: carried out later it would undo this fill (a
         * fill ahead goes at this task's next wait, before the grant that
         * would carry out the eviction). */
        uint64_t before = gate_plan_bytes(DMN_PLAN_EVICT);
        gate_plan_cut(DMN_PLAN_EVICT, ranges, n);
        if (gate_plan_bytes(DMN_PLAN_EVICT) != before)
            SHIM_STAT_ADD(evict_cancelled, 1);
    }
    if (kind == DMN_PLAN_FILL && grant_seq != plan_fill_seq) {
        if (plan_n[DMN_PLAN_FILL])
            COM_DEBUG(SHIM, "daemon plan: %u fill orders of grant %llu dropped (unused)",
                      plan_n[DMN_PLAN_FILL], (unsigned long long)plan_fill_seq);
        shim_gate_plan_give_up(DMN_PLAN_FILL);
        plan_fill_seq = grant_seq;
    }
    if (kind == DMN_PLAN_EVICT) { /* never dropped: see shim_gate_ranges_add_whole */
        plan_evict_new = (plan_n[kind] ? plan_evict_new : 0) + n;
        uint32_t joined = 0;
        for (uint32_t i = 0; i < n; i++)
            joined += shim_gate_ranges_add_whole(plan[kind], &plan_n[kind], SHIM_GATE_PLAN_CAP,
                                                 ranges[i]);
        plan_msg_joined += joined;
        plan_overflowed |= joined > 0;
        plan_msg_kept += n;
        return;
    }
    for (uint32_t i = 0; i < n; i++) { /* full: given up (gate_ranges.h) */
        uint64_t lost =
            shim_gate_ranges_add_fill(plan[kind], &plan_n[kind], SHIM_GATE_PLAN_CAP, ranges[i]);
        plan_msg_kept += lost == 0;
        if (lost) /* prefetched at its next use instead, whatever the GRANT says */
            shim_policy_lost(ranges[i].base, ranges[i].len);
        SHIM_STAT_ADD(fill_dropped, lost != 0);
        SHIM_STAT_ADD(fill_dropped_bytes, lost);
    }
}

void shim_gate_plan_on_plan_end(void *arg, uint64_t grant_seq, dmn_plan_kind_t kind, uint32_t n)
{
    (void)arg;
    (void)grant_seq;
    bool stored = kind == DMN_PLAN_EVICT || kind == DMN_PLAN_FILL || kind == DMN_PLAN_AHEAD;
    if (stored && plan_msg_kept < n)
        COM_WARN(SHIM, "daemon plan of %u ranges: %u fill ranges given up (store full)", n,
                 n - plan_msg_kept);
    if (plan_msg_joined)
        COM_WARN(SHIM, "daemon plan of %u evictions: %u joined with a stored one (store full)", n,
                 plan_msg_joined);
    plan_msg_kept = plan_msg_joined = 0;
}
