/*
 * What the shim tracks follows the lifetime of what the driver holds, against
 * the driver double, seen through the task's budget view (cuMemGetInfo under
 * GMUX_BUDGET, which subtracts the tracked bytes):
 *   - a VMM handle mapped at two addresses is one piece of memory, counted
 *     once, from its creation until it is released and unmapped, whatever
 *     order its unmaps and its release come in; one only mapped into a
 *     sparse array (cuMemMapArrayAsync, not hooked) is counted the same;
 *   - a context destroyed (cuCtxDestroy), or the primary context reset or
 *     released for the last time, takes its allocations along: they are no
 *     longer tracked or counted, and its migration stream is not used for a
 *     context created later at the same handle;
 *   - the primary context gone, a context created at its handle is not the
 *     primary: a reset of the (inactive) primary leaves it alone;
 *   - a green context destroyed (cuGreenCtxDestroy) takes the allocations
 *     of its converted context along, and its reference to the primary
 *     context: the last one destroys the primary context too.
 * CTest runs this with LD_PRELOAD=libgmux.so, policy proactive and a budget.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "shim_harness.h"

#define MIB (1ull << 20)

static uint64_t used(void)
{
    size_t fr = 0, total = 0;
    assert_int_equal(GET(PFN_cuMemGetInfo_v3020, "cuMemGetInfo", 12000)(&fr, &total), CUDA_SUCCESS);
    uint64_t budget = (uint64_t)atoll(getenv("GMUX_BUDGET"));
    assert_int_equal(total, budget);
    return budget - fr;
}

/* --- VMM ------------------------------------------------------------------ */

typedef struct vmm {
    CUdeviceptr va[2];
    CUmemGenericAllocationHandle h;
} vmm_t;

/* One 4 MiB handle mapped at two reserved addresses. */
static void vmm_map_twice(vmm_t *v)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    PFN_cuMemAddressReserve_v10020 reserve =
        GET(PFN_cuMemAddressReserve_v10020, "cuMemAddressReserve", 12000);
    for (int i = 0; i < 2; i++)
        assert_int_equal(reserve(&v->va[i], 4 * MIB, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuMemCreate_v10020, "cuMemCreate", 12000)(&v->h, 4 * MIB, &prop, 0),
                     CUDA_SUCCESS);
    for (int i = 0; i < 2; i++)
        assert_int_equal(GET(PFN_cuMemMap_v10020, "cuMemMap", 12000)(v->va[i], 4 * MIB, 0, v->h, 0),
                         CUDA_SUCCESS);
}

static void vmm_unmap(vmm_t *v, int i)
{
    assert_int_equal(GET(PFN_cuMemUnmap_v10020, "cuMemUnmap", 12000)(v->va[i], 4 * MIB),
                     CUDA_SUCCESS);
}

static void vmm_release(vmm_t *v)
{
    assert_int_equal(GET(PFN_cuMemRelease_v10020, "cuMemRelease", 12000)(v->h), CUDA_SUCCESS);
}

static void vmm_unreserve(vmm_t *v)
{
    for (int i = 0; i < 2; i++)
        GET(PFN_cuMemAddressFree_v10020, "cuMemAddressFree", 12000)(v->va[i], 4 * MIB);
}

/* order: the steps after mapping twice, 'a' / 'b' unmap that mapping, 'r' releases. */
static void vmm_case(const char *order)
{
    uint64_t u0 = used();
    vmm_t v;
    vmm_map_twice(&v);
    assert_int_equal(used() - u0, 4 * MIB);
    int mapped = 2, released = 0;
    for (const char *s = order; *s; s++) {
        if (*s == 'r') {
            vmm_release(&v);
            released = 1;
        } else {
            vmm_unmap(&v, *s - 'a');
            mapped--;
        }
        /* counted until released and while any mapping of the handle lasts */
        assert_int_equal(used() - u0, mapped || !released ? 4 * MIB : 0);
    }
    assert_int_equal(used(), u0);
    vmm_unreserve(&v);
}

