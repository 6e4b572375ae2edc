/* Transfer bound: offline Belady fetches and fewest write-backs. */
#include "sim/bound.h"

#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "sim/bound_impl.h"

gmux_status_t sim_refstr_create(uint64_t max_refs, sim_refstr_t **rs_p)
{
    sim_refstr_t *rs = calloc(1, sizeof(*rs));
    if (!rs)
        return GMUX_ERR_NOMEM;
    rs->max = max_refs;
    rs->nblocks = 1;
    *rs_p = rs;
    return GMUX_OK;
}

void sim_refstr_set_blocks(sim_refstr_t *rs, uint32_t nblocks)
{
    rs->nblocks = nblocks < 1 ? 1 : nblocks > 32 ? 32 : nblocks;
}

void sim_refstr_destroy(sim_refstr_t *rs)
{
    if (!rs)
        return;
    free(rs->refs);
    free(rs->pmask);
    free(rs->compute);
    free(rs);
}

/* Over the limit (or out of memory): keep only the compute term. */
static void cut(sim_refstr_t *rs)
{
    rs->cut = true;
    free(rs->refs);
    free(rs->pmask);
    rs->refs = rs->pmask = NULL;
    rs->n = rs->cap = rs->npart = rs->pcap = 0;
}

static void push(sim_refstr_t *rs, uint32_t v)
{
    if (rs->cut)
        return;
    if (rs->n == rs->cap) {
        size_t cap = rs->cap;
        if (com_array_grow((void **)&rs->refs, &cap, cap + 1, sizeof(*rs->refs), 4096, rs->max) !=
            GMUX_OK) {
            cut(rs);
            return;
        }
        rs->cap = cap;
    }
    rs->refs[rs->n++] = v;
}

void sim_refstr_ref(sim_refstr_t *rs, uint32_t chunk, bool write)
{
    if (chunk + 1 > rs->chunk_limit)
        rs->chunk_limit = chunk + 1;
    push(rs, chunk | (write ? REF_WRITE : 0));
}

void sim_refstr_ref_part(sim_refstr_t *rs, uint32_t chunk, uint32_t blocks, bool write)
{
    if (chunk + 1 > rs->chunk_limit)
        rs->chunk_limit = chunk + 1;
    if (rs->cut)
        return;
    if (rs->npart == rs->pcap) {
        size_t cap = rs->pcap;
        if (com_array_grow((void **)&rs->pmask, &cap, cap + 1, sizeof(*rs->pmask), 1024, rs->max) !=
            GMUX_OK) {
            cut(rs);
            return;
        }
        rs->pcap = cap;
    }
    push(rs, chunk | REF_PART | (write ? REF_WRITE : 0));
    if (!rs->cut)
        rs->pmask[rs->npart++] = blocks & sim_refstr_full(rs);
}

void sim_refstr_end_launch(sim_refstr_t *rs, uint64_t compute_ns)
{
    push(rs, REF_END);
    if (!rs->cut && com_array_grow((void **)&rs->compute, &rs->compute_cap, rs->launches + 1,
                                   sizeof(*rs->compute), 1024, rs->max) != GMUX_OK)
        cut(rs); /* as push() does: the compute term alone stays */
    if (!rs->cut)
        rs->compute[rs->launches] = compute_ns;
    rs->launches++;
}

void sim_refstr_free(sim_refstr_t *rs, uint32_t chunk)
{
    if (chunk + 1 > rs->chunk_limit)
        rs->chunk_limit = chunk + 1;
    push(rs, chunk | REF_FREE);
}

bool sim_refstr_complete(const sim_refstr_t *rs)
{
    return !rs->cut;
}

uint64_t sim_refstr_launches(const sim_refstr_t *rs)
{
    return rs->launches;
}

uint64_t sim_refstr_partial_refs(const sim_refstr_t *rs)
{
    return rs->npart;
}

/* Backward pass: for each whole reference, the launch of the chunk's next
 * reference in the same lifetime (INF32 if none) and, for writes (in string
 * order, iv_end[w]), where the dirty interval it opens ends: the chunk's
 * next write, else its last reference before its free or the end of the run
 * (INF32: no later reference, so the written data is never needed again).
 * next may be NULL: the interval ends alone. */
