/* A switch whose plan fails part-way (an allocation fails while the placement
 * builds it) sends nothing: the arbiter clears the plan. The placements' model
 * of what is resident must then stay as it was. This test compiles the
 * placements with their allocation seam (src/daemon/place_alloc.h) and fails
 * each allocation of a switch in turn, for "opt" and "chunk", and checks the
 * models against what the plans that were sent did, chunk by chunk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "daemon/arbiter.h"
#include "daemon/chunk_victims.h"
#include "daemon/place_alloc.h"
#include "daemon/place_chunk.h"
#include "daemon/place_opt.h"

#define CH      0x1000ull /* chunk */
#define NT      3         /* tasks, ids 1..NT */
#define NC      6         /* chunks in a working set */
#define CAP     10        /* chunks of capacity */
#define SPACE   16        /* chunk slots of a task's address space */
#define N_STEPS 7

/* The seam: fails the allocation numbered fail_at (0 the first after arming),
 * once; fail_at < 0: none. */
static long fail_at = -1, allocs;
static bool failed;

bool dmn_place_alloc_fails(void)
{
    if (fail_at < 0)
        return false;
    if (allocs++ != fail_at)
        return false;
    failed = true;
    fail_at = -1;
    return true;
}

static void arm(long k)
{
    allocs = 0;
    failed = false;
    fail_at = k;
}

/* A task's chunk i is at (id << 32) + 2 * i * CH: one range, one run each. */
static uint64_t addr(uint32_t id, uint32_t i)
{
    return ((uint64_t)id << 32) + 2 * i * CH;
}

/* Working sets: set 0 chunks 0..5, set 1 chunks 3..8, in use order. */
static dmn_range_t sets[NT + 1][2][NC];

typedef struct step {
    uint32_t to;
    uint32_t set[NT + 1];  /* the working set of each task */
    uint32_t turn[NT + 1]; /* of the others: 1.., or DMN_TURN_NONE (idle) */
    uint32_t ahead;        /* the task marked for a fill ahead, 0 none */
} step_t;

#define NO DMN_TURN_NONE
static const step_t steps[N_STEPS] = {
    {1, {0, 0, 0, 0}, {0, 0, 1, NO}, 2}, {2, {0, 0, 0, 0}, {0, NO, 0, 1}, 3},
    {3, {0, 0, 0, 0}, {0, 1, 2, 0}, 1},  {1, {0, 0, 1, 0}, {0, 0, NO, NO}, 0},
    {2, {0, 1, 1, 0}, {0, 1, 0, 2}, 1},  {3, {0, 1, 1, 1}, {0, NO, NO, 0}, 0},
    {1, {0, 1, 0, 1}, {0, 0, 2, 1}, 2},
};

/* What the plans sent did: resident chunks per task. */
static bool truth[NT + 1][SPACE];

typedef struct pol {
    const char *name;
    void *obj;
    const dmn_placement_t *pl;
    uint64_t (*resident)(const void *obj, uint32_t id);
    uint64_t (*total)(const void *obj);
} pol_t;

static uint64_t opt_res(const void *o, uint32_t id)
{
    return dmn_place_opt_resident(o, id);
}
static uint64_t opt_tot(const void *o)
{
    return dmn_place_opt_total(o);
}
static uint64_t chunk_res(const void *o, uint32_t id)
{
    return dmn_place_chunk_resident(o, id);
}
static uint64_t chunk_tot(const void *o)
{
    return dmn_place_chunk_total(o);
}

static void pol_create(pol_t *p, int chunk)
{
    memset(p, 0, sizeof(*p));
    if (chunk) {
        dmn_place_chunk_t *pc;
        assert_int_equal(dmn_place_chunk_create(CAP * CH, CH, &pc), GMUX_OK);
        *p = (pol_t){"chunk", pc, dmn_place_chunk_placement(pc), chunk_res, chunk_tot};
    } else {
        dmn_place_opt_t *o;
        assert_int_equal(dmn_place_opt_create(CAP * CH, CH, &o), GMUX_OK);
        *p = (pol_t){"opt", o, dmn_place_opt_placement(o), opt_res, opt_tot};
    }
}

static void pol_destroy(pol_t *p)
{
    if (strcmp(p->name, "chunk") == 0)
        dmn_place_chunk_destroy(p->obj);
    else
        dmn_place_opt_destroy(p->obj);
}

