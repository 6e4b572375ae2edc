/*
 * The range arithmetic of the gate's stores of daemon orders
 * (src/shim/gate_ranges.c): cutting (against the first implementation,
 * kept here as the reference), storing evictions in a full store without
 * losing a byte (against the first implementation too), and a store of
 * fills. The pieces of a range outside a store: test_shim_gate_outside.c;
 * covering sets: test_shim_gate_cover.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gate_ranges_check.h"
#include "shim/gate_ranges.h"

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
    assert_int_equal(shim_gate_ranges_cut(v, &n, 2, tmp, &mid, 1, true, &whole, NULL), 0);
    assert_int_equal(whole, 1);
    assert_int_equal(n, 2);
    assert_true(covers(v, n, 0, 100));
    /* the end of the second: cut */
    dmn_range_t end = {250, 100};
    assert_int_equal(shim_gate_ranges_cut(v, &n, 2, tmp, &end, 1, true, &whole, NULL), 0);
    assert_int_equal(whole, 1);
    assert_true(covers(v, n, 200, 250));
    assert_false(covers(v, n, 250, 251));
    /* fills may lose pieces: the middle of the first cut, the smaller
     * piece of {0, 40} {60, 40} given up (of two as large, the upper) */
    uint64_t bytes = 0;
    assert_int_equal(shim_gate_ranges_cut(v, &n, 2, tmp, &mid, 1, false, NULL, &bytes), 1);
    assert_int_equal(bytes, 40);
    assert_int_equal(n, 2);
    assert_false(covers(v, n, 40, 100));
    assert_true(covers(v, n, 0, 40));
    assert_true(covers(v, n, 200, 250));
}

/* --- the first add_whole: append; when full, coalesce, then join the
 * nearest range found by a linear scan. The reference of what the store
 * covers after each addition, and of what add_whole returns. */
static bool ref_add_whole(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t r)
{
    if (r.len == 0 || cap == 0)
        return false;
    if (*n == cap)
        shim_gate_ranges_coalesce(v, n);
    if (*n < cap) {
        v[(*n)++] = r;
        return false;
    }
    uint32_t near = 0;
    uint64_t best = UINT64_MAX;
    for (uint32_t i = 0; i < *n && best; i++) {
        uint64_t g = v[i].base + v[i].len <= r.base ? r.base - (v[i].base + v[i].len)
                     : r.base + r.len <= v[i].base  ? v[i].base - (r.base + r.len)
                                                    : 0;
        if (g < best) {
            best = g;
            near = i;
        }
    }
    uint64_t lo = v[near].base < r.base ? v[near].base : r.base;
    uint64_t hi = v[near].base + v[near].len, rhi = r.base + r.len;
    v[near] = (dmn_range_t){lo, (hi > rhi ? hi : rhi) - lo};
    return best > 0;
}

static void test_add_whole_matches_reference(void **state)
{
    (void)state;
    enum { CAP = 16, ADDS = 400, ROUNDS = 300 };
    static dmn_range_t got[CAP], ref[CAP];
    for (int round = 0; round < ROUNDS; round++) {
        uint32_t cap = 1 + (uint32_t)rnd(CAP), ng = 0, nr = 0;
        uint64_t span = 64 + rnd(4096); /* small spans: many overlaps and ties */
        for (int k = 0; k < ADDS; k++) {
            dmn_range_t r = {rnd(span), rnd(8) == 0 ? 0 : 1 + rnd(span / 8 + 1)};
            bool a = shim_gate_ranges_add_whole(got, &ng, cap, r);
            bool b = ref_add_whole(ref, &nr, cap, r);
            assert_int_equal(a, b);
            assert_true(ng <= cap);
            assert_true(is_coalesced(got, ng));
            /* the same bytes covered: the reference coalesced is this store */
            dmn_range_t tmp[CAP];
            uint32_t nt = nr;
            memcpy(tmp, ref, nr * sizeof(*ref));
            shim_gate_ranges_coalesce(tmp, &nt);
            assert_int_equal(nt, ng);
            for (uint32_t i = 0; i < ng; i++) {
                assert_int_equal(got[i].base, tmp[i].base);
                assert_int_equal(got[i].len, tmp[i].len);
            }
        }
    }
}

