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

#include "common/array.h"
#include "engine/history.h"
#include "engine/predictor.h"
#include "engine/score.h"
#include "engine/stream.h"
#include "engine/template_db.h"
#include "sim/share.h"

/*
 * Samples of a kernel after which its launches are no longer deferred: the
 * held-out check of a T1/T2 template has run by then. Deferring longer (it
 * was 2 * ENG_PRED_SAMPLES) keeps the planning window short for longer: on
 * dl-train, +5.4% makespan against recorded ranges at 200%, +0.5% with 3.
 */
#define SIM_PRED_DEFER_SAMPLES (ENG_PRED_MIN_TRAIN + 1)
/* A whole region of which the kernel's last launch touched less is not prefetched. */
#define SIM_PRED_SPARSE 0.25
/* Nor is a whole region larger than the device over this. */
#define SIM_PRED_WHOLE_DIV 8
/* Whole regions one launch keeps for the history's random misses (use_history). */
#define SIM_PRED_KEEP (2 * ENG_PRED_MAX_ARGS)
/* Launch-value sets the history remembers. */
#define SIM_PRED_HIST_SLOTS 4096
/* Streams (context, kernel, argument, pointer) the stream table keeps. */
#define SIM_PRED_STREAM_SLOTS 4096
/* (task, kernel, argument, region) sets of touched units the share table keeps (share.h). */
#define SIM_PRED_SHARE_SLOTS 1024

struct held_region {
    uint64_t base, size;
};

/* A planned launch waiting to run. */
struct pending {
    eng_launch_t launch;
    uint32_t task;
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
    eng_history_t *hist;   /* NULL: whole regions where no template holds */
    eng_stream_t *streams; /* NULL: no continuation prediction (stream.h) */
    uint64_t whole_max;    /* bytes: larger whole-region predictions are left to faults */
    float *density;        /* [kernel * ENG_PRED_MAX_ARGS + arg]: share of the arg's region the
                              kernel's last launch touched; < 0 before any */
    uint32_t nkernels;
    eng_span_t *spans; /* the predictor's spans, then the history's ranges */
    size_t spans_cap;
    eng_range_t *out;
    size_t out_cap;
    uint64_t keep[SIM_PRED_KEEP]; /* whole regions of this launch fit_budget keeps */
    uint32_t nkeep;
    sim_share_t *share; /* shares of regions touched so far (share.h); NULL before a launch ran */
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
    return com_array_grow_u32(v, cap, need, elem, 8) == GMUX_OK;
}

