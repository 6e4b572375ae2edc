/*
 * libgmux.so against the driver test double, reached the way the CUDA
 * runtime reaches a driver: dlopen("libcuda.so.1"), dlsym of
 * cuGetProcAddress_v2, then every entry point through it. CTest runs this
 * with LD_PRELOAD=libgmux.so and LD_LIBRARY_PATH at the double, once per
 * policy (GMUX_POLICY), and with GMUX_BUDGET set for the budget view.
 */
#include <dlfcn.h>
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

#include "fake_cuda/fake_cuda.h"

#define LEGACY CU_GET_PROC_ADDRESS_LEGACY_STREAM
#define PT     CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

static void *drv;
static PFN_cuGetProcAddress_v12000 gpa;
static fake_reset_fn f_reset;
static fake_log_count_fn f_count;
static fake_log_get_fn f_get;
static fake_register_kernel_fn f_register;
static fake_entry_fn f_entry;
static int mode_proactive, mode_redirect, mode_prefetch;

/* The entry point cudart would get for (base, version, flags). */
static void *get(const char *base, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult q;
    assert_int_equal(gpa(base, &p, version, flags, &q), CUDA_SUCCESS);
    return p;
}
#define GET(pfn, base, ver) ((pfn)get(base, ver, LEGACY))

/* Index of the first call of fn at or after from, or -1. */
static long find_call(const char *fn, size_t from)
{
    for (size_t i = from; i < f_count(); i++)
        if (strcmp(f_get(i)->fn, fn) == 0)
            return (long)i;
    return -1;
}

static size_t count_calls(const char *fn)
{
    size_t n = 0;
    for (long i = find_call(fn, 0); i >= 0; i = find_call(fn, (size_t)i + 1))
        n++;
    return n;
}

/* Prefetch log entries of either form (a batch logs one entry per range). */
static size_t count_prefetches(void)
{
    return count_calls("cuMemPrefetchAsync_v2") + count_calls("cuMemPrefetchBatchAsync");
}

/* The form the shim must use for n ranges: one batch where the driver takes
 * batches (the double does unless FAKE_CUDA_NO_BATCH=1), single calls else. */
static const char *prefetch_form(size_t n)
{
    const char *no = getenv("FAKE_CUDA_NO_BATCH");
    bool batch = n > 1 && !(no && strcmp(no, "1") == 0);
    return batch ? "cuMemPrefetchBatchAsync" : "cuMemPrefetchAsync_v2";
}

static CUdeviceptr alloc(size_t size)
{
    CUdeviceptr p = 0;
    assert_int_equal(GET(PFN_cuMemAlloc_v3020, "cuMemAlloc", 12000)(&p, size), CUDA_SUCCESS);
    return p;
}

static CUstream new_stream(void)
{
    CUstream s;
    assert_int_equal(GET(PFN_cuStreamCreate_v2000, "cuStreamCreate", 12000)(&s, 0), CUDA_SUCCESS);
    return s;
}

/* --- kernels of the double ----------------------------------------------- */

static void k_vadd(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)grid;
    (void)block;
    const float *a = *(float **)args[0], *b = *(float **)args[1];
    float *c = *(float **)args[2];
    int n = *(int *)args[3];
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}

static void k_nop(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)args;
    (void)grid;
    (void)block;
}

static CUfunction vadd_fn(void)
{
    static CUfunction f;
    static const size_t sizes[] = {8, 8, 8, 4};
    if (!f)
        f = f_register("vadd", 4, sizes, k_vadd);
    return f;
}

