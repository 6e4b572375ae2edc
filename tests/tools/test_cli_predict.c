/*
 * Tests of gmux profile and gmux predict-report as a user runs them: a
 * database learned from a trace file makes every templated kernel exact, the
 * report names templates and fallbacks, and a corrupt database is reported
 * (with its line) while the report goes on with online learning.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tproc.h"

static char out[65536], err[16384];
static char dir[] = "/tmp/gmux-cli-predict-XXXXXX";
static char trace[256], db[256];

static int run(const char *const *args)
{
    char *argv[16] = {GMUX_CLI_PATH};
    size_t n = 1;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    return tproc_capture(argv, NULL, 120.0, out, sizeof(out), err, sizeof(err));
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(trace, sizeof(trace), "%s/llm.trace", dir);
    snprintf(db, sizeof(db), "%s/llm.tpl", dir);
    const char *gen[] = {"trace",       "generate", "--workload", "llm-decode", "--set",
                         "instances=2", "--set",    "layers=3",   "--set",      "tokens=4",
                         "-o",          trace,      NULL};
    return run(gen) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    unlink(trace);
    unlink(db);
    rmdir(dir);
    return 0;
}

static void test_profile_then_report(void **state)
{
    (void)state;
    const char *prof[] = {"profile", trace, "-o", db, NULL};
    assert_int_equal(run(prof), 0);
    assert_non_null(strstr(out, "llm_gemm_bf16"));
    FILE *f = fopen(db, "r");
    assert_non_null(f);
    char line[128];
    assert_non_null(fgets(line, sizeof(line), f));
    assert_string_equal(line, "gmux-templates 1\n");
    fclose(f);

    const char *rep[] = {"predict-report", trace, "--templates", db, NULL};
    assert_int_equal(run(rep), 0);
    /* Exact on templated kernels, the whole-region baseline far below. */
    const char *row = strstr(out, "templated kernels");
    assert_non_null(row);
    unsigned n;
    double p, r, wp, wr;
    assert_int_equal(sscanf(row, "templated kernels %u %lf %lf | %lf %lf", &n, &p, &r, &wp, &wr),
                     5);
    assert_true(n >= 5);
    assert_true(p >= 0.95);
    assert_true(r >= 0.99);
    assert_true(wp < 0.5);
    /* The indirect kernel is a fallback, and says why. */
    assert_non_null(strstr(out, "a1:whole(irregular)"));

    /* Online learning: the templated kernels' first launches are predicted
     * whole while their templates are learnt, so over all their launches
     * precision is lower than over the launches predicted with trusted
     * templates, which are exact. */
    const char *online[] = {"predict-report", trace, NULL};
    assert_int_equal(run(online), 0);
    row = strstr(out, "templated kernels");
    assert_non_null(row);
    assert_int_equal(sscanf(row, "templated kernels %u %lf %lf | %lf %lf", &n, &p, &r, &wp, &wr),
                     5);
    const char *trow = strstr(out, "  their trusted launches");
    assert_non_null(trow);
    double tp, tr;
    assert_int_equal(sscanf(trow, "  their trusted launches %lf %lf", &tp, &tr), 2);
    assert_true(tp >= 0.95);
    assert_true(tr >= 0.99);
    assert_true(tp > p);

    const char *js[] = {"predict-report", "--workload", "llm-decode", "--set", "instances=1",
                        "--set",          "layers=2",   "--json",     NULL};
    assert_int_equal(run(js), 0);
    assert_non_null(strstr(out, "\"overall\": {\"predicted\": {\"precision\": "));
    assert_non_null(strstr(out, "\"name\": \"llm_attention_decode\""));
}

static void test_corrupt_database_goes_on(void **state)
{
    (void)state;
    char bad[256];
    snprintf(bad, sizeof(bad), "%s/bad.tpl", dir);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("gmux-templates 1\nkernel llm_rmsnorm pppvv\narg 0 T7\n", f);
    fclose(f);
    const char *rep[] = {"predict-report", trace, "--templates", bad, NULL};
    assert_int_equal(run(rep), 0);
    unlink(bad);
    assert_non_null(strstr(err, "bad.tpl:3 (byte 42): malformed template 'T7'"));
    assert_non_null(strstr(err, "going on with online learning"));
    assert_non_null(strstr(out, "templates (learned online"));
}

