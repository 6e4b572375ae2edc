/* gmux sim reports: the runs of one configuration and of a sweep, the
 * sweep's data file and plot (the table and JSON of one configuration are
 * sim_report_print.c's). */
#include "sim_report.h"
#include "sim_report_cfg.h"

#include <errno.h>
#include <inttypes.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "engine/template_db.h"
#include "out_file.h"
#include "plot.h"
#include "sim/trace_io.h"
#include "sim/workload.h"

#define SIM_REPORT_MAX_CAP 1e18 /* bytes: the most sim_params_check allows for hbm */

static gmux_status_t job_open(void *ctx, sim_source_t **src_p, char *err, size_t errlen)
{
    const sim_job_t *job = ctx;
    if (job->trace)
        return sim_trace_open(job->trace, src_p, err, errlen);
    return sim_workload_open(job->workload, job->sets, job->nsets, job->seed, src_p, err, errlen);
}

/* Whether a progress line is due: at most once a second over the runs and
 * the bounds alike, the first a second after the first call (a command that
 * ends sooner says nothing). */
static bool progress_due(void)
{
    static uint64_t next_ns;
    uint64_t now = com_clock_ns();
    if (!next_ns)
        next_ns = now + COM_NS_PER_S;
    if (now < next_ns)
        return false;
    next_ns = now + COM_NS_PER_S;
    return true;
}

static void progress(void *ctx, const char *what, uint64_t launches)
{
    (void)ctx;
    if (progress_due())
        fprintf(stderr, "gmux sim: %s: %" PRIu64 " launches simulated\n", what, launches);
}

/* Where a group of cfg_bounds lies among all its sizes. */
struct bound_group {
    size_t first, total;
};

static void bound_progress(void *ctx, const char *term, size_t i, size_t n)
{
    const struct bound_group *g = ctx;
    if (!progress_due())
        return;
    if (n > 1) /* a step of each size; else one for them all (or the only size) */
        fprintf(stderr, "gmux sim: transfer bound: %s, size %zu of %zu\n", term, g->first + i + 1,
                g->total);
    else
        fprintf(stderr, "gmux sim: transfer bound: %s\n", term);
}

static sim_hooks_t job_hooks(const sim_job_t *job)
{
    return (sim_hooks_t){.open = job_open,
                         .open_ctx = (void *)job,
                         .progress = job->progress ? progress : NULL,
                         .lc = job->lc,
                         .prio = job->prio,
                         .nclass = job->nclass,
                         .predictor = job->predictor};
}

const char *sim_report_job_name(const sim_job_t *job)
{
    return job->trace ? job->trace : job->workload;
}

/* The device-memory size of one configuration (the rest of cr zeroed). */
static void cfg_size(const sim_job_t *job, const sim_profile_t *prof, double pct, cfg_result_t *cr)
{
    memset(cr, 0, sizeof(*cr));
    uint64_t cs = (uint64_t)job->params.chunk_bytes;
    /* a tiny PCT asks for more memory than 64 bits hold: cap it where the
     * hbm parameter's range ends */
    double want = pct > 0 ? (double)prof->footprint_bytes * 100.0 / pct : 0;
    uint64_t cap = pct > 0 ? (uint64_t)(want < SIM_REPORT_MAX_CAP ? want : SIM_REPORT_MAX_CAP)
                           : (uint64_t)job->params.hbm_bytes;
    cap = cap / cs * cs;
    cr->asked_pct = pct > 0 ? pct : 0;
    if (cap < cs) { /* the device holds one chunk at least: not the PCT asked */
        cap = cs;
        cr->one_chunk = true;
    }
    cr->capacity = cap;
    cr->pct = prof->footprint_bytes ? (double)prof->footprint_bytes * 100.0 / (double)cap : 0;
}

/* The transfer bounds of n sized configurations, the work no size changes
 * done once; then the reference string, which nothing else reads, is freed
 * before the policies run (their peak memory adds to the profile's). */
