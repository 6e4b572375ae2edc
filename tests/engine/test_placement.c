/* Tests of placement: victims under OPT, LRU and FIFO, and capacity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/placement.h"

static eng_regions_t *make_regions(uint32_t nchunks)
{
    eng_regions_t *r;
    uint32_t reg;
    assert_int_equal(eng_regions_create(1, 1, &r), GMUX_OK);
    assert_int_equal(eng_regions_alloc(r, 0, 1, 0, nchunks, &reg), GMUX_OK);
    return r;
}

static void set_key(eng_regions_t *r, eng_placement_t *p, uint32_t c, uint64_t key)
{
    eng_regions_chunk(r, c)->key = key;
    eng_place_key_changed(p, c);
}

static void test_opt_evicts_farthest_not_needed(void **state)
{
    (void)state;
    eng_regions_t *r = make_regions(8);
    eng_placement_t *p;
    assert_int_equal(eng_place_create(r, ENG_PLACE_OPT, 4, &p), GMUX_OK);
    const uint64_t keys[4] = {10, 40, 20, ENG_POS_INF};
    for (uint32_t c = 0; c < 4; c++) {
        eng_regions_chunk(r, c)->key = keys[c];
        assert_int_equal(eng_place_insert(p, c), GMUX_OK);
    }
    assert_int_equal(eng_place_insert(p, 4), GMUX_ERR_CAPACITY);
    assert_int_equal(eng_place_victim(p, 5), 3); /* never used again */
    eng_place_remove(p, 3);
    assert_int_equal(eng_place_victim(p, 5), 1); /* used farthest ahead */
    set_key(r, p, 1, 15);                        /* now needed sooner */
    assert_int_equal(eng_place_victim(p, 5), 2);
    assert_int_equal(eng_place_victim(p, 20), ENG_NONE); /* all needed by then */
    assert_int_equal(eng_place_resident(p), 3);
    assert_true(eng_regions_chunk(r, 0)->flags & ENG_CHUNK_RESIDENT);
    assert_false(eng_regions_chunk(r, 3)->flags & ENG_CHUNK_RESIDENT);
    assert_int_equal(eng_place_insert(p, 0), GMUX_ERR_STATE);
    eng_place_destroy(p);
    eng_regions_destroy(r);
}

static void test_lru_and_fifo_orders(void **state)
{
    (void)state;
    eng_regions_t *r = make_regions(8);
    eng_placement_t *lru, *fifo;
    assert_int_equal(eng_place_create(r, ENG_PLACE_LRU, 8, &lru), GMUX_OK);
    for (uint32_t c = 0; c < 4; c++) {
        eng_regions_chunk(r, c)->key = ENG_POS_INF;
        assert_int_equal(eng_place_insert(lru, c), GMUX_OK);
    }
    eng_place_touch(lru, 0);
    eng_place_touch(lru, 2);
    assert_int_equal(eng_place_victim(lru, 0), 1);
    eng_regions_chunk(r, 1)->key = 3; /* needed at 3: skipped for a slot needed at 5 */
    assert_int_equal(eng_place_victim(lru, 5), 3);
    eng_place_destroy(lru);
    for (uint32_t c = 0; c < 4; c++)
        eng_regions_chunk(r, c)->flags &= ~(uint32_t)ENG_CHUNK_RESIDENT;
    assert_int_equal(eng_place_create(r, ENG_PLACE_FIFO, 8, &fifo), GMUX_OK);
    for (uint32_t c = 0; c < 4; c++) {
        eng_regions_chunk(r, c)->key = ENG_POS_INF;
        assert_int_equal(eng_place_insert(fifo, (c + 2) % 4), GMUX_OK);
    }
    eng_place_touch(fifo, 2); /* uses do not reorder FIFO */
    assert_int_equal(eng_place_victim(fifo, 0), 2);
    eng_place_remove(fifo, 2);
    assert_int_equal(eng_place_victim(fifo, 0), 3);
    eng_place_destroy(fifo);
    eng_regions_destroy(r);
}

static void test_opt_heap_many(void **state)
{
    (void)state;
    /* the heap returns keys in descending order under random updates */
    eng_regions_t *r = make_regions(300);
    eng_placement_t *p;
    assert_int_equal(eng_place_create(r, ENG_PLACE_OPT, 300, &p), GMUX_OK);
    uint64_t s = 12345;
    for (uint32_t c = 0; c < 300; c++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        eng_regions_chunk(r, c)->key = (s >> 33) % 1000;
        assert_int_equal(eng_place_insert(p, c), GMUX_OK);
    }
    for (uint32_t i = 0; i < 200; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        set_key(r, p, (uint32_t)((s >> 33) % 300), (s >> 13) % 1000);
    }
    uint64_t prev = UINT64_MAX;
    for (uint32_t i = 0; i < 300; i++) {
        uint32_t v = eng_place_victim(p, 0);
        if (v == ENG_NONE)
            break;
        uint64_t k = eng_regions_chunk(r, v)->key;
        assert_true(k <= prev);
        prev = k;
        eng_place_remove(p, v);
    }
    eng_place_destroy(p);
    eng_regions_destroy(r);
}

/* Write-back weight: a clean victim is preferred to a dirty one used farther
 * ahead while its next use is at least 1/w as far; w = 0 is plain OPT. */
