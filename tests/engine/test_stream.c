/*
 * Tests of streams (continuation prediction): a slice-by-slice argument is
 * detected, trusted only after a held-out launch, predicted at the previous
 * end with the largest recent length, clipped to its region, restarted at its
 * origin; random and repeated access never becomes a trusted stream; broken
 * continuations demote and give up; a stream class lends trust to another
 * task's pointer and is withdrawn when that keeps failing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/stream.h"

/* Regions: row_ptr-like (moving pointer), col-like (the stream), a second col for task 1. */
#define RP   (1ull << 32)
#define COL  (1ull << 34)
#define COL2 (1ull << 35)
#define RSZ  (64ull << 20)

static bool find(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size)
{
    (void)ctx;
    const uint64_t bases[] = {RP, COL, COL2};
    for (unsigned i = 0; i < 3; i++)
        if (addr >= bases[i] && addr - bases[i] < RSZ) {
            *base = bases[i];
            *size = RSZ;
            return true;
        }
    return false;
}

static const eng_region_lookup_t rl = {find, NULL};
static eng_arg_t args[3];

/* spmv(rp + 8 * r0, col, nrows): the kernel whose arg 1 streams. */
static eng_launch_t spmv(uint64_t r0, uint64_t col)
{
    args[0] = (eng_arg_t){ENG_ARG_PTR, RP + 8 * r0};
    args[1] = (eng_arg_t){ENG_ARG_PTR, col};
    args[2] = (eng_arg_t){ENG_ARG_VAL, 1024};
    return (eng_launch_t){
        .kernel = 3, .grid = {4, 1, 1}, .block = {256, 1, 1}, .nargs = 3, .args = args};
}

/* Observes one launch touching its row_ptr block and [lo, lo+len) of its col. */
static void run(eng_stream_t *s, uint32_t ctx, uint64_t r0, uint64_t col, uint64_t lo, uint64_t len)
{
    eng_launch_t l = spmv(r0, col);
    eng_range_t t[] = {{RP + 8 * r0, 8 * 1024 + 8, ENG_ACCESS_READ}, {lo, len, ENG_ACCESS_READ}};
    assert_int_equal(eng_stream_observe(s, ctx, &l, t, 2, &rl), GMUX_OK);
}

static bool predict(eng_stream_t *s, uint32_t ctx, uint64_t r0, uint64_t col, eng_range_t *g)
{
    eng_launch_t l = spmv(r0, col);
    return eng_stream_predict(s, ctx, &l, 1, &rl, g);
}

static void test_detected_heldout_predicted(void **state)
{
    (void)state;
    eng_stream_t *s;
    eng_range_t g;
    eng_stream_stats_t st;
    assert_int_equal(eng_stream_create(64, &s), GMUX_OK);
    const uint64_t len[] = {0x3000, 0x5000, 0x2000, 0x4000, 0x1000};
    uint64_t at = COL; /* block b's slice starts where block b-1's ended */
    for (unsigned b = 0; b < 5; b++) {
        bool p = predict(s, 0, 1024 * b, COL, &g);
        eng_launch_t l = spmv(1024 * b, COL);
        if (b < 3) { /* 1st: learning; 2nd: candidate; 3rd: held out, not predicted */
            assert_false(p);
            assert_int_equal(eng_stream_state(s, 0, &l, 1),
                             b == 0 ? ENG_STREAM_LEARNING
                                    : (b == 1 ? ENG_STREAM_LEARNING : ENG_STREAM_CANDIDATE));
        } else { /* trusted: the previous end, the largest recent length */
            assert_true(p);
            assert_int_equal(eng_stream_state(s, 0, &l, 1), ENG_STREAM_TRUSTED);
            assert_int_equal(g.addr, at);
            assert_int_equal(g.len, 0x5000);
        }
        run(s, 0, 1024 * b, COL, at, len[b]);
        at += len[b];
    }
    /* the row_ptr argument moves: each pointer is its own, never continued, stream */
    eng_launch_t l = spmv(1024 * 5, COL);
    assert_false(eng_stream_predict(s, 0, &l, 0, &rl, &g));
    /* another context with the same pointer value is another stream: its first
     * launch is predicted at the pointer (the class lends), not where context 0 is */
    assert_true(predict(s, 1, 0, COL, &g));
    assert_int_equal(g.addr, COL);
    eng_stream_stats(s, &st);
    assert_int_equal(st.held_out_pass, 1);
    assert_int_equal(st.hits, 2);
    assert_int_equal(st.misses, 0);
    /* scored after the fact: predicted 0x5000 twice, slices 0x4000 and 0x1000 */
    assert_int_equal(st.pred_bytes, 0xa000);
    assert_int_equal(st.hit_bytes, 0x5000);
    assert_int_equal(st.slice_bytes, 0x5000);
    eng_stream_destroy(s);
}

