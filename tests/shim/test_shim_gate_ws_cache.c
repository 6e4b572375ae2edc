/*
 * The gate's working set kept until the region table changes
 * (src/shim/gate_ws_cache.c): rebuilt after an allocation or a free, and
 * only then; what it holds is the covering set of the managed regions of
 * now.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shim/gate_ws_cache.h"

static shim_gate_ws_cache_t cache;

/* Whether one range of the cache holds all of [lo, hi). */
static int held(uint64_t lo, uint64_t hi)
{
    for (uint32_t i = 0; i < cache.n; i++)
        if (cache.v[i].base <= lo && hi <= cache.v[i].base + cache.v[i].len)
            return 1;
    return 0;
}

/* Whether a range of the cache meets [lo, hi). */
static int met(uint64_t lo, uint64_t hi)
{
    for (uint32_t i = 0; i < cache.n; i++)
        if (cache.v[i].base < hi && lo < cache.v[i].base + cache.v[i].len)
            return 1;
    return 0;
}

static void test_rebuilt_only_after_a_change(void **state)
{
    (void)state;
    shim_regions_t t;
    assert_int_equal(shim_regions_init(&t), GMUX_OK);
    memset(&cache, 0, sizeof(cache));
    assert_int_equal(shim_regions_insert(&t, 0x10000, 0x1000, SHIM_REGION_MANAGED, 0), GMUX_OK);
    assert_int_equal(shim_regions_insert(&t, 0x20000, 0x1000, SHIM_REGION_MANAGED, 0), GMUX_OK);
    assert_int_equal(shim_regions_insert(&t, 0x30000, 0x1000, SHIM_REGION_DEVICE, 0), GMUX_OK);
    assert_true(shim_gate_ws_cache_update(&cache, &t)); /* the first: built */
    assert_int_equal(cache.n, 2);
    assert_false(cache.coarse);
    assert_int_equal(cache.allocs, 2);
    assert_true(held(0x10000, 0x11000) && held(0x20000, 0x21000));
    assert_false(met(0x30000, 0x31000)); /* pinned: not announced */
    /* nothing changed: kept */
    assert_false(shim_gate_ws_cache_update(&cache, &t));
    assert_false(shim_gate_ws_cache_update(&cache, &t));
    assert_int_equal(cache.n, 2);
    /* an allocation: rebuilt, with it */
    assert_int_equal(shim_regions_insert(&t, 0x40000, 0x2000, SHIM_REGION_MANAGED, 0), GMUX_OK);
    assert_true(shim_gate_ws_cache_update(&cache, &t));
    assert_int_equal(cache.n, 3);
    assert_true(held(0x40000, 0x42000));
    assert_false(shim_gate_ws_cache_update(&cache, &t));
    /* a free: rebuilt, without it */
    assert_int_equal(shim_regions_remove(&t, 0x10000, NULL), GMUX_OK);
    assert_true(shim_gate_ws_cache_update(&cache, &t));
    assert_int_equal(cache.n, 2);
    assert_false(met(0x10000, 0x11000));
    assert_int_equal(cache.allocs, 2);
    /* removals by range and by context count too */
    assert_int_equal(shim_regions_remove_range(&t, 0x20000, 0x100), 1);
    assert_true(shim_gate_ws_cache_update(&cache, &t));
    assert_false(met(0x20000, 0x21000));
    assert_int_equal(shim_regions_insert_in(&t, 0x50000, 0x1000, SHIM_REGION_MANAGED, 0, 0xc0, 0),
                     GMUX_OK);
    assert_true(shim_gate_ws_cache_update(&cache, &t));
    assert_true(held(0x50000, 0x51000));
    shim_region_t out[4];
    assert_int_equal(shim_regions_remove_ctx(&t, 0xc0, out, 4), 1);
    assert_true(shim_gate_ws_cache_update(&cache, &t));
    assert_false(met(0x50000, 0x51000));
    assert_int_equal(cache.n, 1);
    /* a free and an allocation of the same place and size: still rebuilt */
    assert_int_equal(shim_regions_remove(&t, 0x40000, NULL), GMUX_OK);
    assert_int_equal(shim_regions_insert(&t, 0x40000, 0x2000, SHIM_REGION_DEVICE, 0), GMUX_OK);
    assert_true(shim_gate_ws_cache_update(&cache, &t));
    assert_int_equal(cache.n, 0);
    shim_regions_fini(&t);
}

/* More managed regions than the cap: the coarse set is kept as well. */
static void test_coarse_set_kept(void **state)
{
    (void)state;
    shim_regions_t t;
    assert_int_equal(shim_regions_init(&t), GMUX_OK);
    memset(&cache, 0, sizeof(cache));
    for (uint64_t i = 0; i < SHIM_GATE_WS_CAP + 10; i++)
        assert_int_equal(
            shim_regions_insert(&t, 0x100000 + i * 0x2000, 0x1000, SHIM_REGION_MANAGED, 0),
            GMUX_OK);
    assert_true(shim_gate_ws_cache_update(&cache, &t));
    assert_true(cache.coarse);
    assert_int_equal(cache.n, SHIM_GATE_WS_CAP);
    assert_false(shim_gate_ws_cache_update(&cache, &t));
    assert_true(cache.coarse);
    /* back under the cap: no longer coarse */
    for (uint64_t i = 0; i < 11; i++)
        assert_int_equal(shim_regions_remove(&t, 0x100000 + i * 0x2000, NULL), GMUX_OK);
    assert_true(shim_gate_ws_cache_update(&cache, &t));
    assert_false(cache.coarse);
    assert_int_equal(cache.n, SHIM_GATE_WS_CAP - 1);
    shim_regions_fini(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rebuilt_only_after_a_change),
        cmocka_unit_test(test_coarse_set_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
