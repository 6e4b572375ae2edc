/* Tests of placement: victims under OPT, LRU and FIFO, and capacity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/placement.h"
#include "tfeed.h"

static eng_regions_t *make_regions(uint32_t nchunks)
{
    eng_regions_t *r = tf_regions_one(nchunks);
    assert_non_null(r);
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

/* Chunks 0-3 clean, used at 100, 110, 120, 130; 4 and 5 dirty, at 300, 310. */
static eng_placement_t *six_chunks(eng_regions_t *r)
{
    eng_placement_t *p;
    assert_int_equal(eng_place_create(r, ENG_PLACE_OPT, 8, &p), GMUX_OK);
    const uint64_t keys[6] = {100, 110, 120, 130, 300, 310};
    for (uint32_t c = 0; c < 6; c++) {
        eng_regions_chunk(r, c)->key = keys[c];
        eng_regions_chunk(r, c)->flags = ENG_CHUNK_LIVE | (c >= 4 ? ENG_CHUNK_DIRTY : 0u);
        assert_int_equal(eng_place_insert(p, c), GMUX_OK);
    }
    return p;
}

/* While the planned write-backs keep up with the fills, OPT (ties to clean);
 * once they lag, a dirty victim counts wb/fill times a refetch. */
static void test_opt_weighs_write_backs(void **state)
{
    (void)state;
    eng_regions_t *r = make_regions(8);
    eng_placement_t *p = six_chunks(r);
    eng_place_set_wb_costs(p, 10.0, 33.0, 0.0);
    assert_int_equal(eng_place_evict(p, 10), 5);  /* keeping up: OPT, a write-back (+23) */
    assert_int_equal(eng_place_evict(p, 10), 3);  /* lagging: clean, 120 * 3.3 >= 290 (13) */
    assert_int_equal(eng_place_evict(p, 10), 2);  /* 110 * 3.3 >= 290 (3) */
    assert_int_equal(eng_place_victim(p, 10), 1); /* 100 * 3.3 >= 290 */
    set_key(r, p, 4, 350);
    assert_int_equal(eng_place_victim(p, 10), 4); /* 100 * 3.3 < 340 */
    set_key(r, p, 4, 300);
    assert_int_equal(eng_place_evict(p, 10), 1);  /* a fill without write-back: caught up */
    assert_int_equal(eng_place_victim(p, 10), 4); /* OPT again */
    assert_int_equal(eng_place_victim(p, 300), ENG_NONE);
    assert_int_equal(eng_place_resident(p), 2);
    /* ties go to the clean chunk (plain OPT: to the higher id) */
    set_key(r, p, 0, 300);
    assert_int_equal(eng_place_victim(p, 10), 0);
    eng_place_set_wb_costs(p, 0.0, 0.0, 0.0); /* off */
    assert_int_equal(eng_place_victim(p, 10), 4);
    eng_place_destroy(p);

    /* slack: idle write-back time banked absorbs one write-back */
    p = six_chunks(r);
    eng_place_set_wb_costs(p, 10.0, 33.0, 30.0);
    assert_int_equal(eng_place_evict(p, 10), 5); /* -30 + 23 */
    assert_int_equal(eng_place_evict(p, 10), 4); /* still OPT: -7 + 23 = 16 */
    assert_int_equal(eng_place_victim(p, 10), 3);
    eng_place_destroy(p);

    /* with write-backs no dearer than fills it is OPT with clean-first ties */
    p = six_chunks(r);
    eng_place_set_wb_costs(p, 10.0, 10.0, 0.0);
    for (uint32_t want = 5; want >= 4; want--)
        assert_int_equal(eng_place_evict(p, 10), want);
    eng_place_destroy(p);

    /* a dirty chunk with no known next use goes first; a clean one with none
     * goes before it; a planned write makes a clean chunk count as dirty */
    p = six_chunks(r);
    eng_place_set_wb_costs(p, 10.0, 33.0, 0.0);
    assert_int_equal(eng_place_evict(p, 10), 5); /* lagging from here */
    set_key(r, p, 4, ENG_POS_INF);
    assert_int_equal(eng_place_victim(p, 10), 4);
    set_key(r, p, 0, ENG_POS_INF);
    assert_int_equal(eng_place_victim(p, 10), 0);
    eng_regions_chunk(r, 0)->flags |= ENG_CHUNK_WPLAN;
    eng_place_key_changed(p, 0);
    assert_int_equal(eng_place_victim(p, 10), 4); /* both dirty, ties to the higher id */
    set_key(r, p, 4, 300);
    assert_int_equal(eng_place_victim(p, 10), 0);
    /* a fresh fill is clean */
    eng_place_remove(p, 0);
    assert_int_equal(eng_place_insert(p, 0), GMUX_OK);
    assert_false(eng_regions_chunk(r, 0)->flags & ENG_CHUNK_WPLAN);
    set_key(r, p, 0, 200);
    assert_int_equal(eng_place_victim(p, 10), 0); /* clean: 190 * 3.3 >= 290 */
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

/* LRU and FIFO: the chunks a launch needs (keys at or before the position)
 * are skipped by every victim search of that launch; the searches look at
 * each of them once, not once per eviction (a launch of n chunks whose
 * chunks sat at the list's head cost n^2/2 steps: 24-41 s on a large trace). */
static void test_lru_fifo_skip_is_linear(void **state)
{
    (void)state;
    const uint32_t n = 40000, half = n / 2;
    for (int pol = 0; pol < 2; pol++) {
        eng_regions_t *r = make_regions(n + half);
        eng_placement_t *p;
        assert_int_equal(eng_place_create(r, pol ? ENG_PLACE_FIFO : ENG_PLACE_LRU, n, &p), GMUX_OK);
        for (uint32_t c = 0; c < n; c++) {
            eng_regions_chunk(r, c)->key = ENG_POS_INF;
            assert_int_equal(eng_place_insert(p, c), GMUX_OK);
        }
        for (uint32_t c = 0; c < half; c++) /* the launch at 100 uses the oldest half */
            set_key(r, p, c, 100);
        for (uint32_t i = 0; i < half; i++) { /* and as many chunks not there yet */
            assert_int_equal(eng_place_evict(p, 100), half + i);
            eng_regions_chunk(r, n + i)->key = 100;
            assert_int_equal(eng_place_insert(p, n + i), GMUX_OK);
        }
        assert_int_equal(eng_place_victim(p, 100), ENG_NONE);
        assert_true(eng_place_scanned(p) <= 4ull * n);
        eng_place_destroy(p);
        eng_regions_destroy(r);
    }
}

/* A plain list in the test: the victim is the first resident chunk, oldest
 * first (LRU: least recently used), whose key lies after the position. */
typedef struct ref_list {
    uint32_t v[64];
    uint32_t n;
} ref_list_t;

static void ref_drop(ref_list_t *l, uint32_t c)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (l->v[i] == c) {
            memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(l->v[0]));
            l->n--;
            return;
        }
}

