/*
 * CUDA arrays (cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate) are
 * device memory the shim cannot redirect: tracked as pinned and counted
 * from their create to their destroy, seen through the task's budget view
 * (cuMemGetInfo under GMUX_BUDGET, which subtracts the tracked bytes, as
 * the STATS gmuxd gets count them: gate.c). Sizes are the descriptor's:
 * width x height x depth x channels x bytes per channel, layers and cube
 * faces counted, mipmap levels summed. A failed create counts nothing, a
 * destroy of a handle the shim never saw passes through and uncounts
 * nothing, and a context destroyed takes its arrays along.
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

static uint64_t used(void)
{
    size_t fr = 0, total = 0;
    assert_int_equal(GET(PFN_cuMemGetInfo_v3020, "cuMemGetInfo", 12000)(&fr, &total), CUDA_SUCCESS);
    uint64_t budget = (uint64_t)atoll(getenv("GMUX_BUDGET"));
    assert_int_equal(total, budget);
    return budget - fr;
}

static CUarray array2d(size_t w, size_t h, CUarray_format fmt, unsigned ch)
{
    CUDA_ARRAY_DESCRIPTOR d = {.Width = w, .Height = h, .Format = fmt, .NumChannels = ch};
    CUarray a = NULL;
    assert_int_equal(GET(PFN_cuArrayCreate_v3020, "cuArrayCreate", 12000)(&a, &d), CUDA_SUCCESS);
    return a;
}

static CUarray array3d(size_t w, size_t h, size_t depth, unsigned flags)
{
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = w,
                                 .Height = h,
                                 .Depth = depth,
                                 .Format = CU_AD_FORMAT_UNSIGNED_INT16,
                                 .NumChannels = 2,
                                 .Flags = flags};
    CUarray a = NULL;
    assert_int_equal(GET(PFN_cuArray3DCreate_v3020, "cuArray3DCreate", 12000)(&a, &d),
                     CUDA_SUCCESS);
    return a;
}

static void destroy(CUarray a)
{
    assert_int_equal(GET(PFN_cuArrayDestroy_v2000, "cuArrayDestroy", 12000)(a), CUDA_SUCCESS);
}

static void test_array_counted_until_destroyed(void **state)
{
    (void)state;
    uint64_t u0 = used();
    CUarray a = array2d(100, 50, CU_AD_FORMAT_FLOAT, 4); /* 100 x 50 x 16 bytes */
    assert_int_equal(used() - u0, 80000);
    CUarray line = array2d(1000, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1); /* 1D: height 0 */
    assert_int_equal(used() - u0, 81000);
    destroy(a);
    assert_int_equal(used() - u0, 1000);
    destroy(line);
    assert_int_equal(used(), u0);
}

static void test_array3d_counts_depth_layers_and_faces(void **state)
{
    (void)state;
    uint64_t u0 = used();
    CUarray vol = array3d(64, 32, 8, 0); /* 4-byte texels */
    assert_int_equal(used() - u0, 64 * 32 * 8 * 4);
    CUarray layers = array3d(128, 0, 5, CUDA_ARRAY3D_LAYERED); /* five 1D layers */
    assert_int_equal(used() - u0, 64 * 32 * 8 * 4 + 128 * 5 * 4);
    CUarray cube = array3d(16, 16, 6, CUDA_ARRAY3D_CUBEMAP);
    assert_int_equal(used() - u0, 64 * 32 * 8 * 4 + 128 * 5 * 4 + 16 * 16 * 6 * 4);
    destroy(layers);
    destroy(vol);
    assert_int_equal(used() - u0, 16 * 16 * 6 * 4);
    destroy(cube);
    assert_int_equal(used(), u0);
    /* sparse and deferred-mapping arrays have no memory until mapped (cuMemMapArrayAsync) */
    CUarray sparse = array3d(64, 64, 1, CUDA_ARRAY3D_SPARSE);
    CUarray deferred = array3d(64, 64, 1, CUDA_ARRAY3D_DEFERRED_MAPPING);
    assert_int_equal(used(), u0);
    destroy(sparse);
    destroy(deferred);
    assert_int_equal(used(), u0);
}

static CUmipmappedArray mipmapped(size_t w, size_t h, size_t depth, unsigned flags, unsigned n)
{
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = w,
                                 .Height = h,
                                 .Depth = depth,
                                 .Format = CU_AD_FORMAT_FLOAT,
                                 .NumChannels = 1,
                                 .Flags = flags};
    CUmipmappedArray m = NULL;
    assert_int_equal(
        GET(PFN_cuMipmappedArrayCreate_v5000, "cuMipmappedArrayCreate", 12000)(&m, &d, n),
        CUDA_SUCCESS);
    return m;
}

static void mip_destroy(CUmipmappedArray m)
{
    assert_int_equal(GET(PFN_cuMipmappedArrayDestroy_v5000, "cuMipmappedArrayDestroy", 12000)(m),
                     CUDA_SUCCESS);
}

static void test_mipmapped_array_sums_its_levels(void **state)
{
    (void)state;
    uint64_t u0 = used();
    /* 64x64, 32x32, 16x16, 8x8 floats */
    CUmipmappedArray m = mipmapped(64, 64, 0, 0, 4);
    uint64_t levels = (64 * 64 + 32 * 32 + 16 * 16 + 8 * 8) * 4;
    assert_int_equal(used() - u0, levels);
    /* 3 layers of 8x4, 4x2, 2x1, 1x1: the layers stay */
    CUmipmappedArray l = mipmapped(8, 4, 3, CUDA_ARRAY3D_LAYERED, 4);
    uint64_t layered = (8 * 4 + 4 * 2 + 2 * 1 + 1 * 1) * 3 * 4;
    assert_int_equal(used() - u0, levels + layered);
    /* a volume halves its depth too: 4x4x4, 2x2x2, 1x1x1 */
    CUmipmappedArray v = mipmapped(4, 4, 4, 0, 3);
    assert_int_equal(used() - u0, levels + layered + (64 + 8 + 1) * 4);
    mip_destroy(m);
    mip_destroy(v);
    assert_int_equal(used() - u0, layered);
    mip_destroy(l);
    assert_int_equal(used(), u0);
}

