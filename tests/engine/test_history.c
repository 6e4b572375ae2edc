/* Tests of the launch history: exact keys, what repeats is predicted, what
 * moved is not, bounded memory, no wrong answer under collisions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/history.h"

static eng_arg_t args[3];

static eng_launch_t launch(uint32_t kernel, uint64_t a0, uint64_t n)
{
    args[0] = (eng_arg_t){ENG_ARG_PTR, a0};
    args[1] = (eng_arg_t){ENG_ARG_PTR, 0x100000};
    args[2] = (eng_arg_t){ENG_ARG_VAL, n};
    return (eng_launch_t){
        .kernel = kernel, .grid = {4, 1, 1}, .block = {256, 1, 1}, .nargs = 3, .args = args};
}

static void test_repeats_predicted_moved_not(void **state)
{
    (void)state;
    eng_history_t *h;
    assert_int_equal(eng_history_create(64, &h), GMUX_OK);
    eng_launch_t l = launch(1, 0x1000, 10);
    eng_hist_pred_t p;
    assert_false(eng_history_lookup(h, &l, &p));
    /* unsorted, overlapping, adjacent: normalised */
    eng_range_t t1[] = {{0x5000, 0x1000, ENG_ACCESS_READ},
                        {0x1000, 0x800, ENG_ACCESS_READ},
                        {0x1800, 0x800, ENG_ACCESS_WRITE},
                        {0x5800, 0x1000, ENG_ACCESS_READ},
                        {0x9000, 0x100, ENG_ACCESS_READ}};
    assert_int_equal(eng_history_observe(h, &l, t1, 5), GMUX_OK);
    assert_true(eng_history_lookup(h, &l, &p));
    assert_int_equal(p.seen, 1);
    assert_int_equal(p.n, 3);
    assert_int_equal(p.ranges[0].addr, 0x1000);
    assert_int_equal(p.ranges[0].len, 0x1000);
    assert_int_equal(p.ranges[0].mode, ENG_ACCESS_RW);
    assert_int_equal(p.ranges[1].addr, 0x5000);
    assert_int_equal(p.ranges[1].len, 0x1800);
    assert_int_equal(p.ranges[2].addr, 0x9000);
    /* second launch: the first two ranges repeat, the third moved */
    eng_range_t t2[] = {{0x1000, 0x1000, ENG_ACCESS_READ},
                        {0x5400, 0x2000, ENG_ACCESS_READ},
                        {0xa000, 0x100, ENG_ACCESS_READ}};
    assert_int_equal(eng_history_observe(h, &l, t2, 3), GMUX_OK);
    assert_true(eng_history_lookup(h, &l, &p));
    assert_int_equal(p.seen, 2);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.ranges[0].addr, 0x1000);
    assert_int_equal(p.ranges[0].len, 0x1000);
    assert_int_equal(p.ranges[1].addr, 0x5400);
    assert_int_equal(p.ranges[1].len, 0x1400);
    /* the first prediction (t1) held 0x1000 + 0x1400 of t2's 0x3100 bytes */
    assert_true(p.recall > 0.73 && p.recall < 0.74);
    /* any other value is another key */
    eng_launch_t o = launch(1, 0x1000, 11);
    assert_false(eng_history_lookup(h, &o, &p));
    o = launch(2, 0x1000, 10);
    assert_false(eng_history_lookup(h, &o, &p));
    o = launch(1, 0x1000, 10);
    o.grid[0] = 5;
    assert_false(eng_history_lookup(h, &o, &p));
    assert_int_equal(eng_history_entries(h), 1);
    eng_history_destroy(h);
}

static void test_too_scattered_not_remembered(void **state)
{
    (void)state;
    eng_history_t *h;
    assert_int_equal(eng_history_create(16, &h), GMUX_OK);
    static eng_range_t many[ENG_HIST_MAX_RANGES + 1];
    for (uint32_t i = 0; i <= ENG_HIST_MAX_RANGES; i++)
        many[i] = (eng_range_t){0x100000 + 0x200 * (uint64_t)i, 0x100, ENG_ACCESS_READ};
    eng_launch_t l = launch(3, 0x2000, 1);
    eng_hist_pred_t p;
    assert_int_equal(eng_history_observe(h, &l, many, ENG_HIST_MAX_RANGES + 1), GMUX_OK);
    assert_false(eng_history_lookup(h, &l, &p));
    assert_int_equal(eng_history_observe(h, &l, many, 2), GMUX_OK);
    assert_true(eng_history_lookup(h, &l, &p));
    /* a later scattered launch forgets the key rather than keep a stale answer */
    assert_int_equal(eng_history_observe(h, &l, many, ENG_HIST_MAX_RANGES + 1), GMUX_OK);
    assert_false(eng_history_lookup(h, &l, &p));
    assert_int_equal(eng_history_entries(h), 0);
    eng_history_destroy(h);
}

