/* Unit tests of runs of chunks (src/daemon/chunk_runs.c), against bitmaps
 * and plain sorts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "daemon/chunk_runs.h"

#define CH    0x1000ull
#define SLOTS 96

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static int cmp_key_lo(const void *a, const void *b)
{
    const dmn_seg_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorted, reversed, a few ordered stretches, more than 64 stretches, random:
 * the same order as qsort (keys and addresses distinct). */
static void test_sort(void **state)
{
    (void)state;
    dmn_runs_t scratch = {0};
    size_t sizes[] = {0, 1, 2, 3, 17, 200, 1000};
    for (int shape = 0; shape < 5; shape++)
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
            size_t n = sizes[si];
            uint64_t s = 99 + shape * 7 + si;
            dmn_seg_t *v = calloc(n + 1, sizeof(*v)), *w = calloc(n + 1, sizeof(*w));
            for (size_t i = 0; i < n; i++) {
                uint64_t k = shape == 0   ? i
                             : shape == 1 ? n - i
                             : shape == 2 ? (i % (n / 3 + 1)) * 4 + i / (n / 3 + 1)
                             : shape == 3 ? (i / 5) % 2 ? i : 100000 - i
                                          : rnd(&s) % 50;
                v[i] = (dmn_seg_t){i * CH, (i + 1) * CH, 0, 0, k};
            }
            memcpy(w, v, n * sizeof(*v));
            qsort(w, n, sizeof(*w), cmp_key_lo);
            assert_int_equal(dmn_runs_sort(v, n, &scratch), GMUX_OK);
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(v[i].key, w[i].key);
                assert_int_equal(v[i].lo, w[i].lo);
            }
            free(v);
            free(w);
        }
    dmn_runs_free(&scratch);
}

/* Runs from a bitmap of SLOTS chunks, and back. */
static void from_bits(const char *bits, dmn_runs_t *r)
{
    r->n = 0;
    for (size_t i = 0; i < SLOTS;) {
        if (!bits[i]) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < SLOTS && bits[j])
            j++;
        assert_int_equal(dmn_runs_push(r, (dmn_seg_t){i * CH, j * CH, 0, 0, 0}), GMUX_OK);
        i = j;
    }
}

static void assert_bits(const dmn_runs_t *r, const char *bits)
{
    char got[SLOTS] = {0};
    for (size_t i = 0; i < r->n; i++) {
        assert_true(r->v[i].lo < r->v[i].hi);
        if (i > 0) /* sorted, disjoint, touching runs merged */
            assert_true(r->v[i - 1].hi < r->v[i].lo);
        for (uint64_t a = r->v[i].lo; a < r->v[i].hi; a += CH)
            got[a / CH] = 1;
    }
    assert_memory_equal(got, bits, SLOTS);
}

/* Union and difference against bitmaps; find against a scan. */
static void test_union_subtract_find(void **state)
{
    (void)state;
    dmn_runs_t r = {0}, v = {0}, scratch = {0};
    for (uint64_t seed = 1; seed <= 300; seed++) {
        uint64_t s = seed;
        char a[SLOTS], b[SLOTS], expect[SLOTS];
        for (int i = 0; i < SLOTS; i++) {
            a[i] = rnd(&s) % 3 == 0;
            b[i] = rnd(&s) % 4 == 0;
        }
        from_bits(a, &r);
        from_bits(b, &v);
        for (int i = 0; i < SLOTS; i++)
            expect[i] = a[i] || b[i];
        assert_int_equal(dmn_runs_union(&r, v.v, v.n, &scratch), GMUX_OK);
        assert_bits(&r, expect);
        for (uint64_t addr = 0; addr < SLOTS * CH; addr += CH / 2) {
            size_t k = 0;
            while (k < r.n && r.v[k].hi <= addr)
                k++;
            assert_int_equal(dmn_runs_find(&r, addr), k);
        }
        for (int i = 0; i < SLOTS; i++) /* take some of what is there */
            b[i] = expect[i] && rnd(&s) % 2;
        from_bits(b, &v);
        assert_int_equal(dmn_runs_subtract(&r, v.v, v.n, &scratch), GMUX_OK);
        for (int i = 0; i < SLOTS; i++)
            expect[i] = expect[i] && !b[i];
        assert_bits(&r, expect);
    }
    dmn_runs_free(&r);
    dmn_runs_free(&v);
    dmn_runs_free(&scratch);
}

/* First-use cover against laying the ranges out chunk by chunk: each chunk
 * once, at its first position, pieces in increasing position; disjoint and
 * overlapping inputs. */
