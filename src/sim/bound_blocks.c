/* Transfer bound at the level of fault blocks: Belady over blocks and the
 * fewest block write-backs, partial references included (docs/sim.md, "The
 * transfer bound", item 7). */
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "sim/bound_impl.h"

/* Per-reference groups of blocks that share a value (a next use, or where a
 * dirty interval ends), written by the backward pass and read back by the
 * forward passes in the opposite order: for each reference touching blocks
 * its (value, mask) pairs, then their count; when one value covers all its
 * blocks (the common case) only the value, then 0. */
typedef struct groups {
    uint32_t *a;
    size_t n, cap, max;
} groups_t;

static gmux_status_t put(groups_t *g, uint32_t v)
{
    if (g->n == g->cap) {
        gmux_status_t st =
            com_array_grow((void **)&g->a, &g->cap, g->n + 1, sizeof(*g->a), 4096, g->max);
        if (st != GMUX_OK)
            return st == GMUX_ERR_CAPACITY ? GMUX_ERR_RANGE : st;
    }
    g->a[g->n++] = v;
    return GMUX_OK;
}

/* Appends the blocks of m grouped by val[block], then the number of groups
 * (0 for one group of all of m, whose mask is left out). */
static gmux_status_t put_groups(groups_t *g, const uint32_t *val, uint32_t m)
{
    if (!m)
        return GMUX_OK;
    uint32_t count = 0, v0 = val[__builtin_ctz(m)];
    bool one = true;
    for (uint32_t x = m; x && one; x &= x - 1)
        one = val[__builtin_ctz(x)] == v0;
    gmux_status_t st = GMUX_OK;
    if (one) {
        st = put(g, v0);
        return st == GMUX_OK ? put(g, 0) : st;
    }
    while (m && st == GMUX_OK) {
        uint32_t v = val[__builtin_ctz(m)], same = 0;
        for (uint32_t x = m; x; x &= x - 1)
            if (val[__builtin_ctz(x)] == v)
                same |= x & -x;
        st = put(g, v);
        if (st == GMUX_OK)
            st = put(g, same);
        m &= ~same;
        count++;
    }
    return st == GMUX_OK ? put(g, count) : st;
}

/* Reads one reference's groups (the reverse of put_groups, m the same mask)
 * into val[]. */
static void get_groups(const groups_t *g, size_t *at, uint32_t *val, uint32_t m)
{
    if (!m)
        return;
    uint32_t count = g->a[--*at];
    if (count == 0) {
        uint32_t v = g->a[--*at];
        for (; m; m &= m - 1)
            val[__builtin_ctz(m)] = v;
        return;
    }
    while (count--) {
        uint32_t same = g->a[--*at], v = g->a[--*at];
        for (; same; same &= same - 1)
            val[__builtin_ctz(same)] = v;
    }
}

/* The largest of val[] over the blocks of m (0 when m is empty). */
static uint32_t max_over(const uint32_t *val, uint32_t m)
{
    uint32_t best = 0;
    for (; m; m &= m - 1)
        if (val[__builtin_ctz(m)] > best)
            best = val[__builtin_ctz(m)];
    return best;
}

/* The lowest `count` blocks of m. */
static uint32_t lowest(uint32_t m, uint64_t count)
{
    uint32_t out = 0;
    for (; m && count; m &= m - 1, count--)
        out |= m & -m;
    return out;
}

typedef struct bscratch {
    uint32_t nb;
    uint32_t *val;  /* per block: next use (backward, Belady), then dirty-interval end */
    uint32_t *mask; /* per chunk: resident blocks, then blocks with an open interval */
    groups_t next, ends;
    sim_refheap_t h;
} bscratch_t;

static void bscratch_free(bscratch_t *sc)
{
    free(sc->val);
    free(sc->mask);
    free(sc->next.a);
    free(sc->ends.a);
    free(sc->h.a);
    free(sc->h.key);
    free(sc->h.pos);
}

/* The reference's blocks; *pi walks the partial masks. */
static inline uint32_t ref_mask(const sim_refstr_t *rs, uint32_t r, uint64_t *pi)
{
    return (r & REF_PART) ? rs->pmask[(*pi)++] : sim_refstr_full(rs);
}

/* Backward pass: per reference the next use of each block it touches (INF32:
 * none in this lifetime of the chunk) and, for writes, where each block's
 * dirty interval ends: its next write, else its last reference (INF32: not
 * referenced again). Uses sc->val for each block's next use and two more
 * words per block. */
