/* Unit tests of the share mode: the decision (src/daemon/share.c) and what
 * the arbiter does with it (src/daemon/arbiter.c), fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "daemon/arbiter.h"
#include "daemon/place_chunk.h"
#include "daemon/place_opt.h"
#include "daemon/share.h"

#define MS 1000000ull

static dmn_arbiter_t *arb;

static int setup(void **state)
{
    (void)state;
    arb = malloc(sizeof(*arb));
    dmn_arb_init(arb, 10 * MS, 100 * MS, NULL, 0);
    dmn_share_params_t p = {1, 1000, 10}; /* leave shared above 900, enter at or below 850 */
    dmn_arb_set_share(arb, &p);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dmn_arb_fini(arb);
    free(arb);
    return 0;
}

static int add(dmn_class_t cls, uint64_t budget)
{
    dmn_msg_register_t r = {1, cls, 0, 0, budget, "t"};
    int s = dmn_arb_add(arb, &r, 0);
    assert_true(s >= 0);
    return s;
}

static void pend(int slot, uint64_t now)
{
    assert_int_equal(dmn_arb_pending(arb, slot, 1, NULL, now), GMUX_OK);
}

static void report(int slot, uint64_t total, uint64_t device)
{
    dmn_msg_stats_t st = {.total = total, .device = device};
    dmn_arb_stats(arb, slot, &st);
}

static dmn_arb_action_t decide(uint64_t now)
{
    dmn_arb_action_t a;
    assert_int_equal(dmn_arb_decide(arb, now, &a), GMUX_OK);
    return a;
}

/* Decides until nothing is left to do; counts grants and revocations. */
static void settle(uint64_t now, int *grants, int *revokes)
{
    *grants = *revokes = 0;
    for (int k = 0; k < 64; k++) {
        dmn_arb_action_t a = decide(now);
        *grants += a.grant >= 0;
        *revokes += a.revoke >= 0;
        uint32_t holding = 0; /* the arbiter's count agrees with the states */
        for (int i = 0; i < DMN_ARB_MAX_TASKS; i++)
            holding += arb->tasks[i].used && (arb->tasks[i].state == DMN_STATE_RUNNING ||
                                              arb->tasks[i].state == DMN_STATE_REVOKED);
        assert_int_equal(dmn_arb_holders(arb), holding);
        if (a.grant < 0 && a.revoke < 0 && a.forced < 0)
            return;
    }
    fail_msg("the arbiter never settles");
}

static int state_of(int slot)
{
    return (int)arb->tasks[slot].state;
}

static void test_thresholds(void **state)
{
    (void)state;
    dmn_share_t s;
    dmn_share_params_t p = {1, 0, 10};
    dmn_share_init(&s, &p);
    assert_int_equal(s.mode, DMN_MODE_SLICED);
    assert_int_equal(dmn_share_update(&s, 0, 0), 0); /* capacity unknown: sliced */
    assert_int_equal(dmn_share_update(&s, 100, 2000), 1);
    assert_int_equal(s.mode, DMN_MODE_SHARED);
    assert_int_equal(s.capacity, 2000); /* from the report */
    assert_int_equal(dmn_share_leave_bytes(&s), 1800);
    assert_int_equal(dmn_share_enter_bytes(&s), 1700);
    assert_int_equal(dmn_share_update(&s, 1800, 2000), 0); /* at the line: still fits */
    assert_int_equal(dmn_share_update(&s, 1801, 2000), 1);
    assert_int_equal(s.mode, DMN_MODE_SLICED);
    assert_int_equal(dmn_share_update(&s, 1701, 2000), 0); /* inside the band */
    assert_int_equal(dmn_share_update(&s, 1700, 2000), 1);
    assert_int_equal(s.changes, 3);
    /* A set capacity wins over the reports; no overflow on huge devices. */
    p = (dmn_share_params_t){1, 1000, 10};
    dmn_share_init(&s, &p);
    assert_int_equal(dmn_share_update(&s, 900, 1u << 30), 0);
    assert_int_equal(s.capacity, 1000);
    p = (dmn_share_params_t){1, UINT64_MAX, 0};
    dmn_share_init(&s, &p);
    assert_int_equal(dmn_share_update(&s, 1, 0), 1);
    assert_true(dmn_share_leave_bytes(&s) > UINT64_MAX / 100 * 99);
    /* Disabled: never shared. */
    p = (dmn_share_params_t){0, 1000, 10};
    dmn_share_init(&s, &p);
    assert_int_equal(dmn_share_update(&s, 1, 0), 0);
    assert_int_equal(s.mode, DMN_MODE_SLICED);
    /* The footprint: the largest of budget, allocation, working set. */
    assert_int_equal(dmn_share_footprint(5, 7, 3), 7);
    assert_int_equal(dmn_share_footprint(9, 7, 3), 9);
    assert_int_equal(dmn_share_footprint(0, 0, 4), 4);
}

