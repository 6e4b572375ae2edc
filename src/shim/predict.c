/* Template prediction in the shim: see predict.h. */
#include "shim/predict.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/settings.h"
#include "engine/predictor.h"
#include "engine/template_db.h"
#include "shim/kname.h"
#include "shim/params.h"
#include "shim/shim.h"
#include "shim/stats.h"

#define PRED_FUNCS      2048u /* functions remembered (open addressing, power of two) */
#define PRED_KERNELS    1024u /* distinct kernel names */
#define PRED_PIECES_MAX 8u    /* strided spans with more pieces: their covering range */
#define PRED_SPANS_MAX  64u

typedef struct pred_func {
    CUfunction f; /* NULL: free slot */
    uint32_t kernel;
} pred_func_t;

static pthread_once_t pred_once = PTHREAD_ONCE_INIT;
static pthread_rwlock_t pred_lock = PTHREAD_RWLOCK_INITIALIZER;
static eng_predictor_t *pred; /* NULL: no database */
static pred_func_t pred_funcs[PRED_FUNCS];
static size_t pred_nfuncs;
static char *pred_names[PRED_KERNELS];
static uint32_t pred_nkernels;

static void pred_init(void)
{
    const char *path = COM_SETTING_STRING(TEMPLATES);
    if (!path || !*path)
        return;
    eng_predictor_t *p;
    if (eng_predictor_create(&p) != GMUX_OK) {
        COM_WARN(SHIM, "no memory for the template predictor: whole regions are prefetched");
        return;
    }
    char err[512];
    if (eng_tpl_db_load(p, path, err, sizeof(err)) != GMUX_OK) {
        COM_WARN(SHIM, "template database not used (%s): whole regions are prefetched", err);
        eng_predictor_destroy(p);
        return;
    }
    COM_DEBUG(SHIM, "template database %s loaded", path);
    pred = p;
}

__attribute__((destructor)) static void pred_fini(void)
{
    if (shim_forked_child())
        return; /* pred_lock may be held by a thread that is not there: the memory goes anyway */
    pthread_rwlock_wrlock(&pred_lock);
    if (pred)
        eng_predictor_destroy(pred);
    pred = NULL;
    for (uint32_t i = 0; i < pred_nkernels; i++)
        free(pred_names[i]);
    pred_nkernels = 0;
    pthread_rwlock_unlock(&pred_lock);
}

bool shim_predict_enabled(void)
{
    pthread_once(&pred_once, pred_init);
    return pred != NULL;
}

static size_t pred_slot(CUfunction f)
{
    uintptr_t h = (uintptr_t)f;
    h ^= h >> 17;
    h *= 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 40) & (PRED_FUNCS - 1);
}

/* The slot holding f, or the free slot where it would go; NULL if the table is full. */
static pred_func_t *pred_find(CUfunction f)
{
    size_t s = pred_slot(f);
    for (size_t i = 0; i < PRED_FUNCS; i++) {
        pred_func_t *e = &pred_funcs[(s + i) & (PRED_FUNCS - 1)];
        if (e->f == f || e->f == NULL)
            return e;
    }
    return NULL;
}

/* Kernel id of a name, declaring it on first use; false when out of room. Write lock held. */
static bool pred_kernel_id(const char *name, uint32_t *id_p, bool *new_p)
{
    for (uint32_t i = 0; i < pred_nkernels; i++)
        if (strcmp(pred_names[i], name) == 0) {
            *id_p = i;
            *new_p = false;
            return true;
        }
    if (pred_nkernels == PRED_KERNELS)
        return false;
    char *copy = strdup(name);
    if (!copy)
        return false;
    if (eng_predictor_name_kernel(pred, pred_nkernels, name) != GMUX_OK) {
        free(copy);
        return false;
    }
    pred_names[pred_nkernels] = copy;
    *id_p = pred_nkernels++;
    *new_p = true;
    return true;
}

/* Binds f to its kernel (first launch of f): names it, and binds the kernel
 * to its database entry on the kernel's first launch. */
static bool pred_bind(eng_launch_t *el, CUfunction f)
{
    bool ok = false;
    pthread_rwlock_wrlock(&pred_lock);
    pred_func_t *e = pred_find(f);
    if (e && e->f == f) { /* another thread bound it meanwhile */
        el->kernel = e->kernel;
        ok = true;
    } else if (e && pred_nfuncs + 1 < PRED_FUNCS) {
        char name[SHIM_KNAME_MAX + 1];
        shim_func_name(f, name); /* the name gmux profile recorded it under */
        if (!name[0])
            snprintf(name, sizeof(name), "kernel_%p", (void *)f); /* matches no database entry */
        bool fresh = false;
        if (pred_kernel_id(name, &el->kernel, &fresh)) {
            if (fresh)
                (void)eng_predictor_prepare(pred, el);
            e->f = f;
            e->kernel = el->kernel;
            pred_nfuncs++;
            ok = true;
        }
    }
    pthread_rwlock_unlock(&pred_lock);
    return ok;
}

void shim_predict_forget_functions(void)
{
    pthread_rwlock_wrlock(&pred_lock);
    memset(pred_funcs, 0, sizeof(pred_funcs));
    pred_nfuncs = 0;
    pthread_rwlock_unlock(&pred_lock);
}

