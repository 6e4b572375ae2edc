/* Tests of the transfer bound against exhaustive search. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bound_test_util.h"
#include "sim/bound.h"
#include "trand.h"

#define NCH     6
#define NSTATES (1u << NCH)

/* Exhaustive search over (resident set, dirty set): the fewest fetches and,
 * separately, the fewest write-backs any policy needs. Evicting a dirty chunk
 * costs a write-back unless the chunk is never referenced again (its data is
 * dead); a policy may also write back and keep a chunk (cleaning it). */
static void exhaustive(const uint32_t *masks, const uint32_t *wmasks, uint32_t n, uint32_t cap,
                       uint64_t *min_fetch, uint64_t *min_wb)
{
    static uint64_t cur[NSTATES][NSTATES], nxt[NSTATES][NSTATES];
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t a = 0; a < NSTATES; a++)
            for (uint32_t d = 0; d < NSTATES; d++)
                cur[a][d] = UINT64_MAX;
        cur[0][0] = 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t later = 0; /* chunks referenced after k */
            for (uint32_t j = k + 1; j < n; j++)
                later |= masks[j];
            for (uint32_t a = 0; a < NSTATES; a++)
                for (uint32_t d = 0; d < NSTATES; d++)
                    nxt[a][d] = UINT64_MAX;
            for (uint32_t a = 0; a < NSTATES; a++) {
                for (uint32_t d = a;; d = (d - 1) & a) {
                    uint64_t c0 = cur[a][d];
                    if (c0 != UINT64_MAX) {
                        /* before launch k: keep a subset of a (the rest evicted),
                         * clean any subset of the kept dirty ones */
                        uint32_t others = a & ~masks[k];
                        for (uint32_t keep = others;; keep = (keep - 1) & others) {
                            uint32_t res = keep | (a & masks[k]) | masks[k];
                            if ((uint32_t)__builtin_popcount(res) <= cap) {
                                uint32_t evicted_dirty = d & ~res;
                                uint32_t kd = d & res;
                                for (uint32_t cl = kd;; cl = (cl - 1) & kd) {
                                    uint64_t cost = c0;
                                    if (pass == 0)
                                        cost += (uint64_t)__builtin_popcount(masks[k] & ~a);
                                    else
                                        cost +=
                                            (uint64_t)__builtin_popcount(evicted_dirty & later) +
                                            (uint64_t)__builtin_popcount(cl);
                                    uint32_t nd = (kd & ~cl) | wmasks[k];
                                    if (cost < nxt[res][nd])
                                        nxt[res][nd] = cost;
                                    if (cl == 0)
                                        break;
                                }
                            }
                            if (keep == 0)
                                break;
                        }
                    }
                    if (d == 0)
                        break;
                }
            }
            memcpy(cur, nxt, sizeof(cur));
        }
        uint64_t best = UINT64_MAX;
        for (uint32_t a = 0; a < NSTATES; a++)
            for (uint32_t d = 0; d < NSTATES; d++)
                if (cur[a][d] < best)
                    best = cur[a][d];
        if (pass == 0)
            *min_fetch = best;
        else
            *min_wb = best;
    }
}

static void test_opt_fetches_equal_exhaustive_wb_below(void **state)
{
    (void)state;
    uint64_t s = 42;
    int wb_positive = 0, wb_equal = 0;
    for (int round = 0; round < 150; round++) {
        uint32_t cap = 2 + (uint32_t)(trand_next(&s) % 3);
        uint32_t n = 5 + (uint32_t)(trand_next(&s) % 9);
        uint32_t masks[16], wmasks[16];
        sim_refstr_t *rs;
        assert_int_equal(sim_refstr_create(1000, &rs), GMUX_OK);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t m = 0, ws = 1 + (uint32_t)(trand_next(&s) % cap);
            while ((uint32_t)__builtin_popcount(m) < ws)
                m |= 1u << (trand_next(&s) % NCH);
            masks[k] = m;
            wmasks[k] = (uint32_t)trand_next(&s) & m;
            for (uint32_t c = 0; c < NCH; c++)
                if (m & (1u << c))
                    sim_refstr_ref(rs, c, (wmasks[k] >> c) & 1);
            sim_refstr_end_launch(rs, 0);
        }
        uint64_t f, w, ef, ew;
        assert_int_equal(opt_chunks(rs, cap, &f, &w), GMUX_OK);
        exhaustive(masks, wmasks, n, cap, &ef, &ew);
        assert_int_equal(f, ef); /* Belady is optimal */
        assert_true(w <= ew);    /* a lower bound on write-backs */
        wb_positive += w > 0;
        wb_equal += w == ew;
        sim_refstr_destroy(rs);
    }
    assert_true(wb_positive > 10); /* the write-back term is not trivially zero */
    print_message("write-back term exact in %d of 150 cases, positive in %d\n", wb_equal,
                  wb_positive);
}

