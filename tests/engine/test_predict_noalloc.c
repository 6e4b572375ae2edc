/*
 * Prediction sits on the launch path and must not allocate: this binary is
 * linked with malloc, calloc and realloc wrapped (-Wl,--wrap), so every call
 * the predictor library makes is counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "engine/predictor.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

static unsigned long allocs;

void *__wrap_malloc(size_t n)
{
    allocs++;
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    allocs++;
    return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    allocs++;
    return __real_realloc(p, n);
}

static bool find(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size)
{
    (void)ctx;
    *base = addr & ~((1ull << 30) - 1);
    *size = 1ull << 30;
    return true;
}

static void test_predict_does_not_allocate(void **state)
{
    (void)state;
    const eng_region_lookup_t rl = {find, NULL};
    eng_predictor_t *p;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    eng_arg_t args[4];
    eng_launch_t l = {0, {1, 1, 1}, {256, 1, 1}, 4, args};
    for (uint64_t i = 0; i < 6; i++) {
        uint64_t n = 1000 + 100 * i;
        args[0] = (eng_arg_t){ENG_ARG_PTR, (1ull << 32) + 4096 * i};
        args[1] = (eng_arg_t){ENG_ARG_PTR, 1ull << 33};
        args[2] = (eng_arg_t){ENG_ARG_PTR, 1ull << 34};
        args[3] = (eng_arg_t){ENG_ARG_VAL, n};
        eng_range_t t[2] = {{args[0].value, 4 * n, 1}, {args[1].value, 64, 2}};
        assert_int_equal(eng_predictor_observe(p, &l, t, 2, &rl), GMUX_OK);
    }
    eng_pred_arg_info_t ai;
    assert_int_equal(eng_predictor_arg_info(p, 0, 0, &ai), GMUX_OK);
    assert_int_equal(ai.state, ENG_PRED_TRUSTED);
    eng_span_t out[8];
    size_t n;
    unsigned long before = allocs;
    for (unsigned i = 0; i < 10000; i++) {
        args[3].value = 1 + i;
        assert_int_equal(eng_predictor_predict(p, &l, &rl, out, 8, &n), GMUX_OK);
        assert_int_equal(eng_predict_whole(&l, &rl, out, 8, &n), GMUX_OK);
    }
    assert_int_equal(allocs, before);
    /* The counter works: learning does allocate on a new kernel. */
    l.kernel = 9;
    assert_int_equal(eng_predictor_prepare(p, &l), GMUX_OK);
    assert_true(allocs > before);
    eng_predictor_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_predict_does_not_allocate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