/* Applies a plan that was sent to the truth: every order must be possible
 * (no eviction of what is absent, no fill of what is there). */
static void apply(const dmn_plan_t *plan)
{
    for (size_t i = 0; i < plan->n; i++) {
        const dmn_plan_entry_t *e = &plan->entries[i];
        assert_true(e->task_id >= 1 && e->task_id <= NT);
        for (uint64_t a = e->range.base; a < e->range.base + e->range.len; a += CH) {
            uint64_t off = a - ((uint64_t)e->task_id << 32);
            assert_int_equal(off % (2 * CH), 0);
            uint64_t c = off / (2 * CH);
            assert_true(c < SPACE);
            bool *r = &truth[e->task_id][c];
            if (e->kind == DMN_PLAN_EVICT) {
                assert_true(*r);
                *r = false;
            } else {
                assert_false(*r);
                *r = true;
            }
        }
    }
}

/* The model agrees with the truth, which fits the capacity. */
static void check(const pol_t *p)
{
    uint64_t all = 0;
    for (uint32_t id = 1; id <= NT; id++) {
        uint64_t n = 0;
        for (int c = 0; c < SPACE; c++)
            n += truth[id][c];
        assert_int_equal(p->resident(p->obj, id), n * CH);
        all += n;
    }
    assert_int_equal(p->total(p->obj), all * CH);
    assert_true(all <= CAP);
}

/* The views of step st's switch. */
static void step_views(const step_t *st, dmn_task_view_t v[NT])
{
    memset(v, 0, NT * sizeof(*v));
    for (uint32_t id = 1; id <= NT; id++) {
        dmn_task_view_t *x = &v[id - 1];
        x->id = id;
        x->ranges = sets[id][st->set[id]];
        x->n_ranges = NC;
        x->ranges_gen = id * 2 + st->set[id]; /* the same set keeps its generation */
        x->turn = id == st->to ? 0 : st->turn[id];
        x->ahead = id == st->ahead;
    }
}

/* Runs step s; returns its status. The plan is applied only on success. */
static gmux_status_t run_step(const pol_t *p, int s)
{
    const step_t *st = &steps[s];
    dmn_task_view_t v[NT];
    step_views(st, v);
    dmn_plan_t plan;
    dmn_plan_init(&plan);
    gmux_status_t rc = p->pl->on_switch(p->pl->ctx, v, NT, NULL, &v[st->to - 1], &plan);
    if (rc == GMUX_OK)
        apply(&plan);
    dmn_plan_fini(&plan);
    return rc;
}

static void init_sets(void)
{
    for (uint32_t id = 1; id <= NT; id++)
        for (uint32_t i = 0; i < NC; i++) {
            sets[id][0][i] = (dmn_range_t){addr(id, i), CH};
            sets[id][1][i] = (dmn_range_t){addr(id, i + 3), CH};
        }
}

/* For every step j and every allocation k of it: steps before j as usual,
 * allocation k of step j fails (the model must not change), then step j
 * again and the rest; the model follows what was sent throughout. */
static void sweep(int chunk)
{
    init_sets();
    long n_failed = 0;
    for (int j = 0; j < N_STEPS; j++) {
        for (long k = 0;; k++) {
            pol_t p;
            pol_create(&p, chunk);
            memset(truth, 0, sizeof(truth));
            for (int s = 0; s < j; s++) {
                assert_int_equal(run_step(&p, s), GMUX_OK);
                check(&p);
            }
            arm(k);
            gmux_status_t rc = run_step(&p, j);
            bool hit = failed;
            fail_at = -1;
            if (hit) {
                /* A failed ahead fill is left out of a plan that stands. */
                assert_true(rc == GMUX_OK || rc == GMUX_ERR_NOMEM);
                n_failed += rc != GMUX_OK;
                check(&p);
                if (rc != GMUX_OK)
                    assert_int_equal(run_step(&p, j), GMUX_OK);
            } else {
                assert_int_equal(rc, GMUX_OK);
            }
            check(&p);
            for (int s = j + 1; s < N_STEPS; s++) {
                assert_int_equal(run_step(&p, s), GMUX_OK);
                check(&p);
            }
            pol_destroy(&p);
            if (!hit)
                break;
        }
    }
    assert_true(n_failed > N_STEPS); /* the sweep did fail switches part-way */
}

static long n_handed; /* hand-backs with orders in them */