static uint32_t ref_victim(eng_regions_t *r, const ref_list_t *l, uint64_t need)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (eng_regions_chunk(r, l->v[i])->key > need)
            return l->v[i];
    return ENG_NONE;
}

/* Random inserts, removals, uses, key changes and searches at positions that
 * mostly grow (as launches go) and sometimes fall back (a fault's re-plan):
 * every victim is the plain list's. */
static void test_lru_fifo_victims_match_reference(void **state)
{
    (void)state;
    const uint32_t nc = 48;
    uint64_t s = 99;
    for (int pol = 0; pol < 2; pol++) {
        eng_regions_t *r = make_regions(nc);
        eng_placement_t *p;
        assert_int_equal(eng_place_create(r, pol ? ENG_PLACE_FIFO : ENG_PLACE_LRU, nc, &p),
                         GMUX_OK);
        ref_list_t l = {.n = 0};
        uint64_t pos = 10;
        for (uint32_t step = 0; step < 200000; step++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t c = (uint32_t)((s >> 33) % nc);
            eng_chunk_t *x = eng_regions_chunk(r, c);
            bool res = (x->flags & ENG_CHUNK_RESIDENT) != 0;
            uint64_t key = pos + (s >> 20) % 24 - 8; /* some needed now, some later */
            switch ((s >> 45) % 8) {
            case 0:
            case 1:
                if (!res) {
                    x->key = key;
                    assert_int_equal(eng_place_insert(p, c), GMUX_OK);
                    l.v[l.n++] = c;
                }
                break;
            case 2:
                if (res) {
                    eng_place_remove(p, c);
                    ref_drop(&l, c);
                }
                break;
            case 3:
                if (res) {
                    eng_place_touch(p, c);
                    if (pol == 0) {
                        ref_drop(&l, c);
                        l.v[l.n++] = c;
                    }
                }
                break;
            case 4:
                if (res)
                    set_key(r, p, c, key);
                break;
            case 5:
                pos += (s >> 30) % 3;
                if ((s >> 40) % 64 == 0)
                    pos -= pos > 20 ? 12 : 0;
                break;
            default: {
                uint32_t want = ref_victim(r, &l, pos);
                assert_int_equal(eng_place_victim(p, pos), want);
                if (want != ENG_NONE && (s >> 50) & 1) {
                    assert_int_equal(eng_place_evict(p, pos), want);
                    ref_drop(&l, want);
                }
                break;
            }
            }
        }
        eng_place_destroy(p);
        eng_regions_destroy(r);
    }
}