static void test_sim_with_templates(void **state)
{
    (void)state;
    const char *prof[] = {"profile", trace, "-o", db, NULL};
    assert_int_equal(run(prof), 0);
    const char *sim[] = {"sim", "--trace",     trace, "--policy", "proactive", "--oversub",
                         "200", "--templates", db,    "--quiet",  NULL};
    assert_int_equal(run(sim), 0);
    assert_non_null(strstr(tproc_unwrap(out), "learned templates (from "));
    assert_non_null(strstr(out, "predicted bytes: precision "));
    const char *rec[] = {"sim", "--trace",   trace,      "--policy", "proactive", "--oversub",
                         "200", "--predict", "recorded", "--quiet",  NULL};
    assert_int_equal(run(rec), 0);
    assert_non_null(strstr(out, "proactive working sets: recorded ranges"));
    /* A corrupt database: said once, with its line; the run learns online. */
    char bad[256];
    snprintf(bad, sizeof(bad), "%s/bad-sim.tpl", dir);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("gmux-templates 1\ntotal 3\n", f);
    fclose(f);
    const char *simbad[] = {"sim", "--trace",     trace, "--policy", "proactive", "--oversub",
                            "200", "--templates", bad,   "--quiet",  NULL};
    assert_int_equal(run(simbad), 0);
    unlink(bad);
    assert_non_null(strstr(err, "bad-sim.tpl:2 (byte 17): 'total' says 3 kernels"));
    assert_non_null(strstr(out, "online learning only"));
    const char *both[] = {"sim",      "--trace",     trace, "--predict",
                          "recorded", "--templates", db,    NULL};
    assert_int_equal(run(both), 2);
    const char *how[] = {"sim", "--trace", trace, "--predict", "psychic", NULL};
    assert_int_equal(run(how), 2);
    assert_non_null(strstr(err, "'psychic'"));
}

static void test_usage_errors(void **state)
{
    (void)state;
    const char *none[] = {"predict-report", NULL};
    assert_int_equal(run(none), 2);
    const char *noout[] = {"profile", trace, NULL};
    assert_int_equal(run(noout), 2);
    assert_non_null(strstr(err, "-o FILE"));
    const char *both[] = {"profile", trace, "--workload", "llm-decode", "-o", db, NULL};
    assert_int_equal(run(both), 2);
    const char *missing[] = {"predict-report", "/nonexistent.trace", NULL};
    assert_int_equal(run(missing), 1);
    assert_non_null(strstr(err, "/nonexistent.trace"));
    /* a workload setting that does not exist is the caller's mistake (it exited 1) */
    const char *badset[] = {"profile", "--workload", "dl-train", "--set",
                            "bogus=1", "-o",         db,         NULL};
    assert_int_equal(run(badset), 2);
    assert_non_null(strstr(err, "unknown setting 'bogus' for workload dl-train (known: "));
}

/* An output database that cannot be written is refused before the program
 * runs (or the trace is replayed): the program ran to its end first, its
 * templates then lost to "No such file or directory". */
static void test_profile_unwritable_output_first(void **state)
{
    (void)state;
    char marker[300];
    snprintf(marker, sizeof(marker), "%s/ran", dir);
    const char *cmd[] = {"profile", "-o", "/nonexistent/dir/x.tpl", "--", "touch", marker, NULL};
    assert_int_equal(run(cmd), 1);
    assert_non_null(strstr(err, "/nonexistent/dir/x.tpl"));
    assert_int_equal(access(marker, F_OK), -1);
    const char *tr[] = {"profile", trace, "-o", "/nonexistent/dir/x.tpl", NULL};
    assert_int_equal(run(tr), 1);
    assert_non_null(strstr(err, "/nonexistent/dir/x.tpl: No such file or directory"));
    unlink(marker);
}

/* gmux profile -o DB -- CMD records into a temporary trace under $TMPDIR:
 * one that cannot be made there was said as "cannot create a temporary
 * trace file", naming neither the folder nor why. It is named, with the
 * reason, before CMD runs. */
