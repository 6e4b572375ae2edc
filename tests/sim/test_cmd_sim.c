/* Tests of `gmux sim` as a user runs it: determinism, JSON, usage errors. */
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

static char out1[65536], out2[65536], err[16384];

static int run(char *out, const char *const *args)
{
    return tproc_capture_sub(GMUX_CLI_PATH, "sim", args, 120.0, out, sizeof(out1), err,
                             sizeof(err));
}

static double json_num(const char *s, const char *key)
{
    assert_non_null(strstr(s, key));
    return tproc_json_num(s, key);
}

static void test_deterministic_table_and_json(void **state)
{
    (void)state;
    const char *args[] = {"--workload", "llm-decode", "--set",   "instances=3",
                          "--set",      "tokens=2",   "--set",   "model=llama2-7b",
                          "--oversub",  "200",        "--quiet", NULL};
    assert_int_equal(run(out1, args), 0);
    assert_int_equal(run(out2, args), 0);
    assert_string_equal(out1, out2);
    assert_non_null(strstr(out1, "transfer bound"));
    assert_non_null(strstr(out1, "proactive-lru"));
    /* learned prediction is the default (issue 4: the proactive policies use
     * predictions; the recorded ranges only score them and charge faults) */
    assert_non_null(
        strstr(out1, "proactive working sets: learned templates (online learning only)"));
    assert_non_null(strstr(out1, "predicted bytes: precision"));
    assert_non_null(strstr(out1, "proactive      copy engines busy: H2D "));
    assert_true(tproc_fits_cols(out1, 80)); /* the table's columns, the wrapped lines */
    const char *jargs[] = {"--workload",   "sci-stencil", "--set",   "tasks=2",     "--set",
                           "iterations=2", "--set",       "nz=512",  "--oversub",   "250",
                           "--param",      "h2d_gbps=40", "--param", "d2h_gbps=10", "--json",
                           "--seed",       "3",           "--quiet", NULL};
    assert_int_equal(run(out1, jargs), 0);
    assert_int_equal(run(out2, jargs), 0);
    assert_string_equal(out1, out2);
    /* one object with the required keys; no policy below the bound */
    assert_int_equal(out1[0], '{');
    double bound = json_num(out1, "\"transfer_bound_s\":");
    double oracle = json_num(out1, "\"oracle_s\":");
    assert_true(bound >= oracle && oracle > 0);
    double released = json_num(out1, "\"bound_wb_released_s\":");
    assert_true(released >= 0 && released <= bound + 1e-9);
    /* computed only when something has to be written back */
    assert_true(released == 0 || json_num(out1, "\"bound_writeback_bytes\":") > 0);
    const char *names[] = {"\"demand\":", "\"proactive\":", "\"proactive-lru\":"};
    for (int i = 0; i < 3; i++) {
        const char *p = strstr(out1, names[i]);
        assert_non_null(p);
        assert_true(json_num(p, "\"makespan_s\":") >= bound);
        assert_non_null(strstr(p, "\"bytes_h2d\":"));
        assert_non_null(strstr(p, "\"bytes_d2h\":"));
        assert_non_null(strstr(p, "\"faults\":"));
        if (i > 0) { /* the engine's copy engines: at least their bytes' time */
            double h2d = json_num(p, "\"h2d_busy_s\":"), d2h = json_num(p, "\"d2h_busy_s\":");
            assert_true(h2d >= json_num(p, "\"bytes_h2d\":") / 40e9 * 0.999);
            assert_true(d2h >= json_num(p, "\"bytes_d2h\":") / 10e9 * 0.999);
            assert_true(h2d > 0 && d2h > 0);
            /* cleaning's bytes and their fates: wasted (written again or
             * freed before an eviction) or a write-back saved (dropped) */
            double cl = json_num(p, "\"clean_bytes\":"),
                   wasted = json_num(p, "\"clean_wasted_bytes\":");
            double rw = json_num(p, "\"clean_rewritten_bytes\":"),
                   fr = json_num(p, "\"clean_freed_bytes\":");
            double dr = json_num(p, "\"clean_dropped_bytes\":");
            assert_true(wasted == rw + fr && rw + fr + dr <= cl &&
                        cl <= json_num(p, "\"bytes_d2h\":"));
            if (i == 1) /* OPT cleans here, and a cleaning pays */
                assert_true(cl > 0 && dr > 0);
        }
    }
    /* demand paging has no copy engines of gmux's: no busy figures */
    const char *dem = strstr(out1, "\"demand\":"), *pro = strstr(out1, "\"proactive\":");
    assert_true(dem < pro && strstr(dem, "busy_s") > pro);
    /* another seed gives the same report only where the workload ignores it */
    assert_true(json_num(out1, "\"oversub_pct\":") > 240);
}

