/*
 * The per-thread default stream in libgmux.so against the driver double
 * (see shim_harness.h): each thread's is a stream of its own, so a capture
 * of one thread's per-thread default stream takes in that thread's work
 * only. CTest runs this under every policy, like test_shim.
 *
 * A program thread captures its per-thread default stream (mode GLOBAL)
 * and launches two kernels into it through the _ptsz launch; meanwhile a
 * second thread launches a kernel on its own per-thread default stream.
 * The shim must leave the capture alone (no prefetch of the captured
 * kernels' data, nothing of its own in the graph: the graph holds exactly
 * the program's two kernels), and must treat the second thread's launch
 * as any other: run, and its data prefetched before it where the policy
 * prefetches, the launch ordered after the prefetches.
 *
 * Two ways a program names that stream: stream 0 through the _ptsz entry
 * points (what cuGetProcAddress answers with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, as nvcc's
 * --default-stream per-thread gets), and CU_STREAM_PER_THREAD through the
 * legacy entry points; each with the capture begun through
 * cuStreamBeginCapture_v2 (a mode) and through the CUDA 10.0
 * cuStreamBeginCapture (version 10000, no mode: GLOBAL), whose hooks the
 * shim must hand out. A per-thread default stream is a blocking stream:
 * while it captures, the legacy stream is unusable (the double invalidates
 * the capture when work goes there), so the shim must order the second
 * thread's launch on that thread's own stream.
 */
#include <pthread.h>
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

#include "shim_harness.h"

#define N 64

/* How the program names its per-thread default stream. */
typedef struct {
    cuuint64_t flags; /* PT: the _ptsz entry points; LEGACY: the legacy ones */
    CUstream s;       /* stream 0, or CU_STREAM_PER_THREAD */
    int version;      /* of cuStreamBeginCapture: 12000 (_v2, a mode), 10000 (mode GLOBAL) */
} pt_way_t;

typedef CUresult (*begin_v10000_t)(CUstream s);

/* The second thread's launch: c = a + b on its own per-thread stream. */
typedef struct {
    PFN_cuLaunchKernel_v4000 launch;
    CUstream s;
    CUdeviceptr a, b, c;
    CUresult r;
} other_t;

static void *other_launch(void *arg)
{
    other_t *o = arg;
    int n = N;
    void *args[] = {&o->a, &o->b, &o->c, &n};
    o->r = o->launch(vadd_fn(), 1, 1, 1, N, 1, 1, 0, o->s, args, NULL);
    return NULL;
}

static float *host(CUdeviceptr p)
{
    return (float *)(uintptr_t)p;
}

/* Fills a and b, and c with -1. */
static void fill(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c)
{
    for (int i = 0; i < N; i++) {
        host(a)[i] = (float)i;
        host(b)[i] = 0.5f * (float)i;
        host(c)[i] = -1.0f;
    }
}

