/*
 * Tests of the predictor: attribution of touched ranges, learning each class
 * from launches, the held-out check, indirect access ending in the fallback,
 * tensors carved out of one shared allocation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/predictor.h"
#include "engine/template_db.h"
#include "engine/score.h"
#include "trand.h"

/* Three regions: a 1 GiB pool (as a caching allocator holds), two 64 MiB buffers. */
static const uint64_t reg_base[] = {1ull << 32, 1ull << 34, 1ull << 35};
static const uint64_t reg_size[] = {1ull << 30, 64ull << 20, 64ull << 20};

static bool find(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size)
{
    (void)ctx;
    for (unsigned i = 0; i < 3; i++)
        if (addr >= reg_base[i] && addr - reg_base[i] < reg_size[i]) {
            *base = reg_base[i];
            *size = reg_size[i];
            return true;
        }
    return false;
}

static const eng_region_lookup_t rl = {find, NULL};

#define POOL reg_base[0]
#define BUFA reg_base[1]
#define BUFB reg_base[2]

static eng_launch_t launch(uint32_t kernel, eng_arg_t *args, uint32_t nargs)
{
    return (eng_launch_t){
        .kernel = kernel, .grid = {1, 1, 1}, .block = {256, 1, 1}, .nargs = nargs, .args = args};
}

static eng_pred_arg_info_t arg_info(eng_predictor_t *p, uint32_t k, uint32_t a)
{
    eng_pred_arg_info_t ai;
    assert_int_equal(eng_predictor_arg_info(p, k, a, &ai), GMUX_OK);
    return ai;
}

/* Scores the prediction for l against touched; returns precision and recall via sc. */
static eng_score_t score(eng_predictor_t *p, const eng_launch_t *l, const eng_range_t *t, size_t n)
{
    eng_span_t out[16];
    size_t np;
    eng_score_t sc = {0};
    eng_scorer_t *s;
    assert_int_equal(eng_predictor_prepare(p, l), GMUX_OK);
    assert_int_equal(eng_predictor_predict(p, l, &rl, out, 16, &np), GMUX_OK);
    assert_int_equal(eng_scorer_create(&s), GMUX_OK);
    assert_int_equal(eng_score_launch(s, out, np, t, n, &sc), GMUX_OK);
    eng_scorer_destroy(s);
    return sc;
}

/* vector scale: x[0..n) read, y[0..n) written, n floats; x, y carved from the pool. */
static void scale_sample(uint64_t n, uint64_t xoff, uint64_t yoff, eng_arg_t *args,
                         eng_range_t *touched)
{
    args[0] = (eng_arg_t){ENG_ARG_PTR, POOL + xoff};
    args[1] = (eng_arg_t){ENG_ARG_PTR, POOL + yoff};
    args[2] = (eng_arg_t){ENG_ARG_VAL, n};
    touched[0] = (eng_range_t){POOL + xoff, 4 * n, ENG_ACCESS_READ};
    touched[1] = (eng_range_t){POOL + yoff, 4 * n, ENG_ACCESS_WRITE};
}

static void test_t2_in_shared_pool_within_3_samples(void **state)
{
    (void)state;
    eng_predictor_t *p;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    eng_arg_t args[3];
    eng_range_t t[2];
    /* Tensors adjacent in the pool: y starts exactly where x ends. */
    uint64_t n[] = {1000, 5000, 300};
    for (unsigned i = 0; i < 3; i++) {
        scale_sample(n[i], 4096 * i, 4096 * i + 4 * n[i], args, t);
        eng_launch_t l = launch(0, args, 3);
        if (i == 2) /* before the held-out sample: still the whole pool */
            assert_int_equal(arg_info(p, 0, 0).state, ENG_PRED_CANDIDATE);
        /* Merge the two adjacent ranges as a recorder might. */
        eng_range_t merged = {t[0].addr, 8 * n[i], ENG_ACCESS_RW};
        assert_int_equal(eng_predictor_observe(p, &l, &merged, 1, &rl), GMUX_OK);
    }
    for (unsigned a = 0; a < 2; a++) {
        eng_pred_arg_info_t ai = arg_info(p, 0, a);
        assert_int_equal(ai.state, ENG_PRED_TRUSTED);
        assert_int_equal(ai.tpl.kind, ENG_TPL_T2);
        assert_int_equal(ai.trusted_after, 3);
    }
    /* An unseen size at an unseen place in the pool: exact. */
    scale_sample(123457, 1 << 20, 3 << 20, args, t);
    eng_launch_t l = launch(0, args, 3);
    eng_score_t sc = score(p, &l, t, 2);
    assert_int_equal(sc.hit, 8 * 123457);
    assert_int_equal(sc.predicted, 8 * 123457);
    assert_int_equal(sc.touched, 8 * 123457);
    /* The baseline predicts the whole 1 GiB pool. */
    eng_span_t w[4];
    size_t nw;
    assert_int_equal(eng_predict_whole(&l, &rl, w, 4, &nw), GMUX_OK);
    assert_int_equal(nw, 1);
    assert_int_equal(w[0].len, 1ull << 30);
    eng_predictor_destroy(p);
}

