/*
 * Recording a real program through libgmux.so, against the driver double:
 * `gmux trace -o FILE -- shim_trace_prog` writes a trace whose allocations,
 * launches (kernel names, grid, block, decoded arguments) and touched ranges
 * (from the double's fake CUPTI) match what the program did; the trace
 * replays in `gmux sim` and `gmux trace show`; `gmux profile -o DB -- prog`
 * writes a database that loads and holds a learned template.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/predictor.h"
#include "engine/template_db.h"
#include "sim/trace_io.h"
#include "tlinks.h"
#include "tproc.h"

static char trace_path[128], db_path[128], stats_path[128];
static char out[65536], err[65536];
static uint64_t vmm_base; /* the program's VMM mapping, from the last record() */

static int run(char *const argv[])
{
    out[0] = err[0] = '\0';
    int st = tproc_capture(argv, NULL, 120.0, out, sizeof(out), err, sizeof(err));
    if (st != 0)
        fprintf(stderr, "%s: status %d\nstdout:\n%s\nstderr:\n%s\n", argv[1], st, out, err);
    return st;
}

/* A counter of the shim's stats file, or -1. */
static long long stats_counter(const char *name)
{
    FILE *f = fopen(stats_path, "r");
    if (!f)
        return -1;
    char text[4096];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    char key[64];
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *p = strstr(text, key);
    return p ? atoll(p + strlen(key)) : -1;
}

/* Records the program; returns the addresses it printed. */
static void record(const char *format, int ranges, uint64_t *a, uint64_t *b)
{
    char *const with[] = {GMUX_BIN, "trace",    "--format", (char *)format, "-o", trace_path,
                          "--",     TRACE_PROG, NULL};
    char *const without[] = {GMUX_BIN, "trace",    "--no-ranges", "--format", (char *)format,
                             "-o",     trace_path, "--",          TRACE_PROG, NULL};
    unlink(stats_path);
    setenv("GMUX_SHIM_STATS", stats_path, 1);
    assert_int_equal(run(ranges ? with : without), 0);
    unsetenv("GMUX_SHIM_STATS");
    /* probing starts each launch from host-resident data: 6 scale launches move
     * a and b back, fill and the two peeks b, 15 in all; without probes none */
    assert_int_equal(stats_counter("trace_evictions"), ranges ? 15 : 0);
    unsigned long long x = 0, y = 0, v = 0;
    /* with ranges the program runs twice (timing pass, then the recording
     * one): the trace holds the addresses of the last run */
    const char *p = strstr(out, "a="), *q;
    assert_non_null(p);
    while ((q = strstr(p + 2, "a=")) != NULL)
        p = q;
    assert_int_equal(sscanf(p, "a=%llu b=%llu v=%llu", &x, &y, &v), 3);
    /* a recorded program runs alone: it never asks gmuxd for turns */
    assert_non_null(strstr(p, " gate=0\n"));
    *a = x;
    *b = y;
    vmm_base = v;
}

static const eng_range_t *find_range(const sim_launch_ev_t *l, uint64_t addr)
{
    for (uint32_t i = 0; i < l->nranges; i++)
        if (l->ranges[i].addr == addr)
            return &l->ranges[i];
    return NULL;
}

