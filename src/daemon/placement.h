/*
 * The seam between the daemon's time slices and global memory placement.
 *
 * At every switch the arbiter calls placement->on_switch(from, to) with every
 * registered task (its declared pending working set included) and an empty
 * plan; the hook appends evict orders for any task and fill orders for the
 * incoming one, as address ranges in each task's own address space (each
 * process migrates its own memory on its own context). The server sends the
 * plan as PLAN messages to the tasks concerned, before the GRANT. A policy
 * with a capacity may append, after them, AHEAD orders for the view marked
 * `ahead` (the task expected next): its working set into the memory free
 * after this switch, evicting nothing; the server sends those after the
 * GRANT, and the task applies them while it waits for its turn.
 *
 * A switch whose GRANT the server held and never sent (a withdrawn or void
 * grant, server_hold.h), or could not send (the task's connection failed
 * while its orders or GRANT were written), sends only the other tasks'
 * orders: the arbiter
 * hands the rest back to the placement (on_unsent, below), so that its model
 * does not count as resident memory that was never filled.
 *
 * A hook that fails (returns an error) may have written part of a plan; the
 * arbiter sends none of it and grants anyway (a failed plan costs faults,
 * never the turn). So a failed hook must leave its model of what is resident
 * as it was before the call: "opt" and "chunk" copy what a switch changes
 * before changing it and put it back when the switch fails.
 *
 * This is where the engine's OPT over the global timeline plugs in (issue 6,
 * h/engine): an implementation of dmn_placement_t whose on_switch runs the
 * engine's placement over all tasks' pending launches. Three policies exist:
 * "none" (empty plans), "swap" (evict the outgoing task's declared working
 * set, fill the incoming one's: a stand-in that exercises the message path)
 * and "opt" (place_opt.h: Belady over the predicted slice order, at the
 * granularity of each task's declared working set, under a capacity).
 *
 * Ownership: a plan owns its entry array (dmn_plan_fini frees it).
 * Thread-safety: none; the daemon is single-threaded.
 */
#ifndef DMN_PLACEMENT_H
#define DMN_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "daemon/proto.h"

/* What the placement sees of one task. */
typedef struct dmn_task_view {
    uint32_t id;
    uint32_t cls;
    int32_t priority;
    uint64_t budget;
    uint64_t resident, total;
    uint32_t n_pending;        /* launches the task says are queued */
    const dmn_range_t *ranges; /* their predicted working set */
    uint32_t n_ranges;
    uint32_t turn; /* predicted slice order: 0 the incoming task and the tasks
                      still holding the turn (shared mode: running beside it),
                      1.. the waiting tasks in the order they would run,
                      DMN_TURN_NONE idle ones */
    /* Changes whenever ranges change (unique in the process); 0: unknown, a
     * placement must not cache what it derives from them. */
    uint64_t ranges_gen;
    /* 1: the placement may also plan a fill ahead for this task (DMN_PLAN_AHEAD:
     * its working set into the memory left free after the switch, evicting
     * nothing). The arbiter sets it on the turn-1 task in the sliced mode
     * when filling ahead is on (GMUX_DAEMON_AHEAD); 0 everywhere else. */
    uint32_t ahead;
    /* Bytes of this task's memory that earlier plans evicted while it held
     * the turn it still holds (shared mode; or whose turn was taken, not
     * given back yet: its shim still holds it as far as it knows): its shim keeps those orders
     * until it gives the turn back, so the memory is still on the device.
     * A placement counts them in use, and so the memory it evicts now from
     * the other tasks holding the turn (turn 0, not `to`): neither is room
     * for this switch's fills, nor for the fill ahead (the arbiter, which
     * adds up the evictions of such tasks, sets it; 0 once the task gave the
     * turn back: the server then holds the next switch that fills until
     * they are done, server_hold.h). */
    uint64_t kept;
    /* The task's device bytes no plan can move (its last STATS, v9): its
     * allocations that are not managed. A placement with a capacity plans
     * managed memory only into what every task's pinned bytes leave of it
     * (daemon.md, "Pinned memory"), each task's rounded up to whole chunks. */
    uint64_t pinned;
} dmn_task_view_t;