static void test_usage_errors(void **state)
{
    (void)state;
    const char *a1[] = {"--workload", "llm-decode", "--param", "nope=1", NULL};
    assert_int_equal(run(out1, a1), 2);
    assert_non_null(strstr(err, "'nope'"));
    const char *a2[] = {"--workload", "llm-decode", "--policy", "magic", NULL};
    assert_int_equal(run(out1, a2), 2);
    assert_non_null(strstr(err, "'magic'"));
    /* the choices are named */
    assert_non_null(strstr(err, "(demand, proactive, proactive-lru or oracle)"));
    const char *a3[] = {NULL};
    assert_int_equal(run(out1, a3), 2);
    /* a workload or setting that does not exist is a usage error, said once */
    const char *a4[] = {"--workload", "no-such-workload", "--quiet", NULL};
    assert_int_equal(run(out1, a4), 2);
    assert_non_null(strstr(err, "gmux sim: unknown workload 'no-such-workload'"));
    const char *a6[] = {"--workload", "dl-train", "--set", "bogus=1", "--quiet", NULL};
    assert_int_equal(run(out1, a6), 2);
    assert_non_null(strstr(err, "unknown setting 'bogus' for workload dl-train (known: "));
    assert_non_null(strstr(err, "tasks, "));
    const char *a7[] = {"--workload", "dl-train", "--set", "tasks=0", "--quiet", NULL};
    assert_int_equal(run(out1, a7), 2);
    assert_non_null(strstr(err, "gmux sim: option '--set' wants KEY=VALUE, a setting of dl-train, "
                                "not 'tasks=0': setting tasks wants a whole number in [1, "));
    assert_string_equal(out1, ""); /* nothing ran */
    /* a trace that cannot be read: its path once, then why */
    const char *a5[] = {"--trace", "/nonexistent/t.bin", "--quiet", NULL};
    assert_int_equal(run(out1, a5), 1);
    assert_non_null(strstr(err, "gmux sim: /nonexistent/t.bin: No such file or directory"));
}

