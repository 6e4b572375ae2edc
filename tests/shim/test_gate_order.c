/*
 * Launch gating end to end, orders of the same range that cross (harness:
 * gate_harness.h, scripted daemons: gate_script.h). A scripted daemon drives
 * the program through the cases:
 *
 * - An eviction already waiting in the socket when the launching thread
 *   applies a stored fill ahead: while the program is out of the gate, the
 *   daemon sends it a fill ahead (12 KiB at ORDER_X, grant 2), which the
 *   watcher thread stores; the program's next launch stalls in the driver
 *   double inside the gate (gate_prog CAPTURE 7), holding the gate's lock
 *   so the watcher reads nothing, and meanwhile the daemon sends an eviction
 *   of the middle 4 KiB (grant 3). That memory is another task's: the
 *   middle must never be prefetched. The shim prefetched the whole fill
 *   ahead and evicted the middle right after, reading the socket only in its
 *   wait for the turn.
 * - An eviction deferred by a graph capture, then a fill ahead of part of
 *   that range: another thread of the program captures a graph all along
 *   (gate_prog CAPTURE 3), so the evictions that reach the program without
 *   the turn wait for its grant. The daemon sends an eviction of 12 KiB at
 *   ORDER_X (grant 2) and then a fill ahead of its middle 4 KiB (grant 3):
 *   the middle is the task's again and must stay on the device. The shim
 *   prefetched it at its next wait and then, at its grant, carried out the
 *   deferred eviction of all 12 KiB, undoing the fill ahead.
 * - A fill ahead and, later in the same read, an eviction of part of it,
 *   reaching the launching thread in its wait for the turn: the program's
 *   next launch applies a fill ahead the watcher stored (the page at
 *   ORDER_X) and stalls in its prefetch (gate_prog CAPTURE 8), holding the
 *   gate's lock; meanwhile the daemon sends in one write a fill ahead of two
 *   pages at ORDER_X + 2 pages and one at ORDER_X + 5 pages, and an eviction
 *   of the 3 pages at ORDER_X + 3 pages, which the thread reads in one go
 *   once in its wait. The evicted pages are another task's: none may be
 *   prefetched. The shim applied the fill ahead as soon as its message was
 *   read, before the eviction behind it in the same read.
 * - A PLAN larger than the store (2000 fill ranges, 1024 kept) is reported
 *   once, with its size and what was kept. The warning came once per batch
 *   of 256 ranges the client hands over (four times, with the batch's size).
 * - An eviction of more ranges than the store holds (2000 of 256 bytes, 256
 *   apart), held back by a graph capture another thread of the program
 *   keeps open all along (gate_prog CAPTURE 3) until the program's next
 *   grant: every byte of it must be evicted in the end (a lost eviction
 *   leaves gmuxd counting as free memory the task still holds). The shim
 *   kept the first 1024 ranges and dropped the rest.
 * - A store of evictions that is full (1024 ranges, held back the same way)
 *   and a fill ahead of the middle of one of them: the eviction cannot be
 *   cut in two (no room for the second piece), so it is kept whole and
 *   carried out at the grant. The shim prefetched the fill ahead at its wait
 *   and then evicted it at the grant; now the fill ahead is trimmed by the
 *   evictions still stored, and every evicted byte is still evicted.
 * - An eviction of 5 ranges held back the same way until the grant, tried
 *   again at every round of the watcher: the counter evict_deferred counts
 *   each of the 5 ranges once. It counted every try.
 *
 * The proactive policy after an eviction of the whole working set: test_gate_refill.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "daemon/proto.h"
#include "gate_harness.h"
#include "gate_script.h"

static char go[256];
/* 20 kernels, a pause at half of them until `go` exists; 1 MiB more of
 * working set, so the orders below fall inside a managed allocation */
static gh_spec_t spec = {"batch", "9", "20", "1000", "0", "1", go, NULL, NULL};

#define ORDER_X 0x10000u /* offset of the orders in the largest range of the PENDING */
#define PAGE    4096u

/* After the RELEASE of grant 1: reads the watcher's PENDING and the
 * launching thread's, grants the second (grant 4, no orders) and reads
 * until the program ends. 0, or the step that failed. */
