/* The region table: a sorted array of allocations under one rwlock. */
#include "shim/regions.h"

#include <stdlib.h>
#include <string.h>

#include "common/array.h"

#define REGIONS_INITIAL_CAP 256

gmux_status_t shim_regions_init(shim_regions_t *t)
{
    memset(t, 0, sizeof(*t));
    if (pthread_rwlock_init(&t->lock, NULL) != 0)
        return GMUX_ERR_NOMEM;
    return GMUX_OK;
}

void shim_regions_fini(shim_regions_t *t)
{
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
    pthread_rwlock_destroy(&t->lock);
}

/* Index of the last region with base <= addr, or -1. Caller holds the lock. */
static long regions_floor(const shim_regions_t *t, uint64_t addr)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (long)lo - 1;
}

static void regions_drop_at(shim_regions_t *t, size_t i)
{
    if (!(t->v[i].flags & SHIM_REGION_UNCOUNTED))
        __atomic_fetch_sub(&t->bytes[t->v[i].kind], t->v[i].size, __ATOMIC_RELAXED);
    t->count[t->v[i].kind]--;
    memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(t->v[0]));
    t->n--;
    t->changes++;
}

/* Drops every region overlapping [base, end). Caller holds the lock exclusively. */
static size_t regions_drop_overlaps(shim_regions_t *t, uint64_t base, uint64_t end)
{
    size_t dropped = 0;
    long i = regions_floor(t, base);
    if (i >= 0 && t->v[i].base + t->v[i].size > base) {
        regions_drop_at(t, (size_t)i);
        dropped++;
    }
    size_t j = (size_t)(i + 1);
    if (i >= 0 && dropped)
        j = (size_t)i;
    while (j < t->n && t->v[j].base < end) {
        regions_drop_at(t, j);
        dropped++;
    }
    return dropped;
}

gmux_status_t shim_regions_insert(shim_regions_t *t, uint64_t base, uint64_t size,
                                  shim_region_kind_t kind, uint8_t loc_type)
{
    return shim_regions_insert_in(t, base, size, kind, loc_type, 0, 0);
}

gmux_status_t shim_regions_insert_in(shim_regions_t *t, uint64_t base, uint64_t size,
                                     shim_region_kind_t kind, uint8_t loc_type, uint64_t ctx,
                                     uint8_t flags)
{
    if (size == 0 || base + size < base || (unsigned)kind >= SHIM_REGION_KIND_COUNT)
        return GMUX_ERR_INVALID;
    gmux_status_t st = GMUX_OK;
    pthread_rwlock_wrlock(&t->lock);
    regions_drop_overlaps(t, base, base + size);
    if (t->n == t->cap) {
        st = com_array_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v), REGIONS_INITIAL_CAP,
                            SIZE_MAX);
        if (st != GMUX_OK)
            goto out_unlock;
    }
    size_t pos = (size_t)(regions_floor(t, base) + 1);
    memmove(&t->v[pos + 1], &t->v[pos], (t->n - pos) * sizeof(t->v[0]));
    t->v[pos] = (shim_region_t){.base = base,
                                .size = size,
                                .ctx = ctx,
                                .kind = (uint8_t)kind,
                                .loc_type = loc_type,
                                .flags = flags,
                                .gen = 0};
    t->n++;
    if (!(flags & SHIM_REGION_UNCOUNTED))
        __atomic_fetch_add(&t->bytes[kind], size, __ATOMIC_RELAXED);
    t->count[kind]++;
    t->changes++;
out_unlock:
    pthread_rwlock_unlock(&t->lock);
    return st;
}

gmux_status_t shim_regions_remove(shim_regions_t *t, uint64_t base, shim_region_t *out_p)
{
    gmux_status_t st = GMUX_ERR_NOT_FOUND;
    pthread_rwlock_wrlock(&t->lock);
    long i = regions_floor(t, base);
    if (i >= 0 && t->v[i].base == base) {
        if (out_p)
            *out_p = t->v[i];
        regions_drop_at(t, (size_t)i);
        st = GMUX_OK;
    }
    pthread_rwlock_unlock(&t->lock);
    return st;
}

