/*
 * The parameter-layout table of src/shim/params.c on its own, with layouts
 * from a fake query: after unloads (shim_params_forget) its slots and pool
 * are used again, so kernels loaded after many unloads still decode; and a
 * launch decoding while another thread forgets and refills reads one layout
 * or the other, never a mixture (run under TSan by `make check-tsan`).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shim/params.h"

/* Layout A: two 8-byte parameters. Layout B: one 16-byte parameter. */
static _Atomic int layout_b;

static CUresult info(void *func, size_t i, size_t *off, size_t *size)
{
    (void)func;
    /* one query asks i = 0, 1, ... in turn: it answers for the layout chosen
     * at i = 0, even if the test switches layouts meanwhile */
    static __thread int b;
    if (i == 0)
        b = atomic_load(&layout_b);
    if (b) {
        if (i >= 1)
            return CUDA_ERROR_INVALID_VALUE;
        *off = 0;
        *size = 16;
        return CUDA_SUCCESS;
    }
    if (i >= 2)
        return CUDA_ERROR_INVALID_VALUE;
    *off = 8 * i;
    *size = 8;
    return CUDA_SUCCESS;
}

static uint64_t p0[2] = {0x1000, 0x2000}, p1[2] = {0x3000, 0x4000};
static void *args[] = {p0, p1};

static size_t decode(CUfunction f, uint64_t *out)
{
    return shim_params_decode(f, args, NULL, out, SHIM_MAX_CANDIDATES);
}

/* Whether out[0..n) is what layout A ({0x1000, 0x3000}) or B ({0x1000, 0x2000}) gives. */
static int is_a(const uint64_t *out, size_t n)
{
    return n == 2 && out[0] == 0x1000 && out[1] == 0x3000;
}

static int is_b(const uint64_t *out, size_t n)
{
    return n == 2 && out[0] == 0x1000 && out[1] == 0x2000;
}

static int setup(void **state)
{
    (void)state;
    shim_params_set_info(info, NULL);
    shim_params_reset();
    atomic_store(&layout_b, 0);
    return 0;
}

/* One handle, its module unloaded and another loaded at that handle, many
 * more times than the table has slots: each load decodes with its layout. */
static void test_same_handle_reloaded(void **state)
{
    (void)state;
    CUfunction f = (CUfunction)(uintptr_t)0x7f0000001000;
    uint64_t out[SHIM_MAX_CANDIDATES];
    for (int round = 0; round < 20000; round++) {
        atomic_store(&layout_b, round & 1);
        size_t n = decode(f, out);
        if (round & 1)
            assert_true(is_b(out, n));
        else
            assert_true(is_a(out, n));
        shim_params_forget();
    }
}

/* Many kernels per module, many modules: past the table's 4096 slots in all. */
static void test_many_handles_across_unloads(void **state)
{
    (void)state;
    uint64_t out[SHIM_MAX_CANDIDATES];
    for (int module = 0; module < 40; module++) {
        for (uintptr_t k = 0; k < 1000; k++) {
            CUfunction f = (CUfunction)(0x7f0000000000 + (uintptr_t)module * 0x100000 + k * 64);
            assert_true(is_a(out, decode(f, out)));
        }
        shim_params_forget();
    }
}

/* A kernel whose layout the driver does not give decodes to nothing from kernelParams. */
static void test_unknown_layout(void **state)
{
    (void)state;
    shim_params_set_info(NULL, NULL);
    uint64_t out[SHIM_MAX_CANDIDATES];
    assert_int_equal(decode((CUfunction)(uintptr_t)0x5000, out), 0);
    shim_params_set_info(info, NULL);
}

static atomic_bool stop;
static _Atomic long bad, reads;

static void *reader(void *arg)
{
    CUfunction f = (CUfunction)arg;
    uint64_t out[SHIM_MAX_CANDIDATES];
    while (!atomic_load(&stop)) {
        size_t n = decode(f, out);
        if (!is_a(out, n) && !is_b(out, n))
            atomic_fetch_add(&bad, 1);
        atomic_fetch_add(&reads, 1);
    }
    return NULL;
}

/* Launches on three threads while a fourth unloads and switches layouts. */
static void test_concurrent_decode_and_forget(void **state)
{
    (void)state;
    CUfunction f = (CUfunction)(uintptr_t)0x7f00000a0000;
    pthread_t th[3];
    atomic_store(&stop, false);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, reader, (void *)f), 0);
    for (int round = 0; round < 3000 || atomic_load(&reads) < 3000; round++) {
        atomic_store(&layout_b, round & 1);
        shim_params_forget();
        /* another kernel takes a slot and pool room meanwhile */
        uint64_t out[SHIM_MAX_CANDIDATES];
        (void)decode((CUfunction)(uintptr_t)(0x7f00000b0000 + (uintptr_t)(round % 7) * 64), out);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&bad), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_same_handle_reloaded, setup),
        cmocka_unit_test_setup(test_many_handles_across_unloads, setup),
        cmocka_unit_test_setup(test_unknown_layout, setup),
        cmocka_unit_test_setup(test_concurrent_decode_and_forget, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