static int grant_and_finish(gs_conn_t *c)
{
    if (gs_grant_next(c->task, c->buf, 9, 4) != 0)
        return 30;
    return gs_finish(c->task, c->buf, c->fds, c->nfd);
}

/* The eviction waiting in the socket: once the program paused holding turn
 * 1, sends in one write the fill ahead (grant 2) and REVOKE 1; after the
 * RELEASE (the watcher stored the fill) lets the program go on, waits until
 * its launching thread stalled inside the gate, sends the eviction of the
 * middle (grant 3), and lets it go on. */
static int scripted_evict_waiting(int ready)
{
    static gs_conn_t c;
    int rc = gs_conn_paused(ready, &c);
    if (rc != 0)
        return rc;
    dmn_range_t ahead = {c.big.base + ORDER_X, 3 * PAGE},
                evict = {c.big.base + ORDER_X + PAGE, PAGE};
    gs_batch_plan(&c.w, 3, DMN_PLAN_AHEAD, 2, &ahead, 1);
    gs_batch_revoke(&c.w, 4, 1);
    if (gs_conn_released(&c) != 0)
        return 16;
    gh_touch("go");
    if (gs_wait_file("out0.stalled") != 0)
        return 17;
    gs_batch_plan(&c.w, 5, DMN_PLAN_EVICT, 3, &evict, 1);
    if (gs_batch_send(c.task, &c.w) != 0)
        return 18;
    gh_touch("out0.resume");
    return grant_and_finish(&c);
}

/* The eviction deferred: once the program paused holding turn 1, sends in
 * one write the eviction of 12 KiB (grant 2), the fill ahead of its middle
 * (grant 3) and REVOKE 1; after the RELEASE lets the program go on. */
static int scripted_evict_deferred(int ready)
{
    static gs_conn_t c;
    int rc = gs_conn_paused(ready, &c);
    if (rc != 0)
        return rc;
    dmn_range_t evict = {c.big.base + ORDER_X, 3 * PAGE},
                ahead = {c.big.base + ORDER_X + PAGE, PAGE};
    gs_batch_plan(&c.w, 3, DMN_PLAN_EVICT, 2, &evict, 1);
    gs_batch_plan(&c.w, 4, DMN_PLAN_AHEAD, 3, &ahead, 1);
    gs_batch_revoke(&c.w, 5, 1);
    if (gs_conn_released(&c) != 0)
        return 16;
    gh_touch("go");
    return grant_and_finish(&c);
}

/* The fill ahead and the eviction in one read: once the program paused
 * holding turn 1, sends in one write a fill ahead of the page at ORDER_X
 * (grant 2) and REVOKE 1; after the RELEASE (the watcher stored the fill)
 * lets the program go on, waits until its launching thread stalled in that
 * fill's prefetch, sends in one write the fill ahead and the eviction that
 * cross (grant 3), and lets it go on. */
static int scripted_ahead_then_evict(int ready)
{
    static gs_conn_t c;
    int rc = gs_conn_paused(ready, &c);
    if (rc != 0)
        return rc;
    uint64_t x = c.big.base + ORDER_X;
    dmn_range_t first = {x, PAGE}, ahead[2] = {{x + 2 * PAGE, 2 * PAGE}, {x + 5 * PAGE, PAGE}},
                evict = {x + 3 * PAGE, 3 * PAGE};
    gs_batch_plan(&c.w, 3, DMN_PLAN_AHEAD, 2, &first, 1);
    gs_batch_revoke(&c.w, 4, 1);
    if (gs_conn_released(&c) != 0)
        return 16;
    gh_touch("go");
    if (gs_wait_file("out0.stalled") != 0)
        return 17;
    gs_batch_plan(&c.w, 5, DMN_PLAN_AHEAD, 3, ahead, 2);
    gs_batch_plan(&c.w, 6, DMN_PLAN_EVICT, 3, &evict, 1);
    if (gs_batch_send(c.task, &c.w) != 0)
        return 18;
    gh_touch("out0.resume");
    return grant_and_finish(&c);
}

#define BIG_PLAN 2000u /* fill ranges in one PLAN: more than the shim's store (1024) */