/* Asserts the prefetch/record/wait/launch sequence for one launch of regions[] on stream s. */
static void assert_prefetched_before(const char *launch_fn, CUstream s, const CUdeviceptr *bases,
                                     const size_t *sizes, size_t n)
{
    long launch = find_call(launch_fn, 0);
    assert_true(launch >= 0);
    if (!mode_prefetch) {
        assert_int_equal(count_prefetches(), 0);
        assert_int_equal(count_calls("cuStreamWaitEvent"), 0);
        return;
    }
    const char *form = prefetch_form(n);
    assert_int_equal(count_calls(form), n);
    assert_int_equal(count_prefetches(), n);
    uint64_t mig = 0;
    long last_prefetch = -1;
    for (size_t k = 0; k < n; k++) {
        bool seen = false;
        for (long i = find_call(form, 0); i >= 0; i = find_call(form, (size_t)i + 1)) {
            const fake_call_t *c = f_get((size_t)i);
            if (c->a[0] == bases[k]) {
                seen = true;
                assert_int_equal(c->a[1], sizes[k]);
                assert_int_equal(c->a[2] >> 32, CU_MEM_LOCATION_TYPE_DEVICE);
                assert_true(c->a[3] != (uint64_t)(uintptr_t)s);
                mig = mig ? mig : c->a[3];
                assert_int_equal(c->a[3], mig); /* all on the one migration stream */
                if (i > last_prefetch)
                    last_prefetch = i;
            }
        }
        assert_true(seen);
    }
    long rec = find_call("cuEventRecord", (size_t)last_prefetch);
    assert_true(rec > last_prefetch);
    assert_int_equal(f_get((size_t)rec)->a[1], mig);
    long wait = find_call("cuStreamWaitEvent", (size_t)rec);
    assert_true(wait > rec);
    assert_true(wait < launch);
    assert_int_equal(f_get((size_t)wait)->a[0],
                     (uint64_t)(uintptr_t)(s ? s : CU_STREAM_PER_THREAD));
    assert_int_equal(f_get((size_t)wait)->a[1], f_get((size_t)rec)->a[0]);
}

/* --- hooking and version dispatch ---------------------------------------- */

