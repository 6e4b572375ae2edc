/*
 * libgmux.so of an ASan build preloaded into a program that is not ours (sh,
 * python, a CUDA application): the shim's code runs with ASan's
 * stack-use-after-return check on, as the project's own executables do
 * (cmake/asan_options.c). asan_probe stands for such a program: no sanitizer,
 * no default options; it prints the runtime's switch. A program that gives
 * ASan default options of its own keeps them (the executable comes first in
 * the dynamic lookup, before the preloaded shim), and ASAN_OPTIONS still
 * overrides both. Registered only where GMUX_SANITIZE=address. Until
 * 2026-12-04 libgmux.so carried no default options and the shim ran without
 * the check in every foreign program the tests preload it into.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tproc.h"

/* The probe's stdout, run with the shim preloaded when preload is set. */
static const char *probe(const char *exe, int preload, const char *asan_options)
{
    static char out[4096], err[16384];
    char *argv[] = {(char *)exe, NULL};
    char *env[3] = {NULL, NULL, NULL};
    char opts[256];
    snprintf(opts, sizeof(opts), "ASAN_OPTIONS=%s", asan_options);
    env[0] = opts;
    if (preload)
        env[1] = "LD_PRELOAD=" GMUX_SHIM_PATH;
    int st = tproc_capture(argv, env, 60, out, sizeof(out), err, sizeof(err));
    if (st != 0)
        fprintf(stderr, "%s: status %d, stdout: %s\nstderr: %s\n", exe, st, out, err);
    assert_int_equal(st, 0);
    return out;
}

/* As the tests preload the shim: the runtime is not first in the library
 * list, so they give verify_asan_link_order=0. */
#define TESTS_OPTIONS "verify_asan_link_order=0"

static void test_probe_is_foreign(void **state)
{
    (void)state;
    assert_string_equal(probe(ASAN_PROBE, 0, TESTS_OPTIONS), "no ASan runtime\n");
}

static void test_shim_runs_with_the_check(void **state)
{
    (void)state;
    assert_string_equal(probe(ASAN_PROBE, 1, TESTS_OPTIONS), "detect_stack_use_after_return=1\n");
}

static void test_program_own_defaults_win(void **state)
{
    (void)state;
    assert_string_equal(probe(ASAN_PROBE_OWN, 1, TESTS_OPTIONS),
                        "detect_stack_use_after_return=0\n");
}

static void test_asan_options_win(void **state)
{
    (void)state;
    assert_string_equal(probe(ASAN_PROBE, 1, TESTS_OPTIONS ":detect_stack_use_after_return=0"),
                        "detect_stack_use_after_return=0\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_is_foreign),
        cmocka_unit_test(test_shim_runs_with_the_check),
        cmocka_unit_test(test_program_own_defaults_win),
        cmocka_unit_test(test_asan_options_win),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
