/*
 * The arbiter: who may launch on the GPU now. Pure decision logic, no I/O:
 * the server feeds it events (a task joined, has launches pending, gave the
 * turn back, went idle, left) and asks it what to do (dmn_arb_decide); the
 * benchmark and the unit tests drive it with a fake clock.
 *
 * Policy (mode "sliced", time slices):
 * - One task holds the turn at a time. A task that has launches pending and
 *   no turn waits; the waiting task of the highest level goes next, where the
 *   level is the class first (latency above batch) and then the priority;
 *   among equals, the one that has waited longest since its last turn (round
 *   robin).
 * - The holder keeps the turn until its quantum ends and another task of the
 *   same or a higher level is waiting, or until it goes idle. A waiting
 *   latency-class task revokes a batch holder at once, without waiting for
 *   the quantum; the holder stops at its next kernel boundary.
 * - A revoked holder must give the turn back (RELEASE) within the grace
 *   period; past it the arbiter takes the turn away anyway, so a stuck task
 *   cannot stall the others.
 * - Priorities are strict within a class: a lower level runs only while no
 *   higher level is waiting.
 * - At every grant, placement->on_switch(previous holder, new holder) builds
 *   the plan of evictions and fills (placement.h); in this mode, with
 *   filling ahead on, the view of the task predicted next is marked for a
 *   fill ahead. The views of tasks still holding the turn (shared mode),
 *   and of those whose turn was taken but not given back (dmn_task_t.taken),
 *   have turn 0, like the incoming one: they are running. If the hook
 *   fails, the plan is cleared and the grant stands.
 *
 * Mode "shared" (share.h decides it from the footprints and the capacity):
 * - Every waiting task of the top class is granted at once and keeps the
 *   turn until it goes idle: no quantum, no round robin, and priorities do
 *   not exclude anyone. The top class is latency while a latency task waits
 *   or holds the turn, else batch.
 * - The latency class keeps its precedence: a latency task that starts
 *   waiting revokes every batch holder (next kernel boundary) and is granted
 *   once they have all released; latency tasks then share among themselves,
 *   and batch tasks wait until no latency task waits or holds the turn.
 * - When a registration or a report makes the footprints overflow, the mode
 *   goes back to sliced at once: one holder (the highest level, then the
 *   longest holding) keeps the turn, every other one is revoked like at a
 *   switch, and nobody new is granted until they have released (or lost
 *   the turn after the grace period).
 *
 * Ownership: the arbiter owns copies of each task's declared ranges and the
 * current plan. Thread-safety: none (the daemon is single-threaded).
 */
#ifndef DMN_ARBITER_H
#define DMN_ARBITER_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "daemon/placement.h"
#include "daemon/proto.h"
#include "daemon/share.h"

#define DMN_ARB_MAX_TASKS 256

typedef struct dmn_task {
    int used;
    uint32_t id;
    dmn_msg_register_t reg;
    uint32_t state;         /* dmn_task_state_t */
    uint64_t rr_stamp;      /* order of the last grant: lower waited longer */
    uint64_t rr_before;     /* rr_stamp before the last grant (dmn_arb_withdraw) */
    uint64_t registered_ns; /* when it joined */
    uint64_t granted_ns;    /* start of the current turn */
    int held;               /* its GRANT is held (dmn_arb_hold_turn): no turn yet;
                               STATUS shows it DMN_STATE_HELD */
    uint64_t revoked_ns;    /* when the current turn was revoked */
    uint64_t grant_seq;     /* sequence of its current (last) grant */
    uint64_t run_ns;        /* time holding the turn, finished turns */
    dmn_msg_stats_t stats;  /* last STATS */
    uint32_t n_pending;     /* last PENDING count */
    dmn_range_t *ranges;    /* last PENDING ranges (owned) */
    uint32_t n_ranges;
    uint64_t ws_bytes;   /* sum of the ranges' lengths */
    uint64_t ranges_gen; /* a new value each time the ranges change (view.ranges_gen) */
    /* Bytes plans evicted from it while it held the turn of grant_seq
     * kept_grant: still on the device while it holds that turn (its shim
     * keeps the orders until it gives the turn back), view.kept. */
    uint64_t kept_bytes, kept_grant;
    /* Its turn was taken after the grace period and it has not given it
     * back since (RELEASE, IDLE) nor been granted again: its shim, stuck,
     * still holds the turn as far as it knows, so it keeps the evictions it
     * was sent (counted in view.kept) and its kernels may still run (turn 0
     * in the views, like a holder). */
    int taken;
} dmn_task_t;

