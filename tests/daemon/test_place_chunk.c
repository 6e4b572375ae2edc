/* Unit tests of the chunk-granularity OPT placement (src/daemon/place_chunk.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "daemon/place_chunk.h"
#include "daemon/place_opt.h"
#include "place_chunk_ref.h"

#define CH 0x1000ull

static dmn_plan_t plan;

static dmn_task_view_t view(uint32_t id, const dmn_range_t *r, uint32_t n, uint32_t turn)
{
    dmn_task_view_t v;
    memset(&v, 0, sizeof(v));
    v.id = id;
    v.ranges = r;
    v.n_ranges = n;
    v.turn = turn;
    return v;
}

static void sw(const dmn_placement_t *pl, dmn_task_view_t *tasks, size_t n, size_t to)
{
    dmn_plan_clear(&plan);
    assert_int_equal(pl->on_switch(pl->ctx, tasks, n, NULL, &tasks[to], &plan), GMUX_OK);
}

static uint64_t plan_bytes(uint32_t task, dmn_plan_kind_t kind)
{
    uint64_t b = 0;
    for (size_t i = 0; i < plan.n; i++)
        if (plan.entries[i].task_id == task && plan.entries[i].kind == (uint32_t)kind)
            b += plan.entries[i].range.len;
    return b;
}

/* Whether the plan evicts the chunk at addr of task. */
static int evicts(uint32_t task, uint64_t addr)
{
    for (size_t i = 0; i < plan.n; i++) {
        const dmn_plan_entry_t *e = &plan.entries[i];
        if (e->task_id == task && e->kind == DMN_PLAN_EVICT && addr >= e->range.base &&
            addr < e->range.base + e->range.len)
            return 1;
    }
    return 0;
}

/* A waiting task's chunk that no announced launch needs goes first, even
 * when a chunk it will use has a higher address (slice-level opt takes the
 * highest address of the farthest task). */
static void test_unused_chunk_goes_first(void **state)
{
    (void)state;
    dmn_place_chunk_t *pc;
    assert_int_equal(dmn_place_chunk_create(4 * CH, CH, &pc), GMUX_OK);
    const dmn_placement_t *pl = dmn_place_chunk_placement(pc);
    dmn_range_t a_all = {0, 3 * CH}, a_late = {2 * CH, CH}, b = {0x100000, 2 * CH};
    dmn_task_view_t t[2] = {view(1, &a_all, 1, 0), view(2, &b, 1, 1)};
    sw(pl, t, 2, 0);
    assert_int_equal(plan_bytes(1, DMN_PLAN_FILL), 3 * CH);
    /* A now announces only its last chunk; B comes in and needs two. */
    t[0] = view(1, &a_late, 1, 1);
    t[1] = view(2, &b, 1, 0);
    sw(pl, t, 2, 1);
    assert_int_equal(plan_bytes(2, DMN_PLAN_FILL), 2 * CH);
    assert_int_equal(plan_bytes(1, DMN_PLAN_EVICT), CH);
    assert_false(evicts(1, 2 * CH)); /* the one A will use stays */
    assert_true(evicts(1, CH));      /* an unused one, highest first among them */
    assert_int_equal(dmn_place_chunk_total(pc), 4 * CH);
    dmn_place_chunk_destroy(pc);
}

/* Inside a waiting task's slice, the chunk used last goes first, whatever
 * its address. */
static void test_use_order_inside_a_slice(void **state)
{
    (void)state;
    dmn_place_chunk_t *pc;
    assert_int_equal(dmn_place_chunk_create(4 * CH, CH, &pc), GMUX_OK);
    const dmn_placement_t *pl = dmn_place_chunk_placement(pc);
    dmn_range_t a[2] = {{3 * CH, CH}, {0, CH}}; /* chunk 3 used first, then chunk 0 */
    dmn_range_t b = {0x100000, 3 * CH};
    dmn_task_view_t t[2] = {view(1, a, 2, 0), view(2, &b, 1, 1)};
    sw(pl, t, 2, 0);
    assert_int_equal(plan_bytes(1, DMN_PLAN_FILL), 2 * CH);
    t[0].turn = 1;
    t[1].turn = 0;
    sw(pl, t, 2, 1);
    assert_int_equal(plan_bytes(1, DMN_PLAN_EVICT), CH);
    assert_true(evicts(1, 0));
    assert_false(evicts(1, 3 * CH));
    dmn_place_chunk_destroy(pc);
}

