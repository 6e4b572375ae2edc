/*
 * One simulated run: a workload (any sim source) under one memory policy on
 * the simulated device, and the oracle pass that measures the workload (its
 * compute, footprint and reference string for the transfer bound).
 *
 * Policies:
 *   demand         CUDA Unified Memory demand paging (no prediction): a
 *                  launch's missing chunks fault in batches of fault_batch,
 *                  each batch costs fault_latency plus its (serial) write-backs
 *                  and fills; the driver evicts in FIFO-by-migration order.
 *   proactive      the engine (engine/engine.h) with Belady/OPT eviction.
 *   proactive-lru  the same engine with LRU eviction (ablation).
 *   oracle         unlimited device memory, everything resident: the ceiling.
 *
 * All policies run the same plan (the scheduler slices in compute time), so
 * they see the same reference string. Each run opens its own source through
 * the caller's open function, so sources are streamed, never stored.
 *
 * Thread-safety: runs share nothing; one run per thread.
 */
#ifndef SIM_RUN_H
#define SIM_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

#include "engine/regions.h"
#include "engine/timeline.h"
#include "sim/bound.h"
#include "sim/params.h"
#include "sim/trace.h"

typedef enum sim_policy {
    SIM_POLICY_DEMAND = 0,
    SIM_POLICY_PROACTIVE = 1,
    SIM_POLICY_PROACTIVE_LRU = 2,
    SIM_POLICY_ORACLE = 3,
    SIM_POLICY_COUNT = 4,
} sim_policy_t;

const char *sim_policy_name(sim_policy_t p);

/* Fills it (kind, launch, compute time, recorded ranges) from a trace launch;
 * the pointers still point into l. */
void sim_item_from_launch(eng_item_t *it, const sim_launch_ev_t *l);
/* GMUX_ERR_NOT_FOUND for an unknown name. */
gmux_status_t sim_policy_parse(const char *name, sim_policy_t *p_p);

/* Opens a fresh source positioned at the start of every task. */
typedef gmux_status_t (*sim_open_fn)(void *ctx, sim_source_t **src_p, char *err, size_t errlen);

/* Called every SIM_PROGRESS_EVERY launches of a run with the count so far
 * and the run's name (progress for long runs: the caller decides how often
 * to say it). */
#define SIM_PROGRESS_EVERY 4096u
typedef void (*sim_progress_fn)(void *ctx, const char *what, uint64_t launches);

typedef struct sim_task_result {
    uint64_t launches;
    uint64_t compute_ns;
    uint64_t finish_ns; /* end of its last launch */
} sim_task_result_t;

typedef struct sim_result {
    uint64_t makespan_ns;
    uint64_t bytes_h2d;
    uint64_t bytes_d2h;
    uint64_t faults; /* chunks that had to be faulted in */
    uint64_t launches;
    uint64_t slices;
    uint64_t peak_resident; /* chunks */
    uint32_t ntasks;
    sim_task_result_t *tasks; /* ntasks entries, owned; sim_result_clear frees */
    /* With a predictor (sim_hooks_t.predictor): bytes predicted, recorded, and both. */
    uint64_t pred_bytes, pred_touched_bytes, pred_hit_bytes;
    /* Of them, stream predictions (engine/stream.h), scored against the argument's slice:
     * bytes predicted, of them touched, the slices' bytes; continuations held and broken. */
    uint64_t stream_pred_bytes, stream_hit_bytes, stream_slice_bytes;
    uint64_t stream_hits, stream_misses;
    /* Proactive policies: re-plans after misses, planned positions they discarded. */
    uint64_t replans, replan_positions;
    /* Proactive policies: time each copy engine spent moving data (0 otherwise). */
    uint64_t busy_h2d_ns, busy_d2h_ns;
    /* Proactive policies: bytes cleaning wrote back (of bytes_d2h), and of them
     * those written again or freed before an eviction (wasted) and those
     * evicted clean (a write-back saved; eng_migrate_stats_t). */
    uint64_t clean_bytes, clean_rewritten_bytes, clean_freed_bytes, clean_dropped_bytes;
} sim_result_t;

void sim_result_clear(sim_result_t *r);

/* What the oracle pass learns about a workload. */
typedef struct sim_profile {
    sim_result_t oracle;      /* the oracle policy's result */
    uint64_t footprint_bytes; /* peak chunks of live regions, times the chunk size */
    uint32_t max_ws_chunks;   /* largest working set of one launch */
    sim_refstr_t *refs;       /* reference string (owned) */
    char **task_names;        /* ntasks copies (owned) */
} sim_profile_t;

/*
 * Working-set prediction for the proactive policies (sim/predict.h gives the
 * learned one). Launches run in the order they were predicted; done() is
 * called after each, so the predictor learns only from launches that ran.
 */
