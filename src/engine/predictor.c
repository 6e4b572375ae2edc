/*
 * The working-set predictor: kernel table, attribution of touched ranges to
 * arguments, the learn / held-out / trust cycle, prediction. See predictor.h.
 */
#include "engine/predictor.h"
#include "common/array.h"
#include "engine/ranges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

struct pred_arg {
    eng_tpl_t tpl;
    uint8_t state;
    uint8_t reason;
    uint8_t misses;
    bool irregular_seen;
    uint32_t trusted_after;
};

struct pred_kernel {
    char *name;
    bool seen; /* layout known */
    bool from_db;
    char layout[ENG_PRED_MAX_ARGS + 1];
    uint32_t nargs;
    bool val_ok[ENG_VAL_COUNT];
    struct pred_arg *args;
    uint64_t samples, unattributed;
    uint32_t ring_len, ring_head; /* samples kept, next slot */
    uint64_t *vals;               /* ENG_PRED_SAMPLES x ENG_VAL_COUNT */
    eng_shape_t *shapes;          /* ENG_PRED_SAMPLES x nargs */
};

struct lib_entry {
    char *name;
    char *layout;
    eng_pred_arg_info_t *args;
};

/* One piece of a touched range, attributed to an argument. */
struct piece {
    uint64_t addr, len;
    uint8_t mode;
    int32_t owner; /* argument index, -1 unattributed */
};

struct ptr_ref {
    uint64_t value, base, size;
    uint32_t arg;
};

struct eng_predictor {
    struct pred_kernel *kernels;
    uint32_t nkernels;
    struct lib_entry *lib;
    size_t nlib;
    /* observe scratch */
    struct piece *pieces;
    size_t pieces_cap;
    eng_range_t *runs;
    size_t runs_cap;
    eng_range_t *orig; /* touched ranges sorted by address */
    uint64_t *maxend;  /* maxend[i]: the largest end among orig[0..i] */
    size_t orig_cap, maxend_cap;
};

const char *eng_pred_state_name(eng_pred_state_t state)
{
    static const char *const names[] = {"learning", "candidate", "trusted", "fallback"};
    return (unsigned)state < 4 ? names[state] : "?";
}

static const char *const reason_names[] = {"none", "irregular", "no-fit", "unstable", "layout"};

const char *eng_pred_reason_name(eng_pred_reason_t reason)
{
    return (unsigned)reason < 5 ? reason_names[reason] : "?";
}

bool eng_pred_reason_parse(const char *name, eng_pred_reason_t *reason)
{
    for (unsigned i = 1; i < 5; i++)
        if (strcmp(name, reason_names[i]) == 0) {
            *reason = (eng_pred_reason_t)i;
            return true;
        }
    return false;
}

gmux_status_t eng_predictor_create(eng_predictor_t **p_p)
{
    eng_predictor_t *p = calloc(1, sizeof(*p));
    if (!p)
        return GMUX_ERR_NOMEM;
    *p_p = p;
    return GMUX_OK;
}

static void kernel_clear(struct pred_kernel *k)
{
    free(k->name);
    free(k->args);
    free(k->vals);
    free(k->shapes);
    memset(k, 0, sizeof(*k));
}

void eng_predictor_destroy(eng_predictor_t *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; i < p->nkernels; i++)
        kernel_clear(&p->kernels[i]);
    for (size_t i = 0; i < p->nlib; i++) {
        free(p->lib[i].name);
        free(p->lib[i].layout);
        free(p->lib[i].args);
    }
    free(p->lib);
    free(p->kernels);
    free(p->pieces);
    free(p->runs);
    free(p->orig);
    free(p->maxend);
    free(p);
}

static gmux_status_t grow_kernels(eng_predictor_t *p, uint32_t kernel)
{
    if (kernel < p->nkernels)
        return GMUX_OK;
    if (kernel == UINT32_MAX)
        return GMUX_ERR_RANGE;
    uint32_t n = p->nkernels ? p->nkernels : 8;
    while (n <= kernel)
        n = n > UINT32_MAX / 2 ? kernel + 1 : n * 2;
    struct pred_kernel *k = realloc(p->kernels, (size_t)n * sizeof(*k));
    if (!k)
        return GMUX_ERR_NOMEM;
    memset(k + p->nkernels, 0, (size_t)(n - p->nkernels) * sizeof(*k));
    p->kernels = k;
    p->nkernels = n;
    return GMUX_OK;
}

