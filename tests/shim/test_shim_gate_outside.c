/*
 * The pieces of a range that no range of a store covers
 * (shim_gate_ranges_outside, src/shim/gate_ranges.c: a fill ahead trimmed by
 * the evictions still stored), against a byte map; its precondition (a
 * coalesced store) asserted in checked builds.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gate_ranges_check.h"
#include "shim/gate_ranges.h"
#include "tproc.h"

static uint64_t got[8][2];
static int ngot;

static void collect(void *arg, dmn_range_t piece)
{
    (void)arg;
    got[ngot][0] = piece.base;
    got[ngot][1] = piece.len;
    ngot++;
}

static void test_outside_pieces(void **state)
{
    (void)state;
    dmn_range_t v[] = {{100, 50}, {200, 10}}, w[] = {{50, 200}};
    ngot = 0;
    shim_gate_ranges_outside(v, 2, w, 1, collect, NULL);
    assert_int_equal(ngot, 3);
    assert_int_equal(got[0][0], 50);
    assert_int_equal(got[0][1], 50);
    assert_int_equal(got[1][0], 150);
    assert_int_equal(got[1][1], 50);
    assert_int_equal(got[2][0], 210);
    assert_int_equal(got[2][1], 40);
    ngot = 0;
    dmn_range_t in = {110, 20};
    shim_gate_ranges_outside(v, 2, &in, 1, collect, NULL);
    assert_int_equal(ngot, 0); /* inside a stored range */
    /* several ranges at once, one stored range over two of them */
    dmn_range_t several[] = {{90, 20}, {120, 5}, {140, 80}};
    ngot = 0;
    shim_gate_ranges_outside(v, 2, several, 3, collect, NULL);
    assert_int_equal(ngot, 3);
    assert_int_equal(got[0][0], 90);
    assert_int_equal(got[0][1], 10);
    assert_int_equal(got[1][0], 150);
    assert_int_equal(got[1][1], 50);
    assert_int_equal(got[2][0], 210);
    assert_int_equal(got[2][1], 10);
}

#ifndef NDEBUG
/* A store out of order breaks the precondition of
 * shim_gate_ranges_outside, which asserts it (safe without the check: the
 * answer is only wrong). */
static int outside_of_unsorted(int index, void *arg)
{
    (void)index;
    (void)arg;
    dmn_range_t v[] = {{200, 10}, {100, 50}}, w = {50, 200};
    ngot = 0;
    shim_gate_ranges_outside(v, 2, &w, 1, collect, NULL);
    return 0;
}
#endif

/* Where assert() is compiled in (GMUX_ASSERTS: make check-asan, check-tsan,
 * check-clang), a broken invariant of the gate's range code stops the
 * program; skipped where NDEBUG compiles assert() out (make check). This
 * test is compiled with the library's flags, so it also shows which build
 * this is: until 2026-12-02 the sanitizer builds had NDEBUG too, and no
 * test run ever checked an assert(). */
static void test_asserts_fire_in_checked_builds(void **state)
{
    (void)state;
#ifdef NDEBUG
    skip();
#else
    int status = 0;
    tproc_fork_all(1, outside_of_unsorted, NULL, 30.0, &status);
    assert_int_equal(status, 128 + SIGABRT); /* from assert() */
#endif
}

/* --- the pieces of a store outside another (shim_gate_ranges_outside),
 * against a byte map: for each range of w in turn, each run of its bytes
 * that no range of v covers, in address order. */
enum { OUT_SPAN = 1024, OUT_CAP = 24, OUT_MAX = 64 * OUT_CAP };
static dmn_range_t out_got[OUT_MAX];
static uint32_t out_n;

static void out_collect(void *arg, dmn_range_t piece)
{
    (void)arg;
    assert_true(out_n < OUT_MAX);
    out_got[out_n++] = piece;
}

static void test_outside_matches_reference(void **state)
{
    (void)state;
    enum { ROUNDS = 3000 };
    static dmn_range_t v[OUT_CAP], w[OUT_CAP], ref[OUT_MAX];
    static uint8_t covered[OUT_SPAN];
    for (int round = 0; round < ROUNDS; round++) {
        /* v: a coalesced store (of evictions), from ranges anywhere */
        uint32_t n = random_ranges(v, OUT_CAP, 256, rnd(2), true); /* ends below 900 */
        shim_gate_ranges_coalesce(v, &n);
        memset(covered, 0, sizeof(covered));
        for (uint32_t i = 0; i < n; i++)
            memset(&covered[v[i].base], 1, v[i].len);
        /* w: mostly a coalesced store too (the fills ahead), at times
         * ranges in any order, overlapping, empty */
        bool store = rnd(4) != 0;
        uint32_t m = random_ranges(w, OUT_CAP, 256, store, !store);
        if (store)
            shim_gate_ranges_coalesce(w, &m);
        uint32_t nr = 0;
        for (uint32_t k = 0; k < m; k++)
            for (uint64_t b = w[k].base; b < w[k].base + w[k].len; b++) {
                if (covered[b])
                    continue;
                if (b > w[k].base && !covered[b - 1]) /* the run goes on */
                    ref[nr - 1].len++;
                else
                    ref[nr++] = (dmn_range_t){b, 1};
            }
        out_n = 0;
        shim_gate_ranges_outside(v, n, w, m, out_collect, NULL);
        assert_int_equal(out_n, nr);
        for (uint32_t i = 0; i < nr; i++) {
            assert_int_equal(out_got[i].base, ref[i].base);
            assert_int_equal(out_got[i].len, ref[i].len);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outside_pieces),
        cmocka_unit_test(test_asserts_fire_in_checked_builds),
        cmocka_unit_test(test_outside_matches_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
