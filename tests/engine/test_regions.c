/* Tests of regions and chunks: ids, lookup, reuse after release. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/regions.h"

static void test_alloc_lookup_release(void **state)
{
    (void)state;
    eng_regions_t *r;
    assert_int_equal(eng_regions_create(2, 1024, &r), GMUX_OK);
    uint32_t a, b, c;
    assert_int_equal(eng_regions_alloc(r, 0, 1, 10000, 3000, &a), GMUX_OK);        /* 3 chunks */
    assert_int_equal(eng_regions_alloc(r, 0, 2, 20000, 1024, &b), GMUX_OK);        /* 1 chunk */
    assert_int_equal(eng_regions_alloc(r, 0, 3, 12000, 100, &c), GMUX_ERR_EXISTS); /* overlap */
    assert_int_equal(eng_regions_alloc(r, 1, 1, 10000, 5000, &c), GMUX_OK);        /* other task */
    assert_int_equal(eng_regions_chunk_limit(r), 3 + 1 + 5);
    assert_int_equal(eng_regions_live_chunks(r), 9);
    assert_int_equal(eng_regions_find(r, 0, 10000), a);
    assert_int_equal(eng_regions_find(r, 0, 12999), a);
    assert_int_equal(eng_regions_find(r, 0, 13000), ENG_NONE);
    assert_int_equal(eng_regions_find(r, 0, 9999), ENG_NONE);
    assert_int_equal(eng_regions_find(r, 0, 20500), b);
    assert_int_equal(eng_regions_find(r, 1, 14000), c);
    const eng_region_t *ra = eng_regions_get(r, a);
    assert_int_equal(eng_regions_chunk_addr(r, ra->first_chunk + 2), 10000 + 2048);
    assert_int_equal(eng_regions_chunk(r, ra->first_chunk + 1)->region, a);
    uint32_t got;
    assert_int_equal(eng_regions_unmap(r, 0, 1, &got), GMUX_OK);
    assert_int_equal(got, a);
    assert_int_equal(eng_regions_find(r, 0, 10000), ENG_NONE);
    assert_int_equal(eng_regions_unmap(r, 0, 1, &got), GMUX_ERR_NOT_FOUND);
    uint32_t first = ra->first_chunk;
    eng_regions_release(r, a);
    assert_int_equal(eng_regions_live_chunks(r), 6);
    /* the released ids are reused (first fit), no new ids are taken */
    uint32_t d;
    assert_int_equal(eng_regions_alloc(r, 0, 4, 10000, 2048, &d), GMUX_OK);
    assert_int_equal(eng_regions_get(r, d)->first_chunk, first);
    assert_int_equal(eng_regions_chunk_limit(r), 9);
    assert_true(eng_regions_chunk(r, first)->flags & ENG_CHUNK_LIVE);
    eng_regions_destroy(r);
}

static void test_ids_coalesce(void **state)
{
    (void)state;
    eng_regions_t *r;
    assert_int_equal(eng_regions_create(1, 1, &r), GMUX_OK);
    uint32_t x[3], got;
    for (int i = 0; i < 3; i++)
        assert_int_equal(eng_regions_alloc(r, 0, (uint64_t)i, 100 * (uint64_t)i, 10, &x[i]),
                         GMUX_OK);
    const uint64_t order[3] = {2, 0, 1}; /* the last release joins both neighbours */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(eng_regions_unmap(r, 0, order[i], &got), GMUX_OK);
        assert_int_equal(got, x[order[i]]);
        eng_regions_release(r, got);
    }
    /* 30 ids free, adjacent: a 30-chunk region fits without growing */
    uint32_t y;
    assert_int_equal(eng_regions_alloc(r, 0, 9, 0, 30, &y), GMUX_OK);
    assert_int_equal(eng_regions_chunk_limit(r), 30);
    assert_int_equal(eng_regions_get(r, y)->first_chunk, 0);
    eng_regions_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_lookup_release),
        cmocka_unit_test(test_ids_coalesce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