/* The nearest waiting task keeps its chunks; the idle one loses its first;
 * a task that left is forgotten. */
static void test_turn_order_and_leaving(void **state)
{
    (void)state;
    dmn_place_chunk_t *pc;
    assert_int_equal(dmn_place_chunk_create(6 * CH, CH, &pc), GMUX_OK);
    const dmn_placement_t *pl = dmn_place_chunk_placement(pc);
    dmn_range_t r1 = {0, 2 * CH}, r2 = {0x10000, 2 * CH}, r3 = {0x20000, 2 * CH},
                r4 = {0x30000, 4 * CH};
    dmn_task_view_t t[4] = {view(1, &r1, 1, 0), view(2, &r2, 1, 1), view(3, &r3, 1, 2),
                            view(4, &r4, 1, 3)};
    sw(pl, t, 3, 0);
    t[0].turn = 2, t[1].turn = 0, t[2].turn = 1;
    sw(pl, t, 3, 1);
    t[0].turn = 1, t[1].turn = 2, t[2].turn = 0;
    sw(pl, t, 3, 2);
    assert_int_equal(dmn_place_chunk_total(pc), 6 * CH);
    /* Task 4 comes in needing 4 chunks; 1 waits next, 3 is idle, 2 after 1. */
    t[0].turn = 1, t[1].turn = 2, t[2].turn = DMN_TURN_NONE, t[3].turn = 0;
    sw(pl, t, 4, 3);
    assert_int_equal(plan_bytes(3, DMN_PLAN_EVICT), 2 * CH);
    assert_int_equal(plan_bytes(2, DMN_PLAN_EVICT), 2 * CH);
    assert_int_equal(plan_bytes(1, DMN_PLAN_EVICT), 0);
    assert_int_equal(dmn_place_chunk_resident(pc, 1), 2 * CH);
    /* Task 1 leaves: its chunks no longer count. */
    t[0] = t[3];
    t[0].turn = 0;
    sw(pl, t, 2, 0);
    assert_int_equal(dmn_place_chunk_resident(pc, 1), 0);
    assert_int_equal(dmn_place_chunk_total(pc), 4 * CH);
    dmn_place_chunk_destroy(pc);
}

/* A working set larger than the capacity: its first chunks in use order are
 * filled, never more than the capacity. */
static void test_oversized_working_set(void **state)
{
    (void)state;
    dmn_place_chunk_t *pc;
    assert_int_equal(dmn_place_chunk_create(3 * CH, CH, &pc), GMUX_OK);
    const dmn_placement_t *pl = dmn_place_chunk_placement(pc);
    dmn_range_t r[2] = {{8 * CH, 2 * CH}, {0, 4 * CH}};
    dmn_range_t huge = {0, 1ull << 60};
    dmn_task_view_t t[2] = {view(1, r, 2, 0), view(2, &huge, 1, 1)};
    sw(pl, t, 2, 0);
    assert_int_equal(plan_bytes(1, DMN_PLAN_FILL), 3 * CH);
    assert_int_equal(plan.entries[0].range.base, 0); /* chunk 0 (third in use order) */
    assert_int_equal(plan.entries[1].range.base, 8 * CH);
    assert_int_equal(plan.entries[1].range.len, 2 * CH);
    t[0].turn = 1, t[1].turn = 0;
    sw(pl, t, 2, 1); /* a hostile 2^60-byte working set costs capacity, not memory */
    assert_int_equal(plan_bytes(2, DMN_PLAN_FILL), 3 * CH);
    assert_int_equal(plan_bytes(1, DMN_PLAN_EVICT), 3 * CH);
    assert_int_equal(dmn_place_chunk_total(pc), 3 * CH);
    dmn_place_chunk_destroy(pc);
}

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* Round robin over random working sets, both placements on the same views;
 * with drift, after its slice a task announces its next working set with
 * one range replaced, half of the time. Checks that chunk never plans beyond
 * its capacity; returns the bytes each moved and the runs where chunk moved
 * more. */
