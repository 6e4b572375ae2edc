/* Tests of the shared, capacity-independent part of the transfer bound
 * (sim_refuses_t): one object serves every capacity, in any order, with the
 * results of a fresh computation, and its per-write interval ends line up
 * with the right writes when partial references and frees lie between. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bound_test_util.h"
#include "sim/bound.h"
#include "sim/bound_impl.h"
#include "trand.h"

#define NCH 8

/* Two strings of the same random run: `all` with every reference, `whole`
 * without the partial ones (which no chunk-level term counts). Launches of
 * at most 4 chunks, 4 blocks a chunk, writes, frees, compute times. */
static void build(uint64_t *s, sim_refstr_t *all, sim_refstr_t *whole)
{
    sim_refstr_set_blocks(all, 4);
    sim_refstr_set_blocks(whole, 4);
    uint32_t n = 10 + (uint32_t)(trand_next(s) % 40);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t m = 0, ws = 1 + (uint32_t)(trand_next(s) % 4);
        while ((uint32_t)__builtin_popcount(m) < ws)
            m |= 1u << (trand_next(s) % NCH);
        for (uint32_t c = 0; c < NCH; c++) {
            if (!(m & (1u << c)))
                continue;
            bool write = trand_next(s) % 3 == 0;
            if (trand_next(s) % 3 == 0) {
                sim_refstr_ref_part(all, c, 1u + (uint32_t)(trand_next(s) % 14), write);
            } else {
                sim_refstr_ref(all, c, write);
                sim_refstr_ref(whole, c, write);
            }
        }
        uint64_t t = trand_next(s) % 200;
        sim_refstr_end_launch(all, t);
        sim_refstr_end_launch(whole, t);
        if (trand_next(s) % 6 == 0) {
            uint32_t c = (uint32_t)(trand_next(s) % NCH);
            sim_refstr_free(all, c);
            sim_refstr_free(whole, c);
        }
    }
}

/* One shared object, capacities visited down, up and again, gives what a
 * fresh computation gives at each: Belady's fetches, the fewest write-backs,
 * both over blocks, the released term and the distinct chunks; also after
 * its interval ends and block lists were dropped and built again. */
static void test_shared_equals_fresh(void **state)
{
    (void)state;
    uint64_t s = 2026;
    static const uint64_t caps[] = {8, 5, 4, 6, 4, 7, 5, 8};
    int blocks_differ = 0, released_positive = 0;
    for (int round = 0; round < 100; round++) {
        sim_refstr_t *rs, *whole;
        assert_int_equal(sim_refstr_create(100000, &rs), GMUX_OK);
        assert_int_equal(sim_refstr_create(100000, &whole), GMUX_OK);
        build(&s, rs, whole);
        sim_refuses_t *u;
        assert_int_equal(sim_refuses_create(rs, &u), GMUX_OK);
        assert_int_equal(sim_refuses_distinct(u), sim_refstr_distinct(rs));
        for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
            uint64_t f, w, ef, ew, ns, ens;
            if (i == 3) { /* dropped and built again: the same lists */
                sim_refuses_drop_blocks(u);
                sim_refuses_drop_ends(u);
                assert_int_equal(sim_refuses_rebuild_ends(u), GMUX_OK);
            }
            assert_int_equal(sim_refuses_opt(u, caps[i], &f, &w), GMUX_OK);
            assert_int_equal(opt_chunks(rs, caps[i], &ef, &ew), GMUX_OK);
            assert_int_equal(f, ef);
            assert_int_equal(w, ew);
            assert_int_equal(sim_refuses_opt_blocks(u, caps[i], &f, &w), GMUX_OK);
            assert_int_equal(opt_blocks(rs, caps[i], &ef, &ew), GMUX_OK);
            assert_int_equal(f, ef);
            assert_int_equal(w, ew);
            blocks_differ += f != 4 * ef || w != 4 * ew;
            assert_int_equal(sim_refuses_wb_released(u, caps[i] / 2 + 2, 3.0, 40.0, &ns), GMUX_OK);
            assert_int_equal(wb_released(rs, caps[i] / 2 + 2, 3.0, 40.0, &ens), GMUX_OK);
            assert_int_equal(ns, ens);
            released_positive += ns > 0;
        }
        sim_refuses_destroy(u);
        sim_refstr_destroy(rs);
        sim_refstr_destroy(whole);
    }
    (void)blocks_differ;
    assert_true(released_positive > 100);
}