static void test_first_cover(void **state)
{
    (void)state;
    dmn_runs_t in = {0}, out = {0}, scratch = {0};
    for (uint64_t seed = 1; seed <= 400; seed++) {
        uint64_t s = seed, first[SLOTS], pos = 0;
        for (int i = 0; i < SLOTS; i++)
            first[i] = UINT64_MAX;
        in.n = 0;
        int n = 1 + (int)(rnd(&s) % 8), disjoint = seed % 2;
        for (int i = 0; i < n; i++) {
            uint64_t lo = rnd(&s) % (SLOTS - 12), len = 1 + rnd(&s) % 12;
            if (disjoint) /* a slot of 12 chunks each, in shuffled order */
                lo = ((i * 5 + seed) % 8) * 12, len = 1 + rnd(&s) % 11;
            assert_int_equal(
                dmn_runs_push(&in, (dmn_seg_t){lo * CH, (lo + len) * CH, lo * CH, pos, 0}),
                GMUX_OK);
            for (uint64_t c = lo; c < lo + len; c++, pos++)
                if (first[c] == UINT64_MAX)
                    first[c] = pos;
        }
        assert_int_equal(dmn_runs_first_cover(&in, CH, &out, &scratch), GMUX_OK);
        uint64_t got[SLOTS];
        for (int i = 0; i < SLOTS; i++)
            got[i] = UINT64_MAX;
        for (size_t i = 0; i < out.n; i++) {
            if (i > 0)
                assert_true(out.v[i - 1].key < out.v[i].key);
            for (uint64_t a = out.v[i].lo; a < out.v[i].hi; a += CH) {
                assert_int_equal(got[a / CH], UINT64_MAX); /* once */
                got[a / CH] = out.v[i].key + (a - out.v[i].lo) / CH;
            }
        }
        assert_memory_equal(got, first, sizeof(got));
    }
    dmn_runs_free(&in);
    dmn_runs_free(&out);
    dmn_runs_free(&scratch);
}

/* Counting, merging with the least rank, keeping a prefix of chunks and
 * appending with joins, on small cases worked out by hand. */
static void test_count_merge_keep(void **state)
{
    (void)state;
    dmn_seg_t v[] = {{0, 2 * CH, 0, 7, 0},
                     {2 * CH, 3 * CH, 2 * CH, 3, 0}, /* touches the first: joins, rank 3 */
                     {5 * CH, 9 * CH, 5 * CH, 1, 0},
                     {6 * CH, 7 * CH, 6 * CH, 0, 0}}; /* inside the third: rank 0 */
    dmn_runs_t in = {v, 4, 4}, out = {0};
    int ordered = 1;
    assert_int_equal(dmn_runs_chunks(&in, 12, &ordered), 2 + 1 + 4 + 1);
    assert_false(ordered); /* the last overlaps the third */
    in.n = 3;
    assert_int_equal(dmn_runs_chunks(&in, 12, &ordered), 7);
    assert_true(ordered);
    in.n = 4;
    assert_int_equal(dmn_runs_merge_ranked(&in, &out), GMUX_OK);
    assert_int_equal(out.n, 2);
    assert_true(out.v[0].lo == 0 && out.v[0].hi == 3 * CH && out.v[0].wrank == 3);
    assert_true(out.v[1].lo == 5 * CH && out.v[1].hi == 9 * CH && out.v[1].wrank == 0);
    assert_int_equal(dmn_runs_keep(&out, 5, 12), 2); /* 3 + 2 of the second */
    assert_true(out.v[1].hi == 7 * CH && out.v[0].hi == 3 * CH);
    assert_int_equal(dmn_runs_keep(&out, 3, 12), 1);
    assert_int_equal(out.v[0].hi, 3 * CH);
    out.n = 0;
    dmn_runs_put_joined(&out, CH, 2 * CH);
    dmn_runs_put_joined(&out, 2 * CH, 4 * CH); /* touching: joined */
    dmn_runs_put_joined(&out, 5 * CH, 6 * CH);
    assert_int_equal(out.n, 2);
    assert_true(out.v[0].lo == CH && out.v[0].hi == 4 * CH && out.v[0].wrank == DMN_RUNS_NONE);
    assert_true(out.v[1].lo == 5 * CH && out.v[1].hi == 6 * CH);
    dmn_runs_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_union_subtract_find),
        cmocka_unit_test(test_first_cover),
        cmocka_unit_test(test_count_merge_keep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
