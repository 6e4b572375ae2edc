/*
 * The learned predictor behind the simulator's predictor hooks. See predict.h.
 *
 * The engine asks for a launch's working set when it plans it, up to
 * `lookahead` launches ahead; the launch's recorded ranges are copied into a
 * queue then and learnt from when the launch has run (done()), in plan order.
 * The regions of its pointer arguments are captured at planning time too:
 * by the time the launch has run, a region whose free is already planned is
 * no longer found by address.
 */
#include "sim/predict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/predictor.h"
#include "engine/score.h"
#include "engine/template_db.h"

/* Samples of a kernel after which its launches are no longer deferred. */
#define SIM_PRED_DEFER_SAMPLES (2 * ENG_PRED_SAMPLES)

struct held_region {
    uint64_t base, size;
};

/* A planned launch waiting to run. */
struct pending {
    eng_launch_t launch;
    eng_arg_t *args;
    eng_range_t *ranges;
    struct held_region *regs;
    uint32_t nranges, nregs;
    uint32_t args_cap, ranges_cap, regs_cap;
};

struct pred_run {
    const sim_predict_opts_t *opts;
    eng_predictor_t *p;
    eng_scorer_t *scorer;
    eng_score_t score;
    eng_regions_t *regs;
    uint64_t budget;  /* bytes: larger predictions lose their whole-region parts */
    uint64_t dropped; /* launches whose whole-region parts were dropped */
    uint32_t task;    /* of the current predict call */
    bool defer;       /* plan launches of unsettled kernels only once the window ran */
    struct pending *q;
    size_t qcap, qhead, qlen;
    eng_span_t spans[2 * ENG_PRED_MAX_ARGS];
    eng_range_t *out;
    size_t out_cap;
};

static bool engine_find(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size)
{
    struct pred_run *r = ctx;
    uint32_t ri = eng_regions_find(r->regs, r->task, addr);
    if (ri == ENG_NONE)
        return false;
    const eng_region_t *reg = eng_regions_get(r->regs, ri);
    *base = reg->base;
    *size = reg->size;
    return true;
}

static bool held_find(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size)
{
    const struct pending *pd = ctx;
    for (uint32_t i = 0; i < pd->nregs; i++)
        if (addr >= pd->regs[i].base && addr - pd->regs[i].base < pd->regs[i].size) {
            *base = pd->regs[i].base;
            *size = pd->regs[i].size;
            return true;
        }
    return false;
}

static bool grow(void **v, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    uint32_t n = *cap ? *cap : 8;
    while (n < need)
        n *= 2;
    void *g = realloc(*v, (size_t)n * elem);
    if (!g)
        return false;
    *v = g;
    *cap = n;
    return true;
}

/* Queues launch l (with its recorded ranges) until it has run. */
static gmux_status_t enqueue(struct pred_run *r, const eng_launch_t *l, const eng_range_t *rec,
                             uint32_t nrec)
{
    if (r->qlen == r->qcap) {
        size_t cap = r->qcap ? r->qcap * 2 : 256;
        struct pending *q = calloc(cap, sizeof(*q));
        if (!q)
            return GMUX_ERR_NOMEM;
        for (size_t i = 0; i < r->qlen; i++)
            q[i] = r->q[(r->qhead + i) % r->qcap];
        free(r->q);
        r->q = q;
        r->qcap = cap;
        r->qhead = 0;
    }
    struct pending *pd = &r->q[(r->qhead + r->qlen) % r->qcap];
    if (!grow((void **)&pd->args, &pd->args_cap, l->nargs, sizeof(*pd->args)) ||
        !grow((void **)&pd->ranges, &pd->ranges_cap, nrec, sizeof(*pd->ranges)) ||
        !grow((void **)&pd->regs, &pd->regs_cap, l->nargs, sizeof(*pd->regs)))
        return GMUX_ERR_NOMEM;
    if (l->nargs)
        memcpy(pd->args, l->args, l->nargs * sizeof(*pd->args));
    if (nrec)
        memcpy(pd->ranges, rec, nrec * sizeof(*pd->ranges));
    pd->launch = *l;
    pd->launch.args = pd->args;
    pd->nranges = nrec;
    pd->nregs = 0;
    for (uint32_t i = 0; i < l->nargs; i++) {
        uint64_t base, size;
        if (l->args[i].kind == ENG_ARG_PTR && engine_find(r, l->args[i].value, &base, &size))
            pd->regs[pd->nregs++] = (struct held_region){base, size};
    }
    r->qlen++;
    return GMUX_OK;
}

/* Spans to plain ranges (T3 pieces one by one), into r->out. */
static gmux_status_t expand(struct pred_run *r, size_t nspans, uint32_t *n_p)
{
    size_t n = 0;
    for (size_t i = 0; i < nspans; i++) {
        const eng_span_t *s = &r->spans[i];
        if (s->count > UINT32_MAX - n)
            return GMUX_ERR_RANGE;
        size_t need = n + (size_t)s->count;
        if (need > r->out_cap) {
            size_t cap = r->out_cap ? r->out_cap : 256;
            while (cap < need)
                cap *= 2;
            eng_range_t *o = realloc(r->out, cap * sizeof(*o));
            if (!o)
                return GMUX_ERR_NOMEM;
            r->out = o;
            r->out_cap = cap;
        }
        for (uint64_t k = 0; k < s->count; k++)
            r->out[n++] = (eng_range_t){s->addr + k * s->stride, s->len, s->mode};
    }
    *n_p = (uint32_t)n;
    return GMUX_OK;
}