/* The chunk-level terms skip partial references: a string with them gives
 * what the same string without them gives, so the interval end of each
 * whole write is found past partial writes and frees. The released term is
 * checked with fetches free (distinct chunks then weigh nothing). */
static void test_partial_writes_skipped(void **state)
{
    (void)state;
    uint64_t s = 77;
    int wb_positive = 0;
    for (int round = 0; round < 150; round++) {
        sim_refstr_t *rs, *whole;
        assert_int_equal(sim_refstr_create(100000, &rs), GMUX_OK);
        assert_int_equal(sim_refstr_create(100000, &whole), GMUX_OK);
        build(&s, rs, whole);
        sim_refuses_t *u, *uw;
        assert_int_equal(sim_refuses_create(rs, &u), GMUX_OK);
        assert_int_equal(sim_refuses_create(whole, &uw), GMUX_OK);
        for (uint64_t cap = 4; cap <= 6; cap++) {
            uint64_t f, w, ef, ew, ns, ens;
            assert_int_equal(sim_refuses_opt(u, cap, &f, &w), GMUX_OK);
            assert_int_equal(sim_refuses_opt(uw, cap, &ef, &ew), GMUX_OK);
            assert_int_equal(f, ef);
            assert_int_equal(w, ew);
            wb_positive += w > 0;
            assert_int_equal(sim_refuses_wb_released(u, cap, 0.0, 40.0, &ns), GMUX_OK);
            assert_int_equal(sim_refuses_wb_released(uw, cap, 0.0, 40.0, &ens), GMUX_OK);
            assert_int_equal(ns, ens);
        }
        sim_refuses_destroy(u);
        sim_refuses_destroy(uw);
        sim_refstr_destroy(rs);
        sim_refstr_destroy(whole);
    }
    assert_true(wb_positive > 50);
}

/* The released term skips a sample whose earliest end plus the drops of the
 * last sample swept cannot pass the best so far (a later sample drops no
 * more): the bound is the one sweeping every sample gives, on random strings
 * at capacities from one launch's most up to nearly all chunks and with
 * fetches cheaper, dearer, as dear as write-backs or free; and the pruning
 * does skip samples in many of them (else this would show nothing). */
static void test_released_pruning_exact(void **state)
{
    (void)state;
    static const double cost[][2] = {{3.0, 40.0},  {40.0, 3.0},    {10.0, 10.0}, {0.0, 40.0},
                                     {0.0, 300.0}, {20.0, 1000.0}, {5.0, 120.0}, {60.0, 600.0}};
    uint64_t s = 4242;
    int skipped = 0, positive = 0, cases = 0;
    for (int round = 0; round < 150; round++) {
        sim_refstr_t *rs, *whole;
        assert_int_equal(sim_refstr_create(100000, &rs), GMUX_OK);
        assert_int_equal(sim_refstr_create(100000, &whole), GMUX_OK);
        build(&s, rs, whole);
        sim_refuses_t *u;
        assert_int_equal(sim_refuses_create(rs, &u), GMUX_OK);
        for (uint64_t cap = 4; cap < NCH; cap++) {
            for (size_t i = 0; i < sizeof(cost) / sizeof(cost[0]); i++) {
                uint64_t ns = 1, all_ns = 2;
                uint32_t sweeps = 0, all_sweeps = 0;
                assert_int_equal(
                    sim_refuses_wb_released_how(u, cap, cost[i][0], cost[i][1], true, &ns, &sweeps),
                    GMUX_OK);
                assert_int_equal(sim_refuses_wb_released_how(u, cap, cost[i][0], cost[i][1], false,
                                                             &all_ns, &all_sweeps),
                                 GMUX_OK);
                assert_int_equal(ns, all_ns);
                assert_true(sweeps <= all_sweeps);
                skipped += sweeps < all_sweeps;
                positive += ns > 0;
                cases++;
            }
        }
        sim_refuses_destroy(u);
        sim_refstr_destroy(rs);
        sim_refstr_destroy(whole);
    }
    print_message("pruning skipped samples in %d of %d cases, the term positive in %d\n", skipped,
                  cases, positive);
    assert_true(skipped > cases / 2);
    assert_true(positive > cases / 2);
}