static void run_random(int drift, uint64_t *total_chunk, uint64_t *total_opt, int *worse)
{
    *total_chunk = *total_opt = 0;
    *worse = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        uint64_t s = seed;
        uint32_t n = 2 + (uint32_t)(rnd(&s) % 4), slots = 10 + (uint32_t)(rnd(&s) % 16);
        dmn_range_t r[6][4];
        uint32_t nr[6];
        dmn_task_view_t t[6];
        for (uint32_t k = 0; k < n; k++) {
            nr[k] = 1 + (uint32_t)(rnd(&s) % 3);
            for (uint32_t i = 0; i < nr[k]; i++) /* unaligned, within 32 chunks */
                r[k][i] = (dmn_range_t){rnd(&s) % (32 * CH), 1 + rnd(&s) % (2 * CH)};
            t[k] = view(k + 1, r[k], nr[k], 0);
        }
        dmn_place_chunk_t *pc;
        dmn_place_opt_t *po;
        assert_int_equal(dmn_place_chunk_create(slots * CH, CH, &pc), GMUX_OK);
        assert_int_equal(dmn_place_opt_create(slots * CH, CH, &po), GMUX_OK);
        const dmn_placement_t *pls[2] = {dmn_place_chunk_placement(pc),
                                         dmn_place_opt_placement(po)};
        uint64_t bytes[2] = {0, 0};
        for (uint32_t sl = 0; sl < 60; sl++) {
            uint32_t to = sl % n;
            for (uint32_t k = 0; k < n; k++)
                t[k].turn = (k + n - to) % n;
            for (int p = 0; p < 2; p++) {
                sw(pls[p], t, n, to);
                for (size_t i = 0; i < plan.n; i++)
                    bytes[p] += plan.entries[i].range.len;
                if (p == 0) {
                    assert_true(dmn_place_chunk_total(pc) <= (uint64_t)slots * CH);
                    assert_true(plan_bytes(to + 1, DMN_PLAN_FILL) <= (uint64_t)slots * CH);
                }
            }
            if (drift && rnd(&s) % 2)
                r[to][rnd(&s) % nr[to]] =
                    (dmn_range_t){rnd(&s) % (32 * CH), 1 + rnd(&s) % (2 * CH)};
        }
        *worse += bytes[0] > bytes[1];
        *total_chunk += bytes[0];
        *total_opt += bytes[1];
        dmn_place_chunk_destroy(pc);
        dmn_place_opt_destroy(po);
    }
    print_message("40 random runs%s: chunk-level moved %llu bytes, slice-level %llu; chunk-level "
                  "moved more in %d runs\n",
                  drift ? " with drift" : "", (unsigned long long)*total_chunk,
                  (unsigned long long)*total_opt, *worse);
}

/* Fixed working sets: the timeline is the exact future, Belady is optimal,
 * so chunk moves no more than slice-level opt in any run. */
static void test_against_slice_opt_exact(void **state)
{
    (void)state;
    uint64_t c, o;
    int worse;
    run_random(0, &c, &o, &worse);
    assert_int_equal(worse, 0);
    assert_true(c <= o);
}

/* Drifting working sets: the timeline knows one slice per task ahead. In
 * all, chunk moves less (it drops what no announced launch needs); a single
 * run may lose a chunk or two to the short horizon. */
static void test_against_slice_opt_drift(void **state)
{
    (void)state;
    uint64_t c, o;
    int worse;
    run_random(1, &c, &o, &worse);
    assert_true(c < o);
    assert_true(worse <= 10);
}

/* Whether some AHEAD order of the plan covers the chunk at addr of task. */
static int ahead_has(uint32_t task, uint64_t addr)
{
    for (size_t i = 0; i < plan.n; i++) {
        const dmn_plan_entry_t *e = &plan.entries[i];
        if (e->task_id == task && e->kind == DMN_PLAN_AHEAD && addr >= e->range.base &&
            addr < e->range.base + e->range.len)
            return 1;
    }
    return 0;
}

/* Filling ahead: the task marked for it gets its first chunks in use order
 * into the slots left free, nothing is evicted for it and the incoming
 * task's chunks stay; at its own switch it is filled only with the rest. */
