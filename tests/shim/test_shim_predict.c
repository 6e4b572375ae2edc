/*
 * Template prediction in libgmux.so (src/shim/predict.c), against the driver
 * double: with a database (GMUX_TEMPLATES) and the program's managed memory
 * above its budget, a launch of a kernel the database knows prefetches the
 * bytes its template predicts, not the whole regions its arguments point
 * into (a strided template: its pieces, or their covering range past 8); a kernel the database does
 * not know still gets whole regions. CTest runs this program three ways, told by TEST_PREDICT what
 * to expect: predict  good database, oversubscribed: predicted ranges bad      truncated database:
 * reported, whole regions fits     good database, memory fits: whole regions, once each
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include "fake_cuda/fake_cuda.h"

#define MIB (1024u * 1024u)

static PFN_cuGetProcAddress_v12000 gpa;
static fake_reset_fn f_reset;
static fake_log_count_fn f_count;
static fake_log_get_fn f_get;
static fake_register_kernel_fn f_register;
static fake_reload_kernel_fn f_reload;
static PFN_cuLaunchKernel_v4000 launch;
static CUdeviceptr a, b;
static const char *expect;

static void k_nop(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)args;
    (void)grid;
    (void)block;
}

static void *get(const char *base)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult q;
    assert_int_equal(gpa(base, &p, 12000, 0, &q), CUDA_SUCCESS);
    return p;
}

static int setup(void **state)
{
    (void)state;
    void *drv = dlopen("libcuda.so.1", RTLD_NOW);
    assert_non_null(drv);
    gpa = (PFN_cuGetProcAddress_v12000)dlsym(drv, "cuGetProcAddress_v2");
    f_reset = (fake_reset_fn)dlsym(drv, "fake_reset");
    f_count = (fake_log_count_fn)dlsym(drv, "fake_log_count");
    f_get = (fake_log_get_fn)dlsym(drv, "fake_log_get");
    f_register = (fake_register_kernel_fn)dlsym(drv, "fake_register_kernel");
    f_reload = (fake_reload_kernel_fn)dlsym(drv, "fake_reload_kernel");
    assert_true(gpa && f_reset && f_count && f_get && f_register && f_reload);
    PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)get("cuMemAlloc");
    assert_int_equal(alloc(&a, MIB), CUDA_SUCCESS);
    assert_int_equal(alloc(&b, MIB), CUDA_SUCCESS);
    launch = (PFN_cuLaunchKernel_v4000)get("cuLaunchKernel");
    expect = getenv("TEST_PREDICT");
    assert_non_null(expect);
    return 0;
}

typedef struct {
    uint64_t addr, len;
} rng_t;

/* The prefetches the last launch caused, in either form, in log order. */
static size_t prefetched(rng_t *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < f_count(); i++) {
        const fake_call_t *c = f_get(i);
        if (strcmp(c->fn, "cuMemPrefetchAsync_v2") != 0 &&
            strcmp(c->fn, "cuMemPrefetchBatchAsync") != 0)
            continue;
        assert_true(n < max);
        out[n++] = (rng_t){c->a[0], c->a[1]};
    }
    return n;
}

static void launch_3(CUfunction f, CUdeviceptr p, CUdeviceptr q, uint64_t n)
{
    f_reset();
    void *args[] = {&p, &q, &n};
    assert_int_equal(launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
}

static void assert_ranges(const rng_t *want, size_t nwant)
{
    rng_t got[16];
    size_t n = prefetched(got, 16);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "  prefetched %#llx + %llu\n", (unsigned long long)got[i].addr,
                (unsigned long long)got[i].len);
    assert_int_equal(n, nwant);
    for (size_t i = 0; i < nwant; i++) {
        bool found = false;
        for (size_t j = 0; j < n && !found; j++)
            found = got[j].addr == want[i].addr && got[j].len == want[i].len;
        assert_true(found);
    }
}

static void test_known_kernel(void **state)
{
    (void)state;
    static const size_t sizes[] = {8, 8, 8};
    CUfunction scale = f_register("scale", 3, sizes, k_nop);
    launch_3(scale, a, b, 1000);
    rng_t whole[] = {{a, MIB}, {b, MIB}};
    if (strcmp(expect, "predict") == 0) {
        rng_t want[] = {{a, 4000}, {b, 4000}};
        assert_ranges(want, 2);
        /* into the middle of a region, as a caching allocator hands out */
        launch_3(scale, a + 8192, b + 4096, 10);
        rng_t mid[] = {{a + 8192, 40}, {b + 4096, 40}};
        assert_ranges(mid, 2);
        /* a template reaching past the region is clipped to it */
        launch_3(scale, a + MIB - 100, b, 100);
        rng_t clip[] = {{a + MIB - 100, 100}, {b, 400}};
        assert_ranges(clip, 2);
    } else {
        assert_ranges(whole, 2);
        launch_3(scale, a + 8192, b + 4096, 10);
        if (strcmp(expect, "fits") == 0)
            assert_ranges(NULL, 0); /* prefetched once: they stay */
        else
            assert_ranges(whole, 2); /* oversubscribed: every launch, whole */
    }
}