static void test_sweep_writes_plot(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "%s/sw", dir);
    const char *args[] = {"--workload",   "sci-sparse", "--set",         "tasks=2", "--set",
                          "iterations=1", "--set",      "rows=16777216", "--set",   "bfs-every=0",
                          "--sweep",      "--plot",     prefix,          "--quiet", NULL};
    assert_int_equal(run(out1, args), 0);
    assert_non_null(strstr(out1, "plot: "));
    char path[300];
    snprintf(path, sizeof(path), "%s.dat", prefix);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof(line), f))
        rows += line[0] != '#';
    fclose(f);
    assert_int_equal(rows, 7);                  /* 100% .. 400% by 50 */
    assert_null(strstr(err, "transfer bound")); /* --quiet */
    /* without --quiet the bounds computed before the first run are a step
     * said as such (a long one showed nothing between the profile and the
     * first "sweep 100%"; its passes are said at most once a second) */
    args[13] = NULL;
    assert_int_equal(run(out1, args), 0);
    const char *bounds = strstr(err, "gmux sim: sweep: transfer bounds of 7 sizes\n");
    const char *first = strstr(err, "gmux sim: sweep 100%\n");
    assert_true(bounds && first && bounds < first);
    const char *ext[] = {".dat", ".gp", ".png"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s%s", prefix, ext[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* A generated trace replays to the same result as the workload it came from. */
static void test_trace_replay_matches_workload(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-trace-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/t.bin", dir);
    char *gen[] = {GMUX_CLI_PATH, "trace",   "generate", "--workload", "dl-train",
                   "--set",       "tasks=2", "--set",    "steps=1",    "--set",
                   "layers=4",    "-o",      path,       NULL};
    assert_int_equal(tproc_capture(gen, NULL, 120.0, out1, sizeof(out1), err, sizeof(err)), 0);
    const char *wl[] = {"--workload", "dl-train", "--set",    "tasks=2",   "--set",
                        "steps=1",    "--set",    "layers=4", "--oversub", "250",
                        "--json",     "--quiet",  NULL};
    const char *tr[] = {"--trace", path, "--oversub", "250", "--json", "--quiet", NULL};
    assert_int_equal(run(out1, wl), 0);
    assert_int_equal(run(out2, tr), 0);
    /* everything after the input's name is identical */
    const char *a = strstr(out1, "\"seed\""), *b = strstr(out2, "\"seed\"");
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    unlink(path);
    rmdir(dir);
}

/* A tiny --oversub means a device far larger than the footprint: the capacity
 * is capped, never wrapped (footprint * 100 / 1e-10 does not fit in 64 bits:
 * it reported 0.00 GiB of device memory and an oversubscription of 118700%). */
static void test_tiny_oversub_is_no_oversubscription(void **state)
{
    (void)state;
    const char *args[] = {"--workload", "llm-decode", "--set",    "instances=1", "--set",
                          "layers=1",   "--set",      "tokens=1", "--oversub",   "1e-10",
                          "--json",     "--quiet",    "--policy", "demand",      NULL};
    assert_int_equal(run(out1, args), 0);
    double fp = json_num(out1, "\"footprint_bytes\":");
    double cap = json_num(out1, "\"capacity_bytes\":");
    assert_true(fp > 0);
    assert_true(cap >= fp);
    assert_true(json_num(out1, "\"oversub_pct\":") < 1);
    assert_null(strstr(out1, "\"error\""));
}

/* Launch times whose sum does not fit in 64 bits of nanoseconds are refused
 * with a reason (they wrapped: two launches of 2^63 ns and one of 1 us made
 * a compute time of 1 us, a transfer bound below the oracle's makespan, and
 * 'trace show' printed 0.000001 s). */
static void test_compute_time_overflow_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-ns-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/ns.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "gmux-trace 1\ntask 0 a\nkernel 0 k\nalloc 0 1 0x200000 0x200000\n");
    const char *ns[] = {"9223372036854775808", "9223372036854775808", "1000"};
    for (int i = 0; i < 3; i++)
        fprintf(f,
                "launch 0 0 grid=1,1,1 block=1,1,1 ns=%s args=p:0x200000 "
                "touch=r:0x200000+4096\n",
                ns[i]);
    fprintf(f, "end\n");
    assert_int_equal(fclose(f), 0);
    const char *args[] = {"--trace", path, "--quiet", NULL};
    assert_int_equal(run(out1, args), 1);
    assert_non_null(strstr(err, "compute time"));
    /* trace show adds them up without wrapping: 2^64 ns and 1 us */
    char *show[] = {GMUX_CLI_PATH, "trace", "show", path, NULL};
    assert_int_equal(tproc_capture(show, NULL, 60.0, out1, sizeof(out1), err, sizeof(err)), 0);
    assert_non_null(strstr(out1, "18446744073.709"));
    assert_null(strstr(out1, " 0.000001"));
    unlink(path);
    rmdir(dir);
}

/* --set seed=N is the workload's seed as much as --seed N: the report names
 * the seed the run used (it printed "seed":1 beside a run of seed 7). */
static void test_set_seed_reported(void **state)
{
    (void)state;
    const char *a[] = {"--workload",    "sci-sparse", "--set",        "tasks=1", "--set",
                       "rows=16777216", "--set",      "iterations=1", "--set",   "bfs-every=0",
                       "--json",        "--quiet",    "--policy",     "demand",  "--set",
                       "seed=7",        NULL};
    const char *b[] = {
        "--workload", "sci-sparse",   "--set",  "tasks=1",     "--set",  "rows=16777216",
        "--set",      "iterations=1", "--set",  "bfs-every=0", "--json", "--quiet",
        "--policy",   "demand",       "--seed", "7",           NULL};
    assert_int_equal(run(out1, a), 0);
    assert_int_equal(run(out2, b), 0);
    assert_non_null(strstr(out1, "\"seed\":7,"));
    assert_string_equal(out1, out2);
}