static void test_ahead_fills_free_slots_only(void **state)
{
    (void)state;
    dmn_place_chunk_t *pc;
    assert_int_equal(dmn_place_chunk_create(8 * CH, CH, &pc), GMUX_OK);
    const dmn_placement_t *pl = dmn_place_chunk_placement(pc);
    /* B uses [0x110000, +3) first, then [0x100000, +3): use order, not address. */
    dmn_range_t a = {0, 5 * CH}, b[2] = {{0x110000, 3 * CH}, {0x100000, 3 * CH}};
    dmn_task_view_t t[2] = {view(1, &a, 1, 0), view(2, b, 2, 1)};
    t[1].ahead = 1;
    sw(pl, t, 2, 0);
    assert_int_equal(plan_bytes(1, DMN_PLAN_FILL), 5 * CH);
    assert_int_equal(plan_bytes(2, DMN_PLAN_AHEAD), 3 * CH); /* 8 - 5 free */
    assert_int_equal(plan_bytes(1, DMN_PLAN_EVICT) + plan_bytes(2, DMN_PLAN_EVICT), 0);
    assert_int_equal(plan_bytes(1, DMN_PLAN_AHEAD), 0);
    for (uint64_t c = 0; c < 3; c++)
        assert_true(ahead_has(2, 0x110000 + c * CH));
    assert_false(ahead_has(2, 0x100000));
    assert_int_equal(plan.entries[plan.n - 1].kind, DMN_PLAN_AHEAD); /* after the fills */
    assert_int_equal(dmn_place_chunk_resident(pc, 1), 5 * CH);
    assert_int_equal(dmn_place_chunk_resident(pc, 2), 3 * CH);
    assert_int_equal(dmn_place_chunk_total(pc), 8 * CH);
    /* B's turn: only what was not filled ahead; A (now next) gets nothing
     * ahead, the device being full. */
    t[0].turn = 1, t[0].ahead = 1;
    t[1].turn = 0, t[1].ahead = 0;
    sw(pl, t, 2, 1);
    assert_int_equal(plan_bytes(2, DMN_PLAN_FILL), 3 * CH);
    for (size_t i = 0; i < plan.n; i++)
        if (plan.entries[i].kind == DMN_PLAN_FILL)
            assert_true(plan.entries[i].range.base >= 0x100000 &&
                        plan.entries[i].range.base + plan.entries[i].range.len <=
                            0x100000 + 3 * CH);
    assert_int_equal(plan_bytes(1, DMN_PLAN_EVICT), 3 * CH);
    assert_int_equal(plan_bytes(1, DMN_PLAN_AHEAD), 0);
    assert_int_equal(dmn_place_chunk_total(pc), 8 * CH);
    dmn_place_chunk_destroy(pc);
}

/* No fill ahead without the mark (GMUX_DAEMON_AHEAD=0, shared mode), for a
 * mark on a task that is not next, or without a capacity. */
static void test_ahead_not_planned(void **state)
{
    (void)state;
    dmn_range_t a = {0, 2 * CH}, b = {0x100000, 2 * CH}, c = {0x200000, 2 * CH};
    for (int k = 0; k < 3; k++) {
        dmn_place_chunk_t *pc;
        assert_int_equal(dmn_place_chunk_create(k == 2 ? 0 : 8 * CH, CH, &pc), GMUX_OK);
        const dmn_placement_t *pl = dmn_place_chunk_placement(pc);
        dmn_task_view_t t[3] = {view(1, &a, 1, 0), view(2, &b, 1, 1), view(3, &c, 1, 2)};
        t[1].ahead = k != 0;
        t[2].ahead = 1; /* turn 2: never */
        sw(pl, t, 3, 0);
        assert_int_equal(plan_bytes(1, DMN_PLAN_FILL), 2 * CH);
        assert_int_equal(plan_bytes(2, DMN_PLAN_AHEAD), k == 1 ? 2 * CH : 0);
        assert_int_equal(plan_bytes(3, DMN_PLAN_AHEAD), 0);
        dmn_place_chunk_destroy(pc);
    }
}

/* A random view set over a shared window of 64 chunks (tasks' address
 * spaces overlap, so equal keys across tasks happen), unaligned, overlapping,
 * empty and huge ranges, random task ids and turns (ties and idle tasks). */
typedef struct scen {
    uint32_t n;
    dmn_range_t r[8][6];
    dmn_task_view_t t[8];
} scen_t;

