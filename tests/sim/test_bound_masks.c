/* The block passes' mask helpers (sim/bound_impl.h) against plain loops over
 * the bits: sim_pop32 and sim_mask_lowest on random masks of every density
 * and on every count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim/bound_impl.h"
#include "trand.h"

static uint32_t ref_pop(uint32_t m)
{
    uint32_t n = 0;
    for (uint32_t b = 0; b < 32; b++)
        n += (m >> b) & 1;
    return n;
}

/* Bit by bit from the low end. */
static uint32_t ref_lowest(uint32_t m, uint64_t count)
{
    uint32_t out = 0;
    for (uint32_t b = 0; b < 32 && count; b++)
        if (m & (1u << b)) {
            out |= 1u << b;
            count--;
        }
    return out;
}

/* A mask with about `density` of 8 bits set, in stretches or scattered. */
static uint32_t pick_mask(uint64_t *s, uint32_t density)
{
    uint32_t m = 0;
    if (trand_next(s) % 4 == 0) { /* one stretch: a range's blocks */
        uint32_t lo = (uint32_t)(trand_next(s) % 32), len = (uint32_t)(trand_next(s) % 33);
        for (uint32_t b = lo; b < 32 && b < lo + len; b++)
            m |= 1u << b;
        return m;
    }
    for (uint32_t b = 0; b < 32; b++)
        if (trand_next(s) % 8 < density)
            m |= 1u << b;
    return m;
}

static void check_one(uint32_t m)
{
    assert_int_equal(sim_pop32(m), ref_pop(m));
    for (uint64_t count = 0; count <= 33; count++)
        assert_int_equal(sim_mask_lowest(m, count), ref_lowest(m, count));
    assert_int_equal(sim_mask_lowest(m, UINT64_MAX), m);
}

static void test_random_masks(void **state)
{
    (void)state;
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (uint32_t i = 0; i < 200000; i++)
        check_one(pick_mask(&s, (uint32_t)(i % 9)));
}

/* Every mask of one byte, alone and in each byte, and the edges. */
static void test_edges(void **state)
{
    (void)state;
    for (uint32_t v = 0; v < 256; v++)
        for (uint32_t at = 0; at < 32; at += 8) {
            check_one(v << at);
            check_one((v << at) | 0x80000001u);
            check_one(~(v << at));
        }
    check_one(0);
    check_one(UINT32_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_masks),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
