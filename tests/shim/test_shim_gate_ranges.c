/*
 * The range arithmetic of the gate's stores of daemon orders
 * (src/shim/gate_ranges.c): cutting (against the first implementation,
 * kept here as the reference), storing evictions in a full store without
 * losing a byte (against the first implementation too), the pieces of a range outside a store, and
 * the covering set of a working set too large to announce range by range.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shim/gate_ranges.h"
#include "tproc.h"
#include "trand.h"

/* Whether the store covers every byte of [lo, hi). */
static int covers(const dmn_range_t *v, uint32_t n, uint64_t lo, uint64_t hi)
{
    while (lo < hi) {
        uint64_t next = lo;
        for (uint32_t i = 0; i < n; i++)
            if (v[i].base <= lo && lo < v[i].base + v[i].len && v[i].base + v[i].len > next)
                next = v[i].base + v[i].len;
        if (next == lo)
            return 0;
        lo = next;
    }
    return 1;
}

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

static uint64_t got[8][2];
static int ngot;

static void collect(void *arg, dmn_range_t piece)
{
    (void)arg;
    got[ngot][0] = piece.base;
    got[ngot][1] = piece.len;
    ngot++;
}

static void test_outside_pieces(void **state)
{
    (void)state;
    dmn_range_t v[] = {{100, 50}, {200, 10}}, w[] = {{50, 200}};
    ngot = 0;
    shim_gate_ranges_outside(v, 2, w, 1, collect, NULL);
    assert_int_equal(ngot, 3);
    assert_int_equal(got[0][0], 50);
    assert_int_equal(got[0][1], 50);
    assert_int_equal(got[1][0], 150);
    assert_int_equal(got[1][1], 50);
    assert_int_equal(got[2][0], 210);
    assert_int_equal(got[2][1], 40);
    ngot = 0;
    dmn_range_t in = {110, 20};
    shim_gate_ranges_outside(v, 2, &in, 1, collect, NULL);
    assert_int_equal(ngot, 0); /* inside a stored range */
    /* several ranges at once, one stored range over two of them */
    dmn_range_t several[] = {{90, 20}, {120, 5}, {140, 80}};
    ngot = 0;
    shim_gate_ranges_outside(v, 2, several, 3, collect, NULL);
    assert_int_equal(ngot, 3);
    assert_int_equal(got[0][0], 90);
    assert_int_equal(got[0][1], 10);
    assert_int_equal(got[1][0], 150);
    assert_int_equal(got[1][1], 50);
    assert_int_equal(got[2][0], 210);
    assert_int_equal(got[2][1], 10);
}

#ifndef NDEBUG
/* A store out of order breaks the precondition of
 * shim_gate_ranges_outside, which asserts it (safe without the check: the
 * answer is only wrong). */
static int outside_of_unsorted(int index, void *arg)
{
    (void)index;
    (void)arg;
    dmn_range_t v[] = {{200, 10}, {100, 50}}, w = {50, 200};
    ngot = 0;
    shim_gate_ranges_outside(v, 2, &w, 1, collect, NULL);
    return 0;
}
#endif

/* Where assert() is compiled in (GMUX_ASSERTS: make check-asan, check-tsan,
 * check-clang), a broken invariant of the gate's range code stops the
 * program; skipped where NDEBUG compiles assert() out (make check). This
 * test is compiled with the library's flags, so it also shows which build
 * this is: until 2026-12-02 the sanitizer builds had NDEBUG too, and no
 * test run ever checked an assert(). */
static void test_asserts_fire_in_checked_builds(void **state)
{
    (void)state;
#ifdef NDEBUG
    skip();
#else
    int status = 0;
    tproc_fork_all(1, outside_of_unsorted, NULL, 30.0, &status);
    assert_int_equal(status, 128 + SIGABRT); /* from assert() */
#endif
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

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(uint64_t below)
{
    return trand_next(&rng_state) % below;
}

/* Whether v (coalesced by the caller) is sorted, with no two ranges that
 * overlap or touch. */
static int is_coalesced(const dmn_range_t *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i].len == 0 || (i > 0 && v[i - 1].base + v[i - 1].len >= v[i].base))
            return 0;
    return 1;
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

/* Up to max random ranges from about base on: in order (sorted, touching at
 * times, none overlapping) or anywhere (overlaps and ties), empty ones
 * among them where empty. Returns the count. */