static void test_clipped_and_restarted(void **state)
{
    (void)state;
    eng_stream_t *s;
    eng_range_t g;
    assert_int_equal(eng_stream_create(64, &s), GMUX_OK);
    const uint64_t step = RSZ / 4; /* four slices sweep the region */
    for (unsigned b = 0; b < 3; b++)
        run(s, 0, 1024 * b, COL, COL + b * step, step);
    assert_true(predict(s, 0, 0, COL, &g));
    assert_int_equal(g.addr, COL + 3 * step);
    assert_int_equal(g.len, step);
    run(s, 0, 3072, COL, COL + 3 * step, step - 0x1000); /* shorter: ends before the region */
    assert_true(predict(s, 0, 0, COL, &g));              /* clipped to the region's end */
    assert_int_equal(g.addr, COL + RSZ - 0x1000);
    assert_int_equal(g.len, 0x1000);
    /* the next sweep starts at the origin: a restart, not a miss */
    run(s, 0, 0, COL, COL, step);
    eng_stream_stats_t st;
    eng_stream_stats(s, &st);
    assert_int_equal(st.restarts, 1);
    assert_int_equal(st.misses, 0);
    eng_launch_t l = spmv(0, COL);
    assert_int_equal(eng_stream_state(s, 0, &l, 1), ENG_STREAM_TRUSTED);
    for (unsigned b = 1; b < 4; b++)
        run(s, 0, 1024 * b, COL, COL + b * step, b == 3 ? step - 0x1000 : step);
    /* at the end of the sweep, the next slice is predicted at the origin */
    assert_true(predict(s, 0, 0, COL, &g));
    assert_int_equal(g.addr, COL);
    assert_int_equal(g.len, step);
    eng_stream_destroy(s);
}

static void test_heldout_failure_not_trusted(void **state)
{
    (void)state;
    eng_stream_t *s;
    eng_range_t g;
    assert_int_equal(eng_stream_create(64, &s), GMUX_OK);
    run(s, 0, 0, COL, COL, 0x1000);
    run(s, 0, 1024, COL, COL + 0x1000, 0x1000); /* abuts: a candidate */
    run(s, 0, 2048, COL, COL + 0x8000, 0x1000); /* held out: jumped */
    assert_false(predict(s, 0, 3072, COL, &g));
    eng_launch_t l = spmv(0, COL);
    assert_int_equal(eng_stream_state(s, 0, &l, 1), ENG_STREAM_LEARNING);
    eng_stream_stats_t st;
    eng_stream_stats(s, &st);
    assert_int_equal(st.held_out_fail, 1);
    assert_int_equal(st.held_out_pass, 0);
    assert_int_equal(st.classes, 0);
    eng_stream_destroy(s);
}

