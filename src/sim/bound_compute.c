/* The transfer bound of a profiled run at each capacity of a sweep (sim/run.h,
 * docs/sim.md). The terms are taken a kind at a time over every capacity, so
 * each shared list (sim_refuses_t) is dropped once its last term is done and
 * they do not all take memory at once. */
#include <stdlib.h>
#include <string.h>

#include "sim/device.h"
#include "sim/run.h"

static uint64_t div_ceil_ns(double bytes, double bps)
{
    return sim_ns_ceil(bytes * 1e9 / bps);
}

static void say(const sim_bound_progress_t *pr, const char *term, size_t i, size_t n)
{
    if (pr && pr->fn)
        pr->fn(pr->ctx, term, i, n);
}

/* Chunk-level fetches and write-backs at every capacity not yet done. */
static void chunk_terms(sim_refuses_t *u, const sim_params_t *p, const uint64_t *caps, size_t n,
                        sim_bound_t *b, gmux_status_t *st, bool *done, uint64_t *w,
                        const sim_bound_progress_t *pr)
{
    for (size_t i = 0; i < n; i++) {
        say(pr, "chunk-level terms", i, n);
        uint64_t f = 0, cap = caps[i] / (uint64_t)p->chunk_bytes;
        gmux_status_t s = sim_refuses_opt(u, cap, &f, &w[i]);
        if (s != GMUX_OK) {
            st[i] = s == GMUX_ERR_RANGE ? GMUX_OK : s; /* RANGE: the compute term only */
            done[i] = true;
            continue;
        }
        b[i].exact = true;
        b[i].fetch_bytes = f * (uint64_t)p->chunk_bytes;
        b[i].writeback_bytes = w[i] * (uint64_t)p->chunk_bytes;
    }
}

/* The same two terms over fault blocks count the chunks touched in part
 * (docs/sim.md's bound, item 7); skipped, leaving the chunk-level ones, where
 * their lists outgrow the limit or no reference is partial. */
static void block_terms(const sim_profile_t *prof, sim_refuses_t *u, const sim_params_t *p,
                        const uint64_t *caps, size_t n, sim_bound_t *b, gmux_status_t *st,
                        bool *done, const sim_bound_progress_t *pr)
{
    if (!sim_refstr_partial_refs(prof->refs))
        return;
    uint64_t block = sim_params_fault_block(p);
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        say(pr, "block-level terms", i, n);
        uint64_t fb = 0, wb = 0, cap = caps[i] / (uint64_t)p->chunk_bytes;
        gmux_status_t s = sim_refuses_opt_blocks(u, cap, &fb, &wb);
        if (s != GMUX_OK && s != GMUX_ERR_RANGE && s != GMUX_ERR_NOMEM) {
            st[i] = s;
            done[i] = true;
            continue;
        }
        if (s == GMUX_OK && fb * block > b[i].fetch_bytes)
            b[i].fetch_bytes = fb * block;
        if (s == GMUX_OK && wb * block > b[i].writeback_bytes)
            b[i].writeback_bytes = wb * block;
    }
}

/* The transfer terms, then the released write-back term where it could
 * exceed them (the interval ends rebuilt, with status ends_st). */
static void final_terms(sim_refuses_t *u, gmux_status_t ends_st, const sim_params_t *p,
                        const uint64_t *caps, size_t n, sim_bound_t *b, gmux_status_t *st,
                        const bool *done, const uint64_t *w, const sim_bound_progress_t *pr)
{
    /* Transfer terms count pure bandwidth (no per-call cost): still a lower
     * bound. Fetches move at the faster of copies and demand faults. */
    double in_bps = p->fault_bps > p->h2d_bps ? p->fault_bps : p->h2d_bps;
    double fetch_ns = p->chunk_bytes * 1e9 / in_bps, wb_ns = p->chunk_bytes * 1e9 / p->d2h_bps;
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        uint64_t tf = div_ceil_ns((double)b[i].fetch_bytes, in_bps);
        uint64_t tw = div_ceil_ns((double)b[i].writeback_bytes, p->d2h_bps);
        if (tf > b[i].bound_ns)
            b[i].bound_ns = tf;
        if (tw > b[i].bound_ns)
            b[i].bound_ns = tw;
        /* Write-backs only start once their data is written: after the device
         * has filled, say. The term is at most the last launch's earliest end
         * plus all write-backs; it is computed only when that could exceed the
         * others. */
        double last_end = (double)sim_refuses_distinct(u) * fetch_ns;
        if ((double)b[i].compute_ns > last_end)
            last_end = (double)b[i].compute_ns;
        if (!w[i] || last_end + (double)w[i] * wb_ns <= (double)b[i].bound_ns)
            continue;
        uint64_t cap = caps[i] / (uint64_t)p->chunk_bytes;
        say(pr, "released write-backs", i, n);
        /* ends_st: the interval ends could not be rebuilt (out of memory) */
        st[i] = ends_st != GMUX_OK
                    ? ends_st
                    : sim_refuses_wb_released(u, cap, fetch_ns, wb_ns, &b[i].wb_released_ns);
        if (st[i] == GMUX_OK && b[i].wb_released_ns > b[i].bound_ns)
            b[i].bound_ns = b[i].wb_released_ns;
    }
}

void sim_bound_compute_all(const sim_profile_t *prof, const sim_params_t *p,
                           const uint64_t *capacity_bytes, size_t n, sim_bound_t *b,
                           gmux_status_t *st, const sim_bound_progress_t *pr)
{
    uint64_t compute = 0;
    for (uint32_t t = 0; t < prof->oracle.ntasks; t++)
        compute += prof->oracle.tasks[t].compute_ns;
    for (size_t i = 0; i < n; i++) {
        memset(&b[i], 0, sizeof(b[i]));
        b[i].compute_ns = b[i].bound_ns = compute;
        st[i] = GMUX_OK;
    }
    sim_refuses_t *u = NULL;
    say(pr, "reference string", 0, 1);
    gmux_status_t s = sim_refuses_create(prof->refs, &u);
    bool *done = calloc(n ? n : 1, sizeof(*done));
    uint64_t *w = calloc(n ? n : 1, sizeof(*w));
    if (s == GMUX_OK && (!done || !w))
        s = GMUX_ERR_NOMEM;
    if (s == GMUX_OK) {
        chunk_terms(u, p, capacity_bytes, n, b, st, done, w, pr);
        /* the next uses are read by the chunk-level fetches only; the interval
         * ends again by the released term, rebuilt after the block lists */
        sim_refuses_drop_next(u);
        sim_refuses_drop_ends(u);
        block_terms(prof, u, p, capacity_bytes, n, b, st, done, pr);
        sim_refuses_drop_blocks(u);
        say(pr, "interval ends", 0, 1);
        gmux_status_t ends_st = sim_refuses_rebuild_ends(u);
        final_terms(u, ends_st, p, capacity_bytes, n, b, st, done, w, pr);
    } else if (s != GMUX_ERR_RANGE) { /* RANGE: string cut at the limit, compute term only */
        for (size_t i = 0; i < n; i++)
            st[i] = s;
    }
    free(done);
    free(w);
    sim_refuses_destroy(u);
}

gmux_status_t sim_bound_compute(const sim_profile_t *prof, const sim_params_t *p,
                                uint64_t capacity_bytes, sim_bound_t *b)
{
    gmux_status_t st;
    sim_bound_compute_all(prof, p, &capacity_bytes, 1, b, &st, NULL);
    return st;
}
