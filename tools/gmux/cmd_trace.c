/*
 * gmux trace: generate a workload's trace, convert between the text and
 * binary forms, summarise a trace, and record a live program (gmux trace
 * -o FILE -- CMD: libgmux.so in recording mode, see shim_record.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "common/parse.h"
#include "out_file.h"
#include "sim/trace_check.h"
#include "sim/trace_io.h"
#include "shim_record.h"
#include "trace_opts.h"
#include "sim/workload.h"

#define CMD "trace"

static void print_help(void)
{
    printf("Usage:\n"
           "  gmux trace generate --workload NAME [--set KEY=VALUE ...] [--seed S]\n"
           "                      [--format text|binary] -o FILE\n"
           "  gmux trace convert IN OUT [--format text|binary]\n"
           "  gmux trace show FILE\n"
           "  gmux trace [--format text|binary] [--no-ranges] -o FILE -- CMD [ARGS...]\n"
           "  gmux trace -h | --help | -V | --version\n\n"
           "generate  writes the trace of a built-in workload (default form: binary).\n"
           "convert   rewrites a trace in the other form (or the one --format names).\n"
           "show      prints per task: events, launches, kernels used, allocations,\n"
           "          peak footprint and total compute time; no row of a task it\n"
           "          could not read whole (a truncated file: said, exit 1).\n"
           "-- CMD    runs CMD under libgmux.so and records its allocations, frees and\n"
           "          kernel launches (names, grid/block, argument values) to FILE (default\n"
           "          form: binary). Each launch is followed by a synchronize to collect\n"
           "          the ranges it touched (CUPTI page faults, so GMUX_POLICY defaults to\n"
           "          demand; the regions a launch's arguments point into are moved to the\n"
           "          host before it, so it faults on all it touches: slow, for short runs);\n"
           "          --no-ranges: no synchronize, no ranges, policy off.\n"
           "          Compute times are the kernels' own (CUPTI), one launch at a time,\n"
           "          from a first pass of CMD on plain device memory (so CMD runs twice\n"
           "          and should repeat itself); 0 with --no-ranges (docs/shim.md).\n"
           "          SIGINT, SIGTERM or SIGHUP N goes on to CMD; gmux waits for it,\n"
           "          leaves FILE as it was and exits 128+N.\n\n"
           "Exit status: 0; 1 when a trace cannot be read or the output cannot be\n"
           "written (FILE or OUT stays as it was). Recording: CMD's status (FILE is\n"
           "written when the trace is complete, whatever it is), 1 when no complete\n"
           "trace was recorded and CMD exited 0, 127/126 when CMD is not found/not\n"
           "executable, 128+N after SIGINT, SIGTERM or SIGHUP N. 2 for a usage error\n"
           "(a bad workload name or --set included) or, recording, a malformed GMUX_*\n"
           "setting the shim reads.\n\n"
           "FILE and OUT are written as FILE.part~ beside them, renamed over them once\n"
           "complete, keeping their permission bits. A symbolic link stays one: the file\n"
           "it names is replaced (a dangling link's created), its part beside it; a loop\n"
           "of links or a folder is refused (exit 1). A FIFO or a device is written in\n"
           "place.\n\n"
           "Formats: docs/trace-format.md. Workloads: docs/workloads.md.\n\n");
    sim_workload_print_help(stdout);
}

/* The writer's message about o's part file, with the path the user gave in
 * its place (the part file is gone by then), and what became of the file
 * there: left as it was, or, through a dangling link, nothing written; 1. */
static int write_failed(const cli_out_t *o, const char *err)
{
    size_t n = strlen(o->dst);
    if (cli_out_replaces(o) && strncmp(err, o->dst, n) == 0)
        return cli_fail(CMD, "%s%s%s", o->path, err + n,
                        cli_out_kept(o) ? " (left as it was)"
                        : o->exists     ? " (nothing written)"
                                        : "");
    return cli_fail(CMD, "%s", err);
}

/* Copies src into path (see out_file.h); 0 or 1. */
static int write_source(sim_source_t *src, const char *path, sim_trace_format_t format)
{
    char err[512];
    cli_out_t o;
    if (cli_out_begin(&o, CMD, path) != 0)
        return 1;
    cli_out_guard(&o);
    sim_trace_writer_t *w;
    if (sim_trace_writer_open(o.dst, format, &w, err, sizeof(err)) != GMUX_OK) {
        cli_out_finish(&o, false);
        return write_failed(&o, err);
    }
    gmux_status_t st = sim_trace_copy(src, w, err, sizeof(err));
    char werr[512];
    gmux_status_t wst = sim_trace_writer_close(w, werr, sizeof(werr));
    bool ok = st == GMUX_OK && wst == GMUX_OK;
    if (cli_out_finish(&o, ok) != 0)
        return 1;
    return ok ? 0 : write_failed(&o, wst != GMUX_OK ? werr : err);
}