/* Queues launch l (with its recorded ranges) until it has run. */
static gmux_status_t enqueue(struct pred_run *r, const eng_launch_t *l, const eng_range_t *rec,
                             uint32_t nrec)
{
    if (r->qlen == r->qcap) {
        size_t cap;
        gmux_status_t st =
            com_array_next_cap(r->qcap, r->qcap + 1, sizeof(*r->q), 256, SIZE_MAX, &cap);
        if (st != GMUX_OK)
            return st;
        /* zeroed: a slot's args/ranges/regs start empty for grow() */
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
    pd->task = r->task;
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

/* Spans to plain ranges (T3 pieces one by one), into r->out; a span of more
 * than ENG_SPAN_MAX_PIECES pieces (the predictor gives none) as its cover. */
static gmux_status_t expand(struct pred_run *r, size_t nspans, uint32_t *n_p)
{
    size_t n = 0;
    for (size_t i = 0; i < nspans; i++) {
        eng_span_t c = r->spans[i];
        if (c.count > ENG_SPAN_MAX_PIECES)
            eng_span_cover(&c);
        const eng_span_t *s = &c;
        if (s->count > UINT32_MAX - n)
            return GMUX_ERR_RANGE;
        size_t need = n + (size_t)s->count;
        if (need > r->out_cap) {
            gmux_status_t st =
                com_array_grow((void **)&r->out, &r->out_cap, need, sizeof(*r->out), 256, SIZE_MAX);
            if (st != GMUX_OK)
                return st;
        }
        for (uint64_t k = 0; k < s->count; k++)
            r->out[n++] = (eng_range_t){s->addr + k * s->stride, s->len, s->mode};
    }
    *n_p = (uint32_t)n;
    return GMUX_OK;
}

/* Whether argument i of l has a trusted template. */
static bool arg_trusted(const struct pred_run *r, const eng_launch_t *l, uint32_t i)
{
    eng_pred_arg_info_t ai;
    return eng_predictor_arg_info(r->p, l->kernel, i, &ai) == GMUX_OK &&
           ai.state == ENG_PRED_TRUSTED;
}

/*
 * Whether span s of l is a whole-region fallback: it is a whole region
 * [*base, *base+*size) and a pointer argument of l into it has no trusted
 * template. A trusted template that predicts the whole region (a kernel that
 * streams all of its buffer) is a prediction, not a fallback.
 */
static bool is_whole(const struct pred_run *r, const eng_launch_t *l, const eng_region_lookup_t *rl,
                     const eng_span_t *s, uint64_t *base, uint64_t *size)
{
    if (s->count != 1 || !rl->find(rl->ctx, s->addr, base, size) || *base != s->addr ||
        *size != s->len)
        return false;
    for (uint32_t i = 0; i < l->nargs; i++)
        if (l->args[i].kind == ENG_ARG_PTR && l->args[i].value - *base < *size &&
            !arg_trusted(r, l, i))
            return true;
    return false;
}

/*
 * Whether a whole-region prediction of region [base, base+size) for argument
 * arg of l is left to faults: it is larger than whole_max, or less than the
 * share (opts->chunk_share of its fault units, else SIM_PRED_SPARSE of its
 * bytes) was touched: counted over every launch of the kernel through this
 * argument into this region of this task so far when there was one (share.h:
 * the units faulted so far against the prefetch of the region), else by the
 * kernel's last launch (prefetching the rest would evict data that is used,
 * to bring data that is not).
 */
static bool whole_wasteful(const struct pred_run *r, const eng_launch_t *l, uint32_t arg,
                           uint64_t base, uint64_t size)
{
    if (size > r->whole_max)
        return true;
    if (l->kernel >= r->nkernels || arg >= ENG_PRED_MAX_ARGS)
        return false;
    double d = r->density[(size_t)l->kernel * ENG_PRED_MAX_ARGS + arg];
    const sim_share_key_t k = {r->task, l->kernel, arg, base, size};
    if (r->share)
        (void)sim_share_get(r->share, &k, &d);
    return d >= 0 && d < (r->opts->chunk_share > 0 ? r->opts->chunk_share : SIM_PRED_SPARSE);
}

/* Whether every pointer argument of l into [base, base+size) is whole_wasteful. */
static bool region_wasteful(const struct pred_run *r, const eng_launch_t *l, uint64_t base,
                            uint64_t size)
{
    bool any = false;
    for (uint32_t i = 0; i < l->nargs; i++) {
        if (l->args[i].kind != ENG_ARG_PTR || l->args[i].value - base >= size)
            continue;
        if (!whole_wasteful(r, l, i, base, size))
            return false;
        any = true;
    }
    return any;
}

static bool kept(const struct pred_run *r, uint64_t base)
{
    for (uint32_t i = 0; i < r->nkeep; i++)
        if (r->keep[i] == base)
            return true;
    return false;
}

/*
 * Whole-region predictions that are wasteful (whole_wasteful) are dropped:
 * those bytes fault in on demand. So are all whole-region predictions of a
 * launch predicted at more than half the device, which would crowd out the
 * launch's own data (and the engine refuses a working set beyond the device).
 */
static size_t fit_budget(struct pred_run *r, const eng_launch_t *l, const eng_region_lookup_t *rl,
                         size_t n)
{
    uint64_t total = 0, base, size;
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_whole(r, l, rl, &r->spans[i], &base, &size) && region_wasteful(r, l, base, size) &&
            !kept(r, base))
            continue;
        r->spans[out++] = r->spans[i];
    }
    n = out;
    for (size_t i = 0; i < n; i++) /* saturating: a database's sizes reach 2^63 */
        if (__builtin_add_overflow(total, eng_span_bytes(&r->spans[i]), &total))
            total = UINT64_MAX;
    if (total <= r->budget)
        return n;
    out = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_whole(r, l, rl, &r->spans[i], &base, &size))
            continue;
        r->spans[out++] = r->spans[i];
    }
    r->dropped++;
    return out;
}