static dmn_range_t rnd_range(uint64_t *s)
{
    uint64_t k = rnd(s) % 16;
    if (k == 0)
        return (dmn_range_t){rnd(s) % (64 * CH), 0};
    if (k == 1)
        return (dmn_range_t){rnd(s) % (64 * CH), 1ull << (40 + rnd(s) % 21)};
    if (k < 6) /* aligned runs */
        return (dmn_range_t){(rnd(s) % 64) * CH, (1 + rnd(s) % 12) * CH};
    return (dmn_range_t){rnd(s) % (64 * CH), 1 + rnd(s) % (6 * CH)};
}

static void scen_turns(scen_t *sc, uint64_t *s, uint32_t to)
{
    for (uint32_t k = 0; k < sc->n; k++) {
        uint64_t d = rnd(s) % 8;
        sc->t[k].turn = d == 0   ? DMN_TURN_NONE
                        : d == 1 ? 1 + (uint32_t)(rnd(s) % 3)
                                 : (k + sc->n - to) % sc->n;
    }
    sc->t[to].turn = rnd(s) % 10 ? 0 : DMN_TURN_NONE;
    for (uint32_t k = 0; k < sc->n; k++) /* mostly on the turn-1 tasks, at times elsewhere */
        sc->t[k].ahead = rnd(s) % 4 != 0 && (sc->t[k].turn == 1 || rnd(s) % 8 == 0);
}

/* A task's pinned bytes (daemon.md "Pinned memory"): mostly none, else
 * unaligned, up to a quarter of the capacity, at times past all of it (the
 * largest: UINT64_MAX). */
static uint64_t rnd_pinned(uint64_t *s, uint32_t slots)
{
    if (rnd(s) % 4)
        return 0;
    uint64_t k = rnd(s) % 8;
    if (k == 0)
        return UINT64_MAX - rnd(s) % 3;
    if (k == 1)
        return (slots + rnd(s) % 3) * CH - rnd(s) % 2;
    return 1 + rnd(s) % (slots * CH / 4 + 1);
}

/* Tasks holding the turn beside the incoming one (shared mode: turn 0) and
 * their kept bytes (placement.h, dmn_task_view_t.kept: what earlier plans
 * evicted from them), from their own stream ks so the rest of the scenarios
 * stays as it was: kept mostly on those holders, at times on any task;
 * unaligned, up to half the capacity, at times past all of it (the largest:
 * UINT64_MAX). */
static void scen_kept(scen_t *sc, uint64_t *ks, uint32_t to, uint32_t slots)
{
    for (uint32_t k = 0; k < sc->n; k++) {
        if (k != to && rnd(ks) % 6 == 0)
            sc->t[k].turn = 0;
        int holder = k != to && sc->t[k].turn == 0;
        uint64_t d = rnd(ks) % 32;
        sc->t[k].kept = 0;
        if (holder ? d >= 16 : d != 0)
            continue;
        d = rnd(ks) % 16;
        sc->t[k].kept = d == 0   ? UINT64_MAX - rnd(ks) % 3
                        : d == 1 ? (slots + rnd(ks) % 3) * CH - rnd(ks) % 2
                                 : 1 + rnd(ks) % (slots * CH / 2 + 1);
    }
}

/* The chunks the pinned bytes of tasks[0..n) take, each rounded up, summed
 * without a cap (at most 8 tasks: no overflow). */
static uint64_t pinned_chunks(const dmn_task_view_t *t, uint32_t n)
{
    uint64_t c = 0;
    for (uint32_t k = 0; k < n; k++)
        c += t[k].pinned / CH + (t[k].pinned % CH != 0);
    return c;
}

/* The chunks the kept bytes of tasks[0..n) take, each rounded up (no
 * overflow: at most 8 tasks). */
static uint64_t kept_chunks(const dmn_task_view_t *t, uint32_t n)
{
    uint64_t c = 0;
    for (uint32_t k = 0; k < n; k++)
        c += t[k].kept / CH + (t[k].kept % CH != 0);
    return c;
}

/* Whether the plan evicts from a task holding the turn beside t[to]. */
static int holder_evicted(const dmn_task_view_t *t, uint32_t n, uint32_t to, const dmn_plan_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        for (uint32_t k = 0; k < n; k++)
            if (p->entries[i].kind == DMN_PLAN_EVICT && p->entries[i].task_id == t[k].id &&
                k != to && t[k].turn == 0)
                return 1;
    return 0;
}