/* Applies a database entry to a kernel whose layout matches it. */
static void kernel_apply(struct pred_kernel *k, const struct lib_entry *e)
{
    for (uint32_t i = 0; i < k->nargs; i++) {
        struct pred_arg *a = &k->args[i];
        const eng_pred_arg_info_t *ai = &e->args[i];
        memset(a, 0, sizeof(*a));
        if (k->layout[i] != 'p')
            continue;
        a->state = ai->state == ENG_PRED_TRUSTED || ai->state == ENG_PRED_FALLBACK
                       ? ai->state
                       : ENG_PRED_LEARNING;
        a->tpl = ai->tpl;
        a->reason = ai->reason;
    }
    k->from_db = true;
}

static void kernel_bind(eng_predictor_t *p, struct pred_kernel *k)
{
    if (!k->seen || !k->name)
        return;
    for (size_t i = 0; i < p->nlib; i++)
        if (strcmp(p->lib[i].name, k->name) == 0 && strcmp(p->lib[i].layout, k->layout) == 0) {
            kernel_apply(k, &p->lib[i]);
            return;
        }
}

gmux_status_t eng_predictor_name_kernel(eng_predictor_t *p, uint32_t kernel, const char *name)
{
    gmux_status_t st = grow_kernels(p, kernel);
    if (st != GMUX_OK)
        return st;
    char *copy = strdup(name);
    if (!copy)
        return GMUX_ERR_NOMEM;
    struct pred_kernel *k = &p->kernels[kernel];
    free(k->name);
    k->name = copy;
    kernel_bind(p, k);
    return GMUX_OK;
}

static void layout_of(const eng_launch_t *l, char *layout)
{
    for (uint32_t i = 0; i < l->nargs; i++)
        layout[i] = l->args[i].kind == ENG_ARG_PTR ? 'p' : 'v';
    layout[l->nargs] = '\0';
}

gmux_status_t eng_predictor_prepare(eng_predictor_t *p, const eng_launch_t *l)
{
    if (l->nargs > ENG_PRED_MAX_ARGS)
        return GMUX_OK; /* no entry: always whole regions */
    gmux_status_t st = grow_kernels(p, l->kernel);
    if (st != GMUX_OK)
        return st;
    struct pred_kernel *k = &p->kernels[l->kernel];
    if (k->seen)
        return GMUX_OK;
    k->args = calloc(l->nargs ? l->nargs : 1, sizeof(*k->args));
    k->vals = calloc(ENG_PRED_SAMPLES * ENG_VAL_COUNT, sizeof(*k->vals));
    k->shapes = calloc((size_t)ENG_PRED_SAMPLES * (l->nargs ? l->nargs : 1), sizeof(*k->shapes));
    if (!k->args || !k->vals || !k->shapes) {
        free(k->args);
        free(k->vals);
        free(k->shapes);
        k->args = NULL;
        k->vals = NULL;
        k->shapes = NULL;
        return GMUX_ERR_NOMEM;
    }
    k->nargs = l->nargs;
    layout_of(l, k->layout);
    for (unsigned id = 0; id < ENG_VAL_COUNT; id++)
        k->val_ok[id] = id >= ENG_VAL_GRID_X || (id < l->nargs && l->args[id].kind == ENG_ARG_VAL);
    k->seen = true;
    kernel_bind(p, k);
    return GMUX_OK;
}

/* The kernel entry matching l's layout, or NULL (predict then falls back). */
static const struct pred_kernel *kernel_for(const eng_predictor_t *p, const eng_launch_t *l)
{
    if (l->kernel >= p->nkernels)
        return NULL;
    const struct pred_kernel *k = &p->kernels[l->kernel];
    if (!k->seen || k->nargs != l->nargs)
        return NULL;
    for (uint32_t i = 0; i < l->nargs; i++)
        if ((k->layout[i] == 'p') != (l->args[i].kind == ENG_ARG_PTR))
            return NULL;
    return k;
}

/* ---- attribution ---- */