static void test_lookup_paths_return_hooks(void **state)
{
    (void)state;
    void *hook_alloc = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    assert_non_null(hook_alloc);
    assert_ptr_not_equal(hook_alloc, f_entry("cuMemAlloc_v2")); /* libgmux.so is preloaded */
    assert_ptr_not_equal((void *)gpa, f_entry("cuGetProcAddress_v2"));
    assert_ptr_equal(dlsym(drv, "cuMemAlloc_v2"), hook_alloc);
    assert_ptr_equal(dlsym(drv, "cuLaunchKernel_ptsz"), dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz"));
    assert_ptr_equal(dlsym(drv, "fake_reset"), (void *)f_reset); /* not hooked: passed through */
    assert_ptr_equal(get("cuMemAlloc", 12000, LEGACY), hook_alloc);
    assert_ptr_equal(get("cuMemAlloc", 3020, 0), hook_alloc);
    /* the 32-bit ABI of 2.0 is not wrapped: the driver's own function comes back */
    assert_ptr_equal(get("cuMemAlloc", 2000, 0), f_entry("cuMemAlloc"));
    /* functions the shim does not hook are the driver's */
    assert_ptr_equal(get("cuStreamCreate", 12000, 0), f_entry("cuStreamCreate"));
    /* cuGetProcAddress itself, both versions */
    assert_ptr_equal(get("cuGetProcAddress", 12000, 0), (void *)gpa);
    assert_ptr_equal(get("cuGetProcAddress", 11030, 0), dlsym(RTLD_DEFAULT, "cuGetProcAddress"));
    assert_ptr_not_equal(get("cuGetProcAddress", 11030, 0), f_entry("cuGetProcAddress"));
}

static void test_per_thread_variants(void **state)
{
    (void)state;
    void *legacy = dlsym(RTLD_DEFAULT, "cuLaunchKernel");
    void *ptsz = dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz");
    assert_ptr_not_equal(legacy, ptsz);
    assert_ptr_equal(get("cuLaunchKernel", 12000, LEGACY), legacy);
    assert_ptr_equal(get("cuLaunchKernel", 12000, 0), legacy);
    assert_ptr_equal(get("cuLaunchKernel", 12000, PT), ptsz);
    /* the per-thread variant exists from 7.0: asked for 6.0, the legacy one */
    assert_ptr_equal(get("cuLaunchKernel", 6000, PT), legacy);
    assert_ptr_equal(get("cuGraphLaunch", 12000, PT), dlsym(RTLD_DEFAULT, "cuGraphLaunch_ptsz"));
    assert_ptr_equal(get("cuMemAllocAsync", 12000, PT),
                     dlsym(RTLD_DEFAULT, "cuMemAllocAsync_ptsz"));
    /* the driver's answer for a version too old passes through unchanged */
    void *p = (void *)1;
    CUdriverProcAddressQueryResult q;
    assert_int_equal(gpa("cuMemAllocAsync", &p, 11000, PT, &q), CUDA_SUCCESS);
    assert_null(p);
    assert_int_equal(q, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    /* a per-thread launch with stream 0 reaches the driver's _ptsz entry */
    CUdeviceptr a = alloc(256), b = alloc(256), c = alloc(256);
    int n = 64;
    void *args[] = {&a, &b, &c, &n};
    f_reset();
    PFN_cuLaunchKernel_v7000_ptsz launch = (PFN_cuLaunchKernel_v7000_ptsz)ptsz;
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    assert_true(find_call("cuLaunchKernel_ptsz", 0) >= 0);
    assert_int_equal(find_call("cuLaunchKernel", 0), -1);
    const CUdeviceptr bases[] = {a, b, c};
    const size_t sizes[] = {256, 256, 256};
    assert_prefetched_before("cuLaunchKernel_ptsz", NULL, bases, sizes, 3);
}

static void test_unlisted_newer_abi_passes_through(void **state)
{
    (void)state;
    /* the double has a cuMemAllocPitch of 12.9 that libgmux.so does not list: never wrap it */
    void *hook = dlsym(RTLD_DEFAULT, "cuMemAllocPitch_v2");
    assert_ptr_equal(get("cuMemAllocPitch", 12080, 0), hook);
    assert_ptr_equal(get("cuMemAllocPitch", 13000, 0), f_entry("cuMemAllocPitch_v9"));
}

static void test_dlsym_next_from_caller(void **state)
{
    (void)state;
    size_t (*next_strlen)(const char *) = (size_t(*)(const char *))dlsym(RTLD_NEXT, "strlen");
    assert_non_null(next_strlen);
    assert_int_equal(next_strlen("gmux"), 4);
    assert_null(dlsym(RTLD_NEXT, "gmux_no_such_symbol_anywhere"));
}

/* --- allocations ---------------------------------------------------------- */

static void test_alloc_redirect_and_free(void **state)
{
    (void)state;
    f_reset();
    CUdeviceptr p = alloc(1 << 20);
    long m = find_call("cuMemAllocManaged", 0);
    long d = find_call("cuMemAlloc_v2", 0);
    if (mode_redirect) {
        assert_true(m >= 0);
        assert_int_equal(d, -1);
        assert_int_equal(f_get((size_t)m)->a[0], p);
        assert_int_equal(f_get((size_t)m)->a[1], 1 << 20);
        assert_int_equal(f_get((size_t)m)->a[2], CU_MEM_ATTACH_GLOBAL);
    } else {
        assert_int_equal(m, -1);
        assert_true(d >= 0);
    }
    assert_int_equal(GET(PFN_cuMemFree_v3020, "cuMemFree", 12000)(p), CUDA_SUCCESS);
    assert_true(find_call("cuMemFree_v2", 0) >= 0);
}

/* Sharing memory with another process: managed memory cannot be shared, so
 * cudaMalloc'd memory the shim redirected refuses, as the driver does for
 * any managed memory; memory left alone (off, --no-managed, stream-ordered)
 * is shared as usual. */
static void test_ipc_of_redirected_memory(void **state)
{
    (void)state;
    PFN_cuIpcGetMemHandle_v4010 ipc = GET(PFN_cuIpcGetMemHandle_v4010, "cuIpcGetMemHandle", 12000);
    CUdeviceptr p = alloc(4096), q = 0;
    CUipcMemHandle h;
    assert_int_equal(ipc(&h, p) == CUDA_SUCCESS, !mode_redirect);
    assert_int_equal(GET(PFN_cuMemAllocAsync_v11020, "cuMemAllocAsync", 12000)(&q, 4096, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(ipc(&h, q), CUDA_SUCCESS);
}

static void test_pitch_alloc(void **state)
{
    (void)state;
    PFN_cuMemAllocPitch_v3020 pitch_alloc =
        GET(PFN_cuMemAllocPitch_v3020, "cuMemAllocPitch", 12000);
    CUdeviceptr p;
    size_t pitch = 0;
    f_reset();
    assert_int_equal(pitch_alloc(&p, &pitch, 1000, 7, 4), CUDA_SUCCESS);
    assert_true(pitch >= 1000);
    if (mode_redirect) {
        assert_int_equal(pitch % 512, 0);
        long m = find_call("cuMemAllocManaged", 0);
        assert_true(m >= 0);
        assert_int_equal(f_get((size_t)m)->a[1], pitch * 7);
    }
    /* invalid element sizes still reach the driver and fail there */
    assert_int_not_equal(pitch_alloc(&p, &pitch, 1000, 7, 3), CUDA_SUCCESS);
}

static uint64_t free_bytes(void)
{
    size_t fr = 0, total = 0;
    assert_int_equal(GET(PFN_cuMemGetInfo_v3020, "cuMemGetInfo", 12000)(&fr, &total), CUDA_SUCCESS);
    const char *b = getenv("GMUX_BUDGET");
    if (b && atoll(b) > 0)
        assert_int_equal(total, (size_t)atoll(b));
    else
        assert_int_equal(total, FAKE_TOTAL_MEMORY);
    return fr;
}

static void test_budget_view_tracks_every_kind(void **state)
{
    (void)state;
    const char *b = getenv("GMUX_BUDGET");
    if (!b || atoll(b) <= 0)
        skip();
    uint64_t f0 = free_bytes();
    CUdeviceptr p = alloc(16 << 20);
    assert_int_equal(f0 - free_bytes(), 16 << 20);
    /* stream-ordered memory: tracked (pinned) */
    CUdeviceptr q;
    PFN_cuMemAllocAsync_v11020 alloc_async =
        GET(PFN_cuMemAllocAsync_v11020, "cuMemAllocAsync", 12000);
    assert_int_equal(alloc_async(&q, 8 << 20, NULL), CUDA_SUCCESS);
    assert_int_equal(f0 - free_bytes(), 24 << 20);
    /* VMM: a mapping of a host-located handle is tracked (pinned) until unmapped */
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0}};
    assert_int_equal(
        GET(PFN_cuMemAddressReserve_v10020, "cuMemAddressReserve", 12000)(&va, 4 << 20, 0, 0, 0),
        CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuMemCreate_v10020, "cuMemCreate", 12000)(&h, 4 << 20, &prop, 0),
                     CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuMemMap_v10020, "cuMemMap", 12000)(va, 4 << 20, 0, h, 0),
                     CUDA_SUCCESS);
    assert_int_equal(f0 - free_bytes(), 28 << 20);
    assert_int_equal(GET(PFN_cuMemUnmap_v10020, "cuMemUnmap", 12000)(va, 4 << 20), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuMemRelease_v10020, "cuMemRelease", 12000)(h), CUDA_SUCCESS);
    assert_int_equal(f0 - free_bytes(), 24 << 20);
    assert_int_equal(GET(PFN_cuMemFreeAsync_v11020, "cuMemFreeAsync", 12000)(q, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuMemFree_v3020, "cuMemFree", 12000)(p), CUDA_SUCCESS);
    assert_int_equal(free_bytes(), f0);
    GET(PFN_cuMemAddressFree_v10020, "cuMemAddressFree", 12000)(va, 4 << 20);
}

