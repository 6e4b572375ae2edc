/*
 * gmux-calibrate's words, run as the built program with no GPU in sight
 * (CUDA_VISIBLE_DEVICES empty): --help and --version answer, and a --size
 * that is no whole number of MiB in range is a one-line usage error, exit 2,
 * before any CUDA call (a run that reached CUDA would say "no GPU" and exit
 * 77). Until 2026-12-03 --help was a usage error and --size went through
 * strtoull unchecked: "abc", "-1" and "4x" all ran the measurements (0 MiB,
 * 2^44 MiB, 4 MiB). A --chain-trace FILE that cannot be written is said
 * before any CUDA call too (exit 1); until 2026-12-03 it was found only after
 * the whole GPU run, which then ended with exit 1 and no JSON. Built only
 * where gmux-calibrate is (nvcc and CUPTI).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmux/version.h>

#include "tproc.h"

static char out[16384], err[4096];

/* gmux-calibrate with the words (NULL-terminated, at most 6) and no GPU
 * visible: its exit status, its stdout and stderr in out and err. */
static int calibrate(const char *const *words)
{
    char *argv[8] = {GMUX_CALIBRATE_PATH};
    for (int k = 0; words[k]; k++) {
        assert_true(k < 6);
        argv[k + 1] = (char *)words[k];
    }
    char *env[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    return tproc_capture(argv, env, 60.0, out, sizeof(out), err, sizeof(err));
}

/* --help: usage, each option, the exit statuses, on stdout; also after
 * another option, and before a bad value is looked at. */
static void test_help(void **state)
{
    (void)state;
    static const char *const runs[][4] = {
        {"--help", NULL}, {"-h", NULL}, {"--size", "abc", "--help", NULL}};
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        assert_int_equal(calibrate(runs[r]), 0);
        assert_string_equal(err, "");
        static const char *const want[] = {
            "Usage: gmux-calibrate [--size MiB] [--chain-trace FILE]\n",
            "--size MiB",
            "--chain-trace FILE",
            "a whole number of MiB from",
            "(default 2048)",
            "Exit status: 0",
            "2 for a usage error",
            "1 when a\nCUDA call or kernel launch fails, or FILE cannot be written",
            "renamed over FILE only when",
            "a symbolic link stays one",
            "77 when no GPU"};
        for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
            if (!strstr(out, want[k]))
                fail_msg("gmux-calibrate %s: no '%s' in:\n%s", runs[r][0], want[k], out);
    }
}

static void test_version(void **state)
{
    (void)state;
    static const char *const runs[][2] = {{"--version", NULL}, {"-V", NULL}};
    for (size_t r = 0; r < 2; r++) {
        assert_int_equal(calibrate(runs[r]), 0);
        assert_string_equal(out, "gmux-calibrate " GMUX_VERSION_STRING "\n");
        assert_string_equal(err, "");
    }
}

/* Whether err is one line that says what and sends to --help. */
static void one_usage_line(const char *what)
{
    if (!strstr(err, what) || !strstr(err, "(see gmux-calibrate --help)\n") ||
        strchr(err, '\n') != err + strlen(err) - 1 || strncmp(err, "gmux-calibrate: ", 16) != 0)
        fail_msg("not one usage line saying '%s': '%s'", what, err);
    assert_string_equal(out, "");
}

/* Each bad --size is said in one sentence, exit 2, before CUDA is asked
 * for a GPU (which would say "no GPU" and exit 77). */
static void test_bad_size(void **state)
{
    (void)state;
    /* no whole number or junk after one; out of range or negative; past 64 bits */
    static const char *const bad[] = {"abc",
                                      "4x",
                                      "2048 MiB",
                                      "1.5",
                                      "0",
                                      "1",
                                      "-1",
                                      "-2048",
                                      "1048577",
                                      "18446744073709551616",
                                      "99999999999999999999999"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        const char *words[] = {"--size", bad[k], NULL};
        int rc = calibrate(words);
        if (rc != 2)
            fail_msg("--size '%s': exit %d, not 2 (stderr: %s)", bad[k], rc, err);
        char what[160];
        snprintf(what, sizeof(what),
                 "option '--size' wants a whole number of MiB from 2 to 1048576, not '%s'", bad[k]);
        one_usage_line(what);
    }
    static const struct {
        const char *words[3];
        const char *says;
    } other[] = {
        {{"--size", NULL}, "option '--size' needs a value"},
        {{"--size", "", NULL}, "option '--size' needs a value"},
        {{"--chain-trace", NULL}, "option '--chain-trace' needs a value"},
        {{"--sizes", "4", NULL}, "unknown option '--sizes'"},
    };
    for (size_t k = 0; k < sizeof(other) / sizeof(other[0]); k++) {
        assert_int_equal(calibrate(other[k].words), 2);
        one_usage_line(other[k].says);
    }
}

/* A --size in range (each end) is taken: the run goes on to look for a
 * GPU, finds none visible, and says it skipped (77), so the checks above
 * are what a usage error is told from a run by. The chain trace's part
 * file, created before the GPU is looked for, is removed again: the run did
 * not finish. */