static int cmp_range(const void *a, const void *b)
{
    const eng_range_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_ptr(const void *a, const void *b)
{
    const struct ptr_ref *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return x->arg < y->arg ? -1 : x->arg > y->arg;
}

static gmux_status_t reserve(void **buf, size_t *cap, size_t need, size_t elem)
{
    return com_array_grow(buf, cap, need, elem, 64, SIZE_MAX);
}

/* Owner of bytes starting at s: the nearest pointer at or below s in s's region, else above. */
static int32_t owner_of(const struct ptr_ref *ptrs, size_t np, uint64_t s)
{
    int32_t best = -1;
    for (size_t i = 0; i < np; i++) {
        if (s < ptrs[i].base || s - ptrs[i].base >= ptrs[i].size)
            continue;
        if (ptrs[i].value <= s)
            best = (int32_t)i; /* sorted: the last one at or below wins */
        else if (best < 0)
            return (int32_t)i;
        else
            break;
    }
    return best;
}

/*
 * Splits the coalesced runs at pointer values and attributes each piece.
 * Fills p->pieces; returns their count in *npieces.
 */
static gmux_status_t attribute(eng_predictor_t *p, const eng_range_t *runs, size_t nruns,
                               const struct ptr_ref *ptrs, size_t np, size_t *npieces)
{
    size_t n = 0;
    for (size_t r = 0; r < nruns; r++) {
        uint64_t s = runs[r].addr, end = runs[r].addr + runs[r].len;
        while (s < end) {
            uint64_t cut = end;
            for (size_t i = 0; i < np; i++)
                if (ptrs[i].value > s && ptrs[i].value < cut)
                    cut = ptrs[i].value;
            gmux_status_t st =
                reserve((void **)&p->pieces, &p->pieces_cap, n + 1, sizeof(*p->pieces));
            if (st != GMUX_OK)
                return st;
            p->pieces[n++] = (struct piece){s, cut - s, runs[r].mode, owner_of(ptrs, np, s)};
            s = cut;
        }
    }
    *npieces = n;
    return GMUX_OK;
}

/*
 * Gives each piece the access modes of the touched ranges that overlap it
 * (coalescing merged the modes of neighbours, say a read tensor and the
 * written one right after it).
 */
static gmux_status_t piece_modes(eng_predictor_t *p, const eng_range_t *touched, size_t n,
                                 size_t npieces)
{
    if (reserve((void **)&p->orig, &p->orig_cap, n, sizeof(*p->orig)) != GMUX_OK ||
        reserve((void **)&p->maxend, &p->maxend_cap, n, sizeof(*p->maxend)) != GMUX_OK)
        return GMUX_ERR_NOMEM;
    if (n) { /* with none, orig may still be NULL, which neither call takes */
        memcpy(p->orig, touched, n * sizeof(*touched));
        qsort(p->orig, n, sizeof(*p->orig), cmp_range);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t end = p->orig[i].addr + p->orig[i].len;
        p->maxend[i] = i && p->maxend[i - 1] > end ? p->maxend[i - 1] : end;
    }
    for (size_t k = 0; k < npieces; k++) {
        struct piece *pc = &p->pieces[k];
        size_t lo = 0, hi = n;
        while (lo < hi) { /* first range whose prefix reaches past the piece's start */
            size_t mid = lo + (hi - lo) / 2;
            if (p->maxend[mid] > pc->addr)
                hi = mid;
            else
                lo = mid + 1;
        }
        uint8_t mode = 0;
        for (size_t i = lo; i < n && p->orig[i].addr < pc->addr + pc->len; i++)
            if (p->orig[i].addr + p->orig[i].len > pc->addr)
                mode |= p->orig[i].mode;
        pc->mode = mode;
    }
    return GMUX_OK;
}

/* ---- learning ---- */

static void refit(struct pred_kernel *k, uint32_t arg, struct pred_arg *a)
{
    eng_shape_t shapes[ENG_PRED_SAMPLES];
    uint64_t vals[ENG_PRED_SAMPLES * ENG_VAL_COUNT];
    uint32_t n = k->ring_len;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = (k->ring_head + ENG_PRED_SAMPLES - n + i) % ENG_PRED_SAMPLES;
        shapes[i] = k->shapes[(size_t)slot * k->nargs + arg];
        memcpy(vals + (size_t)i * ENG_VAL_COUNT, k->vals + (size_t)slot * ENG_VAL_COUNT,
               sizeof(uint64_t) * ENG_VAL_COUNT);
    }
    if (n >= ENG_PRED_MIN_TRAIN && eng_tpl_fit(shapes, vals, n, k->val_ok, &a->tpl)) {
        a->state = ENG_PRED_CANDIDATE;
        return;
    }
    a->state = ENG_PRED_LEARNING;
    if (k->samples >= ENG_PRED_SAMPLES) {
        a->state = ENG_PRED_FALLBACK;
        a->reason = a->irregular_seen ? ENG_PRED_WHY_IRREGULAR : ENG_PRED_WHY_NO_FIT;
    }
}