/* Footprints that fit: every waiting task is granted, nobody is revoked,
 * even long past the quantum. */
static void test_fit_grants_all(void **state)
{
    (void)state;
    int t[3] = {add(DMN_CLASS_BATCH, 200), add(DMN_CLASS_BATCH, 200), add(DMN_CLASS_BATCH, 200)};
    for (int i = 0; i < 3; i++)
        pend(t[i], 0);
    int g, r;
    settle(0, &g, &r);
    assert_int_equal(g, 3);
    assert_int_equal(r, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(state_of(t[i]), DMN_STATE_RUNNING);
    assert_int_equal(dmn_arb_holders(arb), 3);
    assert_int_equal(arb->share.mode, DMN_MODE_SHARED);
    assert_int_equal(dmn_arb_next_deadline(arb), UINT64_MAX);
    settle(500 * MS, &g, &r);
    assert_int_equal(g + r, 0);
    /* One goes idle and comes back: granted again at once. */
    dmn_arb_idle(arb, t[1], 501 * MS);
    pend(t[1], 502 * MS);
    settle(502 * MS, &g, &r);
    assert_int_equal(g, 1);
    assert_int_equal(r, 0);
    dmn_msg_status_t h;
    dmn_arb_status_head(arb, 600 * MS, &h);
    assert_int_equal(h.mode, DMN_MODE_SHARED);
    assert_int_equal(h.capacity, 1000);
    assert_int_equal(h.footprint, 600);
    assert_int_equal(h.mode_changes, 1);
    dmn_status_task_t snap[4];
    assert_int_equal(dmn_arb_snapshot(arb, 600 * MS, snap, 4), 3);
    assert_int_equal(snap[0].footprint, 200);
    assert_int_equal(snap[0].run_ns, 600 * MS); /* holding the whole time */
}

/* Footprints that overflow: time slices, exactly as without the mode. */
static void test_overflow_slices(void **state)
{
    (void)state;
    int t[3] = {add(DMN_CLASS_BATCH, 400), add(DMN_CLASS_BATCH, 400), add(DMN_CLASS_BATCH, 400)};
    for (int i = 0; i < 3; i++)
        pend(t[i], 0);
    int g, r;
    settle(0, &g, &r);
    assert_int_equal(g, 1);
    assert_int_equal(dmn_arb_holders(arb), 1);
    assert_int_equal(arb->share.mode, DMN_MODE_SLICED);
    assert_int_equal(dmn_arb_next_deadline(arb), 10 * MS);
    int h = arb->holder;
    assert_int_equal(decide(10 * MS).revoke, h);
    assert_int_equal(decide(10 * MS).grant, -1); /* not before the release */
    dmn_arb_release(arb, h, 11 * MS);
    dmn_arb_action_t a = decide(11 * MS);
    assert_true(a.grant >= 0 && a.grant != h);
    assert_int_equal(dmn_arb_holders(arb), 1);
}

/* A registration that overflows: back to slices at the next kernel boundary
 * (one holder stays, the others are revoked; nobody new before they
 * release); when it leaves, shared again. */
static void test_registration_overflows(void **state)
{
    (void)state;
    int a0 = add(DMN_CLASS_BATCH, 300), b0 = add(DMN_CLASS_BATCH, 300);
    pend(a0, 0);
    pend(b0, 0);
    int g, r;
    settle(0, &g, &r);
    assert_int_equal(g, 2);
    int c0 = add(DMN_CLASS_BATCH, 300); /* 900 fits; 900 + ... */
    report(c0, 350, 0);                 /* ... its allocation makes it 950 */
    pend(c0, 1 * MS);
    dmn_arb_action_t a = decide(1 * MS);
    assert_int_equal(arb->share.mode, DMN_MODE_SLICED);
    assert_int_equal(a.grant, -1);
    int revoked = a.revoke;
    assert_true(revoked == a0 || revoked == b0);
    int kept = revoked == a0 ? b0 : a0;
    assert_int_equal(state_of(kept), DMN_STATE_RUNNING);
    settle(2 * MS, &g, &r);
    assert_int_equal(g + r, 0); /* c0 waits for the revoked one */
    assert_int_equal(state_of(c0), DMN_STATE_PENDING);
    dmn_arb_release(arb, revoked, 3 * MS);
    settle(4 * MS, &g, &r);
    assert_int_equal(g + r, 0); /* the kept holder's quantum is not over */
    a = decide(10 * MS);
    assert_int_equal(a.revoke, kept); /* slices as usual */
    dmn_arb_release(arb, kept, 11 * MS);
    assert_true(decide(11 * MS).grant >= 0);
    assert_int_equal(dmn_arb_holders(arb), 1);
    /* The big one leaves: the rest fits again (600 <= 850), all run. */
    dmn_arb_remove(arb, c0, 12 * MS);
    settle(12 * MS, &g, &r);
    assert_int_equal(arb->share.mode, DMN_MODE_SHARED);
    assert_int_equal(dmn_arb_holders(arb), 2);
    assert_int_equal(arb->share.changes, 3);
}

/* A status read between a registration and the next decision shows the
 * footprints with the new task counted (it showed those before the
 * registration: test_daemon_share saw two tasks with the footprint of none),
 * and the mode in force: the read decides nothing. Until 2026-12-03 it
 * switched the mode itself: here to slices and, once the task left, back,
 * two mode changes no decision made (with the footprints back between the
 * lines instead, slices no decision chose: test_server_hold
 * test_query_keeps_mode). */
static void test_status_counts_new_task(void **state)
{
    (void)state;
    int a0 = add(DMN_CLASS_BATCH, 600);
    report(a0, 0, 0);
    decide(0);
    dmn_msg_status_t head;
    dmn_arb_status_head(arb, 1 * MS, &head);
    assert_int_equal(head.footprint, 600);
    assert_int_equal(head.mode, DMN_MODE_SHARED);
    assert_int_equal(head.mode_changes, 1);
    int b0 = add(DMN_CLASS_BATCH, 600); /* no decision yet */
    dmn_arb_status_head(arb, 2 * MS, &head);
    assert_int_equal(head.footprint, 1200);
    assert_int_equal(head.capacity, 1000);
    assert_int_equal(head.mode, DMN_MODE_SHARED); /* in force until decided */
    assert_int_equal(head.mode_changes, 1);
    dmn_arb_remove(arb, b0, 3 * MS); /* gone before any decision saw it */
    decide(3 * MS);
    dmn_arb_status_head(arb, 3 * MS, &head);
    assert_int_equal(head.mode, DMN_MODE_SHARED);
    assert_int_equal(head.mode_changes, 1);
    (void)add(DMN_CLASS_BATCH, 600);
    decide(4 * MS);
    dmn_arb_status_head(arb, 4 * MS, &head);
    assert_int_equal(head.mode, DMN_MODE_SLICED);
    assert_int_equal(head.mode_changes, 2);
}

/* The mode does not flap around the line: a report between the two lines
 * keeps whatever mode is current. */
static void test_hysteresis(void **state)
{
    (void)state;
    int a0 = add(DMN_CLASS_BATCH, 0), b0 = add(DMN_CLASS_BATCH, 0);
    report(b0, 0, 0);
    pend(a0, 0);
    pend(b0, 0);
    static const struct {
        uint64_t total;
        uint32_t mode;
    } steps[] = {{880, DMN_MODE_SLICED}, /* the start, checked before the loop */
                 {840, DMN_MODE_SHARED}, {880, DMN_MODE_SHARED}, {900, DMN_MODE_SHARED},
                 {901, DMN_MODE_SLICED}, {880, DMN_MODE_SLICED}, {851, DMN_MODE_SLICED},
                 {850, DMN_MODE_SHARED}, {899, DMN_MODE_SHARED}};
    uint64_t now = 0;
    report(a0, 880, 0);
    int g, r;
    settle(now, &g, &r);
    assert_int_equal(arb->share.mode, DMN_MODE_SLICED); /* 880 is above the entry line */
    assert_int_equal(arb->share.changes, 0);
    for (size_t i = 1; i < sizeof(steps) / sizeof(steps[0]); i++) {
        now += MS;
        report(a0, steps[i].total, 0);
        settle(now, &g, &r);
        /* revoked holders answer at their next boundary */
        for (int s = 0; s < 2; s++)
            if (state_of(s == 0 ? a0 : b0) == DMN_STATE_REVOKED)
                dmn_arb_release(arb, s == 0 ? a0 : b0, now);
        settle(now, &g, &r);
        assert_int_equal(arb->share.mode, steps[i].mode);
        assert_int_equal(dmn_arb_holders(arb), steps[i].mode == DMN_MODE_SHARED ? 2 : 1);
    }
    assert_int_equal(arb->share.changes, 3); /* entered, left, entered */
}

/* Shared mode keeps the latency class first: a latency task revokes every
 * batch holder and runs once they released; latency tasks share; batch
 * tasks come back when no latency task is left. */
static void test_latency_class(void **state)
{
    (void)state;
    int b[2] = {add(DMN_CLASS_BATCH, 100), add(DMN_CLASS_BATCH, 100)};
    int l[2] = {add(DMN_CLASS_LATENCY, 100), add(DMN_CLASS_LATENCY, 100)};
    pend(b[0], 0);
    pend(b[1], 0);
    int g, r;
    settle(0, &g, &r);
    assert_int_equal(g, 2);
    pend(l[0], 1 * MS);
    settle(1 * MS, &g, &r);
    assert_int_equal(r, 2);
    assert_int_equal(g, 0); /* not before both batch tasks stopped */
    dmn_arb_release(arb, b[0], 2 * MS);
    settle(2 * MS, &g, &r);
    assert_int_equal(g, 0);
    dmn_arb_release(arb, b[1], 3 * MS);
    dmn_arb_action_t a = decide(3 * MS);
    assert_int_equal(a.grant, l[0]);
    pend(l[1], 4 * MS);
    settle(4 * MS, &g, &r);
    assert_int_equal(g, 1); /* latency tasks share */
    assert_int_equal(r, 0);
    assert_int_equal(state_of(l[1]), DMN_STATE_RUNNING);
    assert_int_equal(state_of(b[0]), DMN_STATE_PENDING);
    settle(500 * MS, &g, &r);
    assert_int_equal(g + r, 0); /* batch waits, however long */
    dmn_arb_idle(arb, l[0], 501 * MS);
    settle(501 * MS, &g, &r);
    assert_int_equal(g, 0); /* l[1] still holds */
    dmn_arb_idle(arb, l[1], 502 * MS);
    settle(502 * MS, &g, &r);
    assert_int_equal(g, 2);
    assert_int_equal(state_of(b[0]), DMN_STATE_RUNNING);
    assert_int_equal(state_of(b[1]), DMN_STATE_RUNNING);
}

/* Without GMUX_DAEMON_CAPACITY the smallest device the tasks report is the
 * capacity; without any report the mode stays sliced. A stuck holder still
 * loses its turn after the grace period when the mode goes back to slices. */
static void test_capacity_from_reports(void **state)
{
    (void)state;
    dmn_share_params_t p = {1, 0, 10};
    dmn_arb_set_share(arb, &p);
    int a0 = add(DMN_CLASS_BATCH, 100), b0 = add(DMN_CLASS_BATCH, 100);
    pend(a0, 0);
    pend(b0, 0);
    int g, r;
    settle(0, &g, &r);
    assert_int_equal(g, 1); /* nothing reported: sliced */
    report(b0, 0, 1000);
    settle(1 * MS, &g, &r);
    assert_int_equal(g, 1);
    assert_int_equal(dmn_arb_holders(arb), 2);
    report(a0, 0, 220); /* a smaller device: 200 > 198 */
    settle(2 * MS, &g, &r);
    assert_int_equal(r, 1);
    assert_int_equal(arb->share.capacity, 220);
    assert_int_equal(arb->share.mode, DMN_MODE_SLICED);
    assert_int_equal(dmn_arb_next_deadline(arb), 102 * MS); /* grace of the revoked one */
    dmn_arb_action_t a = decide(102 * MS);
    assert_true(a.forced >= 0);
    assert_int_equal(dmn_arb_holders(arb), 1);
}

static void test_disabled(void **state)
{
    (void)state;
    dmn_share_params_t p = {0, 1000, 10};
    dmn_arb_set_share(arb, &p);
    int a0 = add(DMN_CLASS_BATCH, 1), b0 = add(DMN_CLASS_BATCH, 1);
    pend(a0, 0);
    pend(b0, 0);
    int g, r;
    settle(0, &g, &r);
    assert_int_equal(g, 1);
    assert_int_equal(arb->share.mode, DMN_MODE_SLICED);
    assert_int_equal(decide(10 * MS).revoke, arb->holder);
}

/* A placement that records, per switch, how many views carry the fill-ahead
 * mark and the turn of the marked one. */
static int marks[16], marked_turn[16], n_switches;

static gmux_status_t rec_on_switch(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                                   const dmn_task_view_t *from, const dmn_task_view_t *to,
                                   dmn_plan_t *plan)
{
    (void)ctx, (void)from, (void)to, (void)plan;
    assert_true(n_switches < 16);
    marks[n_switches] = 0;
    marked_turn[n_switches] = -1;
    for (size_t i = 0; i < n_tasks; i++)
        if (tasks[i].ahead) {
            marks[n_switches]++;
            marked_turn[n_switches] = (int)tasks[i].turn;
        }
    n_switches++;
    return GMUX_OK;
}

/* The arbiter marks the task expected next for a fill ahead in the sliced
 * mode only, and not once it is switched off (GMUX_DAEMON_AHEAD=0). */
/* A working set whose ranges add up past 2^64 bytes (overlapping ranges are
 * valid on the wire) counts as the most memory there is, not as what is left
 * after wrapping: the sum wrapped to 0, which put two tasks that cannot fit
 * in the shared mode and granted both. */
static void test_working_set_overflow(void **state)
{
    (void)state;
    int a = add(DMN_CLASS_BATCH, 0), b = add(DMN_CLASS_BATCH, 0);
    dmn_range_t r[2] = {{0, 1ull << 63}, {0, 1ull << 63}};
    uint8_t buf[DMN_PROTO_HDR_SIZE + 16 + 2 * DMN_RANGE_SIZE];
    size_t n = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PENDING, 1, 0, r, 2);
    dmn_msg_t m;
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(dmn_arb_pending(arb, a, 1, &m.u.ranges, 0), GMUX_OK);
    pend(b, 0);
    int grants, revokes;
    settle(0, &grants, &revokes);
    assert_int_equal(arb->share.mode, DMN_MODE_SLICED);
    assert_int_equal(grants, 1);
    dmn_status_task_t snap[2];
    assert_int_equal(dmn_arb_snapshot(arb, 0, snap, 2), 2);
    assert_true(snap[0].footprint == UINT64_MAX || snap[1].footprint == UINT64_MAX);
}