static gmux_status_t next_uses(const sim_refstr_t *rs, uint32_t *next, uint32_t *iv_end,
                               uint64_t nwrites)
{
    uint32_t *last = malloc((size_t)rs->chunk_limit * sizeof(*last));
    uint32_t *next_w = malloc((size_t)rs->chunk_limit * sizeof(*next_w));
    uint32_t *last_ref = malloc((size_t)rs->chunk_limit * sizeof(*last_ref));
    if (!last || !next_w || !last_ref) {
        free(last);
        free(next_w);
        free(last_ref);
        return GMUX_ERR_NOMEM;
    }
    for (uint32_t c = 0; c < rs->chunk_limit; c++)
        last[c] = next_w[c] = last_ref[c] = INF32;
    uint32_t cur = (uint32_t)rs->launches;
    uint64_t w = nwrites;
    for (uint64_t i = rs->n; i-- > 0;) {
        uint32_t r = rs->refs[i];
        if (r == REF_END) {
            cur--;
            continue;
        }
        uint32_t c = REF_CHUNK(r);
        if (r & REF_FREE) {
            last[c] = next_w[c] = last_ref[c] = INF32;
            continue;
        }
        if (r & REF_PART)
            continue; /* not a use of the whole chunk: in no term */
        if (next)
            next[i] = last[c];
        last[c] = cur;
        if (r & REF_WRITE) {
            uint32_t end = next_w[c] != INF32 ? next_w[c] : last_ref[c];
            iv_end[--w] = end != INF32 && end > cur ? end : INF32;
            next_w[c] = cur;
        }
        if (last_ref[c] == INF32)
            last_ref[c] = cur;
    }
    free(last);
    free(next_w);
    free(last_ref);
    return GMUX_OK;
}

/* A write of the whole chunk: the references with an interval end. */
static inline bool whole_write(uint32_t r)
{
    return r != REF_END && (r & (REF_WRITE | REF_FREE | REF_PART)) == REF_WRITE;
}

/* Fewest write-backs of the dirty intervals opened at launch from_k or later
 * (their references start at from_pos, the whole writes among them at
 * from_w): interval scheduling with capacity C, the sweep keeping intervals
 * and dropping the open one ending last whenever more than C are open. q is
 * scratch. */
static uint64_t wb_sweep(const sim_refuses_t *u, uint64_t from_pos, uint64_t from_w,
                         uint32_t from_k, uint64_t capacity_chunks, sim_bq_t *q)
{
    const sim_refstr_t *rs = u->rs;
    sim_bq_clear(q);
    uint64_t wbs = 0, w = from_w;
    uint32_t k = from_k;
    for (uint64_t i = from_pos; i < rs->n; i++) {
        uint32_t r = rs->refs[i];
        if (r == REF_END) {
            while (q->n > capacity_chunks) {
                sim_bq_remove(q, sim_bq_top(q));
                wbs++;
            }
            k++;
            continue;
        }
        uint32_t c = REF_CHUNK(r);
        if (r & REF_FREE) {
            sim_bq_remove(q, c);
            continue;
        }
        if (r & REF_PART)
            continue;
        if (sim_bq_queued(q, c) && sim_bq_key(q, c) <= k)
            sim_bq_remove(q, c); /* the interval reached its end resident: kept */
        if (r & REF_WRITE) {
            uint32_t end = u->iv_end[w++];
            if (end != INF32)
                sim_bq_set(q, c, end);
        }
    }
    return wbs;
}

/* The most chunks one launch references, partial references included. */
static uint64_t max_launch(const sim_refstr_t *rs)
{
    uint64_t in_launch = 0, most = 0;
    for (uint64_t i = 0; i < rs->n; i++) {
        uint32_t r = rs->refs[i];
        if (r == REF_END)
            in_launch = 0;
        else if (!(r & REF_FREE) && ++in_launch > most)
            most = in_launch;
    }
    return most;
}

static uint64_t count_distinct_all(const sim_refstr_t *rs, bool *ok);