static void learn_arg(struct pred_kernel *k, uint32_t arg, const eng_launch_t *l,
                      const eng_shape_t *shape)
{
    struct pred_arg *a = &k->args[arg];
    uint64_t ptr = l->args[arg].value;
    if (shape->kind == ENG_SHAPE_IRREGULAR)
        a->irregular_seen = true;
    switch (a->state) {
    case ENG_PRED_FALLBACK:
        return;
    case ENG_PRED_TRUSTED:
    case ENG_PRED_CANDIDATE:
        if (eng_tpl_matches(&a->tpl, l, ptr, shape)) {
            if (a->state == ENG_PRED_CANDIDATE) {
                a->state = ENG_PRED_TRUSTED;
                if (a->trusted_after == 0)
                    a->trusted_after = (uint32_t)k->samples;
            }
            return;
        }
        if (++a->misses >= ENG_PRED_MAX_MISSES) {
            a->state = ENG_PRED_FALLBACK;
            a->reason = a->irregular_seen ? ENG_PRED_WHY_IRREGULAR : ENG_PRED_WHY_UNSTABLE;
            return;
        }
        refit(k, arg, a);
        return;
    default:
        refit(k, arg, a);
        return;
    }
}

gmux_status_t eng_predictor_observe(eng_predictor_t *p, const eng_launch_t *l,
                                    const eng_range_t *touched, size_t n,
                                    const eng_region_lookup_t *rl)
{
    gmux_status_t st = eng_predictor_prepare(p, l);
    if (st != GMUX_OK)
        return st;
    const struct pred_kernel *kc = kernel_for(p, l);
    if (!kc) {
        COM_DEBUG(ENGINE, "kernel %u: launch layout differs from the first; sample ignored",
                  l->kernel);
        return GMUX_OK;
    }
    struct pred_kernel *k = &p->kernels[l->kernel];

    st = reserve((void **)&p->runs, &p->runs_cap, n, sizeof(*p->runs));
    if (st != GMUX_OK)
        return st;
    if (n)
        memcpy(p->runs, touched, n * sizeof(*touched));
    size_t nruns = eng_ranges_normalise(p->runs, n);

    struct ptr_ref ptrs[ENG_PRED_MAX_ARGS];
    size_t np = 0;
    for (uint32_t i = 0; i < l->nargs; i++) {
        uint64_t base, size;
        if (l->args[i].kind != ENG_ARG_PTR || l->args[i].value == 0 ||
            !rl->find(rl->ctx, l->args[i].value, &base, &size))
            continue;
        ptrs[np++] = (struct ptr_ref){l->args[i].value, base, size, i};
    }
    qsort(ptrs, np, sizeof(*ptrs), cmp_ptr);
    size_t npieces;
    st = attribute(p, p->runs, nruns, ptrs, np, &npieces);
    if (st != GMUX_OK)
        return st;

    st = piece_modes(p, touched, n, npieces);
    if (st != GMUX_OK)
        return st;
    st = reserve((void **)&p->runs, &p->runs_cap, npieces, sizeof(*p->runs));
    if (st != GMUX_OK)
        return st;
    uint32_t slot = k->ring_head;
    eng_launch_values(l, k->vals + (size_t)slot * ENG_VAL_COUNT);
    for (size_t i = 0; i < npieces; i++)
        if (p->pieces[i].owner < 0)
            k->unattributed += p->pieces[i].len;
    for (uint32_t arg = 0; arg < l->nargs; arg++) {
        if (k->layout[arg] != 'p')
            continue;
        /* Pieces of every pointer with this argument's value (duplicates share them). */
        size_t nr = 0;
        for (size_t i = 0; i < npieces; i++) {
            int32_t o = p->pieces[i].owner;
            if (o < 0 || ptrs[o].value != l->args[arg].value)
                continue;
            p->runs[nr++] = (eng_range_t){p->pieces[i].addr, p->pieces[i].len, p->pieces[i].mode};
        }
        nr = eng_ranges_normalise(p->runs, nr);
        eng_shape_of(l->args[arg].value, p->runs, nr, &k->shapes[(size_t)slot * k->nargs + arg]);
    }
    k->ring_head = (slot + 1) % ENG_PRED_SAMPLES;
    if (k->ring_len < ENG_PRED_SAMPLES)
        k->ring_len++;
    k->samples++;
    for (uint32_t arg = 0; arg < l->nargs; arg++)
        if (k->layout[arg] == 'p')
            learn_arg(k, arg, l, &k->shapes[(size_t)slot * k->nargs + arg]);
    return GMUX_OK;
}