static int cmd_generate(const struct trace_opts *o)
{
    sim_source_t *src;
    int rc = cli_workload_open(CMD, o->workload, o->sets, o->nsets, o->seed, &src);
    if (rc != 0)
        return rc;
    rc = write_source(src, o->out, o->format);
    sim_source_close(src);
    return rc;
}

static int cmd_convert(const struct trace_opts *o)
{
    const char *in = o->in, *out = o->out;
    sim_trace_format_t format = o->format;
    if (cli_same_file(in, out))
        return cli_usage_error(CMD, "OUT '%s' is the same file as IN", out);
    char err[512];
    sim_trace_format_t from;
    if (sim_trace_detect(in, &from, err, sizeof(err)) != GMUX_OK)
        return cli_fail(CMD, "%s", err);
    if (!format)
        format = from == SIM_TRACE_TEXT ? SIM_TRACE_BINARY : SIM_TRACE_TEXT;
    sim_source_t *src;
    if (sim_trace_open(in, &src, err, sizeof(err)) != GMUX_OK)
        return cli_fail(CMD, "%s", err);
    int rc = write_source(src, out, format);
    sim_source_close(src);
    return rc;
}

/* One task's row of gmux trace show. */
struct show_row {
    uint64_t events, launches, allocs, peak;
    uint32_t kernels;
    double ns; /* a sum of 64-bit times may not fit in 64 bits */
};

/* Reads task t whole into *row; 0, or 1 after saying why (the reader's
 * error: a truncated file, a bad record). */
static int show_task(sim_source_t *src, uint32_t t, uint8_t *used, struct show_row *row)
{
    sim_check_t chk;
    sim_check_init(&chk, src->nkernels);
    memset(used, 0, src->nkernels);
    memset(row, 0, sizeof(*row));
    sim_event_t ev;
    gmux_status_t st;
    while ((st = sim_source_next(src, t, &ev)) == GMUX_OK) {
        row->events++;
        char why[200];
        sim_check_event(&chk, &ev, why, sizeof(why)); /* the reader checked it already */
        if (ev.kind == SIM_EV_ALLOC) {
            row->allocs++;
        } else if (ev.kind == SIM_EV_LAUNCH) {
            row->launches++;
            row->ns += (double)ev.u.launch.time_ns;
            row->kernels += !used[ev.u.launch.kernel];
            used[ev.u.launch.kernel] = 1;
        }
    }
    row->peak = chk.peak_bytes;
    sim_check_fini(&chk);
    return st == GMUX_ERR_NOT_FOUND ? 0 : cli_fail(CMD, "%s", src->error);
}

static void show_print(const char *name, const struct show_row *r, uint32_t kernels,
                       const char *peak)
{
    printf("%-24s %10" PRIu64 " %10" PRIu64 " %8" PRIu32 " %7" PRIu64 " %12s %12.6f\n", name,
           r->events, r->launches, kernels, r->allocs, peak, r->ns / 1e9);
}

/* A row for each task read whole, never one of a task cut short (a text
 * trace cut anywhere: the reader stops at its last whole record, and says
 * so); the total only when every task was. */
static int cmd_show(const char *path)
{
    char err[512];
    sim_source_t *src;
    if (sim_trace_open(path, &src, err, sizeof(err)) != GMUX_OK)
        return cli_fail(CMD, "%s", err);
    uint8_t *used = calloc(src->nkernels ? src->nkernels : 1, 1);
    struct show_row *rows = calloc(src->ntasks, sizeof(*rows));
    if (!used || !rows) {
        free(used);
        free(rows);
        sim_source_close(src);
        return cli_fail(CMD, "out of memory");
    }
    uint32_t done = 0;
    int rc = 0;
    while (done < src->ntasks && (rc = show_task(src, done, used, &rows[done])) == 0)
        done++;
    struct show_row tot = {0};
    if (done > 0) { /* nothing at all when no task was read whole, as for a cut binary trace */
        printf("%s: %" PRIu32 " tasks, %" PRIu32 " kernels\n", path, src->ntasks, src->nkernels);
        printf("%-24s %10s %10s %8s %7s %12s %12s\n", "task", "events", "launches", "kernels",
               "allocs", "peak", "compute_s");
    }
    for (uint32_t t = 0; t < done; t++) {
        const struct show_row *r = &rows[t];
        char peak[32];
        show_print(src->task_names[t], r, r->kernels, com_format_size(r->peak, peak, sizeof(peak)));
        tot.events += r->events;
        tot.launches += r->launches;
        tot.allocs += r->allocs;
        /* every task is an address space of its own: the sum can pass 2^64 */
        tot.peak = r->peak > UINT64_MAX - tot.peak ? UINT64_MAX : tot.peak + r->peak;
        tot.ns += r->ns;
    }
    if (rc == 0) {
        char peak[32], tpeak[40];
        /* a saturated sum is a lower bound, and says so */
        snprintf(tpeak, sizeof(tpeak), "%s%s", tot.peak == UINT64_MAX ? ">=" : "",
                 com_format_size(tot.peak, peak, sizeof(peak)));
        show_print("total", &tot, src->nkernels, tpeak);
    }
    free(used);
    free(rows);
    sim_source_close(src);
    return rc;
}