/* Appends s at r->spans[*n], growing the array. */
static bool push_span(struct pred_run *r, size_t *n, eng_span_t s)
{
    if (*n == r->spans_cap) {
        size_t cap = r->spans_cap * 2;
        eng_span_t *sp = realloc(r->spans, cap * sizeof(*sp));
        if (!sp)
            return false;
        r->spans = sp;
        r->spans_cap = cap;
    }
    r->spans[(*n)++] = s;
    return true;
}

/*
 * Whole-region predictions (arguments with no trusted template) replaced by
 * what launches with the same values touched in those regions (history.h),
 * once the history has seen such a launch: what it misses is faulted in and
 * charged like any other miss, never hidden. Where the history's prediction
 * of the last such launch missed bytes in a region (random gathers) and the
 * region is not whole_wasteful (no larger than whole_max, and the units
 * touched so far reach the share: the rent-or-buy break-even, share.h), that
 * whole region is predicted instead and kept by fit_budget: the next gathers
 * land anywhere in it. A region the history predicted in full keeps the
 * history's bytes, though the launch missed elsewhere (SpMV: col_idx's slice
 * is exact while x's far gathers miss; the whole col_idx would evict data in
 * use); so does one whose gathers have faulted in less than its prefetch
 * would cost.
 */
static gmux_status_t use_history(struct pred_run *r, const eng_launch_t *l,
                                 const eng_region_lookup_t *rl, size_t *n_p, bool *used_p)
{
    eng_hist_pred_t hp;
    *used_p = false;
    if (!r->hist || !eng_history_lookup(r->hist, l, &hp))
        return GMUX_OK;
    *used_p = true;
    size_t n = *n_p, out = 0, nwhole = 0;
    uint64_t wb[2 * ENG_PRED_MAX_ARGS], ws[2 * ENG_PRED_MAX_ARGS];
    for (size_t i = 0; i < n; i++) {
        uint64_t base, size;
        if (is_whole(r, l, rl, &r->spans[i], &base, &size)) {
            wb[nwhole] = base;
            ws[nwhole++] = size;
            continue;
        }
        r->spans[out++] = r->spans[i];
    }
    if (nwhole == 0)
        return GMUX_OK;
    for (size_t w = 0; w < nwhole; w++) {
        if (eng_history_missed_in(&hp, wb[w], ws[w]) > 0 && ws[w] <= r->whole_max &&
            !region_wasteful(r, l, wb[w], ws[w]) && r->nkeep < SIM_PRED_KEEP) {
            /* the history missed bytes of the last such launch in this region (random
             * gathers), and the faults so far cost what its prefetch would */
            r->keep[r->nkeep++] = wb[w];
            if (!push_span(r, &out, (eng_span_t){wb[w], ws[w], 0, 1, ENG_ACCESS_RW}))
                return GMUX_ERR_NOMEM;
            continue;
        }
        for (size_t i = 0; i < hp.n; i++) {
            const eng_range_t *g = &hp.ranges[i];
            uint64_t lo = g->addr > wb[w] ? g->addr : wb[w];
            uint64_t ge = g->addr + g->len, we = wb[w] + ws[w];
            uint64_t hi = ge < we ? ge : we;
            if (lo < hi && !push_span(r, &out, (eng_span_t){lo, hi - lo, 0, 1, g->mode}))
                return GMUX_ERR_NOMEM;
        }
    }
    *n_p = out;
    return GMUX_OK;
}