static void capture_per_thread(const pt_way_t *way)
{
    CUdeviceptr a = alloc(N * 4), b = alloc(N * 4), c = alloc(N * 4), d = alloc(N * 4);
    CUdeviceptr x = alloc(N * 4), y = alloc(N * 4), z = alloc(N * 4);
    fill(a, b, c);
    for (int i = 0; i < N; i++)
        host(d)[i] = -1.0f;
    fill(x, y, z);
    void *begin = get("cuStreamBeginCapture", way->version, way->flags);
    PFN_cuStreamEndCapture_v10000 end =
        (PFN_cuStreamEndCapture_v10000)get("cuStreamEndCapture", 12000, way->flags);
    PFN_cuLaunchKernel_v4000 launch =
        (PFN_cuLaunchKernel_v4000)get("cuLaunchKernel", 12000, PT); /* the _ptsz launch */
    assert_non_null(begin);
    assert_non_null(end);
    assert_non_null(launch);
    const char *launch_fn = "cuLaunchKernel_ptsz";
    int n = N;
    void *args1[] = {&a, &b, &c, &n}; /* c = a + b */
    void *args2[] = {&c, &a, &d, &n}; /* d = c + a */
    f_reset();
    if (way->version < 10010)
        assert_int_equal(((begin_v10000_t)begin)(way->s), CUDA_SUCCESS); /* GLOBAL */
    else
        assert_int_equal(
            ((PFN_cuStreamBeginCapture_v10010)begin)(way->s, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, N, 1, 1, 0, way->s, args1, NULL), CUDA_SUCCESS);
    /* the second thread launches, on its own per-thread stream, during the capture */
    other_t o = {launch, way->s, x, y, z, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_launch, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(o.r, CUDA_SUCCESS);
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, N, 1, 1, 0, way->s, args2, NULL), CUDA_SUCCESS);
    CUgraph g = NULL;
    assert_int_equal(end(way->s, &g), CUDA_SUCCESS); /* nothing invalidated it */
    assert_non_null(g);

    /* the second thread's kernel ran; the captured ones did not */
    for (int i = 0; i < N; i++)
        assert_true(host(z)[i] == 1.5f * (float)i);
    assert_true(host(c)[N - 1] == -1.0f && host(d)[N - 1] == -1.0f);

    const CUdeviceptr first[2] = {a, c};
    assert_graph_vadds(g, first, 2); /* the two kernels, nothing else */

    long l1 = find_call(launch_fn, 0);
    long other = l1 >= 0 ? find_call(launch_fn, (size_t)l1 + 1) : -1;
    assert_true(l1 >= 0 && other > l1);
    const CUdeviceptr mine[] = {x, y, z};
    assert_prefetched_only(mine, 3, l1, other);
    GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g);
}

/* Stream 0 through cuStreamBeginCapture_v2_ptsz and cuLaunchKernel_ptsz. */
static void test_capture_stream0_ptsz(void **state)
{
    (void)state;
    const pt_way_t way = {PT, NULL, 12000};
    capture_per_thread(&way);
}

/* CU_STREAM_PER_THREAD through cuStreamBeginCapture_v2 (legacy entry), the
 * launches through cuLaunchKernel_ptsz. */
static void test_capture_per_thread_handle(void **state)
{
    (void)state;
    const pt_way_t way = {LEGACY, CU_STREAM_PER_THREAD, 12000};
    capture_per_thread(&way);
}

/* The CUDA 10.0 ABI, which takes no mode (GLOBAL): a runtime asking
 * cuGetProcAddress for version 10000 gets cuStreamBeginCapture_ptsz (with
 * the per-thread flag) or cuStreamBeginCapture, and from libgmux.so its
 * hooks of them, not the driver's own. */
static void test_capture_v10000(const pt_way_t *way, const char *sym)
{
    void *begin = get("cuStreamBeginCapture", 10000, way->flags);
    assert_non_null(begin);
    assert_ptr_not_equal(begin, f_entry(sym)); /* the shim's hook */
    capture_per_thread(way);
    long at = find_call(sym, 0); /* what reached the driver: that ABI, mode GLOBAL */
    assert_true(at >= 0);
    assert_int_equal(f_get((size_t)at)->a[1], CU_STREAM_CAPTURE_MODE_GLOBAL);
}

static void test_capture_stream0_v10000_ptsz(void **state)
{
    (void)state;
    const pt_way_t way = {PT, NULL, 10000};
    test_capture_v10000(&way, "cuStreamBeginCapture_ptsz");
}

static void test_capture_per_thread_handle_v10000(void **state)
{
    (void)state;
    const pt_way_t way = {LEGACY, CU_STREAM_PER_THREAD, 10000};
    test_capture_v10000(&way, "cuStreamBeginCapture");
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_stream0_ptsz),
        cmocka_unit_test(test_capture_per_thread_handle),
        cmocka_unit_test(test_capture_stream0_v10000_ptsz),
        cmocka_unit_test(test_capture_per_thread_handle_v10000),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
