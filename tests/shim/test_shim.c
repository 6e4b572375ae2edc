/*
 * libgmux.so against the driver test double, reached the way the CUDA
 * runtime reaches a driver: dlopen("libcuda.so.1"), dlsym of
 * cuGetProcAddress_v2, then every entry point through it. CTest runs this
 * with LD_PRELOAD=libgmux.so and LD_LIBRARY_PATH at the double, once per
 * policy (GMUX_POLICY), and with GMUX_BUDGET set for the budget view.
 * Graphs are tested the same way in test_shim_graph.c.
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
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include "shim_harness.h"

/* A kernel that touches nothing. */
static void k_nop(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)args;
    (void)grid;
    (void)block;
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
    assert_ptr_equal(get("cuStreamSynchronize", 12000, 0), f_entry("cuStreamSynchronize"));
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

/* A width the pitch rounding cannot hold goes to the driver and fails there:
 * it used to round to a pitch of 0 and divide by it (SIGFPE without
 * optimisation; optimised, a managed allocation of 0 bytes was tried). */
static void test_pitch_alloc_huge_width(void **state)
{
    (void)state;
    PFN_cuMemAllocPitch_v3020 pitch_alloc =
        GET(PFN_cuMemAllocPitch_v3020, "cuMemAllocPitch", 12000);
    CUdeviceptr p = 0;
    size_t pitch = 0;
    f_reset();
    assert_int_not_equal(pitch_alloc(&p, &pitch, SIZE_MAX, 1, 4), CUDA_SUCCESS);
    assert_int_not_equal(pitch_alloc(&p, &pitch, SIZE_MAX - 100, 2, 8), CUDA_SUCCESS);
    assert_int_equal(count_calls("cuMemAllocManaged"), 0);
    assert_int_equal(count_calls("cuMemAllocPitch_v2"), 2);
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

static void no_op(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)args;
    (void)grid;
    (void)block;
}

/* After a module is unloaded, a kernel of a module loaded later may get the
 * same handle with fewer parameters. Its launch must be read with its own
 * layout: the old one (three parameters) would read past the program's
 * kernelParams, which here ends where an unreadable page begins. */
static void test_layout_forgotten_at_unload(void **state)
{
    (void)state;
    PFN_cuLaunchKernel_v4000 launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    fake_reload_kernel_fn reload = (fake_reload_kernel_fn)dlsym(drv, "fake_reload_kernel");
    assert_non_null(reload);
    static const size_t s3[] = {8, 8, 8}, s1[] = {8};
    CUfunction f = f_register("three", 3, s3, no_op);
    CUdeviceptr a = alloc(4096), b = alloc(4096), c = alloc(4096);
    void *args3[] = {&a, &b, &c};
    CUstream s = new_stream();
    assert_int_equal(launch(f, 1, 1, 1, 1, 1, 1, 0, s, args3, NULL), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuModuleUnload_v2000, "cuModuleUnload", 12000)((CUmodule)0x1000),
                     CUDA_SUCCESS);
    reload(f, "one", 1, s1, no_op);
    long page = sysconf(_SC_PAGESIZE);
    char *m =
        mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    assert_int_equal(mprotect(m + page, (size_t)page, PROT_NONE), 0);
    CUdeviceptr d = alloc(4096);
    void **args1 = (void **)(m + page - sizeof(void *));
    args1[0] = &d;
    f_reset();
    assert_int_equal(launch(f, 1, 1, 1, 1, 1, 1, 0, s, args1, NULL), CUDA_SUCCESS);
    /* read with the new layout: its one argument, d, and nothing else */
    if (mode_prefetch) {
        const CUdeviceptr bases[] = {d};
        const size_t sizes[] = {4096};
        assert_prefetched_before("cuLaunchKernel", s, bases, sizes, 1);
    }
    assert_int_equal(GET(PFN_cuLibraryUnload_v12000, "cuLibraryUnload", 12000)((CUlibrary)0x2000),
                     CUDA_SUCCESS);
    munmap(m, 2 * (size_t)page);
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

/* A stream captures without being the one named: the per-thread default
 * stream, for a _ptsz launch on stream 0, and a stream that joined a capture
 * by waiting on an event recorded in it. No migration is ordered into
 * either (an outside event would break the capture). */
static void test_no_migration_into_per_thread_or_joined_capture(void **state)
{
    (void)state;
    fake_set_capturing_fn capturing = (fake_set_capturing_fn)dlsym(drv, "fake_set_capturing");
    assert_non_null(capturing);
    int n = 8;
    CUdeviceptr a = alloc(512), b = alloc(512), c = alloc(512);
    void *args[] = {&a, &b, &c, &n};
    PFN_cuLaunchKernel_v7000_ptsz launch_pt =
        (PFN_cuLaunchKernel_v7000_ptsz)get("cuLaunchKernel", 12000, PT);
    capturing(CU_STREAM_PER_THREAD);
    f_reset();
    assert_int_equal(launch_pt(vadd_fn(), 1, 1, 1, 8, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    capturing(NULL);
    assert_int_equal(count_prefetches(), 0);
    assert_int_equal(count_calls("cuStreamWaitEvent") + count_calls("cuStreamWaitEvent_ptsz"), 0);

    CUstream s = new_stream(), t = new_stream();
    CUevent e;
    assert_int_equal(GET(PFN_cuEventCreate_v2000, "cuEventCreate", 12000)(&e, 0), CUDA_SUCCESS);
    capturing(s);
    assert_int_equal(GET(PFN_cuEventRecord_v2000, "cuEventRecord", 12000)(e, s), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuStreamWaitEvent_v3020, "cuStreamWaitEvent", 12000)(t, e, 0),
                     CUDA_SUCCESS); /* t joins the capture */
    CUdeviceptr d = alloc(512), g = alloc(512), h = alloc(512);
    void *args2[] = {&d, &g, &h, &n};
    f_reset();
    assert_int_equal(GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel",
                         12000)(vadd_fn(), 1, 1, 1, 8, 1, 1, 0, t, args2, NULL),
                     CUDA_SUCCESS);
    capturing(NULL);
    assert_int_equal(count_prefetches(), 0);
    assert_int_equal(count_calls("cuStreamWaitEvent"), 0);
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

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_paths_return_hooks),
        cmocka_unit_test(test_per_thread_variants),
        cmocka_unit_test(test_unlisted_newer_abi_passes_through),
        cmocka_unit_test(test_dlsym_next_from_caller),
        cmocka_unit_test(test_concurrent_allocations_and_launches),
        cmocka_unit_test(test_alloc_redirect_and_free),
        cmocka_unit_test(test_pitch_alloc),
        cmocka_unit_test(test_pitch_alloc_huge_width),
        cmocka_unit_test(test_budget_view_tracks_every_kind),
        cmocka_unit_test(test_launch_decodes_and_orders),
        cmocka_unit_test(test_layout_forgotten_at_unload),
        cmocka_unit_test(test_program_managed_memory),
        cmocka_unit_test(test_interior_pointer_maps_to_region),
        cmocka_unit_test(test_extra_buffer_form),
        cmocka_unit_test(test_launch_ex_and_cooperative),
        cmocka_unit_test(test_no_migration_into_a_capturing_stream),
        cmocka_unit_test(test_no_migration_into_per_thread_or_joined_capture),
        cmocka_unit_test(test_ipc_of_redirected_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