/* Two chunks written, then read back in turn, with room for one: one of them
 * leaves dirty. Its data exists only once launch 0 has ended, which cannot be
 * before launch 0's 50 ns of compute: the write-back (100 ns) ends at 150 ns at
 * the earliest, past the fetch term (4 x 10 ns) and the write-back term
 * (100 ns). From launch 1 on, what is written later can stay (55 ns). */
static void test_wb_released(void **state)
{
    (void)state;
    sim_refstr_t *rs;
    assert_int_equal(sim_refstr_create(1000, &rs), GMUX_OK);
    sim_refstr_ref(rs, 0, true);
    sim_refstr_end_launch(rs, 50);
    sim_refstr_ref(rs, 1, true);
    sim_refstr_end_launch(rs, 5);
    sim_refstr_ref(rs, 0, false);
    sim_refstr_end_launch(rs, 5);
    sim_refstr_ref(rs, 1, false);
    sim_refstr_end_launch(rs, 5);
    uint64_t f, w, ns;
    assert_int_equal(opt_chunks(rs, 1, &f, &w), GMUX_OK);
    assert_int_equal(f, 4);
    assert_int_equal(w, 1);
    assert_int_equal(wb_released(rs, 1, 10.0, 100.0, &ns), GMUX_OK);
    assert_int_equal(ns, 150);
    /* fetching slower than compute: launch 0 ends after its chunk arrives */
    assert_int_equal(wb_released(rs, 1, 80.0, 100.0, &ns), GMUX_OK);
    assert_int_equal(ns, 180);
    /* room for both: nothing has to leave, so only the fetches of launch 0..k */
    assert_int_equal(wb_released(rs, 2, 10.0, 100.0, &ns), GMUX_OK);
    assert_int_equal(ns, 65);
    sim_refstr_destroy(rs);
}

static void test_frees_and_limits(void **state)
{
    (void)state;
    sim_refstr_t *rs;
    assert_int_equal(sim_refstr_create(1000, &rs), GMUX_OK);
    /* chunk 0 written, freed, reallocated as a fresh chunk 0: its data is not needed */
    sim_refstr_ref(rs, 0, true);
    sim_refstr_end_launch(rs, 0);
    sim_refstr_ref(rs, 1, false);
    sim_refstr_end_launch(rs, 0);
    sim_refstr_free(rs, 0);
    sim_refstr_ref(rs, 0, false);
    sim_refstr_end_launch(rs, 0);
    uint64_t f, w;
    assert_int_equal(opt_chunks(rs, 1, &f, &w), GMUX_OK);
    assert_int_equal(f, 3);
    assert_int_equal(w, 0);
    assert_int_equal(sim_refstr_launches(rs), 3);
    sim_refstr_destroy(rs);
    /* a written chunk read again after others displaced it costs a write-back */
    assert_int_equal(sim_refstr_create(1000, &rs), GMUX_OK);
    sim_refstr_ref(rs, 0, true);
    sim_refstr_end_launch(rs, 0);
    sim_refstr_ref(rs, 1, true);
    sim_refstr_end_launch(rs, 0);
    sim_refstr_ref(rs, 0, false);
    sim_refstr_end_launch(rs, 0);
    sim_refstr_ref(rs, 1, false);
    sim_refstr_end_launch(rs, 0);
    assert_int_equal(opt_chunks(rs, 1, &f, &w), GMUX_OK);
    assert_int_equal(f, 4);
    assert_int_equal(w, 1); /* one of the two must leave while dirty and needed */
    /* a launch needing two chunks does not fit in one */
    sim_refstr_ref(rs, 0, false);
    sim_refstr_ref(rs, 1, false);
    sim_refstr_end_launch(rs, 0);
    assert_int_equal(opt_chunks(rs, 1, &f, &w), GMUX_ERR_CAPACITY);
    sim_refstr_destroy(rs);
    /* past the limit the string is cut and the exact bound refused */
    assert_int_equal(sim_refstr_create(4, &rs), GMUX_OK);
    for (int i = 0; i < 5; i++) {
        sim_refstr_ref(rs, 0, false);
        sim_refstr_end_launch(rs, 0);
    }
    assert_false(sim_refstr_complete(rs));
    assert_int_equal(opt_chunks(rs, 1, &f, &w), GMUX_ERR_RANGE);
    sim_refstr_destroy(rs);
}