/* Compares the plans entry by entry. */
static void assert_same_plan(const dmn_plan_t *a, const dmn_plan_t *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->entries[i].task_id, b->entries[i].task_id);
        assert_int_equal(a->entries[i].kind, b->entries[i].kind);
        assert_int_equal(a->entries[i].range.base, b->entries[i].range.base);
        assert_int_equal(a->entries[i].range.len, b->entries[i].range.len);
    }
}

/* The placement against its reference (tests/daemon/place_chunk_ref.c, the
 * first implementation): identical evictions and fills, switch after switch,
 * over random scenarios; tasks drift, leave and come back. Odd seeds give
 * the views generations, as the arbiter does (what the placement derives
 * from a task's ranges is kept across switches), even seeds none. Tasks pin
 * memory at times, their pinned bytes change between switches, and they can
 * pin more than the capacity: both leave it out of the room (until
 * 2026-12-04 the reference knew no pinned memory and the comparison had
 * none). */
static void test_same_plans_as_reference(void **state)
{
    (void)state;
    dmn_plan_t ref;
    dmn_plan_init(&ref);
    uint64_t evicted = 0, filled = 0, ahead = 0, pin_fills = 0, over_evicts = 0;
    uint64_t kept_fills = 0, holder_evicts = 0;
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        uint64_t s = seed * 7919, ks = seed * 104729;
        scen_t sc;
        memset(&sc, 0, sizeof(sc));
        sc.n = 1 + (uint32_t)(rnd(&s) % 8);
        uint32_t nr[8], slots = 1 + (uint32_t)(rnd(&s) % 48);
        uint64_t gen = seed % 2 ? 1000 * seed : 0;
        for (uint32_t k = 0; k < sc.n; k++) {
            nr[k] = (uint32_t)(rnd(&s) % 6);
            for (uint32_t i = 0; i < nr[k]; i++)
                sc.r[k][i] = rnd_range(&s);
            sc.t[k] = view(k * 37 % 11 + 3 * k + 1, sc.r[k], nr[k], 0);
            sc.t[k].ranges_gen = gen ? ++gen : 0;
            sc.t[k].pinned = rnd_pinned(&s, slots);
        }
        dmn_place_chunk_t *pc;
        dmn_place_chunk_ref_t *rc;
        assert_int_equal(dmn_place_chunk_create(slots * CH, CH, &pc), GMUX_OK);
        assert_int_equal(dmn_place_chunk_ref_create(slots * CH, CH, &rc), GMUX_OK);
        const dmn_placement_t *pl = dmn_place_chunk_placement(pc);
        const dmn_placement_t *pr = dmn_place_chunk_ref_placement(rc);
        for (uint32_t sl = 0; sl < 60; sl++) {
            uint32_t n = sc.n, to = (uint32_t)(rnd(&s) % n);
            if (n > 1 && rnd(&s) % 6 == 0) { /* the last task is away for this switch */
                n--;
                to %= n;
            }
            scen_turns(&sc, &s, to);
            scen_kept(&sc, &ks, to, slots);
            dmn_plan_clear(&plan);
            dmn_plan_clear(&ref);
            assert_int_equal(pl->on_switch(pl->ctx, sc.t, n, NULL, &sc.t[to], &plan), GMUX_OK);
            assert_int_equal(pr->on_switch(pr->ctx, sc.t, n, NULL, &sc.t[to], &ref), GMUX_OK);
            assert_same_plan(&plan, &ref);
            assert_int_equal(dmn_place_chunk_total(pc), dmn_place_chunk_ref_total(rc));
            for (uint32_t k = 0; k < sc.n; k++)
                assert_int_equal(dmn_place_chunk_resident(pc, sc.t[k].id),
                                 dmn_place_chunk_ref_resident(rc, sc.t[k].id));
            for (size_t i = 0; i < plan.n; i++)
                *(plan.entries[i].kind == DMN_PLAN_EVICT  ? &evicted
                  : plan.entries[i].kind == DMN_PLAN_FILL ? &filled
                                                          : &ahead) += plan.entries[i].range.len;
            assert_true(dmn_place_chunk_total(pc) <= (uint64_t)slots * CH);
            uint64_t pin = pinned_chunks(sc.t, n); /* the pinned paths were taken */
            pin_fills += pin && pin < slots && plan_bytes(sc.t[to].id, DMN_PLAN_FILL);
            over_evicts += pin >= slots && plan.n > 0;
            kept_fills += kept_chunks(sc.t, n) && pin + kept_chunks(sc.t, n) < slots &&
                          plan.n > 0 && plan.entries[plan.n - 1].kind != DMN_PLAN_EVICT;
            holder_evicts += holder_evicted(sc.t, n, to, &plan);
            if (rnd(&s) % 5 == 0) /* a task pins more or less */
                sc.t[rnd(&s) % sc.n].pinned = rnd_pinned(&s, slots);
            if (rnd(&s) % 3 == 0 && nr[to]) { /* a new working set, one range replaced */
                sc.r[to][rnd(&s) % nr[to]] = rnd_range(&s);
                sc.t[to].ranges_gen = gen ? ++gen : 0;
            }
        }
        dmn_place_chunk_destroy(pc);
        dmn_place_chunk_ref_destroy(rc);
    }
    /* The scenarios must exercise both kinds of order, plenty of them. */
    assert_true(evicted > 1000 * CH);
    assert_true(filled > 1000 * CH);
    assert_true(ahead > 1000 * CH);
    print_message("pinned memory: %llu switches filled beside it, %llu planned under more "
                  "than the capacity of it\n",
                  (unsigned long long)pin_fills, (unsigned long long)over_evicts);
    assert_true(pin_fills > 1000);
    assert_true(over_evicts > 100);
    print_message("kept memory: %llu switches filled beside it, %llu evicted from holders\n",
                  (unsigned long long)kept_fills, (unsigned long long)holder_evicts);
    assert_true(kept_fills > 1000);
    assert_true(holder_evicts > 1000);
    dmn_plan_fini(&ref);
}

