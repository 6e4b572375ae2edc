/*
 * "opt": global placement across tasks by Belady's rule over the slice order.
 *
 * What each task's next slice touches is its declared working set (the
 * ranges of its last PENDING, rounded out to whole chunks); the order of the
 * coming slices is the arbiter's prediction (dmn_task_view_t.turn). At a
 * switch to task T the plan fills T's working set minus what is resident.
 * When the capacity does not allow it, it evicts from the task whose next
 * slice is farthest away: idle tasks first (no next use known), then the
 * waiting tasks in reverse order of their turn, then the other tasks that
 * hold the turn (turn 0, shared mode); never from T. All chunks of
 * one task are next used in the same slice, so Belady has no preference
 * among them: a victim loses its highest addresses first. If T's working set
 * alone exceeds the capacity, only what fits is filled (the rest will fault).
 * Then, for the view marked ahead (placement.h; with a capacity), its working
 * set minus what is resident fills the capacity still free, lowest addresses
 * first (AHEAD orders, no eviction), and counts as resident from then on.
 * Memory the other tasks holding the turn keep (dmn_task_view_t.kept), and
 * what this switch evicts from them, is not free: it is left out of the room
 * for the fill and the fill ahead (placement.h).
 *
 * A task's working set is built from its ranges once and kept while they
 * keep their generation (dmn_task_view_t.ranges_gen), as "chunk" does.
 *
 * A switch that fails (an allocation) leaves the residency as it was: each
 * task's intervals are copied, once per switch, before they lose any.
 * Orders of a switch that were never sent (placement.h on_unsent) come out
 * of the model: a fill's intervals are resident no longer, an eviction's
 * are again. So that the arbiter's hand-back (the incoming task's orders,
 * the fill ahead) cannot fail, it allocates nothing: it swaps back in the
 * incoming task's intervals as they were before the switch (the copy made
 * for a failure, or, when nothing was evicted from it, the array its fill
 * replaced, kept) and the task filled ahead's as they were before the fill
 * ahead (likewise kept).
 *
 * Residency is kept per task as sorted, disjoint, chunk-aligned intervals,
 * so a decision costs O(tasks + intervals), not O(chunks): 100,000 chunks in
 * a few ranges per task cost what a few chunks cost.
 *
 * This is the daemon's slice-granularity OPT. The engine's chunk-level OPT
 * over each task's launch stream (src/engine, branch h/engine) needs the
 * launch streams in the daemon; it would be another dmn_placement_t.
 *
 * Ownership: the object owns its per-task interval sets.
 * Thread-safety: none (the daemon is single-threaded).
 */
#ifndef DMN_PLACE_OPT_H
#define DMN_PLACE_OPT_H

#include <stdint.h>

#include <gmux/status.h>

#include "daemon/placement.h"

#define DMN_OPT_CHUNK (2ull << 20) /* the engine's default chunk size */

typedef struct dmn_place_opt dmn_place_opt_t;

/* capacity: device bytes the plans may fill (rounded down to chunks); 0 means
 * unlimited (fills only, never evictions). chunk: a power of two. */
gmux_status_t dmn_place_opt_create(uint64_t capacity, uint64_t chunk, dmn_place_opt_t **out);
void dmn_place_opt_destroy(dmn_place_opt_t *opt);

/* Whether each task's working set, built from its ranges, is kept across
 * switches while the ranges keep their generation (dmn_task_view_t.ranges_gen;
 * on by default). Off, it is rebuilt at every switch: the plans are the same,
 * only slower (for tests and the benchmark). */
void dmn_place_opt_set_ws_cache(dmn_place_opt_t *opt, int on);

/* The placement to hand to the arbiter; valid while opt lives. */
const dmn_placement_t *dmn_place_opt_placement(dmn_place_opt_t *opt);

/* Bytes resident by plan: of one task (0 if unknown), and in all. */
uint64_t dmn_place_opt_resident(const dmn_place_opt_t *opt, uint32_t task_id);
uint64_t dmn_place_opt_total(const dmn_place_opt_t *opt);

/* The daemon's instance, created on first use with GMUX_DAEMON_CAPACITY. */
const dmn_placement_t *dmn_place_opt_default(void);

#endif /* DMN_PLACE_OPT_H */