/* peek_ns: the time both peek launches must carry (0 without ranges). */
static void check_trace(uint64_t a, uint64_t b, int ranges, uint64_t peek_ns)
{
    char e[512];
    sim_source_t *src;
    assert_int_equal(sim_trace_open(trace_path, &src, e, sizeof(e)), GMUX_OK);
    assert_int_equal(src->ntasks, 1);
    assert_int_equal(src->nkernels, 3);
    assert_string_equal(src->kernel_names[0], "scale");
    assert_string_equal(src->kernel_names[1], "fill");
    assert_string_equal(src->kernel_names[2], "peek");
    const char *name = src->task_names[0];
    size_t nl = strlen(name);
    int marked = nl > 9 && strcmp(name + nl - 9, "~noranges") == 0;
    assert_int_equal(marked, !ranges);

    sim_event_t ev;
    uint64_t id_a, id_b;
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(ev.kind, SIM_EV_ALLOC);
    assert_int_equal(ev.u.alloc.base, a);
    assert_int_equal(ev.u.alloc.size, 4096);
    id_a = ev.u.alloc.id;
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(ev.kind, SIM_EV_ALLOC);
    assert_int_equal(ev.u.alloc.base, b);
    assert_int_equal(ev.u.alloc.size, 4096);
    id_b = ev.u.alloc.id;
    assert_true(id_a != id_b);
    for (uint64_t k = 1; k <= 6; k++) {
        assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
        assert_int_equal(ev.kind, SIM_EV_LAUNCH);
        const sim_launch_ev_t *l = &ev.u.launch;
        assert_int_equal(l->kernel, 0);
        assert_int_equal(l->grid[0], k);
        assert_int_equal(l->grid[1], 1);
        assert_int_equal(l->block[0], 128);
        /* probing measures each kernel's time (the double's fake_spend) */
        assert_int_equal(l->time_ns, ranges ? 10 * 128 * k : 0);
        assert_int_equal(l->nargs, 3);
        assert_int_equal(l->args[0].kind, ENG_ARG_PTR);
        assert_int_equal(l->args[0].value, a);
        assert_int_equal(l->args[1].kind, ENG_ARG_PTR);
        assert_int_equal(l->args[1].value, b);
        assert_int_equal(l->args[2].kind, ENG_ARG_VAL);
        assert_int_equal(l->args[2].value, 128 * k);
        if (!ranges) {
            assert_int_equal(l->nranges, 0);
            continue;
        }
        assert_int_equal(l->nranges, 2);
        const eng_range_t *ra = find_range(l, a), *rb = find_range(l, b);
        assert_non_null(ra);
        assert_non_null(rb);
        assert_int_equal(ra->len, 128 * k * 4);
        assert_int_equal(ra->mode, ENG_ACCESS_READ);
        assert_int_equal(rb->len, 128 * k * 4);
        assert_int_equal(rb->mode, ENG_ACCESS_WRITE);
    }
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(ev.kind, SIM_EV_LAUNCH);
    assert_int_equal(ev.u.launch.kernel, 1);
    assert_int_equal(ev.u.launch.grid[1], 2);
    assert_int_equal(ev.u.launch.grid[2], 3);
    assert_int_equal(ev.u.launch.block[0], 32);
    assert_int_equal(ev.u.launch.block[1], 4);
    assert_int_equal(ev.u.launch.nargs, 2);
    assert_int_equal(ev.u.launch.args[0].value, b);
    assert_int_equal(ev.u.launch.args[1].kind, ENG_ARG_VAL);
    assert_int_equal(ev.u.launch.args[1].value, 64);
    assert_int_equal(ev.u.launch.nranges, ranges ? 1 : 0);
    if (ranges) {
        assert_int_equal(ev.u.launch.ranges[0].addr, b);
        assert_int_equal(ev.u.launch.ranges[0].len, 256);
    }
    assert_int_equal(ev.u.launch.time_ns, ranges ? 777 : 0);
    /* peek, twice with one shape: times from the timing pass (250 ns), or,
     * when that pass differed, the fault-free twin's (300 ns) in place of the
     * faulted launch's 5000 */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
        assert_int_equal(ev.kind, SIM_EV_LAUNCH);
        assert_int_equal(ev.u.launch.kernel, 2);
        assert_int_equal(ev.u.launch.nranges, ranges && i == 0 ? 1 : 0);
        assert_int_equal(ev.u.launch.time_ns, peek_ns);
    }
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(ev.kind, SIM_EV_FREE);
    assert_int_equal(ev.u.free.id, id_a);
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(ev.kind, SIM_EV_FREE);
    assert_int_equal(ev.u.free.id, id_b);
    /* the VMM mapping: allocated at its map, freed at its unmap */
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(ev.kind, SIM_EV_ALLOC);
    assert_int_equal(ev.u.alloc.base, vmm_base);
    assert_int_equal(ev.u.alloc.size, 2 << 20);
    uint64_t id_v = ev.u.alloc.id;
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(ev.kind, SIM_EV_FREE);
    assert_int_equal(ev.u.free.id, id_v);
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_ERR_NOT_FOUND);
    sim_source_close(src);
}

