/*
 * The range arithmetic of the gate's stores of daemon orders
 * (src/shim/gate_ranges.c): cutting, storing evictions in a full store
 * without losing a byte, the pieces of a range outside a store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shim/gate_ranges.h"

/* Whether the store covers every byte of [lo, hi). */
static int covers(const dmn_range_t *v, uint32_t n, uint64_t lo, uint64_t hi)
{
    while (lo < hi) {
        uint64_t next = lo;
        for (uint32_t i = 0; i < n; i++)
            if (v[i].base <= lo && lo < v[i].base + v[i].len && v[i].base + v[i].len > next)
                next = v[i].base + v[i].len;
        if (next == lo)
            return 0;
        lo = next;
    }
    return 1;
}

static void test_coalesce_sorts_and_joins(void **state)
{
    (void)state;
    dmn_range_t v[] = {{300, 10}, {100, 50}, {150, 10}, {120, 5}, {305, 20}, {500, 0}};
    uint32_t n = 6;
    shim_gate_ranges_coalesce(v, &n);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].base, 100);
    assert_int_equal(v[0].len, 60);
    assert_int_equal(v[1].base, 300);
    assert_int_equal(v[1].len, 25);
}

static void test_add_whole_joins_nearest_when_full(void **state)
{
    (void)state;
    dmn_range_t v[4];
    uint32_t n = 0;
    /* four ranges 100 apart fill the store */
    for (uint64_t i = 0; i < 4; i++)
        assert_false(shim_gate_ranges_add_whole(v, &n, 4, (dmn_range_t){i * 100, 10}));
    assert_int_equal(n, 4);
    /* one touching the last stored: joined, nothing more covered */
    assert_false(shim_gate_ranges_add_whole(v, &n, 4, (dmn_range_t){310, 10}));
    assert_int_equal(n, 4);
    /* one between the second and the third, nearer the third: joined with it */
    assert_true(shim_gate_ranges_add_whole(v, &n, 4, (dmn_range_t){190, 5}));
    assert_int_equal(n, 4);
    assert_true(covers(v, n, 190, 195));
    assert_true(covers(v, n, 195, 210));  /* the gap to the third, and the third */
    assert_false(covers(v, n, 110, 190)); /* not the gap to the second */
    for (uint64_t i = 0; i < 4; i++)
        assert_true(covers(v, n, i * 100, i * 100 + 10));
    assert_true(covers(v, n, 310, 320));
}

static void test_cut_keeps_evictions_whole_when_full(void **state)
{
    (void)state;
    dmn_range_t v[2] = {{0, 100}, {200, 100}}, tmp[2];
    uint32_t n = 2, whole = 0;
    /* the middle of the first needs a third piece: kept whole */
    dmn_range_t mid = {40, 20};
    assert_int_equal(shim_gate_ranges_cut(v, &n, 2, tmp, &mid, 1, true, &whole), 0);
    assert_int_equal(whole, 1);
    assert_int_equal(n, 2);
    assert_true(covers(v, n, 0, 100));
    /* the end of the second: cut */
    dmn_range_t end = {250, 100};
    assert_int_equal(shim_gate_ranges_cut(v, &n, 2, tmp, &end, 1, true, &whole), 0);
    assert_int_equal(whole, 1);
    assert_true(covers(v, n, 200, 250));
    assert_false(covers(v, n, 250, 251));
    /* fills may lose pieces: the middle of the first, dropped beyond cap */
    assert_int_equal(shim_gate_ranges_cut(v, &n, 2, tmp, &mid, 1, false, NULL), 1);
    assert_int_equal(n, 2);
    assert_false(covers(v, n, 40, 60));
}

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
    dmn_range_t v[] = {{100, 50}, {200, 10}};
    ngot = 0;
    shim_gate_ranges_outside(v, 2, (dmn_range_t){50, 200}, collect, NULL);
    assert_int_equal(ngot, 3);
    assert_int_equal(got[0][0], 50);
    assert_int_equal(got[0][1], 50);
    assert_int_equal(got[1][0], 150);
    assert_int_equal(got[1][1], 50);
    assert_int_equal(got[2][0], 210);
    assert_int_equal(got[2][1], 40);
    ngot = 0;
    shim_gate_ranges_outside(v, 2, (dmn_range_t){110, 20}, collect, NULL);
    assert_int_equal(ngot, 0); /* inside a stored range */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coalesce_sorts_and_joins),
        cmocka_unit_test(test_add_whole_joins_nearest_when_full),
        cmocka_unit_test(test_cut_keeps_evictions_whole_when_full),
        cmocka_unit_test(test_outside_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