/* Runs step s and hands back its unsent orders (the granted task's and the
 * fill ahead, as dmn_arb_unsent does) with allocation k of the hand-back
 * failing; only the other tasks' orders are applied. Returns whether
 * allocation k was reached. */
static bool run_step_unsent(const pol_t *p, int s, long k)
{
    const step_t *st = &steps[s];
    dmn_task_view_t v[NT];
    step_views(st, v);
    dmn_plan_t plan, sent, back;
    dmn_plan_init(&plan);
    dmn_plan_init(&sent);
    dmn_plan_init(&back);
    assert_int_equal(p->pl->on_switch(p->pl->ctx, v, NT, NULL, &v[st->to - 1], &plan), GMUX_OK);
    for (size_t i = 0; i < plan.n; i++) {
        const dmn_plan_entry_t *e = &plan.entries[i];
        bool unsent = e->kind == DMN_PLAN_AHEAD || e->task_id == st->to;
        assert_int_equal(
            dmn_plan_add(unsent ? &back : &sent, e->task_id, (dmn_plan_kind_t)e->kind, e->range),
            GMUX_OK);
    }
    apply(&sent);
    n_handed += back.n > 0;
    arm(k);
    gmux_status_t rc = back.n ? p->pl->on_unsent(p->pl->ctx, back.entries, back.n) : GMUX_OK;
    bool hit = failed;
    fail_at = -1;
    assert_int_equal(rc, GMUX_OK); /* a hand-back cannot fail */
    dmn_plan_fini(&plan);
    dmn_plan_fini(&sent);
    dmn_plan_fini(&back);
    return hit;
}

/* Every step's grant withdrawn or void in turn, each allocation of its
 * hand-back failing in turn: the model must drop exactly the orders handed
 * back (a fill left in it would count memory resident that is not), and the
 * steps after plan from the truth. Until 2026-12-02 a failed hand-back
 * returned GMUX_ERR_NOMEM part-way, the fills left counted resident. */
static void sweep_unsent(int chunk)
{
    init_sets();
    n_handed = 0;
    for (int j = 0; j < N_STEPS; j++) {
        for (long k = 0;; k++) {
            pol_t p;
            pol_create(&p, chunk);
            memset(truth, 0, sizeof(truth));
            for (int s = 0; s < j; s++)
                assert_int_equal(run_step(&p, s), GMUX_OK);
            bool hit = run_step_unsent(&p, j, k);
            check(&p);
            for (int s = j; s < N_STEPS; s++) {
                assert_int_equal(run_step(&p, s), GMUX_OK);
                check(&p);
            }
            pol_destroy(&p);
            if (!hit)
                break;
        }
    }
    assert_true(n_handed >= N_STEPS); /* every step handed orders back */
}

static void test_opt_unsent_nomem(void **state)
{
    (void)state;
    sweep_unsent(0);
}

static void test_chunk_unsent_nomem(void **state)
{
    (void)state;
    sweep_unsent(1);
}

static void test_opt_failed_switch(void **state)
{
    (void)state;
    sweep(0);
}

static void test_chunk_failed_switch(void **state)
{
    (void)state;
    sweep(1);
}

/* Through the arbiter: a grant whose plan failed (allocation k of it) sends
 * no order, and the next grant plans from what is really resident (it evicts
 * the first task's chunks to make room, instead of counting them gone).
 * Returns whether allocation k was reached. */