static void test_ahead_mark(void **state)
{
    (void)state;
    static const dmn_placement_t rec = {"rec", NULL, rec_on_switch, NULL};
    arb->placement = &rec;
    n_switches = 0;
    int a = add(DMN_CLASS_BATCH, 100), b = add(DMN_CLASS_BATCH, 100);
    pend(a, 1), pend(b, 1);
    int g, r;
    settle(2, &g, &r); /* 200 fits: shared, both granted */
    assert_int_equal(g, 2);
    assert_int_equal(n_switches, 2);
    assert_int_equal(marks[0] + marks[1], 0);
    int c = add(DMN_CLASS_BATCH, 800); /* 1000: sliced from now on */
    pend(c, 3);
    settle(4, &g, &r);
    dmn_arb_idle(arb, a, 5);
    dmn_arb_idle(arb, b, 5);
    pend(a, 5);
    pend(b, 5);
    settle(6, &g, &r); /* c runs; a and b wait */
    int k = n_switches - 1;
    assert_int_equal(g, 1);
    assert_int_equal(marks[k], 1);
    assert_int_equal(marked_turn[k], 1);
    dmn_arb_set_ahead(arb, 0);
    dmn_arb_idle(arb, arb->holder, 7);
    settle(8, &g, &r);
    assert_int_equal(g, 1);
    assert_int_equal(marks[n_switches - 1], 0);
    arb->placement = dmn_placement_find("none");
}

