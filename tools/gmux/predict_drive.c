/*
 * Replaying a source through the predictor. See predict_drive.h.
 */
#include "predict_drive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/array.h"
#include "common/parse.h"
#include "sim/trace_io.h"
#include "sim/workload.h"

int pdrive_parse_arg(const char *cmd, pdrive_input_t *in, int argc, char **argv, int i)
{
    const char *a = argv[i], *v = com_cli_option_value(argc, argv, i);
    bool takes =
        strcmp(a, "--workload") == 0 || strcmp(a, "--set") == 0 || strcmp(a, "--seed") == 0;
    if (takes && !v) {
        cli_no_value(cmd, a);
        return -1;
    }
    if (strcmp(a, "--workload") == 0) {
        in->workload = v;
    } else if (strcmp(a, "--set") == 0) {
        in->sets[in->nsets++] = v;
    } else if (strcmp(a, "--seed") == 0) {
        if (com_parse_u64(v, &in->seed) != GMUX_OK) {
            cli_bad_value(cmd, a, v, "a whole number, 0 or more");
            return -1;
        }
        in->seed_given = true;
    } else if (!a[0]) { /* no file has it: not a file to fail to open */
        cli_usage_error(cmd, "empty file name");
        return -1;
    } else if (a[0] != '-' && !in->trace) {
        in->trace = a;
        return 1;
    } else {
        return 0;
    }
    return 2;
}

int pdrive_check_workload_options(const char *cmd, const pdrive_input_t *in)
{
    if (in->nsets)
        return cli_usage_error(cmd, "--set applies to --workload only");
    if (in->seed_given)
        return cli_usage_error(cmd, "--seed applies to --workload only");
    return 0;
}

int pdrive_open(const char *cmd, const pdrive_input_t *in, sim_source_t **src_p)
{
    char err[512];
    if ((in->trace != NULL) == (in->workload != NULL))
        return cli_usage_error(cmd, "name a TRACE file or --workload NAME (one of them)");
    if (in->trace && pdrive_check_workload_options(cmd, in))
        return CLI_EXIT_USAGE;
    if (!in->trace) /* a bad workload or --set is a usage error */
        return cli_workload_open(cmd, in->workload, in->sets, in->nsets, in->seed, src_p);
    if (sim_trace_open(in->trace, src_p, err, sizeof(err)) != GMUX_OK)
        return cli_fail(cmd, "%s", err); /* a trace that cannot be read fails */
    return 0;
}

/* ---- one task's regions, sorted by base ---- */

struct region {
    uint64_t id, base, size;
};

struct regions {
    struct region *v;
    size_t n, cap;
};

static bool regions_find(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size)
{
    const struct regions *r = ctx;
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (addr < r->v[mid].base)
            hi = mid;
        else if (addr - r->v[mid].base >= r->v[mid].size)
            lo = mid + 1;
        else {
            *base = r->v[mid].base;
            *size = r->v[mid].size;
            return true;
        }
    }
    return false;
}

static int regions_add(struct regions *r, const sim_alloc_ev_t *a)
{
    if (r->n == r->cap &&
        com_array_grow((void **)&r->v, &r->cap, r->n + 1, sizeof(*r->v), 64, SIZE_MAX) != GMUX_OK)
        return -1;
    size_t at = r->n;
    while (at > 0 && r->v[at - 1].base > a->base) {
        r->v[at] = r->v[at - 1];
        at--;
    }
    r->v[at] = (struct region){a->id, a->base, a->size};
    r->n++;
    return 0;
}

static void regions_remove(struct regions *r, uint64_t id)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].id == id) {
            memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(*r->v));
            r->n--;
            return;
        }
}

/* ---- replay ---- */

struct drive {
    eng_predictor_t *p;
    eng_scorer_t *scorer;
    bool predict, observe;
    pdrive_report_t *report;
    eng_span_t spans[2 * ENG_PRED_MAX_ARGS];
};

static bool all_trusted(const eng_predictor_t *p, const eng_launch_t *l)
{
    bool any = false;
    for (uint32_t i = 0; i < l->nargs; i++) {
        eng_pred_arg_info_t ai;
        if (l->args[i].kind != ENG_ARG_PTR)
            continue;
        if (eng_predictor_arg_info(p, l->kernel, i, &ai) != GMUX_OK || ai.state != ENG_PRED_TRUSTED)
            return false;
        any = true;
    }
    return any;
}