/* gmux trace [--format F] -o FILE -- CMD ... */
static int cmd_record(const struct trace_opts *o_words)
{
    const char *out = o_words->out, *format = o_words->format_word;
    bool probe = o_words->probe;
    char **cmd = o_words->cmd;
    int bad = cli_check_command(CMD, cmd[0]); /* before the old output goes */
    if (!bad) /* and before any pass starts: what both passes leave to the user */
        bad = gmux_shim_record_check(CMD, NULL);
    if (bad)
        return bad;
    /* the earlier FILE stays until the new trace is complete (out_file.h);
     * whether the new one can be written is tried before CMD runs twice for
     * nothing */
    cli_out_t o;
    if (cli_out_begin(&o, CMD, out) != 0 || cli_out_probe(&o) != 0)
        return 1;
    /* Probing runs the program twice: first on plain device memory, nothing
     * faulting, for each kernel's compute time; then on managed memory, each
     * launch starting cold, for the ranges it touches. The second pass takes
     * the first one's times launch by launch (the shim checks that both
     * passes launched the same kernels). */
    char times[PATH_MAX + 8] = "";
    if (probe) {
        /* beside the file written (a link's target), as its part: room
         * for ".times~" after a name shorter than PATH_MAX */
        snprintf(times, sizeof(times), "%s.times~", o.out.file);
        const char *const timing_env[] = {"GMUX_POLICY=off", "GMUX_SHIM_TRACE_COLD=0", NULL};
        fprintf(stderr, "gmux trace: pass 1 of 2 (compute times)\n");
        int trc = gmux_shim_record(CMD, times, "binary", true, "off", timing_env, cmd);
        if (trc < 0) {
            remove(times); /* what an interrupted pass wrote */
            cli_out_finish(&o, false);
            return -trc;
        }
        if (trc != 0) {
            fprintf(stderr,
                    "gmux trace: the timing pass exited with %d: compute times come from "
                    "the recording pass (faults included)\n",
                    trc);
            remove(times);
            times[0] = '\0';
        }
        fprintf(stderr, "gmux trace: pass 2 of 2 (touched ranges)\n");
    }
    char times_env[PATH_MAX + 32];
    snprintf(times_env, sizeof(times_env), "GMUX_SHIM_TRACE_TIMES=%s", times);
    const char *const record_env[] = {times_env, NULL};
    int rc = gmux_shim_record(CMD, o.dst, format, probe, probe ? "demand" : "off",
                              times[0] ? record_env : NULL, cmd);
    if (times[0])
        remove(times);
    if (rc < 0) {
        cli_out_finish(&o, false);
        return -rc;
    }
    char err[512];
    sim_source_t *src;
    bool written = access(o.dst, F_OK) == 0 || errno != ENOENT;
    if (!written) /* the recorder opens its file at the first CUDA call */
        snprintf(err, sizeof(err), "nothing written: no CUDA driver call of %s reached libgmux.so",
                 cmd[0]);
    if (!written || sim_trace_open(o.dst, &src, err, sizeof(err)) != GMUX_OK) {
        cli_out_finish(&o, false);
        if (cli_out_kept(&o))
            cli_fail(CMD, "no complete trace recorded (%s left as it was): %s", out, err);
        else
            cli_fail(CMD, "no complete trace recorded: %s", err);
        return rc ? rc : 1;
    }
    uint32_t nkernels = src->nkernels;
    sim_source_close(src);
    if (cli_out_finish(&o, true) != 0)
        return rc ? rc : 1;
    fprintf(stderr, "gmux trace: %s: recorded %" PRIu32 " kernels to %s\n", cmd[0], nkernels, out);
    return rc;
}

int cmd_trace(int argc, char **argv)
{
    struct trace_opts o;
    int rc = trace_opts_read(argc, argv, &o);
    if (rc < 0) {
        print_help();
        rc = 0;
    } else if (rc == 0) {
        switch (o.sub) {
        case TRACE_SUB_GENERATE:
            rc = cmd_generate(&o);
            break;
        case TRACE_SUB_CONVERT:
            rc = cmd_convert(&o);
            break;
        case TRACE_SUB_SHOW:
            rc = cmd_show(o.in);
            break;
        case TRACE_SUB_RECORD:
            rc = cmd_record(&o);
            break;
        }
    }
    trace_opts_free(&o);
    return rc;
}