/* Pending with n chunks of CH bytes from base, one range each. */
#define CH 0x1000ull
static void pend_chunks(int slot, uint64_t base, uint32_t n, uint64_t now)
{
    dmn_range_t r[4];
    uint8_t buf[DMN_PROTO_HDR_SIZE + 16 + 4 * DMN_RANGE_SIZE];
    assert_true(n <= 4);
    for (uint32_t i = 0; i < n; i++)
        r[i] = (dmn_range_t){base + 2 * i * CH, CH};
    size_t len = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PENDING, n, 0, r, n);
    dmn_msg_t m;
    assert_int_equal(dmn_proto_decode(buf, len, &m), GMUX_OK);
    assert_int_equal(dmn_arb_pending(arb, slot, n, &m.u.ranges, now), GMUX_OK);
}

/* Bytes the plan orders of kind for task id. */
static uint64_t planned(const dmn_plan_t *plan, uint32_t id, uint32_t kind)
{
    uint64_t b = 0;
    for (size_t i = 0; i < plan->n; i++)
        if (plan->entries[i].kind == kind && plan->entries[i].task_id == id)
            b += plan->entries[i].range.len;
    return b;
}

static uint64_t evicted(const dmn_plan_t *plan, uint32_t id)
{
    return planned(plan, id, DMN_PLAN_EVICT);
}