static bool arbiter_case(int chunk, long k)
{
    init_sets();
    memset(truth, 0, sizeof(truth));
    pol_t p;
    pol_create(&p, chunk);
    dmn_arbiter_t *arb = malloc(sizeof(*arb));
    assert_non_null(arb);
    dmn_arb_init(arb, 1000, 1000, p.pl, 0);
    dmn_share_params_t sp = {0, 0, 10}; /* sliced */
    dmn_arb_set_share(arb, &sp);
    int slot[3];
    for (int i = 1; i <= 2; i++) {
        dmn_msg_register_t r = {1, DMN_CLASS_BATCH, 0, 0, 0, "t"};
        slot[i] = dmn_arb_add(arb, &r, 0);
        assert_true(slot[i] >= 0);
    }
    /* task ids are 1 and 2, as in sets[] */
    uint8_t buf[DMN_PROTO_HDR_SIZE + 16 + NC * DMN_RANGE_SIZE];
    dmn_msg_t m;
    for (int i = 1; i <= 2; i++) {
        dmn_range_t r[NC];
        for (int c = 0; c < NC; c++)
            r[c] = sets[i][0][c];
        size_t n = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PENDING, 1, 0, r, NC);
        assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
        assert_int_equal(dmn_arb_pending(arb, slot[i], 1, &m.u.ranges, 0), GMUX_OK);
        if (i == 2)
            break;
        dmn_arb_action_t a;
        assert_int_equal(dmn_arb_decide(arb, 1, &a), GMUX_OK);
        assert_int_equal(a.grant, slot[1]);
        apply(a.plan);
        dmn_arb_idle(arb, slot[1], 2);
    }
    check(&p);
    /* Task 2's grant: 6 + 6 > 10, so its plan evicts. */
    dmn_arb_action_t a;
    arm(k);
    gmux_status_t rc = dmn_arb_decide(arb, 3, &a);
    bool hit = failed;
    fail_at = -1;
    assert_int_equal(a.grant, slot[2]);
    if (rc != GMUX_OK) {
        assert_true(hit);
        assert_int_equal(a.plan->n, 0);
    } else {
        apply(a.plan);
    }
    check(&p); /* failed: task 1 keeps its 6 chunks in the model */
    /* Task 2 goes idle and comes back: this plan must make room itself. */
    dmn_arb_idle(arb, slot[2], 4);
    assert_int_equal(dmn_arb_pending(arb, slot[2], 1, &m.u.ranges, 5), GMUX_OK);
    assert_int_equal(dmn_arb_decide(arb, 6, &a), GMUX_OK);
    assert_int_equal(a.grant, slot[2]);
    apply(a.plan);
    check(&p);
    assert_int_equal(p.resident(p.obj, 2), NC * CH);
    dmn_arb_fini(arb);
    free(arb);
    pol_destroy(&p);
    return hit;
}

static void test_arbiter_failed_grant(void **state)
{
    (void)state;
    for (int chunk = 0; chunk <= 1; chunk++) {
        long k = 0;
        while (arbiter_case(chunk, k))
            k++;
        assert_true(k > 2);
    }
}

/* A PENDING whose ranges cannot be copied (the arbiter's allocation fails)
 * still asks for the turn: the task keeps the ranges it had and is granted
 * in its order, instead of staying idle (and waiting for nothing). */
static void test_arbiter_pending_nomem(void **state)
{
    (void)state;
    init_sets();
    pol_t p;
    pol_create(&p, 0);
    dmn_arbiter_t *arb = malloc(sizeof(*arb));
    assert_non_null(arb);
    dmn_arb_init(arb, 1000, 1000, p.pl, 0);
    dmn_share_params_t sp = {0, 0, 10}; /* sliced */
    dmn_arb_set_share(arb, &sp);
    int slot[3];
    uint8_t buf[DMN_PROTO_HDR_SIZE + 16 + NC * DMN_RANGE_SIZE];
    dmn_msg_t m[3];
    for (int i = 1; i <= 2; i++) {
        dmn_msg_register_t r = {1, DMN_CLASS_BATCH, 0, 0, 0, "t"};
        slot[i] = dmn_arb_add(arb, &r, 0);
        assert_true(slot[i] >= 0);
        size_t n = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PENDING, 1, 0, sets[i][0],
                                           i == 1 ? NC : 2);
        assert_int_equal(dmn_proto_decode(buf, n, &m[i]), GMUX_OK);
        assert_int_equal(dmn_arb_pending(arb, slot[i], 1, &m[i].u.ranges, 0), GMUX_OK);
    }
    dmn_arb_idle(arb, slot[2], 1);
    /* Task 2 asks again with more ranges: no room for them. */
    size_t n = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PENDING, 1, 0, sets[2][0], NC);
    assert_int_equal(dmn_proto_decode(buf, n, &m[2]), GMUX_OK);
    uint64_t gen = arb->tasks[slot[2]].ranges_gen;
    arm(0);
    assert_int_equal(dmn_arb_pending(arb, slot[2], 3, &m[2].u.ranges, 2), GMUX_ERR_NOMEM);
    assert_true(failed);
    fail_at = -1;
    const dmn_task_t *t = &arb->tasks[slot[2]];
    assert_int_equal(t->state, DMN_STATE_PENDING);
    assert_int_equal(t->n_pending, 3);
    assert_int_equal(t->n_ranges, 2); /* the ranges it had, unchanged */
    assert_int_equal(t->ranges[1].base, sets[2][0][1].base);
    assert_int_equal(t->ws_bytes, 2 * CH);
    assert_int_equal(t->ranges_gen, gen);
    dmn_arb_action_t a;
    assert_int_equal(dmn_arb_decide(arb, 3, &a), GMUX_OK);
    assert_int_equal(a.grant, slot[1]);
    dmn_arb_idle(arb, slot[1], 4);
    assert_int_equal(dmn_arb_decide(arb, 5, &a), GMUX_OK);
    assert_int_equal(a.grant, slot[2]);
    dmn_arb_fini(arb);
    free(arb);
    pol_destroy(&p);
}

