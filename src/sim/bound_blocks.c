/* Transfer bound at the level of fault blocks: Belady over blocks and the
 * fewest block write-backs, partial references included (docs/sim.md, "The
 * transfer bound", item 7).
 *
 * Most references touch a whole chunk, and then every block of it shares one
 * value (next use, interval end); the passes keep one value per chunk and give
 * a chunk a row of per-block values only while its blocks differ, and pick the
 * farthest chunk from a bucket queue over launch indices instead of a heap. */
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "sim/bound_impl.h"

/* ---- block values: one per chunk, or a row per chunk while they differ ---- */

typedef struct bvals {
    uint32_t nb;
    uint32_t *one;  /* per chunk: every block's value, while row[c] == INF32 */
    uint32_t *row;  /* per chunk: its row in pool, INF32 when uniform */
    uint32_t *pool; /* rows of nb values; a free row's first word links the next */
    uint32_t nrows, cap, free_head;
} bvals_t;

static gmux_status_t bv_init(bvals_t *bv, size_t nc, uint32_t nb)
{
    memset(bv, 0, sizeof(*bv));
    bv->nb = nb;
    bv->free_head = INF32;
    bv->one = malloc(nc * sizeof(*bv->one));
    bv->row = malloc(nc * sizeof(*bv->row));
    if (!bv->one || !bv->row)
        return GMUX_ERR_NOMEM;
    memset(bv->one, 0xFF, nc * sizeof(*bv->one)); /* INF32 */
    memset(bv->row, 0xFF, nc * sizeof(*bv->row));
    return GMUX_OK;
}

static void bv_free(bvals_t *bv)
{
    free(bv->one);
    free(bv->row);
    free(bv->pool);
}

static inline bool bv_uniform(const bvals_t *bv, uint32_t c)
{
    return bv->row[c] == INF32;
}

static inline uint32_t *bv_rowp(const bvals_t *bv, uint32_t c)
{
    return bv->pool + (size_t)bv->row[c] * bv->nb;
}

/* Every block of c takes v. */
static inline void bv_set_all(bvals_t *bv, uint32_t c, uint32_t v)
{
    uint32_t r = bv->row[c];
    if (r != INF32) {
        bv->pool[(size_t)r * bv->nb] = bv->free_head;
        bv->free_head = r;
        bv->row[c] = INF32;
    }
    bv->one[c] = v;
}

/* Gives c a row holding its value in every block. */
static gmux_status_t bv_split(bvals_t *bv, uint32_t c)
{
    uint32_t r = bv->free_head;
    if (r != INF32) {
        bv->free_head = bv->pool[(size_t)r * bv->nb];
    } else {
        if (bv->nrows == bv->cap) {
            size_t cap = bv->cap;
            uint32_t *p = bv->pool;
            size_t want = cap ? cap * 2 : 64;
            p = realloc(p, want * bv->nb * sizeof(*p));
            if (!p)
                return GMUX_ERR_NOMEM;
            bv->pool = p;
            bv->cap = (uint32_t)want;
        }
        r = bv->nrows++;
    }
    uint32_t *row = bv->pool + (size_t)r * bv->nb, v = bv->one[c];
    for (uint32_t b = 0; b < bv->nb; b++)
        row[b] = v;
    bv->row[c] = r;
    return GMUX_OK;
}

/* The blocks of m take v. */
static gmux_status_t bv_set(bvals_t *bv, uint32_t c, uint32_t m, uint32_t v, uint32_t full)
{
    if (!m)
        return GMUX_OK;
    if (m == full) {
        bv_set_all(bv, c, v);
        return GMUX_OK;
    }
    if (bv_uniform(bv, c)) {
        if (bv->one[c] == v)
            return GMUX_OK;
        gmux_status_t st = bv_split(bv, c);
        if (st != GMUX_OK)
            return st;
    }
    uint32_t *row = bv_rowp(bv, c);
    for (; m; m &= m - 1)
        row[__builtin_ctz(m)] = v;
    return GMUX_OK;
}

