/*
 * The engine: proactive memory scheduling for tasks that share one GPU.
 *
 * It plans (timeline.h) which launches run in which time slice
 * (sched.h) and knows every planned launch's working set (from the pluggable
 * predictor). A shadow pass walks the plan ahead of execution, through the
 * running slice and the next `prefetch_slices` slices, and decides every
 * replacement as demand paging with the placement policy (placement.h:
 * Belady/OPT, or LRU for comparison) would at the moment of use: "fill chunk
 * c, evicting v". Each replacement is then issued as early as it can be:
 * once the launch that last uses v has run. So the incoming task's working
 * set moves at (and before) the switch, launch k+1's data moves while launch
 * k runs, and prefetching never costs a fetch that OPT would not make (the
 * "conservative" integrated prefetching of Cao et al., SIGMETRICS 1995).
 * Transfers go as batched migration plans (migrate.h) through the backend,
 * the engine's only way to move memory.
 * The caller runs the launch after the returned ticket and reports its
 * completion ticket (eng_engine_complete), which later evictions wait for.
 *
 * A launch touching a chunk the prediction missed gets it on demand (counted
 * as a fault) before it runs, never an error while the launch's own chunks
 * fit the device (with fault_blocks, only the blocks the fault moves: the
 * chunk is then on the device in part, see eng_engine_params_t). A miss
 * invalidates the plan made from the wrong prediction: pending replacements
 * are dropped, the plan becomes what is on the device, and the shadow pass
 * places the following launches again. The re-plan is incremental: it
 * visits only the chunks of the dropped replacements and of the launches the
 * shadow pass had placed beyond the miss, so its cost is that of the plan
 * it throws away (replan.c; the full walk over every chunk is kept as
 * `replan_full`, the reference the tests check it against). The chunk then
 * takes one of `reserve_chunks` slots kept out of the plan (FIFO among
 * themselves; a reserve chunk the plan later wants simply joins it without a
 * transfer), else a free planned slot, else the slot of the policy's victim
 * among the planned chunks the launch does not need (for OPT: the one used
 * farthest ahead).
 *
 * Ownership: the engine owns its timeline, regions, placement and plans; the
 * feed, predictor and backend belong to the caller and outlive the engine.
 * Thread-safety: one thread drives an engine.
 */
#ifndef ENG_ENGINE_H
#define ENG_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

#include "engine/backend.h"
#include "engine/migrate.h"
#include "engine/placement.h"
#include "engine/sched.h"
#include "engine/timeline.h"

/* The blocks of a chunk a demand fault moves (bit k: block k); see fault_blocks. */
typedef uint32_t (*eng_fault_blocks_fn)(void *ctx, uint32_t resident, uint32_t touched);