static int setup(void **state)
{
    (void)state;
    dmn_plan_init(&plan);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dmn_plan_fini(&plan);
    return 0;
}

/* What a check reads of either policy's model. */
typedef struct model_ops {
    uint64_t (*total)(const void *inst);
    uint64_t (*resident)(const void *inst, uint32_t id);
} model_ops_t;

static uint64_t chunk_total(const void *inst)
{
    return dmn_place_chunk_total(inst);
}

static uint64_t chunk_resident(const void *inst, uint32_t id)
{
    return dmn_place_chunk_resident(inst, id);
}

static uint64_t opt_total(const void *inst)
{
    return dmn_place_opt_total(inst);
}

static uint64_t opt_resident(const void *inst, uint32_t id)
{
    return dmn_place_opt_resident(inst, id);
}

/* Runs check on a chunk and an opt instance of capacity bytes in chunks of CH. */
static void on_both(uint64_t capacity,
                    void (*check)(const dmn_placement_t *, const model_ops_t *, const void *))
{
    static const model_ops_t chunk_ops = {chunk_total, chunk_resident},
                             opt_ops = {opt_total, opt_resident};
    dmn_place_chunk_t *pc;
    assert_int_equal(dmn_place_chunk_create(capacity, CH, &pc), GMUX_OK);
    check(dmn_place_chunk_placement(pc), &chunk_ops, pc);
    dmn_place_chunk_destroy(pc);
    dmn_place_opt_t *o;
    assert_int_equal(dmn_place_opt_create(capacity, CH, &o), GMUX_OK);
    check(dmn_place_opt_placement(o), &opt_ops, o);
    dmn_place_opt_destroy(o);
}

/* Orders never sent (on_unsent), each policy: the incoming task's own
 * evictions (chunks outside its new working set) and fills handed back leave
 * the model as before the switch, so the same switch again plans the same
 * orders, evicting the same chunks (a model that kept them as done would
 * plan nothing the second time: the working set counted resident). */
