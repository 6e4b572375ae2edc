/*
 * Covering sets (shim_gate_ranges_cover, src/shim/gate_ranges.c): the
 * working set the gate announces, in at most a given count of ranges, the
 * smallest gaps covered first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gate_ranges_check.h"
#include "shim/gate_ranges.h"

/* --- covering sets (shim_gate_ranges_cover) */

typedef struct cover_in {
    const dmn_range_t *v;
    const uint8_t *skip;
} cover_in_t;

static bool cover_at(const void *arg, size_t i, dmn_range_t *r)
{
    const cover_in_t *in = arg;
    if (in->skip && in->skip[i])
        return false;
    *r = in->v[i];
    return true;
}

static void test_cover_fits_as_given(void **state)
{
    (void)state;
    /* touching ranges join; a skipped one leaves its gap */
    dmn_range_t v[] = {{100, 50}, {150, 10}, {200, 10}, {300, 10}, {400, 10}};
    uint8_t skip[] = {0, 0, 0, 1, 0};
    cover_in_t in = {v, skip};
    dmn_range_t out[4];
    uint64_t scratch[4];
    bool coarse = true;
    assert_int_equal(shim_gate_ranges_cover(out, 4, scratch, 5, cover_at, &in, &coarse), 3);
    assert_false(coarse);
    assert_int_equal(out[0].base, 100);
    assert_int_equal(out[0].len, 60);
    assert_int_equal(out[1].base, 200);
    assert_int_equal(out[2].base, 400);
    assert_int_equal(out[2].len, 10);
}

static void test_cover_joins_smallest_gaps(void **state)
{
    (void)state;
    /* gaps 90, 5, 40, 1000: two ranges out of five cover the smallest three */
    dmn_range_t v[] = {{0, 10}, {100, 10}, {115, 10}, {165, 10}, {1175, 25}};
    cover_in_t in = {v, NULL};
    dmn_range_t out[2];
    uint64_t scratch[2];
    bool coarse = false;
    assert_int_equal(shim_gate_ranges_cover(out, 2, scratch, 5, cover_at, &in, &coarse), 2);
    assert_true(coarse);
    assert_int_equal(out[0].base, 0);
    assert_int_equal(out[0].len, 175);
    assert_int_equal(out[1].base, 1175);
    assert_int_equal(out[1].len, 25);
}

static void test_cover_ties_fill_cap(void **state)
{
    (void)state;
    /* ten ranges 100 apart (gaps of 90): four ranges out, the first three
     * gaps kept, the rest covered */
    dmn_range_t v[10];
    for (uint64_t i = 0; i < 10; i++)
        v[i] = (dmn_range_t){i * 100, 10};
    cover_in_t in = {v, NULL};
    dmn_range_t out[4];
    uint64_t scratch[4];
    bool coarse = false;
    assert_int_equal(shim_gate_ranges_cover(out, 4, scratch, 10, cover_at, &in, &coarse), 4);
    assert_true(coarse);
    for (uint64_t i = 0; i < 3; i++) {
        assert_int_equal(out[i].base, i * 100);
        assert_int_equal(out[i].len, 10);
    }
    assert_int_equal(out[3].base, 300);
    assert_int_equal(out[3].len, 610);
}

static void test_cover_random(void **state)
{
    (void)state;
    enum { N = 3000, CAP = 64 };
    static dmn_range_t v[N], out[CAP];
    static uint8_t skip[N];
    static uint64_t scratch[CAP];
    for (int round = 0; round < 50; round++) {
        uint64_t at = rnd(1000);
        for (size_t i = 0; i < N; i++) {
            at += rnd(4) == 0 ? 0 : rnd(round % 2 ? 1u << 20 : 64); /* some touch */
            v[i] = (dmn_range_t){at, 1 + rnd(256)};
            at += v[i].len;
            skip[i] = rnd(5) == 0;
        }
        cover_in_t in = {v, skip};
        uint32_t cap = 1 + (uint32_t)rnd(CAP);
        bool coarse = false;
        uint32_t m = shim_gate_ranges_cover(out, cap, scratch, N, cover_at, &in, &coarse);
        assert_int_equal(m, cap); /* coarsened: every slot used */
        assert_true(is_coalesced(out, m));
        assert_true(coarse);
        for (size_t i = 0; i < N; i++)
            if (!skip[i] && !covers(out, m, v[i].base, v[i].base + v[i].len))
                fail_msg("round %d: range %zu not covered", round, i);
        /* every gap covered is no wider than any gap left between two ranges */
        uint64_t widest_covered = 0, narrowest_left = UINT64_MAX, end = 0;
        int any = 0;
        for (size_t i = 0; i < N; i++) {
            if (skip[i])
                continue;
            if (any && v[i].base > end) {
                uint64_t g = v[i].base - end;
                if (covers(out, m, end, v[i].base))
                    widest_covered = g > widest_covered ? g : widest_covered;
                else
                    narrowest_left = g < narrowest_left ? g : narrowest_left;
            }
            end = v[i].base + v[i].len;
            any = 1;
        }
        assert_true(widest_covered <= narrowest_left);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cover_fits_as_given),
        cmocka_unit_test(test_cover_joins_smallest_gaps),
        cmocka_unit_test(test_cover_ties_fill_cap),
        cmocka_unit_test(test_cover_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