/* --- launches ------------------------------------------------------------- */

static void test_launch_decodes_and_orders(void **state)
{
    (void)state;
    PFN_cuLaunchKernel_v4000 launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    const int n = 256;
    CUdeviceptr a = alloc(n * 4), b = alloc(n * 4), c = alloc(n * 4), unused = alloc(4096);
    (void)unused;
    for (int i = 0; i < n; i++) {
        ((float *)(uintptr_t)a)[i] = (float)i;
        ((float *)(uintptr_t)b)[i] = 2.0f * (float)i;
    }
    CUstream s = new_stream();
    void *args[] = {&a, &b, &c, (void *)&n};
    f_reset();
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, 256, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
    const CUdeviceptr bases[] = {a, b, c};
    const size_t sizes[] = {n * 4, n * 4, n * 4};
    assert_prefetched_before("cuLaunchKernel", s, bases, sizes, 3);
    for (int i = 0; i < n; i++)
        assert_true(((float *)(uintptr_t)c)[i] == 3.0f * (float)i);
    /* the same regions again: already prefetched, the launch goes straight through */
    f_reset();
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, 256, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
    assert_int_equal(count_prefetches(), 0);
    assert_int_equal(count_calls("cuStreamWaitEvent"), 0);
    assert_int_equal(count_calls("cuLaunchKernel"), 1);
}

