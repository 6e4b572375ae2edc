/*
 * An in-memory sim source for tests: each task's events in an array, and a
 * generator of small random workloads (allocations, launches touching random
 * chunks with random modes, frees) over a few tasks.
 */
#ifndef TESTS_SIM_TSOURCE_H
#define TESTS_SIM_TSOURCE_H

#include <stdint.h>

#include "sim/trace.h"

typedef struct tsrc_task {
    sim_event_t *ev;
    sim_range_t *ranges; /* all ranges of the task's launches, in order */
    uint32_t nev;
    uint32_t cap;
    uint32_t nranges;
    uint32_t rcap;
} tsrc_task_t;

/* A workload description the source replays (reopened for every run). */
typedef struct tsrc_spec {
    uint32_t ntasks;
    tsrc_task_t *tasks;
} tsrc_spec_t;

void tsrc_spec_init(tsrc_spec_t *s, uint32_t ntasks);
void tsrc_spec_free(tsrc_spec_t *s);
void tsrc_alloc(tsrc_spec_t *s, uint32_t task, uint64_t id, uint64_t base, uint64_t size);
void tsrc_free(tsrc_spec_t *s, uint32_t task, uint64_t id);
/* A launch touching nr ranges (addr, len, mode) triples. */
void tsrc_launch(tsrc_spec_t *s, uint32_t task, uint64_t time_ns, uint32_t nr,
                 const sim_range_t *r);

/* Random workload: ntasks tasks, each with nregions regions of 1..max_chunks
 * chunks of chunk bytes, nlaunch launches touching 1..max_ws chunks, some
 * writes, some regions freed and reallocated. */
void tsrc_random(tsrc_spec_t *s, uint64_t seed, uint32_t ntasks, uint32_t nregions,
                 uint32_t max_chunks, uint32_t nlaunch, uint32_t max_ws, uint64_t chunk);

/* Opens a source over the spec (sim_open_fn signature; ctx is the spec). */
gmux_status_t tsrc_open(void *ctx, sim_source_t **src_p, char *err, size_t errlen);

#endif /* TESTS_SIM_TSOURCE_H */