static void cfg_bounds(const sim_job_t *job, sim_profile_t *prof, cfg_result_t *crs, size_t n)
{
    uint64_t caps[8];
    sim_bound_t b[8];
    gmux_status_t st[8];
    for (size_t i0 = 0; i0 < n; i0 += 8) {
        size_t m = n - i0 < 8 ? n - i0 : 8;
        for (size_t i = 0; i < m; i++)
            caps[i] = crs[i0 + i].capacity;
        /* undefined when a launch exceeds the capacity (no policy can run): its
         * compute term alone stays, which is no bound on a run that cannot be */
        struct bound_group g = {i0, n};
        sim_bound_progress_t pr = {.fn = bound_progress, .ctx = &g};
        sim_bound_compute_all(prof, &job->params, caps, m, b, st, job->progress ? &pr : NULL);
        for (size_t i = 0; i < m; i++) {
            crs[i0 + i].bound = b[i];
            crs[i0 + i].bound_st = st[i];
        }
    }
    sim_refstr_destroy(prof->refs);
    prof->refs = NULL;
}

/* Runs every chosen policy for one sized configuration. */
static void cfg_policies(const sim_job_t *job, const sim_profile_t *prof, cfg_result_t *cr)
{
    sim_hooks_t h = job_hooks(job);
    uint64_t cap = cr->capacity;
    cr->st[SIM_POLICY_ORACLE] = GMUX_ERR_INVALID;
    for (int p = 0; p < SIM_POLICY_COUNT; p++) {
        if (!job->policies[p]) {
            cr->st[p] = GMUX_ERR_INVALID;
            snprintf(cr->err[p], sizeof(cr->err[p]), "not selected");
            continue;
        }
        if (p == SIM_POLICY_ORACLE) {
            cr->res[p] = prof->oracle;
            cr->res[p].tasks = calloc(prof->oracle.ntasks, sizeof(*cr->res[p].tasks));
            if (cr->res[p].tasks)
                memcpy(cr->res[p].tasks, prof->oracle.tasks,
                       prof->oracle.ntasks * sizeof(*cr->res[p].tasks));
            cr->st[p] = cr->res[p].tasks ? GMUX_OK : GMUX_ERR_NOMEM;
            continue;
        }
        cr->st[p] = sim_run(&job->params, &h, (sim_policy_t)p, cap, &cr->res[p], cr->err[p],
                            sizeof(cr->err[p]));
    }
}

static void cfg_clear(cfg_result_t *cr)
{
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        sim_result_clear(&cr->res[p]);
}

/* glibc raises its mmap threshold to the size of each large block freed (up
 * to 32 MiB): once the profile's and the bound's first lists are freed, the
 * next ones, grown by doubling, come from the heap, where each copy on
 * growth leaves a hole and what is freed below the top is not returned. Fixed at its usual
 * start, blocks of 128 KiB or more stay mapped: grown in place (mremap) and
 * returned when freed (sci-stencil's bound: 98 MiB peak, 75 MiB with it;
 * docs/bench/sim.md). Process-wide, so for the gmux command only. */
static void malloc_keep_mapped(void)
{
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
}

static int profile(const sim_job_t *job, sim_profile_t *prof)
{
    char err[512] = "";
    malloc_keep_mapped();
    sim_hooks_t h = job_hooks(job);
    gmux_status_t st = sim_profile_run(&job->params, &h, prof, err, sizeof(err));
    if (st != GMUX_OK) {
        /* a trace's errors already begin with its path */
        const char *name = sim_report_job_name(job);
        size_t n = strlen(name);
        bool named = strncmp(err, name, n) == 0 && err[n] == ':';
        fprintf(stderr, "gmux sim: %s%s%s\n", named ? "" : name, named ? "" : ": ",
                err[0] ? err : gmux_status_str(st));
        return 1;
    }
    if (job->nclass > prof->oracle.ntasks) { /* --lc/--prio of a task not there */
        fprintf(stderr, "gmux sim: --lc or --prio names task %u, but %s has %u tasks (0..%u)\n",
                job->nclass - 1, sim_report_job_name(job), prof->oracle.ntasks,
                prof->oracle.ntasks - 1);
        sim_profile_clear(prof);
        return 1;
    }
    return 0;
}