/* A cut keeps a store of evictions coalesced: add_whole may follow it. */
static void test_cut_keeps_store_coalesced(void **state)
{
    (void)state;
    dmn_range_t v[8], tmp[8];
    uint32_t n = 0;
    for (uint64_t i = 0; i < 6; i++)
        shim_gate_ranges_add_whole(v, &n, 8, (dmn_range_t){i * 100, 50});
    dmn_range_t cut[2] = {{10, 20}, {120, 200}};
    shim_gate_ranges_cut(v, &n, 8, tmp, cut, 2, true, NULL, NULL);
    assert_true(is_coalesced(v, n));
    assert_false(shim_gate_ranges_add_whole(v, &n, 8, (dmn_range_t){30, 5}));
    assert_true(is_coalesced(v, n));
    assert_true(covers(v, n, 30, 35));
    assert_false(covers(v, n, 10, 30));
}

/* --- cutting, one cut after the other, each rebuilding the whole store:
 * the reference of the store left (range by range), of the pieces given up
 * (where a cut split a range of a full store, the smaller piece, the upper
 * one of two as large) and their bytes, and of the cuts kept whole. A store
 * out of order is coalesced first. */
static uint32_t ref_cut(dmn_range_t *v, uint32_t *n, uint32_t cap, const dmn_range_t *cut,
                        uint32_t k, bool keep_whole, uint32_t *whole, uint64_t *bytes)
{
    dmn_range_t tmp[64];
    uint32_t dropped = 0;
    bool sorted = true;
    for (uint32_t i = 0; i < *n; i++)
        sorted = sorted && v[i].len > 0 && (i == 0 || v[i].base >= v[i - 1].base + v[i - 1].len);
    if (!sorted)
        shim_gate_ranges_coalesce(v, n);
    for (uint32_t c = 0; c < k; c++) {
        uint64_t lo = cut[c].base, hi = cut[c].base + cut[c].len;
        if (hi <= lo)
            continue;
        uint32_t m = 0, split = 0; /* split: the lower piece of a split range */
        for (uint32_t i = 0; i < *n; i++) {
            uint64_t a = v[i].base, b = v[i].base + v[i].len;
            if (!(a < hi && lo < b)) {
                tmp[m++] = v[i];
                continue;
            }
            if (a < lo && b > hi)
                split = m;
            if (a < lo)
                tmp[m++] = (dmn_range_t){a, lo - a};
            if (b > hi)
                tmp[m++] = (dmn_range_t){hi, b - hi};
        }
        if (m > cap) {
            assert_int_equal(m, cap + 1);
            if (keep_whole) {
                (*whole)++;
                continue;
            }
            uint32_t least = tmp[split].len < tmp[split + 1].len ? split : split + 1;
            assert_int_equal(tmp[split].base + tmp[split].len, lo);
            assert_int_equal(tmp[split + 1].base, hi);
            *bytes += tmp[least].len;
            memmove(&tmp[least], &tmp[least + 1], (m - least - 1) * sizeof(*tmp));
            m--;
            dropped++;
        }
        memcpy(v, tmp, m * sizeof(*v));
        *n = m;
    }
    return dropped;
}

