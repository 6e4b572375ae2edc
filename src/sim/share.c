/* Shares of a region's fault units that launches touched. See share.h. */
#include "sim/share.h"
#include "common/array.h"

#include <stdlib.h>
#include <string.h>

#define SIM_SHARE_PROBES 8 /* slots a key may take, from the one it hashes to */

typedef struct share_ent {
    bool used;
    sim_share_key_t key;
    uint64_t nunits, set;
    uint64_t *bits; /* nunits bits */
} share_ent_t;

struct sim_share {
    share_ent_t *slots;
    uint32_t mask;
    uint64_t unit, max_bytes;
    uint64_t *idx; /* sim_share_launch's scratch */
    uint32_t idx_cap;
};

gmux_status_t sim_share_create(uint32_t slots, uint64_t unit, uint64_t max_bytes, sim_share_t **s_p)
{
    if (unit == 0)
        return GMUX_ERR_INVALID;
    uint32_t n = 16;
    while (n < slots && n < (1u << 20))
        n *= 2;
    sim_share_t *s = calloc(1, sizeof(*s));
    if (!s)
        return GMUX_ERR_NOMEM;
    s->slots = calloc(n, sizeof(*s->slots));
    if (!s->slots) {
        free(s);
        return GMUX_ERR_NOMEM;
    }
    s->mask = n - 1;
    s->unit = unit;
    s->max_bytes = max_bytes;
    *s_p = s;
    return GMUX_OK;
}

void sim_share_destroy(sim_share_t *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i <= s->mask; i++)
        free(s->slots[i].bits);
    free(s->slots);
    free(s->idx);
    free(s);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

gmux_status_t sim_share_launch(sim_share_t *s, uint64_t base, uint64_t size, const eng_range_t *r,
                               uint32_t n, double *share_p)
{
    uint64_t cs = s->unit, nidx = 0, got = 0;
    uint64_t nunits = (size + cs - 1) / cs;
    *share_p = 1.0;
    if (nunits == 0)
        return GMUX_OK;
    if (n + 1 > s->idx_cap) {
        gmux_status_t st =
            com_array_grow_u32((void **)&s->idx, &s->idx_cap, (size_t)n + 1, sizeof(*s->idx), 64);
        if (st != GMUX_OK)
            return st;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint64_t lo = r[k].addr > base ? r[k].addr : base;
        uint64_t ge = r[k].addr + r[k].len, he = base + size;
        uint64_t hi = ge < he ? ge : he;
        if (lo < hi) /* first and last unit, packed so that sorting orders by first */
            s->idx[nidx++] = ((lo - base) / cs) << 32 | ((hi - 1 - base) / cs);
    }
    qsort(s->idx, nidx, sizeof(*s->idx), cmp_u64);
    uint64_t next = 0; /* units below it are counted */
    for (uint64_t k = 0; k < nidx; k++) {
        uint64_t first = s->idx[k] >> 32, last = s->idx[k] & 0xffffffffu;
        first = first > next ? first : next;
        if (last >= first)
            got += last - first + 1;
        next = last + 1 > next ? last + 1 : next;
    }
    *share_p = (double)got / (double)nunits;
    return GMUX_OK;
}

static uint64_t key_hash(const sim_share_key_t *k)
{
    uint64_t v[5] = {k->task, k->kernel, k->arg, k->base, k->size}, h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 5; i++) {
        h ^= v[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

static bool key_equal(const sim_share_key_t *a, const sim_share_key_t *b)
{
    return a->task == b->task && a->kernel == b->kernel && a->arg == b->arg && a->base == b->base &&
           a->size == b->size;
}

/* The slot holding k, else (with make) a free slot of its probe window, else NULL. */
static share_ent_t *find(const sim_share_t *s, const sim_share_key_t *k, bool make)
{
    uint64_t h = key_hash(k);
    share_ent_t *free_slot = NULL;
    for (uint32_t i = 0; i < SIM_SHARE_PROBES; i++) {
        share_ent_t *e = &s->slots[(h + i) & s->mask];
        if (e->used && key_equal(&e->key, k))
            return e;
        if (!e->used && !free_slot)
            free_slot = e;
    }
    return make ? free_slot : NULL;
}

/* Sets bits first..last (inclusive) of bits; returns how many were clear. */
static uint64_t set_bits(uint64_t *bits, uint64_t first, uint64_t last)
{
    uint64_t added = 0;
    for (uint64_t w = first / 64; w <= last / 64; w++) {
        uint64_t lo = w == first / 64 ? first % 64 : 0, hi = w == last / 64 ? last % 64 : 63;
        uint64_t mask = (hi == 63 ? ~0ull : (1ull << (hi + 1)) - 1) & ~((1ull << lo) - 1);
        added += (uint64_t)__builtin_popcountll(mask & ~bits[w]);
        bits[w] |= mask;
    }
    return added;
}

gmux_status_t sim_share_observe(sim_share_t *s, const sim_share_key_t *k, const eng_range_t *r,
                                uint32_t n)
{
    if (k->size == 0 || k->size > s->max_bytes)
        return GMUX_OK;
    share_ent_t *e = find(s, k, true);
    if (!e)
        return GMUX_OK; /* no room: not tracked */
    uint64_t cs = s->unit;
    if (!e->used) {
        uint64_t nunits = (k->size + cs - 1) / cs;
        e->bits = calloc((nunits + 63) / 64, sizeof(*e->bits));
        if (!e->bits)
            return GMUX_ERR_NOMEM;
        e->used = true;
        e->key = *k;
        e->nunits = nunits;
        e->set = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t lo = r[i].addr > k->base ? r[i].addr : k->base;
        uint64_t ge = r[i].addr + r[i].len, he = k->base + k->size;
        uint64_t hi = ge < he ? ge : he;
        if (lo >= hi)
            continue;
        e->set += set_bits(e->bits, (lo - k->base) / cs, (hi - 1 - k->base) / cs);
    }
    return GMUX_OK;
}

bool sim_share_get(const sim_share_t *s, const sim_share_key_t *k, double *share_p)
{
    const share_ent_t *e = find(s, k, false);
    if (!e)
        return false;
    *share_p = (double)e->set / (double)e->nunits;
    return true;
}