/* A PLAN that overflows the store: once the program paused holding turn 1,
 * sends in one write a FILL of BIG_PLAN ranges (grant 2, never used) and
 * REVOKE 1; after the RELEASE lets the program go on. */
static int scripted_big_plan(int ready)
{
    static gs_conn_t c;
    static dmn_range_t fills[BIG_PLAN];
    int rc = gs_conn_paused(ready, &c);
    if (rc != 0)
        return rc;
    for (uint32_t i = 0; i < BIG_PLAN; i++)
        fills[i] = (dmn_range_t){c.big.base + i * 512u, 256};
    gs_batch_plan(&c.w, 3, DMN_PLAN_FILL, 2, fills, BIG_PLAN);
    if (gs_batch_send(c.task, &c.w) != 0)
        return 16;
    gs_batch_revoke(&c.w, 4, 1);
    if (gs_conn_released(&c) != 0)
        return 17;
    gh_touch("go");
    return grant_and_finish(&c);
}

#define FULL_EVICT 2000u /* evict ranges in one PLAN: more than the shim's store */
#define STORE_CAP  1024u /* the shim's store of orders of one kind */

/* The i-th evict range of the scripts below, inside the largest allocation. */
static dmn_range_t evict_range(const dmn_range_t *big, uint32_t i)
{
    return (dmn_range_t){big->base + i * 512u, 256};
}

/* An eviction of n ranges (grant 2), optionally followed by a fill ahead
 * (grant 3): once the program paused holding turn 1, sends them and REVOKE
 * 1 in one write; after the RELEASE lets the program go on. */
static int scripted_evict_many(int ready, uint32_t n, const dmn_range_t *ahead)
{
    static gs_conn_t c;
    static dmn_range_t evs[FULL_EVICT];
    int rc = gs_conn_paused(ready, &c);
    if (rc != 0)
        return rc;
    for (uint32_t i = 0; i < n; i++)
        evs[i] = evict_range(&c.big, i);
    gs_batch_plan(&c.w, 3, DMN_PLAN_EVICT, 2, evs, n);
    if (ahead) {
        dmn_range_t a = {c.big.base + ahead->base, ahead->len};
        gs_batch_plan(&c.w, 4, DMN_PLAN_AHEAD, 3, &a, 1);
    }
    gs_batch_revoke(&c.w, 5, 1);
    if (gs_conn_released(&c) != 0)
        return 17;
    gh_touch("go");
    return grant_and_finish(&c);
}

static int scripted_full_evict(int ready)
{
    return scripted_evict_many(ready, FULL_EVICT, NULL);
}

/* The middle of the first evict range, relative to the largest allocation. */
static const dmn_range_t ahead_in_first = {64, 128};

static int scripted_full_store_then_ahead(int ready)
{
    return scripted_evict_many(ready, STORE_CAP, &ahead_in_first);
}

#define FEW_EVICT 5u /* evict ranges, put off until the grant */

static int scripted_few_evict(int ready)
{
    return scripted_evict_many(ready, FEW_EVICT, NULL);
}

/* The shim's policy in run_script: demand, no prefetch of its own (only
 * orders), unless a test says otherwise. */
static const char *policy = "demand";

/* Runs script against program 0 with the given CAPTURE and reads its output;
 * the program's log goes to gh_dir/log0. */
static gh_out_t *run_script(int (*script)(int), const char *capture)
{
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    const char *marks[] = {"go", "out0.paused", "out0.stalled", "out0.resume"};
    for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
        unlink(gh_path(marks[i]));
    spec.capture = capture;
    gh_out_t *o = gs_run_logged(&spec, script, policy);
    assert_int_equal(o->n, 20);
    return o;
}

/* Whether a move of rows (ns, base, len, ...; `stride` values each) at or
 * after `from` covers every page of [lo, hi); any: whether one touches it. */
static int moved(const unsigned long long *rows, size_t n, size_t stride, unsigned long long from,
                 unsigned long long lo, unsigned long long hi, int any)
{
    for (unsigned long long p = lo; p < hi; p += PAGE) {
        size_t i = 0;
        while (i < n && !(rows[i * stride] >= from && rows[i * stride + 1] <= p &&
                          p < rows[i * stride + 1] + rows[i * stride + 2]))
            i++;
        if (any && i < n)
            return 1;
        if (!any && i == n)
            return 0;
    }
    return !any;
}