gmux_status_t sim_refuses_create(const sim_refstr_t *rs, sim_refuses_t **u_p)
{
    if (rs->cut || rs->launches >= INF32)
        return GMUX_ERR_RANGE;
    sim_refuses_t *u = calloc(1, sizeof(*u));
    if (!u)
        return GMUX_ERR_NOMEM;
    u->rs = rs;
    for (uint64_t i = 0; i < rs->n; i++)
        u->nwrites += whole_write(rs->refs[i]);
    bool ok = true;
    u->next = malloc((rs->n ? rs->n : 1) * sizeof(*u->next));
    u->iv_end = malloc((u->nwrites ? u->nwrites : 1) * sizeof(*u->iv_end));
    gmux_status_t st = u->next && u->iv_end ? GMUX_OK : GMUX_ERR_NOMEM;
    if (st == GMUX_OK)
        st = next_uses(rs, u->next, u->iv_end, u->nwrites);
    if (st == GMUX_OK) {
        u->max_launch = max_launch(rs);
        u->distinct = count_distinct_all(rs, &ok);
        if (!ok)
            st = GMUX_ERR_NOMEM;
    }
    if (st != GMUX_OK) {
        sim_refuses_destroy(u);
        return st;
    }
    *u_p = u;
    return GMUX_OK;
}

void sim_refuses_destroy(sim_refuses_t *u)
{
    if (!u)
        return;
    free(u->next);
    free(u->iv_end);
    sim_bgroups_free(u->blocks);
    free(u);
}

void sim_refuses_drop_next(sim_refuses_t *u)
{
    free(u->next);
    u->next = NULL;
}

void sim_refuses_drop_ends(sim_refuses_t *u)
{
    free(u->iv_end);
    u->iv_end = NULL;
}

gmux_status_t sim_refuses_rebuild_ends(sim_refuses_t *u)
{
    if (u->iv_end)
        return GMUX_OK;
    u->iv_end = malloc((u->nwrites ? u->nwrites : 1) * sizeof(*u->iv_end));
    if (!u->iv_end)
        return GMUX_ERR_NOMEM;
    return next_uses(u->rs, NULL, u->iv_end, u->nwrites);
}

void sim_refuses_drop_blocks(sim_refuses_t *u)
{
    sim_bgroups_free(u->blocks);
    u->blocks = NULL;
    u->blocks_done = false;
}

gmux_status_t sim_refuses_fits(const sim_refuses_t *u, uint64_t capacity_chunks)
{
    if (capacity_chunks == 0)
        return GMUX_ERR_RANGE;
    return u->max_launch > capacity_chunks ? GMUX_ERR_CAPACITY : GMUX_OK;
}

gmux_status_t sim_refuses_queue(const sim_refuses_t *u, sim_bq_t *q)
{
    size_t nc = u->rs->chunk_limit ? u->rs->chunk_limit : 1;
    return sim_bq_init(q, nc, (uint32_t)u->rs->launches + 1);
}

/* A capacity the chunk-level passes can run at, and their queue (q zeroed
 * when refused, so that sim_bq_free may follow either way). */
static gmux_status_t pass_init(const sim_refuses_t *u, uint64_t capacity_chunks, sim_bq_t *q)
{
    memset(q, 0, sizeof(*q));
    gmux_status_t st = sim_refuses_fits(u, capacity_chunks);
    return st == GMUX_OK ? sim_refuses_queue(u, q) : st;
}

