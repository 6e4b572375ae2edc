/* Unit tests of the time-slice arbiter (src/daemon/arbiter.c), fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "daemon/arbiter.h"
#include "daemon/place_chunk.h"
#include "daemon/place_opt.h"

#define MS 1000000ull

static dmn_arbiter_t *arb;

static int setup(void **state)
{
    (void)state;
    arb = malloc(sizeof(*arb));
    dmn_arb_init(arb, 10 * MS, 100 * MS, NULL, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dmn_arb_fini(arb);
    free(arb);
    return 0;
}

static int add(dmn_class_t cls, int prio)
{
    dmn_msg_register_t r = {1, cls, prio, 0, 0, "t"};
    int s = dmn_arb_add(arb, &r, 0);
    assert_true(s >= 0);
    return s;
}

static void pend(int slot, uint64_t now)
{
    assert_int_equal(dmn_arb_pending(arb, slot, 1, NULL, now), GMUX_OK);
}

static dmn_arb_action_t decide(uint64_t now)
{
    dmn_arb_action_t a;
    assert_int_equal(dmn_arb_decide(arb, now, &a), GMUX_OK);
    return a;
}

static void test_round_robin_order(void **state)
{
    (void)state;
    int t[3] = {add(DMN_CLASS_BATCH, 0), add(DMN_CLASS_BATCH, 0), add(DMN_CLASS_BATCH, 0)};
    dmn_arb_action_t a = decide(0);
    assert_int_equal(a.grant, -1); /* nobody waits */
    for (int i = 0; i < 3; i++)
        pend(t[i], 0);
    uint64_t now = 0;
    int order[7];
    for (int k = 0; k < 7; k++) {
        a = decide(now);
        assert_true(a.grant >= 0);
        order[k] = a.grant;
        assert_int_equal(arb->tasks[a.grant].state, DMN_STATE_RUNNING);
        /* Before the quantum ends nothing changes. */
        a = decide(now + 5 * MS);
        assert_int_equal(a.revoke, -1);
        assert_int_equal(a.grant, -1);
        assert_int_equal(dmn_arb_next_deadline(arb), now + 10 * MS);
        now += 10 * MS;
        a = decide(now);
        assert_int_equal(a.revoke, order[k]);
        assert_int_equal(arb->tasks[order[k]].state, DMN_STATE_REVOKED);
        dmn_arb_release(arb, order[k], now);
    }
    for (int k = 3; k < 7; k++)
        assert_int_equal(order[k], order[k - 3]); /* a cycle of all three */
    assert_true(order[0] != order[1] && order[1] != order[2] && order[0] != order[2]);
    assert_int_equal(arb->switches, 7);
}

static void test_alone_keeps_turn(void **state)
{
    (void)state;
    int a0 = add(DMN_CLASS_BATCH, 0), b0 = add(DMN_CLASS_BATCH, 0);
    pend(a0, 0);
    assert_int_equal(decide(0).grant, a0);
    assert_int_equal(dmn_arb_next_deadline(arb), UINT64_MAX); /* nobody waits */
    dmn_arb_action_t a = decide(50 * MS);
    assert_int_equal(a.revoke, -1); /* past the quantum, but alone */
    pend(b0, 60 * MS);
    a = decide(60 * MS);
    assert_int_equal(a.revoke, a0); /* it has had more than a quantum */
}

static void test_idle_switches_at_once(void **state)
{
    (void)state;
    int a0 = add(DMN_CLASS_BATCH, 0), b0 = add(DMN_CLASS_BATCH, 0);
    pend(a0, 0);
    pend(b0, 0);
    int first = decide(0).grant;
    int second = first == a0 ? b0 : a0;
    dmn_arb_idle(arb, first, 2 * MS);
    dmn_arb_action_t a = decide(2 * MS);
    assert_int_equal(a.grant, second);
    assert_int_equal(arb->tasks[first].state, DMN_STATE_IDLE);
    dmn_status_task_t snap[4];
    assert_int_equal(dmn_arb_snapshot(arb, 5 * MS, snap, 4), 2);
    uint32_t first_id = arb->tasks[first].id;
    for (int i = 0; i < 2; i++)
        assert_int_equal(snap[i].run_ns, snap[i].id == first_id ? 2 * MS : 3 * MS);
}

