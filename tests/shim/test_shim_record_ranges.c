/*
 * The recorder's touched-range arithmetic: fault addresses to ranges at
 * fault granularity, clipping to live allocations, merging.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shim/record_ranges.h"

static void test_merge_sorts_and_joins(void **state)
{
    (void)state;
    eng_range_t r[] = {
        {.addr = 300, .len = 10, .mode = ENG_ACCESS_READ},
        {.addr = 100, .len = 50, .mode = ENG_ACCESS_READ},
        {.addr = 150, .len = 10, .mode = ENG_ACCESS_WRITE}, /* adjacent: joins */
        {.addr = 120, .len = 5, .mode = ENG_ACCESS_READ},   /* inside */
        {.addr = 305, .len = 20, .mode = ENG_ACCESS_READ},  /* overlaps */
        {.addr = 500, .len = 1, .mode = ENG_ACCESS_WRITE},
    };
    size_t n = shim_rec_ranges_merge(r, 6);
    assert_int_equal(n, 3);
    assert_int_equal(r[0].addr, 100);
    assert_int_equal(r[0].len, 60);
    assert_int_equal(r[0].mode, ENG_ACCESS_RW);
    assert_int_equal(r[1].addr, 300);
    assert_int_equal(r[1].len, 25);
    assert_int_equal(r[1].mode, ENG_ACCESS_READ);
    assert_int_equal(r[2].addr, 500);
    assert_int_equal(r[2].len, 1);
}

static void test_faults_to_pages(void **state)
{
    (void)state;
    const uint64_t page = 4096;
    const uint64_t faults[] = {0x10010, 0x10ff0, 0x12000, 0x11001, 0x20000};
    eng_range_t out[8];
    size_t n = shim_rec_ranges_from_faults(faults, 5, page, out, 8);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].addr, 0x10000);
    assert_int_equal(out[0].len, 3 * page); /* 0x10000, 0x11000, 0x12000 */
    assert_int_equal(out[0].mode, ENG_ACCESS_RW);
    assert_int_equal(out[1].addr, 0x20000);
    assert_int_equal(out[1].len, page);
    /* a granularity that is no power of two is refused */
    assert_int_equal(shim_rec_ranges_from_faults(faults, 5, 3000, out, 8), 0);
}

static void test_faults_more_than_room_merge_first(void **state)
{
    (void)state;
    uint64_t faults[64];
    for (int i = 0; i < 64; i++)
        faults[i] = 0x100000 + (uint64_t)i * 4096; /* 64 contiguous pages */
    eng_range_t out[4];
    size_t n = shim_rec_ranges_from_faults(faults, 64, 4096, out, 4);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].addr, 0x100000);
    assert_int_equal(out[0].len, 64 * 4096);
}

static void test_clip_to_allocations(void **state)
{
    (void)state;
    const shim_rec_alloc_t live[] = {{.id = 1, .base = 1000, .size = 100},
                                     {.id = 2, .base = 1100, .size = 50}};
    const eng_range_t in[] = {
        {.addr = 900, .len = 300, .mode = ENG_ACCESS_WRITE}, /* spans both, and beyond */
        {.addr = 5000, .len = 10, .mode = ENG_ACCESS_READ},  /* outside everything */
        {.addr = 1010, .len = 5, .mode = ENG_ACCESS_READ},
    };
    eng_range_t out[8];
    size_t n = shim_rec_ranges_clip(in, 3, live, 2, out, 8);
    assert_int_equal(n, 3);
    assert_int_equal(out[0].addr, 1000);
    assert_int_equal(out[0].len, 100);
    assert_int_equal(out[0].mode, ENG_ACCESS_WRITE);
    assert_int_equal(out[1].addr, 1100);
    assert_int_equal(out[1].len, 50);
    assert_int_equal(out[2].addr, 1010);
    assert_int_equal(out[2].len, 5);
    assert_int_equal(out[2].mode, ENG_ACCESS_READ);
    /* room for one only */
    assert_int_equal(shim_rec_ranges_clip(in, 3, live, 2, out, 1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_sorts_and_joins),
        cmocka_unit_test(test_faults_to_pages),
        cmocka_unit_test(test_faults_more_than_room_merge_first),
        cmocka_unit_test(test_clip_to_allocations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
