/* Tests of templates: sample shapes, fitting each class, evaluation, text forms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/template.h"

#define NS 4

/* Synthetic samples: values per sample and the shape the argument had. */
struct samples {
    uint64_t vals[NS * ENG_VAL_COUNT];
    eng_shape_t shapes[NS];
    bool val_ok[ENG_VAL_COUNT];
};

static void init(struct samples *s)
{
    memset(s, 0, sizeof(*s));
    for (unsigned i = 1; i < 8; i++) /* a0 is the pointer */
        s->val_ok[i] = true;
    for (unsigned i = ENG_VAL_GRID_X; i < ENG_VAL_COUNT; i++)
        s->val_ok[i] = true;
    for (unsigned k = 0; k < NS; k++) {
        s->vals[k * ENG_VAL_COUNT + ENG_VAL_GRID_X + 1] = 1;
        s->vals[k * ENG_VAL_COUNT + ENG_VAL_BLOCK_X + 1] = 1;
    }
}

static void set(struct samples *s, unsigned k, unsigned id, uint64_t v)
{
    s->vals[k * ENG_VAL_COUNT + id] = v;
}

static void run(struct samples *s, unsigned k, int64_t off, uint64_t len, uint64_t stride,
                uint64_t count)
{
    s->shapes[k] = (eng_shape_t){ENG_SHAPE_RUN, ENG_ACCESS_RW, off, len, stride, count};
}

static void test_shape_of(void **state)
{
    (void)state;
    eng_shape_t sh;
    eng_range_t one[] = {{1000 + 64, 256, ENG_ACCESS_READ}};
    eng_shape_of(1000, one, 1, &sh);
    assert_int_equal(sh.kind, ENG_SHAPE_RUN);
    assert_int_equal(sh.off, 64);
    assert_int_equal(sh.len, 256);
    assert_int_equal(sh.count, 1);
    eng_range_t strided[] = {{1000, 16, 1}, {1100, 16, 2}, {1200, 16, 1}};
    eng_shape_of(1000, strided, 3, &sh);
    assert_int_equal(sh.kind, ENG_SHAPE_RUN);
    assert_int_equal(sh.stride, 100);
    assert_int_equal(sh.count, 3);
    assert_int_equal(sh.mode, ENG_ACCESS_RW);
    eng_range_t uneven[] = {{1000, 16, 1}, {1100, 16, 1}, {1250, 16, 1}};
    eng_shape_of(1000, uneven, 3, &sh);
    assert_int_equal(sh.kind, ENG_SHAPE_IRREGULAR);
    eng_range_t lens[] = {{1000, 16, 1}, {1100, 32, 1}};
    eng_shape_of(1000, lens, 2, &sh);
    assert_int_equal(sh.kind, ENG_SHAPE_IRREGULAR);
    eng_shape_of(1000, NULL, 0, &sh);
    assert_int_equal(sh.kind, ENG_SHAPE_EMPTY);
}

static void test_fit_t1(void **state)
{
    (void)state;
    struct samples s;
    init(&s);
    set(&s, 0, 1, 10);
    set(&s, 1, 1, 77);
    run(&s, 0, -128, 4096, 0, 1);
    run(&s, 1, -128, 4096, 0, 1);
    eng_tpl_t t;
    assert_true(eng_tpl_fit(s.shapes, s.vals, 2, s.val_ok, &t));
    assert_int_equal(t.kind, ENG_TPL_T1);
    assert_int_equal(t.off, -128);
    assert_int_equal(t.len.b, 4096);
    /* A different offset in one sample: nothing of any class fits. */
    run(&s, 1, 0, 4096, 0, 1);
    assert_false(eng_tpl_fit(s.shapes, s.vals, 2, s.val_ok, &t));
}

static void test_fit_t2_single_value(void **state)
{
    (void)state;
    struct samples s;
    init(&s);
    /* len = 4 * a3; a2 varies too but does not explain it. */
    uint64_t n[] = {1000, 4096};
    for (unsigned k = 0; k < 2; k++) {
        set(&s, k, 2, 7 + k);
        set(&s, k, 3, n[k]);
        run(&s, k, 0, 4 * n[k], 0, 1);
    }
    eng_tpl_t t;
    assert_true(eng_tpl_fit(s.shapes, s.vals, 2, s.val_ok, &t));
    assert_int_equal(t.kind, ENG_TPL_T2);
    assert_int_equal(t.len.kind, ENG_TERM_VAL);
    assert_int_equal(t.len.v0, 3);
    assert_int_equal(t.len.a, 4);
    assert_int_equal(t.len.b, 0);
    /* Evaluates for an unseen value. */
    eng_arg_t args[4] = {
        {ENG_ARG_PTR, 0x10000}, {ENG_ARG_VAL, 0}, {ENG_ARG_VAL, 0}, {ENG_ARG_VAL, 333}};
    eng_launch_t l = {.kernel = 0, .grid = {1, 1, 1}, .block = {1, 1, 1}, .nargs = 4, .args = args};
    eng_span_t sp;
    assert_int_equal(eng_tpl_eval(&t, &l, 0x10000, &sp), 1);
    assert_int_equal(sp.addr, 0x10000);
    assert_int_equal(sp.len, 4 * 333);
    assert_int_equal(sp.count, 1);
}