typedef struct sim_predictor_hooks {
    /* Starts a run over src on a device of capacity bytes; *run_p is the
     * context of the calls below. */
    gmux_status_t (*begin)(void *ctx, const sim_source_t *src, uint64_t capacity, void **run_p,
                           char *err, size_t errlen);
    /* The engine's regions (for mapping pointers to allocations), once it exists. */
    void (*attach)(void *run, eng_regions_t *regs);
    eng_predict_fn predict; /* called with run as ctx */
    /* The oldest predicted launch not yet done has run. */
    gmux_status_t (*done)(void *run);
    /* Ends the run and adds its prediction scores to r. */
    void (*end)(void *run, sim_result_t *r);
    void *ctx;
} sim_predictor_hooks_t;

typedef struct sim_hooks {
    sim_open_fn open;
    void *open_ctx;
    sim_progress_fn progress; /* may be NULL */
    void *progress_ctx;
    /* Scheduler classes of tasks 0..nclass-1 (others: BE, priority 0):
     * latency-critical flags and priorities, either may be NULL. */
    const uint8_t *lc;
    const int *prio;
    uint32_t nclass;
    /* NULL: the proactive policies use the recorded ranges as their prediction. */
    const sim_predictor_hooks_t *predictor;
} sim_hooks_t;

/* The most compute time (the sum of every launch's time_ns) a run takes: the
 * policies' clocks add transfers and faults on top, in 64 bits of ns, so
 * sim_profile_run refuses a source beyond it (GMUX_ERR_RANGE, ~146 years). */
#define SIM_MAX_COMPUTE_NS (1ull << 62)

/* The most simulated time a policy's run may take (292 years): its clock
 * saturates rather than wraps, and a run that passes this fails with
 * GMUX_ERR_RANGE (tiny bandwidths or huge per-call costs for the input). */
#define SIM_MAX_TIME_NS (1ull << 63)

/* The most chunk ids a run hands out (about 120 bytes of engine state each, so
 * some 8 GiB at most): an allocation that would take more is refused
 * (GMUX_ERR_RANGE, naming it) before the per-chunk arrays grow. Live chunks of
 * 2 MiB stay far below it within a workload's 64 TiB (sim/workload.h); with
 * 64 KiB or smaller chunks it is reached first. */
#define SIM_MAX_CHUNKS (1ull << 26)

gmux_status_t sim_profile_run(const sim_params_t *p, const sim_hooks_t *h, sim_profile_t *prof,
                              char *err, size_t errlen);
void sim_profile_clear(sim_profile_t *prof);

/* The transfer bound for a capacity: bound_ns = max(compute, fetch, write-back
 * and released write-back terms); exact is false when the reference string exceeded bound_max_refs
 * (the bound is then the compute term). */
typedef struct sim_bound {
    uint64_t bound_ns;
    uint64_t compute_ns;
    /* the larger of the chunk- and the block-level term (docs/sim.md, "The
     * transfer bound", item 7), bytes */
    uint64_t fetch_bytes;
    uint64_t writeback_bytes;
    /* the write-back term with release times (sim_refuses_wb_released); 0 when
     * there are no write-backs to make or it cannot exceed the other terms */
    uint64_t wb_released_ns;
    bool exact;
} sim_bound_t;

gmux_status_t sim_bound_compute(const sim_profile_t *prof, const sim_params_t *p,
                                uint64_t capacity_bytes, sim_bound_t *b);
/* Progress of sim_bound_compute_all, for long reference strings: fn is
 * called before each step, a pass over the whole string: the shared lists
 * (term "reference string", i 0 of n 1), then each kind of term at each
 * capacity i of n ("chunk-level terms", "block-level terms", "released
 * write-backs"; a kind skipped at a capacity is not reported) and the
 * rebuild of the interval ends ("interval ends", 0 of 1). The caller decides
 * how often to say it. */
typedef struct sim_bound_progress {
    void (*fn)(void *ctx, const char *term, size_t i, size_t n);
    void *ctx;
} sim_bound_progress_t;

/* The bounds of n capacities (an oversubscription sweep) into b[i], st[i]:
 * what sim_bound_compute gives each, the work no capacity changes done once
 * (sim_refuses_t) and its lists freed as soon as the terms that read them
 * are done. progress may be NULL. */
void sim_bound_compute_all(const sim_profile_t *prof, const sim_params_t *p,
                           const uint64_t *capacity_bytes, size_t n, sim_bound_t *b,
                           gmux_status_t *st, const sim_bound_progress_t *progress);

/* Runs one policy with the device memory of capacity_bytes (ignored by
 * oracle). GMUX_ERR_CAPACITY when one launch needs more than the capacity. */
gmux_status_t sim_run(const sim_params_t *p, const sim_hooks_t *h, sim_policy_t pol,
                      uint64_t capacity_bytes, sim_result_t *r, char *err, size_t errlen);

#endif /* SIM_RUN_H */