/* --lc and --prio naming a task the input does not have are refused (they
 * were ignored without a word: --lc 7 on 2 tasks ran as if not given). */
static void test_class_of_missing_task_refused(void **state)
{
    (void)state;
    const char *a[] = {"--workload", "sci-sparse",
                       "--set",      "tasks=2",
                       "--set",      "rows=16777216",
                       "--set",      "iterations=1",
                       "--set",      "bfs-every=0",
                       "--quiet",    "--lc",
                       "7",          NULL};
    assert_int_equal(run(out1, a), 1);
    assert_non_null(strstr(err, "task 7"));
    assert_non_null(strstr(err, "2 tasks"));
    const char *b[] = {"--workload",    "sci-sparse", "--set",        "tasks=2", "--set",
                       "rows=16777216", "--set",      "iterations=1", "--set",   "bfs-every=0",
                       "--quiet",       "--prio",     "2=5",          "--sweep", NULL};
    assert_int_equal(run(out1, b), 1);
    assert_non_null(strstr(err, "task 2"));
    const char *c[] = {
        "--workload", "sci-sparse",   "--set", "tasks=2",     "--set",   "rows=16777216",
        "--set",      "iterations=1", "--set", "bfs-every=0", "--quiet", "--prio",
        "1=5",        "--lc",         "0",     "--policy",    "demand",  NULL};
    assert_int_equal(run(out1, c), 0);
}

/* A fault reserve that leaves no room says so (the proactive policies failed
 * with "cannot set up the engine: invalid argument"). */
static void test_fault_reserve_too_large_named(void **state)
{
    (void)state;
    const char *a[] = {"--workload",
                       "sci-sparse",
                       "--set",
                       "tasks=1",
                       "--set",
                       "rows=16777216",
                       "--set",
                       "iterations=1",
                       "--set",
                       "bfs-every=0",
                       "--quiet",
                       "--param",
                       "fault_reserve=1000000",
                       "--oversub",
                       "150",
                       "--policy",
                       "proactive",
                       NULL};
    assert_int_equal(run(out1, a), 1);
    assert_non_null(strstr(err, "gmux sim: proactive: fault_reserve (1000000 chunks)"));
    assert_null(strstr(err, "invalid argument"));
}

/* Every chosen policy failing is a failure of the run, with each named (it
 * exited 0 with a table of "n/a" lines when no launch fit the device). */
static void test_all_policies_failing_exits_nonzero(void **state)
{
    (void)state;
    const char *a[] = {"--workload",
                       "llm-decode",
                       "--set",
                       "instances=1",
                       "--set",
                       "layers=1",
                       "--set",
                       "tokens=1",
                       "--oversub",
                       "100000",
                       "--quiet",
                       "--policy",
                       "demand,proactive",
                       NULL};
    assert_int_equal(run(out1, a), 1);
    assert_non_null(strstr(err, "gmux sim: demand: a launch touches more chunks"));
    assert_non_null(strstr(err, "gmux sim: proactive: a launch touches more chunks"));
    /* one failing policy beside one that runs is not a failure of the run */
    const char *c[] = {"--workload", "llm-decode", "--set",         "instances=1", "--set",
                       "layers=1",   "--set",      "tokens=1",      "--oversub",   "100000",
                       "--quiet",    "--policy",   "demand,oracle", NULL};
    assert_int_equal(run(out1, c), 0);
    assert_non_null(strstr(out1, "demand        n/a"));
}

/* When one launch needs more than the device memory, no policy can run and
 * the transfer bound is undefined: the table says so instead of printing a
 * bound of 0 s (and an oracle at 0.0% of it), the JSON has null for the
 * bound and its transfer terms, and the sweep's data has nan (it printed
 * "transfer bound 0.000000 s" and "transfer_bound_s":0.000000000). */