/* Every move of one direction ('D': to the device, 'H': to the host) in
 * program 0's output as base, len rows (gh_out_t keeps the first 64 only);
 * how many. */
static size_t read_moves(char want, unsigned long long (*rows)[2], size_t cap)
{
    FILE *f = fopen(gh_path("out0"), "r");
    assert_non_null(f);
    char line[256], kind;
    unsigned long long ns, base, len;
    size_t n = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, " %c %llu %llu %llu", &kind, &ns, &base, &len) == 4 && kind == want &&
            n < cap) {
            rows[n][0] = base;
            rows[n][1] = len;
            n++;
        }
    fclose(f);
    return n;
}

/* Whether the rows cover every byte of [lo, hi). */
static int covered(unsigned long long (*rows)[2], size_t n, unsigned long long lo,
                   unsigned long long hi)
{
    while (lo < hi) {
        unsigned long long next = lo;
        for (size_t i = 0; i < n; i++)
            if (rows[i][0] <= lo && lo < rows[i][0] + rows[i][1] && rows[i][0] + rows[i][1] > next)
                next = rows[i][0] + rows[i][1];
        if (next == lo)
            return 0;
        lo = next;
    }
    return 1;
}

/* Whether one of the rows touches [lo, hi). */
static int touched(unsigned long long (*rows)[2], size_t n, unsigned long long lo,
                   unsigned long long hi)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i][0] < hi && lo < rows[i][0] + rows[i][1])
            return 1;
    return 0;
}

static unsigned long long moves[4096][2];

/* The base of the largest allocation, seen from the evictions of the
 * scripts above: the lowest base evicted (their first range starts there). */
static unsigned long long lowest(unsigned long long (*rows)[2], size_t n)
{
    unsigned long long lo = ~0ull;
    for (size_t i = 0; i < n; i++)
        lo = rows[i][0] < lo ? rows[i][0] : lo;
    return lo;
}

static void test_full_evict_store_keeps_all(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_full_evict, "3");
    assert_true(o->evict_deferred > 0); /* the capture held them to the grant */
    free(o);
    size_t nh = read_moves('H', moves, sizeof(moves) / sizeof(moves[0]));
    print_message("  %zu evictions\n", nh);
    assert_true(nh > 0);
    unsigned long long base = lowest(moves, nh);
    dmn_range_t big = {base, 0};
    for (uint32_t i = 0; i < FULL_EVICT; i++) {
        dmn_range_t r = evict_range(&big, i);
        if (!covered(moves, nh, r.base, r.base + r.len))
            fail_msg("evict range %u (%#llx + %llu) not evicted", i, (unsigned long long)r.base,
                     (unsigned long long)r.len);
    }
}

static void test_full_evict_store_trims_ahead(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_full_store_then_ahead, "3");
    assert_true(o->evict_deferred > 0);
    assert_int_equal(o->evict_cancelled, 0); /* no room to cut: kept whole */
    free(o);
    size_t nh = read_moves('H', moves, sizeof(moves) / sizeof(moves[0]));
    assert_true(nh > 0);
    unsigned long long base = lowest(moves, nh);
    dmn_range_t big = {base, 0};
    for (uint32_t i = 0; i < STORE_CAP; i++) {
        dmn_range_t r = evict_range(&big, i);
        if (!covered(moves, nh, r.base, r.base + r.len))
            fail_msg("evict range %u not evicted", i);
    }
    /* the fill ahead lies inside an eviction carried out after it: it was
     * not prefetched, only to be evicted at the grant */
    size_t nd = read_moves('D', moves, sizeof(moves) / sizeof(moves[0]));
    assert_false(touched(moves, nd, base + ahead_in_first.base,
                         base + ahead_in_first.base + ahead_in_first.len));
}

static void test_deferred_evictions_counted_once(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_few_evict, "3");
    print_message("  evict_deferred %llu\n", o->evict_deferred);
    assert_int_equal(o->evict_deferred, FEW_EVICT);
    free(o);
    size_t nh = read_moves('H', moves, sizeof(moves) / sizeof(moves[0]));
    assert_true(nh > 0);
    dmn_range_t big = {lowest(moves, nh), 0};
    for (uint32_t i = 0; i < FEW_EVICT; i++) { /* carried out in the end, at the grant */
        dmn_range_t r = evict_range(&big, i);
        assert_true(covered(moves, nh, r.base, r.base + r.len));
    }
}