/* Whether a chosen policy ran at this size. */
static bool cfg_any_ran(const sim_job_t *job, const cfg_result_t *cr)
{
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        if (job->policies[p] && cr->st[p] == GMUX_OK)
            return true;
    return false;
}

/* A policy that failed for another reason than the device's size. */
static bool cfg_broke(const sim_job_t *job, const cfg_result_t *cr)
{
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        if (job->policies[p] && cr->st[p] != GMUX_OK && cr->st[p] != GMUX_ERR_CAPACITY)
            return true;
    return false;
}

/* Names on stderr the policies that failed: every one when none ran (the
 * run failed as a whole), else those that failed for another reason than
 * the device's size (which the table shows as n/a). */
static void cfg_say_failures(const sim_job_t *job, const cfg_result_t *cr, bool all)
{
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        if (job->policies[p] && cr->st[p] != GMUX_OK && (all || cr->st[p] != GMUX_ERR_CAPACITY))
            fprintf(stderr, "gmux sim: %s: %s\n", sim_policy_name((sim_policy_t)p), cr->err[p]);
}

int sim_report_run(const sim_job_t *job, bool json, FILE *out)
{
    sim_profile_t prof;
    if (profile(job, &prof) != 0)
        return 1;
    cfg_result_t cr;
    cfg_size(job, &prof, job->oversub_pct, &cr);
    cfg_bounds(job, &prof, &cr, 1);
    cfg_policies(job, &prof, &cr);
    if (json) {
        sim_report_json(job, &prof, &cr, out);
        fputc('\n', out);
    } else {
        sim_report_table(job, &prof, &cr, out);
    }
    bool none = !cfg_any_ran(job, &cr);
    int rc = none || cfg_broke(job, &cr);
    if (rc)
        cfg_say_failures(job, &cr, none);
    if (none)
        fprintf(stderr, "gmux sim: no chosen policy ran\n");
    cfg_clear(&cr);
    sim_profile_clear(&prof);
    return rc;
}

/* PREFIX.gp, then PREFIX.png drawn from it; 0, or 1 when the script
 * cannot be written (gnuplot missing or failing is said, not an error). */
static int write_plot(const sim_job_t *job, const char *prefix, FILE *out)
{
    char dat[1024];
    snprintf(dat, sizeof(dat), "%s.dat", prefix);
    plot_script_t s;
    if (plot_script_begin(&s, "sim", prefix, "960,600") != 0)
        return 1;
    FILE *f = s.f;
    /* names and paths go in quoted as gnuplot reads them; noenhanced: a '_'
     * in a name is not a subscript */
    char title[1100];
    snprintf(title, sizeof(title), "gmux sim: %s", sim_report_job_name(job));
    fprintf(f, "set title ");
    plot_put_str(f, title);
    fprintf(f, " noenhanced\n"
               "set xlabel 'oversubscription (footprint / device memory, %%)'\n"
               "set ylabel 'throughput relative to the transfer bound (1 = the physical limit)'\n"
               "set logscale y\nset key outside right noenhanced\nset grid\nplot ");
    plot_put_str(f, dat);
    fprintf(f, " using 1:2 with linespoints title 'transfer bound'");
    int col = 3;
    for (int p = 0; p < SIM_POLICY_COUNT; p++) {
        if (!job->policies[p])
            continue;
        fprintf(f, ", '' using 1:%d with linespoints title ", col++);
        plot_put_str(f, sim_policy_name((sim_policy_t)p));
    }
    fputc('\n', f);
    return plot_script_finish(&s, dat, out);
}