/* The largest value over the blocks of m (not empty). */
static inline uint32_t bv_max(const bvals_t *bv, uint32_t c, uint32_t m)
{
    if (bv_uniform(bv, c))
        return bv->one[c];
    const uint32_t *row = bv_rowp(bv, c);
    uint32_t best = 0;
    for (; m; m &= m - 1)
        if (row[__builtin_ctz(m)] > best)
            best = row[__builtin_ctz(m)];
    return best;
}

/* The blocks of m whose value is v. */
static inline uint32_t bv_equal(const bvals_t *bv, uint32_t c, uint32_t m, uint32_t v)
{
    if (bv_uniform(bv, c))
        return bv->one[c] == v ? m : 0;
    const uint32_t *row = bv_rowp(bv, c);
    uint32_t same = 0;
    for (uint32_t x = m; x; x &= x - 1)
        if (row[__builtin_ctz(x)] == v)
            same |= x & -x;
    return same;
}

/* The blocks of m whose value is at most v. */
static inline uint32_t bv_at_most(const bvals_t *bv, uint32_t c, uint32_t m, uint32_t v)
{
    if (bv_uniform(bv, c))
        return bv->one[c] <= v ? m : 0;
    const uint32_t *row = bv_rowp(bv, c);
    uint32_t out = 0;
    for (uint32_t x = m; x; x &= x - 1)
        if (row[__builtin_ctz(x)] <= v)
            out |= x & -x;
    return out;
}

static inline uint32_t bv_get(const bvals_t *bv, uint32_t c, uint32_t b)
{
    return bv_uniform(bv, c) ? bv->one[c] : bv_rowp(bv, c)[b];
}

/* ---- per-reference groups of blocks sharing a value ---- */

/* Written by the backward pass and read back by the forward passes in the
 * opposite order. For each reference touching blocks: one word, its value,
 * where one value covers all its blocks; else its (value, mask) pairs, then
 * GROUP_TAG | their count. A value never carries the tag unless the run has
 * 2^31 launches or more (multi then marks every reference, one group too). */
#define GROUP_TAG 0x80000000u