/* ---- prediction ---- */

/* Appends the whole region of ptr unless already there. */
static void add_whole(const eng_region_lookup_t *rl, uint64_t ptr, eng_span_t *out, size_t cap,
                      size_t *n)
{
    uint64_t base, size;
    if (ptr == 0 || !rl->find(rl->ctx, ptr, &base, &size))
        return;
    for (size_t i = 0; i < *n && i < cap; i++)
        if (out[i].addr == base && out[i].len == size && out[i].count == 1) {
            out[i].mode = ENG_ACCESS_RW;
            return;
        }
    if (*n < cap)
        out[*n] = (eng_span_t){.addr = base, .len = size, .count = 1, .mode = ENG_ACCESS_RW};
    (*n)++;
}

gmux_status_t eng_predict_whole(const eng_launch_t *l, const eng_region_lookup_t *rl,
                                eng_span_t *out, size_t cap, size_t *n_p)
{
    size_t n = 0;
    for (uint32_t i = 0; i < l->nargs; i++)
        if (l->args[i].kind == ENG_ARG_PTR)
            add_whole(rl, l->args[i].value, out, cap, &n);
    *n_p = n;
    return n <= cap ? GMUX_OK : GMUX_ERR_CAPACITY;
}

/*
 * Keeps the pieces of a strided span that start below the end of ptr's
 * region: a program touches nothing past its allocations, and a template's
 * count (a database's constant, or a launch value) is otherwise unbounded for
 * every consumer that expands the span. More than ENG_SPAN_MAX_PIECES pieces
 * even so (a tiny stride over a large region) become their covering range.
 * False when no piece is left or ptr lies in no region.
 */
static bool clip_to_region(const eng_region_lookup_t *rl, uint64_t ptr, eng_span_t *s)
{
    uint64_t base, size;
    if (!rl->find(rl->ctx, ptr, &base, &size))
        return false;
    uint64_t end = base + size;
    if (s->addr >= end)
        return false;
    uint64_t fit = (end - 1 - s->addr) / s->stride + 1; /* count > 1: stride > len >= 1 */
    if (s->count > fit)
        s->count = fit;
    if (s->count == 1)
        s->stride = 0;
    if (s->count > ENG_SPAN_MAX_PIECES)
        eng_span_cover(s);
    return true;
}

gmux_status_t eng_predictor_predict(const eng_predictor_t *p, const eng_launch_t *l,
                                    const eng_region_lookup_t *rl, eng_span_t *out, size_t cap,
                                    size_t *n_p)
{
    const struct pred_kernel *k = kernel_for(p, l);
    if (!k)
        return eng_predict_whole(l, rl, out, cap, n_p);
    size_t n = 0;
    for (uint32_t i = 0; i < l->nargs; i++) {
        if (k->layout[i] != 'p')
            continue;
        const struct pred_arg *a = &k->args[i];
        uint64_t ptr = l->args[i].value;
        if (a->state == ENG_PRED_TRUSTED) {
            eng_span_t s;
            int r = eng_tpl_eval(&a->tpl, l, ptr, &s);
            if (r == 0 || (r == 1 && s.count > 1 && !clip_to_region(rl, ptr, &s)))
                continue;
            if (r == 1) {
                if (n < cap)
                    out[n] = s;
                n++;
                continue;
            }
        }
        add_whole(rl, ptr, out, cap, &n);
    }
    *n_p = n;
    return n <= cap ? GMUX_OK : GMUX_ERR_CAPACITY;
}

/* ---- introspection ---- */

