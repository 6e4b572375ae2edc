/* Tests of `gmux trace` as a user runs it: generate, convert, show, errors, help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tproc.h"

static char out[65536], err[16384];

static int gmux(const char *a0, const char *a1, const char *a2, const char *a3, const char *a4,
                const char *a5, const char *a6, const char *a7)
{
    char *argv[] = {GMUX_CLI_PATH, "trace",    (char *)a0, (char *)a1, (char *)a2, (char *)a3,
                    (char *)a4,    (char *)a5, (char *)a6, (char *)a7, NULL};
    return tproc_capture(argv, NULL, 120.0, out, sizeof(out), err, sizeof(err));
}

static void tmp(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "/tmp/gmux-cli-%s-XXXXXX", tag);
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

static void test_help_and_live_recording(void **state)
{
    (void)state;
    assert_int_equal(gmux("--help", 0, 0, 0, 0, 0, 0, 0), 0);
    assert_non_null(strstr(out, "gmux trace generate"));
    assert_non_null(strstr(out, "-o FILE -- CMD"));
    assert_non_null(strstr(out, "llm-decode"));
    assert_non_null(strstr(out, "instances=8"));
    assert_int_equal(gmux("--", "ls", 0, 0, 0, 0, 0, 0), 2);
    assert_non_null(strstr(err, "recording needs -o FILE")); /* recording: tests/shim */
    assert_int_equal(gmux("frob", 0, 0, 0, 0, 0, 0, 0), 2);
    assert_non_null(strstr(err, "'frob'"));
}

static void test_generate_convert_show(void **state)
{
    (void)state;
    char t[64], b[64], t2[64];
    tmp(t, sizeof(t), "t");
    tmp(b, sizeof(b), "b");
    tmp(t2, sizeof(t2), "t2");
    assert_int_equal(
        gmux("generate", "--workload", "sci-stencil", "--set", "nz=64", "--format", "text", "-o"),
        2); /* -o without a value */
    assert_int_equal(
        gmux("generate", "--workload", "sci-stencil", "--set", "nz=64", "-o", t, "--format"), 2);
    char *argv[] = {GMUX_CLI_PATH, "trace", "generate", "--workload", "sci-stencil", "--set",
                    "nz=64",       "--set", "slab=16",  "--set",      "tasks=2",     "--format",
                    "text",        "-o",    t,          NULL};
    assert_int_equal(tproc_capture(argv, NULL, 120.0, out, sizeof(out), err, sizeof(err)), 0);
    FILE *f = fopen(t, "r");
    char line[64] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_string_equal(line, "gmux-trace 1\n");
    assert_int_equal(gmux("convert", t, t, 0, 0, 0, 0, 0), 2); /* would truncate its input */
    assert_non_null(strstr(err, "same file"));
    assert_int_equal(gmux("convert", t, b, 0, 0, 0, 0, 0), 0);
    assert_int_equal(gmux("convert", b, t2, 0, 0, 0, 0, 0), 0);
    assert_int_equal(gmux("show", b, 0, 0, 0, 0, 0, 0), 0);
    assert_non_null(strstr(out, "sci-stencil.0"));
    assert_non_null(strstr(out, "sci-stencil.1"));
    assert_non_null(strstr(out, "peak"));
    /* 64 planes / 16 per slab = 4 slabs x 4 launches x 20 sweeps */
    assert_non_null(strstr(out, "320"));
    assert_int_equal(gmux("show", t2, 0, 0, 0, 0, 0, 0), 0);
    /* bad settings and workloads are usage errors naming the word */
    assert_int_equal(gmux("generate", "--workload", "sci-stencil", "--set", "frob=1", "-o", b, 0),
                     2);
    assert_non_null(strstr(err, "'frob'"));
    assert_int_equal(gmux("generate", "--workload", "nope", "-o", b, 0, 0, 0), 2);
    assert_non_null(strstr(err, "'nope'"));
    /* a malformed file: show names the line */
    f = fopen(t, "a");
    fputs("launch 0 99 grid=1,1,1 block=1,1,1 ns=1 args=- touch=-\n", f);
    fclose(f);
    assert_int_equal(gmux("show", t, 0, 0, 0, 0, 0, 0), 1);
    assert_non_null(strstr(err, "record after the 'end' line"));
    assert_int_equal(gmux("convert", t, b, "--format", "binary", 0, 0, 0), 1);
    assert_int_equal(gmux("show", "/nonexistent/x", 0, 0, 0, 0, 0, 0), 1);
    remove(t), remove(b), remove(t2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_live_recording),
        cmocka_unit_test(test_generate_convert_show),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
