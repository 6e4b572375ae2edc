/*
 * Validation of one task's event stream, shared by the text and binary
 * readers (and by tests of the generators): the live allocations of the task
 * and the rules every event must follow.
 *
 *   alloc: size > 0, id not live, [base, base+size) overlaps no live region
 *          and does not wrap around;
 *   free:  id is live;
 *   launch: kernel < nkernels, mode of each range is read/write/rw, each
 *          touched range lies inside one live region, each argument kind is
 *          ptr or val.
 *
 * Memory grows with the task's live regions, never with the number of events.
 * Ownership: sim_check_t is caller-allocated; sim_check_fini frees its arrays.
 * Thread-safety: one sim_check_t per task, used by one thread at a time.
 */
#ifndef SIM_TRACE_CHECK_H
#define SIM_TRACE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "sim/trace.h"

typedef struct sim_region {
    uint64_t base, size, id;
} sim_region_t;

typedef struct sim_check_node sim_check_node_t; /* trace_check.c */

/* The live regions: a treap ordered by base (lookups, overlaps) and a hash
 * of ids (frees, duplicates), so that every event costs O(log n) in the
 * live regions n (a sorted array cost O(n) per allocation and free). */
typedef struct sim_check {
    sim_check_node_t *nodes; /* pool; a freed node is reused */
    uint32_t ncap, nused;    /* nodes allocated, nodes ever handed out */
    uint32_t root, free;     /* treap root, free list (SIM_CHECK_NIL: none) */
    uint32_t *ids;           /* open-addressed hash of ids: node + 1, 0 empty */
    size_t idcap;            /* slots (a power of two), 0 before the first */
    size_t n;                /* live regions */
    uint32_t last;           /* node that covered the last range, or SIM_CHECK_NIL */
    uint32_t nkernels;       /* kernel ids must be below this */
    uint64_t prio;           /* the treap's priority generator */
    uint64_t live_bytes, peak_bytes;
    uint64_t work; /* nodes and slots visited: the tests bound it */
} sim_check_t;

#define SIM_CHECK_NIL UINT32_MAX

void sim_check_init(sim_check_t *c, uint32_t nkernels);
void sim_check_fini(sim_check_t *c);

/* Checks ev and, if valid, applies it (allocs and frees change the live set).
 * On failure returns GMUX_ERR_PARSE (or GMUX_ERR_NOMEM) and writes a short
 * reason (no position: the caller adds line or offset) into why. */
gmux_status_t sim_check_event(sim_check_t *c, const sim_event_t *ev, char *why, size_t whylen);

/* The live region containing [addr, addr+len), or NULL (valid until the
 * next event). */
const sim_region_t *sim_check_find(sim_check_t *c, uint64_t addr, uint64_t len);

/* Grows the array *v of *cap elements of elem bytes to hold at least need
 * (doubling); 0 on success, -1 when out of memory (*v and *cap unchanged).
 * Shared by the text and binary readers for their per-event buffers. */
int sim_trace_grow(void **v, uint32_t *cap, uint64_t need, size_t elem);

#endif /* SIM_TRACE_CHECK_H */
