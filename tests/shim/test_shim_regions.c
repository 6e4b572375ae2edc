/* The shim's region table: an interval map of allocations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "shim/regions.h"

static int setup(void **state)
{
    shim_regions_t *t = malloc(sizeof(*t));
    if (!t || shim_regions_init(t) != GMUX_OK)
        return -1;
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    shim_regions_fini(*state);
    free(*state);
    return 0;
}

static void test_find_by_any_interior_address(void **state)
{
    shim_regions_t *t = *state;
    assert_int_equal(shim_regions_insert(t, 0x1000, 0x100, SHIM_REGION_MANAGED, 0), GMUX_OK);
    assert_int_equal(shim_regions_insert(t, 0x3000, 0x1000, SHIM_REGION_VMM, 2), GMUX_OK);
    shim_region_t r;
    assert_true(shim_regions_find(t, 0x1000, &r));
    assert_int_equal(r.base, 0x1000);
    assert_true(shim_regions_find(t, 0x10ff, &r));
    assert_int_equal(r.size, 0x100);
    assert_false(shim_regions_find(t, 0x1100, &r)); /* one past the end */
    assert_false(shim_regions_find(t, 0xfff, &r));
    assert_false(shim_regions_find(t, 0x2000, &r)); /* the gap */
    assert_true(shim_regions_find(t, 0x3abc, &r));
    assert_int_equal(r.kind, SHIM_REGION_VMM);
    assert_int_equal(r.loc_type, 2);
    assert_false(shim_regions_find(t, 0, &r));
    assert_false(shim_regions_find(t, UINT64_MAX, &r));
}

static void test_counts_bytes_per_kind_and_remove(void **state)
{
    shim_regions_t *t = *state;
    shim_regions_insert(t, 0x10000, 100, SHIM_REGION_MANAGED, 0);
    shim_regions_insert(t, 0x20000, 200, SHIM_REGION_MANAGED, 0);
    shim_regions_insert(t, 0x30000, 300, SHIM_REGION_ASYNC, 0);
    assert_int_equal(shim_regions_bytes(t, SHIM_REGION_MANAGED), 300);
    assert_int_equal(shim_regions_count(t, SHIM_REGION_MANAGED), 2);
    assert_int_equal(shim_regions_bytes(t, SHIM_REGION_ASYNC), 300);
    assert_int_equal(shim_regions_total_bytes(t), 600);
    shim_region_t r;
    assert_int_equal(shim_regions_remove(t, 0x20001, &r), GMUX_ERR_NOT_FOUND); /* not a base */
    assert_int_equal(shim_regions_remove(t, 0x20000, &r), GMUX_OK);
    assert_int_equal(r.size, 200);
    assert_int_equal(shim_regions_remove(t, 0x20000, &r), GMUX_ERR_NOT_FOUND);
    assert_int_equal(shim_regions_bytes(t, SHIM_REGION_MANAGED), 100);
    assert_false(shim_regions_find(t, 0x20000, NULL));
    assert_true(shim_regions_find(t, 0x30000, NULL));
}

static void test_overlap_replaces_stale_regions(void **state)
{
    shim_regions_t *t = *state;
    shim_regions_insert(t, 0x1000, 0x1000, SHIM_REGION_MANAGED, 0);
    shim_regions_insert(t, 0x2000, 0x1000, SHIM_REGION_MANAGED, 0);
    shim_regions_insert(t, 0x5000, 0x1000, SHIM_REGION_MANAGED, 0);
    /* covers the tail of the first and all of the second */
    assert_int_equal(shim_regions_insert(t, 0x1800, 0x1000, SHIM_REGION_DEVICE, 0), GMUX_OK);
    shim_region_t r;
    assert_false(shim_regions_find(t, 0x1000, &r));
    assert_true(shim_regions_find(t, 0x2700, &r));
    assert_int_equal(r.base, 0x1800);
    assert_false(shim_regions_find(t, 0x2900, &r));
    assert_true(shim_regions_find(t, 0x5000, &r));
    assert_int_equal(shim_regions_bytes(t, SHIM_REGION_MANAGED), 0x1000);
    assert_int_equal(shim_regions_bytes(t, SHIM_REGION_DEVICE), 0x1000);
    assert_int_equal(shim_regions_insert(t, 0x9000, 0, SHIM_REGION_MANAGED, 0), GMUX_ERR_INVALID);
    assert_int_equal(shim_regions_insert(t, UINT64_MAX - 10, 100, SHIM_REGION_MANAGED, 0),
                     GMUX_ERR_INVALID);
}

static void test_remove_range_for_unmap(void **state)
{
    shim_regions_t *t = *state;
    for (uint64_t i = 0; i < 8; i++)
        shim_regions_insert(t, 0x100000 + i * 0x1000, 0x1000, SHIM_REGION_VMM, 1);
    assert_int_equal(shim_regions_remove_range(t, 0x102000, 0x3000), 3);
    assert_true(shim_regions_find(t, 0x101fff, NULL));
    assert_false(shim_regions_find(t, 0x102000, NULL));
    assert_false(shim_regions_find(t, 0x104fff, NULL));
    assert_true(shim_regions_find(t, 0x105000, NULL));
    assert_int_equal(shim_regions_count(t, SHIM_REGION_VMM), 5);
}