static void test_opt_weighs_write_backs(void **state)
{
    (void)state;
    eng_regions_t *r = make_regions(8);
    eng_placement_t *p;
    assert_int_equal(eng_place_create(r, ENG_PLACE_OPT, 8, &p), GMUX_OK);
    const uint64_t keys[4] = {100, 300, 50, 60};
    const bool dirty[4] = {false, true, false, true};
    for (uint32_t c = 0; c < 4; c++) {
        eng_regions_chunk(r, c)->key = keys[c];
        if (dirty[c])
            eng_regions_chunk(r, c)->flags |= ENG_CHUNK_DIRTY;
        assert_int_equal(eng_place_insert(p, c), GMUX_OK);
    }
    assert_int_equal(eng_place_victim(p, 10), 1); /* plain OPT: farthest, dirty or not */
    eng_place_set_wb_weight(p, 1.0);
    assert_int_equal(eng_place_victim(p, 10), 1);
    eng_place_set_wb_weight(p, 3.0); /* 90 * 3 < 290 */
    assert_int_equal(eng_place_victim(p, 10), 1);
    eng_place_set_wb_weight(p, 3.3); /* 90 * 3.3 >= 290 */
    assert_int_equal(eng_place_victim(p, 10), 0);
    assert_int_equal(eng_place_victim(p, 100), 1); /* chunk 0 is needed by then */
    /* ties: plain OPT takes the higher id, the weighted rule the clean chunk */
    set_key(r, p, 0, 300);
    eng_place_set_wb_weight(p, 0.0);
    assert_int_equal(eng_place_victim(p, 10), 1);
    eng_place_set_wb_weight(p, 1.0);
    assert_int_equal(eng_place_victim(p, 10), 0);
    /* no known next use: the dirty chunk goes first, unless a clean one has none either */
    set_key(r, p, 0, 100);
    set_key(r, p, 1, ENG_POS_INF);
    eng_place_set_wb_weight(p, 100.0);
    assert_int_equal(eng_place_victim(p, 10), 1);
    set_key(r, p, 2, ENG_POS_INF);
    assert_int_equal(eng_place_victim(p, 10), 2);
    /* a planned write makes a clean chunk count as dirty from its next key change */
    set_key(r, p, 2, 400);
    set_key(r, p, 1, 200);
    eng_place_set_wb_weight(p, 1.0);
    assert_int_equal(eng_place_victim(p, 10), 2);
    eng_regions_chunk(r, 2)->flags |= ENG_CHUNK_WPLAN;
    eng_place_key_changed(p, 2);
    eng_place_set_wb_weight(p, 5.0); /* clean 0: 90 * 5 >= 390 */
    assert_int_equal(eng_place_victim(p, 10), 0);
    eng_place_set_wb_weight(p, 4.0); /* 90 * 4 < 390 */
    assert_int_equal(eng_place_victim(p, 10), 2);
    /* a fresh fill is clean */
    eng_place_remove(p, 2);
    eng_regions_chunk(r, 2)->flags &= ~(uint32_t)ENG_CHUNK_DIRTY;
    assert_int_equal(eng_place_insert(p, 2), GMUX_OK);
    assert_false(eng_regions_chunk(r, 2)->flags & ENG_CHUNK_WPLAN);
    eng_place_set_wb_weight(p, 1.0);
    assert_int_equal(eng_place_victim(p, 10), 2); /* clean, used farthest */
    eng_place_destroy(p);
    eng_regions_destroy(r);
}

/* Split into clean and dirty heaps, plain OPT still returns the farthest
 * next use first (ties to the higher id) under random keys and dirtiness. */
static void test_opt_two_heaps_order(void **state)
{
    (void)state;
    eng_regions_t *r = make_regions(300);
    eng_placement_t *p;
    assert_int_equal(eng_place_create(r, ENG_PLACE_OPT, 300, &p), GMUX_OK);
    uint64_t s = 777;
    for (uint32_t c = 0; c < 300; c++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        eng_regions_chunk(r, c)->key = (s >> 33) % 500;
        if ((s >> 20) & 1)
            eng_regions_chunk(r, c)->flags |= ENG_CHUNK_DIRTY;
        assert_int_equal(eng_place_insert(p, c), GMUX_OK);
    }
    for (uint32_t i = 0; i < 300; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t c = (uint32_t)((s >> 33) % 300);
        if ((s >> 21) & 1)
            eng_regions_chunk(r, c)->flags |= ENG_CHUNK_WPLAN;
        set_key(r, p, c, (s >> 13) % 500);
    }
    uint64_t prev = UINT64_MAX;
    uint32_t prev_c = UINT32_MAX, n = 0;
    for (;;) {
        uint32_t v = eng_place_victim(p, 0);
        if (v == ENG_NONE)
            break;
        uint64_t k = eng_regions_chunk(r, v)->key;
        assert_true(k < prev || (k == prev && v < prev_c));
        prev = k;
        prev_c = v;
        eng_place_remove(p, v);
        n++;
    }
    assert_true(n > 280); /* all but those with key 0 */
    assert_int_equal(eng_place_resident(p), 300 - n);
    eng_place_destroy(p);
    eng_regions_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opt_evicts_farthest_not_needed),
        cmocka_unit_test(test_lru_and_fifo_orders),
        cmocka_unit_test(test_opt_heap_many),
        cmocka_unit_test(test_opt_weighs_write_backs),
        cmocka_unit_test(test_opt_two_heaps_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