int sim_report_sweep(const sim_job_t *job, bool json, const char *prefix, FILE *out, FILE *msg)
{
    static const double pcts[] = {100, 150, 200, 250, 300, 350, 400};
    const size_t npcts = sizeof(pcts) / sizeof(pcts[0]);
    sim_profile_t prof;
    if (profile(job, &prof) != 0)
        return 1;
    char dat[1024];
    snprintf(dat, sizeof(dat), "%s.dat", prefix ? prefix : "");
    /* PREFIX.dat appears complete or not at all (out_file.h): an interrupted
     * or failed sweep leaves the earlier one as it was */
    cli_out_t o;
    if (prefix && cli_out_begin(&o, "sim", dat) != 0) {
        sim_profile_clear(&prof);
        return 1;
    }
    FILE *df = prefix ? fopen(o.dst, "w") : fopen("/dev/null", "w");
    if (df && prefix)
        cli_out_guard(&o);
    cfg_result_t *crs = df ? calloc(npcts, sizeof(*crs)) : NULL;
    if (!crs) {
        if (df) {
            fclose(df);
            if (prefix)
                cli_out_finish(&o, false);
        } else {
            fprintf(stderr, "gmux sim: cannot write %s: %s\n", dat, strerror(errno));
        }
        if (df)
            fprintf(stderr, "gmux sim: out of memory\n");
        sim_profile_clear(&prof);
        return 1;
    }
    for (size_t i = 0; i < npcts; i++)
        cfg_size(job, &prof, pcts[i], &crs[i]);
    if (job->progress) /* one pass or a few over the run per size: long for a long run */
        fprintf(stderr, "gmux sim: sweep: transfer bounds of %zu sizes\n", npcts);
    cfg_bounds(job, &prof, crs, npcts);
    fprintf(df, "# oversub_pct bound");
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        if (job->policies[p])
            fprintf(df, " %s", sim_policy_name((sim_policy_t)p));
    fprintf(df,
            "   (throughput relative to the transfer bound: bound / makespan; 0 = could not run;\n"
            "#   nan = the bound is undefined at that size: a launch needs more than the device;\n"
            "#   a run of no time is 1 against a bound of 0, inf against one above 0;\n"
            "#   oversub_pct is the size simulated: the device holds whole chunks, one at\n"
            "#   least; a row that differs from the percentage asked is followed by\n"
            "#   '# asked PCT%%: ...')\n");
    fflush(df); /* the header at once, before the long runs */
    if (json && out)
        fprintf(out, "{\"sweep\":[");
    int rc = 0;
    bool ran = false; /* a chosen policy ran at some size */
    for (size_t i = 0; i < npcts; i++) {
        cfg_result_t cr = crs[i];
        if (job->progress)
            fprintf(stderr, "gmux sim: sweep %.0f%%\n", pcts[i]);
        cfg_policies(job, &prof, &cr);
        if (json && out) {
            if (i)
                fputc(',', out);
            sim_report_json(job, &prof, &cr, out);
        } else if (out) {
            sim_report_table(job, &prof, &cr, out);
        }
        double bound = (double)cr.bound.bound_ns;
        bool defined = cr.bound_st == GMUX_OK;
        /* the size simulated: whole chunks, one at least (cr.pct), not the asked one */
        double pct = prof.footprint_bytes ? cr.pct : pcts[i];
        fprintf(df, "%.6g %s", pct, defined ? "1.000000" : "nan");
        for (int p = 0; p < SIM_POLICY_COUNT; p++) {
            if (!job->policies[p])
                continue;
            bool did = cr.st[p] == GMUX_OK;
            uint64_t ms = cr.res[p].makespan_ns;
            if (did && !defined)
                fprintf(df, " nan");
            else if (did && ms == 0) /* no compute, nothing moved */
                fputs(bound > 0 ? " inf" : " 1.000000", df);
            else
                fprintf(df, " %.6f", did ? bound / (double)ms : 0.0);
        }
        fputc('\n', df);
        if (cr.one_chunk || fabs(pct - pcts[i]) >= 0.5)
            fprintf(df, "# asked %.0f%%: %.6g%% simulated (%s)\n", pcts[i], pct,
                    cr.one_chunk ? "less than one chunk asked" : "whole chunks");
        if (cfg_broke(job, &cr)) {
            rc = 1;
            cfg_say_failures(job, &cr, false);
        }
        ran |= cfg_any_ran(job, &cr);
        cfg_clear(&cr);
    }
    bool whole = plot_file_close(df, "sim", prefix ? dat : "/dev/null") == 0;
    if (prefix && cli_out_finish(&o, whole) != 0)
        whole = false;
    free(crs);
    if (json && out)
        fprintf(out, "]}\n");
    if (!whole)
        rc = 1; /* no plot of a data file cut short */
    else if (prefix && write_plot(job, prefix, msg) != 0)
        rc = 1;
    sim_profile_clear(&prof);
    if (!ran) {
        fprintf(stderr, "gmux sim: no chosen policy ran at any oversubscription\n");
        rc = 1;
    }
    return rc;
}