typedef struct groups {
    uint32_t *a;
    size_t n, cap, max;
    bool tag_all;
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

/* Appends the blocks of m (not empty) grouped by val[block]. */
static gmux_status_t put_groups(groups_t *g, const uint32_t *val, uint32_t m)
{
    uint32_t count = 0, v0 = val[__builtin_ctz(m)];
    bool one = true;
    for (uint32_t x = m; x && one; x &= x - 1)
        one = val[__builtin_ctz(x)] == v0;
    if (one && !g->tag_all)
        return put(g, v0);
    gmux_status_t st = GMUX_OK;
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
    return st == GMUX_OK ? put(g, GROUP_TAG | count) : st;
}

/* put_groups of chunk c's values in bv. */
static gmux_status_t put_groups_bv(groups_t *g, const bvals_t *bv, uint32_t c, uint32_t m)
{
    if (bv_uniform(bv, c) && !g->tag_all)
        return put(g, bv->one[c]);
    uint32_t tmp[32];
    const uint32_t *val = tmp;
    if (bv_uniform(bv, c))
        for (uint32_t b = 0; b < bv->nb; b++)
            tmp[b] = bv->one[c];
    else
        val = bv_rowp(bv, c);
    return put_groups(g, val, m);
}

/* Reads one reference's groups (the reverse of put_groups, m the same mask)
 * into gv[] (values) and gm[] (their blocks); how many. */
static uint32_t get_groups(const groups_t *g, size_t *at, uint32_t *gv, uint32_t *gm, uint32_t m)
{
    uint32_t h = g->a[--*at];
    if (!g->tag_all && (h == INF32 || !(h & GROUP_TAG))) {
        gv[0] = h;
        gm[0] = m;
        return 1;
    }
    uint32_t count = h & ~GROUP_TAG;
    for (uint32_t i = 0; i < count; i++) {
        gm[i] = g->a[--*at];
        gv[i] = g->a[--*at];
    }
    return count;
}

/* ---- the passes ---- */

/* The lists the backward pass writes, which no capacity changes. */
struct sim_bgroups {
    groups_t next, ends;
};

void sim_bgroups_free(sim_bgroups_t *g)
{
    if (!g)
        return;
    free(g->next.a);
    free(g->ends.a);
    free(g);
}

typedef struct bscratch {
    uint32_t nb, full;
    bvals_t val;    /* per block: next use (Belady), then dirty-interval end */
    uint32_t *mask; /* per chunk: resident blocks, then blocks with an open interval */
    sim_bgroups_t *g;
    sim_bq_t q;
} bscratch_t;

static void bscratch_free(bscratch_t *sc)
{
    bv_free(&sc->val);
    free(sc->mask);
    sim_bq_free(&sc->q);
}

/* The reference's blocks; *pi walks the partial masks. */
static inline uint32_t ref_mask(const sim_refstr_t *rs, uint32_t r, uint64_t *pi)
{
    return (r & REF_PART) ? rs->pmask[(*pi)++] : sim_refstr_full(rs);
}

/* Backward pass: per reference the next use of each block it touches (INF32:
 * none in this lifetime of the chunk) and, for writes, where each block's
 * dirty interval ends: its next write, else its last reference (INF32: not
 * referenced again). Per block: its next use, next write and last reference,
 * one value per chunk while its blocks agree. */
static gmux_status_t backward(const sim_refstr_t *rs, bscratch_t *sc, size_t nc)
{
    bvals_t last, next_w, last_ref;
    uint32_t full = sc->full, end[32];
    gmux_status_t st = bv_init(&last, nc, sc->nb);
    gmux_status_t st2 = bv_init(&next_w, nc, sc->nb);
    gmux_status_t st3 = bv_init(&last_ref, nc, sc->nb);
    if (st == GMUX_OK)
        st = st2 != GMUX_OK ? st2 : st3;
    uint32_t cur = (uint32_t)rs->launches;
    uint64_t pi = rs->npart;
    for (uint64_t i = rs->n; i-- > 0 && st == GMUX_OK;) {
        uint32_t r = rs->refs[i];
        if (r == REF_END) {
            cur--;
            continue;
        }
        uint32_t c = REF_CHUNK(r);
        if (r & REF_FREE) {
            bv_set_all(&last, c, INF32);
            bv_set_all(&next_w, c, INF32);
            bv_set_all(&last_ref, c, INF32);
            continue;
        }
        uint32_t m = (r & REF_PART) ? rs->pmask[--pi] : full;
        if (!m)
            continue;
        st = put_groups_bv(&sc->g->next, &last, c, m);
        if (st == GMUX_OK && (r & REF_WRITE)) {
            if (bv_uniform(&next_w, c) && bv_uniform(&last_ref, c) && !sc->g->ends.tag_all) {
                uint32_t e = next_w.one[c] != INF32 ? next_w.one[c] : last_ref.one[c];
                st = put(&sc->g->ends, e != INF32 && e > cur ? e : INF32);
            } else {
                for (uint32_t x = m; x; x &= x - 1) {
                    uint32_t b = (uint32_t)__builtin_ctz(x);
                    uint32_t w = bv_get(&next_w, c, b);
                    uint32_t e = w != INF32 ? w : bv_get(&last_ref, c, b);
                    end[b] = e != INF32 && e > cur ? e : INF32;
                }
                st = put_groups(&sc->g->ends, end, m);
            }
            if (st == GMUX_OK)
                st = bv_set(&next_w, c, m, cur, full);
        }
        if (st == GMUX_OK)
            st = bv_set(&last, c, m, cur, full);
        if (st == GMUX_OK) /* last_ref takes cur where it has none yet */
            st = bv_set(&last_ref, c, bv_equal(&last_ref, c, m, INF32), cur, full);
    }
    bv_free(&last);
    bv_free(&next_w);
    bv_free(&last_ref);
    return st;
}

/* Keys chunk c by the largest value of its blocks in its mask, queued while
 * the mask is not empty. */
static void rekey(bscratch_t *sc, uint32_t c)
{
    uint32_t m = sc->mask[c];
    if (!m)
        sim_bq_remove(&sc->q, c);
    else
        sim_bq_set(&sc->q, c, bv_max(&sc->val, c, m));
}

/* Takes up to `excess` blocks of the chunk on top of the queue whose value is
 * the largest (the farthest next use, the interval ending last) out of its
 * mask; how many. */
static uint64_t drop_top(bscratch_t *sc, uint64_t excess)
{
    uint32_t v = sim_bq_top(&sc->q), top = sim_bq_key(&sc->q, v);
    uint32_t out = sim_mask_lowest(bv_equal(&sc->val, v, sc->mask[v], top), excess);
    sc->mask[v] &= ~out;
    rekey(sc, v);
    return (uint64_t)sim_pop32(out);
}

/* A freed chunk: its blocks leave the mask and it leaves the queue; how many. */
static uint64_t drop_chunk(bscratch_t *sc, uint32_t c)
{
    uint64_t n = (uint64_t)sim_pop32(sc->mask[c]);
    sc->mask[c] = 0;
    sim_bq_remove(&sc->q, c);
    return n;
}

static void reset(bscratch_t *sc, size_t nc)
{
    sim_bq_clear(&sc->q);
    memset(sc->mask, 0, nc * sizeof(*sc->mask));
}

/* Belady over blocks, a launch's blocks pinned (keyed by the launch itself)
 * until it ends, then keyed by their next uses. */
static gmux_status_t belady(const sim_refstr_t *rs, bscratch_t *sc, uint64_t cap_blocks,
                            uint64_t *fetches_p)
{
    size_t at = sc->g->next.n;
    uint64_t held = 0, fetches = 0, pi = 0, start = 0, pstart = 0;
    uint32_t k = 0, gv[32], gm[32];
    gmux_status_t st = GMUX_OK;
    for (uint64_t i = 0; i < rs->n && st == GMUX_OK; i++) {
        uint32_t r = rs->refs[i];
        if (r == REF_END) {
            /* the launch's blocks, in order: now keyed by their next uses */
            for (uint64_t j = start; j < i && st == GMUX_OK; j++) {
                uint32_t c = REF_CHUNK(rs->refs[j]);
                uint32_t m = ref_mask(rs, rs->refs[j], &pstart);
                if (!m)
                    continue;
                uint32_t n = get_groups(&sc->g->next, &at, gv, gm, m);
                for (uint32_t g = 0; g < n && st == GMUX_OK; g++)
                    st = bv_set(&sc->val, c, gm[g], gv[g], sc->full);
                rekey(sc, c);
            }
            k++;
            start = i + 1;
            continue;
        }
        uint32_t c = REF_CHUNK(r);
        if (r & REF_FREE) {
            held -= drop_chunk(sc, c);
            start = i + 1;
            continue;
        }
        /* the blocks of m on the device are already keyed by k (their next
         * use is this launch), the largest key of none: a hit changes nothing */
        uint32_t m = ref_mask(rs, r, &pi), miss = m & ~sc->mask[c];
        if (!miss)
            continue;
        uint64_t need = (uint64_t)sim_pop32(miss);
        fetches += need;
        while (held + need > cap_blocks) {
            if (sc->q.n == 0 || sim_bq_key(&sc->q, sim_bq_top(&sc->q)) <= k)
                return GMUX_ERR_CAPACITY;
            held -= drop_top(sc, held + need - cap_blocks);
        }
        /* pinned until the launch ends (the blocks of m held already are) */
        st = bv_set(&sc->val, c, m, k, sc->full);
        sc->mask[c] |= miss;
        held += need;
        rekey(sc, c);
    }
    *fetches_p = fetches;
    return st;
}

/* The fewest dropped block dirty intervals: the sweep of sim_refuses_opt over
 * blocks, dropping an open interval ending last while more than cap_blocks
 * are open at the end of a launch. */
static gmux_status_t wb_sweep_blocks(const sim_refstr_t *rs, bscratch_t *sc, uint64_t cap_blocks,
                                     uint64_t *wbs_p)
{
    size_t at = sc->g->ends.n;
    uint64_t open = 0, wbs = 0, pi = 0;
    uint32_t k = 0, gv[32], gm[32];
    gmux_status_t st = GMUX_OK;
    for (uint64_t i = 0; i < rs->n && st == GMUX_OK; i++) {
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
            open -= drop_chunk(sc, c);
            continue;
        }
        uint32_t m = ref_mask(rs, r, &pi);
        uint32_t reached = bv_at_most(&sc->val, c, m & sc->mask[c], k); /* kept to its end */
        sc->mask[c] &= ~reached;
        open -= (uint64_t)sim_pop32(reached);
        if (!reached && !(r & REF_WRITE))
            continue; /* nothing opened or closed: the key stands */
        if ((r & REF_WRITE) && m) {
            uint32_t n = get_groups(&sc->g->ends, &at, gv, gm, m);
            for (uint32_t g = 0; g < n && st == GMUX_OK; g++) {
                if (gv[g] == INF32)
                    continue;
                open += (uint64_t)sim_pop32(gm[g] & ~sc->mask[c]);
                sc->mask[c] |= gm[g];
                st = bv_set(&sc->val, c, gm[g], gv[g], sc->full);
            }
        }
        rekey(sc, c);
    }
    *wbs_p = wbs;
    return st;
}