static void test_good_size_reaches_gpu(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-calib-cli-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char trace[64];
    snprintf(trace, sizeof(trace), "%s/chain.txt", dir);
    static const char *const good[] = {"2", "2048", "1048576"};
    for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++) {
        const char *words[] = {"--size", good[k], "--chain-trace", trace, NULL};
        int rc = calibrate(words);
        if (rc != 77)
            fail_msg("--size %s without a GPU: exit %d, not 77 (stderr: %s)", good[k], rc, err);
        assert_non_null(strstr(err, "no GPU"));
        assert_string_equal(out, "");
        struct stat st;
        if (stat(trace, &st) == 0)
            fail_msg("--size %s without a GPU: %s left behind", good[k], trace);
    }
    /* what is not a regular file is written to, never removed: here a link
     * to /dev/null (were /dev/null itself removed, by a run as root, the
     * system would lose it) */
    char link[64];
    snprintf(link, sizeof(link), "%s/null", dir);
    assert_int_equal(symlink("/dev/null", link), 0);
    const char *words[] = {"--chain-trace", link, NULL};
    assert_int_equal(calibrate(words), 77);
    struct stat st;
    if (lstat(link, &st) != 0)
        fail_msg("a run without a GPU removed %s (a link to /dev/null)", link);
    assert_int_equal(unlink(link), 0);
    /* a trace already at the path is kept as it was: the run is written
     * beside it (FILE.part~) and renamed over it only once complete */
    FILE *f = fopen(trace, "w");
    assert_non_null(f);
    assert_int_equal(fputs("an earlier trace\n", f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    const char *again[] = {"--chain-trace", trace, NULL};
    assert_int_equal(calibrate(again), 77);
    char kept[64] = "";
    f = fopen(trace, "r");
    if (!f)
        fail_msg("a run without a GPU removed the earlier %s", trace);
    assert_non_null(fgets(kept, sizeof(kept), f));
    fclose(f);
    assert_string_equal(kept, "an earlier trace\n");
    char part[80];
    snprintf(part, sizeof(part), "%s.part~", trace);
    if (lstat(part, &st) == 0)
        fail_msg("a run without a GPU left %s behind", part);
    assert_int_equal(unlink(trace), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* A --chain-trace FILE that cannot be created is one line naming the path
 * and why, exit 1 (as --help says), before a GPU is looked for (which would
 * say "no GPU" and exit 77). */
static void test_unwritable_trace(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-calib-cli-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char missing[64];
    snprintf(missing, sizeof(missing), "%s/no-such-dir/chain.txt", dir);
    const struct {
        const char *path;
        int errnum;
    } runs[] = {{missing, ENOENT}, {dir, EISDIR}, {"/nonexistent/chain.txt", ENOENT}};
    for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
        const char *words[] = {"--chain-trace", runs[k].path, NULL};
        int rc = calibrate(words);
        if (rc != 1)
            fail_msg("--chain-trace %s: exit %d, not 1 (stderr: %s)", runs[k].path, rc, err);
        char want[256];
        snprintf(want, sizeof(want), "gmux-calibrate: cannot write chain trace '%s': %s\n",
                 runs[k].path, strerror(runs[k].errnum));
        assert_string_equal(err, want);
        assert_string_equal(out, "");
    }
    /* a dangling link into a folder that is not there: the line names that
     * folder, which the user never typed, as gmux does (until 2026-12-04 it
     * said only "No such file or directory") */
    char link[64], gone[64];
    snprintf(link, sizeof(link), "%s/link", dir);
    snprintf(gone, sizeof(gone), "%s/gone", dir);
    assert_int_equal(symlink("gone/chain.txt", link), 0);
    const char *through[] = {"--chain-trace", link, NULL};
    assert_int_equal(calibrate(through), 1);
    char said[256];
    snprintf(said, sizeof(said), "gmux-calibrate: cannot write chain trace '%s': %s: %s\n", link,
             gone, strerror(ENOENT));
    assert_string_equal(err, said);
    assert_int_equal(unlink(link), 0);
    /* a loop of links is refused before the GPU is looked for, the links
     * kept (until 2026-12-03 the run went on, and one that finished would
     * have replaced the link by a regular file) */
    char loop[64], other[64];
    snprintf(loop, sizeof(loop), "%s/loop", dir);
    snprintf(other, sizeof(other), "%s/other", dir);
    assert_int_equal(symlink("other", loop), 0);
    assert_int_equal(symlink("loop", other), 0);
    const char *words[] = {"--chain-trace", loop, NULL};
    int rc = calibrate(words);
    char want[256];
    snprintf(want, sizeof(want), "gmux-calibrate: cannot write chain trace '%s': %s\n", loop,
             strerror(ELOOP));
    if (rc != 1 || strcmp(err, want) != 0)
        fail_msg("--chain-trace (a loop of links): exit %d, not 1; stderr '%s'", rc, err);
    struct stat st;
    assert_int_equal(lstat(loop, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(unlink(loop), 0);
    assert_int_equal(unlink(other), 0);
    assert_int_equal(stat(dir, &st), 0); /* the directory is still a directory */
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_bad_size),
        cmocka_unit_test(test_good_size_reaches_gpu),
        cmocka_unit_test(test_unwritable_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