static void test_evict_waiting_cuts_ahead(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_evict_waiting, "7");
    /* the eviction, carried out on arrival (the task held no turn) */
    assert_int_equal(o->nh, 1);
    assert_int_equal(o->h[0][2], PAGE);
    unsigned long long mid = o->h[0][1], x = mid - PAGE;
    /* the middle never went to the device: it was another task's before
     * the fill ahead was applied */
    assert_false(moved(&o->d[0][0], o->nd, 3, 0, mid, mid + PAGE, 1));
    /* the rest of the fill ahead went */
    assert_true(moved(&o->d[0][0], o->nd, 3, 0, x, mid, 0));
    assert_true(moved(&o->d[0][0], o->nd, 3, 0, mid + PAGE, x + 3 * PAGE, 0));
    free(o);
}

static void test_fill_cancels_deferred_evict(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_evict_deferred, "3");
    /* the capture kept the eviction from being carried out on arrival, and
     * the fill ahead took its middle out */
    assert_true(o->evict_deferred > 0);
    assert_int_equal(o->evict_cancelled, 1);
    /* the middle went to the device (the fill ahead) and stayed there */
    assert_int_equal(o->nd, 1);
    assert_int_equal(o->d[0][2], PAGE);
    unsigned long long mid = o->d[0][1], x = mid - PAGE, t = o->d[0][0];
    assert_false(moved(&o->h[0][0], o->nh, 4, t, mid, mid + PAGE, 1));
    /* the rest of the eviction went */
    assert_true(moved(&o->h[0][0], o->nh, 4, 0, x, mid, 0));
    assert_true(moved(&o->h[0][0], o->nh, 4, 0, mid + PAGE, x + 3 * PAGE, 0));
    free(o);
}

static void test_evict_in_same_read_cuts_ahead(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_ahead_then_evict, "8");
    /* the eviction, carried out in the wait (the task held no turn) */
    assert_int_equal(o->nh, 1);
    assert_int_equal(o->h[0][2], 3 * PAGE);
    unsigned long long e = o->h[0][1], x = e - 3 * PAGE;
    /* the evicted pages never went to the device */
    assert_false(moved(&o->d[0][0], o->nd, 3, 0, e, e + 3 * PAGE, 1));
    /* the fill ahead the watcher stored, and what the eviction left of the other */
    assert_true(moved(&o->d[0][0], o->nd, 3, 0, x, x + PAGE, 0));
    assert_true(moved(&o->d[0][0], o->nd, 3, 0, x + 2 * PAGE, x + 3 * PAGE, 0));
    free(o);
}

static void test_big_plan_warned_once(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_big_plan, "0");
    /* equal ranges, in address order: the store keeps the first 1,024 */
    assert_int_equal(o->fill_dropped, BIG_PLAN - 1024);
    assert_int_equal(o->fill_dropped_bytes, (BIG_PLAN - 1024) * 256ull);
    free(o);
    FILE *f = fopen(gh_path("log0"), "r");
    assert_non_null(f);
    char line[512], want[128];
    snprintf(want, sizeof(want), "daemon plan of %u ranges: %u fill ranges given up", BIG_PLAN,
             BIG_PLAN - 1024);
    int warned = 0, whole = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strstr(line, "daemon plan of")) {
            print_message("  log: %s", line);
            warned++;
            whole += strstr(line, want) != NULL;
        }
    }
    fclose(f);
    assert_int_equal(warned, 1);
    assert_int_equal(whole, 1);
}

int main(void)
{
    gh_init();
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        GH_TEST(test_evict_waiting_cuts_ahead),
        GH_TEST(test_fill_cancels_deferred_evict),
        GH_TEST(test_evict_in_same_read_cuts_ahead),
        GH_TEST(test_big_plan_warned_once),
        GH_TEST(test_full_evict_store_keeps_all),
        GH_TEST(test_full_evict_store_trims_ahead),
        GH_TEST(test_deferred_evictions_counted_once),
    };
    /* clang-format on */
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
