/* Tests of scoring: exact interval arithmetic for precision and recall. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/score.h"

static void test_overlaps_counted_once(void **state)
{
    (void)state;
    eng_scorer_t *s;
    assert_int_equal(eng_scorer_create(&s), GMUX_OK);
    /* Predicted [100,300) twice over plus [250,400); touched [0,150) and [350,360) and [390,500).
     */
    eng_span_t pred[] = {{100, 200, 0, 1, 3}, {100, 200, 0, 1, 3}, {250, 150, 0, 1, 3}};
    eng_range_t t[] = {{0, 150, 1}, {390, 110, 1}, {350, 10, 1}};
    eng_score_t sc = {0};
    assert_int_equal(eng_score_launch(s, pred, 3, t, 3, &sc), GMUX_OK);
    assert_int_equal(sc.predicted, 300);
    assert_int_equal(sc.touched, 270);
    assert_int_equal(sc.hit, 50 + 10 + 10);
    assert_float_equal(eng_score_precision(&sc), 70.0 / 300, 1e-12);
    assert_float_equal(eng_score_recall(&sc), 70.0 / 270, 1e-12);
    /* Accumulates across launches. */
    eng_span_t exact[] = {{1000, 10, 0, 1, 3}};
    eng_range_t te[] = {{1000, 10, 1}};
    assert_int_equal(eng_score_launch(s, exact, 1, te, 1, &sc), GMUX_OK);
    assert_int_equal(sc.hit, 80);
    assert_int_equal(sc.predicted, 310);
    eng_scorer_destroy(s);
}

static void test_strided_spans(void **state)
{
    (void)state;
    eng_scorer_t *s;
    assert_int_equal(eng_scorer_create(&s), GMUX_OK);
    /* 4 pieces of 10 bytes every 100: [0,10) [100,110) [200,210) [300,310). */
    eng_span_t pred[] = {{0, 10, 100, 4, 3}};
    eng_range_t t[] = {{5, 100, 1}};
    eng_score_t sc = {0};
    assert_int_equal(eng_score_launch(s, pred, 1, t, 1, &sc), GMUX_OK);
    assert_int_equal(sc.predicted, 40);
    assert_int_equal(sc.touched, 100);
    assert_int_equal(sc.hit, 5 + 5);
    eng_scorer_destroy(s);
}

/* A span of 2^40 pieces is scored as its covering range: expanding it piece
 * by piece needed 16 TiB and failed with GMUX_ERR_NOMEM. */
static void test_huge_span_bounded(void **state)
{
    (void)state;
    eng_scorer_t *s;
    assert_int_equal(eng_scorer_create(&s), GMUX_OK);
    eng_span_t pred[] = {{1000, 1, 2, 1ull << 40, 3}};
    eng_range_t t[] = {{1000, 10, 1}};
    eng_score_t sc = {0};
    assert_int_equal(eng_score_launch(s, pred, 1, t, 1, &sc), GMUX_OK);
    assert_int_equal(sc.predicted, 2 * ((1ull << 40) - 1) + 1);
    assert_int_equal(sc.hit, 10);
    eng_scorer_destroy(s);
}

static void test_empty_sides(void **state)
{
    (void)state;
    eng_score_t sc = {0};
    assert_float_equal(eng_score_precision(&sc), 1.0, 0);
    assert_float_equal(eng_score_recall(&sc), 1.0, 0);
    eng_scorer_t *s;
    assert_int_equal(eng_scorer_create(&s), GMUX_OK);
    eng_range_t t[] = {{5, 100, 1}};
    assert_int_equal(eng_score_launch(s, NULL, 0, t, 1, &sc), GMUX_OK);
    assert_float_equal(eng_score_recall(&sc), 0.0, 0);
    eng_score_t b = {1, 2, 3};
    eng_score_add(&sc, &b);
    assert_int_equal(sc.touched, 102);
    eng_scorer_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlaps_counted_once),
        cmocka_unit_test(test_strided_spans),
        cmocka_unit_test(test_empty_sides),
        cmocka_unit_test(test_huge_span_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
