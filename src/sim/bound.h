/*
 * The transfer bound: a lower bound on the makespan of one run by any policy
 * of the simulator, whose faults move fault_block-sized blocks of a chunk
 * (docs/sim-bound.md).
 *
 * The run's reference string (every launch's recorded chunks in plan order,
 * with write marks, and the frees) is kept in memory up to a limit. A chunk a
 * launch does not touch in every fault block is a partial reference: it needs
 * a slot, and is left out of the chunk-level terms below (so they bound what
 * any policy moves, whole chunks or blocks); its mask of touched blocks is
 * kept for the block-level ones (sim_refuses_opt_blocks). From it,
 * for a capacity of C chunks:
 *   fetches  = misses of Belady's OPT (no policy, prefetching or not, loads
 *              fewer chunks: every chunk a launch touches must be resident);
 *   writebacks = the fewest "dirty intervals" (from a write of a chunk to its
 *              next write, else to its last reference before its free or the
 *              end of the run) that cannot all stay resident under C; every
 *              policy must write back the chunk once per such interval it does
 *              not keep resident throughout (the data is needed again at the
 *              interval's end, and only the device holds it).
 *              Choosing which intervals to keep is interval scheduling with
 *              capacity C, solved exactly by the greedy sweep that drops the
 *              interval ending last.
 * bound = max(total compute, fetches*chunk/fetch bandwidth,
 *             writebacks*chunk/D2H bandwidth, the same two over blocks,
 *             the released write-back term), the fetch bandwidth being the
 *             faster of the copy and the demand-paging rate.
 * The derivation is in docs/sim.md. Past the limit only the compute term is
 * kept (still a lower bound, a weaker one) and `exact` says so.
 *
 * Memory: 4 bytes per reference and 4 per partial one; while computing the
 * chunk-level terms, 4 more per reference and 4 per whole write (sim_refuses_t), with a queue of
 * the chunks (4 bytes per launch, 12 per chunk), see sim_refuses_opt_blocks for the block-level
 * ones; O(chunks) otherwise.
 * Thread-safety: one thread.
 */
#ifndef SIM_BOUND_H
#define SIM_BOUND_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

typedef struct sim_refstr sim_refstr_t;

gmux_status_t sim_refstr_create(uint64_t max_refs, sim_refstr_t **rs_p);
void sim_refstr_destroy(sim_refstr_t *rs);

/* Sets the fault blocks per chunk (1..32, clamped; 1 until set), before the
 * first reference. */
void sim_refstr_set_blocks(sim_refstr_t *rs, uint32_t nblocks);
/* Records one chunk of the current launch (each chunk once per launch),
 * touched in every block. */
void sim_refstr_ref(sim_refstr_t *rs, uint32_t chunk, bool write);
/* Records one chunk of the current launch that the launch does not touch in
 * every fault block (sim/faults.h); blocks is the mask of those it touches.
 * It must have a slot while the launch runs and counts in none of the
 * chunk-level terms (a policy may have moved only some of its blocks); the
 * block-level terms (sim_refuses_opt_blocks) count its blocks. */
void sim_refstr_ref_part(sim_refstr_t *rs, uint32_t chunk, uint32_t blocks, bool write);
/* Ends the current launch, which computes for compute_ns. */
void sim_refstr_end_launch(sim_refstr_t *rs, uint64_t compute_ns);
/* Records that a chunk was freed (between launches). */
void sim_refstr_free(sim_refstr_t *rs, uint32_t chunk);

/* Whether the whole string fitted under the limit. */
bool sim_refstr_complete(const sim_refstr_t *rs);
uint64_t sim_refstr_launches(const sim_refstr_t *rs);
/* Partial references recorded (0 when the string was cut). */
uint64_t sim_refstr_partial_refs(const sim_refstr_t *rs);

/* Chunks fetched at least once by any policy: the distinct chunks referenced,
 * a chunk freed and used again counting again (0 when the string was cut). */
uint64_t sim_refstr_distinct(const sim_refstr_t *rs);