/* The program's own cudaMallocManaged memory is tracked and prefetched too. */
static void test_program_managed_memory(void **state)
{
    (void)state;
    PFN_cuMemAllocManaged_v6000 alloc_managed =
        GET(PFN_cuMemAllocManaged_v6000, "cuMemAllocManaged", 12000);
    PFN_cuLaunchKernel_v4000 launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    const int n = 64;
    CUdeviceptr a, b, c;
    assert_int_equal(alloc_managed(&a, n * 4, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(alloc_managed(&b, n * 4, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(alloc_managed(&c, n * 4, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    for (int i = 0; i < n; i++) {
        ((float *)(uintptr_t)a)[i] = (float)i;
        ((float *)(uintptr_t)b)[i] = 1.0f;
    }
    CUstream s = new_stream();
    void *args[] = {&a, &b, &c, (void *)&n};
    f_reset();
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, 64, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
    const CUdeviceptr bases[] = {a, b, c};
    const size_t sizes[] = {n * 4, n * 4, n * 4};
    /* managed already: prefetched under proactive whether or not plain
     * allocations are redirected */
    bool redirected_only = mode_prefetch;
    mode_prefetch = mode_proactive;
    assert_prefetched_before("cuLaunchKernel", s, bases, sizes, 3);
    mode_prefetch = redirected_only;
    for (int i = 0; i < n; i++)
        assert_true(((float *)(uintptr_t)c)[i] == (float)i + 1.0f);
    PFN_cuMemFree_v3020 mfree = GET(PFN_cuMemFree_v3020, "cuMemFree", 12000);
    assert_int_equal(mfree(a), CUDA_SUCCESS);
    assert_int_equal(mfree(b), CUDA_SUCCESS);
    assert_int_equal(mfree(c), CUDA_SUCCESS);
}

static void test_interior_pointer_maps_to_region(void **state)
{
    (void)state;
    static const size_t sizes[] = {8, 8, 4};
    CUfunction f = f_register("interior", 3, sizes, k_nop);
    CUdeviceptr r = alloc(1 << 16), freed = alloc(4096);
    GET(PFN_cuMemFree_v3020, "cuMemFree", 12000)(freed);
    CUdeviceptr inside = r + 12345;
    uint64_t scalar = 77; /* a value that is no address */
    int k = 3;
    void *args[] = {&inside, &scalar, &k};
    CUstream s = new_stream();
    f_reset();
    assert_int_equal(GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000)(f, 1, 1, 1, 1, 1, 1, 0,
                                                                            s, args, NULL),
                     CUDA_SUCCESS);
    const CUdeviceptr bases[] = {r};
    const size_t rsizes[] = {1 << 16};
    assert_prefetched_before("cuLaunchKernel", s, bases, rsizes, 1);
    /* a freed region is no longer tracked: nothing to prefetch */
    void *args2[] = {&freed, &scalar, &k};
    f_reset();
    GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000)(f, 1, 1, 1, 1, 1, 1, 0, s, args2, NULL);
    assert_int_equal(count_prefetches(), 0);
}

static void test_extra_buffer_form(void **state)
{
    (void)state;
    const int n = 32;
    CUdeviceptr a = alloc(n * 4), b = alloc(n * 4), c = alloc(n * 4);
    for (int i = 0; i < n; i++) {
        ((float *)(uintptr_t)a)[i] = 1.0f;
        ((float *)(uintptr_t)b)[i] = (float)i;
    }
    struct {
        CUdeviceptr a, b, c;
        int n;
    } buf = {a, b, c, n};
    size_t size = sizeof(buf);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    CUstream s = new_stream();
    f_reset();
    assert_int_equal(GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel",
                         12000)(vadd_fn(), 1, 1, 1, 32, 1, 1, 0, s, NULL, extra),
                     CUDA_SUCCESS);
    const CUdeviceptr bases[] = {a, b, c};
    const size_t sizes[] = {n * 4, n * 4, n * 4};
    assert_prefetched_before("cuLaunchKernel", s, bases, sizes, 3);
    assert_true(((float *)(uintptr_t)c)[31] == 32.0f);
}

static void test_launch_ex_and_cooperative(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(64), b = alloc(64), c = alloc(64);
    int n = 16;
    void *args[] = {&a, &b, &c, &n};
    CUstream s = new_stream();
    CUlaunchConfig cfg = {.gridDimX = 1,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 16,
                          .blockDimY = 1,
                          .blockDimZ = 1,
                          .hStream = s};
    f_reset();
    assert_int_equal(
        GET(PFN_cuLaunchKernelEx_v11060, "cuLaunchKernelEx", 12000)(&cfg, vadd_fn(), args, NULL),
        CUDA_SUCCESS);
    const CUdeviceptr bases[] = {a, b, c};
    const size_t sizes[] = {64, 64, 64};
    assert_prefetched_before("cuLaunchKernelEx", s, bases, sizes, 3);

    CUdeviceptr d = alloc(128), e = alloc(128), g = alloc(128);
    void *args2[] = {&d, &e, &g, &n};
    f_reset();
    assert_int_equal(GET(PFN_cuLaunchCooperativeKernel_v9000, "cuLaunchCooperativeKernel",
                         12000)(vadd_fn(), 1, 1, 1, 16, 1, 1, 0, s, args2),
                     CUDA_SUCCESS);
    const CUdeviceptr bases2[] = {d, e, g};
    const size_t sizes2[] = {128, 128, 128};
    assert_prefetched_before("cuLaunchCooperativeKernel", s, bases2, sizes2, 3);
}

static void test_no_migration_into_a_capturing_stream(void **state)
{
    (void)state;
    fake_set_capturing_fn capturing = (fake_set_capturing_fn)dlsym(drv, "fake_set_capturing");
    assert_non_null(capturing);
    CUdeviceptr a = alloc(512), b = alloc(512), c = alloc(512);
    int n = 8;
    void *args[] = {&a, &b, &c, &n};
    CUstream s = new_stream();
    PFN_cuLaunchKernel_v4000 launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    capturing(s);
    f_reset();
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, 8, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
    capturing(NULL);
    assert_int_equal(count_prefetches(), 0);
    assert_int_equal(count_calls("cuStreamWaitEvent"), 0);
    /* out of capture, the same regions are still prefetched at their next launch */
    f_reset();
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, 8, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
    const CUdeviceptr bases[] = {a, b, c};
    const size_t sizes[] = {512, 512, 512};
    assert_prefetched_before("cuLaunchKernel", s, bases, sizes, 3);
}

#define THREADS 4
#define ROUNDS  50

static void *worker(void *arg)
{
    (void)arg;
    PFN_cuLaunchKernel_v4000 launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    PFN_cuMemFree_v3020 mem_free = GET(PFN_cuMemFree_v3020, "cuMemFree", 12000);
    CUstream s = new_stream();
    for (int r = 0; r < ROUNDS; r++) {
        const int n = 64;
        CUdeviceptr a = alloc(n * 4), b = alloc(n * 4), c = alloc(n * 4);
        for (int i = 0; i < n; i++) {
            ((float *)(uintptr_t)a)[i] = (float)r;
            ((float *)(uintptr_t)b)[i] = (float)i;
        }
        void *args[] = {&a, &b, &c, (void *)&n};
        if (launch(vadd_fn(), 1, 1, 1, 64, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS)
            return (void *)1;
        for (int i = 0; i < n; i++)
            if (((float *)(uintptr_t)c)[i] != (float)(r + i))
                return (void *)2;
        mem_free(a);
        mem_free(b);
        mem_free(c);
    }
    return NULL;
}

static void test_concurrent_allocations_and_launches(void **state)
{
    (void)state;
    vadd_fn(); /* registered before the threads start */
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        void *rc = (void *)-1;
        assert_int_equal(pthread_join(t[i], &rc), 0);
        assert_null(rc);
    }
}

/* --- graphs --------------------------------------------------------------- */

/* A kernel node of vadd, one block of 64 threads. */
static CUDA_KERNEL_NODE_PARAMS vadd_node(void **args)
{
    return (CUDA_KERNEL_NODE_PARAMS){.func = vadd_fn(),
                                     .gridDimX = 1,
                                     .gridDimY = 1,
                                     .gridDimZ = 1,
                                     .blockDimX = 64,
                                     .blockDimY = 1,
                                     .blockDimZ = 1,
                                     .kernelParams = args};
}

static void test_graph_inspected_at_instantiation(void **state)
{
    (void)state;
    const int n = 64;
    CUdeviceptr a = alloc(n * 4), b = alloc(n * 4), c = alloc(n * 4), d = alloc(n * 4);
    for (int i = 0; i < n; i++)
        ((float *)(uintptr_t)a)[i] = ((float *)(uintptr_t)b)[i] = 1.0f;
    CUgraph g;
    assert_int_equal(GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000)(&g, 0), CUDA_SUCCESS);
    PFN_cuGraphAddKernelNode_v12000 add =
        GET(PFN_cuGraphAddKernelNode_v12000, "cuGraphAddKernelNode", 12000);
    void *args1[] = {&a, &b, &c, (void *)&n}; /* c = a + b */
    void *args2[] = {&c, &a, &d, (void *)&n}; /* d = c + a */
    CUDA_KERNEL_NODE_PARAMS p = vadd_node(args1);
    CUgraphNode n1, n2;
    assert_int_equal(add(&n1, g, NULL, 0, &p), CUDA_SUCCESS);
    p.kernelParams = args2;
    assert_int_equal(add(&n2, g, &n1, 1, &p), CUDA_SUCCESS);
    CUgraphExec exec;
    f_reset();
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&exec, g, 0),
                     CUDA_SUCCESS);
    if (mode_proactive)
        assert_int_equal(count_calls("cuGraphKernelNodeGetParams_v2"), 2);
    CUstream s = new_stream();
    f_reset();
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(exec, s), CUDA_SUCCESS);
    const CUdeviceptr bases[] = {a, b, c, d};
    const size_t sizes[] = {n * 4, n * 4, n * 4, n * 4};
    assert_prefetched_before("cuGraphLaunch", s, bases, sizes, 4);
    assert_true(((float *)(uintptr_t)d)[n - 1] == 3.0f);
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(exec),
                     CUDA_SUCCESS);
    GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g);
}