static gmux_status_t backward(const sim_refstr_t *rs, bscratch_t *sc)
{
    size_t nbk = (size_t)rs->chunk_limit * sc->nb;
    uint32_t *next_w = malloc((nbk ? nbk : 1) * 2 * sizeof(*next_w));
    if (!next_w)
        return GMUX_ERR_NOMEM;
    uint32_t *last = sc->val, *last_ref = next_w + nbk, end[32];
    memset(last, 0xFF, nbk * sizeof(*last)); /* INF32 */
    memset(next_w, 0xFF, nbk * 2 * sizeof(*next_w));
    uint32_t cur = (uint32_t)rs->launches;
    uint64_t pi = rs->npart;
    gmux_status_t st = GMUX_OK;
    for (uint64_t i = rs->n; i-- > 0 && st == GMUX_OK;) {
        uint32_t r = rs->refs[i];
        if (r == REF_END) {
            cur--;
            continue;
        }
        size_t base = (size_t)REF_CHUNK(r) * sc->nb;
        if (r & REF_FREE) {
            memset(last + base, 0xFF, sc->nb * sizeof(*last));
            memset(next_w + base, 0xFF, sc->nb * sizeof(*last));
            memset(last_ref + base, 0xFF, sc->nb * sizeof(*last));
            continue;
        }
        uint32_t m = (r & REF_PART) ? rs->pmask[--pi] : sim_refstr_full(rs);
        st = put_groups(&sc->next, last + base, m);
        if (st == GMUX_OK && (r & REF_WRITE)) {
            for (uint32_t x = m; x; x &= x - 1) {
                uint32_t b = (uint32_t)__builtin_ctz(x);
                uint32_t e = next_w[base + b] != INF32 ? next_w[base + b] : last_ref[base + b];
                end[b] = e != INF32 && e > cur ? e : INF32;
                next_w[base + b] = cur;
            }
            st = put_groups(&sc->ends, end, m);
        }
        for (uint32_t x = m; x; x &= x - 1) {
            uint32_t b = (uint32_t)__builtin_ctz(x);
            last[base + b] = cur;
            if (last_ref[base + b] == INF32)
                last_ref[base + b] = cur;
        }
    }
    free(next_w);
    return st;
}

/* Keys chunk c by the largest value of its blocks in m, in the heap while m
 * is not empty. */
static void rekey(bscratch_t *sc, uint32_t c)
{
    sim_refheap_t *h = &sc->h;
    uint32_t m = sc->mask[c];
    if (!m) {
        if (h->pos[c] != INF32)
            sim_refheap_remove(h, c);
        return;
    }
    h->key[c] = max_over(sc->val + (size_t)c * sc->nb, m);
    if (h->pos[c] == INF32)
        sim_refheap_push(h, c);
    else
        sim_refheap_fix(h, h->pos[c]);
}

/* Takes up to `excess` blocks of the chunk on top of the heap whose value is
 * the largest (the farthest next use, the interval ending last) out of its
 * mask; how many. */
static uint64_t drop_top(bscratch_t *sc, uint64_t excess)
{
    uint32_t v = sc->h.a[0], top = sc->h.key[v], same = 0;
    const uint32_t *val = sc->val + (size_t)v * sc->nb;
    for (uint32_t x = sc->mask[v]; x; x &= x - 1)
        if (val[__builtin_ctz(x)] == top)
            same |= x & -x;
    uint32_t out = lowest(same, excess);
    sc->mask[v] &= ~out;
    rekey(sc, v);
    return (uint64_t)__builtin_popcount(out);
}

static void reset(bscratch_t *sc, uint32_t nc)
{
    sc->h.n = 0;
    memset(sc->h.pos, 0xFF, (size_t)nc * sizeof(*sc->h.pos));
    memset(sc->mask, 0, (size_t)nc * sizeof(*sc->mask));
}

/* Belady over blocks, a launch's blocks pinned (keyed by the launch itself)
 * until it ends, then keyed by their next uses. */
static gmux_status_t belady(const sim_refstr_t *rs, bscratch_t *sc, uint64_t cap_blocks,
                            uint64_t *fetches_p)
{
    size_t at = sc->next.n;
    uint64_t held = 0, fetches = 0, pi = 0, start = 0, pstart = 0;
    uint32_t k = 0;
    for (uint64_t i = 0; i < rs->n; i++) {
        uint32_t r = rs->refs[i];
        if (r == REF_END) {
            /* the launch's blocks, in order: now keyed by their next uses */
            for (uint64_t j = start; j < i; j++) {
                uint32_t c = REF_CHUNK(rs->refs[j]);
                uint32_t m = ref_mask(rs, rs->refs[j], &pstart);
                get_groups(&sc->next, &at, sc->val + (size_t)c * sc->nb, m);
                rekey(sc, c);
            }
            k++;
            start = i + 1;
            continue;
        }
        uint32_t c = REF_CHUNK(r);
        if (r & REF_FREE) {
            held -= (uint64_t)__builtin_popcount(sc->mask[c]);
            sc->mask[c] = 0;
            rekey(sc, c);
            start = i + 1;
            continue;
        }
        /* the blocks of m on the device are already keyed by k (their next
         * use is this launch), the largest key of none: a hit changes nothing */
        uint32_t miss = ref_mask(rs, r, &pi) & ~sc->mask[c];
        if (!miss)
            continue;
        uint64_t need = (uint64_t)__builtin_popcount(miss);
        fetches += need;
        while (held + need > cap_blocks) {
            if (sc->h.n == 0 || sc->h.key[sc->h.a[0]] <= k)
                return GMUX_ERR_CAPACITY;
            held -= drop_top(sc, held + need - cap_blocks);
        }
        uint32_t *val = sc->val + (size_t)c * sc->nb;
        for (uint32_t x = miss; x; x &= x - 1)
            val[__builtin_ctz(x)] = k; /* pinned until the launch ends */
        sc->mask[c] |= miss;
        held += need;
        rekey(sc, c);
    }
    *fetches_p = fetches;
    return GMUX_OK;
}