static void unsent_restores(const dmn_placement_t *pl, const model_ops_t *m, const void *inst)
{
    dmn_range_t old = {0, 4 * CH}, now = {0x100000, 2 * CH};
    dmn_task_view_t t[1] = {view(1, &old, 1, 0)};
    sw(pl, t, 1, 0);
    assert_int_equal(plan_bytes(1, DMN_PLAN_FILL), 4 * CH);
    t[0] = view(1, &now, 1, 0);
    sw(pl, t, 1, 0);
    assert_int_equal(plan_bytes(1, DMN_PLAN_EVICT), 2 * CH);
    assert_int_equal(plan_bytes(1, DMN_PLAN_FILL), 2 * CH);
    dmn_plan_entry_t first[8];
    size_t n = plan.n;
    assert_true(n <= 8);
    memcpy(first, plan.entries, n * sizeof(first[0]));
    assert_int_equal(pl->on_unsent(pl->ctx, plan.entries, plan.n), GMUX_OK);
    assert_int_equal(m->total(inst), 4 * CH);
    sw(pl, t, 1, 0);
    assert_int_equal(plan.n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(plan.entries[i].kind, first[i].kind);
        assert_int_equal(plan.entries[i].range.base, first[i].range.base);
        assert_int_equal(plan.entries[i].range.len, first[i].range.len);
    }
    assert_int_equal(m->total(inst), 4 * CH);
}

static void test_unsent_restores(void **state)
{
    (void)state;
    on_both(4 * CH, unsent_restores);
}

/* Pinned memory (dmn_task_view_t.pinned: no plan moves it) takes room under
 * the capacity of 10 chunks, any task's, each rounded up to whole chunks: an
 * idle task A pinning 6 chunks less a byte leaves 4 for the fill of B (8
 * wanted) and none for the fill ahead of C; once A is gone B gets the rest
 * and C its 2. Pinned bytes past the capacity leave nothing (no overflow).
 * Until 2026-12-04 B got all 8 and C none only for want of room left by B. */
static void pinned_leaves_room(const dmn_placement_t *pl, const model_ops_t *m, const void *inst)
{
    dmn_range_t rb = {0x100000, 8 * CH}, rc = {0x200000, 2 * CH};
    dmn_task_view_t t[3] = {view(2, &rb, 1, 0), view(3, &rc, 1, 1),
                            view(1, NULL, 0, DMN_TURN_NONE)};
    t[1].ahead = 1;
    t[2].pinned = 6 * CH - 1;
    sw(pl, t, 3, 0);
    assert_int_equal(plan_bytes(2, DMN_PLAN_FILL), 4 * CH);
    assert_int_equal(plan_bytes(3, DMN_PLAN_AHEAD), 0);
    assert_int_equal(plan.n, 1); /* nothing evicted: no task had anything resident */
    assert_int_equal(m->resident(inst, 2), 4 * CH);
    sw(pl, t, 2, 0); /* A left */
    assert_int_equal(plan_bytes(2, DMN_PLAN_FILL), 4 * CH);
    assert_int_equal(plan_bytes(3, DMN_PLAN_AHEAD), 2 * CH);
    /* D comes and pins more than the capacity, and C wants 2 chunks more:
     * the device is overcommitted, so whatever is evicted makes no room */
    dmn_range_t rc2[2] = {{0x200000, 2 * CH}, {0x300000, 2 * CH}};
    t[1] = view(3, rc2, 2, 0);
    t[0].turn = 1;
    t[2].id = 4;
    t[2].pinned = UINT64_MAX;
    uint64_t total = m->total(inst);
    sw(pl, t, 3, 1);
    assert_int_equal(plan_bytes(3, DMN_PLAN_FILL), 0);
    assert_true(m->total(inst) <= total);
    assert_int_equal(m->resident(inst, 3), 2 * CH); /* its fill ahead stays */
}

static void test_pinned_leaves_room(void **state)
{
    (void)state;
    on_both(10 * CH, pinned_leaves_room);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unused_chunk_goes_first),
        cmocka_unit_test(test_use_order_inside_a_slice),
        cmocka_unit_test(test_turn_order_and_leaving),
        cmocka_unit_test(test_oversized_working_set),
        cmocka_unit_test(test_against_slice_opt_exact),
        cmocka_unit_test(test_against_slice_opt_drift),
        cmocka_unit_test(test_same_plans_as_reference),
        cmocka_unit_test(test_ahead_fills_free_slots_only),
        cmocka_unit_test(test_ahead_not_planned),
        cmocka_unit_test(test_unsent_restores),
        cmocka_unit_test(test_pinned_leaves_room),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