/* The OPT heaps as placement.c kept them until 2026-12-02 (chunk ids only,
 * keys read from the chunks, a changed key sifted up then down): the order
 * eng_place_dirty_at walks, which eng_migrate_clean_idle cleans in, is part
 * of the decisions, so a cheaper heap must keep it entry for entry. */
typedef struct ref_heap {
    uint32_t a[64];
    uint32_t n;
} ref_heap_t;

static bool ref_above(eng_regions_t *r, uint32_t a, uint32_t b)
{
    uint64_t ka = eng_regions_chunk(r, a)->key, kb = eng_regions_chunk(r, b)->key;
    return ka != kb ? ka > kb : a > b;
}

static uint32_t ref_find(const ref_heap_t *h, uint32_t c)
{
    for (uint32_t i = 0; i < h->n; i++)
        if (h->a[i] == c)
            return i;
    return UINT32_MAX;
}

static uint32_t ref_up(eng_regions_t *r, ref_heap_t *h, uint32_t i)
{
    for (; i > 0 && ref_above(r, h->a[i], h->a[(i - 1) / 2]); i = (i - 1) / 2) {
        uint32_t t = h->a[i];
        h->a[i] = h->a[(i - 1) / 2];
        h->a[(i - 1) / 2] = t;
    }
    return i;
}

static void ref_down(eng_regions_t *r, ref_heap_t *h, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, b = i;
        if (l < h->n && ref_above(r, h->a[l], h->a[b]))
            b = l;
        if (l + 1 < h->n && ref_above(r, h->a[l + 1], h->a[b]))
            b = l + 1;
        if (b == i)
            return;
        uint32_t t = h->a[i];
        h->a[i] = h->a[b];
        h->a[b] = t;
        i = b;
    }
}

static void ref_push(eng_regions_t *r, ref_heap_t *h, uint32_t c)
{
    h->a[h->n++] = c;
    ref_up(r, h, h->n - 1);
}

static void ref_del(eng_regions_t *r, ref_heap_t *h, uint32_t c)
{
    uint32_t i = ref_find(h, c);
    h->a[i] = h->a[--h->n];
    if (i < h->n)
        ref_down(r, h, ref_up(r, h, i));
}

/* Random inserts, removals, key changes (up, down, unchanged), chunks turning
 * dirty or clean, and victim searches, on ids past the first thousand too:
 * every victim is the farthest (key, id) after the position, and the dirty
 * heap is the reference's entry for entry after every step. */
static void test_opt_heaps_match_reference(void **state)
{
    (void)state;
    eng_regions_t *r = make_regions(1100);
    eng_placement_t *p;
    assert_int_equal(eng_place_create(r, ENG_PLACE_OPT, 48, &p), GMUX_OK);
    ref_heap_t h[2] = {{.n = 0}, {.n = 0}}; /* clean, dirty */
    bool dirty_ref[1100] = {false};
    uint64_t s = 2026, pos = 10;
    int dirty_walks = 0;
    for (uint32_t step = 0; step < 100000; step++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t c = (uint32_t)((s >> 33) % 48);
        c += c >= 40 ? 1040 : 0; /* ids beyond the first index block */
        eng_chunk_t *x = eng_regions_chunk(r, c);
        bool res = (x->flags & ENG_CHUNK_RESIDENT) != 0;
        uint64_t key = (s >> 20) % 32 == 0 ? ENG_POS_INF : pos + (s >> 22) % 40;
        switch ((s >> 45) % 8) {
        case 0:
        case 1:
            if (!res) {
                x->key = key;
                x->flags =
                    (x->flags & ~(uint32_t)ENG_CHUNK_DIRTY) | ((s >> 50) & 1 ? ENG_CHUNK_DIRTY : 0);
                assert_int_equal(eng_place_insert(p, c), GMUX_OK);
                dirty_ref[c] = (x->flags & ENG_CHUNK_DIRTY) != 0;
                ref_push(r, &h[dirty_ref[c]], c);
            }
            break;
        case 2:
            if (res) {
                eng_place_remove(p, c);
                ref_del(r, &h[dirty_ref[c]], c);
            }
            break;
        case 3:
        case 4:
            if (res) { /* sometimes unchanged */
                uint32_t i = ref_find(&h[dirty_ref[c]], c);
                set_key(r, p, c, (s >> 52) % 4 ? key : x->key);
                ref_down(r, &h[dirty_ref[c]], ref_up(r, &h[dirty_ref[c]], i));
            }
            break;
        case 5:
            if (res) { /* written, or cleaned: the other heap */
                ref_del(r, &h[dirty_ref[c]], c);
                x->flags ^= ENG_CHUNK_DIRTY;
                x->key = key;
                eng_place_key_changed(p, c);
                dirty_ref[c] = !dirty_ref[c];
                ref_push(r, &h[dirty_ref[c]], c);
            }
            break;
        case 6:
            pos += (s >> 30) % 3;
            break;
        default: {
            uint32_t want = ENG_NONE;
            for (int d = 0; d < 2; d++)
                if (h[d].n && eng_regions_chunk(r, h[d].a[0])->key > pos &&
                    (want == ENG_NONE || ref_above(r, h[d].a[0], want)))
                    want = h[d].a[0];
            assert_int_equal(eng_place_victim(p, pos), want);
            if (want != ENG_NONE && (s >> 50) & 1) {
                assert_int_equal(eng_place_evict(p, pos), want);
                ref_del(r, &h[dirty_ref[want]], want);
            }
            break;
        }
        }
        for (uint32_t i = 0; i < h[1].n; i++)
            assert_int_equal(eng_place_dirty_at(p, i), h[1].a[i]);
        assert_int_equal(eng_place_dirty_at(p, h[1].n), ENG_NONE);
        dirty_walks += h[1].n > 4;
    }
    print_message("dirty heap above 4 entries in %d of 100000 steps\n", dirty_walks);
    assert_true(dirty_walks > 30000);
    eng_place_destroy(p);
    eng_regions_destroy(r);
}