gmux_status_t sim_refuses_opt(const sim_refuses_t *u, uint64_t capacity_chunks, uint64_t *fetches_p,
                              uint64_t *writebacks_p)
{
    const sim_refstr_t *rs = u->rs;
    sim_bq_t qs;
    gmux_status_t st = pass_init(u, capacity_chunks, &qs);
    if (st != GMUX_OK) {
        sim_bq_free(&qs);
        return st;
    }
    const uint32_t *next = u->next;
    sim_bq_t *q = &qs;

    /* Belady: misses under capacity. */
    uint64_t fetches = 0;
    uint32_t k = 0;
    uint64_t start = 0;
    for (uint64_t i = 0; i < rs->n; i++) {
        uint32_t r = rs->refs[i];
        if (r == REF_END) {
            /* pinned at k during the launch; now keyed by the next use */
            for (uint64_t j = start; j < i; j++)
                if (!(rs->refs[j] & (REF_FREE | REF_PART)))
                    sim_bq_set(q, REF_CHUNK(rs->refs[j]), next[j]);
            k++;
            start = i + 1;
            continue;
        }
        uint32_t c = REF_CHUNK(r);
        if (r & REF_FREE) {
            sim_bq_remove(q, c);
            start = i + 1;
            continue;
        }
        if (r & REF_PART)
            continue;
        if (sim_bq_queued(q, c)) {
            sim_bq_set(q, c, k); /* normally already k: its next use */
            continue;
        }
        fetches++;
        if (q->n >= capacity_chunks) {
            uint32_t v = sim_bq_top(q);
            if (sim_bq_key(q, v) <= k) {
                st = GMUX_ERR_CAPACITY;
                goto out_free;
            }
            sim_bq_remove(q, v);
        }
        sim_bq_set(q, c, k);
    }

    /* Fewest write-backs: keep dirty intervals, drop the one ending last. */
    uint64_t wbs = wb_sweep(u, 0, 0, 0, capacity_chunks, q);
    *fetches_p = fetches;
    *writebacks_p = wbs;
    st = GMUX_OK;
out_free:
    sim_bq_free(q);
    return st;
}

/* Counts a reference that is not an end of launch: a chunk seen for the first
 * time since the start or since its free (a later reference after a free is a
 * new fetch, as in Belady's count). */
static inline void count_distinct(uint8_t *seen, uint32_t r, uint64_t *distinct)
{
    uint32_t c = REF_CHUNK(r);
    if (r & REF_FREE)
        seen[c] = 0;
    else if (!(r & REF_PART) && !seen[c]) {
        seen[c] = 1;
        (*distinct)++;
    }
}

/* The distinct chunks referenced; *ok false when out of memory (then 0). */
static uint64_t count_distinct_all(const sim_refstr_t *rs, bool *ok)
{
    uint8_t *seen = calloc(rs->chunk_limit ? rs->chunk_limit : 1, 1);
    *ok = seen != NULL;
    if (!seen || rs->cut) {
        free(seen);
        return 0;
    }
    uint64_t distinct = 0;
    for (uint64_t i = 0; i < rs->n; i++)
        if (rs->refs[i] != REF_END)
            count_distinct(seen, rs->refs[i], &distinct);
    free(seen);
    return distinct;
}

uint64_t sim_refstr_distinct(const sim_refstr_t *rs)
{
    bool ok;
    return count_distinct_all(rs, &ok);
}

uint64_t sim_refuses_distinct(const sim_refuses_t *u)
{
    return u->distinct;
}

/* A launch chosen for the released write-back term: where its references
 * start (and how many whole writes come before), and the earliest it can
 * end. */
typedef struct sample {
    uint32_t k;
    uint64_t pos, wpos;
    double end_ns;
} sample_t;

/* Picks up to max launches among [lo, hi): `even` spread evenly over them and,
 * with eighths, those where the distinct chunks referenced so far first reach
 * each eighth of the capacity up to twice it (the device filling, when nothing
 * has had to leave yet). */
static uint32_t pick_samples(const sim_refstr_t *rs, uint64_t capacity_chunks, double fetch_ns,
                             uint32_t lo, uint32_t hi, uint32_t even, bool eighths, sample_t *out,
                             uint32_t max)
{
    uint8_t *seen = calloc(rs->chunk_limit ? rs->chunk_limit : 1, 1);
    if (!seen)
        return 0;
    uint32_t n = 0, k = 0, next_eighth = eighths ? 1 : 17;
    uint64_t distinct = 0, compute = 0, start = 0, span = hi - lo, writes = 0, wstart = 0;
    for (uint64_t i = 0; i < rs->n && n < max && k < hi; i++) {
        if (rs->refs[i] != REF_END) {
            count_distinct(seen, rs->refs[i], &distinct);
            writes += whole_write(rs->refs[i]);
            continue;
        }
        compute += rs->compute[k];
        bool take = false;
        if (k >= lo) {
            uint64_t at = k - lo;
            take = even && at * (even + 1) / span != (at + 1) * (even + 1) / span;
            while (next_eighth <= 16 && distinct * 8 >= next_eighth * capacity_chunks) {
                take = true;
                next_eighth++;
            }
        }
        if (take) {
            double fetched = (double)distinct * fetch_ns;
            out[n++] =
                (sample_t){k, start, wstart, fetched > (double)compute ? fetched : (double)compute};
        }
        k++;
        start = i + 1;
        wstart = writes;
    }
    free(seen);
    return n;
}

