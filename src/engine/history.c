/* Launch history: repeated touched bytes per distinct set of launch values. */
#include "engine/history.h"
#include "common/array.h"
#include "engine/ranges.h"

#include <stdlib.h>
#include <string.h>

typedef struct hist_entry {
    bool used;
    uint64_t hash;
    uint32_t kernel, nargs;
    uint32_t grid[3], block[3];
    uint64_t *vals;
    eng_range_t *last;   /* the last launch's touched bytes */
    eng_range_t *stable; /* the prediction: last two launches' common bytes */
    eng_range_t *missed; /* the last launch's bytes the prediction before it did not hold */
    size_t nlast, nstable, nmissed;
    size_t vals_cap, last_cap, stable_cap, missed_cap;
    uint32_t seen;
    double recall;
} hist_entry_t;

#define ENG_HIST_PROBES 8 /* slots a key may take, from the one it hashes to */

struct eng_history {
    hist_entry_t *slots;
    uint32_t mask;
    uint32_t used;
    eng_range_t *tmp; /* the observed launch, normalised */
    eng_range_t *isect;
    size_t tmp_cap, isect_cap;
};

gmux_status_t eng_history_create(uint32_t slots, eng_history_t **h_p)
{
    uint32_t n = 16;
    while (n < slots && n < (1u << 24))
        n *= 2;
    eng_history_t *h = calloc(1, sizeof(*h));
    if (!h)
        return GMUX_ERR_NOMEM;
    h->slots = calloc(n, sizeof(*h->slots));
    if (!h->slots) {
        free(h);
        return GMUX_ERR_NOMEM;
    }
    h->mask = n - 1;
    *h_p = h;
    return GMUX_OK;
}