static void test_vmm_handle_mapped_twice_counts_once(void **state)
{
    (void)state;
    static const char *const orders[] = {"abr", "bar", "arb", "rab", "rba", "bra"};
    for (size_t i = 0; i < sizeof(orders) / sizeof(orders[0]); i++)
        vmm_case(orders[i]);
}

/* A handle counts from its cuMemCreate, which allocates it (cuda.h), not
 * from its first cuMemMap: memory only ever mapped into a sparse array
 * (cuMemMapArrayAsync, which the shim leaves to the driver: the double
 * succeeds) is counted once, until its release. Until 2026-12-04 a handle
 * counted only while cuMemMap mapped it, so such memory was never counted. */
static void test_vmm_handle_counted_from_create(void **state)
{
    (void)state;
    uint64_t u0 = used();
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle h;
    assert_int_equal(GET(PFN_cuMemCreate_v10020, "cuMemCreate", 12000)(&h, 4 * MIB, &prop, 0),
                     CUDA_SUCCESS);
    assert_int_equal(used() - u0, 4 * MIB);
    CUarrayMapInfo mi = {.resourceType = CU_RESOURCE_TYPE_ARRAY,
                         .resource.array = (CUarray)(uintptr_t)0x5000,
                         .subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL,
                         .subresource.miptail = {.offset = 0, .size = 4 * MIB},
                         .memOperationType = CU_MEM_OPERATION_TYPE_MAP,
                         .memHandleType = CU_MEM_HANDLE_TYPE_GENERIC,
                         .memHandle.memHandle = h};
    PFN_cuMemMapArrayAsync_v11010 map_array =
        GET(PFN_cuMemMapArrayAsync_v11010, "cuMemMapArrayAsync", 12000);
    assert_int_equal(map_array(&mi, 1, NULL), CUDA_SUCCESS);
    assert_int_equal(used() - u0, 4 * MIB); /* once */
    mi.memOperationType = CU_MEM_OPERATION_TYPE_UNMAP;
    assert_int_equal(map_array(&mi, 1, NULL), CUDA_SUCCESS);
    assert_int_equal(used() - u0, 4 * MIB); /* not released yet */
    assert_int_equal(GET(PFN_cuMemRelease_v10020, "cuMemRelease", 12000)(h), CUDA_SUCCESS);
    assert_int_equal(used(), u0);
}

/* --- contexts ------------------------------------------------------------- */