static void test_latency_preempts(void **state)
{
    (void)state;
    int b = add(DMN_CLASS_BATCH, 10), l = add(DMN_CLASS_LATENCY, -5);
    pend(b, 0);
    assert_int_equal(decide(0).grant, b);
    pend(l, 1 * MS);
    dmn_arb_action_t a = decide(1 * MS); /* well inside the quantum */
    assert_int_equal(a.revoke, b);
    assert_int_equal(a.grant, -1); /* not before the batch task stops */
    dmn_arb_release(arb, b, 2 * MS);
    assert_int_equal(decide(2 * MS).grant, l);
    /* A latency holder is not preempted by batch work, even past its quantum
     * when the waiting task has a lower level. */
    a = decide(40 * MS);
    assert_int_equal(a.revoke, -1);
}

static void test_strict_priority(void **state)
{
    (void)state;
    int lo = add(DMN_CLASS_BATCH, 0), hi = add(DMN_CLASS_BATCH, 3);
    pend(lo, 0);
    assert_int_equal(decide(0).grant, lo);
    pend(hi, 1 * MS);
    assert_int_equal(decide(1 * MS).revoke, -1); /* waits for the quantum */
    assert_int_equal(decide(10 * MS).revoke, lo);
    dmn_arb_release(arb, lo, 11 * MS);
    assert_int_equal(decide(11 * MS).grant, hi);
    for (uint64_t t = 20; t < 200; t += 10)
        assert_int_equal(decide(t * MS).revoke, -1); /* lo never takes it back */
    dmn_arb_idle(arb, hi, 200 * MS);
    assert_int_equal(decide(200 * MS).grant, lo);
}

/* A holder whose waiting rival has a lower level keeps the turn past its
 * quantum: nothing changes until an event does, so the quantum is no
 * deadline (the daemon polls with a timeout up to it; a deadline in the past
 * made it poll with timeout 0, 100% CPU until the holder went idle). */
static void test_no_deadline_for_lower_waiter(void **state)
{
    (void)state;
    int lo = add(DMN_CLASS_BATCH, 0), hi = add(DMN_CLASS_BATCH, 3);
    pend(hi, 0);
    assert_int_equal(decide(0).grant, hi);
    pend(lo, 1 * MS);
    assert_int_equal(decide(1 * MS).revoke, -1);
    assert_int_equal(decide(30 * MS).revoke, -1); /* past the quantum: still no action */
    assert_true(dmn_arb_next_deadline(arb) > 30 * MS);
    /* The same for a latency holder and a batch task waiting. */
    int l = add(DMN_CLASS_LATENCY, -20);
    dmn_arb_idle(arb, hi, 40 * MS);
    pend(l, 40 * MS);
    assert_int_equal(decide(40 * MS).grant, l);
    assert_int_equal(decide(80 * MS).revoke, -1);
    assert_true(dmn_arb_next_deadline(arb) > 80 * MS);
    /* A waiting task of the same level: the quantum is the deadline again. */
    int hi2 = add(DMN_CLASS_BATCH, 3);
    pend(hi, 90 * MS);
    dmn_arb_idle(arb, l, 90 * MS);
    assert_int_equal(decide(90 * MS).grant, hi);
    assert_int_equal(dmn_arb_next_deadline(arb), UINT64_MAX); /* only lo waits */
    pend(hi2, 91 * MS);
    assert_int_equal(dmn_arb_next_deadline(arb), 100 * MS);
    assert_int_equal(decide(100 * MS).revoke, hi);
}

static void test_grace_forces(void **state)
{
    (void)state;
    int a0 = add(DMN_CLASS_BATCH, 0), b0 = add(DMN_CLASS_BATCH, 0);
    pend(a0, 0);
    pend(b0, 0);
    int first = decide(0).grant, second = first == a0 ? b0 : a0;
    assert_int_equal(decide(10 * MS).revoke, first);
    assert_int_equal(dmn_arb_next_deadline(arb), 110 * MS);
    dmn_arb_action_t a = decide(50 * MS);
    assert_int_equal(a.forced, -1);
    assert_int_equal(a.grant, -1);
    a = decide(110 * MS);
    assert_int_equal(a.forced, first);
    assert_int_equal(a.grant, second);
    assert_int_equal(arb->forced, 1);
    dmn_arb_release(arb, first, 111 * MS); /* a late release changes nothing */
    assert_int_equal(arb->holder, second);
}

