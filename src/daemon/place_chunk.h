/*
 * "chunk": global placement across tasks by Belady's rule at chunk
 * granularity, over one timeline of every task's announced launches.
 *
 * The timeline is built at each switch from what the arbiter knows: the
 * predicted slice order (dmn_task_view_t.turn: 0 the incoming task, 1.. the
 * waiting ones, then the incoming task again a round later) and, for each
 * task, the working set of its pending launches as it announced them
 * (PENDING ranges, in the order given: the order of use inside its slice).
 * A chunk's next use is the position of its first appearance after the
 * running slice: (slice of its task) then (its rank in that task's ranges).
 * A chunk no announced launch touches has no next use (infinitely far).
 *
 * At a switch to task T the plan fills T's working set minus what is
 * resident; when the capacity does not allow it, it evicts the resident
 * chunks (of any task, T's own outside its working set included) whose
 * next use is farthest, highest address first among equals, never a chunk
 * of T's working set. Compared with the slice-level "opt" (place_opt.h),
 * which ranks whole tasks, this keeps the chunks a waiting task will use
 * first in its slice and drops at once what no announced launch needs.
 * If T's working set alone exceeds the capacity, its first chunks in use
 * order are filled (the rest will fault).
 *
 * Residency is one sorted array of (task, chunk) pairs; a decision costs
 * O((resident + working set) log) with the working set expanded to chunks,
 * bounded by the capacity. Ranks inside overlapping ranges of one task are
 * approximate (the earliest range's rank wins).
 *
 * Ownership: the object owns its arrays. Thread-safety: none (the daemon is
 * single-threaded).
 */
#ifndef DMN_PLACE_CHUNK_H
#define DMN_PLACE_CHUNK_H

#include <stdint.h>

#include <gmux/status.h>

#include "daemon/placement.h"

typedef struct dmn_place_chunk dmn_place_chunk_t;

/* capacity: device bytes the plans may fill (rounded down to chunks, at
 * least one chunk; 0 means 1 TiB). chunk: a power of two. */
gmux_status_t dmn_place_chunk_create(uint64_t capacity, uint64_t chunk, dmn_place_chunk_t **out);
void dmn_place_chunk_destroy(dmn_place_chunk_t *pc);

/* The placement to hand to the arbiter; valid while pc lives. */
const dmn_placement_t *dmn_place_chunk_placement(dmn_place_chunk_t *pc);

/* Bytes resident by plan: of one task (0 if unknown), and in all. */
uint64_t dmn_place_chunk_resident(const dmn_place_chunk_t *pc, uint32_t task_id);
uint64_t dmn_place_chunk_total(const dmn_place_chunk_t *pc);

/* The daemon's instance, created on first use with GMUX_DAEMON_CAPACITY. */
const dmn_placement_t *dmn_place_chunk_default(void);

#endif /* DMN_PLACE_CHUNK_H */