static void test_trace_text_with_ranges(void **state)
{
    (void)state;
    uint64_t a, b;
    record("text", 1, &a, &b);
    sim_trace_format_t f;
    char e[256];
    assert_int_equal(sim_trace_detect(trace_path, &f, e, sizeof(e)), GMUX_OK);
    assert_int_equal(f, SIM_TRACE_TEXT);
    check_trace(a, b, 1, 250);
}

static void test_trace_binary_without_ranges(void **state)
{
    (void)state;
    uint64_t a, b;
    record("binary", 0, &a, &b);
    sim_trace_format_t f;
    char e[256];
    assert_int_equal(sim_trace_detect(trace_path, &f, e, sizeof(e)), GMUX_OK);
    assert_int_equal(f, SIM_TRACE_BINARY);
    check_trace(a, b, 0, 0);
}

/* The program forks a child that exits normally while the text trace's
 * stdio buffer holds its header and events: the child's exit must not write
 * them into the file a second time. */
static void test_trace_survives_fork(void **state)
{
    (void)state;
    setenv("TRACE_PROG_FORK", "1", 1);
    uint64_t a, b;
    record("text", 1, &a, &b);
    unsetenv("TRACE_PROG_FORK");
    check_trace(a, b, 1, 250);
}

/* Another thread of the program captures a graph in mode GLOBAL through all
 * its launches: the recorder's probe synchronizes after each launch, a
 * potentially unsafe call that, made in the thread's default GLOBAL mode,
 * invalidates that capture (the program exits 23). The recorder makes it in
 * RELAXED mode (the program exits 25 if no such call went through RELAXED
 * during the capture) and restores the thread's mode. */
static void test_trace_capture_survives(void **state)
{
    (void)state;
    setenv("TRACE_PROG_CAPTURE", "1", 1);
    uint64_t a, b;
    record("text", 1, &a, &b);
    check_trace(a, b, 1, 250);
}

static int unset_capture(void **state)
{
    (void)state;
    unsetenv("TRACE_PROG_CAPTURE");
    return 0;
}

/* Records the program (text, no ranges) with env=1 set, and opens the trace. */
static sim_source_t *record_text_with(const char *env)
{
    setenv(env, "1", 1);
    uint64_t a, b;
    record("text", 0, &a, &b);
    unsetenv(env);
    char e[512];
    sim_source_t *src;
    assert_int_equal(sim_trace_open(trace_path, &src, e, sizeof(e)), GMUX_OK);
    return src;
}

/* The program unloads its module and launches another kernel at the handle
 * peek had: the trace names that launch's kernel poke, not peek. */
static void test_trace_unload_renames(void **state)
{
    (void)state;
    sim_source_t *src = record_text_with("TRACE_PROG_RELOAD");
    assert_int_equal(src->nkernels, 4);
    assert_string_equal(src->kernel_names[2], "peek");
    assert_string_equal(src->kernel_names[3], "poke");
    sim_event_t ev;
    unsigned per_kernel[4] = {0};
    uint32_t last = UINT32_MAX;
    while (sim_source_next(src, 0, &ev) == GMUX_OK)
        if (ev.kind == SIM_EV_LAUNCH) {
            assert_true(ev.u.launch.kernel < 4);
            per_kernel[ev.u.launch.kernel]++;
            last = ev.u.launch.kernel;
        }
    assert_int_equal(per_kernel[0], 6);
    assert_int_equal(per_kernel[1], 1);
    assert_int_equal(per_kernel[2], 2);
    assert_int_equal(per_kernel[3], 1);
    assert_int_equal(last, 3);
    sim_source_close(src);
}

/* Kernels the runtime launches as library kernels (CUkernel), which
 * cuFuncGetName refuses (the double's FAKE_CUDA_LIBRARY_KERNELS): the trace
 * names them by cuKernelGetName, as the predictor looks them up; it used to
 * call them kernel_N, so no template learned for them ever applied. */
static void test_trace_names_library_kernels(void **state)
{
    (void)state;
    sim_source_t *src = record_text_with("FAKE_CUDA_LIBRARY_KERNELS");
    assert_int_equal(src->nkernels, 3);
    assert_string_equal(src->kernel_names[0], "scale");
    assert_string_equal(src->kernel_names[1], "fill");
    assert_string_equal(src->kernel_names[2], "peek");
    sim_source_close(src);
}