static void test_remove_holder(void **state)
{
    (void)state;
    int a0 = add(DMN_CLASS_BATCH, 0), b0 = add(DMN_CLASS_BATCH, 0);
    pend(a0, 0);
    pend(b0, 0);
    int first = decide(0).grant, second = first == a0 ? b0 : a0;
    dmn_arb_remove(arb, first, 3 * MS);
    assert_int_equal(arb->reclaimed, 1);
    assert_int_equal(decide(3 * MS).grant, second);
    dmn_status_task_t snap[4];
    assert_int_equal(dmn_arb_snapshot(arb, 4 * MS, snap, 4), 1);
    /* The slot is free for a newcomer, with a new id. */
    int c = add(DMN_CLASS_BATCH, 0);
    assert_int_equal(c, first);
    assert_int_equal(arb->tasks[c].id, 3);
    /* every task that leaves counts, holding the turn or not */
    dmn_arb_remove(arb, c, 5 * MS);
    assert_int_equal(arb->reclaimed, 2);
}

/* A placement that records its calls. */
static int calls;
static uint32_t seen_from, seen_to;
static size_t seen_n;
static gmux_status_t record(void *ctx, const dmn_task_view_t *tasks, size_t n,
                            const dmn_task_view_t *from, const dmn_task_view_t *to,
                            dmn_plan_t *plan)
{
    (void)ctx, (void)tasks, (void)plan;
    calls++;
    seen_from = from ? from->id : 0;
    seen_to = to->id;
    seen_n = n;
    return GMUX_OK;
}

static void test_placement_seam(void **state)
{
    (void)state;
    dmn_placement_t rec = {"record", NULL, record, NULL};
    arb->placement = &rec;
    int a0 = add(DMN_CLASS_BATCH, 0), b0 = add(DMN_CLASS_BATCH, 0);
    pend(a0, 0);
    pend(b0, 0);
    int first = decide(0).grant;
    assert_int_equal(calls, 1);
    assert_int_equal(seen_from, 0);
    assert_int_equal(seen_to, arb->tasks[first].id);
    assert_int_equal(seen_n, 2);
    decide(10 * MS);
    dmn_arb_release(arb, first, 10 * MS);
    int second = decide(10 * MS).grant;
    assert_int_equal(calls, 2);
    assert_int_equal(seen_from, arb->tasks[first].id);
    assert_int_equal(seen_to, arb->tasks[second].id);

    /* The swap policy: evict the outgoing task's ranges, fill the incoming's. */
    arb->placement = dmn_placement_find("swap");
    uint8_t raw[128];
    dmn_range_t ra[2] = {{0x1000, 0x100}, {0x9000, 0x200}}, rb = {0x5000, 0x300};
    size_t n = dmn_proto_encode_ranges(raw, sizeof(raw), 1, DMN_MSG_PENDING, 2, 0, ra, 2);
    dmn_msg_t m;
    assert_int_equal(dmn_proto_decode(raw, n, &m), GMUX_OK);
    assert_int_equal(dmn_arb_pending(arb, first, 2, &m.u.ranges, 10 * MS), GMUX_OK);
    n = dmn_proto_encode_ranges(raw, sizeof(raw), 1, DMN_MSG_PENDING, 1, 0, &rb, 1);
    assert_int_equal(dmn_proto_decode(raw, n, &m), GMUX_OK);
    assert_int_equal(dmn_arb_pending(arb, second, 1, &m.u.ranges, 10 * MS), GMUX_OK);
    dmn_arb_release(arb, second, 20 * MS);
    dmn_arb_action_t a = decide(20 * MS);
    assert_int_equal(a.grant, first);
    assert_int_equal(a.plan->n, 3);
    assert_int_equal(a.plan->entries[0].kind, DMN_PLAN_EVICT);
    assert_int_equal(a.plan->entries[0].task_id, arb->tasks[second].id);
    assert_int_equal(a.plan->entries[0].range.base, 0x5000);
    assert_int_equal(a.plan->entries[1].kind, DMN_PLAN_FILL);
    assert_int_equal(a.plan->entries[2].range.base, 0x9000);
    assert_non_null(dmn_placement_find("opt"));
    assert_string_equal(dmn_placement_find("opt")->name, "opt");
    assert_null(dmn_placement_find("belady"));
}