/*
 * The terms above are computed on what no capacity changes, found once from
 * a complete string and shared by every capacity (an oversubscription
 * sweep): each reference's next use, each whole write's dirty-interval end,
 * the largest launch, the distinct chunks and, on the first
 * sim_refuses_opt_blocks, the block-level lists; every term is computed on
 * it (a single capacity too: create, compute, destroy). rs must outlive it,
 * unchanged.
 * GMUX_ERR_RANGE when the string was cut (or has 2^32 launches or more).
 * Memory: 4 bytes per reference and 4 per whole write, plus the block-level
 * lists (sim_refuses_opt_blocks) once built.
 */
typedef struct sim_refuses sim_refuses_t;

gmux_status_t sim_refuses_create(const sim_refstr_t *rs, sim_refuses_t **u_p);
void sim_refuses_destroy(sim_refuses_t *u);
/* OPT's fetches and the fewest write-backs for capacity_chunks;
 * GMUX_ERR_CAPACITY when one launch alone needs more than the capacity,
 * GMUX_ERR_RANGE when capacity_chunks is 0. */
gmux_status_t sim_refuses_opt(const sim_refuses_t *u, uint64_t capacity_chunks, uint64_t *fetches_p,
                              uint64_t *writebacks_p);
/*
 * sim_refuses_opt_blocks: the fetch and write-back terms at the level of
 * fault blocks, partial references included: Belady's fetches of blocks, and
 * the fewest dropped block dirty intervals, for a capacity of
 * capacity_chunks * nblocks blocks (a relaxation: a chunk holding some
 * blocks takes a whole slot in every policy). A dirty interval of a block
 * runs from a write reference touching it to the next write touching it,
 * else to its last reference touching it. Counts are in blocks.
 * GMUX_ERR_RANGE as sim_refuses_opt, and also when either per-reference list
 * (next uses; interval ends, of writes) outgrows 4 words per reference of the
 * limit; GMUX_ERR_CAPACITY as sim_refuses_opt. The lists are built on the
 * first call and kept (sim_refuses_drop_blocks). Memory while computing: 8
 * bytes per chunk and 4 per block of a chunk whose blocks' values differ
 * (three such tables at most), a queue of 4 bytes per launch and 12 per
 * chunk, and in each list 4 bytes per reference where one value covers its
 * blocks, 8 per group and 4 more where not.
 */
gmux_status_t sim_refuses_opt_blocks(sim_refuses_t *u, uint64_t capacity_chunks,
                                     uint64_t *fetch_blocks_p, uint64_t *wb_blocks_p);
/*
 * The write-back term with release times, a second lower bound on the
 * makespan: what launch k writes can only be written back once launch k has
 * ended, and launch k cannot end before the compute of launches 0..k nor
 * before each distinct chunk they reference has been fetched once (fetch_ns
 * per chunk; a chunk freed and used again counts again). After that moment
 * the device-to-host engine still has to write back the fewest dirty
 * intervals opened at k or later that cannot all stay resident (wb_ns per
 * chunk). *ns_p is the largest of these sums over the launches sampled: those
 * where the distinct chunks first reach each eighth of the capacity up to
 * twice it and a few spread over the run, then more between the best one's
 * neighbours. Errors as sim_refuses_opt's.
 */
gmux_status_t sim_refuses_wb_released(const sim_refuses_t *u, uint64_t capacity_chunks,
                                      double fetch_ns, double wb_ns, uint64_t *ns_p);
/* The distinct chunks (sim_refstr_distinct). */
uint64_t sim_refuses_distinct(const sim_refuses_t *u);
/* Frees the next uses (sim_refuses_opt cannot run after), the interval ends
 * (sim_refuses_opt and sim_refuses_wb_released cannot run until
 * sim_refuses_rebuild_ends, one backward pass, brings them back) or the
 * block-level lists (built again by a later sim_refuses_opt_blocks): for
 * callers done with one kind of term at every capacity, so that the lists do
 * not all take memory at once. */
void sim_refuses_drop_next(sim_refuses_t *u);
void sim_refuses_drop_ends(sim_refuses_t *u);
gmux_status_t sim_refuses_rebuild_ends(sim_refuses_t *u);
void sim_refuses_drop_blocks(sim_refuses_t *u);

#endif /* SIM_BOUND_H */