/* Builds u's block-level lists once: GMUX_ERR_RANGE (kept) when they
 * outgrow 4 words per reference of the limit, GMUX_ERR_NOMEM (tried again
 * next time). */
static gmux_status_t build_groups(sim_refuses_t *u)
{
    if (u->blocks_done)
        return u->blocks_st;
    const sim_refstr_t *rs = u->rs;
    bscratch_t sc;
    memset(&sc, 0, sizeof(sc));
    sc.nb = rs->nblocks;
    sc.full = sim_refstr_full(rs);
    sc.g = calloc(1, sizeof(*sc.g));
    if (!sc.g)
        return GMUX_ERR_NOMEM;
    sc.g->next.max = sc.g->ends.max = rs->max <= SIZE_MAX / 4 ? (size_t)rs->max * 4 : SIZE_MAX;
    sc.g->next.tag_all = sc.g->ends.tag_all = rs->launches >= GROUP_TAG;
    gmux_status_t st = backward(rs, &sc, rs->chunk_limit ? rs->chunk_limit : 1);
    if (st == GMUX_OK)
        u->blocks = sc.g;
    else
        sim_bgroups_free(sc.g);
    if (st != GMUX_ERR_NOMEM) {
        u->blocks_done = true;
        u->blocks_st = st;
    }
    return st;
}