static void test_destroyed_context_forgets_its_allocations(void **state)
{
    (void)state;
    uint64_t u0 = used();
    CUdeviceptr outside = alloc(1 * MIB); /* in the default context: stays */
    CUcontext ctx;
    assert_int_equal(((PFN_cuCtxCreate_v3020)get("cuCtxCreate", 3020, LEGACY))(&ctx, 0, 0),
                     CUDA_SUCCESS);
    CUdeviceptr p = alloc(8 * MIB);
    CUdeviceptr q;
    assert_int_equal(GET(PFN_cuMemAllocAsync_v11020, "cuMemAllocAsync", 12000)(&q, 2 * MIB, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(used() - u0, 11 * MIB);
    assert_int_equal(GET(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 12000)(ctx), CUDA_SUCCESS);
    assert_int_equal(used() - u0, 1 * MIB);
    (void)p;
    assert_int_equal(GET(PFN_cuMemFree_v3020, "cuMemFree", 12000)(outside), CUDA_SUCCESS);
    assert_int_equal(used(), u0);
}

static void k_nop(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)args;
    (void)grid;
    (void)block;
}

/* The stream of the one prefetch the last launch caused (the migration stream). */
static uint64_t prefetch_stream(void)
{
    long i = find_call("cuMemPrefetchAsync_v2", 0);
    assert_true(i >= 0);
    return f_get((size_t)i)->a[3];
}

/* A context destroyed, another created at the same handle: its prefetches go
 * to a migration stream of its own, not to the dead context's. */
static void test_context_at_reused_handle_gets_own_stream(void **state)
{
    (void)state;
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)get("cuCtxCreate", 3020, LEGACY);
    PFN_cuCtxDestroy_v4000 destroy = GET(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 12000);
    PFN_cuLaunchKernel_v4000 launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    static const size_t sizes[] = {8};
    CUfunction f = f_register("one", 1, sizes, k_nop);
    CUcontext a, b;
    uint64_t streams[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(create(i ? &b : &a, 0, 0), CUDA_SUCCESS);
        CUdeviceptr p = alloc(1 * MIB);
        void *args[] = {&p};
        f_reset();
        assert_int_equal(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
        streams[i] = prefetch_stream();
        assert_int_equal(destroy(i ? b : a), CUDA_SUCCESS);
    }
    assert_ptr_equal(a, b); /* the handle came back */
    assert_true(streams[0] != streams[1]);
}

/* A long-running program creates and destroys more contexts than the
 * shim's table of context state holds (64): every context's launches still
 * get their prefetches, on a migration stream of the context's own. Before,
 * a destroyed context's entry was never used again, and from the 65th
 * context on no launch was prefetched for. */
static void test_many_contexts_keep_prefetching(void **state)
{
    (void)state;
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)get("cuCtxCreate", 3020, LEGACY);
    PFN_cuCtxDestroy_v4000 destroy = GET(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 12000);
    PFN_cuLaunchKernel_v4000 launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    static const size_t sizes[] = {8};
    CUfunction f = f_register("one", 1, sizes, k_nop);
    uint64_t last = 0;
    for (int i = 0; i < 150; i++) {
        CUcontext c;
        assert_int_equal(create(&c, 0, 0), CUDA_SUCCESS);
        CUdeviceptr p = alloc(1 * MIB);
        void *args[] = {&p};
        f_reset();
        assert_int_equal(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
        if (find_call("cuMemPrefetchAsync_v2", 0) < 0)
            fail_msg("context %d: no prefetch", i);
        uint64_t s = prefetch_stream();
        assert_true(s != last); /* the destroyed context's stream went with it */
        last = s;
        assert_int_equal(destroy(c), CUDA_SUCCESS);
    }
}

/* The primary context retained where the shim did not see it (before its
 * hooks were in place, or through a path it does not wrap: here the double's
 * own entry point), then released for the last time through the hook: the
 * context's allocations go with it. Before, the shim knew the primary
 * context's handle only from a retain it saw, and kept them tracked. Must
 * run before any retain through the hook. */
static void test_primary_released_after_unseen_retain(void **state)
{
    (void)state;
    PFN_cuDevicePrimaryCtxRetain_v7000 unseen =
        (PFN_cuDevicePrimaryCtxRetain_v7000)f_entry("cuDevicePrimaryCtxRetain");
    PFN_cuDevicePrimaryCtxRelease_v11000 release =
        GET(PFN_cuDevicePrimaryCtxRelease_v11000, "cuDevicePrimaryCtxRelease", 12000);
    uint64_t u0 = used();
    CUcontext a;
    assert_int_equal(unseen(&a, 0), CUDA_SUCCESS);
    (void)alloc(4 * MIB);
    assert_int_equal(used() - u0, 4 * MIB);
    assert_int_equal(release(0), CUDA_SUCCESS); /* the last reference */
    assert_int_equal(used(), u0);
}

static void test_primary_context_released_to_zero(void **state)
{
    (void)state;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain =
        GET(PFN_cuDevicePrimaryCtxRetain_v7000, "cuDevicePrimaryCtxRetain", 12000);
    PFN_cuDevicePrimaryCtxRelease_v11000 release =
        GET(PFN_cuDevicePrimaryCtxRelease_v11000, "cuDevicePrimaryCtxRelease", 12000);
    uint64_t u0 = used();
    CUcontext a, b;
    assert_int_equal(retain(&a, 0), CUDA_SUCCESS);
    assert_int_equal(retain(&b, 0), CUDA_SUCCESS);
    assert_ptr_equal(a, b);
    (void)alloc(4 * MIB); /* the primary context is current in the double */
    assert_int_equal(used() - u0, 4 * MIB);
    assert_int_equal(release(0), CUDA_SUCCESS); /* one reference left: still there */
    assert_int_equal(used() - u0, 4 * MIB);
    assert_int_equal(release(0), CUDA_SUCCESS); /* the last: the context goes */
    assert_int_equal(used(), u0);
}

static void retain_primary(void)
{
    CUcontext c;
    (void)GET(PFN_cuDevicePrimaryCtxRetain_v7000, "cuDevicePrimaryCtxRetain", 12000)(&c, 0);
}

/* Another thread retains the primary context right after a release destroyed
 * it (a new context then): the shim, which asks the driver after the release
 * whether that was the last one, must not see the new retain and keep the
 * gone context's allocations tracked. */
static void test_primary_retained_while_released(void **state)
{
    (void)state;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain =
        GET(PFN_cuDevicePrimaryCtxRetain_v7000, "cuDevicePrimaryCtxRetain", 12000);
    PFN_cuDevicePrimaryCtxRelease_v11000 release =
        GET(PFN_cuDevicePrimaryCtxRelease_v11000, "cuDevicePrimaryCtxRelease", 12000);
    fake_arm_last_release_fn arm = (fake_arm_last_release_fn)dlsym(drv, "fake_arm_last_release");
    fake_last_release_join_fn join =
        (fake_last_release_join_fn)dlsym(drv, "fake_last_release_join");
    assert_non_null(arm);
    assert_non_null(join);
    uint64_t u0 = used();
    CUcontext a;
    assert_int_equal(retain(&a, 0), CUDA_SUCCESS);
    (void)alloc(4 * MIB);
    assert_int_equal(used() - u0, 4 * MIB);
    arm(retain_primary);
    assert_int_equal(release(0), CUDA_SUCCESS); /* the last: the context goes */
    join();
    assert_int_equal(used(), u0);
    assert_int_equal(release(0), CUDA_SUCCESS); /* the other thread's reference */
    assert_int_equal(used(), u0);
}

static void test_primary_context_reset(void **state)
{
    (void)state;
    CUcontext a;
    assert_int_equal(
        GET(PFN_cuDevicePrimaryCtxRetain_v7000, "cuDevicePrimaryCtxRetain", 12000)(&a, 0),
        CUDA_SUCCESS);
    uint64_t u0 = used();
    (void)alloc(2 * MIB);
    CUdeviceptr m;
    assert_int_equal(GET(PFN_cuMemAllocManaged_v6000, "cuMemAllocManaged",
                         12000)(&m, 3 * MIB, CU_MEM_ATTACH_GLOBAL),
                     CUDA_SUCCESS);
    assert_int_equal(used() - u0, 5 * MIB);
    assert_int_equal(GET(PFN_cuDevicePrimaryCtxReset_v11000, "cuDevicePrimaryCtxReset", 12000)(0),
                     CUDA_SUCCESS);
    assert_int_equal(used(), u0);
}

/* --- old ABIs ------------------------------------------------------------- */

typedef CUresult (*ctx_destroy_v2000_t)(CUcontext ctx);
typedef CUresult (*primary_v7000_t)(CUdevice dev);

/* Whether p is a hook of libgmux.so rather than the double's own function. */
static int is_hook(void *p, const char *sym)
{
    return p && p != f_entry(sym);
}

/* cuCtxDestroy of CUDA 2.0, reached by an old requested version and by its
 * name: the context's allocations go with it. Before, that ABI was not hooked
 * and they stayed tracked and counted. */
static void test_old_ctx_destroy_forgets_allocations(void **state)
{
    (void)state;
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)get("cuCtxCreate", 3020, LEGACY);
    ctx_destroy_v2000_t by_version = (ctx_destroy_v2000_t)get("cuCtxDestroy", 3020, LEGACY);
    ctx_destroy_v2000_t by_name = (ctx_destroy_v2000_t)dlsym(drv, "cuCtxDestroy");
    assert_true(is_hook((void *)by_version, "cuCtxDestroy"));
    assert_ptr_equal((void *)by_version, (void *)by_name);
    /* CUDA 4.0 on: the _v2 ABI */
    assert_true(is_hook(get("cuCtxDestroy", 4000, LEGACY), "cuCtxDestroy_v2"));
    assert_true((void *)by_version != get("cuCtxDestroy", 4000, LEGACY));
    uint64_t u0 = used();
    for (int i = 0; i < 2; i++) {
        CUcontext ctx;
        assert_int_equal(create(&ctx, 0, 0), CUDA_SUCCESS);
        (void)alloc(3 * MIB);
        assert_int_equal(used() - u0, 3 * MIB);
        assert_int_equal((i ? by_name : by_version)(ctx), CUDA_SUCCESS);
        assert_int_equal(used(), u0);
    }
}

