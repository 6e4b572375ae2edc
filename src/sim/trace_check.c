/* Validation of a task's event stream: see trace_check.h. */
#include "sim/trace_check.h"
#include "common/array.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sim_check_node {
    sim_region_t r;
    uint32_t left, right; /* treap children; left links the free list */
    uint64_t prio;        /* max-heap order of the treap */
};

#define NIL SIM_CHECK_NIL

void sim_check_init(sim_check_t *c, uint32_t nkernels)
{
    memset(c, 0, sizeof(*c));
    c->root = c->free = c->last = NIL;
    c->nkernels = nkernels;
    c->prio = 0x9e3779b97f4a7c15ull;
}

void sim_check_fini(sim_check_t *c)
{
    free(c->nodes);
    free(c->ids);
    memset(c, 0, sizeof(*c));
    c->root = c->free = c->last = NIL;
}

/* Priorities come from a generator, never from the input: no trace can make
 * the treap deep. */
static uint64_t next_prio(sim_check_t *c)
{
    uint64_t z = (c->prio += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Splits treap t into bases < key (*l) and bases >= key (*r). */
static void split(sim_check_t *c, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
    if (t == NIL) {
        *l = *r = NIL;
        return;
    }
    c->work++;
    sim_check_node_t *x = &c->nodes[t];
    if (x->r.base < key) {
        split(c, x->right, key, &x->right, r);
        *l = t;
    } else {
        split(c, x->left, key, l, &x->left);
        *r = t;
    }
}

/* Joins treaps a and b, every base of a below every base of b. */
static uint32_t merge(sim_check_t *c, uint32_t a, uint32_t b)
{
    if (a == NIL)
        return b;
    if (b == NIL)
        return a;
    c->work++;
    if (c->nodes[a].prio > c->nodes[b].prio) {
        c->nodes[a].right = merge(c, c->nodes[a].right, b);
        return a;
    }
    c->nodes[b].left = merge(c, a, c->nodes[b].left);
    return b;
}

/* The region with the greatest base <= addr (or_equal) or < addr, or NIL. */
static uint32_t below(sim_check_t *c, uint64_t addr, bool or_equal)
{
    uint32_t t = c->root, best = NIL;
    while (t != NIL) {
        c->work++;
        uint64_t b = c->nodes[t].r.base;
        if (b < addr || (or_equal && b == addr)) {
            best = t;
            t = c->nodes[t].right;
        } else {
            t = c->nodes[t].left;
        }
    }
    return best;
}

/* The region with the smallest base > addr, or NIL. */
static uint32_t above(sim_check_t *c, uint64_t addr)
{
    uint32_t t = c->root, best = NIL;
    while (t != NIL) {
        c->work++;
        if (c->nodes[t].r.base > addr) {
            best = t;
            t = c->nodes[t].left;
        } else {
            t = c->nodes[t].right;
        }
    }
    return best;
}

static size_t id_home(uint64_t id, size_t cap)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (size_t)id & (cap - 1);
}

/* The slot holding id, or the empty slot where it would go (idcap > 0). */
static size_t id_slot(sim_check_t *c, uint64_t id)
{
    size_t m = c->idcap - 1, i = id_home(id, c->idcap);
    while (c->ids[i] && c->nodes[c->ids[i] - 1].r.id != id) {
        c->work++;
        i = (i + 1) & m;
    }
    return i;
}

/* Room in the id hash for one more (kept at most half full). */
static gmux_status_t id_reserve(sim_check_t *c)
{
    if ((c->n + 1) * 2 <= c->idcap)
        return GMUX_OK;
    size_t cap = c->idcap ? c->idcap * 2 : 64;
    if (cap > SIZE_MAX / sizeof(*c->ids))
        return GMUX_ERR_NOMEM;
    uint32_t *old = c->ids;
    size_t oldcap = c->idcap;
    c->ids = calloc(cap, sizeof(*c->ids));
    if (!c->ids) {
        c->ids = old;
        return GMUX_ERR_NOMEM;
    }
    c->idcap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i])
            c->ids[id_slot(c, c->nodes[old[i] - 1].r.id)] = old[i];
    free(old);
    return GMUX_OK;
}

