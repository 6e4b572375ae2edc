/*
 * Unit tests of gmux bench net's estimator (tools/gmux/bench_series.c):
 * medians that leave their input alone, per-run pairs that cancel a mode
 * shared by both columns, the best run chosen by the unit's direction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bench_series.h"

static void test_median(void **state)
{
    (void)state;
    double odd[] = {5, 1, 4, 2, 3};
    assert_true(bench_median(odd, 5) == 3);
    assert_true(odd[0] == 5 && odd[1] == 1 && odd[4] == 3); /* not sorted in place */
    double even[] = {8, 2, 6, 4};
    assert_true(bench_median(even, 4) == 5);
    double one[] = {7};
    assert_true(bench_median(one, 1) == 7);
    double ties[] = {2, 2, 1, 2};
    assert_true(bench_median(ties, 4) == 2);
}

/* Rates (higher is better): raw's fourth run landed in a fast mode that
 * gmux's fourth run shared; the best of each column would compare raw's
 * lucky run with gmux's ordinary ones (100 / 150), the pairs do not. */
static void test_pairs_cancel_a_shared_mode(void **state)
{
    (void)state;
    double g[] = {100, 101, 99, 140, 100};
    double r[] = {100, 100, 100, 150, 100};
    bench_summary_t s = bench_summarize(g, r, 5, false);
    assert_int_equal(s.n, 5);
    assert_true(s.gmux == 100 && s.raw == 100);
    assert_true(s.gmux_best == 140 && s.raw_best == 150);
    assert_true(s.ratio == 1.0); /* ratios 1, 1.01, 0.99, 0.933, 1 */
    assert_true(s.ratio_min == 140.0 / 150.0);
    assert_true(s.ratio_max == 1.01);
}

/* Times (lower is better): the best is the smallest, ratios stay gmux/raw. */
static void test_times_best_is_lowest(void **state)
{
    (void)state;
    double g[] = {12, 10, 30};
    double r[] = {10, 10, 20};
    bench_summary_t s = bench_summarize(g, r, 3, true);
    assert_true(s.gmux_best == 10 && s.raw_best == 10);
    assert_true(s.gmux == 12 && s.raw == 10);
    assert_true(s.ratio == 1.2);
    assert_true(s.ratio_min == 1.0 && s.ratio_max == 1.5);
    bench_summary_t hi = bench_summarize(g, r, 3, false);
    assert_true(hi.gmux_best == 30 && hi.raw_best == 20);
    assert_true(hi.ratio == 1.2); /* the direction does not change the ratios */
}

/* Out-of-range counts: below 1 counts one run, above the bound is clamped. */
static void test_counts_clamped(void **state)
{
    (void)state;
    double g[BENCH_SERIES_MAX + 1], r[BENCH_SERIES_MAX + 1];
    for (int i = 0; i <= BENCH_SERIES_MAX; i++) {
        g[i] = i < BENCH_SERIES_MAX ? 2 : 1000; /* the run past the bound would move the max */
        r[i] = 1;
    }
    bench_summary_t s = bench_summarize(g, r, BENCH_SERIES_MAX + 1, false);
    assert_int_equal(s.n, BENCH_SERIES_MAX);
    assert_true(s.ratio_max == 2 && s.gmux_best == 2);
    bench_summary_t z = bench_summarize(g, r, 0, false);
    assert_int_equal(z.n, 1);
    assert_true(z.ratio == 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_pairs_cancel_a_shared_mode),
        cmocka_unit_test(test_times_best_is_lowest),
        cmocka_unit_test(test_counts_clamped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