/* Partial references (a launch touching some blocks of a chunk) take a slot
 * and count in no chunk-level term: no fetch, no dirty interval, no cold miss
 * (the block-level terms count them: test_blocks_partial). */
static void test_partial_refs(void **state)
{
    (void)state;
    sim_refstr_t *rs;
    assert_int_equal(sim_refstr_create(1000, &rs), GMUX_OK);
    for (int i = 0; i < 3; i++) { /* A whole (written), B in part, alternately C in part */
        sim_refstr_ref(rs, 0, true);
        sim_refstr_ref_part(rs, 1, 1, false);
        if (i % 2)
            sim_refstr_ref_part(rs, 2, 1, false);
        sim_refstr_end_launch(rs, 10);
    }
    sim_refstr_ref_part(rs, 1, 1, true); /* B written in part: no interval */
    sim_refstr_end_launch(rs, 10);
    uint64_t f = 99, w = 99;
    /* launch 1 needs 3 slots, partial ones included */
    assert_int_equal(opt_chunks(rs, 2, &f, &w), GMUX_ERR_CAPACITY);
    uint64_t ns;
    assert_int_equal(wb_released(rs, 2, 1.0, 1.0, &ns), GMUX_ERR_CAPACITY);
    assert_int_equal(opt_chunks(rs, 3, &f, &w), GMUX_OK);
    assert_int_equal(f, 1); /* A once */
    assert_int_equal(w, 0);
    assert_int_equal(sim_refstr_distinct(rs), 1);
    sim_refstr_destroy(rs);
}

/* The block-level terms against the same exhaustive search over blocks: 3
 * chunks of 2 blocks (page 2c+b), launches touching chunks whole or one block
 * of them, capacity 1 or 2 chunks (2 or 4 blocks). Belady over blocks is the
 * fewest block fetches; the block write-back term is never above the fewest
 * block write-backs. */
static void test_blocks_equal_exhaustive(void **state)
{
    (void)state;
    uint64_t s = 7;
    int wb_positive = 0, part_fetch = 0;
    for (int round = 0; round < 150; round++) {
        uint32_t cap = 1 + (uint32_t)(trand_next(&s) % 2);
        uint32_t n = 5 + (uint32_t)(trand_next(&s) % 9);
        uint32_t masks[16], wmasks[16];
        sim_refstr_t *rs;
        assert_int_equal(sim_refstr_create(1000, &rs), GMUX_OK);
        sim_refstr_set_blocks(rs, 2);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t chunks = 0, ws = 1 + (uint32_t)(trand_next(&s) % cap);
            while ((uint32_t)__builtin_popcount(chunks) < ws)
                chunks |= 1u << (trand_next(&s) % (NCH / 2));
            masks[k] = wmasks[k] = 0;
            for (uint32_t c = 0; c < NCH / 2; c++) {
                if (!(chunks & (1u << c)))
                    continue;
                uint32_t b = 1 + (uint32_t)(trand_next(&s) % 3); /* block 0, 1 or both */
                bool write = trand_next(&s) % 3 == 0;
                masks[k] |= b << (2 * c);
                wmasks[k] |= write ? b << (2 * c) : 0;
                if (b == 3)
                    sim_refstr_ref(rs, c, write);
                else
                    sim_refstr_ref_part(rs, c, b, write);
            }
            sim_refstr_end_launch(rs, 0);
        }
        uint64_t f, w, ef, ew, cf, cw;
        assert_int_equal(opt_blocks(rs, cap, &f, &w), GMUX_OK);
        exhaustive(masks, wmasks, n, 2 * cap, &ef, &ew);
        assert_int_equal(f, ef); /* Belady over blocks is optimal */
        assert_true(w <= ew);    /* a lower bound on block write-backs */
        /* never below the chunk-level terms, counted in blocks */
        assert_int_equal(opt_chunks(rs, cap, &cf, &cw), GMUX_OK);
        assert_true(f >= 2 * cf);
        assert_true(w >= 2 * cw);
        wb_positive += w > 0;
        part_fetch += f > 2 * cf;
        sim_refstr_destroy(rs);
    }
    assert_true(wb_positive > 10);
    assert_true(part_fetch > 50); /* partial references counted */
    print_message("block write-back term positive in %d of 150, fetches above whole chunks' in "
                  "%d\n",
                  wb_positive, part_fetch);
}

