/* The working set the gate announces to gmuxd: see gate_ws.h. */
#include "shim/gate_ws.h"

#include <stdbool.h>

#include "common/log.h"
#include "shim/gate_ws_cache.h"
#include "shim/shim.h"
#include "shim/stats.h"

static shim_gate_ws_cache_t gate_ws;
static bool gate_ws_said; /* the coarsening was logged */

uint32_t shim_gate_ws_build(const dmn_range_t **ws_p)
{
    if (shim_gate_ws_cache_update(&gate_ws, &shim_state.regions))
        SHIM_STAT_ADD(ws_builds, 1);
    if (gate_ws.coarse) {
        SHIM_STAT_ADD(ws_coarsened, 1);
        if (!gate_ws_said)
            COM_WARN(SHIM,
                     "working set of %llu managed allocations announced as %u ranges, the "
                     "smallest gaps between them covered (said once)",
                     (unsigned long long)gate_ws.allocs, gate_ws.n);
        gate_ws_said = true;
    }
    *ws_p = gate_ws.v;
    return gate_ws.n;
}