static void test_fit_t2_with_intercept_and_dims(void **state)
{
    (void)state;
    struct samples s;
    init(&s);
    /* len = 8 * grid.x * block.x + 64: a product of two dimensions with an intercept. */
    uint64_t g[] = {10, 40, 7}, b[] = {128, 256, 512};
    for (unsigned k = 0; k < 3; k++) {
        set(&s, k, ENG_VAL_GRID_X, g[k]);
        set(&s, k, ENG_VAL_BLOCK_X, b[k]);
        run(&s, k, -32, 8 * g[k] * b[k] + 64, 0, 1);
    }
    eng_tpl_t t;
    assert_true(eng_tpl_fit(s.shapes, s.vals, 3, s.val_ok, &t));
    assert_int_equal(t.kind, ENG_TPL_T2);
    assert_int_equal(t.len.kind, ENG_TERM_PROD);
    assert_int_equal(t.len.a, 8);
    assert_int_equal(t.len.b, 64);
    assert_int_equal(t.off, -32);
    char buf[128];
    assert_string_equal(eng_expr_format(&t.len, buf, sizeof(buf)), "8*grid.x*block.x+64");
}

static void test_fit_t2_rows_cols_elem(void **state)
{
    (void)state;
    struct samples s;
    init(&s);
    uint64_t r[] = {3, 50, 9}, c[] = {1000, 20, 33};
    for (unsigned k = 0; k < 3; k++) {
        set(&s, k, 4, r[k]);
        set(&s, k, 5, c[k]);
        run(&s, k, 0, 2 * r[k] * c[k], 0, 1);
    }
    eng_tpl_t t;
    assert_true(eng_tpl_fit(s.shapes, s.vals, 3, s.val_ok, &t));
    assert_int_equal(t.kind, ENG_TPL_T2);
    assert_int_equal(t.len.kind, ENG_TERM_PROD);
    assert_int_equal(t.len.v0, 4);
    assert_int_equal(t.len.v1, 5);
    assert_int_equal(t.len.a, 2);
}

static void test_fit_t3(void **state)
{
    (void)state;
    struct samples s;
    init(&s);
    /* A rows x cols tile of a matrix with leading dimension ld (floats). */
    uint64_t rows[] = {4, 16, 9}, cols[] = {64, 32, 100}, ld[] = {1024, 512, 4096};
    for (unsigned k = 0; k < 3; k++) {
        set(&s, k, 1, rows[k]);
        set(&s, k, 2, cols[k]);
        set(&s, k, 3, ld[k]);
        run(&s, k, 0, 4 * cols[k], 4 * ld[k], rows[k]);
    }
    eng_tpl_t t;
    assert_true(eng_tpl_fit(s.shapes, s.vals, 3, s.val_ok, &t));
    assert_int_equal(t.kind, ENG_TPL_T3);
    char buf[200];
    assert_string_equal(eng_tpl_format(&t, buf, sizeof(buf)),
                        "T3 off=0 stride=4*a3 count=1*a1 len=4*a2 mode=rw");
    eng_tpl_t back;
    assert_true(eng_tpl_parse(buf, &back));
    assert_memory_equal(&back, &t, sizeof(t));
    /* Evaluation, and pieces that touch collapse into one range. */
    eng_arg_t args[4] = {
        {ENG_ARG_PTR, 1 << 20}, {ENG_ARG_VAL, 5}, {ENG_ARG_VAL, 8}, {ENG_ARG_VAL, 100}};
    eng_launch_t l = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .nargs = 4, .args = args};
    eng_span_t sp;
    assert_int_equal(eng_tpl_eval(&t, &l, 1 << 20, &sp), 1);
    assert_int_equal(sp.count, 5);
    assert_int_equal(sp.stride, 400);
    assert_int_equal(sp.len, 32);
    assert_int_equal(eng_span_bytes(&sp), 160);
    args[2].value = 100;
    assert_int_equal(eng_tpl_eval(&t, &l, 1 << 20, &sp), 1);
    assert_int_equal(sp.count, 1);
    assert_int_equal(sp.len, 2000);
}