/* What the driver refuses is not counted, and what the shim never saw
 * created passes through its destroy without uncounting anything. */
static void test_failed_and_unknown_count_nothing(void **state)
{
    (void)state;
    uint64_t u0 = used();
    CUarray a = (CUarray)(uintptr_t)0x1234;
    CUDA_ARRAY_DESCRIPTOR bad = {
        .Width = 64, .Height = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 3};
    assert_int_not_equal(GET(PFN_cuArrayCreate_v3020, "cuArrayCreate", 12000)(&a, &bad),
                         CUDA_SUCCESS);
    CUDA_ARRAY3D_DESCRIPTOR empty = {.Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    assert_int_not_equal(GET(PFN_cuArray3DCreate_v3020, "cuArray3DCreate", 12000)(&a, &empty),
                         CUDA_SUCCESS);
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUmipmappedArray m = NULL;
    assert_int_not_equal(
        GET(PFN_cuMipmappedArrayCreate_v5000, "cuMipmappedArrayCreate", 12000)(&m, &d, 0),
        CUDA_SUCCESS);
    assert_int_equal(used(), u0);

    CUarray kept = array2d(256, 1, CU_AD_FORMAT_UNSIGNED_INT8, 4);
    f_reset();
    /* an array handle is not a mipmapped array's, nor the other way round */
    assert_int_not_equal(GET(PFN_cuMipmappedArrayDestroy_v5000, "cuMipmappedArrayDestroy",
                             12000)((CUmipmappedArray)kept),
                         CUDA_SUCCESS);
    assert_int_not_equal(
        GET(PFN_cuArrayDestroy_v2000, "cuArrayDestroy", 12000)((CUarray)(uintptr_t)0x1234),
        CUDA_SUCCESS);
    assert_int_equal(count_calls("cuMipmappedArrayDestroy"), 1); /* both reached the driver */
    assert_int_equal(count_calls("cuArrayDestroy"), 1);
    assert_int_equal(used() - u0, 1024);
    destroy(kept);
    assert_int_equal(used(), u0);
}

/* A context destroyed takes its arrays along, in the driver and in the shim. */
static void test_destroyed_context_forgets_its_arrays(void **state)
{
    (void)state;
    uint64_t u0 = used();
    CUarray outside = array2d(512, 2, CU_AD_FORMAT_UNSIGNED_INT8, 1); /* the default context's */
    CUcontext ctx;
    assert_int_equal(((PFN_cuCtxCreate_v3020)get("cuCtxCreate", 3020, LEGACY))(&ctx, 0, 0),
                     CUDA_SUCCESS);
    (void)array2d(1024, 4, CU_AD_FORMAT_FLOAT, 1);
    (void)mipmapped(32, 0, 0, 0, 2); /* 32 + 16 floats */
    assert_int_equal(used() - u0, 1024 + 16384 + 192);
    assert_int_equal(GET(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 12000)(ctx), CUDA_SUCCESS);
    assert_int_equal(used() - u0, 1024);
    destroy(outside);
    assert_int_equal(used(), u0);
}

/* The exported ABIs are the 3.2 ones (cuda.h: cuArrayCreate is
 * cuArrayCreate_v2); 2.0's of 32-bit sizes is the driver's, never wrapped. */
static void test_array_abis_dispatched(void **state)
{
    (void)state;
    void *create = dlsym(RTLD_DEFAULT, "cuArrayCreate_v2");
    assert_non_null(create);
    assert_ptr_not_equal(create, f_entry("cuArrayCreate_v2"));
    assert_ptr_equal(get("cuArrayCreate", 12000, LEGACY), create);
    assert_ptr_equal(get("cuArrayCreate", 2000, LEGACY), f_entry("cuArrayCreate"));
    assert_ptr_equal(get("cuArray3DCreate", 12000, LEGACY),
                     dlsym(RTLD_DEFAULT, "cuArray3DCreate_v2"));
    assert_ptr_equal(get("cuArray3DCreate", 2000, LEGACY), f_entry("cuArray3DCreate"));
    assert_ptr_equal(dlsym(drv, "cuArrayDestroy"), dlsym(RTLD_DEFAULT, "cuArrayDestroy"));
    assert_ptr_not_equal(dlsym(RTLD_DEFAULT, "cuArrayDestroy"), f_entry("cuArrayDestroy"));
    assert_ptr_equal(get("cuMipmappedArrayCreate", 12000, LEGACY),
                     dlsym(RTLD_DEFAULT, "cuMipmappedArrayCreate"));
    assert_ptr_not_equal(get("cuMipmappedArrayDestroy", 12000, LEGACY),
                         f_entry("cuMipmappedArrayDestroy"));
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_array_counted_until_destroyed),
        cmocka_unit_test(test_array3d_counts_depth_layers_and_faces),
        cmocka_unit_test(test_mipmapped_array_sums_its_levels),
        cmocka_unit_test(test_failed_and_unknown_count_nothing),
        cmocka_unit_test(test_destroyed_context_forgets_its_arrays),
        cmocka_unit_test(test_array_abis_dispatched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