/* eng_place_dirty_find is the first entry from `from` on that eng_place_dirty_at
 * walks to with the flags asked for, over random heaps whose chunks' flags
 * change behind the placement's back (as the engine's do), for every start;
 * ENG_NONE past the end. */
static void test_dirty_find_matches_walk(void **state)
{
    (void)state;
    eng_regions_t *r = make_regions(1100);
    eng_placement_t *p;
    assert_int_equal(eng_place_create(r, ENG_PLACE_OPT, 40, &p), GMUX_OK);
    const uint32_t masks[4] = {ENG_CHUNK_DIRTY | ENG_CHUNK_PRESENT, ENG_CHUNK_PRESENT,
                               ENG_CHUNK_WPLAN, 0};
    const uint32_t flip[3] = {ENG_CHUNK_DIRTY, ENG_CHUNK_PRESENT, ENG_CHUNK_WPLAN};
    uint64_t s = 77;
    uint32_t found = 0, missed = 0;
    for (uint32_t step = 0; step < 20000; step++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t c = (uint32_t)((s >> 33) % 48);
        c += c >= 40 ? 1040 : 0;
        eng_chunk_t *x = eng_regions_chunk(r, c);
        switch ((s >> 45) % 4) {
        case 0:
            if (!(x->flags & ENG_CHUNK_RESIDENT) && eng_place_resident(p) < 40) {
                x->key = (s >> 20) % 64;
                assert_int_equal(eng_place_insert(p, c), GMUX_OK);
            } else {
                eng_place_remove(p, c);
            }
            break;
        case 1: /* a flag changes and the placement is told */
            x->flags ^= flip[(s >> 50) % 3];
            set_key(r, p, c, (s >> 20) % 64);
            break;
        default: /* a flag changes unannounced */
            x->flags ^= flip[(s >> 50) % 3];
            break;
        }
        uint32_t n = 0;
        while (eng_place_dirty_at(p, n) != ENG_NONE)
            n++;
        for (uint32_t k = 0; k < 4; k++) {
            for (uint32_t from = 0; from <= n + 1; from++) {
                uint32_t want = from;
                while (want < n && (eng_regions_chunk(r, eng_place_dirty_at(p, want))->flags &
                                    masks[k]) != masks[k])
                    want++;
                want = want < n ? want : ENG_NONE;
                assert_int_equal(eng_place_dirty_find(p, from, masks[k]), want);
                found += want != ENG_NONE && want > from;
                missed += want == ENG_NONE && from < n;
            }
        }
    }
    print_message("found past the start %u times, none from inside the heap %u times\n", found,
                  missed);
    assert_true(found > 10000 && missed > 10000);
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
        cmocka_unit_test(test_lru_fifo_skip_is_linear),
        cmocka_unit_test(test_lru_fifo_victims_match_reference),
        cmocka_unit_test(test_opt_heaps_match_reference),
        cmocka_unit_test(test_dirty_find_matches_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
