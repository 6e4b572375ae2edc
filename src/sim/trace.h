/*
 * The trace model: what a task did, as the simulator, the predictor and the
 * recorder (`gmux trace -- CMD`) all see it. A trace holds several tasks; each
 * task is a program-ordered stream of events: allocations, frees and kernel
 * launches. A launch carries its kernel, grid and block, its argument values
 * (pointers included), the byte ranges it actually touched (ground truth,
 * used to score predictions and to charge faults) and its compute time on an
 * unloaded GPU.
 *
 * Readers are sources: a source hands out each task's events in program order,
 * independently per task, so the simulator can run tasks in any interleaving
 * while holding only a bounded window of each task's future (memory grows with
 * tasks and look-ahead, not with the length of the trace).
 *
 * The on-disk forms (text and binary) are documented in docs/trace-format.md
 * and implemented in trace_text.c / trace_bin.c; workload generators
 * (workload.h) are sources too.
 *
 * Ownership: an event returned by sim_source_next() and everything it points
 * to (args, ranges) stay valid until the next call for the same task.
 * Thread-safety: a source is used by one thread at a time.
 */
#ifndef SIM_TRACE_H
#define SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "engine/launch.h"

#define SIM_TRACE_VERSION 1

typedef enum sim_event_kind {
    SIM_EV_ALLOC = 1,  /* a region [base, base+size) appears */
    SIM_EV_FREE = 2,   /* the region with this id goes away */
    SIM_EV_LAUNCH = 3, /* a kernel launch */
} sim_event_kind_t;

/* Arguments and ranges are the engine's types (see engine/launch.h). */
typedef eng_arg_t sim_arg_t;     /* kind ENG_ARG_PTR or ENG_ARG_VAL */
typedef eng_range_t sim_range_t; /* mode ENG_ACCESS_READ / WRITE / RW */

typedef struct sim_alloc_ev {
    uint64_t id;   /* unique within the task */
    uint64_t base; /* device virtual address the program saw */
    uint64_t size; /* bytes */
} sim_alloc_ev_t;

typedef struct sim_free_ev {
    uint64_t id;
} sim_free_ev_t;

typedef struct sim_launch_ev {
    uint32_t kernel;   /* index into the source's kernel table */
    uint32_t grid[3];  /* grid dimensions */
    uint32_t block[3]; /* block dimensions */
    uint64_t time_ns;  /* compute time on an unloaded GPU, data resident */
    uint32_t nargs;
    uint32_t nranges;
    const sim_arg_t *args;     /* nargs entries, in parameter order */
    const sim_range_t *ranges; /* nranges touched ranges (ground truth) */
} sim_launch_ev_t;

typedef struct sim_event {
    sim_event_kind_t kind;
    union {
        sim_alloc_ev_t alloc;
        sim_free_ev_t free;
        sim_launch_ev_t launch;
    } u;
} sim_event_t;

/* A source of per-task event streams: a trace file or a workload generator. */
typedef struct sim_source sim_source_t;

typedef struct sim_source_ops {
    /* Next event of task; GMUX_ERR_NOT_FOUND (no error message) at the end of
     * that task's stream; GMUX_ERR_PARSE etc. for malformed input. */
    gmux_status_t (*next)(sim_source_t *src, uint32_t task, sim_event_t *ev);
    void (*close)(sim_source_t *src);
} sim_source_ops_t;

struct sim_source {
    const sim_source_ops_t *ops;
    uint32_t ntasks;
    const char *const *task_names; /* ntasks entries */
    uint32_t nkernels;
    const char *const *kernel_names; /* nkernels entries; identity of a kernel */
    char error[256];                 /* set with a failing status: names line/offset */
};

static inline gmux_status_t sim_source_next(sim_source_t *src, uint32_t task, sim_event_t *ev)
{
    return src->ops->next(src, task, ev);
}

static inline void sim_source_close(sim_source_t *src)
{
    if (src)
        src->ops->close(src);
}

#endif /* SIM_TRACE_H */
