/*
 * Launch gating end to end, the proactive policy (GMUX_POLICY=proactive)
 * after the daemon evicted the whole working set (harness: gate_harness.h,
 * scripted daemons: gate_script.h; orders that cross: test_gate_order.c).
 * A scripted daemon grants the program turn 1, evicts every range it
 * announced while it is paused, and grants its next wait:
 *
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
#include <unistd.h>

#include <cmocka.h>

#include "daemon/proto.h"
#include "gate_harness.h"
#include "gate_script.h"

static char go[256];
/* 20 kernels, a pause at half of them until `go` exists; 1 MiB more of
 * working set */
static gh_spec_t spec = {"batch", "9", "20", "1000", "0", "1", go, NULL, NULL};

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
    if (!fill) /* grants the launching thread's PENDING, the second */
        return gs_grant_next(c.task, c.buf, 9, 4) != 0 ? 30
                                                       : gs_finish(c.task, c.buf, c.fds, c.nfd);
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

/* Runs script (an eviction of the whole working set, evict_ws_then_grant)
 * under GMUX_POLICY=proactive; the kernels' buffer (the first launch's
 * prefetch, the policy's claim) in *base_p, *len_p, and when the daemon's
 * eviction last moved it to the host in *evicted_p. */
static gh_out_t *run_evict_ws(int (*script)(int), unsigned long long *base_p,
                              unsigned long long *len_p, unsigned long long *evicted_p)
{
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    unlink(go);
    unlink(gh_path("out0.paused"));
    gh_out_t *o = gs_run_logged(&spec, script, "proactive");
    assert_int_equal(o->n, 20);
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
        GH_TEST(test_evicted_prefetched_again),
        GH_TEST(test_filled_not_prefetched_again),
        GH_TEST(test_unfilled_left_to_paging),
        GH_TEST(test_lost_fill_prefetched_under_plan),
    };
    /* clang-format on */
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