/* A graph whose second kernel sits in a child graph (and a third in the
 * child's child): the child graphs are walked at instantiation, so the one
 * graph launch prefetches the data of every kernel in it. */
static void test_graph_child_nodes(void **state)
{
    (void)state;
    const int n = 64;
    CUdeviceptr a = alloc(n * 4), b = alloc(n * 4), c = alloc(n * 4), d = alloc(n * 4),
                e = alloc(n * 4);
    for (int i = 0; i < n; i++)
        ((float *)(uintptr_t)a)[i] = ((float *)(uintptr_t)b)[i] = 1.0f;
    PFN_cuGraphCreate_v10000 create = GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000);
    PFN_cuGraphAddKernelNode_v12000 add =
        GET(PFN_cuGraphAddKernelNode_v12000, "cuGraphAddKernelNode", 12000);
    PFN_cuGraphAddChildGraphNode_v10000 add_child =
        GET(PFN_cuGraphAddChildGraphNode_v10000, "cuGraphAddChildGraphNode", 12000);
    assert_non_null(add_child);
    CUgraph g, child, grandchild;
    assert_int_equal(create(&g, 0), CUDA_SUCCESS);
    assert_int_equal(create(&child, 0), CUDA_SUCCESS);
    assert_int_equal(create(&grandchild, 0), CUDA_SUCCESS);
    void *args1[] = {&a, &b, &c, (void *)&n}; /* c = a + b */
    void *args2[] = {&c, &a, &d, (void *)&n}; /* d = c + a */
    void *args3[] = {&d, &c, &e, (void *)&n}; /* e = d + c */
    CUDA_KERNEL_NODE_PARAMS p = vadd_node(args1);
    CUgraphNode n1, n2, n3, c1, c2;
    assert_int_equal(add(&n1, g, NULL, 0, &p), CUDA_SUCCESS);
    p.kernelParams = args2;
    assert_int_equal(add(&n2, child, NULL, 0, &p), CUDA_SUCCESS);
    p.kernelParams = args3;
    assert_int_equal(add(&n3, grandchild, NULL, 0, &p), CUDA_SUCCESS);
    assert_int_equal(add_child(&c2, child, &n2, 1, grandchild), CUDA_SUCCESS);
    assert_int_equal(add_child(&c1, g, &n1, 1, child), CUDA_SUCCESS);
    CUgraphExec exec;
    f_reset();
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&exec, g, 0),
                     CUDA_SUCCESS);
    if (mode_proactive) {
        assert_int_equal(count_calls("cuGraphChildGraphNodeGetGraph"), 2);
        assert_int_equal(count_calls("cuGraphKernelNodeGetParams_v2"), 3);
    }
    CUstream s = new_stream();
    f_reset();
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(exec, s), CUDA_SUCCESS);
    const CUdeviceptr bases[] = {a, b, c, d, e};
    const size_t sizes[] = {n * 4, n * 4, n * 4, n * 4, n * 4};
    assert_prefetched_before("cuGraphLaunch", s, bases, sizes, 5);
    assert_true(((float *)(uintptr_t)e)[n - 1] == 5.0f); /* 3 + 2: every kernel ran */
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(exec),
                     CUDA_SUCCESS);
    PFN_cuGraphDestroy_v10000 destroy = GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000);
    destroy(g);
    destroy(child);
    destroy(grandchild);
}