static uint32_t random_ranges(dmn_range_t *v, uint32_t max, uint64_t span, bool ordered, bool empty)
{
    uint32_t n = (uint32_t)rnd(max + 1);
    uint64_t p = rnd(span / 4 + 1);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t len = empty && rnd(6) == 0 ? 0 : 1 + rnd(span / 16 + 1);
        if (!ordered) {
            v[i] = (dmn_range_t){rnd(span), len};
            continue;
        }
        p += rnd(3) == 0 ? 0 : rnd(span / 16 + 1); /* 0: touching the one before */
        v[i] = (dmn_range_t){p, len};
        p += len;
    }
    return n;
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

/* --- the pieces of a store outside another (shim_gate_ranges_outside),
 * against a byte map: for each range of w in turn, each run of its bytes
 * that no range of v covers, in address order. */
enum { OUT_SPAN = 1024, OUT_CAP = 24, OUT_MAX = 64 * OUT_CAP };
static dmn_range_t out_got[OUT_MAX];
static uint32_t out_n;

static void out_collect(void *arg, dmn_range_t piece)
{
    (void)arg;
    assert_true(out_n < OUT_MAX);
    out_got[out_n++] = piece;
}

static void test_outside_matches_reference(void **state)
{
    (void)state;
    enum { ROUNDS = 3000 };
    static dmn_range_t v[OUT_CAP], w[OUT_CAP], ref[OUT_MAX];
    static uint8_t covered[OUT_SPAN];
    for (int round = 0; round < ROUNDS; round++) {
        /* v: a coalesced store (of evictions), from ranges anywhere */
        uint32_t n = random_ranges(v, OUT_CAP, 256, rnd(2), true); /* ends below 900 */
        shim_gate_ranges_coalesce(v, &n);
        memset(covered, 0, sizeof(covered));
        for (uint32_t i = 0; i < n; i++)
            memset(&covered[v[i].base], 1, v[i].len);
        /* w: mostly a coalesced store too (the fills ahead), at times
         * ranges in any order, overlapping, empty */
        bool store = rnd(4) != 0;
        uint32_t m = random_ranges(w, OUT_CAP, 256, store, !store);
        if (store)
            shim_gate_ranges_coalesce(w, &m);
        uint32_t nr = 0;
        for (uint32_t k = 0; k < m; k++)
            for (uint64_t b = w[k].base; b < w[k].base + w[k].len; b++) {
                if (covered[b])
                    continue;
                if (b > w[k].base && !covered[b - 1]) /* the run goes on */
                    ref[nr - 1].len++;
                else
                    ref[nr++] = (dmn_range_t){b, 1};
            }
        out_n = 0;
        shim_gate_ranges_outside(v, n, w, m, out_collect, NULL);
        assert_int_equal(out_n, nr);
        for (uint32_t i = 0; i < nr; i++) {
            assert_int_equal(out_got[i].base, ref[i].base);
            assert_int_equal(out_got[i].len, ref[i].len);
        }
    }
}

/* --- covering sets (shim_gate_ranges_cover) */

typedef struct cover_in {
    const dmn_range_t *v;
    const uint8_t *skip;
} cover_in_t;

static bool cover_at(const void *arg, size_t i, dmn_range_t *r)
{
    const cover_in_t *in = arg;
    if (in->skip && in->skip[i])
        return false;
    *r = in->v[i];
    return true;
}

static void test_cover_fits_as_given(void **state)
{
    (void)state;
    /* touching ranges join; a skipped one leaves its gap */
    dmn_range_t v[] = {{100, 50}, {150, 10}, {200, 10}, {300, 10}, {400, 10}};
    uint8_t skip[] = {0, 0, 0, 1, 0};
    cover_in_t in = {v, skip};
    dmn_range_t out[4];
    uint64_t scratch[4];
    bool coarse = true;
    assert_int_equal(shim_gate_ranges_cover(out, 4, scratch, 5, cover_at, &in, &coarse), 3);
    assert_false(coarse);
    assert_int_equal(out[0].base, 100);
    assert_int_equal(out[0].len, 60);
    assert_int_equal(out[1].base, 200);
    assert_int_equal(out[2].base, 400);
    assert_int_equal(out[2].len, 10);
}