static void test_bound_undefined_when_no_launch_fits(void **state)
{
    (void)state;
    const char *a[] = {"--workload", "llm-decode", "--set",         "instances=1", "--set",
                       "layers=1",   "--set",      "tokens=1",      "--oversub",   "100000",
                       "--quiet",    "--policy",   "demand,oracle", NULL};
    assert_int_equal(run(out1, a), 0);
    assert_null(strstr(out1, "transfer bound 0."));
    assert_non_null(strstr(out1, "transfer bound undefined: a launch needs more than the "
                                 "device memory"));
    const char *row = strstr(out1, "   oracle ");
    assert_non_null(row);
    char name[32], pct_oracle[32], pct_bound[32];
    double ms;
    assert_int_equal(sscanf(row, "%31s %lf %31s %31s", name, &ms, pct_oracle, pct_bound), 4);
    assert_string_equal(pct_bound, "-");
    const char *j[] = {"--workload", "llm-decode", "--set",    "instances=1",   "--set",
                       "layers=1",   "--set",      "tokens=1", "--oversub",     "100000",
                       "--quiet",    "--json",     "--policy", "demand,oracle", NULL};
    assert_int_equal(run(out1, j), 0);
    assert_non_null(strstr(out1, "\"transfer_bound_s\":null,\"bound_exact\":null,"));
    assert_non_null(strstr(out1, "\"bound_fetch_bytes\":null,\"bound_writeback_bytes\":null"));
    assert_true(json_num(out1, "\"bound_compute_s\":") > 0); /* the compute term still holds */
    /* where it fits, numbers */
    const char *f[] = {"--workload", "llm-decode", "--set",    "instances=1", "--set",
                       "layers=1",   "--set",      "tokens=1", "--oversub",   "150",
                       "--quiet",    "--json",     NULL};
    assert_int_equal(run(out1, f), 0);
    assert_true(json_num(out1, "\"transfer_bound_s\":") > 0);
    assert_non_null(strstr(out1, "\"bound_exact\":true"));
}

/* --help names every option the parser takes, in the usage lines and with a
 * line of its own (--predict and --templates were missing from the usage,
 * --workload, --set, --trace, --param and --seed had no line). */
static void test_help_names_every_option(void **state)
{
    (void)state;
    const char *h[] = {"--help", NULL};
    assert_int_equal(run(out1, h), 0);
    char *end = strstr(out1, "\n\n");
    assert_non_null(end);
    char usage[4096];
    size_t n = (size_t)(end - out1);
    assert_true(n < sizeof(usage));
    memcpy(usage, out1, n);
    usage[n] = '\0';
    static const char *const opts[] = {"--workload", "--set",    "--trace",   "--calibration",
                                       "--param",    "--policy", "--seed",    "--oversub",
                                       "--sweep",    "--plot",   "--json",    "--lc",
                                       "--prio",     "--quiet",  "--predict", "--templates"};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        char line[64];
        snprintf(line, sizeof(line), "\n  %s ", opts[i]);
        if (!strstr(usage, opts[i]))
            fail_msg("usage lacks %s", opts[i]);
        if (!strstr(end, line))
            fail_msg("no help line for %s", opts[i]);
        /* and the parser takes it (a missing value, not an unknown option) */
        const char *a[] = {opts[i], NULL};
        int rc = run(out2, a);
        assert_int_equal(rc, 2);
        assert_null(strstr(err, "unknown option"));
    }
}

/* A --policy list is read whole, however long (it was cut at 255
 * characters: a bad name past the cut was ignored, a good one dropped). */
static void test_long_policy_list_read_whole(void **state)
{
    (void)state;
    char list[1024] = "";
    for (int i = 0; i < 40; i++)
        strcat(list, "demand,");
    assert_true(strlen(list) > 255);
    char bad[1100], good[1100];
    snprintf(bad, sizeof(bad), "%smagic", list);
    snprintf(good, sizeof(good), "%soracle", list);
    const char *a[] = {"--workload", "llm-decode", "--set",    "instances=1", "--set",
                       "layers=1",   "--set",      "tokens=1", "--quiet",     "--json",
                       "--policy",   bad,          NULL};
    assert_int_equal(run(out1, a), 2);
    assert_non_null(strstr(err, "'magic'"));
    a[11] = good;
    assert_int_equal(run(out1, a), 0);
    assert_non_null(strstr(out1, "\"oracle\":{"));
    assert_non_null(strstr(out1, "\"demand\":{"));
    assert_null(strstr(out1, "\"proactive\":{"));
}