static void test_profile_tmpdir_named(void **state)
{
    (void)state;
    char marker[300], newdb[300];
    snprintf(marker, sizeof(marker), "%s/ran", dir);
    snprintf(newdb, sizeof(newdb), "%s/tmpdir.tpl", dir);
    char *argv[] = {GMUX_CLI_PATH, "profile", "-o", newdb, "--", "touch", marker, NULL};
    static char *const extra[] = {"TMPDIR=/nonexistent/gmux-tmpdir", NULL};
    assert_int_equal(tproc_capture(argv, extra, 60.0, out, sizeof(out), err, sizeof(err)), 1);
    assert_non_null(strstr(err, "'/nonexistent/gmux-tmpdir'"));
    assert_non_null(strstr(err, "No such file or directory"));
    const char *nl = strchr(err, '\n');
    assert_non_null(nl);
    assert_int_equal(nl[1], '\0'); /* one line */
    assert_int_equal(access(marker, F_OK), -1);
    assert_int_equal(access(newdb, F_OK), -1);
}

/* A folder given where a file is read (--templates, --calibration, a
 * trace) is said as one: "read error" or "not a gmux trace" did not say
 * what was wrong with it. */
static void test_folder_as_input_said(void **state)
{
    (void)state;
    const char *rep[] = {"predict-report", trace, "--templates", dir, NULL};
    assert_int_equal(run(rep), 0); /* the report goes on, learning online */
    assert_non_null(strstr(err, dir));
    assert_non_null(strstr(err, "Is a directory; going on with online learning"));
    const char *cal[] = {"sim", "--trace", trace, "--calibration", dir, "--quiet", NULL};
    assert_int_equal(run(cal), 1);
    assert_non_null(strstr(err, "Is a directory"));
    const char *const *reads[] = {
        (const char *[]){"sim", "--trace", dir, "--quiet", NULL},
        (const char *[]){"trace", "show", dir, NULL},
        (const char *[]){"predict-report", dir, NULL},
    };
    for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
        assert_int_equal(run(reads[i]), 1);
        assert_non_null(strstr(err, dir));
        assert_non_null(strstr(err, "Is a directory"));
        const char *nl = strchr(err, '\n');
        assert_non_null(nl);
        assert_int_equal(nl[1], '\0'); /* one line */
    }
}

static void put_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void assert_text(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, text);
}

/* The database is written once the templates are learned, to a sibling part
 * file renamed over DB: a write that fails half way (here the file size
 * limit) leaves the earlier DB whole and no part file (it truncated DB and
 * left the part written so far); a new DB appears complete, with no part
 * file beside it. */
static void test_profile_failed_write_keeps_db(void **state)
{
    (void)state;
    char part[300];
    snprintf(part, sizeof(part), "%s.part~", db);
    put_text(db, "earlier\n");
    /* SIGXFSZ ignored: the write past the limit fails with EFBIG instead */
    char script[1024];
    snprintf(script, sizeof(script), "trap '' XFSZ; ulimit -f 1; exec '%s' profile '%s' -o '%s'",
             GMUX_CLI_PATH, trace, db);
    char *const argv[] = {"sh", "-c", script, NULL};
    assert_int_equal(tproc_capture(argv, NULL, 120.0, out, sizeof(out), err, sizeof(err)), 1);
    assert_non_null(strstr(err, "write failed"));
    assert_text(db, "earlier\n");
    assert_int_equal(access(part, F_OK), -1);
    unlink(db);
    const char *prof[] = {"profile", trace, "-o", db, NULL};
    assert_int_equal(run(prof), 0);
    assert_int_equal(access(part, F_OK), -1);
    char line[64] = "";
    FILE *f = fopen(db, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_string_equal(line, "gmux-templates 1\n");
}

/* A DB replaced by gmux profile keeps its mode: the part file renamed over
 * it was created with the default mode (0666 & ~umask), so a database made
 * private (0600) or shared (0664) lost that at its next profile. A new DB
 * still gets the default. */
static void test_profile_keeps_mode(void **state)
{
    (void)state;
    const char *prof[] = {"profile", trace, "-o", db, NULL};
    static const mode_t modes[] = {0600, 0640, 0604};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        put_text(db, "earlier\n");
        assert_int_equal(chmod(db, modes[i]), 0);
        assert_int_equal(run(prof), 0);
        struct stat sb;
        assert_int_equal(stat(db, &sb), 0);
        assert_int_equal(sb.st_mode & 07777, modes[i]);
        assert_true(sb.st_size > (off_t)sizeof("earlier\n")); /* replaced */
    }
    unlink(db);
    mode_t mask = umask(0);
    umask(mask);
    assert_int_equal(run(prof), 0);
    struct stat sb;
    assert_int_equal(stat(db, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0666 & ~mask);
    unlink(db);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1u << 24);
    assert_non_null(buf);
    *len = fread(buf, 1, 1u << 24, f);
    fclose(f);
    return buf;
}

