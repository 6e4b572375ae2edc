/*
 * The CUPTI side of the shim without CUPTI: synthetic unified-memory counter
 * records fed to shim_cupti_account() must reach the stats (faults, bytes
 * each way), and their fault addresses must be handed over once, in order,
 * at the next probe (attribution to exactly one launch), becoming page
 * ranges clipped to the allocations; kernel records must add up to the
 * compute time the recorder takes. Builds where cupti.h exists.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <cupti.h>

#include "shim/cupti.h"
#include "shim/record_ranges.h"
#include "shim/stats.h"

static void feed(CUpti_ActivityUnifiedMemoryCounterKind kind, uint64_t value, uint64_t addr)
{
    CUpti_ActivityUnifiedMemoryCounter3 r;
    memset(&r, 0, sizeof(r));
    r.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
    r.counterKind = kind;
    r.value = value;
    r.address = addr;
    shim_cupti_account(&r);
}

static uint64_t stat(_Atomic uint64_t *c)
{
    return atomic_load(c);
}

static void test_records_to_stats_and_ranges(void **state)
{
    (void)state;
    memset(&shim_stats, 0, sizeof(shim_stats));
    feed(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, 2, 0x200010);
    feed(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, 1, 0x200ff0); /* same page */
    feed(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, 1, 0x205000);
    feed(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, 1, 0x900000); /* elsewhere */
    feed(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, 65536, 0x200000);
    feed(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH, 4096, 0x200000);
    CUpti_ActivityMemcpy6 m; /* a record of another kind is ignored */
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.bytes = 1u << 20;
    shim_cupti_account(&m);

    assert_int_equal(stat(&shim_stats.um_faults), 5);
    assert_int_equal(stat(&shim_stats.um_bytes_htod), 65536);
    assert_int_equal(stat(&shim_stats.um_bytes_dtoh), 4096);

    uint64_t addrs[16], lost = 99;
    size_t n = shim_cupti_take_faults(addrs, 16, &lost);
    assert_int_equal(n, 4);
    assert_int_equal(lost, 0);
    assert_int_equal(addrs[0], 0x200010);
    assert_int_equal(addrs[3], 0x900000);
    /* taken once: the next probe's launch gets none of them */
    assert_int_equal(shim_cupti_take_faults(addrs, 16, &lost), 0);

    eng_range_t pages[16], clipped[16];
    size_t np = shim_rec_ranges_from_faults(addrs, n, 4096, pages, 16);
    assert_int_equal(np, 3);
    const shim_rec_alloc_t live[] = {{.id = 0, .base = 0x200000, .size = 0x5800}};
    size_t nc = shim_rec_ranges_clip(pages, np, live, 1, clipped, 16);
    assert_int_equal(nc, 2);
    assert_int_equal(clipped[0].addr, 0x200000);
    assert_int_equal(clipped[0].len, 4096);
    assert_int_equal(clipped[1].addr, 0x205000);
    assert_int_equal(clipped[1].len, 0x800); /* the allocation ends mid-page */
}

/* Kernel records add up to the recorder's compute time, taken once. */
static void test_kernel_records_to_time(void **state)
{
    (void)state;
    (void)shim_cupti_take_kernel_ns(NULL);
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1000;
    k.end = 4500;
    shim_cupti_account(&k);
    k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
    k.start = 10000;
    k.end = 10250;
    shim_cupti_account(&k);
    k.start = 7; /* a record whose clock went backwards counts as one of no time */
    k.end = 3;
    shim_cupti_account(&k);
    uint64_t n = 0;
    assert_int_equal(shim_cupti_take_kernel_ns(&n), 3750);
    assert_int_equal(n, 3);
    assert_int_equal(shim_cupti_take_kernel_ns(&n), 0);
    assert_int_equal(n, 0);
}

static void test_overflow_is_counted(void **state)
{
    (void)state;
    for (uint64_t i = 0; i < 70000; i++)
        feed(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, 1, i * 4096);
    uint64_t addrs[10], lost = 0;
    assert_int_equal(shim_cupti_take_faults(addrs, 10, &lost), 10);
    assert_int_equal(lost, 70000 - 10);
    assert_int_equal(addrs[9], 9 * 4096);
    assert_int_equal(shim_cupti_take_faults(addrs, 10, &lost), 0);
    assert_int_equal(lost, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_to_stats_and_ranges),
        cmocka_unit_test(test_kernel_records_to_time),
        cmocka_unit_test(test_overflow_is_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