static void test_t1_with_halo_and_t3(void **state)
{
    (void)state;
    eng_predictor_t *p;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    /* a0: a 4 KiB table read from 256 bytes before the pointer (a halo);
     * a1: rows x cols tile of a row-major matrix with leading dimension ld (doubles). */
    for (unsigned i = 0; i < 3; i++) {
        uint64_t rows = 3 + 5 * i, cols = 16 + i, ld = 1000 + 24 * i;
        eng_arg_t args[5] = {{ENG_ARG_PTR, BUFA + 8192 * (i + 1)},
                             {ENG_ARG_PTR, BUFB + 65536 * i},
                             {ENG_ARG_VAL, rows},
                             {ENG_ARG_VAL, cols},
                             {ENG_ARG_VAL, ld}};
        eng_range_t t[32];
        size_t nt = 0;
        t[nt++] = (eng_range_t){args[0].value - 256, 4096, ENG_ACCESS_READ};
        for (uint64_t r = 0; r < rows; r++)
            t[nt++] = (eng_range_t){args[1].value + r * 8 * ld, 8 * cols, ENG_ACCESS_RW};
        eng_launch_t l = launch(7, args, 5);
        assert_int_equal(eng_predictor_observe(p, &l, t, nt, &rl), GMUX_OK);
    }
    eng_pred_arg_info_t a0 = arg_info(p, 7, 0), a1 = arg_info(p, 7, 1);
    assert_int_equal(a0.state, ENG_PRED_TRUSTED);
    assert_int_equal(a0.tpl.kind, ENG_TPL_T1);
    assert_int_equal(a0.tpl.off, -256);
    assert_int_equal(a1.state, ENG_PRED_TRUSTED);
    assert_int_equal(a1.tpl.kind, ENG_TPL_T3);
    char buf[256];
    assert_string_equal(eng_predictor_describe(p, 7, buf, sizeof(buf)),
                        "a0:T1 off=-256 len=4096 mode=r "
                        "a1:T3 off=0 stride=8*a4 count=1*a2 len=8*a3 mode=rw");
    eng_predictor_destroy(p);
}