/*
 * A prediction larger than half the device would crowd out the launch's own
 * data (and the engine refuses a working set beyond the device): its
 * whole-region fallbacks are dropped, so those bytes fault in on demand.
 */
static size_t fit_budget(struct pred_run *r, const eng_region_lookup_t *rl, size_t n)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += eng_span_bytes(&r->spans[i]);
    if (total <= r->budget)
        return n;
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t base, size;
        const eng_span_t *s = &r->spans[i];
        if (s->count == 1 && rl->find(rl->ctx, s->addr, &base, &size) && base == s->addr &&
            size == s->len)
            continue;
        r->spans[out++] = *s;
    }
    r->dropped++;
    return out;
}

/*
 * Whether to plan launch l later: its kernel is still being learned (some
 * pointer argument neither trusted nor given up) and launches planned before
 * it have yet to run, whose samples may settle it. Bounded: a kernel stops
 * deferring after SIM_PRED_DEFER_SAMPLES samples.
 */
static bool should_defer(const struct pred_run *r, const eng_launch_t *l)
{
    eng_pred_kernel_info_t ki;
    if (r->qlen == 0 || eng_predictor_kernel_info(r->p, l->kernel, &ki) != GMUX_OK)
        return false;
    if (ki.samples >= SIM_PRED_DEFER_SAMPLES)
        return false;
    for (uint32_t i = 0; i < ki.nargs; i++) {
        eng_pred_arg_info_t ai;
        if (eng_predictor_arg_info(r->p, l->kernel, i, &ai) != GMUX_OK)
            return false;
        if (ai.kind == ENG_ARG_PTR && ai.state != ENG_PRED_TRUSTED && ai.state != ENG_PRED_FALLBACK)
            return true;
    }
    return false;
}

static gmux_status_t run_predict(void *ctx, uint32_t task, const eng_launch_t *l,
                                 const eng_range_t *rec, uint32_t nrec, const eng_range_t **out_p,
                                 uint32_t *n_p)
{
    struct pred_run *r = ctx;
    eng_region_lookup_t rl = {engine_find, r};
    size_t n;
    r->task = task;
    gmux_status_t st = eng_predictor_prepare(r->p, l);
    if (st == GMUX_OK && r->defer && should_defer(r, l))
        return GMUX_ERR_BUSY;
    if (st == GMUX_OK)
        st = eng_predictor_predict(r->p, l, &rl, r->spans, sizeof(r->spans) / sizeof(r->spans[0]),
                                   &n);
    if (st == GMUX_OK) {
        n = fit_budget(r, &rl, n);
        st = eng_score_launch(r->scorer, r->spans, n, rec, nrec, &r->score);
    }
    if (st == GMUX_OK)
        st = expand(r, n, n_p);
    if (st == GMUX_OK)
        st = enqueue(r, l, rec, nrec);
    *out_p = r->out;
    return st;
}

static gmux_status_t run_done(void *ctx)
{
    struct pred_run *r = ctx;
    if (r->qlen == 0)
        return GMUX_ERR_STATE;
    struct pending *pd = &r->q[r->qhead];
    eng_region_lookup_t rl = {held_find, pd};
    gmux_status_t st = eng_predictor_observe(r->p, &pd->launch, pd->ranges, pd->nranges, &rl);
    r->qhead = (r->qhead + 1) % r->qcap;
    r->qlen--;
    return st;
}

static void run_attach(void *ctx, eng_regions_t *regs)
{
    ((struct pred_run *)ctx)->regs = regs;
}

static void run_end(void *ctx, sim_result_t *res)
{
    struct pred_run *r = ctx;
    if (!r)
        return;
    if (res) {
        res->pred_bytes += r->score.predicted;
        res->pred_touched_bytes += r->score.touched;
        res->pred_hit_bytes += r->score.hit;
    }
    for (size_t i = 0; i < r->qcap; i++) {
        free(r->q[i].args);
        free(r->q[i].ranges);
        free(r->q[i].regs);
    }
    free(r->q);
    free(r->out);
    eng_scorer_destroy(r->scorer);
    eng_predictor_destroy(r->p);
    free(r);
}

static gmux_status_t run_begin(void *ctx, const sim_source_t *src, uint64_t capacity, void **run_p,
                               char *err, size_t errlen)
{
    struct pred_run *r = calloc(1, sizeof(*r));
    gmux_status_t st = GMUX_ERR_NOMEM;
    if (!r)
        goto fail;
    r->opts = ctx;
    r->defer = !r->opts->no_defer;
    r->budget = capacity / 2;
    if (eng_predictor_create(&r->p) != GMUX_OK || eng_scorer_create(&r->scorer) != GMUX_OK)
        goto fail;
    for (uint32_t k = 0; k < src->nkernels; k++)
        if (eng_predictor_name_kernel(r->p, k, src->kernel_names[k]) != GMUX_OK)
            goto fail;
    if (r->opts->templates) {
        st = eng_tpl_db_load(r->p, r->opts->templates, err, errlen);
        if (st != GMUX_OK)
            goto fail_quiet;
    }
    *run_p = r;
    return GMUX_OK;

fail:
    snprintf(err, errlen, "cannot set up the predictor: %s", gmux_status_str(st));
fail_quiet:
    run_end(r, NULL);
    return st;
}

void sim_predict_hooks(const sim_predict_opts_t *opts, sim_predictor_hooks_t *hooks)
{
    *hooks = (sim_predictor_hooks_t){.begin = run_begin,
                                     .attach = run_attach,
                                     .predict = run_predict,
                                     .done = run_done,
                                     .end = run_end,
                                     .ctx = (void *)opts};
}