typedef struct dmn_arbiter {
    dmn_task_t tasks[DMN_ARB_MAX_TASKS];
    uint64_t quantum_ns, grace_ns;
    uint64_t start_ns;
    int holder;         /* a slot holding the turn (the only one when sliced), -1 none */
    int last_holder;    /* slot of the previous holder, -1 none or gone */
    uint32_t n_holders; /* tasks running or revoked */
    uint32_t next_id;
    uint64_t stamp, grant_seq;
    uint64_t switches, reclaimed, forced;
    /* what the placement planned so far: bytes per plan kind (evict, fill,
     * ahead) and the switches whose plan filled ahead */
    uint64_t planned_bytes[3], ahead_plans;
    /* the last grant: 0 none or handed back (dmn_arb_unsent), 1 made and
     * counted in switches (every grant is: STATUS counts the grants that went) */
    int switch_counted;
    dmn_share_t share; /* the mode and what decided it */
    int share_dirty;   /* a footprint or the capacity may have changed since */
    const dmn_placement_t *placement;
    int ahead; /* mark the turn-1 view for a fill ahead (sliced mode only) */
    /* the grant whose GRANT went and whose fill ahead the server holds, not
     * sent yet (dmn_arb_hold_ahead); 0: none */
    uint64_t ahead_held;
    dmn_plan_t plan;
    dmn_task_view_t views[DMN_ARB_MAX_TASKS];
    uint32_t turns[DMN_ARB_MAX_TASKS]; /* scratch of the slice-order prediction */
    int waiting[DMN_ARB_MAX_TASKS];
} dmn_arbiter_t;

/* What the server must do after dmn_arb_decide. Slots, -1 for none. One
 * decision may leave more to do (several revocations or, when shared, several
 * grants): call dmn_arb_decide again until it returns no action. */
typedef struct dmn_arb_action {
    int revoke; /* send REVOKE to this task */
    int forced; /* this task's turn was taken away after the grace period */
    int grant;  /* send the plan's orders, then GRANT to this task */
    uint64_t grant_seq;
    const dmn_plan_t *plan; /* valid until the next decide that grants */
    /* a grant whose held fill ahead this decision handed back before it
     * planned (dmn_arb_hold_ahead), 0 none, and the placement's status */
    uint64_t ahead_back;
    gmux_status_t ahead_back_st;
} dmn_arb_action_t;

void dmn_arb_init(dmn_arbiter_t *arb, uint64_t quantum_ns, uint64_t grace_ns,
                  const dmn_placement_t *placement, uint64_t now);
void dmn_arb_fini(dmn_arbiter_t *arb);

/* Sets the share mode's parameters (share.h; init: enabled, capacity from
 * the tasks' reports, headroom 10%). The mode follows at the next decide. */
void dmn_arb_set_share(dmn_arbiter_t *arb, const dmn_share_params_t *p);

/* Whether the placement may fill the task expected next ahead of its turn
 * (dmn_task_view_t.ahead, set only in the sliced mode; init: on). */
void dmn_arb_set_ahead(dmn_arbiter_t *arb, int on);

/* A new task; returns its slot, or GMUX_ERR_CAPACITY when full. */
int dmn_arb_add(dmn_arbiter_t *arb, const dmn_msg_register_t *reg, uint64_t now);

/* The task leaves (exit, death, protocol error: its connection ended); its
 * turn and accounting are reclaimed, and it counts in STATUS's reclaimed. */
void dmn_arb_remove(dmn_arbiter_t *arb, int slot, uint64_t now);

/* Launches are pending; ranges (copied) are their predicted working set.
 * GMUX_ERR_NOMEM: no room to copy the ranges; the task keeps the ones it had
 * (and their generation) and waits for its turn all the same. */
gmux_status_t dmn_arb_pending(dmn_arbiter_t *arb, int slot, uint32_t n_launches,
                              const dmn_msg_ranges_t *ranges, uint64_t now);

/* The task gives the turn back but still has work (answer to REVOKE). */
void dmn_arb_release(dmn_arbiter_t *arb, int slot, uint64_t now);

/* The task has nothing queued; gives the turn back if it holds it. */
void dmn_arb_idle(dmn_arbiter_t *arb, int slot, uint64_t now);

