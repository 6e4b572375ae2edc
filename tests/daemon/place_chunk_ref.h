/*
 * The reference of the "chunk" placement (src/daemon/place_chunk.c): the
 * first, straightforward implementation of the same rule, kept for the tests
 * (the fast one must make identical plans) and for the benchmark (old and new
 * side by side). Not a policy of the daemon.
 *
 * Residency is one sorted array of (task, chunk) pairs. At each switch it
 * ranks every resident chunk (a binary search in its task's working set),
 * picks the victims with a quickselect and expands the incoming working set
 * into chunks: O((resident + working set) log) per decision. Pinned memory
 * (dmn_task_view_t.pinned) takes its rule from docs/daemon.md, "Pinned
 * memory", not from the placement's code: every listed task's bytes, each
 * rounded up to whole chunks, are no room for the fills; over the capacity,
 * a switch evicts what its fill wants and fills what that frees, if any.
 * Kept memory likewise takes its rule from placement.h
 * (dmn_task_view_t.kept) and docs/daemon-evict.md, "Evictions kept by a
 * holder": every listed task's kept bytes, each rounded up to whole chunks,
 * and this switch's victims among the chunks of the tasks holding the turn
 * beside the incoming one (turn 0, not it) are no room for either fill.
 *
 * Ownership: the object owns its arrays. Thread-safety: none.
 */
#ifndef DMN_PLACE_CHUNK_REF_H
#define DMN_PLACE_CHUNK_REF_H

#include <stdint.h>

#include <gmux/status.h>

#include "daemon/placement.h"

typedef struct dmn_place_chunk_ref dmn_place_chunk_ref_t;

/* As dmn_place_chunk_create and the accessors of place_chunk.h. */
gmux_status_t dmn_place_chunk_ref_create(uint64_t capacity, uint64_t chunk,
                                         dmn_place_chunk_ref_t **out);
void dmn_place_chunk_ref_destroy(dmn_place_chunk_ref_t *pc);
const dmn_placement_t *dmn_place_chunk_ref_placement(dmn_place_chunk_ref_t *pc);
uint64_t dmn_place_chunk_ref_resident(const dmn_place_chunk_ref_t *pc, uint32_t task_id);
uint64_t dmn_place_chunk_ref_total(const dmn_place_chunk_ref_t *pc);

#endif /* DMN_PLACE_CHUNK_REF_H */