typedef struct eng_engine_params {
    uint32_t ntasks;
    eng_place_policy_t policy; /* ENG_PLACE_OPT or ENG_PLACE_LRU */
    uint64_t capacity_bytes;   /* device memory the engine may fill */
    uint64_t chunk_size;
    uint32_t lookahead;       /* launches planned ahead */
    uint32_t prefetch_slices; /* slices beyond the running one prefetched for */
    uint32_t batch_chunks;    /* fills per transfer batch */
    uint32_t reserve_chunks;  /* slots kept out of the plan for mispredicted chunks */
    uint64_t quantum_ns;
    /* Added: the copy bandwidths, bytes/s (0: unknown, plain OPT as before).
     * When both are known, eviction weighs a dirty victim's write-back
     * against a clean victim's refetch once the planned write-backs lag the
     * fills by more than wb_slack_ns (eng_place_set_wb_costs), and fills take
     * the slots their round of replacements frees in the order those free up
     * (eng_migrate_set_slot_order). With h2d <= d2h only ties go to clean
     * chunks: the fetches stay those of OPT. */
    uint64_t h2d_bps;
    uint64_t d2h_bps;
    uint64_t wb_slack_ns;
    /* Added: dirty chunks cleaned per launch at most while the device-to-host
     * engine is idle (eng_migrate_clean_idle; 0: never, needs the bandwidths). */
    uint32_t clean_chunks;
    eng_feed_t feed;
    eng_predict_fn predict; /* NULL: recorded ranges */
    void *predict_ctx;
    bool replan_full; /* re-plan by walking every chunk (tests: the reference) */
    /* Added: block size of the touched-block masks each step carries
     * (eng_timeline_params_t.block_size); 0: none. The engine's decisions do
     * not depend on it: a simulator charges faults with it. */
    uint64_t fault_block;
    /* Added: with fault_block, the blocks a demand fault on a chunk moves, given
     * the chunk's blocks on the device and those the launch touches (the
     * driver's fault granularity: a simulator's model, sim/faults.h); NULL: a
     * fault brings in the whole chunk. A chunk a fault brought in part of takes
     * its slot like any other but holds only those blocks (ENG_CHUNK_PARTIAL,
     * eng_chunk_t.blocks): a launch touching one of its missing blocks faults
     * again for them (a fault without a new slot), a planned use fills in the
     * missing blocks (a fill without a slot), and its write-back or cleaning
     * moves the blocks it holds. Placement decisions do not look at it. */
    eng_fault_blocks_fn fault_blocks;
    void *fault_ctx;
} eng_engine_params_t;

/* What re-planning after mispredictions cost. */
typedef struct eng_replan_stats {
    uint64_t replans;   /* plans dropped after a miss */
    uint64_t chunks;    /* chunks the re-plans visited */
    uint64_t repls;     /* pending replacements dropped */
    uint64_t positions; /* planned positions the shadow pass must place again */
} eng_replan_stats_t;

/* One launch, ready to run once `wait` has completed. */
typedef struct eng_step {
    uint64_t pos;
    uint64_t slice;
    uint64_t time_ns;
    uint32_t task;
    uint32_t kernel;
    bool switched;     /* first launch of a slice */
    eng_ticket_t wait; /* H2D ticket of the latest fill it needs, 0 if none */
    uint32_t faults;   /* chunks missing (or missing blocks) when it was due (fetched on demand) */
    uint32_t nrefs;
    const uint32_t *refs; /* recorded references (ENG_REF_*), valid until the next call */
    /* Added, valid as long as refs: beside refs, the blocks of each chunk the launch
     * touches (NULL without fault_block); the indices into refs of the `faults` chunks
     * fetched on demand. */
    const uint32_t *blocks;
    const uint32_t *fault_refs;
    /* Added, likewise: beside fault_refs, the blocks each fault moved (every block of
     * the chunk without fault_blocks; bit 0 alone without fault_block). */
    const uint32_t *fault_moved;
} eng_step_t;

typedef struct eng_engine eng_engine_t;

gmux_status_t eng_engine_create(const eng_engine_params_t *p, const eng_backend_t *be,
                                eng_engine_t **e_p);
void eng_engine_destroy(eng_engine_t *e);

/* The scheduler, to set classes and priorities before the first step. */
eng_sched_t *eng_engine_sched(eng_engine_t *e);
eng_regions_t *eng_engine_regions(eng_engine_t *e);
const eng_placement_t *eng_engine_placement(const eng_engine_t *e);

/* Prepares the next launch (frees on the way are applied). GMUX_ERR_NOT_FOUND
 * when every task has finished; GMUX_ERR_CAPACITY when a launch's working set
 * alone exceeds the capacity. */
gmux_status_t eng_engine_next(eng_engine_t *e, eng_step_t *step);

/* The launch returned by the last eng_engine_next ran; done is the compute
 * ticket after it. */
gmux_status_t eng_engine_complete(eng_engine_t *e, eng_ticket_t done);

const eng_migrate_stats_t *eng_engine_stats(const eng_engine_t *e);
uint64_t eng_engine_faults(const eng_engine_t *e);
const eng_replan_stats_t *eng_engine_replan_stats(const eng_engine_t *e);

#endif /* ENG_ENGINE_H */