/* Declared ranges get a generation (dmn_task_view_t.ranges_gen): a new one,
 * unique in the process, whenever they change; the same ranges again keep
 * it. Placements cache what they derive from ranges on it. */
static void test_ranges_generation(void **state)
{
    (void)state;
    int a = add(DMN_CLASS_BATCH, 0), b = add(DMN_CLASS_BATCH, 0);
    assert_int_equal(arb->tasks[a].ranges_gen, 0); /* nothing declared: unknown */
    uint8_t raw[128];
    dmn_range_t r[2] = {{0x1000, 0x100}, {0x9000, 0x200}};
    dmn_msg_t m;
    uint64_t g[6];
    int k = 0;
    for (int step = 0; step < 6; step++) {
        uint32_t n = step == 3 ? 1 : 2;
        if (step == 2)
            r[1].len = 0x300; /* same count, one length differs */
        size_t len = dmn_proto_encode_ranges(raw, sizeof(raw), 1, DMN_MSG_PENDING, 1, 0, r, n);
        assert_int_equal(dmn_proto_decode(raw, len, &m), GMUX_OK);
        assert_int_equal(dmn_arb_pending(arb, step == 5 ? b : a, 1, &m.u.ranges, 0), GMUX_OK);
        g[k++] = arb->tasks[step == 5 ? b : a].ranges_gen;
    }
    assert_true(g[0] != 0);
    assert_int_equal(g[1], g[0]);                           /* the same again */
    assert_true(g[2] != g[1]);                              /* one length changed */
    assert_true(g[3] != g[2]);                              /* one range fewer */
    assert_true(g[4] != g[3]);                              /* back to two */
    assert_true(g[5] != 0 && g[5] != g[4] && g[5] != g[0]); /* another task: its own */
    dmn_arb_action_t act = decide(0);
    assert_true(act.grant >= 0);
    for (size_t i = 0; i < 2; i++) /* the views carry it */
        assert_int_equal(arb->views[i].ranges_gen,
                         arb->tasks[arb->views[i].id == arb->tasks[a].id ? a : b].ranges_gen);
}

static void test_capacity(void **state)
{
    (void)state;
    dmn_msg_register_t r = {1, DMN_CLASS_BATCH, 0, 0, 0, "t"};
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++)
        assert_true(dmn_arb_add(arb, &r, 0) >= 0);
    assert_int_equal(dmn_arb_add(arb, &r, 0), GMUX_ERR_CAPACITY);
}

/* A grant taken back before its GRANT went (dmn_arb_withdraw): a batch task
 * granted while a latency task starts waiting is preempted, and once its
 * grant is withdrawn it waits again where it waited: the latency task goes
 * first, then it, before the batch task that waited after it. */
static void test_withdraw(void **state)
{
    (void)state;
    int b1 = add(DMN_CLASS_BATCH, 0), b2 = add(DMN_CLASS_BATCH, 0);
    pend(b1, 0);
    pend(b2, 0);
    dmn_arb_action_t a = decide(0);
    assert_int_equal(a.grant, b1);
    assert_false(dmn_arb_preempted(arb, b1));
    int l = add(DMN_CLASS_LATENCY, 0);
    pend(l, MS);
    assert_true(dmn_arb_preempted(arb, b1));
    dmn_arb_withdraw(arb, b1);
    assert_int_equal(arb->tasks[b1].state, DMN_STATE_PENDING);
    assert_int_equal(dmn_arb_holders(arb), 0);
    assert_false(dmn_arb_preempted(arb, b1)); /* holds nothing */
    a = decide(MS);
    assert_int_equal(a.revoke, -1);
    assert_int_equal(a.grant, l);
    assert_false(dmn_arb_preempted(arb, l)); /* latency: never */
    dmn_arb_idle(arb, l, 2 * MS);
    a = decide(2 * MS);
    assert_int_equal(a.grant, b1);
}