static void test_cut_matches_reference(void **state)
{
    (void)state;
    enum { CAP = 24, CUTS = 40, ROUNDS = 4000 };
    static dmn_range_t got[CAP], ref[CAP], tmp[CAP], cut[CUTS];
    for (int round = 0; round < ROUNDS; round++) {
        uint32_t cap = 1 + (uint32_t)rnd(CAP);
        uint64_t span = 64 + rnd(2048);
        /* mostly in order (the one-pass form), at times not (the fallback) */
        bool ordered = rnd(4) != 0;
        uint32_t n = random_ranges(got, cap, span, ordered, !ordered);
        if (rnd(3) == 0) /* a full store */
            while (n < cap) {
                uint64_t last = n ? got[n - 1].base + got[n - 1].len : 0;
                got[n++] = (dmn_range_t){last + rnd(3), 1 + rnd(8)};
            }
        uint32_t nr = n;
        memcpy(ref, got, n * sizeof(*got));
        /* several orders in turn against the same store */
        for (int order = 0; order < 4; order++) {
            uint32_t k = random_ranges(cut, CUTS, span, rnd(8) != 0, true);
            bool keep = rnd(2);
            uint32_t wg = 0, wr = 0;
            uint64_t bg = 0, br = 0;
            uint32_t dg = shim_gate_ranges_cut(got, &n, cap, tmp, cut, k, keep, &wg, &bg);
            uint32_t dr = ref_cut(ref, &nr, cap, cut, k, keep, &wr, &br);
            assert_int_equal(dg, dr);
            assert_int_equal(wg, wr);
            assert_int_equal(bg, br);
            assert_int_equal(n, nr);
            for (uint32_t i = 0; i < n; i++) {
                assert_int_equal(got[i].base, ref[i].base);
                assert_int_equal(got[i].len, ref[i].len);
            }
        }
    }
}

/* A cut that splits a range of a full store of fills: the store gives up
 * the smaller piece of the split, and says how many bytes (the first
 * implementation gave up the last range of the store, {300, 10}, wherever
 * the split was, and said nothing of its bytes). */
static void test_cut_full_fills_gives_up_smaller_piece(void **state)
{
    (void)state;
    dmn_range_t v[4] = {{0, 10}, {100, 10}, {200, 20}, {300, 10}}, tmp[4];
    uint32_t n = 4;
    uint64_t bytes = 0;
    dmn_range_t mid = {103, 3}; /* leaves {100, 3} and {106, 4} */
    assert_int_equal(shim_gate_ranges_cut(v, &n, 4, tmp, &mid, 1, false, NULL, &bytes), 1);
    assert_int_equal(bytes, 3);
    assert_int_equal(n, 4);
    assert_true(covers(v, n, 0, 10));
    assert_false(covers(v, n, 100, 103)); /* the smaller piece: given up */
    assert_true(covers(v, n, 106, 110));
    assert_true(covers(v, n, 200, 220));
    assert_true(covers(v, n, 300, 310));
    /* of two pieces as large, the upper */
    dmn_range_t mid2 = {204, 12}; /* leaves {200, 4} and {216, 4} */
    assert_int_equal(shim_gate_ranges_cut(v, &n, 4, tmp, &mid2, 1, false, NULL, &bytes), 1);
    assert_int_equal(bytes, 4);
    assert_true(covers(v, n, 200, 204));
    assert_false(covers(v, n, 216, 220));
    assert_true(covers(v, n, 106, 110));
    assert_true(covers(v, n, 300, 310));
}

/* Fills arrive in any order (two plans ahead, each in address order): the
 * store keeps them coalesced, so a cut takes one pass over it. */
static void test_add_fill_keeps_store_coalesced(void **state)
{
    (void)state;
    dmn_range_t v[8];
    uint32_t n = 0;
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(shim_gate_ranges_add_fill(v, &n, 8, (dmn_range_t){i * 200, 50}), 0);
    for (uint64_t i = 0; i < 4; i++) /* the second plan: between and touching */
        assert_int_equal(shim_gate_ranges_add_fill(v, &n, 8, (dmn_range_t){i * 200 + 50, 20}), 0);
    assert_int_equal(n, 4);
    assert_true(is_coalesced(v, n));
    for (uint64_t i = 0; i < 4; i++) {
        assert_int_equal(v[i].base, i * 200);
        assert_int_equal(v[i].len, 70);
    }
    /* 100..130 and 500..530 go in place */
    assert_int_equal(shim_gate_ranges_add_fill(v, &n, 8, (dmn_range_t){500, 30}), 0);
    assert_int_equal(shim_gate_ranges_add_fill(v, &n, 8, (dmn_range_t){100, 30}), 0);
    assert_int_equal(n, 6);
    assert_true(is_coalesced(v, n));
    assert_int_equal(v[1].base, 100);
    assert_int_equal(v[4].base, 500);
}

