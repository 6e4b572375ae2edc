/*
 * GPU probe: finds the driver the way the CUDA runtime does (dlopen of
 * libcuda.so.1), initialises it and counts devices. Exit 77 (skipped) where
 * there is no driver or no device; a failure only where a driver is present
 * and misbehaves.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_name_fn)(char *, int, int);

static void *driver;

static void test_driver_reports_devices(void **state)
{
    (void)state;
    cu_init_fn init = (cu_init_fn)dlsym(driver, "cuInit");
    cu_count_fn count = (cu_count_fn)dlsym(driver, "cuDeviceGetCount");
    cu_name_fn name = (cu_name_fn)dlsym(driver, "cuDeviceGetName");
    assert_non_null(init);
    assert_non_null(count);
    assert_non_null(name);
    int n = 0;
    assert_int_equal(count(&n), 0);
    assert_true(n > 0);
    char buf[256];
    assert_int_equal(name(buf, sizeof(buf), 0), 0);
    print_message("device 0: %s (%d devices)\n", buf, n);
}

int main(void)
{
    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
        fprintf(stderr, "no CUDA driver (libcuda.so.1): skipped\n");
        return 77;
    }
    cu_init_fn init = (cu_init_fn)dlsym(driver, "cuInit");
    cu_count_fn count = (cu_count_fn)dlsym(driver, "cuDeviceGetCount");
    int n = 0;
    if (!init || !count || init(0) != 0 || count(&n) != 0 || n == 0) {
        fprintf(stderr, "CUDA driver present but no usable GPU: skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_driver_reports_devices)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