/* A launch with pointer ptr and values a1..a3 of sample k (grid and block 1). */
static eng_launch_t launch_of(const struct samples *s, unsigned k, uint64_t ptr, eng_arg_t *args)
{
    args[0] = (eng_arg_t){ENG_ARG_PTR, ptr};
    for (unsigned i = 1; i < 4; i++)
        args[i] = (eng_arg_t){ENG_ARG_VAL, s->vals[k * ENG_VAL_COUNT + i]};
    return (eng_launch_t){.grid = {1, 1, 1}, .block = {1, 1, 1}, .nargs = 4, .args = args};
}

/* A tile whose row count may be zero: the launch that touched nothing counts
 * as zero rows (its length and stride are not asked of it), and the template
 * reproduces every sample, the empty one included. */
static void test_fit_t3_with_an_empty_sample(void **state)
{
    (void)state;
    struct samples s;
    init(&s);
    uint64_t rows[] = {4, 16, 0}, cols[] = {64, 32, 8}, ld[] = {1000, 300, 256};
    for (unsigned k = 0; k < 3; k++) {
        set(&s, k, 1, rows[k]);
        set(&s, k, 2, cols[k]);
        set(&s, k, 3, ld[k]);
        run(&s, k, 0, 4 * cols[k], 4 * ld[k], rows[k]);
    }
    s.shapes[2] = (eng_shape_t){.kind = ENG_SHAPE_EMPTY};
    eng_tpl_t t;
    assert_true(eng_tpl_fit(s.shapes, s.vals, 3, s.val_ok, &t));
    assert_string_equal(eng_tpl_kind_name(t.kind), "T3");
    char buf[200];
    assert_string_equal(eng_tpl_format(&t, buf, sizeof(buf)),
                        "T3 off=0 stride=4*a3 count=1*a1 len=4*a2 mode=rw");
    for (unsigned k = 0; k < 3; k++) {
        eng_arg_t args[4];
        eng_launch_t l = launch_of(&s, k, 1 << 20, args);
        assert_true(eng_tpl_matches(&t, &l, 1 << 20, &s.shapes[k]));
    }
}

/* Lengths and counts that fit, strides that no expression of the values
 * reproduces: no template. */
static void test_fit_t3_refuses_unexplained_strides(void **state)
{
    (void)state;
    struct samples s;
    init(&s);
    uint64_t v1[] = {1, 2, 3}, v2[] = {5, 9, 11}, stride[] = {100, 37, 250};
    for (unsigned k = 0; k < 3; k++) {
        set(&s, k, 1, v1[k]);
        set(&s, k, 2, v2[k]);
        run(&s, k, 0, 16, stride[k], 2);
    }
    eng_tpl_t t;
    assert_false(eng_tpl_fit(s.shapes, s.vals, 3, s.val_ok, &t));
    run(&s, 1, 0, 16, 200, 2); /* now 100 * a1 */
    run(&s, 2, 0, 16, 300, 2);
    assert_true(eng_tpl_fit(s.shapes, s.vals, 3, s.val_ok, &t));
    assert_int_equal(t.kind, ENG_TPL_T3);
    assert_int_equal(t.stride.kind, ENG_TERM_VAL);
    assert_int_equal(t.stride.v0, 1);
    assert_int_equal(t.stride.a, 100);
}

/* A value above INT64_MAX is never a term (a*v + b could not be computed
 * signed); the next value that explains the lengths is taken. */
static void test_fit_skips_values_past_int64(void **state)
{
    (void)state;
    struct samples s;
    init(&s);
    for (unsigned k = 0; k < 3; k++) {
        set(&s, k, 1, (1ull << 63) + k);
        set(&s, k, 2, k + 1);
        run(&s, k, 0, 8 * (k + 1), 0, 1);
    }
    eng_tpl_t t;
    assert_true(eng_tpl_fit(s.shapes, s.vals, 3, s.val_ok, &t));
    assert_int_equal(t.kind, ENG_TPL_T2);
    assert_int_equal(t.len.kind, ENG_TERM_VAL);
    assert_int_equal(t.len.v0, 2);
    assert_int_equal(t.len.a, 8);
    assert_int_equal(t.len.b, 0);
}