size_t shim_regions_remove_range(shim_regions_t *t, uint64_t base, uint64_t size)
{
    uint64_t end = base + size < base ? UINT64_MAX : base + size;
    pthread_rwlock_wrlock(&t->lock);
    size_t dropped = size ? regions_drop_overlaps(t, base, end) : 0;
    pthread_rwlock_unlock(&t->lock);
    return dropped;
}

void shim_regions_count_bytes(shim_regions_t *t, shim_region_kind_t kind, int64_t delta)
{
    if ((unsigned)kind >= SHIM_REGION_KIND_COUNT || delta == 0)
        return;
    pthread_rwlock_wrlock(&t->lock);
    __atomic_fetch_add(&t->bytes[kind], (uint64_t)delta, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&t->lock);
}

size_t shim_regions_remove_ctx(shim_regions_t *t, uint64_t ctx, shim_region_t *out, size_t max)
{
    size_t n = 0;
    if (!ctx)
        return 0;
    pthread_rwlock_wrlock(&t->lock);
    size_t keep = 0; /* one pass, order kept: the array stays sorted */
    for (size_t i = 0; i < t->n; i++) {
        const shim_region_t *r = &t->v[i];
        if (r->ctx == ctx && n < max) {
            if (!(r->flags & SHIM_REGION_UNCOUNTED))
                __atomic_fetch_sub(&t->bytes[r->kind], r->size, __ATOMIC_RELAXED);
            t->count[r->kind]--;
            out[n++] = *r;
            continue;
        }
        t->v[keep++] = *r;
    }
    t->changes += t->n - keep;
    t->n = keep;
    pthread_rwlock_unlock(&t->lock);
    return n;
}

/* The region containing addr, or NULL. Caller holds the lock. */
static shim_region_t *regions_lookup(const shim_regions_t *t, uint64_t addr)
{
    long i = regions_floor(t, addr);
    if (i < 0 || addr - t->v[i].base >= t->v[i].size)
        return NULL;
    return &t->v[i];
}

bool shim_regions_find(shim_regions_t *t, uint64_t addr, shim_region_t *out_p)
{
    pthread_rwlock_rdlock(&t->lock);
    shim_region_t *r = regions_lookup(t, addr);
    if (r && out_p) {
        *out_p = *r;
        out_p->gen = __atomic_load_n(&r->gen, __ATOMIC_RELAXED);
    }
    pthread_rwlock_unlock(&t->lock);
    return r != NULL;
}

size_t shim_regions_find_n(shim_regions_t *t, const uint64_t *addrs, size_t n, shim_region_t *out)
{
    size_t found = 0;
    pthread_rwlock_rdlock(&t->lock);
    for (size_t i = 0; i < n; i++) {
        shim_region_t *r = regions_lookup(t, addrs[i]);
        if (r) {
            out[i] = *r;
            out[i].gen = __atomic_load_n(&r->gen, __ATOMIC_RELAXED);
            found++;
        } else {
            out[i] = (shim_region_t){0};
        }
    }
    pthread_rwlock_unlock(&t->lock);
    return found;
}

uint64_t shim_regions_bytes(shim_regions_t *t, shim_region_kind_t kind)
{
    /* no lock: the launch path asks this at every launch (written atomically) */
    return __atomic_load_n(&t->bytes[kind], __ATOMIC_RELAXED);
}

uint64_t shim_regions_count(shim_regions_t *t, shim_region_kind_t kind)
{
    pthread_rwlock_rdlock(&t->lock);
    uint64_t c = t->count[kind];
    pthread_rwlock_unlock(&t->lock);
    return c;
}

uint64_t shim_regions_total_bytes(shim_regions_t *t)
{
    uint64_t sum = 0;
    pthread_rwlock_rdlock(&t->lock);
    for (int k = 0; k < SHIM_REGION_KIND_COUNT; k++)
        sum += __atomic_load_n(&t->bytes[k], __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&t->lock);
    return sum;
}