/* Chunks A and B, 4 blocks each, room for one chunk (4 blocks): A's blocks 0-1
 * written, B's 0-2 written, then both read back. In part only: no chunk-level
 * term. Over blocks: 2 + 3 fetched, then one block of each again (room for 4
 * of the 5); at the end of launch 1 five dirty blocks are open, one is written
 * back. */
static void test_blocks_partial(void **state)
{
    (void)state;
    sim_refstr_t *rs;
    assert_int_equal(sim_refstr_create(1000, &rs), GMUX_OK);
    sim_refstr_set_blocks(rs, 4);
    sim_refstr_ref_part(rs, 0, 0x3, true);
    sim_refstr_end_launch(rs, 1);
    sim_refstr_ref_part(rs, 1, 0x7, true);
    sim_refstr_end_launch(rs, 1);
    sim_refstr_ref_part(rs, 0, 0x3, false);
    sim_refstr_end_launch(rs, 1);
    sim_refstr_ref_part(rs, 1, 0x7, false);
    sim_refstr_end_launch(rs, 1);
    uint64_t f = 99, w = 99;
    assert_int_equal(opt_chunks(rs, 1, &f, &w), GMUX_OK);
    assert_int_equal(f, 0);
    assert_int_equal(w, 0);
    assert_int_equal(opt_blocks(rs, 1, &f, &w), GMUX_OK);
    assert_int_equal(f, 7);
    assert_int_equal(w, 1);
    assert_int_equal(opt_blocks(rs, 2, &f, &w), GMUX_OK);
    assert_int_equal(f, 5); /* room for all five */
    assert_int_equal(w, 0);
    /* a free ends the lifetime: the blocks are fetched again */
    sim_refstr_free(rs, 0);
    sim_refstr_ref_part(rs, 0, 0x1, false);
    sim_refstr_end_launch(rs, 1);
    assert_int_equal(opt_blocks(rs, 2, &f, &w), GMUX_OK);
    assert_int_equal(f, 6);
    sim_refstr_destroy(rs);
}

/* On whole references only, the block-level terms are the chunk-level ones
 * counted in blocks (so skipping them without partial references loses
 * nothing): 150 random strings of 6 chunks of 4 blocks, with frees. */
static void test_blocks_whole_equal_chunks(void **state)
{
    (void)state;
    uint64_t s = 11;
    for (int round = 0; round < 150; round++) {
        uint32_t cap = 1 + (uint32_t)(trand_next(&s) % 4);
        uint32_t n = 5 + (uint32_t)(trand_next(&s) % 30);
        sim_refstr_t *rs;
        assert_int_equal(sim_refstr_create(1000, &rs), GMUX_OK);
        sim_refstr_set_blocks(rs, 4);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t m = 0, ws = 1 + (uint32_t)(trand_next(&s) % cap);
            while ((uint32_t)__builtin_popcount(m) < ws)
                m |= 1u << (trand_next(&s) % NCH);
            for (uint32_t c = 0; c < NCH; c++)
                if (m & (1u << c))
                    sim_refstr_ref(rs, c, trand_next(&s) % 3 == 0);
            sim_refstr_end_launch(rs, 0);
            if (trand_next(&s) % 8 == 0)
                sim_refstr_free(rs, (uint32_t)(trand_next(&s) % NCH));
        }
        uint64_t f, w, cf, cw;
        assert_int_equal(opt_blocks(rs, cap, &f, &w), GMUX_OK);
        assert_int_equal(opt_chunks(rs, cap, &cf, &cw), GMUX_OK);
        assert_int_equal(f, 4 * cf);
        assert_int_equal(w, 4 * cw);
        sim_refstr_destroy(rs);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opt_fetches_equal_exhaustive_wb_below),
        cmocka_unit_test(test_frees_and_limits),
        cmocka_unit_test(test_wb_released),
        cmocka_unit_test(test_partial_refs),
        cmocka_unit_test(test_blocks_equal_exhaustive),
        cmocka_unit_test(test_blocks_partial),
        cmocka_unit_test(test_blocks_whole_equal_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