static void test_cover_joins_smallest_gaps(void **state)
{
    (void)state;
    /* gaps 90, 5, 40, 1000: two ranges out of five cover the smallest three */
    dmn_range_t v[] = {{0, 10}, {100, 10}, {115, 10}, {165, 10}, {1175, 25}};
    cover_in_t in = {v, NULL};
    dmn_range_t out[2];
    uint64_t scratch[2];
    bool coarse = false;
    assert_int_equal(shim_gate_ranges_cover(out, 2, scratch, 5, cover_at, &in, &coarse), 2);
    assert_true(coarse);
    assert_int_equal(out[0].base, 0);
    assert_int_equal(out[0].len, 175);
    assert_int_equal(out[1].base, 1175);
    assert_int_equal(out[1].len, 25);
}

static void test_cover_ties_fill_cap(void **state)
{
    (void)state;
    /* ten ranges 100 apart (gaps of 90): four ranges out, the first three
     * gaps kept, the rest covered */
    dmn_range_t v[10];
    for (uint64_t i = 0; i < 10; i++)
        v[i] = (dmn_range_t){i * 100, 10};
    cover_in_t in = {v, NULL};
    dmn_range_t out[4];
    uint64_t scratch[4];
    bool coarse = false;
    assert_int_equal(shim_gate_ranges_cover(out, 4, scratch, 10, cover_at, &in, &coarse), 4);
    assert_true(coarse);
    for (uint64_t i = 0; i < 3; i++) {
        assert_int_equal(out[i].base, i * 100);
        assert_int_equal(out[i].len, 10);
    }
    assert_int_equal(out[3].base, 300);
    assert_int_equal(out[3].len, 610);
}

static void test_cover_random(void **state)
{
    (void)state;
    enum { N = 3000, CAP = 64 };
    static dmn_range_t v[N], out[CAP];
    static uint8_t skip[N];
    static uint64_t scratch[CAP];
    for (int round = 0; round < 50; round++) {
        uint64_t at = rnd(1000);
        for (size_t i = 0; i < N; i++) {
            at += rnd(4) == 0 ? 0 : rnd(round % 2 ? 1u << 20 : 64); /* some touch */
            v[i] = (dmn_range_t){at, 1 + rnd(256)};
            at += v[i].len;
            skip[i] = rnd(5) == 0;
        }
        cover_in_t in = {v, skip};
        uint32_t cap = 1 + (uint32_t)rnd(CAP);
        bool coarse = false;
        uint32_t m = shim_gate_ranges_cover(out, cap, scratch, N, cover_at, &in, &coarse);
        assert_int_equal(m, cap); /* coarsened: every slot used */
        assert_true(is_coalesced(out, m));
        assert_true(coarse);
        for (size_t i = 0; i < N; i++)
            if (!skip[i] && !covers(out, m, v[i].base, v[i].base + v[i].len))
                fail_msg("round %d: range %zu not covered", round, i);
        /* every gap covered is no wider than any gap left between two ranges */
        uint64_t widest_covered = 0, narrowest_left = UINT64_MAX, end = 0;
        int any = 0;
        for (size_t i = 0; i < N; i++) {
            if (skip[i])
                continue;
            if (any && v[i].base > end) {
                uint64_t g = v[i].base - end;
                if (covers(out, m, end, v[i].base))
                    widest_covered = g > widest_covered ? g : widest_covered;
                else
                    narrowest_left = g < narrowest_left ? g : narrowest_left;
            }
            end = v[i].base + v[i].len;
            any = 1;
        }
        assert_true(widest_covered <= narrowest_left);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coalesce_sorts_and_joins),
        cmocka_unit_test(test_add_whole_joins_nearest_when_full),
        cmocka_unit_test(test_cut_keeps_evictions_whole_when_full),
        cmocka_unit_test(test_outside_pieces),
        cmocka_unit_test(test_asserts_fire_in_checked_builds),
        cmocka_unit_test(test_add_whole_matches_reference),
        cmocka_unit_test(test_cut_keeps_store_coalesced),
        cmocka_unit_test(test_cut_matches_reference),
        cmocka_unit_test(test_cut_full_fills_gives_up_smaller_piece),
        cmocka_unit_test(test_add_fill_keeps_store_coalesced),
        cmocka_unit_test(test_add_fill_full_gives_up_new),
        cmocka_unit_test(test_fill_store_random),
        cmocka_unit_test(test_outside_matches_reference),
        cmocka_unit_test(test_cover_fits_as_given),
        cmocka_unit_test(test_cover_joins_smallest_gaps),
        cmocka_unit_test(test_cover_ties_fill_cap),
        cmocka_unit_test(test_cover_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
