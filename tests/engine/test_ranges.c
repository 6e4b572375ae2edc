/* eng_ranges_normalise: sorted, merged (overlap and adjacency), modes joined, empties gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/ranges.h"
#include "trand.h"

/* The random tests draw from trand (the same numbers on every libc), seeded
 * by GMUX_TEST_SEED or each test's own default. */
static uint64_t rng;

static uint64_t rnd(uint64_t n)
{
    return trand_below(&rng, n);
}

static void test_merges_and_sorts(void **state)
{
    (void)state;
    eng_range_t r[] = {
        {300, 50, ENG_ACCESS_WRITE},                              /* adjacent to [250, 300) */
        {100, 100, ENG_ACCESS_READ}, {150, 10, ENG_ACCESS_WRITE}, /* inside */
        {500, 0, ENG_ACCESS_READ},                                /* empty: dropped */
        {250, 50, ENG_ACCESS_READ},  {190, 20, ENG_ACCESS_READ},  /* overlaps the end */
        {1000, 8, ENG_ACCESS_READ},
    };
    size_t n = eng_ranges_normalise(r, sizeof(r) / sizeof(r[0]));
    assert_int_equal(n, 3);
    assert_int_equal(r[0].addr, 100);
    assert_int_equal(r[0].len, 110);
    assert_int_equal(r[0].mode, ENG_ACCESS_RW);
    assert_int_equal(r[1].addr, 250);
    assert_int_equal(r[1].len, 100);
    assert_int_equal(r[1].mode, ENG_ACCESS_RW);
    assert_int_equal(r[2].addr, 1000);
    assert_int_equal(r[2].len, 8);
    assert_int_equal(r[2].mode, ENG_ACCESS_READ);
}

/* Against a byte map: the same bytes covered, no two results touching. */
static void test_random_against_bytes(void **state)
{
    (void)state;
    rng = trand_from_env("test_random_against_bytes", 7);
    for (int round = 0; round < 500; round++) {
        eng_range_t r[32];
        unsigned char map[4096] = {0};
        size_t n = (size_t)rnd(32);
        for (size_t i = 0; i < n; i++) {
            uint64_t a = rnd(4000), l = rnd(90);
            r[i] = (eng_range_t){a, l, ENG_ACCESS_READ};
            for (uint64_t b = a; b < a + l; b++)
                map[b] = 1;
        }
        size_t m = eng_ranges_normalise(r, n);
        unsigned char got[4096] = {0};
        for (size_t i = 0; i < m; i++) {
            assert_true(r[i].len > 0);
            if (i)
                assert_true(r[i].addr > r[i - 1].addr + r[i - 1].len);
            for (uint64_t b = r[i].addr; b < r[i].addr + r[i].len; b++)
                got[b] = 1;
        }
        assert_memory_equal(map, got, sizeof(map));
    }
}

/* The reference: a stable sort by addr (ties by first index), then the merge
 * written out again. */
static int ref_cmp(const void *a, const void *b)
{
    const eng_range_t *x = *(const eng_range_t *const *)a, *y = *(const eng_range_t *const *)b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x < y ? -1 : x > y;
}

static size_t ref_normalise(eng_range_t *r, size_t n)
{
    const eng_range_t *p[80];
    eng_range_t tmp[80];
    for (size_t i = 0; i < n; i++)
        p[i] = &r[i];
    qsort(p, n, sizeof(*p), ref_cmp);
    for (size_t i = 0; i < n; i++)
        tmp[i] = *p[i];
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        eng_range_t x = tmp[i];
        if (x.len > UINT64_MAX - x.addr)
            x.len = UINT64_MAX - x.addr;
        tmp[i] = x;
        if (x.len == 0)
            continue;
        if (out && x.addr <= tmp[out - 1].addr + tmp[out - 1].len) {
            if (x.addr + x.len > tmp[out - 1].addr + tmp[out - 1].len)
                tmp[out - 1].len = x.addr + x.len - tmp[out - 1].addr;
            tmp[out - 1].mode |= x.mode;
            continue;
        }
        tmp[out++] = x;
    }
    for (size_t i = 0; i < n; i++)
        r[i] = tmp[i];
    return out;
}

/* Random arrays on both sides of the insertion-sort limit, with repeated
 * addresses (differing lengths and modes), sorted runs and ranges past the
 * top: the same count and the same whole array, the order of equal addresses
 * included, as the reference. */
static void test_random_against_stable_ref(void **state)
{
    (void)state;
    rng = trand_from_env("test_random_against_stable_ref", 11);
    size_t ties = 0;
    for (int round = 0; round < 20000; round++) {
        eng_range_t r[80], want[80];
        size_t n = (size_t)rnd(round % 4 ? ENG_RANGES_SORT_SMALL + 2 : 80);
        uint64_t span = 1 + rnd(200), at = 0;
        bool sorted = rnd(3) == 0;
        for (size_t i = 0; i < n; i++) {
            at = sorted ? at + rnd(40) : rnd(span);
            uint64_t a = rnd(50) == 0 ? UINT64_MAX - rnd(30) : at;
            uint64_t len = rnd(40); /* drawn in order: an initialiser's is unspecified */
            r[i] = (eng_range_t){a, len, (uint8_t)(1 + rnd(3))};
            for (size_t j = 0; j < i; j++)
                ties += r[j].addr == a;
        }
        memcpy(want, r, sizeof(r));
        size_t m = ref_normalise(want, n);
        assert_int_equal(eng_ranges_normalise(r, n), m);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(r[i].addr, want[i].addr);
            assert_int_equal(r[i].len, want[i].len);
            assert_int_equal(r[i].mode, want[i].mode);
        }
    }
    assert_true(ties > 10000); /* equal addresses, whose order counts, were common */
}

/* A range running past the top of the address space is clipped to end at
 * UINT64_MAX, so every result's addr + len is exact: the overlapping
 * [MAX-20, MAX) and [MAX-15, MAX-13) merge, a range starting at UINT64_MAX is
 * empty, a lone one is clipped. Until 2026-12-01 the end wrapped (to 9 and to
 * 89 here) and the two overlapping ranges stayed apart. */
static void test_end_saturates(void **state)
{
    (void)state;
    eng_range_t r[] = {
        {UINT64_MAX - 20, 30, ENG_ACCESS_READ},
        {UINT64_MAX - 15, 2, ENG_ACCESS_WRITE},
        {UINT64_MAX, 5, ENG_ACCESS_READ},
        {100, 10, ENG_ACCESS_READ},
    };
    size_t n = eng_ranges_normalise(r, sizeof(r) / sizeof(r[0]));
    assert_int_equal(n, 2);
    assert_int_equal(r[0].addr, 100);
    assert_int_equal(r[0].len, 10);
    assert_true(r[1].addr == UINT64_MAX - 20);
    assert_int_equal(r[1].len, 20);
    assert_int_equal(r[1].mode, ENG_ACCESS_RW);

    eng_range_t one[] = {{UINT64_MAX - 10, UINT64_MAX, ENG_ACCESS_WRITE}};
    assert_int_equal(eng_ranges_normalise(one, 1), 1);
    assert_int_equal(one[0].len, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merges_and_sorts),
        cmocka_unit_test(test_random_against_bytes),
        cmocka_unit_test(test_end_saturates),
        cmocka_unit_test(test_random_against_stable_ref),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