uint32_t eng_predictor_nkernels(const eng_predictor_t *p)
{
    return p->nkernels;
}

gmux_status_t eng_predictor_kernel_info(const eng_predictor_t *p, uint32_t kernel,
                                        eng_pred_kernel_info_t *info)
{
    if (kernel >= p->nkernels)
        return GMUX_ERR_NOT_FOUND;
    const struct pred_kernel *k = &p->kernels[kernel];
    if (!k->seen && !k->name)
        return GMUX_ERR_NOT_FOUND;
    *info = (eng_pred_kernel_info_t){.name = k->name,
                                     .layout = k->layout,
                                     .nargs = k->nargs,
                                     .samples = k->samples,
                                     .unattributed = k->unattributed,
                                     .from_db = k->from_db};
    return GMUX_OK;
}

gmux_status_t eng_predictor_arg_info(const eng_predictor_t *p, uint32_t kernel, uint32_t arg,
                                     eng_pred_arg_info_t *info)
{
    if (kernel >= p->nkernels || !p->kernels[kernel].seen || arg >= p->kernels[kernel].nargs)
        return GMUX_ERR_NOT_FOUND;
    const struct pred_kernel *k = &p->kernels[kernel];
    const struct pred_arg *a = &k->args[arg];
    *info = (eng_pred_arg_info_t){.kind = k->layout[arg] == 'p' ? ENG_ARG_PTR : ENG_ARG_VAL,
                                  .state = a->state,
                                  .reason = a->reason,
                                  .tpl = a->tpl,
                                  .trusted_after = a->trusted_after,
                                  .misses = a->misses};
    return GMUX_OK;
}

const char *eng_predictor_describe(const eng_predictor_t *p, uint32_t kernel, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    if (kernel >= p->nkernels || !p->kernels[kernel].seen) {
        snprintf(buf, len, "unseen");
        return buf;
    }
    const struct pred_kernel *k = &p->kernels[kernel];
    for (uint32_t i = 0; i < k->nargs && used < len; i++) {
        const struct pred_arg *a = &k->args[i];
        char t[160];
        if (k->layout[i] != 'p')
            continue;
        if (a->state == ENG_PRED_TRUSTED)
            eng_tpl_format(&a->tpl, t, sizeof(t));
        else if (a->state == ENG_PRED_FALLBACK)
            snprintf(t, sizeof(t), "whole(%s)", eng_pred_reason_name(a->reason));
        else
            snprintf(t, sizeof(t), "whole(%s)", eng_pred_state_name(a->state));
        int w = snprintf(buf + used, len - used, "%sa%u:%s", used ? " " : "", i, t);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

gmux_status_t eng_predictor_library_add(eng_predictor_t *p, const char *name, const char *layout,
                                        const eng_pred_arg_info_t *args)
{
    size_t nargs = strlen(layout);
    if (nargs > ENG_PRED_MAX_ARGS || strspn(layout, "pv") != nargs)
        return GMUX_ERR_INVALID;
    struct lib_entry e = {strdup(name), strdup(layout), calloc(nargs ? nargs : 1, sizeof(*args))};
    if (!e.name || !e.layout || !e.args)
        goto fail_entry;
    if (nargs)
        memcpy(e.args, args, nargs * sizeof(*args));
    size_t at = p->nlib;
    for (size_t i = 0; i < p->nlib; i++)
        if (strcmp(p->lib[i].name, name) == 0 && strcmp(p->lib[i].layout, layout) == 0)
            at = i;
    if (at == p->nlib) {
        struct lib_entry *lib = realloc(p->lib, (p->nlib + 1) * sizeof(*lib));
        if (!lib)
            goto fail_entry;
        p->lib = lib;
        p->nlib++;
    } else {
        free(p->lib[at].name);
        free(p->lib[at].layout);
        free(p->lib[at].args);
    }
    p->lib[at] = e;
    for (uint32_t i = 0; i < p->nkernels; i++) {
        struct pred_kernel *k = &p->kernels[i];
        if (k->seen && k->name && strcmp(k->name, name) == 0 && strcmp(k->layout, layout) == 0)
            kernel_apply(k, &e);
    }
    return GMUX_OK;

fail_entry:
    free(e.name);
    free(e.layout);
    free(e.args);
    return GMUX_ERR_NOMEM;
}