void dmn_arb_stats(dmn_arbiter_t *arb, int slot, const dmn_msg_stats_t *stats);

/* The server holds the GRANT of the grant just made to slot (server_hold.h):
 * no time counts as its turn's (run time, STATUS's share), nor does it if the
 * task gives it back or leaves before dmn_arb_restart_turn. */
void dmn_arb_hold_turn(dmn_arbiter_t *arb, int slot);

/* The turn of slot (a holder) starts again at now: its quantum and its
 * running time count from then (the server held its GRANT until now). */
void dmn_arb_restart_turn(dmn_arbiter_t *arb, int slot, uint64_t now);

/* Whether the holder in slot would be revoked at once for a waiting task:
 * it is of the batch class and a latency-class task waits (both modes). */
int dmn_arb_preempted(const dmn_arbiter_t *arb, int slot);

/* Takes back the turn just granted to slot, whose GRANT was never sent (the
 * server held it, server_hold.h): the task waits again where it waited
 * before, as if never granted (its place in the round robin; the previous
 * holder stays the previous holder). What the switch's plan ordered of the
 * other tasks stands: their orders were sent; the rest never went
 * (dmn_arb_unsent, whose status it returns). */
gmux_status_t dmn_arb_withdraw(dmn_arbiter_t *arb, int slot);

/* The grant grant_seq, the last one made (no decision since), never went:
 * withdrawn, or void (its task left, went idle or gave the turn back before
 * the server sent its GRANT). Its plan's orders for the granted task
 * task_id and its fill ahead were not sent: they are handed back to the
 * placement (dmn_placement_t.on_unsent) and taken out of the counts of
 * STATUS, as is the switch itself (planned bytes, fills ahead, switches);
 * the plan is cleared. The other tasks' orders were sent and stay counted.
 * Once per grant; an earlier grant's changes nothing. Returns the
 * placement's status: an error leaves part of those orders in its model
 * (placement.h). */
gmux_status_t dmn_arb_unsent(dmn_arbiter_t *arb, uint32_t task_id, uint64_t grant_seq);

/* The grant grant_seq, the last one made, went, but not its fill ahead:
 * the task it was for left before it was sent, or its connection failed
 * while it was written. Those orders are handed back to the placement and
 * taken out of STATUS's counts (ahead bytes, fills ahead), as
 * dmn_arb_unsent does; the grant and the rest of its plan stand. Returns
 * the placement's status. */
gmux_status_t dmn_arb_ahead_unsent(dmn_arbiter_t *arb, uint64_t grant_seq);

/* The grant grant_seq, the last one made, went, and the server holds its
 * fill ahead (server_hold.h: it waits for evictions its GRANT did not
 * need); 0: none held any more (sent, or handed back). The plan stays
 * valid while no decision grants: a decision that grants first hands the
 * held fill ahead back (dmn_arb_ahead_unsent, before the placement plans
 * again; action.ahead_back says so), as a later switch's orders must not
 * come before it. */
void dmn_arb_hold_ahead(dmn_arbiter_t *arb, uint64_t grant_seq);

/* Applies the policy at time now and says what to send. */
gmux_status_t dmn_arb_decide(dmn_arbiter_t *arb, uint64_t now, dmn_arb_action_t *act);

/* The next time at which dmn_arb_decide may change its answer with no new
 * event (quantum end, grace end); UINT64_MAX when none. */
uint64_t dmn_arb_next_deadline(const dmn_arbiter_t *arb);

/* Tasks holding the turn now (running or revoked). */
uint32_t dmn_arb_holders(const dmn_arbiter_t *arb);

/* The STATUS head: mode, capacity, footprints, counters (n_tasks not set).
 * The footprints and capacity are counted as they are now (registrations,
 * reports and departures since the last decision count); the mode is the
 * one in force, which the next decision brings up to date. Reading it
 * changes nothing: a query must not decide the mode (until 2026-12-03 it
 * did, between two decisions: a query that read the footprints over the
 * line while a switch was held switched to slices). */
void dmn_arb_status_head(const dmn_arbiter_t *arb, uint64_t now, dmn_msg_status_t *head);

/* Fills up to cap entries (slot order); returns how many tasks there are. */
uint32_t dmn_arb_snapshot(const dmn_arbiter_t *arb, uint64_t now, dmn_status_task_t *out,
                          uint32_t cap);

#endif /* DMN_ARBITER_H */