/* Shared mode (a capacity every footprint here fits in) with placement pl. */
static void shared_with(const dmn_placement_t *pl)
{
    arb->placement = pl;
    dmn_share_params_t p = {1, 1ull << 30, 10};
    dmn_arb_set_share(arb, &p);
}

/* Runs a case with "opt", then on a fresh arbiter with "chunk", each with a
 * capacity of 4 chunks. */
static void on_both(void (*run)(const dmn_placement_t *))
{
    dmn_place_opt_t *o;
    assert_int_equal(dmn_place_opt_create(4 * CH, CH, &o), GMUX_OK);
    run(dmn_place_opt_placement(o));
    dmn_place_opt_destroy(o);
    dmn_arb_fini(arb);
    dmn_arb_init(arb, 10 * MS, 100 * MS, NULL, 0);
    dmn_place_chunk_t *pc;
    assert_int_equal(dmn_place_chunk_create(4 * CH, CH, &pc), GMUX_OK);
    run(dmn_place_chunk_placement(pc));
    dmn_place_chunk_destroy(pc);
}

/* Shared mode, placement capacity 4 chunks: I ran and went idle (2 chunks
 * resident, low addresses), H holds the turn and runs (2 chunks, high
 * addresses), N is granted beside H and needs 2 chunks: they must come from
 * the idle I, not from H, which is running. The other holders were given no
 * turn, like idle tasks, so both placements took H's chunks. */