static uint64_t rng(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

static void test_random_never_trusted(void **state)
{
    (void)state;
    eng_stream_t *s;
    eng_range_t g;
    uint64_t x = 42;
    assert_int_equal(eng_stream_create(64, &s), GMUX_OK);
    for (unsigned i = 0; i < 500; i++) {
        /* one random 64 KiB piece per launch (a gather through an index) */
        assert_false(predict(s, 0, 0, COL, &g));
        uint64_t piece = rng(&x) % (RSZ >> 16);
        run(s, 0, 0, COL, COL + (piece << 16), 1 << 16);
    }
    for (unsigned i = 0; i < 200; i++) {
        /* scattered pieces (a frontier): never one slice */
        eng_launch_t l = spmv(0, COL);
        eng_range_t t[8];
        for (unsigned k = 0; k < 8; k++)
            t[k] = (eng_range_t){COL + ((rng(&x) % (RSZ >> 16)) << 16), 1 << 12, ENG_ACCESS_READ};
        assert_false(eng_stream_predict(s, 0, &l, 1, &rl, &g));
        assert_int_equal(eng_stream_observe(s, 0, &l, t, 8, &rl), GMUX_OK);
    }
    for (unsigned i = 0; i < 50; i++) { /* the same slice again and again: no stream either */
        assert_false(predict(s, 0, 0, COL2, &g));
        run(s, 0, 0, COL2, COL2 + 0x4000, 0x2000);
    }
    eng_stream_stats_t st;
    eng_stream_stats(s, &st);
    assert_int_equal(st.hits, 0);
    assert_int_equal(st.pred_bytes, 0);
    assert_int_equal(st.held_out_pass, 0);
    eng_stream_destroy(s);
}

static void test_misses_demote_then_give_up(void **state)
{
    (void)state;
    eng_stream_t *s;
    eng_range_t g;
    eng_launch_t l = spmv(0, COL);
    assert_int_equal(eng_stream_create(64, &s), GMUX_OK);
    uint64_t at = COL;
    for (unsigned round = 0; round < ENG_STREAM_MAX_MISSES; round++) {
        for (unsigned b = 0; b < 3; b++, at += 0x1000)
            run(s, 0, 1024 * b, COL, at, 0x1000);
        assert_true(predict(s, 0, 0, COL, &g));
        assert_int_equal(g.addr, at);
        at += 0x10000; /* the stream jumps: the trusted prediction misses */
        run(s, 0, 0, COL, at, 0x1000);
        at += 0x1000;
        assert_false(predict(s, 0, 0, COL, &g)); /* demoted: must pass a held-out again */
    }
    assert_int_equal(eng_stream_state(s, 0, &l, 1), ENG_STREAM_FALLBACK);
    for (unsigned b = 0; b < 6; b++, at += 0x1000) /* given up for good */
        run(s, 0, 1024 * b, COL, at, 0x1000);
    assert_false(predict(s, 0, 0, COL, &g));
    eng_stream_stats_t st;
    eng_stream_stats(s, &st);
    assert_int_equal(st.misses, ENG_STREAM_MAX_MISSES);
    assert_true(st.given_up >= 1);
    eng_stream_destroy(s);
}

static void test_class_lends_and_withdraws(void **state)
{
    (void)state;
    eng_stream_t *s;
    eng_range_t g;
    eng_stream_stats_t st;
    assert_int_equal(eng_stream_create(64, &s), GMUX_OK);
    /* task 0's stream starts at its pointer and is trusted */
    for (unsigned b = 0; b < 3; b++)
        run(s, 0, 1024 * b, COL, COL + b * 0x2000, b == 1 ? 0x3000 : 0x2000);
    eng_stream_stats(s, &st);
    assert_int_equal(st.classes, 0); /* the held-out 3rd slice did not start at the 2nd's end */
    eng_stream_destroy(s);

    assert_int_equal(eng_stream_create(64, &s), GMUX_OK);
    for (unsigned b = 0; b < 3; b++)
        run(s, 0, 1024 * b, COL, COL + b * 0x2000, 0x2000);
    eng_stream_stats(s, &st);
    assert_int_equal(st.classes, 1);
    /* task 1, its own matrix: predicted from its first launch, at its pointer */
    assert_true(predict(s, 1, 0, COL2, &g));
    assert_int_equal(g.addr, COL2);
    assert_int_equal(g.len, 0x2000);
    run(s, 1, 0, COL2, COL2, 0x2000);
    assert_true(predict(s, 1, 1024, COL2, &g)); /* and continued on trust */
    assert_int_equal(g.addr, COL2 + 0x2000);
    /* inherited predictions that fail withdraw the class */
    for (unsigned t = 2; t < 2 + ENG_STREAM_MAX_MISSES; t++) {
        uint64_t col = COL2 + t * 0x100000;
        assert_true(predict(s, t, 0, col, &g));
        run(s, t, 0, col, col + 0x800, 0x2000); /* not at the pointer */
    }
    assert_false(predict(s, 9, 0, COL2 + 0x800000, &g));
    eng_stream_stats(s, &st);
    assert_int_equal(st.classes, 0);
    assert_int_equal(st.misses, ENG_STREAM_MAX_MISSES);
    /* task 1's own stream keeps its trust */
    assert_true(predict(s, 1, 1024, COL2, &g));
    eng_stream_destroy(s);
}

static void test_window_ends_at_next_pointer(void **state)
{
    (void)state;
    eng_stream_t *s;
    eng_range_t g;
    assert_int_equal(eng_stream_create(64, &s), GMUX_OK);
    /* two pointers into one region: the first argument's bytes end where the second's begin */
    eng_arg_t a[2] = {{ENG_ARG_PTR, COL}, {ENG_ARG_PTR, COL + 0x6000}};
    eng_launch_t l = {.kernel = 5, .grid = {1, 1, 1}, .block = {1, 1, 1}, .nargs = 2, .args = a};
    for (unsigned b = 0; b < 3; b++) {
        eng_range_t t[] = {{COL + b * 0x1800, 0x1800, ENG_ACCESS_READ},
                           {COL + 0x6000, 0x100, ENG_ACCESS_WRITE}};
        assert_int_equal(eng_stream_observe(s, 0, &l, t, 2, &rl), GMUX_OK);
    }
    assert_true(eng_stream_predict(s, 0, &l, 0, &rl, &g));
    assert_int_equal(g.addr, COL + 0x4800);
    assert_int_equal(g.len, 0x1800);
    /* one more slice fills the window to the second pointer: nothing is left to predict */
    eng_range_t t[] = {{COL + 0x4800, 0x1800, ENG_ACCESS_READ}};
    assert_int_equal(eng_stream_observe(s, 0, &l, t, 1, &rl), GMUX_OK);
    assert_false(eng_stream_predict(s, 0, &l, 0, &rl, &g));
    eng_stream_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detected_heldout_predicted),
        cmocka_unit_test(test_clipped_and_restarted),
        cmocka_unit_test(test_heldout_failure_not_trusted),
        cmocka_unit_test(test_random_never_trusted),
        cmocka_unit_test(test_misses_demote_then_give_up),
        cmocka_unit_test(test_class_lends_and_withdraws),
        cmocka_unit_test(test_window_ends_at_next_pointer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
