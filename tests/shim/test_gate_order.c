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
 * - An eviction of the whole working set and a grant with no fill, under
 *   GMUX_POLICY=proactive: the next launch must prefetch the kernels'
 *   buffer again, ordered before it. The shim took it for resident (claimed
 *   in this generation) and the launch ran on memory on the host.
 * - The same eviction, and a grant whose FILL brings the whole working set
 *   back: the launch after it must not prefetch the buffer again (the
 *   FILL's prefetch, waited for at the grant, is the only one). The shim
 *   prefetched it a second time.
 * - The same eviction, and a grant with the flag PLANNED (protocol v8) whose
 *   FILL brings back only the 1 MiB allocation: the kernels' buffer is left
 *   to demand paging by the placement, and no launch may prefetch it. The
 *   shim prefetched it whole again (v7: no flag to tell it).
 * - The same with the flag and a FILL that overflows the shim's store, the
 *   buffer's range given up: the buffer must be prefetched again, ordered
 *   before the launch, as after a grant with no FILL.
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

#define WS_MAX    64u   /* ranges of the working set the script below evicts */
#define FILL_FULL 1024u /* small fills that take the shim's whole store (SHIM_GATE_PLAN_CAP) */

/* An eviction of the whole working set: once the program paused holding
 * turn 1, sends in one write an eviction of every range its first PENDING
 * announced (grant 2) and REVOKE 1; after the RELEASE lets the program go
 * on and grants its next wait (grant 4), with no orders (fill 0: no FILL
 * brings the memory back, as when a fill was given up, store full or no
 * context, the wait timed out or the daemon went away) or with a FILL of
 * every range of that PENDING in the same write (fill 1: as swap, opt and
 * chunk fill what they evicted from a task at its next switch); with a FILL
 * of the largest range only and the flag PLANNED (fill 2: as opt and chunk
 * fill what fits their capacity, the kernels' buffer left to demand
 * paging); or with the flag and a FILL of FILL_FULL small ranges inside the
 * largest one and then every other range, which the shim's full store gives
 * up (fill 3: the buffer's fill is lost). */
static int evict_ws_then_grant(int ready, int fill)
{
    static gs_conn_t c;
    static dmn_range_t ws[WS_MAX], full[FILL_FULL + WS_MAX];
    dmn_msg_t m;
    c.nfd = 0;
    c.task = gs_accept_big(ready, c.buf, c.fds, &c.nfd, &m, &c.big);
    if (c.task < 0)
        return -c.task;
    uint32_t n = m.u.ranges.n_ranges < WS_MAX ? m.u.ranges.n_ranges : WS_MAX;
    for (uint32_t i = 0; i < n; i++) /* read before c.buf is written again */
        ws[i] = dmn_proto_range_at(&m.u.ranges, i);
    if (gs_grant(c.task, c.buf, 2, 1, m.u.ranges.seq) != 0 || gs_wait_file("out0.paused") != 0)
        return 15;
    gs_batch_plan(&c.w, 3, DMN_PLAN_EVICT, 2, ws, n);
    gs_batch_revoke(&c.w, 4, 1);
    if (gs_conn_released(&c) != 0)
        return 16;
    gh_touch("go");
    if (!fill)
        return grant_and_finish(&c);
    if (gs_next_pending(c.task, c.buf, &m) != 0)
        return 17;
    uint32_t nf = 0;
    for (uint32_t i = 0; fill == 3 && i < FILL_FULL; i++)
        full[nf++] = (dmn_range_t){c.big.base + 512 * i, 256};
    for (uint32_t i = 0; fill == 3 && i < n; i++)
        if (ws[i].base != c.big.base)
            full[nf++] = ws[i];
    if (fill == 2)
        gs_batch_plan(&c.w, 9, DMN_PLAN_FILL, 4, &c.big, 1);
    else if (fill == 3)
        gs_batch_plan(&c.w, 9, DMN_PLAN_FILL, 4, full, nf);
    else
        gs_batch_plan(&c.w, 9, DMN_PLAN_FILL, 4, ws, n);
    gs_batch_grant_flags(&c.w, 10, 4, m.u.ranges.seq, fill >= 2 ? DMN_GRANT_PLANNED : 0);
    return gs_conn_send_finish(&c);
}

static int scripted_evict_no_fill(int ready)
{
    return evict_ws_then_grant(ready, 0);
}

static int scripted_evict_then_fill(int ready)
{
    return evict_ws_then_grant(ready, 1);
}

static int scripted_evict_fill_part(int ready)
{
    return evict_ws_then_grant(ready, 2);
}

static int scripted_evict_fill_lost(int ready)
{
    return evict_ws_then_grant(ready, 3);
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

/* Runs script (an eviction of the whole working set, evict_ws_then_grant)
 * under GMUX_POLICY=proactive; the kernels' buffer (the first launch's
 * prefetch, the policy's claim) in *base_p, *len_p, and when the daemon's
 * eviction last moved it to the host in *evicted_p. */
static gh_out_t *run_evict_ws(int (*script)(int), unsigned long long *base_p,
                              unsigned long long *len_p, unsigned long long *evicted_p)
{
    policy = "proactive";
    gh_out_t *o = run_script(script, "0");
    policy = "demand";
    assert_true(o->nd > 0);
    unsigned long long base = o->d[0][1], evicted_ns = 0;
    for (size_t i = 0; i < o->nh; i++)
        if (o->h[i][1] <= base && base < o->h[i][1] + o->h[i][2] && o->h[i][0] > evicted_ns)
            evicted_ns = o->h[i][0];
    assert_true(evicted_ns > 0); /* the daemon's eviction moved it to the host */
    *base_p = base;
    *len_p = o->d[0][2];
    *evicted_p = evicted_ns;
    return o;
}

/* The kernels' buffer, evicted by the daemon, and a grant that does not
 * bring it back: no FILL (the shim's wait timed out, or the daemon went
 * away; a grant of "swap" or "none"), or (script fill 3) a FILL of it the
 * shim gave up (store full) under a grant that says the placement planned
 * the turn: the next launch must prefetch it again, ordered before it. */
static void check_prefetched_again(int (*script)(int))
{
    unsigned long long base, len, evicted_ns;
    gh_out_t *o = run_evict_ws(script, &base, &len, &evicted_ns);
    free(o);
    /* from the output file: gh_out_t keeps the first 64 prefetches only */
    FILE *f = fopen(gh_path("out0"), "r");
    assert_non_null(f);
    char line[256];
    unsigned long long ns, b, l;
    int before = -1, found = 0;
    while (!found && fgets(line, sizeof(line), f))
        found = sscanf(line, "D %llu %llu %llu %d", &ns, &b, &l, &before) == 4 && ns > evicted_ns &&
                b == base && l == len;
    fclose(f);
    print_message("  buffer %#llx + %llu evicted at %llu, prefetched again: %s\n", base, len,
                  evicted_ns, found ? "yes" : "no");
    assert_true(found);          /* before the next launch, which uses it */
    assert_int_equal(before, 1); /* and ordered before it */
}

static void test_evicted_prefetched_again(void **state)
{
    (void)state;
    check_prefetched_again(scripted_evict_no_fill);
}

/* Under DMN_GRANT_PLANNED, a fill the shim lost is still prefetched. */
static void test_lost_fill_prefetched_under_plan(void **state)
{
    (void)state;
    check_prefetched_again(scripted_evict_fill_lost);
}

/* Runs script (run_evict_ws) and counts the prefetches to the device that
 * touch the kernels' buffer after the daemon's eviction of it. */
static size_t prefetched_after(int (*script)(int))
{
    unsigned long long base, len, evicted_ns;
    gh_out_t *o = run_evict_ws(script, &base, &len, &evicted_ns);
    size_t after = 0;
    for (size_t i = 0; i < o->nd; i++)
        if (o->d[i][0] > evicted_ns && o->d[i][1] < base + len && base < o->d[i][1] + o->d[i][2])
            after++;
    print_message("  buffer %#llx + %llu evicted at %llu, prefetched %zu times after\n", base, len,
                  evicted_ns, after);
    free(o);
    return after;
}

/* The kernels' buffer, evicted by the daemon, is brought back whole by the
 * FILL of the next grant, which the gate waits for before the launch: the
 * launch must not prefetch it again (the FILL's prefetch is the only one).
 * Until 2026-12-03 the eviction's mark (not prefetched) stood, and the
 * launch's policy prefetched the buffer a second time. */
static void test_filled_not_prefetched_again(void **state)
{
    (void)state;
    assert_int_equal(prefetched_after(scripted_evict_then_fill), 1); /* the FILL's only */
}

/* The kernels' buffer, evicted by the daemon, is left out of the FILL of
 * the next grant on purpose, which says so (DMN_GRANT_PLANNED: the
 * placement filled what fits its capacity and leaves the rest to demand
 * paging): the launch must not prefetch it whole again, moving in more than
 * the plan left room for. Until 2026-12-03 (protocol v7, no flag) it did. */
static void test_unfilled_left_to_paging(void **state)
{
    (void)state;
    assert_int_equal(prefetched_after(scripted_evict_fill_part), 0); /* left to demand paging */
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
        GH_TEST(test_evicted_prefetched_again),
        GH_TEST(test_filled_not_prefetched_again),
        GH_TEST(test_unfilled_left_to_paging),
        GH_TEST(test_lost_fill_prefetched_under_plan),
    };
    /* clang-format on */
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