gmux_status_t sim_refuses_opt_blocks(sim_refuses_t *u, uint64_t capacity_chunks,
                                     uint64_t *fetch_blocks_p, uint64_t *wb_blocks_p)
{
    const sim_refstr_t *rs = u->rs;
    gmux_status_t st = sim_refuses_fits(u, capacity_chunks);
    if (st == GMUX_OK)
        st = build_groups(u);
    if (st != GMUX_OK)
        return st;
    bscratch_t sc;
    memset(&sc, 0, sizeof(sc));
    sc.nb = rs->nblocks;
    sc.full = sim_refstr_full(rs);
    sc.g = u->blocks;
    size_t nc = rs->chunk_limit ? rs->chunk_limit : 1;
    sc.mask = calloc(nc, sizeof(*sc.mask));
    st = bv_init(&sc.val, nc, sc.nb);
    gmux_status_t st2 = sim_refuses_queue(u, &sc.q);
    if (st == GMUX_OK)
        st = st2;
    if (st == GMUX_OK && !sc.mask)
        st = GMUX_ERR_NOMEM;
    uint64_t cap_blocks = capacity_chunks <= UINT64_MAX / 32 ? capacity_chunks * sc.nb : UINT64_MAX,
             fetches = 0, wbs = 0;
    if (st == GMUX_OK)
        st = belady(rs, &sc, cap_blocks, &fetches);
    if (st == GMUX_OK) {
        reset(&sc, nc);
        st = wb_sweep_blocks(rs, &sc, cap_blocks, &wbs);
    }
    if (st == GMUX_OK) {
        *wb_blocks_p = wbs;
        *fetch_blocks_p = fetches;
    }
    bscratch_free(&sc);
    return st;
}