/* gmux profile TRACE -o TRACE overwrote the trace it learns from. The same
 * file under another name (./x, a hard link) is the same file: refused in
 * one line, exit 2, the trace untouched and no part file left. */
static void test_profile_refuses_its_input(void **state)
{
    (void)state;
    char dotted[300], hard[300], part[320];
    snprintf(dotted, sizeof(dotted), "%s/./llm.trace", dir);
    snprintf(hard, sizeof(hard), "%s/hard.trace", dir);
    assert_int_equal(link(trace, hard), 0);
    size_t len0, len1;
    char *before = slurp(trace, &len0);
    const char *outs[] = {trace, dotted, hard};
    for (size_t i = 0; i < 3; i++) {
        const char *prof[] = {"profile", trace, "-o", outs[i], NULL};
        assert_int_equal(run(prof), 2);
        assert_non_null(strstr(err, "same file"));
        const char *nl = strchr(err, '\n');
        assert_non_null(nl);
        assert_int_equal(nl[1], '\0'); /* one line */
        char *after = slurp(trace, &len1);
        assert_int_equal(len1, len0);
        assert_memory_equal(after, before, len0);
        free(after);
        snprintf(part, sizeof(part), "%s.part~", outs[i]);
        assert_int_equal(access(part, F_OK), -1);
    }
    free(before);
    unlink(hard);
}

#ifdef GMUX_HAVE_SHIM
/* gmux profile -o FIFO -- CMD runs CMD first: opening a FIFO nobody reads
 * blocks, and it was opened (to check it could be written) before CMD ran,
 * so CMD never ran. A run that learns nothing (CMD made no CUDA call) opens
 * the output not at all, and leaves the FIFO as it was. */
static void test_profile_fifo_runs_command_first(void **state)
{
    (void)state;
    char fifo[300], marker[300];
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    snprintf(marker, sizeof(marker), "%s/ran", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *cmd[] = {"profile", "-o", fifo, "--", "touch", marker, NULL};
    char *argv[16] = {GMUX_CLI_PATH};
    for (size_t n = 0; cmd[n]; n++)
        argv[n + 1] = (char *)cmd[n];
    /* an ASan build's shim needs its runtime, which touch does not load first */
    static char *const extra[] = {"ASAN_OPTIONS=verify_asan_link_order=0", NULL};
    int rc = tproc_capture(argv, extra, 20.0, out, sizeof(out), err, sizeof(err));
    assert_int_not_equal(rc, TPROC_TIMED_OUT);
    assert_int_equal(rc, 1);
    assert_int_equal(access(marker, F_OK), 0);
    /* and says why in the user's terms, as gmux trace -- CMD does: it named
     * its temporary trace file, "not a gmux trace" */
    assert_non_null(strstr(err, "no CUDA driver call of touch reached libgmux.so"));
    assert_null(strstr(err, "gmux-profile-"));
    struct stat sb;
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    unlink(marker);
    unlink(fifo);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_then_report),
        cmocka_unit_test(test_corrupt_database_goes_on),
        cmocka_unit_test(test_sim_with_templates),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_profile_unwritable_output_first),
        cmocka_unit_test(test_profile_tmpdir_named),
        cmocka_unit_test(test_folder_as_input_said),
        cmocka_unit_test(test_profile_failed_write_keeps_db),
        cmocka_unit_test(test_profile_keeps_mode),
        cmocka_unit_test(test_profile_refuses_its_input),
#ifdef GMUX_HAVE_SHIM
        cmocka_unit_test(test_profile_fifo_runs_command_first),
#endif
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