#define DMN_TURN_NONE UINT32_MAX

typedef struct dmn_plan_entry {
    uint32_t task_id;
    uint32_t kind; /* dmn_plan_kind_t */
    dmn_range_t range;
} dmn_plan_entry_t;

typedef struct dmn_plan {
    dmn_plan_entry_t *entries;
    size_t n, cap;
    /* The incoming task's GRANT flags (proto.h, v8), the placement's to set
     * in on_switch: DMN_GRANT_PLANNED when its fills for that task are all
     * it wants moved in (it models what is resident and plans under its
     * capacity: "opt", "chunk"). 0 after dmn_plan_clear, so a plan that
     * failed grants without it. */
    uint32_t grant_flags;
} dmn_plan_t;

void dmn_plan_init(dmn_plan_t *plan);
void dmn_plan_fini(dmn_plan_t *plan);
void dmn_plan_clear(dmn_plan_t *plan); /* its orders and grant_flags */
/* Appends an order; merged into the previous one when it continues it (same
 * task and kind, contiguous). */
gmux_status_t dmn_plan_add(dmn_plan_t *plan, uint32_t task_id, dmn_plan_kind_t kind,
                           dmn_range_t range);
/* Room for n more orders, so that the next n dmn_plan_put cannot fail. */
gmux_status_t dmn_plan_reserve(dmn_plan_t *plan, size_t n);

/* The chunks the pinned bytes of tasks[0..n) take (dmn_task_view_t.pinned),
 * each task's rounded up to whole chunks (chunk: a power of two), at most
 * `most`: what a placement with a capacity leaves out of it. */
uint64_t dmn_views_pinned_chunks(const dmn_task_view_t *tasks, size_t n, uint64_t chunk,
                                 uint64_t most);

/* dmn_plan_add into room made by dmn_plan_reserve (inline: a placement may
 * write thousands of orders per switch). */
static inline void dmn_plan_put(dmn_plan_t *plan, uint32_t task_id, dmn_plan_kind_t kind,
                                dmn_range_t range)
{
    dmn_plan_entry_t *last = plan->n ? &plan->entries[plan->n - 1] : NULL;
    if (last && last->task_id == task_id && last->kind == (uint32_t)kind &&
        last->range.base + last->range.len == range.base)
        last->range.len += range.len;
    else
        plan->entries[plan->n++] = (dmn_plan_entry_t){task_id, (uint32_t)kind, range};
}

typedef struct dmn_placement {
    const char *name;
    void *ctx;
    /* from is NULL at the first switch or when the previous holder left. */
    gmux_status_t (*on_switch)(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                               const dmn_task_view_t *from, const dmn_task_view_t *to,
                               dmn_plan_t *plan);
    /* Optional (NULL: a policy with no model of what is resident). Orders
     * of the plan the last on_switch wrote that were never sent: all the
     * granted task's (its GRANT was held, then the grant was withdrawn or
     * found void, server_hold.h, or its connection failed while they were
     * written) and all the fill ahead. Its fills (FILL, AHEAD) did not
     * happen and its evictions did not either: the policy takes the one out
     * of its model and puts the other back. Called before the next
     * on_switch, at most once per switch; orders of tasks it no longer knows
     * are ignored. "opt" and "chunk" make that hand-back ready during the
     * switch (what it changes, kept as it was), so that it cannot fail; other
     * orders they take out one by one. An error there, or another policy's
     * (an allocation), may leave part of them in the model, counted as done:
     * later plans then miss memory or room, never correctness. */
    gmux_status_t (*on_unsent)(void *ctx, const dmn_plan_entry_t *orders, size_t n);
} dmn_placement_t;

/* The policies built in; NULL for an unknown name. */
const dmn_placement_t *dmn_placement_find(const char *name);

#endif /* DMN_PLACEMENT_H */
