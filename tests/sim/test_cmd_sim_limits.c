/* `gmux sim` at the edges of its inputs: traces without compute, devices
 * asked smaller than one chunk, parameters below their lower bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tdir.h"
#include "tproc.h"

static char out[65536], err[16384];

static int run(const char *const *args)
{
    return tproc_capture_sub(GMUX_CLI_PATH, "sim", args, 120.0, out, sizeof(out), err, sizeof(err));
}

/* A trace of one task, written to a fresh folder's t.txt; its launches take
 * ns each and touch one page of a chunk when touch is set. */
static void write_trace(char *dir, char *path, size_t len, const char *ns, bool touch)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, len, "%s/t.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "gmux-trace 1\ntask 0 a\nkernel 0 k\nalloc 0 1 0x200000 0x200000\n");
    for (int i = 0; i < 2; i++)
        fprintf(f, "launch 0 0 grid=1,1,1 block=1,1,1 ns=%s args=p:0x200000 touch=%s\n", ns,
                touch ? "r:0x200000+4096" : "-");
    fprintf(f, "end\n");
    assert_int_equal(fclose(f), 0);
}

static void read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Policies that ran in no time met a bound of no time: 1 in the sweep's
 * data, not the 0 that means "could not run" (every column was 0). */
static void test_sweep_without_compute(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-zero-XXXXXX", path[128], prefix[128], dat[160];
    write_trace(dir, path, sizeof(path), "0", false);
    snprintf(prefix, sizeof(prefix), "%s/sw", dir);
    const char *a[] = {"--trace", path, "--sweep", "--quiet", "--plot", prefix, NULL};
    assert_int_equal(run(a), 0);
    snprintf(dat, sizeof(dat), "%s.dat", prefix);
    char text[4096];
    read_text(dat, text, sizeof(text));
    const char *row = strstr(text, "\n100 ");
    assert_non_null(row);
    double pct, bound, v[4];
    assert_int_equal(
        sscanf(row, "%lf %lf %lf %lf %lf %lf", &pct, &bound, &v[0], &v[1], &v[2], &v[3]), 6);
    for (int i = 0; i < 4; i++)
        assert_true(v[i] == 1.0);
    assert_int_equal(tdir_remove(dir), 0);
}

/* A device asked below one chunk holds one: the report says the
 * oversubscription asked could not be had (it printed 100% for 400%). */
static void test_oversub_below_one_chunk(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-chunk-XXXXXX", path[128];
    write_trace(dir, path, sizeof(path), "1000", true);
    const char *a[] = {"--trace", path, "--oversub", "400", "--quiet", NULL};
    assert_int_equal(run(a), 0);
    assert_non_null(strstr(out, "oversubscription 100%"));
    assert_non_null(strstr(tproc_unwrap(out), "400% asked would leave less than one chunk"));
    const char *j[] = {"--trace", path, "--oversub", "400", "--quiet", "--json", NULL};
    assert_int_equal(run(j), 0);
    assert_true(tproc_json_num(out, "\"oversub_asked_pct\":") == 400.0);
    /* where the device can be had, no such note */
    const char *b[] = {"--trace", path, "--oversub", "50", "--quiet", NULL};
    assert_int_equal(run(b), 0);
    assert_null(strstr(out, "asked"));
    const char *bj[] = {"--trace", path, "--oversub", "50", "--quiet", "--json", NULL};
    assert_int_equal(run(bj), 0);
    assert_true(tproc_json_num(out, "\"oversub_asked_pct\":") == 50.0);
    /* no PCT asked (the device is hbm): named, null */
    const char *h[] = {"--trace", path, "--quiet", "--json", NULL};
    assert_int_equal(run(h), 0);
    assert_non_null(strstr(out, "\"oversub_asked_pct\":null"));
    unlink(path);
    rmdir(dir);
}

/* A positive quantum below one nanosecond is refused with its real lower
 * bound (it said "must be positive"). */