static void holder_case(const dmn_placement_t *pl)
{
    shared_with(pl);
    int h = add(DMN_CLASS_BATCH, 0), i = add(DMN_CLASS_BATCH, 0), n = add(DMN_CLASS_BATCH, 0);
    pend_chunks(i, 0, 2, 1);
    dmn_arb_action_t a = decide(2);
    assert_int_equal(a.grant, i);
    dmn_arb_idle(arb, i, 3);
    pend_chunks(h, 0x100000, 2, 4);
    a = decide(5);
    assert_int_equal(a.grant, h);
    pend_chunks(n, 0x200000, 2, 6);
    a = decide(7);
    assert_int_equal(arb->share.mode, DMN_MODE_SHARED);
    assert_int_equal(a.grant, n);
    assert_int_equal(dmn_arb_holders(arb), 2);
    assert_int_equal(evicted(a.plan, arb->tasks[h].id), 0);
    assert_int_equal(evicted(a.plan, arb->tasks[i].id), 2 * CH);
    arb->placement = dmn_placement_find("none");
}

/* Shared mode, placement capacity 4 chunks: H holds the turn with 2 chunks
 * resident; N, granted beside it, needs 3, so the plan evicts one of H's.
 * H keeps that order until it gives the turn back, so the chunk is still on
 * the device: N may be filled only the 2 chunks really free (it was filled
 * 3, one more than the device held). N goes idle with its 2; M needs 1: H's
 * evicted chunk still counts (H still holds), so the device is full and
 * the idle N loses one. H gives the turn back (it carries its eviction out
 * then, and the server holds the next switch that fills until it has);
 * Q needs 1: that chunk is free now, nothing is evicted. */
