/* Tests of the share table (sim/share.h): one launch's share counts each
 * fault unit once; the share so far is the union over launches, per key;
 * regions over the limit and keys without a slot are not tracked, and a
 * lookup never answers with another key's share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim/share.h"

#define U    0x10000ull /* unit: 64 KiB */
#define BASE 0x40000000ull
#define SIZE (64 * U) /* 64 units */

static void test_launch_share_counts_units_once(void **state)
{
    (void)state;
    sim_share_t *s;
    assert_int_equal(sim_share_create(16, U, 1ull << 30, &s), GMUX_OK);
    double d;
    /* two ranges in one unit, one range over three units (partly), overlapping
     * the next range, and ranges outside the region: 1 + 4 units of 64 */
    eng_range_t r[] = {{BASE + 10, 100, ENG_ACCESS_READ},
                       {BASE + 200, 100, ENG_ACCESS_READ},
                       {BASE + 5 * U - 1, 2 * U + 2, ENG_ACCESS_READ},
                       {BASE + 7 * U, U, ENG_ACCESS_WRITE},
                       {BASE - U, U, ENG_ACCESS_READ},
                       {BASE + SIZE, U, ENG_ACCESS_READ}};
    assert_int_equal(sim_share_launch(s, BASE, SIZE, r, 6, &d), GMUX_OK);
    assert_true(d > 5.0 / 64 - 1e-12 && d < 5.0 / 64 + 1e-12);
    /* a range reaching into the region from below counts its units inside */
    eng_range_t below = {BASE - U, 2 * U, ENG_ACCESS_READ};
    assert_int_equal(sim_share_launch(s, BASE, SIZE, &below, 1, &d), GMUX_OK);
    assert_true(d > 1.0 / 64 - 1e-12 && d < 1.0 / 64 + 1e-12);
    /* nothing touched */
    assert_int_equal(sim_share_launch(s, BASE, SIZE, r, 0, &d), GMUX_OK);
    assert_true(d == 0.0);
    sim_share_destroy(s);
}

static void test_share_so_far_is_the_union_per_key(void **state)
{
    (void)state;
    sim_share_t *s;
    assert_int_equal(sim_share_create(16, U, 1ull << 30, &s), GMUX_OK);
    sim_share_key_t k = {1, 2, 3, BASE, SIZE};
    double d;
    assert_false(sim_share_get(s, &k, &d)); /* nothing observed */
    /* a sweep: 3 units per launch, disjoint */
    for (uint64_t b = 0; b < 4; b++) {
        eng_range_t r = {BASE + 3 * b * U, 3 * U, ENG_ACCESS_READ};
        assert_int_equal(sim_share_observe(s, &k, &r, 1), GMUX_OK);
        assert_true(sim_share_get(s, &k, &d));
        assert_true(d > 3.0 * (double)(b + 1) / 64 - 1e-12);
        assert_true(d < 3.0 * (double)(b + 1) / 64 + 1e-12);
    }
    /* the same units again add nothing */
    eng_range_t again = {BASE, 12 * U, ENG_ACCESS_READ};
    assert_int_equal(sim_share_observe(s, &k, &again, 1), GMUX_OK);
    assert_true(sim_share_get(s, &k, &d));
    assert_true(d > 12.0 / 64 - 1e-12 && d < 12.0 / 64 + 1e-12);
    /* every other field of the key is another key */
    sim_share_key_t o[] = {{0, 2, 3, BASE, SIZE},
                           {1, 0, 3, BASE, SIZE},
                           {1, 2, 0, BASE, SIZE},
                           {1, 2, 3, BASE + SIZE, SIZE},
                           {1, 2, 3, BASE, SIZE / 2}};
    for (int i = 0; i < 5; i++)
        assert_false(sim_share_get(s, &o[i], &d));
    /* the last unit of a region whose size is not a multiple of the unit */
    sim_share_key_t odd = {1, 2, 3, BASE, 2 * U + 1};
    eng_range_t tail = {BASE + 2 * U, 1, ENG_ACCESS_READ};
    assert_int_equal(sim_share_observe(s, &odd, &tail, 1), GMUX_OK);
    assert_true(sim_share_get(s, &odd, &d));
    assert_true(d > 1.0 / 3 - 1e-12 && d < 1.0 / 3 + 1e-12);
    sim_share_destroy(s);
}

static void test_bounded(void **state)
{
    (void)state;
    sim_share_t *s;
    assert_int_equal(sim_share_create(16, U, SIZE, &s), GMUX_OK);
    double d;
    eng_range_t r = {BASE, U, ENG_ACCESS_READ};
    /* larger than max_bytes: never prefetched whole, not tracked */
    sim_share_key_t big = {0, 0, 0, BASE, SIZE + 1};
    assert_int_equal(sim_share_observe(s, &big, &r, 1), GMUX_OK);
    assert_false(sim_share_get(s, &big, &d));
    /* far more keys than slots: each lookup finds its own key's share or nothing */
    uint32_t found = 0;
    for (uint32_t t = 0; t < 500; t++) {
        sim_share_key_t k = {t, 0, 0, BASE, SIZE};
        eng_range_t rt = {BASE, (uint64_t)(t % 64 + 1) * U, ENG_ACCESS_READ};
        assert_int_equal(sim_share_observe(s, &k, &rt, 1), GMUX_OK);
    }
    for (uint32_t t = 0; t < 500; t++) {
        sim_share_key_t k = {t, 0, 0, BASE, SIZE};
        if (!sim_share_get(s, &k, &d))
            continue;
        found++;
        double want = (double)(t % 64 + 1) / 64;
        assert_true(d > want - 1e-12 && d < want + 1e-12);
    }
    assert_true(found > 0 && found <= 16);
    sim_share_t *bad;
    assert_int_equal(sim_share_create(16, 0, SIZE, &bad), GMUX_ERR_INVALID);
    sim_share_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_share_counts_units_once),
        cmocka_unit_test(test_share_so_far_is_the_union_per_key),
        cmocka_unit_test(test_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