/* Releases the references to the primary context that the tests before
 * left (through the hook): none held after. */
static void primary_release_all(void)
{
    PFN_cuDevicePrimaryCtxGetState_v7000 state_of =
        GET(PFN_cuDevicePrimaryCtxGetState_v7000, "cuDevicePrimaryCtxGetState", 12000);
    unsigned flags;
    int active = 1;
    for (int i = 0; i < 64 && state_of(0, &flags, &active) == CUDA_SUCCESS && active; i++)
        assert_int_equal(
            GET(PFN_cuDevicePrimaryCtxRelease_v11000, "cuDevicePrimaryCtxRelease", 12000)(0),
            CUDA_SUCCESS);
    assert_false(active);
}

/* cuDevicePrimaryCtxRelease and cuDevicePrimaryCtxReset of CUDA 7.0 (before
 * the _v2 of 11.0), by version and by name. */
static void test_old_primary_release_and_reset(void **state)
{
    (void)state;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain =
        GET(PFN_cuDevicePrimaryCtxRetain_v7000, "cuDevicePrimaryCtxRetain", 12000);
    primary_v7000_t release = (primary_v7000_t)get("cuDevicePrimaryCtxRelease", 10000, LEGACY);
    primary_v7000_t reset = (primary_v7000_t)get("cuDevicePrimaryCtxReset", 7000, LEGACY);
    assert_true(is_hook((void *)release, "cuDevicePrimaryCtxRelease"));
    assert_true(is_hook((void *)reset, "cuDevicePrimaryCtxReset"));
    assert_ptr_equal((void *)release, dlsym(drv, "cuDevicePrimaryCtxRelease"));
    assert_ptr_equal((void *)reset, dlsym(drv, "cuDevicePrimaryCtxReset"));
    assert_true(
        is_hook(get("cuDevicePrimaryCtxRelease", 11000, LEGACY), "cuDevicePrimaryCtxRelease_v2"));
    primary_release_all();
    uint64_t u0 = used();
    CUcontext a;
    assert_int_equal(retain(&a, 0), CUDA_SUCCESS);
    (void)alloc(2 * MIB);
    assert_int_equal(used() - u0, 2 * MIB);
    assert_int_equal(release(0), CUDA_SUCCESS); /* the last reference */
    assert_int_equal(used(), u0);
    assert_int_equal(retain(&a, 0), CUDA_SUCCESS);
    (void)alloc(1 * MIB);
    assert_int_equal(used() - u0, 1 * MIB);
    assert_int_equal(reset(0), CUDA_SUCCESS);
    assert_int_equal(used(), u0);
}

