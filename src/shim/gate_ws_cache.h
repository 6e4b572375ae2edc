/*
 * The covering set of the managed regions of a region table (the working
 * set the gate announces, gate_ws.h), kept until the table changes: a
 * launching thread announces it at every wait for a turn, and rebuilding it
 * is two passes over the whole table under its read lock
 * (shim_gate_ranges_cover). The table counts its inserts and removes
 * (shim_regions_t.changes); the set is rebuilt when that count moved.
 *
 * Ownership: the caller owns the cache (static in gate_ws.c: nothing
 * allocates). Thread-safety: none; one caller at a time (the gate's
 * gate_mu). LOCKING: takes the table's lock shared.
 */
#ifndef SHIM_GATE_WS_CACHE_H
#define SHIM_GATE_WS_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/proto.h"
#include "shim/regions.h"

#define SHIM_GATE_WS_CAP 1024u

typedef struct shim_gate_ws_cache {
    dmn_range_t v[SHIM_GATE_WS_CAP]; /* the covering set, sorted, none touching */
    uint64_t scratch[SHIM_GATE_WS_CAP];
    uint64_t changes; /* the table's count of changes v was built at */
    uint64_t allocs;  /* the managed regions then */
    uint32_t n;       /* ranges in v */
    bool built;       /* v was built once */
    bool coarse;      /* gaps between regions are covered (more than the cap) */
} shim_gate_ws_cache_t;

/* Brings c up to date with t: rebuilds it when t changed since it was
 * built (or it never was). Returns whether it rebuilt. */
bool shim_gate_ws_cache_update(shim_gate_ws_cache_t *c, shim_regions_t *t);

#endif /* SHIM_GATE_WS_CACHE_H */
