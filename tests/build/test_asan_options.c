/*
 * The ASan build's default options (cmake/asan_options.c) in effect: a read
 * of a frame that has returned is reported as stack-use-after-return, in a
 * child started with an ASAN_OPTIONS of its own as the tests give them
 * (verify_asan_link_order=0) and in one started with none. Registered only
 * where GMUX_SANITIZE=address. Until 2026-12-04 ASan's check was off: the
 * read went unreported and test_trace_opts read a dead argv under check-asan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tproc.h"

/* A pointer into this frame, dead once it returns. */
static __attribute__((noinline)) int *dead_frame(void)
{
    volatile int local[8];
    for (int i = 0; i < 8; i++)
        local[i] = 100 + i;
    int *volatile p = (int *)&local[3];
    return p;
}

/* The child: reads through the pointer; with the check on, ASan stops it. */
static int read_dead_frame(void)
{
    int *volatile p = dead_frame();
    printf("read %d\n", *p);
    return 0;
}

static void expect_report(char *const envp_extra[])
{
    char *argv[] = {"/proc/self/exe", "--read-dead-frame", NULL};
    static char out[4096], err[16384];
    int st = tproc_capture(argv, envp_extra, 60, out, sizeof(out), err, sizeof(err));
    if (!strstr(err, "stack-use-after-return"))
        fprintf(stderr, "child status %d, stdout: %s\nstderr: %s\n", st, out, err);
    assert_non_null(strstr(err, "stack-use-after-return"));
    assert_int_not_equal(st, 0);
}

static void test_reported_with_tests_asan_options(void **state)
{
    (void)state;
    char *env[] = {"ASAN_OPTIONS=verify_asan_link_order=0", NULL};
    expect_report(env);
}

static void test_reported_without_asan_options(void **state)
{
    (void)state;
    unsetenv("ASAN_OPTIONS");
    expect_report(NULL);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--read-dead-frame") == 0)
        return read_dead_frame();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reported_with_tests_asan_options),
        cmocka_unit_test(test_reported_without_asan_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