/* No samples, or more than the fit takes (64): no template. */
static void test_fit_sample_count_bounds(void **state)
{
    (void)state;
    enum { MANY = 65 };
    static eng_shape_t shapes[MANY];
    static uint64_t vals[MANY * ENG_VAL_COUNT];
    bool val_ok[ENG_VAL_COUNT] = {false};
    for (unsigned k = 0; k < MANY; k++)
        shapes[k] = (eng_shape_t){ENG_SHAPE_RUN, ENG_ACCESS_READ, 0, 64, 0, 1};
    eng_tpl_t t;
    assert_true(eng_tpl_fit(shapes, vals, MANY - 1, val_ok, &t));
    assert_int_equal(t.kind, ENG_TPL_T1);
    assert_false(eng_tpl_fit(shapes, vals, MANY, val_ok, &t));
    assert_false(eng_tpl_fit(shapes, vals, 0, val_ok, &t));
}

static void test_fit_refuses_irregular_and_mixed(void **state)
{
    (void)state;
    struct samples s;
    init(&s);
    set(&s, 0, 1, 5);
    set(&s, 1, 1, 9);
    run(&s, 0, 0, 400, 0, 1);
    s.shapes[1].kind = ENG_SHAPE_IRREGULAR;
    eng_tpl_t t;
    assert_false(eng_tpl_fit(s.shapes, s.vals, 2, s.val_ok, &t));
    /* Lengths no launch value explains (values 5, 9, 11 against 400, 100, 7). */
    run(&s, 1, 0, 100, 0, 1);
    set(&s, 2, 1, 11);
    run(&s, 2, 0, 7, 0, 1);
    assert_false(eng_tpl_fit(s.shapes, s.vals, 3, s.val_ok, &t));
    /* Pointer arguments are never terms: a1 explains it only when allowed. */
    run(&s, 0, 0, 20, 0, 1);
    run(&s, 1, 0, 36, 0, 1);
    run(&s, 2, 0, 44, 0, 1);
    assert_true(eng_tpl_fit(s.shapes, s.vals, 3, s.val_ok, &t));
    s.val_ok[1] = false;
    assert_false(eng_tpl_fit(s.shapes, s.vals, 3, s.val_ok, &t));
}

static void test_untouched_is_none(void **state)
{
    (void)state;
    struct samples s;
    init(&s);
    eng_tpl_t t;
    assert_true(eng_tpl_fit(s.shapes, s.vals, 2, s.val_ok, &t));
    assert_int_equal(t.kind, ENG_TPL_NONE);
    eng_launch_t l = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    eng_span_t sp;
    assert_int_equal(eng_tpl_eval(&t, &l, 4096, &sp), 0);
}

static void test_eval_overflow_falls_back(void **state)
{
    (void)state;
    eng_tpl_t t = {.kind = ENG_TPL_T2, .mode = ENG_ACCESS_RW};
    assert_true(eng_expr_parse("8*a1*a2", &t.len));
    eng_arg_t args[3] = {{ENG_ARG_PTR, 4096}, {ENG_ARG_VAL, 1ull << 40}, {ENG_ARG_VAL, 1ull << 30}};
    eng_launch_t l = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .nargs = 3, .args = args};
    eng_span_t sp;
    assert_int_equal(eng_tpl_eval(&t, &l, 4096, &sp), -1);
    t.off = -8192; /* below address zero */
    assert_true(eng_expr_parse("16", &t.len));
    t.kind = ENG_TPL_T1;
    assert_int_equal(eng_tpl_eval(&t, &l, 4096, &sp), -1);
}

static void test_text_forms(void **state)
{
    (void)state;
    static const char *const good[] = {"4096",     "4*a3",     "4*a3+16", "1*grid.x*block.x-8",
                                       "8*a2*a31", "2*block.z"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        eng_expr_t e;
        char buf[64];
        assert_true(eng_expr_parse(good[i], &e));
        assert_string_equal(eng_expr_format(&e, buf, sizeof(buf)), good[i]);
    }
    static const char *const bad[] = {"",     "-4",    "4*",    "4*a32", "0*a1",  "4*a1+0", "4*a1+",
                                      "4*b1", "4*a01", "4*a1*", "x",     "4 *a1", "4*a1 "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eng_expr_t e;
        assert_false(eng_expr_parse(bad[i], &e));
    }
    eng_tpl_t t;
    assert_true(eng_tpl_parse("T1 off=-64 len=512 mode=r", &t));
    assert_int_equal(t.off, -64);
    assert_int_equal(t.mode, ENG_ACCESS_READ);
    assert_false(eng_tpl_parse("T1 off=0 len=4*a1", &t)); /* T1 must be constant */
    assert_false(eng_tpl_parse("T2 off=0 len=4096", &t)); /* T2 must not be */
    assert_false(eng_tpl_parse("T2 off=0", &t));          /* missing len */
    assert_false(eng_tpl_parse("T3 off=0 len=4*a1", &t)); /* missing stride, count */
    assert_false(eng_tpl_parse("T2 off=0 len=4*a1 len=4*a1", &t));
    assert_false(eng_tpl_parse("T2 off=0 len=4*a1 mode=x", &t));
    assert_false(eng_tpl_parse("T2 off=0 len=4*a1 stride=4", &t));
    assert_false(eng_tpl_parse("T4 off=0 len=1", &t));
    assert_false(eng_tpl_parse("none extra", &t));
    assert_true(eng_tpl_parse("none", &t));
    assert_int_equal(t.kind, ENG_TPL_NONE);
}