/* Pending with one range of len bytes at base. */
static void pend_ws(int slot, uint64_t base, uint64_t len, uint64_t now)
{
    uint8_t raw[128];
    dmn_range_t r = {base, len};
    dmn_msg_t m;
    size_t n = dmn_proto_encode_ranges(raw, sizeof(raw), 1, DMN_MSG_PENDING, 1, 0, &r, 1);
    assert_int_equal(dmn_proto_decode(raw, n, &m), GMUX_OK);
    assert_int_equal(dmn_arb_pending(arb, slot, 1, &m.u.ranges, now), GMUX_OK);
}

/* Bytes of the plan of kind for the task in slot. */
static uint64_t planned(const dmn_plan_t *plan, int slot, dmn_plan_kind_t kind)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < plan->n; i++)
        if (plan->entries[i].task_id == arb->tasks[slot].id && plan->entries[i].kind == kind)
            bytes += plan->entries[i].range.len;
    return bytes;
}

/* STATUS counts no switch, and no bytes planned at switches. */
static void counts_nothing(void)
{
    dmn_msg_status_t head;
    dmn_arb_status_head(arb, MS, &head);
    assert_int_equal(head.switches, 0);
    assert_int_equal(head.fill_bytes, 0);
    assert_int_equal(head.ahead_bytes, 0);
    assert_int_equal(head.ahead_plans, 0);
}

#define WS (8ull << 20)

/* The withdrawn grant's own orders (B1's FILL) and its fill ahead (B2's)
 * never went: the placement forgets them (nothing of B1 or B2 resident, so
 * L's switch fills B1, next, ahead), and STATUS counts neither the switch
 * nor those bytes. Both used to be counted as done: L's switch planned no
 * fill ahead for B1, believed resident. */
static void withdraw_untold(const dmn_placement_t *pl, uint64_t (*resident)(const void *, uint32_t),
                            const void *obj)
{
    arb->placement = pl;
    int b1 = add(DMN_CLASS_BATCH, 0), b2 = add(DMN_CLASS_BATCH, 0);
    pend_ws(b1, 0x10000000, WS, 0);
    pend_ws(b2, 0x20000000, WS, 0);
    dmn_arb_action_t a = decide(0);
    assert_int_equal(a.grant, b1);
    assert_int_equal(planned(a.plan, b1, DMN_PLAN_FILL), WS);
    assert_int_equal(planned(a.plan, b2, DMN_PLAN_AHEAD), WS);
    int l = add(DMN_CLASS_LATENCY, 0);
    pend_ws(l, 0x30000000, WS, MS);
    assert_int_equal(dmn_arb_withdraw(arb, b1), GMUX_OK);
    assert_int_equal(resident(obj, arb->tasks[b1].id), 0);
    assert_int_equal(resident(obj, arb->tasks[b2].id), 0);
    counts_nothing();
    a = decide(MS);
    assert_int_equal(a.grant, l);
    assert_int_equal(planned(a.plan, l, DMN_PLAN_FILL), WS);
    assert_int_equal(planned(a.plan, b1, DMN_PLAN_AHEAD), WS);
    assert_int_equal(resident(obj, arb->tasks[l].id), WS);
    assert_int_equal(resident(obj, arb->tasks[b1].id), WS);
    dmn_msg_status_t head;
    dmn_arb_status_head(arb, MS, &head);
    assert_int_equal(head.switches, 1);
    assert_int_equal(head.fill_bytes, WS);
    assert_int_equal(head.ahead_bytes, WS);
    assert_int_equal(head.ahead_plans, 1);
    assert_int_equal(head.evict_bytes, 0);
}

static uint64_t opt_resident(const void *o, uint32_t id)
{
    return dmn_place_opt_resident(o, id);
}

static uint64_t chunk_resident(const void *pc, uint32_t id)
{
    return dmn_place_chunk_resident(pc, id);
}

/* withdraw_untold with each policy that models what is resident. */
static void test_withdraw_untold(void **state)
{
    dmn_place_opt_t *o;
    assert_int_equal(dmn_place_opt_create(64ull << 20, DMN_OPT_CHUNK, &o), GMUX_OK);
    withdraw_untold(dmn_place_opt_placement(o), opt_resident, o);
    dmn_place_opt_destroy(o);
    teardown(state);
    setup(state);
    dmn_place_chunk_t *pc;
    assert_int_equal(dmn_place_chunk_create(64ull << 20, DMN_OPT_CHUNK, &pc), GMUX_OK);
    withdraw_untold(dmn_place_chunk_placement(pc), chunk_resident, pc);
    dmn_place_chunk_destroy(pc);
}