static void kept_case(const dmn_placement_t *pl)
{
    shared_with(pl);
    int h = add(DMN_CLASS_BATCH, 0), n = add(DMN_CLASS_BATCH, 0), m = add(DMN_CLASS_BATCH, 0);
    int q = add(DMN_CLASS_BATCH, 0);
    pend_chunks(h, 0x100000, 2, 1);
    assert_int_equal(decide(2).grant, h);
    pend_chunks(n, 0x200000, 3, 3);
    dmn_arb_action_t a = decide(4);
    assert_int_equal(arb->share.mode, DMN_MODE_SHARED);
    assert_int_equal(a.grant, n);
    assert_int_equal(evicted(a.plan, arb->tasks[h].id), CH);
    assert_int_equal(planned(a.plan, arb->tasks[n].id, DMN_PLAN_FILL), 2 * CH);
    dmn_arb_idle(arb, n, 5);
    pend_chunks(m, 0x300000, 1, 6);
    a = decide(7);
    assert_int_equal(a.grant, m);
    assert_int_equal(evicted(a.plan, arb->tasks[n].id), CH);
    assert_int_equal(evicted(a.plan, arb->tasks[h].id), 0);
    assert_int_equal(planned(a.plan, arb->tasks[m].id, DMN_PLAN_FILL), CH);
    dmn_arb_idle(arb, h, 8);
    pend_chunks(q, 0x400000, 1, 9);
    a = decide(10);
    assert_int_equal(a.grant, q);
    assert_int_equal(planned(a.plan, arb->tasks[q].id, DMN_PLAN_FILL), CH);
    for (size_t i = 0; i < a.plan->n; i++)
        assert_int_not_equal(a.plan->entries[i].kind, DMN_PLAN_EVICT);
    arb->placement = dmn_placement_find("none");
}

/* A task of priority prio. */
static int add_prio(int prio)
{
    dmn_msg_register_t r = {1, DMN_CLASS_BATCH, prio, 0, 0, "t"};
    int s = dmn_arb_add(arb, &r, 0);
    assert_true(s >= 0);
    return s;
}

/* As kept_case, H (2 chunks) holds its evicted chunk when the mode goes back
 * to slices: N (priority 1) keeps the turn, H is revoked and, stuck, loses
 * it after the grace period; its shim still holds the turn and the chunk.
 * N goes idle; M (priority 2, before H) needs 1 chunk: the device is full
 * (H's 1 and its kept 1, N's 2), so a chunk of the idle N must go first.
 * Until 2026-12-02 H's kept chunk stopped counting when its turn was taken
 * (view.kept only for holders): M was filled into it, evicting nothing. */
static void taken_case(const dmn_placement_t *pl)
{
    shared_with(pl);
    int h = add_prio(0), n = add_prio(1), m = add_prio(2);
    pend_chunks(h, 0x100000, 2, 1);
    assert_int_equal(decide(2).grant, h);
    pend_chunks(n, 0x200000, 3, 3);
    dmn_arb_action_t a = decide(4);
    assert_int_equal(a.grant, n);
    assert_int_equal(evicted(a.plan, arb->tasks[h].id), CH);
    dmn_share_params_t p = {1, 1, 10}; /* nothing fits: back to slices */
    dmn_arb_set_share(arb, &p);
    a = decide(5);
    assert_int_equal(arb->share.mode, DMN_MODE_SLICED);
    assert_int_equal(a.revoke, h);
    a = decide(5 + 100 * MS);
    assert_int_equal(a.forced, h);
    dmn_arb_idle(arb, n, 6 + 100 * MS);
    pend_chunks(m, 0x300000, 1, 7 + 100 * MS);
    a = decide(8 + 100 * MS);
    assert_int_equal(a.grant, m);
    assert_int_equal(planned(a.plan, arb->tasks[m].id, DMN_PLAN_FILL), CH);
    assert_int_equal(evicted(a.plan, arb->tasks[n].id), CH);
    arb->placement = dmn_placement_find("none");
}

static void test_taken_kept_in_use(void **state)
{
    (void)state;
    on_both(taken_case);
}

static void test_shared_holder_kept(void **state)
{
    (void)state;
    on_both(holder_case);
}

static void test_shared_kept_in_use(void **state)
{
    (void)state;
    on_both(kept_case);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thresholds),
        cmocka_unit_test_setup_teardown(test_fit_grants_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overflow_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_registration_overflows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hysteresis, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_counts_new_task, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latency_class, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity_from_reports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ahead_mark, setup, teardown),
        cmocka_unit_test_setup_teardown(test_working_set_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_holder_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_kept_in_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_taken_kept_in_use, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