/* A capacity one launch does not fit is refused by every pass and leaves
 * the object as it was for the next capacity; a cut string is refused. */
static void test_refusals(void **state)
{
    (void)state;
    sim_refstr_t *rs;
    assert_int_equal(sim_refstr_create(1000, &rs), GMUX_OK);
    sim_refstr_set_blocks(rs, 2);
    sim_refstr_ref(rs, 0, true);
    sim_refstr_ref_part(rs, 1, 1, true);
    sim_refstr_end_launch(rs, 10);
    sim_refstr_ref(rs, 2, true);
    sim_refstr_end_launch(rs, 10);
    sim_refstr_ref(rs, 0, false);
    sim_refstr_ref_part(rs, 1, 1, false);
    sim_refstr_ref(rs, 2, false);
    sim_refstr_end_launch(rs, 10);
    sim_refuses_t *u;
    assert_int_equal(sim_refuses_create(rs, &u), GMUX_OK);
    uint64_t f = 9, w = 9, ns = 9;
    assert_int_equal(sim_refuses_opt(u, 2, &f, &w), GMUX_ERR_CAPACITY);
    assert_int_equal(sim_refuses_opt_blocks(u, 2, &f, &w), GMUX_ERR_CAPACITY);
    assert_int_equal(sim_refuses_wb_released(u, 2, 1.0, 1.0, &ns), GMUX_ERR_CAPACITY);
    assert_int_equal(sim_refuses_opt(u, 0, &f, &w), GMUX_ERR_RANGE);
    assert_int_equal(sim_refuses_opt_blocks(u, 0, &f, &w), GMUX_ERR_RANGE);
    assert_int_equal(sim_refuses_wb_released(u, 0, 1.0, 1.0, &ns), GMUX_ERR_RANGE);
    assert_int_equal(f, 9); /* nothing written when refused */
    /* room for the three: chunks 0 and 2 fetched once, nothing written back */
    assert_int_equal(sim_refuses_opt(u, 3, &f, &w), GMUX_OK);
    assert_int_equal(f, 2);
    assert_int_equal(w, 0);
    /* blocks: 2 + 1 + 2 fetched, room for 6 */
    assert_int_equal(sim_refuses_opt_blocks(u, 3, &f, &w), GMUX_OK);
    assert_int_equal(f, 5);
    assert_int_equal(w, 0);
    assert_int_equal(sim_refuses_distinct(u), 2);
    sim_refuses_destroy(u);
    sim_refstr_destroy(rs);

    assert_int_equal(sim_refstr_create(3, &rs), GMUX_OK);
    for (uint32_t c = 0; c < 4; c++)
        sim_refstr_ref(rs, c, false);
    sim_refstr_end_launch(rs, 1);
    assert_false(sim_refstr_complete(rs));
    assert_int_equal(sim_refuses_create(rs, &u), GMUX_ERR_RANGE);
    sim_refstr_destroy(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_equals_fresh),
        cmocka_unit_test(test_partial_writes_skipped),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_released_pruning_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