/* The covering range of a span: first byte to the end of the last piece,
 * saturated at the end of the address space; plain ranges unchanged. */
static void test_span_cover(void **state)
{
    (void)state;
    eng_span_t s = {.addr = 100, .len = 10, .stride = 1000, .count = 4, .mode = 1};
    eng_span_cover(&s);
    assert_int_equal(s.addr, 100);
    assert_int_equal(s.len, 3010);
    assert_int_equal(s.count, 1);
    assert_int_equal(s.stride, 0);
    assert_int_equal(s.mode, 1);
    eng_span_cover(&s);
    assert_int_equal(s.len, 3010);
    s = (eng_span_t){.addr = 1ull << 63, .len = 8, .stride = 1ull << 40, .count = 1ull << 40};
    eng_span_cover(&s);
    assert_int_equal(s.len, UINT64_MAX - (1ull << 63));
    s = (eng_span_t){.addr = UINT64_MAX - 100, .len = 64, .stride = 2, .count = 20};
    eng_span_cover(&s);
    assert_int_equal(s.len, 100);
}

/* Bytes of spans whose product or reach passes 2^64 saturate (they wrapped:
 * 3 pieces of 2^63 bytes counted 2^63). */
static void test_span_bytes_saturate(void **state)
{
    (void)state;
    eng_span_t s = {.addr = 0, .len = 1ull << 63, .stride = 1ull << 63, .count = 3};
    assert_true(eng_span_bytes(&s) == UINT64_MAX);
    s = (eng_span_t){.addr = 0, .len = 1ull << 30, .stride = 1ull << 40, .count = 1ull << 40};
    assert_true(eng_span_bytes(&s) == UINT64_MAX);
    s = (eng_span_t){.addr = 0, .len = 1ull << 31, .stride = 1ull << 30, .count = 1ull << 40};
    assert_true(eng_span_bytes(&s) == UINT64_MAX);
    s = (eng_span_t){.addr = 0, .len = (1ull << 63) + 1, .stride = 1ull << 63, .count = 2};
    assert_true(eng_span_bytes(&s) == UINT64_MAX);
    s = (eng_span_t){.addr = 0, .len = UINT64_MAX, .stride = 0, .count = 1};
    assert_true(eng_span_bytes(&s) == UINT64_MAX);
    /* the largest exact values are still exact */
    s = (eng_span_t){.addr = 0, .len = UINT64_MAX / 3, .stride = UINT64_MAX / 3, .count = 3};
    assert_true(eng_span_bytes(&s) == UINT64_MAX / 3 * 3);
    s = (eng_span_t){.addr = 0, .len = 1ull << 62, .stride = 1ull << 61, .count = 3};
    assert_true(eng_span_bytes(&s) == (1ull << 62) + (1ull << 62));
    s = (eng_span_t){.addr = 0, .len = 7, .stride = 0, .count = 0};
    assert_int_equal(eng_span_bytes(&s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_of),
        cmocka_unit_test(test_fit_t1),
        cmocka_unit_test(test_fit_t2_single_value),
        cmocka_unit_test(test_fit_t2_with_intercept_and_dims),
        cmocka_unit_test(test_fit_t2_rows_cols_elem),
        cmocka_unit_test(test_fit_t3),
        cmocka_unit_test(test_fit_t3_with_an_empty_sample),
        cmocka_unit_test(test_fit_t3_refuses_unexplained_strides),
        cmocka_unit_test(test_fit_skips_values_past_int64),
        cmocka_unit_test(test_fit_sample_count_bounds),
        cmocka_unit_test(test_fit_refuses_irregular_and_mixed),
        cmocka_unit_test(test_untouched_is_none),
        cmocka_unit_test(test_eval_overflow_falls_back),
        cmocka_unit_test(test_text_forms),
        cmocka_unit_test(test_span_cover),
        cmocka_unit_test(test_span_bytes_saturate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
