/* The transfer bound of a profiled run at one capacity (sim/run.h, docs/sim.md). */
#include <string.h>

#include "sim/device.h"
#include "sim/run.h"

static uint64_t div_ceil_ns(double bytes, double bps)
{
    return sim_ns_ceil(bytes * 1e9 / bps);
}

gmux_status_t sim_bound_compute_with(const sim_profile_t *prof, sim_refuses_t *u,
                                     const sim_params_t *p, uint64_t capacity_bytes, sim_bound_t *b)
{
    memset(b, 0, sizeof(*b));
    for (uint32_t t = 0; t < prof->oracle.ntasks; t++)
        b->compute_ns += prof->oracle.tasks[t].compute_ns;
    b->bound_ns = b->compute_ns;
    if (!u)
        return GMUX_OK; /* string cut at the limit: compute term only */
    uint64_t cap = capacity_bytes / (uint64_t)p->chunk_bytes;
    uint64_t f = 0, w = 0;
    gmux_status_t st = sim_refuses_opt(u, cap, &f, &w);
    if (st == GMUX_ERR_RANGE)
        return GMUX_OK; /* string cut at the limit: compute term only */
    if (st != GMUX_OK)
        return st;
    b->exact = true;
    b->fetch_bytes = f * (uint64_t)p->chunk_bytes;
    b->writeback_bytes = w * (uint64_t)p->chunk_bytes;
    /* The same two terms over fault blocks count the chunks touched in part
     * (docs/sim.md's bound, item 7); skipped, leaving the chunk-level ones,
     * where their lists outgrow the limit or no reference is partial. */
    uint64_t fb = 0, wb = 0, block = sim_params_fault_block(p);
    st = sim_refstr_partial_refs(prof->refs) ? sim_refuses_opt_blocks(u, cap, &fb, &wb)
                                             : GMUX_ERR_RANGE;
    if (st != GMUX_OK && st != GMUX_ERR_RANGE && st != GMUX_ERR_NOMEM)
        return st;
    if (st == GMUX_OK && fb * block > b->fetch_bytes)
        b->fetch_bytes = fb * block;
    if (st == GMUX_OK && wb * block > b->writeback_bytes)
        b->writeback_bytes = wb * block;
    /* Transfer terms count pure bandwidth (no per-call cost): still a lower
     * bound. Fetches move at the faster of copies and demand faults. */
    double in_bps = p->fault_bps > p->h2d_bps ? p->fault_bps : p->h2d_bps;
    uint64_t tf = div_ceil_ns((double)b->fetch_bytes, in_bps);
    uint64_t tw = div_ceil_ns((double)b->writeback_bytes, p->d2h_bps);
    if (tf > b->bound_ns)
        b->bound_ns = tf;
    if (tw > b->bound_ns)
        b->bound_ns = tw;
    /* Write-backs only start once their data is written: after the device has
     * filled, say. The term is at most the last launch's earliest end plus all
     * write-backs; it is computed only when that could exceed the others. */
    double fetch_ns = p->chunk_bytes * 1e9 / in_bps, wb_ns = p->chunk_bytes * 1e9 / p->d2h_bps;
    double last_end = (double)sim_refuses_distinct(u) * fetch_ns;
    if ((double)b->compute_ns > last_end)
        last_end = (double)b->compute_ns;
    if (w && last_end + (double)w * wb_ns > (double)b->bound_ns) {
        st = sim_refuses_wb_released(u, cap, fetch_ns, wb_ns, &b->wb_released_ns);
        if (st != GMUX_OK)
            return st;
        if (b->wb_released_ns > b->bound_ns)
            b->bound_ns = b->wb_released_ns;
    }
    return GMUX_OK;
}

gmux_status_t sim_bound_compute(const sim_profile_t *prof, const sim_params_t *p,
                                uint64_t capacity_bytes, sim_bound_t *b)
{
    sim_refuses_t *u = NULL;
    gmux_status_t st = sim_refuses_create(prof->refs, &u);
    gmux_status_t st2 = sim_bound_compute_with(prof, u, p, capacity_bytes, b);
    sim_refuses_destroy(u);
    /* refused (cut at the limit): the compute term alone, as with no u */
    return st == GMUX_OK || st == GMUX_ERR_RANGE ? st2 : st;
}