/* The first samples agree with a wrong template; the held-out sample exposes it. */
static void test_held_out_failure_is_not_trusted(void **state)
{
    (void)state;
    eng_predictor_t *p;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    /* Touches 4*a2 bytes; in the first two samples a1 == a2, so 4*a1 fits as well
     * and, being first, is chosen. */
    uint64_t a1[] = {100, 200, 300, 50, 70}, a2[] = {100, 200, 700, 900, 20};
    for (unsigned i = 0; i < 5; i++) {
        eng_arg_t args[3] = {{ENG_ARG_PTR, BUFA}, {ENG_ARG_VAL, a1[i]}, {ENG_ARG_VAL, a2[i]}};
        eng_range_t t = {BUFA, 4 * a2[i], ENG_ACCESS_READ};
        eng_launch_t l = launch(1, args, 3);
        if (i == 2) {
            /* The candidate 4*a1 is not trusted: the prediction is the whole buffer. */
            eng_pred_arg_info_t ai = arg_info(p, 1, 0);
            assert_int_equal(ai.state, ENG_PRED_CANDIDATE);
            assert_int_equal(ai.tpl.len.v0, 1);
            eng_score_t sc = score(p, &l, &t, 1);
            assert_int_equal(sc.predicted, 64ull << 20);
            assert_int_equal(sc.hit, 4 * a2[i]);
        }
        assert_int_equal(eng_predictor_observe(p, &l, &t, 1, &rl), GMUX_OK);
        if (i == 2) /* failed its held-out sample: refitted, not trusted */
            assert_int_not_equal(arg_info(p, 1, 0).state, ENG_PRED_TRUSTED);
    }
    eng_pred_arg_info_t ai = arg_info(p, 1, 0);
    assert_int_equal(ai.state, ENG_PRED_TRUSTED);
    assert_int_equal(ai.tpl.len.v0, 2);
    assert_int_equal(ai.tpl.len.a, 4);
    eng_predictor_destroy(p);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

/*
 * Embedding lookup: rows chosen by indices read from memory (data-dependent).
 * The prediction must never come from a template, at any point.
 */
static void test_indirect_falls_back(void **state)
{
    (void)state;
    eng_predictor_t *p;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    const uint64_t row = 512, nidx = 4;
    for (unsigned i = 0; i < 40; i++) {
        eng_arg_t args[4] = {{ENG_ARG_PTR, BUFA},            /* table */
                             {ENG_ARG_PTR, BUFB},            /* indices */
                             {ENG_ARG_PTR, POOL + 4096 * i}, /* output */
                             {ENG_ARG_VAL, nidx}};
        eng_range_t t[8];
        size_t nt = 0;
        t[nt++] = (eng_range_t){BUFB, 8 * nidx, ENG_ACCESS_READ};
        t[nt++] = (eng_range_t){args[2].value, row * nidx, ENG_ACCESS_WRITE};
        for (uint64_t k = 0; k < nidx; k++)
            t[nt++] = (eng_range_t){BUFA + row * (trand_next(&rng) % 100000), row, ENG_ACCESS_READ};
        /* One random row only in some launches: a single range at a random offset. */
        if (i % 3 == 0)
            nt = 3;
        eng_launch_t l = launch(2, args, 4);
        assert_int_equal(eng_predictor_prepare(p, &l), GMUX_OK);
        assert_int_not_equal(arg_info(p, 2, 0).state, ENG_PRED_TRUSTED);
        eng_score_t sc = score(p, &l, t, nt);
        assert_int_equal(sc.hit, sc.touched); /* recall 1: the whole table is predicted */
        assert_int_equal(eng_predictor_observe(p, &l, t, nt, &rl), GMUX_OK);
    }
    eng_pred_arg_info_t ai = arg_info(p, 2, 0);
    assert_int_equal(ai.state, ENG_PRED_FALLBACK);
    assert_int_equal(ai.reason, ENG_PRED_WHY_IRREGULAR);
    /* The regular arguments still got their templates. */
    assert_int_equal(arg_info(p, 2, 1).state, ENG_PRED_TRUSTED);
    assert_int_equal(arg_info(p, 2, 1).tpl.kind, ENG_TPL_T1);
    assert_int_equal(arg_info(p, 2, 2).state, ENG_PRED_TRUSTED);
    assert_int_equal(arg_info(p, 2, 2).tpl.len.b, 2048);
    char buf[256];
    eng_predictor_describe(p, 2, buf, sizeof(buf));
    assert_non_null(strstr(buf, "a0:whole(irregular)"));
    eng_predictor_destroy(p);
}

/* Bytes touched through pointers held in memory, near no argument: counted, not learned. */
static void test_unattributed_bytes(void **state)
{
    (void)state;
    eng_predictor_t *p;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    eng_arg_t args[1] = {{ENG_ARG_PTR, BUFA}};
    eng_range_t t[2] = {{BUFA, 64, ENG_ACCESS_READ}, {BUFB + 4096, 1000, ENG_ACCESS_READ}};
    eng_launch_t l = launch(3, args, 1);
    assert_int_equal(eng_predictor_observe(p, &l, t, 2, &rl), GMUX_OK);
    eng_pred_kernel_info_t ki;
    assert_int_equal(eng_predictor_kernel_info(p, 3, &ki), GMUX_OK);
    assert_int_equal(ki.unattributed, 1000);
    assert_string_equal(ki.layout, "p");
    eng_predictor_destroy(p);
}

static void test_layout_change_and_capacity(void **state)
{
    (void)state;
    eng_predictor_t *p;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    for (unsigned i = 0; i < 3; i++) {
        eng_arg_t args[2] = {{ENG_ARG_PTR, BUFA}, {ENG_ARG_PTR, BUFB}};
        eng_range_t t[2] = {{BUFA, 64, 1}, {BUFB, 64, 2}};
        eng_launch_t l = launch(4, args, 2);
        assert_int_equal(eng_predictor_observe(p, &l, t, 2, &rl), GMUX_OK);
    }
    eng_arg_t args[2] = {{ENG_ARG_PTR, BUFA}, {ENG_ARG_PTR, BUFB}};
    eng_launch_t l = launch(4, args, 2);
    eng_span_t out[2];
    size_t n;
    assert_int_equal(eng_predictor_predict(p, &l, &rl, out, 2, &n), GMUX_OK);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].len, 64);
    assert_int_equal(eng_predictor_predict(p, &l, &rl, out, 1, &n), GMUX_ERR_CAPACITY);
    assert_int_equal(n, 2);
    /* Same kernel id, another layout: whole regions, and the sample is ignored. */
    eng_arg_t other[2] = {{ENG_ARG_PTR, BUFA}, {ENG_ARG_VAL, 5}};
    l = launch(4, other, 2);
    assert_int_equal(eng_predictor_predict(p, &l, &rl, out, 2, &n), GMUX_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].len, 64ull << 20);
    eng_range_t t = {BUFA, 8, 1};
    assert_int_equal(eng_predictor_observe(p, &l, &t, 1, &rl), GMUX_OK);
    assert_int_equal(arg_info(p, 4, 0).tpl.len.b, 64);
    /* More arguments than the predictor tracks: learning ignores it, whole regions. */
    eng_arg_t many[ENG_PRED_MAX_ARGS + 6];
    for (unsigned i = 0; i < ENG_PRED_MAX_ARGS + 6; i++)
        many[i] = (eng_arg_t){ENG_ARG_VAL, i};
    many[ENG_PRED_MAX_ARGS + 5] = (eng_arg_t){ENG_ARG_PTR, BUFB + 8};
    l = launch(5, many, ENG_PRED_MAX_ARGS + 6);
    eng_range_t tb = {BUFB + 8, 8, 1};
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(eng_predictor_observe(p, &l, &tb, 1, &rl), GMUX_OK);
    assert_int_equal(eng_predictor_predict(p, &l, &rl, out, 2, &n), GMUX_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].addr, BUFB);
    assert_int_equal(out[0].len, 64ull << 20);
    eng_predictor_destroy(p);
}