/* Whether argument i of l repeats the pointer of an earlier argument. */
static bool arg_dup(const eng_launch_t *l, uint32_t i)
{
    for (uint32_t j = 0; j < i; j++)
        if (l->args[j].kind == ENG_ARG_PTR && l->args[j].value == l->args[i].value)
            return true;
    return false;
}

/*
 * Whole-region predictions the history could not replace, replaced by the
 * slices trusted streams predict (stream.h): a region is replaced when every
 * pointer argument into it without a template has a stream prediction. Their
 * length margin shows in precision; what they miss faults in.
 */
static gmux_status_t use_stream(struct pred_run *r, const eng_launch_t *l,
                                const eng_region_lookup_t *rl, size_t *n_p)
{
    size_t n = *n_p, n0 = n;
    for (size_t i = 0; i < n0 && r->streams; i++) {
        uint64_t base, size;
        if (!is_whole(r, l, rl, &r->spans[i], &base, &size))
            continue;
        eng_range_t got[ENG_PRED_MAX_ARGS];
        uint32_t ngot = 0;
        bool all = true;
        for (uint32_t a = 0; a < l->nargs && all; a++) {
            if (l->args[a].kind != ENG_ARG_PTR || l->args[a].value - base >= size ||
                arg_trusted(r, l, a) || arg_dup(l, a))
                continue;
            all = ngot < ENG_PRED_MAX_ARGS &&
                  eng_stream_predict(r->streams, r->task, l, a, rl, &got[ngot++]);
        }
        if (!all || ngot == 0)
            continue;
        r->spans[i] = (eng_span_t){got[0].addr, got[0].len, 0, 1, got[0].mode};
        for (uint32_t k = 1; k < ngot; k++) /* further arguments into the region, at the end */
            if (!push_span(r, &n, (eng_span_t){got[k].addr, got[k].len, 0, 1, got[k].mode}))
                return GMUX_ERR_NOMEM;
    }
    *n_p = n;
    return GMUX_OK;
}

static bool same_values(const eng_launch_t *a, const eng_launch_t *b)
{
    if (a->kernel != b->kernel || a->nargs != b->nargs ||
        memcmp(a->grid, b->grid, sizeof(a->grid)) != 0 ||
        memcmp(a->block, b->block, sizeof(a->block)) != 0)
        return false;
    for (uint32_t i = 0; i < a->nargs; i++)
        if (a->args[i].value != b->args[i].value)
            return false;
    return true;
}

/* Whether a launch of the task's kernel with argument arg at l's pointer is planned, not run. */
static bool pending_stream(const struct pred_run *r, const eng_launch_t *l, uint32_t arg)
{
    for (size_t i = 0; i < r->qlen; i++) {
        const struct pending *pd = &r->q[(r->qhead + i) % r->qcap];
        if (pd->task == r->task && pd->launch.kernel == l->kernel && arg < pd->launch.nargs &&
            pd->launch.args[arg].value == l->args[arg].value)
            return true;
    }
    return false;
}

/* Whether a launch with l's values is planned and has not run yet. */
static bool pending_same(const struct pred_run *r, const eng_launch_t *l)
{
    for (size_t i = 0; i < r->qlen; i++)
        if (same_values(&r->q[(r->qhead + i) % r->qcap].launch, l))
            return true;
    return false;
}

/*
 * Whether to plan launch l later, once the launches planned before it have
 * run: (1) its kernel is still being learned (some pointer argument neither
 * trusted nor given up), and their samples may settle it; bounded: a kernel
 * stops deferring after SIM_PRED_DEFER_SAMPLES samples. (2) Some pointer
 * argument without a trusted template points into a region whose whole
 * would be wasteful to prefetch, the history knows no launch with l's
 * values, and one is planned ahead of it: once that one has run, the history
 * predicts l instead of faults. (3) The history knows no launch with l's
 * values, a trusted stream predicts one of its arguments (or, where its whole
 * region would be wasteful, the stream is still being learned), and a launch
 * of the same stream is planned ahead of it: the stream predicts the slice
 * after the last one that ran, so l waits until that one has run.
 */