int main(void)
{
    const char *mode = getenv("GMUX_POLICY");
    mode = mode ? mode : "proactive";
    mode_proactive = strcmp(mode, "proactive") == 0;
    const char *managed = getenv("GMUX_SHIM_MANAGED");
    mode_redirect = strcmp(mode, "off") != 0 && !(managed && strcmp(managed, "0") == 0);
    /* only managed memory is prefetched */
    mode_prefetch = mode_proactive && mode_redirect;
    drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv) {
        fprintf(stderr, "test double libcuda.so.1 not found: %s\n", dlerror());
        return 1;
    }
    gpa = (PFN_cuGetProcAddress_v12000)dlsym(drv, "cuGetProcAddress_v2");
    f_reset = (fake_reset_fn)dlsym(drv, "fake_reset");
    f_count = (fake_log_count_fn)dlsym(drv, "fake_log_count");
    f_get = (fake_log_get_fn)dlsym(drv, "fake_log_get");
    f_register = (fake_register_kernel_fn)dlsym(drv, "fake_register_kernel");
    f_entry = (fake_entry_fn)dlsym(drv, "fake_entry");
    if (!gpa || !f_reset || !f_count || !f_get || !f_register || !f_entry) {
        fprintf(stderr, "libcuda.so.1 is not the test double\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_paths_return_hooks),
        cmocka_unit_test(test_per_thread_variants),
        cmocka_unit_test(test_unlisted_newer_abi_passes_through),
        cmocka_unit_test(test_dlsym_next_from_caller),
        cmocka_unit_test(test_concurrent_allocations_and_launches),
        cmocka_unit_test(test_alloc_redirect_and_free),
        cmocka_unit_test(test_pitch_alloc),
        cmocka_unit_test(test_budget_view_tracks_every_kind),
        cmocka_unit_test(test_launch_decodes_and_orders),
        cmocka_unit_test(test_program_managed_memory),
        cmocka_unit_test(test_interior_pointer_maps_to_region),
        cmocka_unit_test(test_extra_buffer_form),
        cmocka_unit_test(test_launch_ex_and_cooperative),
        cmocka_unit_test(test_no_migration_into_a_capturing_stream),
        cmocka_unit_test(test_graph_inspected_at_instantiation),
        cmocka_unit_test(test_graph_child_nodes),
        cmocka_unit_test(test_ipc_of_redirected_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