/* The database if it loads, else NULL after saying why (the run learns online). */
static const char *check_templates(const char *path)
{
    eng_predictor_t *p;
    char err[512];
    if (!path || eng_predictor_create(&p) != GMUX_OK)
        return NULL;
    gmux_status_t st = eng_tpl_db_load(p, path, err, sizeof(err));
    eng_predictor_destroy(p);
    if (st == GMUX_OK)
        return path;
    fprintf(stderr, "gmux sim: %s; going on with online learning\n", err);
    return NULL;
}

void sim_report_use_learned(sim_job_t *job, sim_learned_t *l, const char *templates)
{
    memset(l, 0, sizeof(*l));
    l->opts.templates = check_templates(templates);
    /* whole regions are prefetched where faulting their touched units would cost more */
    l->opts.chunk_share = job->params.fault_bps / job->params.h2d_bps;
    l->opts.share_unit = sim_params_fault_block(&job->params);
    sim_predict_hooks(&l->opts, &l->hooks);
    job->predictor = &l->hooks;
    snprintf(l->label, sizeof(l->label), "learned templates (%s%s)",
             l->opts.templates ? "from " : "online learning only",
             l->opts.templates ? l->opts.templates : "");
    job->predict_label = l->label;
}

int sim_report_demo(const char *plot_dir)
{
    /* the sweep's plot goes to plot_dir (gmux demo --plot-dir; the current
     * directory by default); where that cannot be written, the report runs
     * without it rather than fail */
    const char *dir = plot_dir ? plot_dir : ".";
    char prefix[1100];
    snprintf(prefix, sizeof(prefix), "%s/gmux-demo-llm-sweep", dir);
    bool plot = access(dir, W_OK) == 0;
    int plot_err = plot ? 0 : errno;
    static const char *const llm_sets[] = {"instances=8", "model=llama2-13b", "tokens=2"};
    static const char *const sci_sets[] = {"iterations=2"};
    struct {
        const char *title, *workload;
        const char *const *sets;
        size_t nsets;
    } runs[] = {
        {"8 LLM decode instances (Llama-2 13B) on one simulated H200", "llm-decode", llm_sets, 3},
        {"deep-learning mix: 3 training jobs (Llama-2 7B, Adam)", "dl-train", NULL, 0},
        {"scientific mix: stencil and sparse solvers side by side", "sci-stencil+sci-sparse",
         sci_sets, 1},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        sim_job_t job;
        memset(&job, 0, sizeof(job));
        sim_params_default(&job.params);
        job.workload = runs[i].workload;
        job.sets = runs[i].sets;
        job.nsets = runs[i].nsets;
        job.seed = 1;
        for (int p = 0; p < SIM_POLICY_COUNT; p++)
            job.policies[p] = true;
        sim_learned_t learned;
        sim_report_use_learned(&job, &learned, NULL);
        printf("-- %s\n", runs[i].title);
        fflush(stdout);
        rc |= sim_report_run(&job, false, stdout);
        if (i == 0) {
            printf("   the same workload swept from 100%% to 400%% oversubscription "
                   "(no LRU ablation):\n   ");
            fflush(stdout);
            job.policies[SIM_POLICY_PROACTIVE_LRU] = false;
            if (!plot)
                printf("plot: skipped, cannot write to %s (%s): gmux demo --plot-dir DIR\n   ", dir,
                       strerror(plot_err));
            rc |= sim_report_sweep(&job, false, plot ? prefix : NULL, NULL, stdout);
        }
        fflush(stdout);
    }
    printf("   reproduce: gmux sim --workload NAME [--set k=v] [--oversub PCT | --sweep]\n"
           "   model and sources: docs/sim.md\n");
    return rc;
}