static bool should_defer(const struct pred_run *r, const eng_launch_t *l,
                         const eng_region_lookup_t *rl)
{
    eng_pred_kernel_info_t ki;
    if (r->qlen == 0 || eng_predictor_kernel_info(r->p, l->kernel, &ki) != GMUX_OK)
        return false;
    bool learning = false, fallback = false;
    for (uint32_t i = 0; i < ki.nargs; i++) {
        eng_pred_arg_info_t ai;
        if (eng_predictor_arg_info(r->p, l->kernel, i, &ai) != GMUX_OK)
            return false;
        if (ai.kind != ENG_ARG_PTR)
            continue;
        uint64_t base, size;
        if (ai.state != ENG_PRED_TRUSTED && ai.state != ENG_PRED_FALLBACK)
            learning = true;
        if (ai.state != ENG_PRED_TRUSTED && i < l->nargs &&
            rl->find(rl->ctx, l->args[i].value, &base, &size) &&
            whole_wasteful(r, l, i, base, size))
            fallback = true;
    }
    if (learning && ki.samples < SIM_PRED_DEFER_SAMPLES)
        return true;
    eng_hist_pred_t hp;
    if (r->hist && eng_history_lookup(r->hist, l, &hp))
        return false;
    if (fallback && r->hist && pending_same(r, l))
        return true;
    for (uint32_t i = 0; i < l->nargs && r->streams; i++) {
        eng_range_t g;
        uint64_t base, size;
        if (l->args[i].kind != ENG_ARG_PTR || arg_trusted(r, l, i))
            continue;
        bool wait = eng_stream_predict(r->streams, r->task, l, i, rl, &g) ||
                    (eng_stream_learning(r->streams, r->task, l, i) &&
                     rl->find(rl->ctx, l->args[i].value, &base, &size) &&
                     whole_wasteful(r, l, i, base, size));
        if (wait && pending_stream(r, l, i))
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
    if (st == GMUX_OK && r->defer && should_defer(r, l, &rl))
        return GMUX_ERR_BUSY;
    if (st == GMUX_OK)
        st = eng_predictor_predict(r->p, l, &rl, r->spans, 2 * ENG_PRED_MAX_ARGS, &n);
    bool hist = false;
    r->nkeep = 0;
    if (st == GMUX_OK)
        st = use_history(r, l, &rl, &n, &hist);
    if (st == GMUX_OK && !hist)
        st = use_stream(r, l, &rl, &n);
    if (st == GMUX_OK) {
        n = fit_budget(r, l, &rl, n);
        st = eng_score_launch(r->scorer, r->spans, n, rec, nrec, &r->score);
    }
    if (st == GMUX_OK)
        st = expand(r, n, n_p);
    if (st == GMUX_OK)
        st = enqueue(r, l, rec, nrec);
    *out_p = r->out;
    return st;
}

/*
 * The share of each pointer argument's region that launch pd touched: of its
 * bytes, or of its fault units when opts->chunk_share is set; then also added
 * to the units touched so far (share.h) where the argument has no trusted
 * template (its whole region may be predicted).
 */
static gmux_status_t observe_density(struct pred_run *r, const struct pending *pd)
{
    const eng_launch_t *l = &pd->launch;
    if (l->kernel >= r->nkernels)
        return GMUX_OK;
    if (r->opts->chunk_share > 0 && !r->share) {
        uint64_t unit = eng_regions_chunk_size(r->regs);
        if (r->opts->share_unit > 0 && r->opts->share_unit < unit)
            unit = r->opts->share_unit;
        gmux_status_t st = sim_share_create(SIM_PRED_SHARE_SLOTS, unit, r->whole_max, &r->share);
        if (st != GMUX_OK)
            return st;
    }
    for (uint32_t i = 0; i < l->nargs && i < ENG_PRED_MAX_ARGS; i++) {
        uint64_t base, size, got = 0;
        if (l->args[i].kind != ENG_ARG_PTR ||
            !held_find((void *)pd, l->args[i].value, &base, &size))
            continue;
        for (uint32_t k = 0; k < pd->nranges; k++) {
            const eng_range_t *g = &pd->ranges[k];
            uint64_t lo = g->addr > base ? g->addr : base;
            uint64_t ge = g->addr + g->len, he = base + size;
            uint64_t hi = ge < he ? ge : he;
            if (lo < hi)
                got += hi - lo;
        }
        double d = size ? (double)got / (double)size : 1.0;
        gmux_status_t st = GMUX_OK;
        if (r->share) {
            const sim_share_key_t k = {pd->task, l->kernel, i, base, size};
            st = sim_share_launch(r->share, base, size, pd->ranges, pd->nranges, &d);
            if (st == GMUX_OK && !arg_trusted(r, l, i))
                st = sim_share_observe(r->share, &k, pd->ranges, pd->nranges);
        }
        if (st != GMUX_OK)
            return st;
        r->density[(size_t)l->kernel * ENG_PRED_MAX_ARGS + i] = d > 1.0 ? 1.0f : (float)d;
    }
    return GMUX_OK;
}

static gmux_status_t run_done(void *ctx)
{
    struct pred_run *r = ctx;
    if (r->qlen == 0)
        return GMUX_ERR_STATE;
    struct pending *pd = &r->q[r->qhead];
    eng_region_lookup_t rl = {held_find, pd};
    gmux_status_t st = eng_predictor_observe(r->p, &pd->launch, pd->ranges, pd->nranges, &rl);
    if (st == GMUX_OK && r->hist)
        st = eng_history_observe(r->hist, &pd->launch, pd->ranges, pd->nranges);
    if (st == GMUX_OK && r->streams)
        st = eng_stream_observe(r->streams, pd->task, &pd->launch, pd->ranges, pd->nranges, &rl);
    if (st == GMUX_OK)
        st = observe_density(r, pd);
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
        if (r->streams) {
            eng_stream_stats_t ss;
            eng_stream_stats(r->streams, &ss);
            res->stream_pred_bytes += ss.pred_bytes;
            res->stream_hit_bytes += ss.hit_bytes;
            res->stream_slice_bytes += ss.slice_bytes;
            res->stream_hits += ss.hits;
            res->stream_misses += ss.misses;
        }
    }
    for (size_t i = 0; i < r->qcap; i++) {
        free(r->q[i].args);
        free(r->q[i].ranges);
        free(r->q[i].regs);
    }
    free(r->q);
    free(r->out);
    free(r->spans);
    free(r->density);
    sim_share_destroy(r->share);
    eng_history_destroy(r->hist);
    eng_stream_destroy(r->streams);
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
    r->whole_max = capacity / SIM_PRED_WHOLE_DIV;
    r->spans_cap = 2 * ENG_PRED_MAX_ARGS;
    if (!(r->spans = malloc(r->spans_cap * sizeof(*r->spans))))
        goto fail;
    if (eng_predictor_create(&r->p) != GMUX_OK || eng_scorer_create(&r->scorer) != GMUX_OK)
        goto fail;
    if (!r->opts->no_history && eng_history_create(SIM_PRED_HIST_SLOTS, &r->hist) != GMUX_OK)
        goto fail;
    if (!r->opts->no_stream && eng_stream_create(SIM_PRED_STREAM_SLOTS, &r->streams) != GMUX_OK)
        goto fail;
    r->nkernels = src->nkernels;
    if (!(r->density = malloc(((size_t)src->nkernels + 1) * ENG_PRED_MAX_ARGS * sizeof(float))))
        goto fail;
    for (size_t i = 0; i < ((size_t)src->nkernels + 1) * ENG_PRED_MAX_ARGS; i++)
        r->density[i] = -1.0f;
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