size_t shim_regions_claim(shim_regions_t *t, const uint64_t *vals, size_t n, uint32_t gen,
                          uint64_t stream, uint64_t force_above, shim_range_t *out,
                          shim_region_was_t *olds, size_t max, size_t *hits_p)
{
    size_t nout = 0, hits = 0;
    pthread_rwlock_rdlock(&t->lock);
    bool force = __atomic_load_n(&t->bytes[SHIM_REGION_MANAGED], __ATOMIC_RELAXED) > force_above;
    for (size_t i = 0; i < n; i++) {
        shim_region_t *r = regions_lookup(t, vals[i]);
        if (!r)
            continue;
        hits++;
        if (r->kind != SHIM_REGION_MANAGED || nout == max)
            continue;
        bool dup = false;
        for (size_t j = 0; j < nout && !dup; j++)
            dup = out[j].addr == r->base;
        if (dup)
            continue;
        uint32_t old = __atomic_exchange_n(&r->gen, gen, __ATOMIC_RELAXED);
        uint64_t order = __atomic_load_n(&r->order, __ATOMIC_RELAXED);
        if (!force && old == gen && (!order || order == stream))
            continue;
        if (order) /* the shim's prefetch, which the launch waits for, orders it */
            __atomic_store_n(&r->order, 0, __ATOMIC_RELAXED);
        if (olds)
            olds[nout] = (shim_region_was_t){.gen = old, .order = order};
        out[nout++] = (shim_range_t){.addr = r->base, .len = r->size};
    }
    pthread_rwlock_unlock(&t->lock);
    if (hits_p)
        *hits_p = hits;
    return nout;
}

size_t shim_regions_remark(shim_regions_t *t, uint32_t from, uint32_t gen)
{
    size_t marked = 0;
    pthread_rwlock_rdlock(&t->lock);
    for (size_t k = 0; k < t->n; k++) {
        uint32_t old = from; /* a claim may move it at once: then it stays claimed */
        marked += t->v[k].kind == SHIM_REGION_MANAGED &&
                  __atomic_compare_exchange_n(&t->v[k].gen, &old, gen, false, __ATOMIC_RELAXED,
                                              __ATOMIC_RELAXED);
    }
    pthread_rwlock_unlock(&t->lock);
    return marked;
}

void shim_regions_unclaim(shim_regions_t *t, const shim_range_t *out, const shim_region_was_t *olds,
                          size_t n, uint32_t gen)
{
    pthread_rwlock_rdlock(&t->lock);
    for (size_t i = 0; i < n; i++) {
        shim_region_t *r = regions_lookup(t, out[i].addr);
        uint32_t expect = gen;
        uint64_t cleared = 0;
        if (r && r->base == out[i].addr &&
            __atomic_compare_exchange_n(&r->gen, &expect, olds[i].gen, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED) &&
            olds[i].order)
            __atomic_compare_exchange_n(&r->order, &cleared, olds[i].order, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED);
    }
    pthread_rwlock_unlock(&t->lock);
}

size_t shim_regions_mark(shim_regions_t *t, uint64_t addr, uint64_t len, uint32_t gen,
                         uint64_t stream, bool whole)
{
    size_t marked = 0;
    if (len == 0 || addr + len < addr)
        return 0;
    pthread_rwlock_rdlock(&t->lock);
    long i = regions_floor(t, addr);
    if (i < 0 || addr - t->v[i].base >= t->v[i].size)
        i++; /* addr is in no region: the first one after it */
    for (size_t k = (size_t)i; k < t->n && t->v[k].base < addr + len; k++) {
        shim_region_t *r = &t->v[k];
        if (r->kind != SHIM_REGION_MANAGED)
            continue;
        if (whole && (r->base < addr || r->base + r->size > addr + len))
            continue;
        __atomic_store_n(&r->order, stream, __ATOMIC_RELAXED);
        __atomic_store_n(&r->gen, gen, __ATOMIC_RELAXED);
        marked++;
    }
    pthread_rwlock_unlock(&t->lock);
    return marked;
}