static void test_quantum_lower_bound(void **state)
{
    (void)state;
    const char *a[] = {"--workload", "llm-decode", "--param", "quantum_ms=1e-9", "--quiet", NULL};
    assert_int_equal(run(a), 2);
    assert_null(strstr(err, "positive"));
    assert_non_null(strstr(err, "quantum_ms"));
    assert_non_null(strstr(err, "1e-06"));
}

/* A sweep's rows give the oversubscription simulated: the device holds whole
 * chunks (3 chunks at 200% asked are 1, 300%) and one at least (400% asked of
 * 3 chunks). Rows were labelled with the percentage asked; a row that differs
 * is followed by a comment saying what was asked. */
static void test_sweep_rows_say_size_simulated(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-round-XXXXXX", path[128], prefix[128], dat[160];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/t.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "gmux-trace 1\ntask 0 a\nkernel 0 k\nalloc 0 1 0x200000 0x600000\n");
    for (int i = 0; i < 3; i++)
        fprintf(f,
                "launch 0 0 grid=1,1,1 block=1,1,1 ns=1000 args=p:0x200000 touch=w:0x%x+2097152\n",
                0x200000 * (i + 1));
    fprintf(f, "end\n");
    assert_int_equal(fclose(f), 0);
    snprintf(prefix, sizeof(prefix), "%s/sw", dir);
    const char *a[] = {"--trace", path, "--sweep", "--quiet", "--plot", prefix, NULL};
    assert_int_equal(run(a), 0);
    snprintf(dat, sizeof(dat), "%s.dat", prefix);
    char text[8192];
    read_text(dat, text, sizeof(text));
    /* asked 100 150 200 250 300 350 400: 3, 2, 1, 1, 1, 1 (clamped), 1 (clamped) chunks */
    static const double want[] = {100, 150, 300, 300, 300, 300, 300};
    int rows = 0;
    for (const char *l = text; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        if (*l == '#' || *l == '\n')
            continue;
        double pct;
        assert_int_equal(sscanf(l, "%lf", &pct), 1);
        assert_true(rows < 7);
        assert_true(pct > want[rows] - 0.01 && pct < want[rows] + 0.01);
        rows++;
    }
    assert_int_equal(rows, 7);
    assert_non_null(strstr(text, "\n# asked 200%: 300% simulated (whole chunks)\n"));
    assert_non_null(strstr(text, "\n# asked 400%: 300% simulated (less than one chunk asked)\n"));
    assert_null(strstr(text, "# asked 150%"));
    /* the JSON names the size asked in every row, beside the one simulated
     * (until 2026-12-01 only in the rows clamped to one chunk) */
    const char *j[] = {"--trace", path, "--sweep", "--quiet", "--json", "--plot", prefix, NULL};
    assert_int_equal(run(j), 0);
    static const double asked[] = {100, 150, 200, 250, 300, 350, 400};
    const char *at = out;
    for (int i = 0; i < 7; i++) {
        at = strstr(at, "\"oversub_pct\":");
        assert_non_null(at);
        assert_true(tproc_json_num(at, "\"oversub_pct\":") > want[i] - 0.01);
        assert_true(tproc_json_num(at, "\"oversub_pct\":") < want[i] + 0.01);
        assert_true(tproc_json_num(at, "\"oversub_asked_pct\":") == asked[i]);
        at++;
    }
    assert_null(strstr(at, "\"oversub_pct\":"));
    assert_int_equal(tdir_remove(dir), 0);
}

/* A data file that cannot be written whole (a full disk; here a link to
 * /dev/full) fails the sweep, naming the file and why, and no plot is
 * drawn or said: it exited 0 and printed "plot: PREFIX.png" after an empty
 * PREFIX.dat and PREFIX.gp (and gnuplot read /dev/full for ever). */
