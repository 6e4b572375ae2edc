/* Validation of a task's event stream: see trace_check.h. */
#include "sim/trace_check.h"
#include "common/array.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sim_check_init(sim_check_t *c, uint32_t nkernels)
{
    memset(c, 0, sizeof(*c));
    c->nkernels = nkernels;
}

void sim_check_fini(sim_check_t *c)
{
    free(c->v);
    memset(c, 0, sizeof(*c));
}

/* Index of the first region whose base is > addr. */
static size_t upper_bound(const sim_check_t *c, uint64_t addr)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->v[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int covers(const sim_region_t *r, uint64_t addr, uint64_t len)
{
    return addr >= r->base && addr - r->base <= r->size && len <= r->size - (addr - r->base);
}

const sim_region_t *sim_check_find(sim_check_t *c, uint64_t addr, uint64_t len)
{
    if (c->last < c->n && covers(&c->v[c->last], addr, len))
        return &c->v[c->last];
    size_t i = upper_bound(c, addr);
    if (i == 0 || !covers(&c->v[i - 1], addr, len))
        return NULL;
    c->last = i - 1;
    return &c->v[i - 1];
}

static gmux_status_t check_alloc(sim_check_t *c, const sim_alloc_ev_t *a, char *why, size_t len)
{
    if (a->size == 0) {
        snprintf(why, len, "allocation %" PRIu64 " has size 0", a->id);
        return GMUX_ERR_PARSE;
    }
    if (a->base + a->size < a->base) {
        snprintf(why, len, "allocation %" PRIu64 " wraps around the address space", a->id);
        return GMUX_ERR_PARSE;
    }
    for (size_t i = 0; i < c->n; i++) {
        if (c->v[i].id == a->id) {
            snprintf(why, len, "allocation id %" PRIu64 " is already live", a->id);
            return GMUX_ERR_PARSE;
        }
    }
    size_t i = upper_bound(c, a->base);
    if ((i > 0 && c->v[i - 1].base + c->v[i - 1].size > a->base) ||
        (i < c->n && c->v[i].base < a->base + a->size)) {
        snprintf(why, len, "allocation %" PRIu64 " overlaps a live allocation", a->id);
        return GMUX_ERR_PARSE;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        sim_region_t *v = realloc(c->v, cap * sizeof(*v));
        if (!v) {
            snprintf(why, len, "out of memory");
            return GMUX_ERR_NOMEM;
        }
        c->v = v;
        c->cap = cap;
    }
    memmove(&c->v[i + 1], &c->v[i], (c->n - i) * sizeof(*c->v));
    c->v[i] = (sim_region_t){.base = a->base, .size = a->size, .id = a->id};
    c->n++;
    c->live_bytes += a->size;
    if (c->live_bytes > c->peak_bytes)
        c->peak_bytes = c->live_bytes;
    return GMUX_OK;
}

static gmux_status_t check_free(sim_check_t *c, const sim_free_ev_t *f, char *why, size_t len)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->v[i].id == f->id) {
            c->live_bytes -= c->v[i].size;
            memmove(&c->v[i], &c->v[i + 1], (c->n - i - 1) * sizeof(*c->v));
            c->n--;
            return GMUX_OK;
        }
    }
    snprintf(why, len, "free of allocation id %" PRIu64 " which is not live", f->id);
    return GMUX_ERR_PARSE;
}

static gmux_status_t check_launch(sim_check_t *c, const sim_launch_ev_t *l, char *why, size_t len)
{
    if (l->kernel >= c->nkernels) {
        snprintf(why, len, "unknown kernel id %" PRIu32 " (%" PRIu32 " declared)", l->kernel,
                 c->nkernels);
        return GMUX_ERR_PARSE;
    }
    for (uint32_t i = 0; i < l->nargs; i++) {
        if (l->args[i].kind != ENG_ARG_PTR && l->args[i].kind != ENG_ARG_VAL) {
            snprintf(why, len, "argument %" PRIu32 " has unknown kind %u", i, l->args[i].kind);
            return GMUX_ERR_PARSE;
        }
    }
    for (uint32_t i = 0; i < l->nranges; i++) {
        const sim_range_t *r = &l->ranges[i];
        if (r->mode < ENG_ACCESS_READ || r->mode > ENG_ACCESS_RW) {
            snprintf(why, len, "range %" PRIu32 " has unknown mode %u", i, r->mode);
            return GMUX_ERR_PARSE;
        }
        if (r->len == 0 || !sim_check_find(c, r->addr, r->len)) {
            snprintf(why, len,
                     "range %" PRIu32 " [0x%" PRIx64 ", +%" PRIu64 ") is empty or outside every "
                     "live allocation",
                     i, r->addr, r->len);
            return GMUX_ERR_PARSE;
        }
    }
    return GMUX_OK;
}

gmux_status_t sim_check_event(sim_check_t *c, const sim_event_t *ev, char *why, size_t whylen)
{
    switch (ev->kind) {
    case SIM_EV_ALLOC:
        return check_alloc(c, &ev->u.alloc, why, whylen);
    case SIM_EV_FREE:
        return check_free(c, &ev->u.free, why, whylen);
    case SIM_EV_LAUNCH:
        return check_launch(c, &ev->u.launch, why, whylen);
    }
    snprintf(why, whylen, "unknown event kind %d", (int)ev->kind);
    return GMUX_ERR_PARSE;
}

int sim_trace_grow(void **v, uint32_t *cap, uint64_t need, size_t elem)
{
    if (need > SIZE_MAX)
        return -1;
    return com_array_grow_u32(v, cap, (size_t)need, elem, 8) == GMUX_OK ? 0 : -1;
}