/* A strided template predicts pieces inside the pointer's region only, and
 * nothing for a pointer into no region: a database's count=10^12 made every
 * consumer expand 10^12 pieces (gmux sim --templates ran 96 s in 4.9 GB for a
 * 2-launch trace with count 10^8, and ran out of memory with 5*10^9). */
static void test_t3_clipped_to_region(void **state)
{
    (void)state;
    eng_predictor_t *p;
    char err[256];
    const char *db = "gmux-templates 1\nkernel gather p\n"
                     "arg 0 T3 off=0 stride=4096 count=1000000000000 len=64 mode=r\nend\n"
                     "total 1\n";
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    assert_int_equal(eng_tpl_db_parse(p, db, strlen(db), "db", err, sizeof(err)), GMUX_OK);
    assert_int_equal(eng_predictor_name_kernel(p, 0, "gather"), GMUX_OK);
    eng_arg_t args[1] = {{ENG_ARG_PTR, BUFA + (1u << 20)}};
    eng_launch_t l = launch(0, args, 1);
    assert_int_equal(eng_predictor_prepare(p, &l), GMUX_OK);
    eng_span_t out[4];
    size_t n;
    assert_int_equal(eng_predictor_predict(p, &l, &rl, out, 4, &n), GMUX_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].addr, BUFA + (1u << 20));
    assert_int_equal(out[0].stride, 4096);
    assert_int_equal(out[0].len, 64);
    assert_int_equal(out[0].count, (63u << 20) / 4096); /* the pieces that start inside */
    args[0].value = 0x1000;                             /* in no region */
    assert_int_equal(eng_predictor_predict(p, &l, &rl, out, 4, &n), GMUX_OK);
    assert_int_equal(n, 0);
    eng_predictor_destroy(p);
}