static void test_sweep_data_write_failure(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-full-XXXXXX", path[128], prefix[128], dat[160];
    write_trace(dir, path, sizeof(path), "1000", true);
    snprintf(prefix, sizeof(prefix), "%s/sw", dir);
    snprintf(dat, sizeof(dat), "%s.dat", prefix);
    assert_int_equal(symlink("/dev/full", dat), 0);
    const char *a[] = {"--trace", path, "--sweep", "--quiet", "--plot", prefix, NULL};
    assert_int_equal(run(a), 1);
    assert_non_null(strstr(err, dat));
    assert_non_null(strstr(err, "No space left on device"));
    assert_null(strstr(out, "plot:"));
    assert_int_equal(tdir_remove(dir), 0);
}

/* A gnuplot that a signal ends is said so, not "not available" (which is
 * for a gnuplot that cannot be started): a stand-in on PATH kills itself. */
static void test_plot_killed_gnuplot_said(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-gp-XXXXXX", path[128], prefix[128], gp[160], newpath[8192];
    write_trace(dir, path, sizeof(path), "1000", true);
    snprintf(prefix, sizeof(prefix), "%s/sw", dir);
    snprintf(gp, sizeof(gp), "%s/gnuplot", dir);
    FILE *f = fopen(gp, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nkill -KILL $$\n");
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(gp, 0755), 0);
    const char *old = getenv("PATH");
    char *saved = strdup(old ? old : "/usr/bin:/bin");
    assert_non_null(saved);
    snprintf(newpath, sizeof(newpath), "%s:%s", dir, saved);
    assert_int_equal(setenv("PATH", newpath, 1), 0);
    const char *a[] = {"--trace", path, "--sweep", "--quiet", "--plot", prefix, NULL};
    int rc = run(a);
    assert_int_equal(setenv("PATH", saved, 1), 0);
    free(saved);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "plot: gnuplot ended by signal 9"));
    assert_null(strstr(out, "not available"));
    assert_int_equal(tdir_remove(dir), 0);
}

/* A sweep interrupted while it writes PREFIX.dat leaves the earlier file as
 * it was and no part of the new one (it was written in place: half a data
 * file). The part file is a FIFO here, so the test sees the header arrive
 * and stops gmux mid-sweep on any machine. */
static void test_interrupted_sweep_keeps_data(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-intr-XXXXXX", dat[96], part[112];
    assert_non_null(mkdtemp(dir));
    snprintf(dat, sizeof(dat), "%s/sw.dat", dir);
    snprintf(part, sizeof(part), "%s.part~", dat);
    FILE *f = fopen(dat, "w");
    assert_non_null(f);
    fputs("keep\n", f);
    assert_int_equal(fclose(f), 0);
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "%s/sw", dir);
    char *argv[] = {GMUX_CLI_PATH, "sim",    "--workload", "llm-decode",
                    "--sweep",     "--plot", prefix,       NULL};
    int written;
    assert_int_equal(tproc_stop_once_written(argv, part, 120.0, &written), 128 + SIGTERM);
    assert_true(written); /* the data file's header came before the signal */
    struct stat sb;
    assert_int_not_equal(lstat(part, &sb), 0);
    char text[16] = "";
    f = fopen(dat, "r");
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof(text), f));
    fclose(f);
    assert_string_equal(text, "keep\n");
    assert_int_equal(tdir_remove(dir), 0);
}

/* Writes text to path. */
static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The sweep's script and plot, like its data file, appear whole or not at
 * all: PREFIX.gp was written in place, so a write that failed half way (a
 * full disk; here a file size limit of 1 KiB, which the data file fits and
 * the script, naming long paths, does not) left part of the new script over
 * the earlier one; gnuplot drew straight into PREFIX.png, so one that
 * failed left its output over the earlier plot. */