/* The regions of one launch's values (looked up under one lock), which the
 * predictor's spans almost always fall in; the table is asked otherwise. */
typedef struct pred_regions {
    const shim_region_t *v;
    size_t n;
} pred_regions_t;

static bool pred_lookup(const pred_regions_t *c, uint64_t addr, shim_region_t *r)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].size && addr - c->v[i].base < c->v[i].size) {
            *r = c->v[i];
            return true;
        }
    return shim_regions_find(&shim_state.regions, addr, r);
}

static bool pred_region(void *ctx, uint64_t addr, uint64_t *base_p, uint64_t *size_p)
{
    shim_region_t r;
    if (!pred_lookup(ctx, addr, &r))
        return false;
    *base_p = r.base;
    *size_p = r.size;
    return true;
}

typedef struct pred_out {
    shim_range_t *v;
    size_t n, max;
    bool narrow; /* some range is smaller than its region */
} pred_out_t;

/* Adds [addr, addr+len) clipped to the managed region holding addr (nothing
 * outside managed memory: the driver refuses such a prefetch); false when out
 * is full, since a range left out would be an under-prediction. */
static bool pred_add(const pred_regions_t *c, uint64_t addr, uint64_t len, pred_out_t *o)
{
    shim_region_t r;
    if (len == 0 || !pred_lookup(c, addr, &r) || r.kind != SHIM_REGION_MANAGED)
        return true;
    if (o->n == o->max)
        return false;
    uint64_t end = r.base + r.size - addr < len ? r.base + r.size : addr + len;
    o->v[o->n++] = (shim_range_t){.addr = addr, .len = end - addr};
    o->narrow |= end - addr < r.size;
    return true;
}

/* The ranges of one span: each piece, or the covering range of many. */
static bool pred_add_span(const pred_regions_t *c, const eng_span_t *s, pred_out_t *o)
{
    if (s->count <= 1)
        return pred_add(c, s->addr, s->len, o);
    if (s->count <= PRED_PIECES_MAX) {
        for (uint64_t k = 0; k < s->count; k++)
            if (!pred_add(c, s->addr + k * s->stride, s->len, o))
                return false;
        return true;
    }
    uint64_t reach;
    if (__builtin_mul_overflow(s->count - 1, s->stride, &reach) ||
        __builtin_add_overflow(reach, s->len, &reach))
        reach = UINT64_MAX - s->addr; /* clipped to the region by pred_add */
    return pred_add(c, s->addr, reach, o);
}

size_t shim_predict_ranges(const shim_launch_info_t *l, shim_range_t *out, size_t max, bool *ok_p,
                           bool *narrow_p)
{
    *ok_p = false;
    *narrow_p = false;
    if (!shim_predict_enabled() || !l->func || (!l->params && !l->extra))
        return 0;
    uint64_t vals[ENG_PRED_MAX_ARGS];
    size_t nvals = shim_params_values(l->func, l->params, l->extra, vals, ENG_PRED_MAX_ARGS);
    if (nvals == 0 || nvals == ENG_PRED_MAX_ARGS)
        return 0; /* unreadable, or possibly cut short */
    shim_region_t regs[ENG_PRED_MAX_ARGS];
    shim_regions_find_n(&shim_state.regions, vals, nvals, regs);
    pred_regions_t cache = {.v = regs, .n = nvals};
    eng_arg_t args[ENG_PRED_MAX_ARGS];
    for (size_t i = 0; i < nvals; i++)
        args[i] = (eng_arg_t){.kind = regs[i].size ? ENG_ARG_PTR : ENG_ARG_VAL, .value = vals[i]};
    eng_launch_t el = {.grid = {l->grid[0], l->grid[1], l->grid[2]},
                       .block = {l->block[0], l->block[1], l->block[2]},
                       .nargs = (uint32_t)nvals,
                       .args = args};
    eng_span_t spans[PRED_SPANS_MAX];
    size_t nspans = 0;
    eng_region_lookup_t rl = {.find = pred_region, .ctx = &cache};
    gmux_status_t st = GMUX_ERR_NOT_FOUND;
    for (int pass = 0; pass < 2 && st == GMUX_ERR_NOT_FOUND; pass++) {
        /* first launch of this function: bind it, then predict */
        if (pass == 1 && !pred_bind(&el, l->func))
            return 0;
        pthread_rwlock_rdlock(&pred_lock);
        pred_func_t *e = pred_find(l->func);
        if (e && e->f == l->func) {
            el.kernel = e->kernel;
            st = eng_predictor_predict(pred, &el, &rl, spans, PRED_SPANS_MAX, &nspans);
            st = st == GMUX_ERR_NOT_FOUND ? GMUX_ERR_STATE : st;
        }
        pthread_rwlock_unlock(&pred_lock);
    }
    if (st != GMUX_OK)
        return 0;
    pred_out_t o = {.v = out, .n = 0, .max = max, .narrow = false};
    for (size_t i = 0; i < nspans; i++)
        if (!pred_add_span(&cache, &spans[i], &o))
            return 0; /* more ranges than out holds: whole regions instead */
    *ok_p = true;
    *narrow_p = o.narrow;
    return o.n;
}