/* A timing pass that launched differently gives no times: the recording
 * pass's own stand (the faulted launch takes its fault-free twin's). */
static void test_timing_pass_mismatch(void **state)
{
    (void)state;
    setenv("TRACE_PROG_SKIP_FILL_WHEN_OFF", "1", 1);
    uint64_t a, b;
    record("text", 1, &a, &b);
    unsetenv("TRACE_PROG_SKIP_FILL_WHEN_OFF");
    assert_non_null(strstr(err, "launched differently"));
    check_trace(a, b, 1, 300);
}

static void test_trace_replays(void **state)
{
    (void)state;
    uint64_t a, b;
    record("binary", 1, &a, &b);
    char *const show[] = {GMUX_BIN, "trace", "show", trace_path, NULL};
    assert_int_equal(run(show), 0);
    assert_non_null(strstr(out, "1 tasks, 3 kernels"));
    char *const sim[] = {GMUX_BIN, "sim", "--trace", trace_path, "--quiet", NULL};
    assert_int_equal(run(sim), 0);
}

static void test_profile_writes_loadable_db(void **state)
{
    (void)state;
    unlink(db_path);
    char *const prof[] = {GMUX_BIN, "profile", "-o", db_path, "--", TRACE_PROG, NULL};
    assert_int_equal(run(prof), 0);
    const char *line = strstr(out, "scale");
    assert_non_null(line);
    assert_non_null(strstr(line, "6 launches"));
    /* the touched ranges grow with the third argument: a linear template per pointer */
    assert_non_null(strstr(line, "a0:T2 off=0 len=4*a2 mode=r"));
    assert_non_null(strstr(line, "a1:T2 off=0 len=4*a2 mode=w"));
    eng_predictor_t *p;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    char e[512];
    assert_int_equal(eng_tpl_db_load(p, db_path, e, sizeof(e)), GMUX_OK);
    eng_predictor_destroy(p);
    FILE *f = fopen(db_path, "r");
    assert_non_null(f);
    char text[8192];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_non_null(strstr(text, "scale"));
    unlink(db_path);
}