/* The fewest dropped block dirty intervals: the sweep of sim_refstr_opt over
 * blocks, dropping an open interval ending last while more than cap_blocks
 * are open at the end of a launch. */
static uint64_t wb_sweep_blocks(const sim_refstr_t *rs, bscratch_t *sc, uint64_t cap_blocks)
{
    size_t at = sc->ends.n;
    uint64_t open = 0, wbs = 0, pi = 0;
    uint32_t k = 0, end[32];
    for (uint64_t i = 0; i < rs->n; i++) {
        uint32_t r = rs->refs[i];
        if (r == REF_END) {
            while (open > cap_blocks) {
                uint64_t d = drop_top(sc, open - cap_blocks);
                open -= d;
                wbs += d;
            }
            k++;
            continue;
        }
        uint32_t c = REF_CHUNK(r);
        if (r & REF_FREE) {
            open -= (uint64_t)__builtin_popcount(sc->mask[c]);
            sc->mask[c] = 0;
            rekey(sc, c);
            continue;
        }
        uint32_t m = ref_mask(rs, r, &pi);
        uint32_t *val = sc->val + (size_t)c * sc->nb, reached = 0;
        for (uint32_t x = m & sc->mask[c]; x; x &= x - 1)
            if (val[__builtin_ctz(x)] <= k)
                reached |= x & -x; /* kept to its end */
        sc->mask[c] &= ~reached;
        open -= (uint64_t)__builtin_popcount(reached);
        if (!reached && !(r & REF_WRITE))
            continue; /* nothing opened or closed: the key stands */
        if (r & REF_WRITE) {
            get_groups(&sc->ends, &at, end, m);
            for (uint32_t x = m; x; x &= x - 1) {
                uint32_t b = (uint32_t)__builtin_ctz(x);
                if (end[b] == INF32)
                    continue;
                if (!(sc->mask[c] & (1u << b)))
                    open++;
                sc->mask[c] |= 1u << b;
                val[b] = end[b];
            }
        }
        rekey(sc, c);
    }
    return wbs;
}

gmux_status_t sim_refstr_opt_blocks(const sim_refstr_t *rs, uint64_t capacity_chunks,
                                    uint64_t *fetch_blocks_p, uint64_t *wb_blocks_p)
{
    if (rs->cut || rs->launches >= INF32 || capacity_chunks == 0)
        return GMUX_ERR_RANGE;
    bscratch_t sc;
    memset(&sc, 0, sizeof(sc));
    sc.nb = rs->nblocks;
    size_t nc = rs->chunk_limit ? rs->chunk_limit : 1, nbk = nc * sc.nb;
    sc.next.max = sc.ends.max = rs->max <= SIZE_MAX / 4 ? (size_t)rs->max * 4 : SIZE_MAX;
    sc.val = malloc(nbk * sizeof(*sc.val));
    sc.mask = malloc(nc * sizeof(*sc.mask));
    sc.h.a = malloc(nc * sizeof(*sc.h.a));
    sc.h.key = malloc(nc * sizeof(*sc.h.key));
    sc.h.pos = malloc(nc * sizeof(*sc.h.pos));
    gmux_status_t st = GMUX_ERR_NOMEM;
    if (sc.val && sc.mask && sc.h.a && sc.h.key && sc.h.pos)
        st = sim_refstr_launch_fits(rs, capacity_chunks);
    if (st == GMUX_OK)
        st = backward(rs, &sc);
    uint64_t cap_blocks = capacity_chunks <= UINT64_MAX / 32 ? capacity_chunks * sc.nb : UINT64_MAX,
             fetches = 0;
    if (st == GMUX_OK) {
        reset(&sc, (uint32_t)nc);
        st = belady(rs, &sc, cap_blocks, &fetches);
    }
    if (st == GMUX_OK) {
        reset(&sc, (uint32_t)nc);
        *wb_blocks_p = wb_sweep_blocks(rs, &sc, cap_blocks);
        *fetch_blocks_p = fetches;
    }
    bscratch_free(&sc);
    return st;
}