/* A kernel whose driver name is too long for a database field (PyTorch's run
 * to thousands of bytes): the database names it by shim_kernel_name's digest
 * form (templates/scale.db's third entry), and the predictor must look it up
 * by the same; on the H200 no such kernel ever used its template. */
static void test_long_named_kernel(void **state)
{
    (void)state;
    static const size_t sizes[] = {8, 8, 8};
    char name[601] = "_ZN2at6native29vectorized_elementwise_kernel";
    for (size_t l = strlen(name); l < 600; l++)
        name[l] = (char)('0' + l % 10);
    name[600] = '\0';
    CUfunction k = f_register(name, 3, sizes, k_nop);
    launch_3(k, a, b, 1000);
    if (strcmp(expect, "predict") == 0) {
        rng_t want[] = {{a, 4000}, {b, 4000}};
        assert_ranges(want, 2);
    } else if (strcmp(expect, "fits") == 0) {
        assert_ranges(NULL, 0); /* resident since the first test's launch */
    } else {
        rng_t whole[] = {{a, MIB}, {b, MIB}};
        assert_ranges(whole, 2);
    }
}

/* Strided templates: up to 8 pieces are prefetched one by one, more as their
 * covering range, and a count of 4*10^9 pieces 2 bytes apart (clipped to the
 * region, then collapsed by the predictor) as one range of the region. */
static void test_strided_kernel(void **state)
{
    (void)state;
    static const size_t sizes[] = {8, 8, 8};
    CUfunction comb = f_register("comb", 3, sizes, k_nop);
    rng_t whole[] = {{a, MIB}, {b, MIB}};
    launch_3(comb, a, b, 4);
    if (strcmp(expect, "predict") == 0) {
        rng_t four[] = {{a, 1},      {a + 2, 1},         {a + 4, 1},         {a + 6, 1},
                        {b + 64, 8}, {b + 64 + 4096, 8}, {b + 64 + 8192, 8}, {b + 64 + 12288, 8}};
        assert_ranges(four, 8);
        launch_3(comb, a, b, 100);
        rng_t cover[] = {{a, 199}, {b + 64, 99 * 4096 + 8}};
        assert_ranges(cover, 2);
        launch_3(comb, a, b, 4000000000ull);
        rng_t huge[] = {{a, MIB - 1}, {b + 64, 255 * 4096 + 8}};
        assert_ranges(huge, 2);
    } else if (strcmp(expect, "fits") == 0) {
        assert_ranges(NULL, 0); /* test_known_kernel prefetched them already */
    } else {
        assert_ranges(whole, 2);
    }
}

/* A module unloaded, a kernel of another module loaded at the same handle:
 * the new kernel has its own name, so the template of the old one ("scale")
 * must not be used for it. */
static void test_unload_forgets_binding(void **state)
{
    (void)state;
    static const size_t sizes[] = {8, 8, 8};
    CUfunction f = f_register("scale", 3, sizes, k_nop);
    launch_3(f, a, b, 1000);
    PFN_cuModuleUnload_v2000 unload = (PFN_cuModuleUnload_v2000)get("cuModuleUnload");
    assert_int_equal(unload((CUmodule)0x1000), CUDA_SUCCESS);
    f_reload(f, "not_in_db", 3, sizes, k_nop);
    launch_3(f, a, b, 1000);
    rng_t whole[] = {{a, MIB}, {b, MIB}};
    if (strcmp(expect, "fits") == 0)
        assert_ranges(NULL, 0); /* test_known_kernel prefetched them already */
    else
        assert_ranges(whole, 2); /* not scale's 4000 bytes */
}

static void test_unknown_kernel(void **state)
{
    (void)state;
    static const size_t sizes[] = {8, 8, 8};
    CUfunction other = f_register("not_in_db", 3, sizes, k_nop);
    launch_3(other, a, b, 1000);
    rng_t whole[] = {{a, MIB}, {b, MIB}};
    if (strcmp(expect, "fits") == 0)
        assert_ranges(NULL, 0); /* test_known_kernel prefetched them already */
    else
        assert_ranges(whole, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_kernel),           cmocka_unit_test(test_long_named_kernel),
        cmocka_unit_test(test_strided_kernel),         cmocka_unit_test(test_unknown_kernel),
        cmocka_unit_test(test_unload_forgets_binding),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