static void test_usage_errors(void **state)
{
    (void)state;
    char *const no_out[] = {GMUX_BIN, "trace", "--", TRACE_PROG, NULL};
    assert_int_equal(tproc_capture(no_out, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    char *const no_cmd[] = {GMUX_BIN, "trace", "-o", trace_path, "--", NULL};
    assert_int_equal(tproc_capture(no_cmd, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    char *const bad_fmt[] = {GMUX_BIN,   "trace", "--format", "xml", "-o",
                             trace_path, "--",    TRACE_PROG, NULL};
    assert_int_equal(tproc_capture(bad_fmt, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
}

/* A program that cannot run: said once, the shell's status, and the output
 * of an earlier recording (or database) left as it was. */
static void test_missing_program_keeps_output(void **state)
{
    (void)state;
    const char *paths[] = {trace_path, db_path};
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(paths[k], "w");
        assert_non_null(f);
        fputs("earlier\n", f);
        fclose(f);
        char *const rec[] = {GMUX_BIN, k ? "profile" : "trace",  "-o", (char *)paths[k],
                             "--",     "/nonexistent/gmux-prog", NULL};
        assert_int_equal(tproc_capture(rec, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 127);
        assert_non_null(strstr(err, "cannot run '/nonexistent/gmux-prog'"));
        assert_null(strstr(strstr(err, "cannot run") + 1, "cannot run")); /* once */
        assert_null(strstr(err, "pass 1"));                               /* nothing was started */
        f = fopen(paths[k], "r");
        assert_non_null(f);
        char line[32] = "";
        assert_non_null(fgets(line, sizeof(line), f));
        fclose(f);
        assert_string_equal(line, "earlier\n");
        unlink(paths[k]);
    }
}

/* A recording that ends without a complete trace (the program killed, or one
 * that never used CUDA) leaves the earlier FILE as it was, and no part file
 * beside it (FILE was deleted before the program ran). */
static void test_failed_recording_keeps_output(void **state)
{
    (void)state;
    char part[200];
    snprintf(part, sizeof(part), "%s.part~", trace_path);
    char *const killed[] = {GMUX_BIN, "trace", "--no-ranges", "-o",         trace_path,
                            "--",     "sh",    "-c",          "kill -9 $$", NULL};
    char *const nothing[] = {GMUX_BIN,   "trace", "--no-ranges", "-o",
                             trace_path, "--",    "true",        NULL};
    char *const *const cmds[] = {killed, nothing};
    const int want[] = {137, 1};
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(trace_path, "w");
        assert_non_null(f);
        fputs("earlier\n", f);
        fclose(f);
        assert_int_equal(tproc_capture(cmds[k], NULL, 60.0, out, sizeof(out), err, sizeof(err)),
                         want[k]);
        assert_non_null(strstr(err, "no complete trace recorded"));
        /* the program made no CUDA call: said so, not a part file's name */
        assert_null(strstr(err, ".part~"));
        assert_non_null(strstr(err, "no CUDA driver call of "));
        f = fopen(trace_path, "r");
        assert_non_null(f);
        char line[32] = "";
        assert_non_null(fgets(line, sizeof(line), f));
        fclose(f);
        assert_string_equal(line, "earlier\n");
        assert_int_not_equal(access(part, F_OK), 0);
    }
    /* a complete one replaces it */
    uint64_t a, b;
    record("binary", 0, &a, &b);
    check_trace(a, b, 0, 0);
    assert_int_not_equal(access(part, F_OK), 0);
}

/* `gmux trace -o LINK -- CMD`: the timing pass's FILE.times~ goes beside
 * the file written (the link's target), as its part does, not beside the
 * link (until 2026-12-03 it went in the link's folder, which the user may
 * not be able to write). CMD says, in the recording pass, where the times
 * are read from and what the link's folder holds. */
static void test_times_beside_link_target(void **state)
{
    (void)state;
    tlinks_t l;
    assert_int_equal(tlinks_make(&l, "t.trace"), 0);
    assert_int_equal(symlink(l.target, l.link), 0);
    char script[512];
    snprintf(script, sizeof(script), "echo \"times=$GMUX_SHIM_TRACE_TIMES\"; ls '%s'; exec '%s'",
             l.a, TRACE_PROG);
    char *const rec[] = {GMUX_BIN, "trace", "-o", l.link, "--", "sh", "-c", script, NULL};
    int st = run(rec);
    char want[200];
    snprintf(want, sizeof(want), "times=%s.times~\n", l.target);
    const char *why = tlinks_check(&l);
    struct stat sb;
    bool written = stat(l.target, &sb) == 0 && sb.st_size > 0;
    char found[256] = "";
    const char *p = strstr(out, "times=/");
    if (p)
        snprintf(found, sizeof(found), "%.*s", (int)strcspn(p, "\n"), p);
    assert_int_equal(tlinks_remove(&l), 0);
    assert_int_equal(st, 0);
    if (!strstr(out, want))
        fail_msg("times read from '%s', want '%s'", found, want);
    assert_null(strstr(out, "link.times~")); /* nothing beside the link */
    assert_null(why);
    assert_true(written);
}

int main(void)
{
    snprintf(trace_path, sizeof(trace_path), "/tmp/gmux_shim_trace_%d.trace", (int)getpid());
    snprintf(db_path, sizeof(db_path), "/tmp/gmux_shim_trace_%d.db", (int)getpid());
    snprintf(stats_path, sizeof(stats_path), "/tmp/gmux_shim_trace_%d.stats", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_text_with_ranges),
        cmocka_unit_test(test_trace_binary_without_ranges),
        cmocka_unit_test(test_trace_survives_fork),
        cmocka_unit_test(test_timing_pass_mismatch),
        cmocka_unit_test(test_trace_unload_renames),
        cmocka_unit_test(test_trace_names_library_kernels),
        cmocka_unit_test(test_trace_replays),
        cmocka_unit_test_teardown(test_trace_capture_survives, unset_capture),
        cmocka_unit_test(test_profile_writes_loadable_db),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_missing_program_keeps_output),
        cmocka_unit_test(test_failed_recording_keeps_output),
        cmocka_unit_test(test_times_beside_link_target),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(trace_path);
    unlink(stats_path);
    return rc;
}