/* A full store of fills gives up a new range it cannot join. */
static void test_add_fill_full_gives_up_new(void **state)
{
    (void)state;
    dmn_range_t v[3] = {{0, 10}, {100, 5}, {200, 10}};
    uint32_t n = 3;
    assert_int_equal(shim_gate_ranges_add_fill(v, &n, 3, (dmn_range_t){50, 8}), 8);
    assert_int_equal(n, 3);
    assert_false(covers(v, n, 50, 51));
    /* touching or overlapping stored ones: joined, nothing lost */
    assert_int_equal(shim_gate_ranges_add_fill(v, &n, 3, (dmn_range_t){210, 90}), 0);
    assert_int_equal(shim_gate_ranges_add_fill(v, &n, 3, (dmn_range_t){5, 97}), 0);
    assert_int_equal(n, 2);
    assert_true(covers(v, n, 0, 105));
    assert_true(covers(v, n, 200, 300));
    assert_true(is_coalesced(v, n));
}

/* Random fills and cuts against a byte map: the store stays coalesced,
 * covers only bytes added and not cut since, and what it gives up is
 * counted to the byte. */
static void test_fill_store_random(void **state)
{
    (void)state;
    enum { CAP = 12, SPAN = 512, ROUNDS = 400, OPS = 200 };
    static dmn_range_t v[CAP], tmp[CAP];
    static uint8_t map[SPAN];
    for (int round = 0; round < ROUNDS; round++) {
        uint32_t cap = 1 + (uint32_t)rnd(CAP), n = 0;
        uint64_t lost = 0, held = 0;
        memset(map, 0, sizeof(map));
        for (int op = 0; op < OPS; op++) {
            dmn_range_t r = {rnd(SPAN - 32), rnd(8) == 0 ? 0 : 1 + rnd(24)};
            if (rnd(3) != 0) {
                lost += shim_gate_ranges_add_fill(v, &n, cap, r);
                for (uint64_t b = r.base; b < r.base + r.len; b++)
                    held += !map[b], map[b] = 1;
            } else {
                uint64_t bytes = 0;
                shim_gate_ranges_cut(v, &n, cap, tmp, &r, 1, false, NULL, &bytes);
                lost += bytes;
                for (uint64_t b = r.base; b < r.base + r.len; b++)
                    held -= map[b], map[b] = 0;
            }
            assert_true(n <= cap);
            assert_true(is_coalesced(v, n));
            uint64_t stored = 0;
            for (uint32_t i = 0; i < n; i++) {
                stored += v[i].len;
                for (uint64_t b = v[i].base; b < v[i].base + v[i].len; b++)
                    assert_true(map[b]);
            }
            assert_true(stored <= held);
            /* bytes given up, then added or cut again, are no longer missing */
            if (stored < held)
                assert_true(lost > 0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coalesce_sorts_and_joins),
        cmocka_unit_test(test_add_whole_joins_nearest_when_full),
        cmocka_unit_test(test_cut_keeps_evictions_whole_when_full),
        cmocka_unit_test(test_add_whole_matches_reference),
        cmocka_unit_test(test_cut_keeps_store_coalesced),
        cmocka_unit_test(test_cut_matches_reference),
        cmocka_unit_test(test_cut_full_fills_gives_up_smaller_piece),
        cmocka_unit_test(test_add_fill_keeps_store_coalesced),
        cmocka_unit_test(test_add_fill_full_gives_up_new),
        cmocka_unit_test(test_fill_store_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