/* `opt` under 64 MiB as the arbiter's placement, and two batch tasks waiting
 * with a working set of WS each: *first at priority prio, *second at 0.
 * The caller destroys the placement. */
static dmn_place_opt_t *opt_two_waiting(int prio, int *first, int *second)
{
    dmn_place_opt_t *opt;
    assert_int_equal(dmn_place_opt_create(64ull << 20, DMN_OPT_CHUNK, &opt), GMUX_OK);
    arb->placement = dmn_place_opt_placement(opt);
    *first = add(DMN_CLASS_BATCH, prio);
    *second = add(DMN_CLASS_BATCH, 0);
    pend_ws(*first, 0x10000000, WS, 0);
    pend_ws(*second, 0x20000000, WS, 0);
    return opt;
}

/* A void grant (its task went idle before the server sent its GRANT): the
 * server hands its orders back (dmn_arb_unsent), once; the placement forgets
 * B1's fill and B2's fill ahead, STATUS the switch and its bytes. A second
 * call, or one for another grant, changes nothing. */
static void test_void_grant_unsent(void **state)
{
    (void)state;
    int b1, b2;
    dmn_place_opt_t *opt = opt_two_waiting(0, &b1, &b2);
    dmn_arb_action_t a = decide(0);
    assert_int_equal(a.grant, b1);
    uint64_t g = a.grant_seq;
    dmn_arb_idle(arb, b1, MS);
    assert_int_equal(dmn_arb_unsent(arb, arb->tasks[b1].id, g + 1), GMUX_OK); /* not made */
    assert_int_equal(dmn_place_opt_total(opt), 2 * WS);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(dmn_arb_unsent(arb, arb->tasks[b1].id, g), GMUX_OK);
        assert_int_equal(dmn_place_opt_total(opt), 0);
        counts_nothing();
    }
    a = decide(MS);
    assert_int_equal(a.grant, b2);
    assert_int_equal(planned(a.plan, b2, DMN_PLAN_FILL), WS);
    dmn_place_opt_destroy(opt);
}

/* A task granted again after it was the last holder, another task waiting
 * below it: its grant plans a fill ahead for the waiting task (whose working
 * set grew), and counts as a switch, so that STATUS's fills ahead never
 * outnumber its switches ("ahead ... in N of M switches"). Until 2026-12-03
 * such a grant was no switch: 2 fills ahead in 1 switch. */
static void test_regrant_ahead_counted(void **state)
{
    (void)state;
    int h, l;
    dmn_place_opt_t *opt = opt_two_waiting(5, &h, &l);
    dmn_arb_action_t a = decide(0);
    assert_int_equal(a.grant, h);
    assert_int_equal(planned(a.plan, l, DMN_PLAN_AHEAD), WS);
    dmn_arb_idle(arb, h, MS); /* h gives the turn back and asks again before a decision */
    pend_ws(h, 0x10000000, WS, MS);
    pend_ws(l, 0x20000000, 2 * WS, MS);
    a = decide(MS);
    assert_int_equal(a.grant, h);
    assert_int_equal(planned(a.plan, l, DMN_PLAN_AHEAD), WS); /* its new half */
    dmn_msg_status_t head;
    dmn_arb_status_head(arb, MS, &head);
    assert_int_equal(head.ahead_plans, 2);
    assert_true(head.ahead_plans <= head.switches);
    assert_int_equal(head.switches, 2);
    /* handed back unsent (void), it is neither a switch nor a fill ahead */
    assert_int_equal(dmn_arb_unsent(arb, arb->tasks[h].id, a.grant_seq), GMUX_OK);
    dmn_arb_status_head(arb, MS, &head);
    assert_int_equal(head.switches, 1);
    assert_int_equal(head.ahead_plans, 1);
    dmn_place_opt_destroy(opt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_robin_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alone_keeps_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_switches_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latency_preempts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strict_priority, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_deadline_for_lower_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grace_forces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_placement_seam, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranges_generation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_withdraw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_withdraw_untold, setup, teardown),
        cmocka_unit_test_setup_teardown(test_void_grant_unsent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_regrant_ahead_counted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