static void test_many_regions_grow_and_stay_sorted(void **state)
{
    shim_regions_t *t = *state;
    /* inserted out of order, more than the initial capacity */
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t k = (i * 7919) % 1000;
        assert_int_equal(
            shim_regions_insert(t, 0x10000000 + k * 0x10000, 0x8000 + k, SHIM_REGION_MANAGED, 0),
            GMUX_OK);
    }
    for (uint64_t k = 0; k < 1000; k++) {
        shim_region_t r;
        assert_true(shim_regions_find(t, 0x10000000 + k * 0x10000 + 0x7fff, &r));
        assert_int_equal(r.base, 0x10000000 + k * 0x10000);
        assert_int_equal(r.size, 0x8000 + k);
        assert_false(shim_regions_find(t, 0x10000000 + k * 0x10000 + 0x8000 + k, NULL));
    }
}

static void test_claim_once_per_generation(void **state)
{
    shim_regions_t *t = *state;
    shim_regions_insert(t, 0x1000, 0x1000, SHIM_REGION_MANAGED, 0);
    shim_regions_insert(t, 0x4000, 0x1000, SHIM_REGION_MANAGED, 0);
    shim_regions_insert(t, 0x8000, 0x1000, SHIM_REGION_ASYNC, 0); /* pinned: never claimed */
    const uint64_t vals[] = {0x1010, 42, 0x1ff0, 0x8000, 0x4fff, 0x9999};
    shim_range_t out[8];
    size_t hits = 0;
    size_t n = shim_regions_claim(t, vals, 6, 1, 0, UINT64_MAX, out, NULL, 8, &hits);
    assert_int_equal(hits, 4);
    assert_int_equal(n, 2); /* 0x1010 and 0x1ff0 are one region */
    assert_int_equal(out[0].addr, 0x1000);
    assert_int_equal(out[0].len, 0x1000);
    assert_int_equal(out[1].addr, 0x4000);
    /* same generation: nothing left to claim */
    assert_int_equal(shim_regions_claim(t, vals, 6, 1, 0, UINT64_MAX, out, NULL, 8, NULL), 0);
    /* a new generation claims again */
    assert_int_equal(shim_regions_claim(t, vals, 6, 2, 0, UINT64_MAX, out, NULL, 8, NULL), 2);
    /* oversubscribed (managed bytes above the capacity): always */
    assert_int_equal(shim_regions_claim(t, vals, 6, 2, 0, 0x1000, out, NULL, 8, NULL), 2);
    /* the output bound is respected */
    assert_int_equal(shim_regions_claim(t, vals, 6, 3, 0, UINT64_MAX, out, NULL, 1, NULL), 1);
}

/* A voided claim gives each region its generation back, so the next claim
 * finds it again; a region claimed or marked since keeps what it got. */
static void test_unclaim_restores_generation(void **state)
{
    shim_regions_t *t = *state;
    shim_regions_insert(t, 0x1000, 0x1000, SHIM_REGION_MANAGED, 0);
    shim_regions_insert(t, 0x4000, 0x1000, SHIM_REGION_MANAGED, 0);
    const uint64_t vals[] = {0x1000, 0x4000};
    shim_range_t out[8];
    shim_region_was_t olds[8];
    assert_int_equal(shim_regions_claim(t, vals, 2, 3, 0, UINT64_MAX, out, NULL, 8, NULL), 2);
    /* generation 4: both claimed, then the claim is voided */
    assert_int_equal(shim_regions_claim(t, vals, 2, 4, 0, UINT64_MAX, out, olds, 8, NULL), 2);
    assert_int_equal(olds[0].gen, 3);
    assert_int_equal(olds[1].gen, 3);
    /* meanwhile the program moved 0x4000 away (generation 0) */
    assert_int_equal(shim_regions_mark(t, 0x4000, 0x1000, 0, 0, false), 1);
    shim_regions_unclaim(t, out, olds, 2, 4);
    shim_region_t r;
    assert_true(shim_regions_find(t, 0x1000, &r));
    assert_int_equal(r.gen, 3);
    assert_true(shim_regions_find(t, 0x4000, &r));
    assert_int_equal(r.gen, 0);
    /* both are claimed again in generation 4 */
    assert_int_equal(shim_regions_claim(t, vals, 2, 4, 0, UINT64_MAX, out, NULL, 8, NULL), 2);
}

/* A region the program moved to the device on one stream counts as claimed
 * for launches on that stream only; a claim from another stream takes it
 * (the shim prefetches it, ordered before that launch) and clears the
 * stream, so later claims of the generation find nothing. */
