/* The block-level terms of a string at one capacity, as the simulator takes
 * them (sim_refuses_opt_blocks on its shared lists), for the bound tests. */
#ifndef BOUND_TEST_UTIL_H
#define BOUND_TEST_UTIL_H

#include "sim/bound.h"

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

#endif /* BOUND_TEST_UTIL_H */
