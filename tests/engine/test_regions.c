/* Tests of regions and chunks: ids, lookup, reuse after release. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "engine/regions.h"
#include "trand.h"

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

/* What the test knows of each region index: its last allocation and whether
 * it is still mapped. */
typedef struct {
    bool used, mapped;
    uint32_t task;
    uint64_t id, base, size;
} rec_t;

/* The random test's numbers come from trand, the same on every libc, from
 * seed 5 or GMUX_TEST_SEED (trand_from_env). */
static uint64_t rng;

static uint64_t rnd(uint64_t n)
{
    return trand_below(&rng, n);
}

/* The mapped region of task holding addr, by a scan of every record. */
static uint32_t ref_find(const rec_t *rec, uint32_t nrec, uint32_t task, uint64_t addr)
{
    for (uint32_t i = 0; i < nrec; i++) {
        if (rec[i].used && rec[i].mapped && rec[i].task == task && addr >= rec[i].base &&
            addr < rec[i].base + rec[i].size)
            return i;
    }
    return ENG_NONE;
}

/* eng_regions_find_near against the scan, over random allocations, unmaps,
 * releases and hints: none, out of range, the answer itself, any region index,
 * and regions holding addr but unmapped or of the other task. */
static void test_find_near_random(void **state)
{
    (void)state;
    enum { NREC = 64, SPACE = 4096, STEPS = 200000 };
    rec_t rec[NREC] = {0};
    uint32_t nrec = 0, unmapped[NREC], nunmapped = 0;
    uint64_t next_id = 1;
    unsigned hits = 0, hint_hits = 0, hint_traps = 0;
    eng_regions_t *r;
    assert_int_equal(eng_regions_create(2, 64, &r), GMUX_OK);
    rng = trand_from_env("test_find_near_random", 5);
    for (int step = 0; step < STEPS; step++) {
        unsigned op = (unsigned)rnd(10);
        if (op == 0) {
            uint32_t task = (uint32_t)rnd(2), ri;
            uint64_t base = rnd(SPACE), size = 1 + rnd(rnd(2) ? 64 : 600);
            if (eng_regions_alloc(r, task, next_id, base, size, &ri) == GMUX_OK) {
                assert_true(ri < NREC);
                assert_int_equal(ref_find(rec, nrec, task, base), ENG_NONE);
                rec[ri] = (rec_t){true, true, task, next_id++, base, size};
                nrec = ri + 1 > nrec ? ri + 1 : nrec;
            }
        } else if (op == 1 && nrec > 0) {
            uint32_t i = (uint32_t)rnd(nrec), got;
            if (rec[i].used && rec[i].mapped) {
                assert_int_equal(eng_regions_unmap(r, rec[i].task, rec[i].id, &got), GMUX_OK);
                assert_int_equal(got, i);
                rec[i].mapped = false; /* still holds its chunks: a hint to trap */
                unmapped[nunmapped++] = i;
            }
        } else if (op == 2 && nunmapped > 4) {
            uint32_t k = (uint32_t)rnd(nunmapped), i = unmapped[k];
            unmapped[k] = unmapped[--nunmapped];
            eng_regions_release(r, i);
            rec[i].used = false;
        } else {
            uint32_t task = (uint32_t)rnd(2);
            uint64_t addr = rnd(SPACE + 700);
            uint32_t from = nrec > 0 ? (uint32_t)rnd(nrec) : ENG_NONE;
            if (from != ENG_NONE && rnd(2)) { /* in some region, in any state, or at its end */
                const rec_t *x = &rec[from];
                addr = x->base + (rnd(4) ? rnd(x->size > 0 ? x->size : 1) : x->size);
            }
            uint32_t want = ref_find(rec, nrec, task, addr), hint;
            switch (rnd(6)) {
            case 0:
                hint = ENG_NONE;
                break;
            case 1:
                hint = (uint32_t)rnd(NREC + 2);
                break;
            case 5:
                hint = from; /* whose end addr may be */
                break;
            case 2:
                hint = want;
                break;
            default: /* a region holding addr that must not be taken */
                hint = ENG_NONE;
                for (uint32_t i = 0; i < nrec; i++) {
                    if (i != want && addr >= rec[i].base && addr < rec[i].base + rec[i].size) {
                        hint = i;
                        hint_traps++;
                    }
                }
            }
            assert_int_equal(eng_regions_find(r, task, addr), want);
            assert_int_equal(eng_regions_find_near(r, task, addr, hint), want);
            hits += want != ENG_NONE;
            hint_hits += want != ENG_NONE && hint == want;
        }
    }
    /* the cases the hint decides were all met, many times */
    assert_true(hits > 1000 && hint_hits > 1000 && hint_traps > 1000);
    eng_regions_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_lookup_release),
        cmocka_unit_test(test_ids_coalesce),
        cmocka_unit_test(test_find_near_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
