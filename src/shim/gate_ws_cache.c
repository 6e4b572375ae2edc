/* The gate's working set, kept until the region table changes: see gate_ws_cache.h. */
#include "shim/gate_ws_cache.h"

#include "shim/gate_ranges.h"

/* Region i of the table arg as a range; whether it is managed memory. */
static bool gate_ws_cache_at(const void *arg, size_t i, dmn_range_t *r)
{
    const shim_region_t *g = &((const shim_regions_t *)arg)->v[i];
    *r = (dmn_range_t){g->base, g->size};
    return g->kind == SHIM_REGION_MANAGED;
}

bool shim_gate_ws_cache_update(shim_gate_ws_cache_t *c, shim_regions_t *t)
{
    bool rebuild;
    pthread_rwlock_rdlock(&t->lock);
    rebuild = !c->built || c->changes != t->changes;
    if (rebuild) {
        c->n = shim_gate_ranges_cover(c->v, SHIM_GATE_WS_CAP, c->scratch, t->n, gate_ws_cache_at, t,
                                      &c->coarse);
        c->changes = t->changes;
        c->allocs = t->count[SHIM_REGION_MANAGED];
        c->built = true;
    }
    pthread_rwlock_unlock(&t->lock);
    return rebuild;
}