/* The best of the samples (in launch order) above *best: end of launch k
 * plus the write-backs left after it. A later launch's intervals are a
 * subset of an earlier one's, and the fewest drops of a subset are no more,
 * so the last sweep's count bounds the next sample's: a sample that cannot
 * pass *best even with it is not swept (it would not have been taken). */
static void best_sample(const sim_refuses_t *u, uint64_t capacity_chunks, double wb_ns,
                        const sample_t *smp, uint32_t n, sim_bq_t *q, bool prune, double *best,
                        uint32_t *best_i, uint32_t *sweeps)
{
    uint64_t most = UINT64_MAX; /* drops after the last sample swept */
    for (uint32_t s = 0; s < n; s++) {
        if (prune && most != UINT64_MAX && smp[s].end_ns + (double)most * wb_ns <= *best)
            continue;
        /* the writes of launch k land when it ends: the intervals opened at k
         * or later are written back after smp[s].end_ns, on one engine */
        uint64_t w = wb_sweep(u, smp[s].pos, smp[s].wpos, smp[s].k, capacity_chunks, q);
        (*sweeps)++;
        double t = smp[s].end_ns + (double)w * wb_ns;
        most = w;
        if (t > *best) {
            *best = t;
            *best_i = s;
        }
    }
}

#define COARSE_EVEN 8
#define FINE_EVEN   16

gmux_status_t sim_refuses_wb_released(const sim_refuses_t *u, uint64_t capacity_chunks,
                                      double fetch_ns, double wb_ns, uint64_t *ns_p)
{
    uint32_t sweeps;
    return sim_refuses_wb_released_how(u, capacity_chunks, fetch_ns, wb_ns, true, ns_p, &sweeps);
}

gmux_status_t sim_refuses_wb_released_how(const sim_refuses_t *u, uint64_t capacity_chunks,
                                          double fetch_ns, double wb_ns, bool prune, uint64_t *ns_p,
                                          uint32_t *sweeps_p)
{
    const sim_refstr_t *rs = u->rs;
    *ns_p = 0;
    *sweeps_p = 0;
    uint32_t max = COARSE_EVEN + FINE_EVEN + 17;
    sample_t *smp = malloc(max * sizeof(*smp));
    if (!smp)
        return GMUX_ERR_NOMEM;
    sim_bq_t q;
    gmux_status_t st = pass_init(u, capacity_chunks, &q);
    if (st != GMUX_OK) {
        sim_bq_free(&q);
        free(smp);
        return st;
    }
    /* coarse: the device filling and a few points over the run; then finer
     * between the best one's neighbours. Any launch gives a valid bound. */
    uint32_t L = (uint32_t)rs->launches, bi = 0;
    uint32_t n = pick_samples(rs, capacity_chunks, fetch_ns, 0, L, COARSE_EVEN, true, smp, max);
    double best = 0;
    best_sample(u, capacity_chunks, wb_ns, smp, n, &q, prune, &best, &bi, sweeps_p);
    if (n) {
        uint32_t lo = bi ? smp[bi - 1].k : 0, hi = bi + 1 < n ? smp[bi + 1].k : L;
        n = pick_samples(rs, capacity_chunks, fetch_ns, lo, hi, FINE_EVEN, false, smp, max);
        best_sample(u, capacity_chunks, wb_ns, smp, n, &q, prune, &best, &bi, sweeps_p);
    }
    /* rounded down (and saturated): still a lower bound */
    *ns_p = best < 18446744073709551616.0 ? (uint64_t)best : UINT64_MAX;
    sim_bq_free(&q);
    free(smp);
    return GMUX_OK;
}
