/* The terms of a string at one capacity, each on a fresh sim_refuses_t (what
 * a single run computes: create, one term, destroy), for the bound tests. */
#ifndef BOUND_TEST_UTIL_H
#define BOUND_TEST_UTIL_H

#include "sim/bound.h"

/* Belady's fetches and the fewest write-backs (sim_refuses_opt). */
static inline gmux_status_t opt_chunks(const sim_refstr_t *rs, uint64_t capacity_chunks,
                                       uint64_t *fetches_p, uint64_t *writebacks_p)
{
    sim_refuses_t *u;
    gmux_status_t st = sim_refuses_create(rs, &u);
    if (st != GMUX_OK)
        return st;
    st = sim_refuses_opt(u, capacity_chunks, fetches_p, writebacks_p);
    sim_refuses_destroy(u);
    return st;
}

/* The block-level terms (sim_refuses_opt_blocks). */
static inline gmux_status_t opt_blocks(const sim_refstr_t *rs, uint64_t capacity_chunks,
                                       uint64_t *fetch_blocks_p, uint64_t *wb_blocks_p)
{
    sim_refuses_t *u;
    gmux_status_t st = sim_refuses_create(rs, &u);
    if (st != GMUX_OK)
        return st;
    st = sim_refuses_opt_blocks(u, capacity_chunks, fetch_blocks_p, wb_blocks_p);
    sim_refuses_destroy(u);
    return st;
}

/* The released write-back term (sim_refuses_wb_released). */
static inline gmux_status_t wb_released(const sim_refstr_t *rs, uint64_t capacity_chunks,
                                        double fetch_ns, double wb_ns, uint64_t *ns_p)
{
    sim_refuses_t *u;
    *ns_p = 0;
    gmux_status_t st = sim_refuses_create(rs, &u);
    if (st != GMUX_OK)
        return st;
    st = sim_refuses_wb_released(u, capacity_chunks, fetch_ns, wb_ns, ns_p);
    sim_refuses_destroy(u);
    return st;
}

#endif /* BOUND_TEST_UTIL_H */