static void test_sweep_plot_files_replaced_whole(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-gpw-XXXXXX", path[128], trace[400], prefix[400];
    char gp[420], png[420], part[440], stand_in[160], text[64], newpath[8192];
    write_trace(dir, path, sizeof(path), "1000", true);
    char stem[201], name[251];
    memset(stem, 's', 200);
    stem[200] = '\0';
    memset(name, 't', 250); /* the script's title names the trace */
    name[250] = '\0';
    snprintf(trace, sizeof(trace), "%s/%s", dir, name);
    assert_int_equal(rename(path, trace), 0);
    snprintf(prefix, sizeof(prefix), "%s/%s", dir, stem);
    snprintf(gp, sizeof(gp), "%s.gp", prefix);
    snprintf(png, sizeof(png), "%s.png", prefix);
    write_text(gp, "keep\n");
    write_text(png, "keep\n");
    /* dash's ulimit -f counts 512-byte blocks; SIGXFSZ ignored: EFBIG */
    char *limited[] = {"/bin/sh",     "-c",      "trap '' XFSZ; ulimit -f 2 && exec \"$0\" \"$@\"",
                       GMUX_CLI_PATH, "sim",     "--trace",
                       trace,         "--sweep", "--quiet",
                       "--policy",    "demand",  "--plot",
                       prefix,        NULL};
    assert_int_equal(tproc_capture(limited, NULL, 120.0, out, sizeof(out), err, sizeof(err)), 1);
    assert_non_null(strstr(err, "cannot write"));
    read_text(gp, text, sizeof(text));
    assert_string_equal(text, "keep\n");
    read_text(png, text, sizeof(text));
    assert_string_equal(text, "keep\n");
    snprintf(part, sizeof(part), "%s.part~", gp);
    assert_int_not_equal(access(part, F_OK), 0);
    /* a gnuplot that fails after drawing (a stand-in on PATH runs the real
     * one, then exits 3): the earlier plot stays */
    char *version[] = {"gnuplot", "--version", NULL};
    char gout[256], gerr[256];
    if (tproc_capture(version, NULL, 30.0, gout, sizeof(gout), gerr, sizeof(gerr)) == 0) {
        const char *old = getenv("PATH");
        char *saved = strdup(old ? old : "/usr/bin:/bin");
        assert_non_null(saved);
        snprintf(stand_in, sizeof(stand_in), "%s/gnuplot", dir);
        FILE *f = fopen(stand_in, "w");
        assert_non_null(f);
        fprintf(f, "#!/bin/sh\nPATH='%s' gnuplot \"$@\"\nexit 3\n", saved);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(chmod(stand_in, 0755), 0);
        snprintf(newpath, sizeof(newpath), "%s:%s", dir, saved);
        assert_int_equal(setenv("PATH", newpath, 1), 0);
        const char *a[] = {"--trace", trace,    "--sweep", "--quiet", "--policy",
                           "demand",  "--plot", prefix,    NULL};
        int rc = run(a);
        assert_int_equal(setenv("PATH", saved, 1), 0);
        free(saved);
        assert_int_equal(rc, 0);
        assert_non_null(strstr(out, "plot: gnuplot failed (exit 3)"));
        read_text(png, text, sizeof(text));
        assert_string_equal(text, "keep\n");
        snprintf(part, sizeof(part), "%s.part~", png);
        assert_int_not_equal(access(part, F_OK), 0);
        read_text(gp, text, sizeof(text)); /* the script was written whole */
        assert_string_not_equal(text, "keep\n");
    }
    assert_int_equal(tdir_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_rows_say_size_simulated),
        cmocka_unit_test(test_sweep_without_compute),
        cmocka_unit_test(test_oversub_below_one_chunk),
        cmocka_unit_test(test_quantum_lower_bound),
        cmocka_unit_test(test_sweep_data_write_failure),
        cmocka_unit_test(test_plot_killed_gnuplot_said),
        cmocka_unit_test(test_interrupted_sweep_keeps_data),
        cmocka_unit_test(test_sweep_plot_files_replaced_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