/* A tiny stride over a large region collapses to one covering range past
 * ENG_SPAN_MAX_PIECES pieces: clipped to the 1 GiB pool, stride=2 len=1 was
 * still 2^29 pieces, which every consumer expanded (the simulator into 12 GiB
 * of ranges; 4 GiB regions made it 96 GiB). */
static void test_t3_tiny_stride_collapses(void **state)
{
    (void)state;
    eng_predictor_t *p;
    char err[256];
    const char *db = "gmux-templates 1\nkernel comb pv\n"
                     "arg 0 T3 off=0 stride=2 count=1*a1 len=1 mode=w\nend\n"
                     "total 1\n";
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    assert_int_equal(eng_tpl_db_parse(p, db, strlen(db), "db", err, sizeof(err)), GMUX_OK);
    assert_int_equal(eng_predictor_name_kernel(p, 0, "comb"), GMUX_OK);
    eng_arg_t args[2] = {{ENG_ARG_PTR, POOL + 64}, {ENG_ARG_VAL, 4000000000ull}};
    eng_launch_t l = launch(0, args, 2);
    assert_int_equal(eng_predictor_prepare(p, &l), GMUX_OK);
    eng_span_t out[4];
    size_t n;
    assert_int_equal(eng_predictor_predict(p, &l, &rl, out, 4, &n), GMUX_OK);
    assert_int_equal(n, 1);
    assert_true(out[0].count <= ENG_SPAN_MAX_PIECES);
    /* One range from the first piece to the end of the last piece that starts
     * in the pool: every predicted byte still covered. */
    assert_int_equal(out[0].count, 1);
    assert_int_equal(out[0].addr, POOL + 64);
    assert_int_equal(out[0].len, (1ull << 30) - 64 - 1);
    assert_int_equal(out[0].mode, ENG_ACCESS_WRITE);
    /* At the cap the pieces stay pieces. */
    args[1].value = ENG_SPAN_MAX_PIECES;
    assert_int_equal(eng_predictor_predict(p, &l, &rl, out, 4, &n), GMUX_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].count, ENG_SPAN_MAX_PIECES);
    assert_int_equal(out[0].stride, 2);
    assert_int_equal(out[0].len, 1);
    eng_predictor_destroy(p);
}

/* A first launch that touched nothing is learnt from like any other (the
 * predictor passed a NULL array to qsort: UBSan stopped gmux sim on traces
 * whose first launch had no touched ranges). */
static void test_first_launch_touches_nothing(void **state)
{
    (void)state;
    eng_predictor_t *p;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    eng_arg_t args[1] = {{ENG_ARG_PTR, BUFA}};
    eng_launch_t l = launch(0, args, 1);
    assert_int_equal(eng_predictor_observe(p, &l, NULL, 0, &rl), GMUX_OK);
    eng_range_t t = {BUFA, 4096, ENG_ACCESS_READ};
    assert_int_equal(eng_predictor_observe(p, &l, &t, 1, &rl), GMUX_OK);
    assert_int_equal(eng_predictor_kernel_info(p, 0, &(eng_pred_kernel_info_t){0}), GMUX_OK);
    eng_predictor_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_launch_touches_nothing),
        cmocka_unit_test(test_t3_clipped_to_region),
        cmocka_unit_test(test_t3_tiny_stride_collapses),
        cmocka_unit_test(test_t2_in_shared_pool_within_3_samples),
        cmocka_unit_test(test_t1_with_halo_and_t3),
        cmocka_unit_test(test_held_out_failure_is_not_trusted),
        cmocka_unit_test(test_indirect_falls_back),
        cmocka_unit_test(test_unattributed_bytes),
        cmocka_unit_test(test_layout_change_and_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