/* --- the primary context's handle, once it is gone ------------------------ */

/* The primary context released for the last time, the driver may give its
 * handle to the next context created (a context's handle is its address):
 * that context is not the primary. A reset of the primary context, which
 * is not active, then destroys nothing, and the context at its old handle
 * keeps its allocations tracked and its migration stream. Before, the shim
 * kept the gone primary context's handle and forgot that context's state at
 * the reset. */
static void test_context_at_gone_primary_handle(void **state)
{
    (void)state;
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)get("cuCtxCreate", 3020, LEGACY);
    PFN_cuCtxDestroy_v4000 destroy = GET(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 12000);
    PFN_cuLaunchKernel_v4000 launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    fake_ctx_next_handle_fn next = (fake_ctx_next_handle_fn)dlsym(drv, "fake_ctx_next_handle");
    assert_non_null(next);
    static const size_t sizes[] = {8};
    CUfunction f = f_register("one", 1, sizes, k_nop);
    CUcontext primary, c;
    assert_int_equal(
        GET(PFN_cuDevicePrimaryCtxRetain_v7000, "cuDevicePrimaryCtxRetain", 12000)(&primary, 0),
        CUDA_SUCCESS);
    primary_release_all(); /* the last release: the primary context goes */
    uint64_t u0 = used();
    next(primary);
    assert_int_equal(create(&c, 0, 0), CUDA_SUCCESS);
    assert_ptr_equal(c, primary); /* its handle, another context */
    CUdeviceptr p = alloc(4 * MIB);
    void *args[] = {&p};
    f_reset();
    assert_int_equal(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    uint64_t mig = prefetch_stream();
    assert_int_equal(used() - u0, 4 * MIB);
    assert_int_equal(GET(PFN_cuDevicePrimaryCtxReset_v11000, "cuDevicePrimaryCtxReset", 12000)(0),
                     CUDA_SUCCESS);
    assert_int_equal(used() - u0, 4 * MIB); /* still c's */
    f_reset();
    assert_int_equal(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    if (find_call("cuMemPrefetchAsync_v2", 0) >= 0)
        assert_int_equal(prefetch_stream(), mig);
    assert_int_equal(count_calls("cuStreamCreate"), 0); /* its migration stream kept */
    assert_int_equal(destroy(c), CUDA_SUCCESS);
    assert_int_equal(used(), u0);
}

/* --- green contexts ------------------------------------------------------- */

static CUgreenCtx green_create(void)
{
    CUgreenCtx g;
    assert_int_equal(GET(PFN_cuGreenCtxCreate_v12040, "cuGreenCtxCreate",
                         12040)(&g, NULL, 0, CU_GREEN_CTX_DEFAULT_STREAM),
                     CUDA_SUCCESS);
    return g;
}

static void green_destroy(CUgreenCtx g)
{
    assert_int_equal(GET(PFN_cuGreenCtxDestroy_v12040, "cuGreenCtxDestroy", 12040)(g),
                     CUDA_SUCCESS);
}

/* A green context's converted context, where a program allocates and
 * launches, goes with the green context: its allocations are no longer
 * tracked or counted, and a context created at its handle later gets a
 * migration stream of its own. Before, the shim did not see
 * cuGreenCtxDestroy and kept both. */
static void test_green_context_forgets_its_allocations(void **state)
{
    (void)state;
    PFN_cuCtxPushCurrent_v4000 push = GET(PFN_cuCtxPushCurrent_v4000, "cuCtxPushCurrent", 12000);
    PFN_cuCtxPopCurrent_v4000 pop = GET(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 12000);
    PFN_cuLaunchKernel_v4000 launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    fake_ctx_next_handle_fn next = (fake_ctx_next_handle_fn)dlsym(drv, "fake_ctx_next_handle");
    assert_non_null(next);
    static const size_t sizes[] = {8};
    CUfunction f = f_register("one", 1, sizes, k_nop);
    CUcontext primary, conv, was, c;
    assert_int_equal(
        GET(PFN_cuDevicePrimaryCtxRetain_v7000, "cuDevicePrimaryCtxRetain", 12000)(&primary, 0),
        CUDA_SUCCESS);
    uint64_t u0 = used();
    CUdeviceptr outside = alloc(1 * MIB); /* in the primary context, retained: stays */
    CUgreenCtx g = green_create();
    assert_int_equal(GET(PFN_cuCtxFromGreenCtx_v12040, "cuCtxFromGreenCtx", 12040)(&conv, g),
                     CUDA_SUCCESS);
    assert_int_equal(push(conv), CUDA_SUCCESS);
    CUdeviceptr p = alloc(4 * MIB), q;
    assert_int_equal(GET(PFN_cuMemAllocAsync_v11020, "cuMemAllocAsync", 12000)(&q, 2 * MIB, NULL),
                     CUDA_SUCCESS);
    void *args[] = {&p};
    f_reset();
    assert_int_equal(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    uint64_t mig = prefetch_stream();
    assert_int_equal(pop(&was), CUDA_SUCCESS);
    assert_ptr_equal(was, conv);
    assert_int_equal(used() - u0, 7 * MIB);
    green_destroy(g);
    assert_int_equal(used() - u0, 1 * MIB);

    next(conv); /* a context at the converted context's handle: not it */
    assert_int_equal(((PFN_cuCtxCreate_v3020)get("cuCtxCreate", 3020, LEGACY))(&c, 0, 0),
                     CUDA_SUCCESS);
    assert_ptr_equal(c, conv);
    p = alloc(1 * MIB);
    f_reset();
    assert_int_equal(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    assert_true(prefetch_stream() != mig);
    assert_int_equal(GET(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 12000)(c), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuMemFree_v3020, "cuMemFree", 12000)(outside), CUDA_SUCCESS);
    assert_int_equal(used(), u0);
    primary_release_all();
}

/* A green context holds a reference to the primary context: the program's
 * own released, the green context's destruction is the last release, and
 * the primary context's allocations go too. Before, they stayed tracked. */
static void test_green_context_releases_primary(void **state)
{
    (void)state;
    primary_release_all();
    uint64_t u0 = used();
    CUcontext primary;
    assert_int_equal(
        GET(PFN_cuDevicePrimaryCtxRetain_v7000, "cuDevicePrimaryCtxRetain", 12000)(&primary, 0),
        CUDA_SUCCESS);
    (void)alloc(2 * MIB); /* the primary context is current in the double */
    CUgreenCtx g = green_create();
    /* the program's reference: the green context's remains */
    assert_int_equal(
        GET(PFN_cuDevicePrimaryCtxRelease_v11000, "cuDevicePrimaryCtxRelease", 12000)(0),
        CUDA_SUCCESS);
    assert_int_equal(used() - u0, 2 * MIB);
    green_destroy(g);
    assert_int_equal(used(), u0);
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_primary_released_after_unseen_retain), /* first: see there */
        cmocka_unit_test(test_vmm_handle_mapped_twice_counts_once),
        cmocka_unit_test(test_vmm_handle_counted_from_create),
        cmocka_unit_test(test_destroyed_context_forgets_its_allocations),
        cmocka_unit_test(test_context_at_reused_handle_gets_own_stream),
        cmocka_unit_test(test_many_contexts_keep_prefetching),
        cmocka_unit_test(test_primary_context_released_to_zero),
        cmocka_unit_test(test_primary_retained_while_released),
        cmocka_unit_test(test_primary_context_reset),
        cmocka_unit_test(test_old_ctx_destroy_forgets_allocations),
        cmocka_unit_test(test_old_primary_release_and_reset),
        cmocka_unit_test(test_context_at_gone_primary_handle),
        cmocka_unit_test(test_green_context_forgets_its_allocations),
        cmocka_unit_test(test_green_context_releases_primary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