/* The victims' merge on its own (chunk_victims.h): a take that fails (any of
 * its allocations, or before_take) leaves the victims and every list as they
 * were, and the same take done again gives what it gives with no failure. */
#define CV_SH   12
#define CV_RUNS 20
enum { CV_N = 5 };

static int bt_fail_at = -1, bt_calls;

static gmux_status_t cv_before(void *ctx, const dmn_cv_src_t *src)
{
    (void)ctx;
    (void)src;
    return bt_calls++ == bt_fail_at ? GMUX_ERR_NOMEM : GMUX_OK;
}

static int cv_seg_cmp(const void *a, const void *b)
{
    const dmn_seg_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* List l: CV_RUNS disjoint runs of 1..3 chunks; inside ones ranked. */
static uint64_t cv_list(dmn_runs_t *r, int l, int inside)
{
    uint64_t n = 0;
    r->n = 0;
    for (uint64_t i = 0; i < CV_RUNS; i++) {
        uint64_t lo = ((uint64_t)(l + 1) << 32) + 4 * i * CH, len = 1 + (i * 7 + l) % 3;
        dmn_seg_t g = {lo, lo + len * CH, 0, DMN_RUNS_NONE, 0};
        if (inside) {
            g.wlo = lo;
            g.wrank = (i * 5 + l) % 16;
            g.key = dmn_cv_rank(&g, g.hi - CH, CV_SH);
        }
        assert_int_equal(dmn_runs_push(r, g), GMUX_OK);
        n += len;
    }
    qsort(r->v, r->n, sizeof(*r->v), cv_seg_cmp);
    return n;
}

/* Task 1 (turn 3): outside and inside (whole); task 2 (turn 1): outside and
 * inside; task 3 idle. need: all but part of task 2's inside list, so that
 * every way of taking is used. */
static uint64_t cv_setup(dmn_cv_t *cv, dmn_runs_t *lists)
{
    static const struct {
        uint32_t task, turn;
        int kind;
    } src[CV_N] = {{1, 3, DMN_CV_OUT},
                   {1, 3, DMN_CV_IN},
                   {2, 1, DMN_CV_OUT},
                   {2, 1, DMN_CV_IN},
                   {3, 0, DMN_CV_RES}};
    uint64_t all = 0, last = 0;
    cv->n_srcs = 0;
    for (int l = 0; l < CV_N; l++) {
        last = cv_list(&lists[l], l, src[l].kind == DMN_CV_IN);
        all += last;
        dmn_cv_add(cv, &lists[l], src[l].task, src[l].kind, src[l].turn, last);
    }
    return all - last / 2 - 1;
}

static void cv_same(const dmn_runs_t *a, const dmn_runs_t *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->v[i].lo, b->v[i].lo);
        assert_int_equal(a->v[i].hi, b->v[i].hi);
        assert_int_equal(a->v[i].key, b->v[i].key);
        assert_int_equal(a->v[i].wrank, b->v[i].wrank);
        assert_int_equal(a->v[i].wlo, b->v[i].wlo);
    }
}

static void cv_copy(dmn_runs_t *to, const dmn_runs_t *from)
{
    to->n = 0;
    assert_int_equal(dmn_runs_reserve(to, from->n), GMUX_OK);
    if (from->n)
        memcpy(to->v, from->v, from->n * sizeof(*from->v));
    to->n = from->n;
}

/* One take with allocation k failing (k < 0: none) or before_take call b
 * failing; returns whether it failed. ref: what a take with no failure
 * leaves (vict, then the lists), compared when given. */
