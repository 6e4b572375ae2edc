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
 * order are filled (the rest will fault). Then, for the view marked ahead
 * (placement.h; with a capacity given), its chunks that are not resident,
 * in use order, fill the slots still free (AHEAD orders, no eviction) and
 * count as resident from then on. Chunks the tasks holding the turn keep
 * (dmn_task_view_t.kept, rounded up), and this switch's victims among those
 * tasks' chunks, are not free: they are left out of the room for both fills.
 *
 * Residency is kept per task as sorted runs of chunks (chunk_runs.h; a
 * task's state and what its ranges give: chunk_task.h), and
 * the decision works on runs, never on single chunks: a task's resident runs
 * are cut by its working set into runs whose chunks share a rule for their
 * next use (none outside the working set; inside, the rank grows with the
 * address), kept ordered by the key of their top chunk; the victims are taken
 * by merging those ordered lists of all tasks with a heap, each run from its
 * top for as long as it beats the best of the others. The incoming task's
 * wanted chunks are its ranges in use order (first use wins where they
 * overlap) minus its resident runs. What is derived from a task's ranges is
 * kept across switches while dmn_task_view_t.ranges_gen stays the same (0:
 * recomputed at every switch), and the cut lists are taken and filled in
 * place, so a decision costs O(the ranges and runs it touches: the incoming
 * task's, the victims'), whatever the number of chunks resident.
 *
 * The plans are exactly those of the straightforward implementation it
 * replaced (every resident chunk ranked at every switch), which the tests
 * keep as a reference (tests/daemon/place_chunk_ref.c) and compare with,
 * switch by switch. Ranks inside overlapping ranges of one task are
 * approximate (the earliest range's rank wins), as there. Turns must stay
 * below 2^24 (the arbiter's are below 256) for keys to stay ordered.
 *
 * A switch that fails (an allocation) leaves the residency as it was: the
 * runs of a task that loses chunks are copied first, once per switch (an
 * idle task's when the victims' merge first takes from it, any other's when
 * its evictions are applied; a task that loses all of them, other than the
 * incoming one, keeps them in place and only their count is kept), and put
 * back with the counts; the cut lists of
 * the tasks touched are cut again. Fills change the model only on success.
 * Orders of a switch that were never sent (placement.h on_unsent) come out
 * of the model: a fill's chunks are resident no longer, an eviction's are
 * again. So that the arbiter's hand-back (the incoming task's orders, the
 * fill ahead) cannot fail, it allocates nothing: it swaps back in the
 * incoming task's runs as they were before the switch (that copy, or, when
 * it lost none, the array its fill replaced: the union's scratch, kept) and
 * the task filled ahead's as they were before the fill ahead (likewise
 * kept).
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