static void test_claim_from_other_stream(void **state)
{
    shim_regions_t *t = *state;
    shim_regions_insert(t, 0x1000, 0x1000, SHIM_REGION_MANAGED, 0);
    const uint64_t vals[] = {0x1000};
    shim_range_t out[1];
    assert_int_equal(shim_regions_mark(t, 0x1000, 0x1000, 5, 7, true), 1);
    assert_int_equal(shim_regions_claim(t, vals, 1, 5, 7, UINT64_MAX, out, NULL, 1, NULL), 0);
    assert_int_equal(shim_regions_claim(t, vals, 1, 5, 9, UINT64_MAX, out, NULL, 1, NULL), 1);
    assert_int_equal(shim_regions_claim(t, vals, 1, 5, 9, UINT64_MAX, out, NULL, 1, NULL), 0);
    assert_int_equal(shim_regions_claim(t, vals, 1, 5, 7, UINT64_MAX, out, NULL, 1, NULL), 0);
}

/* A claim from another stream that is voided (a captured launch) gives the
 * region back the stream of the program's prefetch it cleared: the next
 * claim from another stream takes it again (on main 0: the claim left the
 * region taken for ordered on every stream). */
static void test_unclaim_restores_stream(void **state)
{
    shim_regions_t *t = *state;
    shim_regions_insert(t, 0x1000, 0x1000, SHIM_REGION_MANAGED, 0);
    const uint64_t vals[] = {0x1000};
    shim_range_t out[1];
    shim_region_was_t olds[1];
    assert_int_equal(shim_regions_mark(t, 0x1000, 0x1000, 5, 7, true), 1);
    assert_int_equal(shim_regions_claim(t, vals, 1, 5, 9, UINT64_MAX, out, olds, 1, NULL), 1);
    shim_regions_unclaim(t, out, olds, 1, 5);
    shim_region_t r;
    assert_true(shim_regions_find(t, 0x1000, &r));
    assert_int_equal(r.gen, 5);
    assert_int_equal(r.order, 7);
    assert_int_equal(shim_regions_claim(t, vals, 1, 5, 9, UINT64_MAX, out, NULL, 1, NULL), 1);
    assert_int_equal(shim_regions_claim(t, vals, 1, 5, 7, UINT64_MAX, out, NULL, 1, NULL), 0);
}

/* What a program's own prefetch of a range tells the table: every managed
 * region it overlaps (to the host), or those it contains whole (to the
 * device), takes the given generation; pinned regions and gaps nothing. */
static void test_mark_overlapped_or_whole(void **state)
{
    shim_regions_t *t = *state;
    shim_regions_insert(t, 0x1000, 0x1000, SHIM_REGION_MANAGED, 0);
    shim_regions_insert(t, 0x4000, 0x1000, SHIM_REGION_MANAGED, 0);
    shim_regions_insert(t, 0x6000, 0x1000, SHIM_REGION_ASYNC, 0);
    shim_regions_insert(t, 0x8000, 0x1000, SHIM_REGION_MANAGED, 0);
    const uint64_t vals[] = {0x1000, 0x4000, 0x6000, 0x8000};
    shim_range_t out[8];
    assert_int_equal(shim_regions_claim(t, vals, 4, 5, 0, UINT64_MAX, out, NULL, 8, NULL), 3);
    /* from a gap, across the end of 0x1000.. into the start of 0x4000 (to the host) */
    assert_int_equal(shim_regions_mark(t, 0x800, 0x3900, 0, 0, false), 2);
    assert_int_equal(shim_regions_claim(t, vals, 4, 5, 0, UINT64_MAX, out, NULL, 8, NULL), 2);
    assert_int_equal(out[0].addr, 0x1000);
    assert_int_equal(out[1].addr, 0x4000);
    /* [0x4800, 0x8800) covers none whole; [0x4000, 0x9000) covers two (the
     * pinned one not counted), and they count as claimed */
    assert_int_equal(shim_regions_mark(t, 0x4800, 0x4000, 0, 0, false), 2);
    assert_int_equal(shim_regions_mark(t, 0x4800, 0x4000, 5, 0, true), 0);
    assert_int_equal(shim_regions_mark(t, 0x4000, 0x5000, 5, 0, true), 2);
    assert_int_equal(shim_regions_claim(t, vals, 4, 5, 0, UINT64_MAX, out, NULL, 8, NULL), 0);
    /* past the last region, empty and wrapping ranges: nothing */
    assert_int_equal(shim_regions_mark(t, 0x9000, 0x1000, 0, 0, false), 0);
    assert_int_equal(shim_regions_mark(t, 0x1000, 0, 0, 0, false), 0);
    assert_int_equal(shim_regions_mark(t, 0x1000, UINT64_MAX, 0, 0, false), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_find_by_any_interior_address, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counts_bytes_per_kind_and_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlap_replaces_stale_regions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_range_for_unmap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_regions_grow_and_stay_sorted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_once_per_generation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unclaim_restores_generation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unclaim_restores_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_from_other_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mark_overlapped_or_whole, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