static bool cv_case(long k, int b, dmn_runs_t *ref)
{
    dmn_cv_t cv;
    memset(&cv, 0, sizeof(cv));
    cv.chunk = CH;
    cv.shift = CV_SH;
    cv.before_take = cv_before;
    dmn_runs_t lists[CV_N] = {{0}}, saved[CV_N] = {{0}}, vict = {0}, vsaved = {0};
    uint64_t need = cv_setup(&cv, lists);
    for (int l = 0; l < CV_N; l++)
        cv_copy(&saved[l], &lists[l]);
    for (int i = 0; i < 2; i++) /* victims already listed, and no room to spare */
        assert_int_equal(dmn_runs_push(&vict, (dmn_seg_t){i * CH, (i + 1) * CH, 0, 0, 9}), GMUX_OK);
    cv_copy(&vsaved, &vict);
    vict.cap = vict.n;
    arm(k);
    bt_calls = 0;
    bt_fail_at = b;
    gmux_status_t st = dmn_cv_take(&cv, need, &vict);
    bool hit = failed || (b >= 0 && bt_calls > b);
    fail_at = bt_fail_at = -1;
    if (hit) {
        assert_int_equal(st, GMUX_ERR_NOMEM);
        cv_same(&vict, &vsaved);
        for (int l = 0; l < CV_N; l++)
            cv_same(&lists[l], &saved[l]);
        dmn_cv_settle(&cv);
        for (int l = 0; l < CV_N; l++)
            cv_same(&lists[l], &saved[l]);
        cv_setup(&cv, lists); /* again, from where it was left */
        for (int l = 0; l < CV_N; l++)
            cv_same(&lists[l], &saved[l]);
        st = dmn_cv_take(&cv, need, &vict);
    }
    assert_int_equal(st, GMUX_OK);
    dmn_cv_settle(&cv);
    if (ref) {
        cv_same(&vict, &ref[0]);
        for (int l = 0; l < CV_N; l++)
            cv_same(&lists[l], &ref[1 + l]);
    }
    for (int l = 0; l < CV_N; l++) {
        dmn_runs_free(&saved[l]);
        dmn_runs_free(&lists[l]);
    }
    dmn_runs_free(&vsaved);
    dmn_runs_free(&vict);
    dmn_cv_fini(&cv);
    return hit;
}

static void test_victims_all_or_nothing(void **state)
{
    (void)state;
    /* The reference: a take with no failure (vict, then the lists). */
    dmn_runs_t ref[1 + CV_N] = {{0}};
    {
        dmn_cv_t cv;
        memset(&cv, 0, sizeof(cv));
        cv.chunk = CH;
        cv.shift = CV_SH;
        dmn_runs_t lists[CV_N] = {{0}};
        uint64_t need = cv_setup(&cv, lists);
        for (int i = 0; i < 2; i++)
            assert_int_equal(dmn_runs_push(&ref[0], (dmn_seg_t){i * CH, (i + 1) * CH, 0, 0, 9}),
                             GMUX_OK);
        assert_int_equal(dmn_cv_take(&cv, need, &ref[0]), GMUX_OK);
        dmn_cv_settle(&cv);
        assert_true(ref[0].n > 2 * CV_RUNS); /* victims of every source */
        for (int l = 0; l < CV_N; l++) {
            cv_copy(&ref[1 + l], &lists[l]);
            dmn_runs_free(&lists[l]);
        }
        assert_int_equal(ref[1 + 1].n, 0); /* task 1's inside list, taken whole */
        assert_true(ref[1 + 3].n > 0);     /* task 2's, in part */
        dmn_cv_fini(&cv);
    }
    long k = 0;
    while (cv_case(k, -1, ref))
        k++;
    assert_true(k > 3); /* the heap, the victims' growth, a whole take */
    int b = 0;
    while (cv_case(-1, b, ref))
        b++;
    assert_int_equal(b, CV_N);
    for (int l = 0; l < 1 + CV_N; l++)
        dmn_runs_free(&ref[l]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opt_failed_switch),     cmocka_unit_test(test_chunk_failed_switch),
        cmocka_unit_test(test_arbiter_failed_grant),  cmocka_unit_test(test_victims_all_or_nothing),
        cmocka_unit_test(test_arbiter_pending_nomem), cmocka_unit_test(test_opt_unsent_nomem),
        cmocka_unit_test(test_chunk_unsent_nomem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
