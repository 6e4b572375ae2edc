/* `gmux sim`'s options are all checked before any file is read: a
 * --calibration file (missing, or one that would never finish reading) is
 * read only once every other word has been taken, and --param still wins
 * over every calibration wherever it stands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tdir.h"
#include "tproc.h"

static char out[65536], err[16384];
static char dir[] = "/tmp/gmux-sim-words-XXXXXX";
static char fifo[128], calib[128];

static int run(const char *const *args)
{
    /* a run that opened the FIFO would wait for a writer: killed at the
     * deadline, TPROC_TIMED_OUT */
    return tproc_capture_sub(GMUX_CLI_PATH, "sim", args, 30.0, out, sizeof(out), err, sizeof(err));
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(fifo, sizeof(fifo), "%s/slow.json", dir);
    snprintf(calib, sizeof(calib), "%s/c.json", dir);
    if (mkfifo(fifo, 0600) != 0)
        return -1;
    FILE *f = fopen(calib, "w");
    if (!f)
        return -1;
    fputs("{\"gmux_calibration\": 1, \"prefetch_h2d_GBps\": 30.0}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tdir_remove(dir);
}

/* A usage error after a --calibration is said as one (exit 2) with no file
 * read: gmux sim read every --calibration first, so a missing file made
 * `--calibration /nonexistent --bogus` "cannot read" with exit 1, and a
 * FIFO with no writer made it hang; a readable one was applied and said. */
static void test_usage_error_before_calibration_read(void **state)
{
    (void)state;
    const char *const files[] = {"/nonexistent/c.json", fifo, calib};
    static const struct {
        const char *words[8]; /* after --calibration FILE */
        const char *says;
    } cases[] = {
        {{"--bogus"}, "unknown option '--bogus'"},
        {{"--workload", "llm-decode", "--oversub", "bad"}, "option '--oversub' wants"},
        {{"--workload", "llm-decode", "--param", "no_such=1"}, "option '--param' wants"},
        {{"--workload", "llm-decode", "--calibration"}, "option '--calibration' needs a value"},
        {{"--quiet"}, "give exactly one of --workload and --trace"},
        {{"--workload", "llm-decode", "--plot", "p"}, "--plot names where --sweep writes"},
        {{"--workload", "llm-decode", "--set", "steps=1"}, "unknown setting 'steps'"},
        {{"--workload", "llm-decode", "--templates", "t.db", "--predict", "recorded"},
         "--templates needs the learned prediction"},
    };
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
            const char *args[12] = {"--calibration", files[f]};
            for (size_t w = 0; cases[c].words[w]; w++)
                args[2 + w] = cases[c].words[w];
            int rc = run(args);
            if (rc != 2 || !strstr(err, cases[c].says) || strstr(err, "calibrated from") ||
                strstr(err, files[f]))
                fail_msg("gmux sim --calibration %s %s ...: exit %d (wanted 2 and '%s'): %s",
                         files[f], cases[c].words[0], rc, cases[c].says, err);
        }
    }
}

/* With the options right, the file is read: a missing one is exit 1 and
 * named, whatever its place among the options. */
static void test_missing_calibration_still_said(void **state)
{
    (void)state;
    const char *const args[] = {"--workload",          "llm-decode", "--quiet", "--calibration",
                                "/nonexistent/c.json", "--policy",   "oracle",  NULL};
    assert_int_equal(run(args), 1);
    assert_non_null(strstr(err, "/nonexistent/c.json"));
}

/* --param is applied over every calibration wherever it stands; the
 * calibration applies where no --param sets the same key. */
static void test_param_wins_over_calibration(void **state)
{
    (void)state;
    static const char *const base[] = {"--workload", "llm-decode", "--set",  "tokens=2",
                                       "--quiet",    "--policy",   "oracle", NULL};
    static const char *const extra[][4] = {
        {"--calibration", calib, "--param", "h2d_gbps=7"},
        {"--param", "h2d_gbps=7", "--calibration", calib},
        {"--calibration", calib, NULL, NULL},
    };
    static const char *const want[] = {"H2D 7.0 GB/s", "H2D 7.0 GB/s", "H2D 30.0 GB/s"};
    for (size_t c = 0; c < 3; c++) {
        const char *args[16];
        size_t n = 0;
        for (size_t k = 0; k < 4 && extra[c][k]; k++)
            args[n++] = extra[c][k];
        for (size_t k = 0; base[k]; k++)
            args[n++] = base[k];
        args[n] = NULL;
        int rc = run(args);
        tproc_unwrap(out);
        if (rc != 0 || !strstr(out, want[c]) || !strstr(err, "calibrated from"))
            fail_msg("case %zu: exit %d, wanted '%s': %s%s", c, rc, want[c], out, err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_error_before_calibration_read),
        cmocka_unit_test(test_missing_calibration_still_said),
        cmocka_unit_test(test_param_wins_over_calibration),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