void eng_history_destroy(eng_history_t *h)
{
    if (!h)
        return;
    for (uint32_t i = 0; i <= h->mask; i++) {
        free(h->slots[i].vals);
        free(h->slots[i].last);
        free(h->slots[i].stable);
        free(h->slots[i].missed);
    }
    free(h->slots);
    free(h->tmp);
    free(h->isect);
    free(h);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t key_hash(const eng_launch_t *l)
{
    uint64_t h = mix(0xcbf29ce484222325ull, l->kernel);
    for (int i = 0; i < 3; i++)
        h = mix(mix(h, l->grid[i]), l->block[i]);
    h = mix(h, l->nargs);
    for (uint32_t i = 0; i < l->nargs; i++)
        h = mix(h, l->args[i].value);
    return h;
}

static bool key_equal(const hist_entry_t *e, uint64_t hash, const eng_launch_t *l)
{
    if (!e->used || e->hash != hash || e->kernel != l->kernel || e->nargs != l->nargs ||
        memcmp(e->grid, l->grid, sizeof(e->grid)) != 0 ||
        memcmp(e->block, l->block, sizeof(e->block)) != 0)
        return false;
    for (uint32_t i = 0; i < l->nargs; i++)
        if (e->vals[i] != l->args[i].value)
            return false;
    return true;
}

static bool grow(void **v, size_t *cap, size_t need, size_t elem)
{
    return com_array_grow(v, cap, need, elem, 16, SIZE_MAX) == GMUX_OK;
}

/* The common bytes of two normalised lists into out (capacity na + nb). */
static size_t intersect(const eng_range_t *a, size_t na, const eng_range_t *b, size_t nb,
                        eng_range_t *out)
{
    size_t i = 0, j = 0, n = 0;
    while (i < na && j < nb) {
        uint64_t lo = a[i].addr > b[j].addr ? a[i].addr : b[j].addr;
        uint64_t ea = a[i].addr + a[i].len, eb = b[j].addr + b[j].len;
        uint64_t hi = ea < eb ? ea : eb;
        if (lo < hi)
            out[n++] = (eng_range_t){lo, hi - lo, (uint8_t)(a[i].mode | b[j].mode)};
        if (ea < eb)
            i++;
        else
            j++;
    }
    return n;
}

/* The bytes of normalised list a outside normalised list b into out (capacity na + nb). */
static size_t subtract(const eng_range_t *a, size_t na, const eng_range_t *b, size_t nb,
                       eng_range_t *out)
{
    size_t j = 0, n = 0;
    for (size_t i = 0; i < na; i++) {
        uint64_t lo = a[i].addr, end = a[i].addr + a[i].len;
        while (j < nb && b[j].addr + b[j].len <= lo)
            j++;
        for (size_t k = j; k < nb && b[k].addr < end; k++) {
            if (b[k].addr > lo)
                out[n++] = (eng_range_t){lo, b[k].addr - lo, a[i].mode};
            uint64_t be = b[k].addr + b[k].len;
            lo = be > lo ? be : lo;
        }
        if (lo < end)
            out[n++] = (eng_range_t){lo, end - lo, a[i].mode};
    }
    return n;
}

static uint64_t bytes(const eng_range_t *r, size_t n)
{
    uint64_t b = 0;
    for (size_t i = 0; i < n; i++)
        b += r[i].len;
    return b;
}

static bool copy_ranges(eng_range_t **dst, size_t *cap, size_t *n_p, const eng_range_t *src,
                        size_t n)
{
    if (!grow((void **)dst, cap, n ? n : 1, sizeof(**dst)))
        return false;
    if (n)
        memcpy(*dst, src, n * sizeof(*src));
    *n_p = n;
    return true;
}

/* The slot holding l's key, else a free slot of its probe window, else its first slot. */
static hist_entry_t *find_slot(const eng_history_t *h, uint64_t hash, const eng_launch_t *l,
                               bool *same)
{
    hist_entry_t *free_slot = NULL;
    for (uint32_t i = 0; i < ENG_HIST_PROBES; i++) {
        hist_entry_t *e = &h->slots[(hash + i) & h->mask];
        if (key_equal(e, hash, l)) {
            *same = true;
            return e;
        }
        if (!e->used && !free_slot)
            free_slot = e;
    }
    *same = false;
    return free_slot ? free_slot : &h->slots[hash & h->mask];
}

gmux_status_t eng_history_observe(eng_history_t *h, const eng_launch_t *l,
                                  const eng_range_t *touched, size_t n)
{
    uint64_t hash = key_hash(l);
    bool same;
    hist_entry_t *e = find_slot(h, hash, l, &same);
    if (!grow((void **)&h->tmp, &h->tmp_cap, n ? n : 1, sizeof(*h->tmp)))
        return GMUX_ERR_NOMEM;
    if (n)
        memcpy(h->tmp, touched, n * sizeof(*touched));
    size_t nt = eng_ranges_normalise(h->tmp, n);
    if (nt > ENG_HIST_MAX_RANGES) { /* too scattered to remember */
        if (same) {
            e->used = false;
            h->used--;
        }
        return GMUX_OK;
    }
    if (same) {
        size_t cap = nt + (e->nlast > e->nstable ? e->nlast : e->nstable);
        if (!grow((void **)&h->isect, &h->isect_cap, cap ? cap : 1, sizeof(*h->isect)))
            return GMUX_ERR_NOMEM;
        uint64_t all = bytes(h->tmp, nt);
        size_t nh = intersect(e->stable, e->nstable, h->tmp, nt, h->isect);
        e->recall = all ? (double)bytes(h->isect, nh) / (double)all : 1.0;
        nh = subtract(h->tmp, nt, e->stable, e->nstable, h->isect);
        if (!copy_ranges(&e->missed, &e->missed_cap, &e->nmissed, h->isect, nh))
            return GMUX_ERR_NOMEM;
        size_t ni = intersect(e->last, e->nlast, h->tmp, nt, h->isect);
        if (!copy_ranges(&e->stable, &e->stable_cap, &e->nstable, h->isect, ni) ||
            !copy_ranges(&e->last, &e->last_cap, &e->nlast, h->tmp, nt))
            return GMUX_ERR_NOMEM;
        if (e->seen < UINT32_MAX)
            e->seen++;
        return GMUX_OK;
    }
    if (!grow((void **)&e->vals, &e->vals_cap, l->nargs ? l->nargs : 1, sizeof(*e->vals)) ||
        !copy_ranges(&e->stable, &e->stable_cap, &e->nstable, h->tmp, nt) ||
        !copy_ranges(&e->last, &e->last_cap, &e->nlast, h->tmp, nt)) {
        if (e->used)
            h->used--;
        e->used = false;
        return GMUX_ERR_NOMEM;
    }
    if (!e->used)
        h->used++;
    e->used = true;
    e->hash = hash;
    e->kernel = l->kernel;
    e->nargs = l->nargs;
    memcpy(e->grid, l->grid, sizeof(e->grid));
    memcpy(e->block, l->block, sizeof(e->block));
    for (uint32_t i = 0; i < l->nargs; i++)
        e->vals[i] = l->args[i].value;
    e->seen = 1;
    e->recall = 1.0;
    e->nmissed = 0;
    return GMUX_OK;
}

bool eng_history_lookup(const eng_history_t *h, const eng_launch_t *l, eng_hist_pred_t *pred)
{
    uint64_t hash = key_hash(l);
    bool same;
    const hist_entry_t *e = find_slot(h, hash, l, &same);
    if (!same)
        return false;
    *pred = (eng_hist_pred_t){e->stable, e->nstable, e->seen, e->recall, e->missed, e->nmissed};
    return true;
}

uint64_t eng_history_missed_in(const eng_hist_pred_t *pred, uint64_t base, uint64_t size)
{
    uint64_t got = 0, end = base + size;
    for (size_t i = 0; i < pred->nmissed; i++) {
        const eng_range_t *m = &pred->missed[i];
        uint64_t lo = m->addr > base ? m->addr : base, me = m->addr + m->len;
        uint64_t hi = me < end ? me : end;
        if (lo < hi)
            got += hi - lo;
    }
    return got;
}

uint32_t eng_history_entries(const eng_history_t *h)
{
    return h->used;
}