/* Empties slot i, moving later entries of its probe run back into the gap. */
static void id_erase(sim_check_t *c, size_t i)
{
    size_t m = c->idcap - 1;
    for (size_t j = (i + 1) & m; c->ids[j]; j = (j + 1) & m) {
        c->work++;
        size_t k = id_home(c->nodes[c->ids[j] - 1].r.id, c->idcap);
        /* the entry at j stays when its home lies cyclically in (i, j] */
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        c->ids[i] = c->ids[j];
        i = j;
    }
    c->ids[i] = 0;
}

static gmux_status_t node_new(sim_check_t *c, uint32_t *t)
{
    if (c->free != NIL) {
        *t = c->free;
        c->free = c->nodes[*t].left;
        return GMUX_OK;
    }
    if (c->nused == NIL - 1)
        return GMUX_ERR_NOMEM;
    if (c->nused == c->ncap) {
        gmux_status_t st = com_array_grow_u32((void **)&c->nodes, &c->ncap, (size_t)c->nused + 1,
                                              sizeof(*c->nodes), 64);
        if (st != GMUX_OK)
            return st;
    }
    *t = c->nused++;
    return GMUX_OK;
}

static int covers(const sim_region_t *r, uint64_t addr, uint64_t len)
{
    return addr >= r->base && addr - r->base <= r->size && len <= r->size - (addr - r->base);
}

const sim_region_t *sim_check_find(sim_check_t *c, uint64_t addr, uint64_t len)
{
    if (c->last != NIL && covers(&c->nodes[c->last].r, addr, len))
        return &c->nodes[c->last].r;
    uint32_t t = below(c, addr, true);
    if (t == NIL || !covers(&c->nodes[t].r, addr, len))
        return NULL;
    c->last = t;
    return &c->nodes[t].r;
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
    uint32_t t;
    if (id_reserve(c) != GMUX_OK || node_new(c, &t) != GMUX_OK) {
        snprintf(why, len, "out of memory");
        return GMUX_ERR_NOMEM;
    }
    size_t slot = id_slot(c, a->id);
    bool live = c->ids[slot] != 0, overlaps = false;
    if (!live) {
        /* bases are distinct: equal ones would overlap (sizes are > 0) */
        uint32_t p = below(c, a->base, true), q = above(c, a->base);
        overlaps = (p != NIL && c->nodes[p].r.base + c->nodes[p].r.size > a->base) ||
                   (q != NIL && c->nodes[q].r.base < a->base + a->size);
    }
    if (live || overlaps) {
        c->nodes[t].left = c->free; /* the node goes back unused */
        c->free = t;
        if (live)
            snprintf(why, len, "allocation id %" PRIu64 " is already live", a->id);
        else
            snprintf(why, len, "allocation %" PRIu64 " overlaps a live allocation", a->id);
        return GMUX_ERR_PARSE;
    }
    c->nodes[t] = (sim_check_node_t){.r = {.base = a->base, .size = a->size, .id = a->id},
                                     .left = NIL,
                                     .right = NIL,
                                     .prio = next_prio(c)};
    uint32_t l, r;
    split(c, c->root, a->base, &l, &r);
    c->root = merge(c, merge(c, l, t), r);
    c->ids[slot] = t + 1;
    c->n++;
    c->live_bytes += a->size;
    if (c->live_bytes > c->peak_bytes)
        c->peak_bytes = c->live_bytes;
    return GMUX_OK;
}

static gmux_status_t check_free(sim_check_t *c, const sim_free_ev_t *f, char *why, size_t len)
{
    size_t slot = c->idcap ? id_slot(c, f->id) : 0;
    if (!c->idcap || !c->ids[slot]) {
        snprintf(why, len, "free of allocation id %" PRIu64 " which is not live", f->id);
        return GMUX_ERR_PARSE;
    }
    uint32_t t = c->ids[slot] - 1, l, m, r;
    uint64_t base = c->nodes[t].r.base; /* < 2^64 - 1: the region does not wrap */
    split(c, c->root, base, &l, &r);
    split(c, r, base + 1, &m, &r); /* m is t alone */
    c->root = merge(c, l, r);
    id_erase(c, slot);
    c->live_bytes -= c->nodes[t].r.size;
    c->n--;
    if (c->last == t)
        c->last = NIL;
    c->nodes[t].left = c->free;
    c->free = t;
    return GMUX_OK;
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