/* The sweep's text of one file, NUL-terminated, in buf. */
static void read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static const char *const sweep_args[] = {"--workload", "sci-sparse",   "--set",   "tasks=1",
                                         "--set",      "iterations=1", "--set",   "rows=16777216",
                                         "--set",      "bfs-every=0",  "--sweep", "--quiet",
                                         "--policy",   "demand",       "--plot"};
#define NSWEEP_ARGS (sizeof(sweep_args) / sizeof(sweep_args[0]))

/* Runs the small sweep with --plot prefix; 1 when gnuplot is installed (and
 * so must have drawn the PNG). */
static int sweep_plot(const char *prefix)
{
    const char *a[NSWEEP_ARGS + 2];
    memcpy(a, sweep_args, sizeof(sweep_args));
    a[NSWEEP_ARGS] = prefix;
    a[NSWEEP_ARGS + 1] = NULL;
    assert_int_equal(run(out1, a), 0);
    char *gnuplot[] = {"gnuplot", "--version", NULL};
    char gout[256], gerr[256];
    return tproc_capture(gnuplot, NULL, 30.0, gout, sizeof(gout), gerr, sizeof(gerr)) == 0;
}

/* A --plot prefix with quotes and gnuplot's special characters is written
 * into the script quoted, so gnuplot draws the plot where asked (a ' ended
 * the script's string: gnuplot failed, reported as "not available"). */
static void test_plot_prefix_quoted(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-q-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char prefix[256], path[300];
    snprintf(prefix, sizeof(prefix), "%s/it's `x` @y \"z\" \\n", dir);
    int drawn = sweep_plot(prefix);
    snprintf(path, sizeof(path), "%s.gp", prefix);
    char gp[4096];
    read_text(path, gp, sizeof(gp));
    char want[400];
    snprintf(want, sizeof(want), "gmux_png = '%s/it''s `x` @y \"z\" \\n.png'\n", dir);
    assert_non_null(strstr(gp, want));
    snprintf(want, sizeof(want), "plot '%s/it''s `x` @y \"z\" \\n.dat' using", dir);
    assert_non_null(strstr(gp, want));
    const char *ext[] = {".dat", ".gp", ".png"};
    if (drawn) {
        snprintf(path, sizeof(path), "%s.png", prefix);
        assert_int_equal(access(path, R_OK), 0);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s%s", prefix, ext[i]);
        unlink(path);
    }
    /* a prefix that begins with '-' is a file to gnuplot, not an option */
    char cwd[1024];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(dir), 0);
    drawn = sweep_plot("-p");
    if (drawn) {
        assert_int_equal(access("-p.png", R_OK), 0);
        assert_non_null(strstr(out1, "plot: -p.png"));
    }
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "-p%s", ext[i]);
        unlink(path);
    }
    assert_int_equal(chdir(cwd), 0);
    /* a line break cannot be written into the script: refused before the run */
    snprintf(prefix, sizeof(prefix), "%s/a\nb", dir);
    const char *a[NSWEEP_ARGS + 2];
    memcpy(a, sweep_args, sizeof(sweep_args));
    a[NSWEEP_ARGS] = prefix;
    a[NSWEEP_ARGS + 1] = NULL;
    assert_int_equal(run(out1, a), 2);
    assert_non_null(strstr(err, "--plot"));
    snprintf(path, sizeof(path), "%s.dat", prefix);
    assert_int_not_equal(access(path, F_OK), 0);
    /* a folder is no prefix: "DIR/" wrote DIR/.dat, DIR/.gp and DIR/.png
     * (hidden files), as "DIR/." and "DIR/.." wrote DIR/..dat and the like;
     * refused before the run, nothing written */
    const char *const folders[] = {"", ".", ".."};
    for (size_t k = 0; k < 3; k++) {
        snprintf(prefix, sizeof(prefix), "%s/%s", dir, folders[k]);
        a[NSWEEP_ARGS] = prefix;
        assert_int_equal(run(out1, a), 2);
        assert_non_null(strstr(err, "wants the files' stem, not a folder"));
    }
    assert_int_equal(rmdir(dir), 0);
}