static gmux_status_t on_launch(struct drive *d, const sim_launch_ev_t *ev,
                               const eng_region_lookup_t *rl)
{
    eng_launch_t l = {.kernel = ev->kernel, .nargs = ev->nargs, .args = ev->args};
    memcpy(l.grid, ev->grid, sizeof(l.grid));
    memcpy(l.block, ev->block, sizeof(l.block));
    gmux_status_t st = eng_predictor_prepare(d->p, &l);
    if (st != GMUX_OK)
        return st;
    if (d->predict && d->report && ev->kernel < d->report->nkernels) {
        pdrive_kernel_t *k = &d->report->kernels[ev->kernel];
        size_t n;
        const size_t cap = sizeof(d->spans) / sizeof(d->spans[0]);
        bool trusted = all_trusted(d->p, &l);
        k->launches++;
        k->launches_templated += trusted;
        st = eng_predictor_predict(d->p, &l, rl, d->spans, cap, &n);
        if (st == GMUX_OK)
            st = eng_score_launch(d->scorer, d->spans, n, ev->ranges, ev->nranges, &k->pred);
        if (st == GMUX_OK && trusted)
            st = eng_score_launch(d->scorer, d->spans, n, ev->ranges, ev->nranges, &k->trusted);
        if (st == GMUX_OK)
            st = eng_predict_whole(&l, rl, d->spans, cap, &n);
        if (st == GMUX_OK)
            st = eng_score_launch(d->scorer, d->spans, n, ev->ranges, ev->nranges, &k->whole);
        if (st != GMUX_OK)
            return st;
    }
    if (d->observe)
        st = eng_predictor_observe(d->p, &l, ev->ranges, ev->nranges, rl);
    return st;
}

int pdrive_run(const char *cmd, sim_source_t *src, eng_predictor_t *p, bool predict, bool observe,
               pdrive_report_t *report)
{
    struct drive d = {.p = p, .predict = predict, .observe = observe, .report = report};
    struct regions *regs = calloc(src->ntasks ? src->ntasks : 1, sizeof(*regs));
    bool *done = calloc(src->ntasks ? src->ntasks : 1, sizeof(*done));
    int rc = 1;
    if (!regs || !done || eng_scorer_create(&d.scorer) != GMUX_OK) {
        cli_fail(cmd, "out of memory");
        goto free_tables;
    }
    if (report) {
        report->nkernels = src->nkernels;
        report->kernels = calloc(src->nkernels ? src->nkernels : 1, sizeof(*report->kernels));
        if (!report->kernels) {
            cli_fail(cmd, "out of memory");
            goto free_tables;
        }
    }
    for (uint32_t k = 0; k < src->nkernels; k++)
        if (eng_predictor_name_kernel(p, k, src->kernel_names[k]) != GMUX_OK) {
            cli_fail(cmd, "out of memory");
            goto free_tables;
        }
    uint32_t left = src->ntasks;
    while (left > 0) {
        for (uint32_t t = 0; t < src->ntasks; t++) {
            sim_event_t ev;
            if (done[t])
                continue;
            gmux_status_t st = sim_source_next(src, t, &ev);
            if (st == GMUX_ERR_NOT_FOUND) {
                done[t] = true;
                left--;
                continue;
            }
            if (st != GMUX_OK) {
                cli_fail(cmd, "%s", src->error[0] ? src->error : gmux_status_str(st));
                goto free_tables;
            }
            eng_region_lookup_t rl = {regions_find, &regs[t]};
            if (ev.kind == SIM_EV_ALLOC)
                st = regions_add(&regs[t], &ev.u.alloc) == 0 ? GMUX_OK : GMUX_ERR_NOMEM;
            else if (ev.kind == SIM_EV_FREE)
                regions_remove(&regs[t], ev.u.free.id);
            else if (ev.kind == SIM_EV_LAUNCH)
                st = on_launch(&d, &ev.u.launch, &rl);
            if (st != GMUX_OK) {
                cli_fail(cmd, "task %u: %s", t, gmux_status_str(st));
                goto free_tables;
            }
        }
    }
    rc = 0;

free_tables:
    for (uint32_t t = 0; regs && t < src->ntasks; t++)
        free(regs[t].v);
    free(regs);
    free(done);
    eng_scorer_destroy(d.scorer);
    return rc;
}

void pdrive_report_fini(pdrive_report_t *r)
{
    free(r->kernels);
    r->kernels = NULL;
    r->nkernels = 0;
}
