/* The working set the gate announces to gmuxd: see gate_ws.h. */
#include "shim/gate_ws.h"

#include <stdbool.h>

#include "common/log.h"
#include "shim/gate_ranges.h"
#include "shim/shim.h"
#include "shim/stats.h"

static dmn_range_t gate_ws[SHIM_GATE_WS_CAP];
static uint64_t gate_ws_scratch[SHIM_GATE_WS_CAP];
static bool gate_ws_said; /* the coarsening was logged */

/* Region i of the table arg as a range; whether it is managed memory. */
static bool gate_ws_at(const void *arg, size_t i, dmn_range_t *r)
{
    const shim_region_t *g = &((const shim_regions_t *)arg)->v[i];
    *r = (dmn_range_t){g->base, g->size};
    return g->kind == SHIM_REGION_MANAGED;
}

uint32_t shim_gate_ws_build(const dmn_range_t **ws_p)
{
    shim_regions_t *t = &shim_state.regions;
    bool coarse;
    pthread_rwlock_rdlock(&t->lock);
    uint64_t allocs = t->count[SHIM_REGION_MANAGED];
    uint32_t n = shim_gate_ranges_cover(gate_ws, SHIM_GATE_WS_CAP, gate_ws_scratch, t->n,
                                        gate_ws_at, t, &coarse);
    pthread_rwlock_unlock(&t->lock);
    if (coarse) {
        SHIM_STAT_ADD(ws_coarsened, 1);
        if (!gate_ws_said)
            COM_WARN(SHIM,
                     "working set of %llu managed allocations announced as %u ranges, the "
                     "smallest gaps between them covered (said once)",
                     (unsigned long long)allocs, n);
        gate_ws_said = true;
    }
    *ws_p = gate_ws;
    return n;
}