/* Far more keys than slots: a lookup finds its own key's ranges or nothing. */
static void test_collisions_never_wrong(void **state)
{
    (void)state;
    eng_history_t *h;
    assert_int_equal(eng_history_create(16, &h), GMUX_OK);
    for (uint64_t k = 0; k < 500; k++) {
        eng_launch_t l = launch(7, 0x10000 * k, k);
        eng_range_t t = {0x10000 * k, 0x100 + k, ENG_ACCESS_READ};
        assert_int_equal(eng_history_observe(h, &l, &t, 1), GMUX_OK);
    }
    uint32_t found = 0;
    for (uint64_t k = 0; k < 500; k++) {
        eng_launch_t l = launch(7, 0x10000 * k, k);
        eng_hist_pred_t p;
        if (!eng_history_lookup(h, &l, &p))
            continue;
        found++;
        assert_int_equal(p.n, 1);
        assert_int_equal(p.ranges[0].addr, 0x10000 * k);
        assert_int_equal(p.ranges[0].len, 0x100 + k);
    }
    assert_true(found > 0 && found <= 16);
    assert_int_equal(eng_history_entries(h), found);
    eng_history_destroy(h);
}

/* Which bytes the history's own prediction missed, so that a caller can tell
 * the allocation where gathers moved from one the history predicts exactly. */
static void test_missed_bytes(void **state)
{
    (void)state;
    eng_history_t *h;
    assert_int_equal(eng_history_create(64, &h), GMUX_OK);
    eng_launch_t l = launch(1, 0x1000, 10);
    eng_hist_pred_t p;
    eng_range_t t1[] = {{0x1000, 0x1000, ENG_ACCESS_READ},
                        {0x5000, 0x1800, ENG_ACCESS_READ},
                        {0x9000, 0x100, ENG_ACCESS_READ}};
    assert_int_equal(eng_history_observe(h, &l, t1, 3), GMUX_OK);
    assert_true(eng_history_lookup(h, &l, &p));
    assert_int_equal(p.nmissed, 0); /* nothing was predicted before the first */
    assert_int_equal(eng_history_missed_in(&p, 0, 1ull << 20), 0);
    /* the prediction (t1) misses [0xa000, 0xa100) of t2, and t2's second range
     * reaches beyond t1's [0x5000, 0x6800) on both sides */
    eng_range_t t2[] = {{0x1000, 0x1000, ENG_ACCESS_READ},
                        {0x4000, 0x3400, ENG_ACCESS_WRITE},
                        {0xa000, 0x100, ENG_ACCESS_READ}};
    assert_int_equal(eng_history_observe(h, &l, t2, 3), GMUX_OK);
    assert_true(eng_history_lookup(h, &l, &p));
    assert_int_equal(p.nmissed, 3);
    assert_int_equal(p.missed[0].addr, 0x4000);
    assert_int_equal(p.missed[0].len, 0x1000);
    assert_int_equal(p.missed[0].mode, ENG_ACCESS_WRITE);
    assert_int_equal(p.missed[1].addr, 0x6800);
    assert_int_equal(p.missed[1].len, 0xc00);
    assert_int_equal(p.missed[2].addr, 0xa000);
    assert_int_equal(p.missed[2].len, 0x100);
    assert_int_equal(eng_history_missed_in(&p, 0x1000, 0x1000), 0); /* predicted in full */
    assert_int_equal(eng_history_missed_in(&p, 0x4000, 0x4000), 0x1c00);
    assert_int_equal(eng_history_missed_in(&p, 0x6000, 0x1000), 0x800);  /* cut at the end */
    assert_int_equal(eng_history_missed_in(&p, 0x7000, 0x10000), 0x500); /* and the start */
    assert_int_equal(eng_history_missed_in(&p, 0, 1ull << 20), 0x1d00);
    /* the missed bytes and the recall agree: 0x1d00 of 0x4500 missed */
    assert_true(p.recall > 1.0 - (double)0x1d00 / 0x4500 - 1e-9);
    assert_true(p.recall < 1.0 - (double)0x1d00 / 0x4500 + 1e-9);
    /* a launch the prediction (t1 and t2's common bytes) holds in full misses nothing */
    eng_range_t t3[] = {{0x1000, 0x800, ENG_ACCESS_READ}, {0x5000, 0x1000, ENG_ACCESS_READ}};
    assert_int_equal(eng_history_observe(h, &l, t3, 2), GMUX_OK);
    assert_true(eng_history_lookup(h, &l, &p));
    assert_int_equal(p.nmissed, 0);
    assert_true(p.recall == 1.0);
    eng_history_destroy(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeats_predicted_moved_not),
        cmocka_unit_test(test_too_scattered_not_remembered),
        cmocka_unit_test(test_collisions_never_wrong),
        cmocka_unit_test(test_missed_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