/* The sweep's files (PREFIX.dat, .gp, .png) are written over whatever has
 * those names: a --plot prefix that makes one of them the --trace being
 * replayed truncated the trace before the sweep read it. Refused in one line,
 * exit 2, the trace as it was (./t.dat and t.dat are the same file). */
static void test_plot_refuses_its_input(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-same-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], prefix[256];
    snprintf(path, sizeof(path), "%s/t.dat", dir);
    snprintf(prefix, sizeof(prefix), "%s/./t", dir);
    char *gen[] = {GMUX_CLI_PATH, "trace",   "generate", "--workload", "dl-train",
                   "--set",       "tasks=1", "--set",    "steps=1",    "--set",
                   "layers=2",    "-o",      path,       NULL};
    assert_int_equal(tproc_capture(gen, NULL, 120.0, out1, sizeof(out1), err, sizeof(err)), 0);
    static char before[1 << 16], after[1 << 16];
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n0 = fread(before, 1, sizeof(before), f);
    fclose(f);
    const char *args[] = {"--trace",  path,     "--sweep", "--plot", prefix,
                          "--policy", "demand", "--quiet", NULL};
    assert_int_equal(run(out1, args), 2);
    assert_non_null(strstr(err, "same file"));
    const char *nl = strchr(err, '\n');
    assert_non_null(nl);
    assert_int_equal(nl[1], '\0');
    f = fopen(path, "rb");
    assert_non_null(f);
    size_t n1 = fread(after, 1, sizeof(after), f);
    fclose(f);
    assert_int_equal(n1, n0);
    assert_memory_equal(after, before, n0);
    unlink(path);
    snprintf(path, sizeof(path), "%s/t.gp", dir);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(rmdir(dir), 0);
}

/* Every --calibration is applied, in order, so every one is an input the
 * sweep must not write over: only the last was checked, and a first one
 * named like PREFIX.gp was replaced by the sweep's script. */
static void test_plot_refuses_every_calibration(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-sim-calib-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char first[256], last[256], prefix[256];
    snprintf(first, sizeof(first), "%s/t.gp", dir);
    snprintf(last, sizeof(last), "%s/c.json", dir);
    snprintf(prefix, sizeof(prefix), "%s/t", dir);
    static const char calib[] = "{\"gmux_calibration\": 1, \"pinned_h2d_GBps\": 50.0}\n";
    const char *files[] = {first, last};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "w");
        assert_non_null(f);
        assert_int_equal(fputs(calib, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
    }
    const char *args[] = {
        "--workload", "dl-train",      "--set",  "tasks=1",       "--set", "steps=1", "--set",
        "layers=2",   "--calibration", first,    "--calibration", last,    "--sweep", "--plot",
        prefix,       "--policy",      "demand", "--quiet",       NULL};
    assert_int_equal(run(out1, args), 2);
    assert_non_null(strstr(err, "same file"));
    assert_non_null(strstr(err, first));
    char buf[256] = {0};
    FILE *f = fopen(first, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    assert_int_equal(n, strlen(calib));
    assert_string_equal(buf, calib);
    char path[300];
    snprintf(path, sizeof(path), "%s.dat", prefix);
    assert_int_equal(access(path, F_OK), -1);
    unlink(first);
    unlink(last);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_table_and_json),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_sweep_writes_plot),
        cmocka_unit_test(test_trace_replay_matches_workload),
        cmocka_unit_test(test_tiny_oversub_is_no_oversubscription),
        cmocka_unit_test(test_bound_undefined_when_no_launch_fits),
        cmocka_unit_test(test_compute_time_overflow_refused),
        cmocka_unit_test(test_set_seed_reported),
        cmocka_unit_test(test_class_of_missing_task_refused),
        cmocka_unit_test(test_fault_reserve_too_large_named),
        cmocka_unit_test(test_all_policies_failing_exits_nonzero),
        cmocka_unit_test(test_help_names_every_option),
        cmocka_unit_test(test_plot_refuses_every_calibration),
        cmocka_unit_test(test_long_policy_list_read_whole),
        cmocka_unit_test(test_plot_prefix_quoted),
        cmocka_unit_test(test_plot_refuses_its_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
