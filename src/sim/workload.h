/*
 * Built-in workload generators: each is a source (sim/trace.h) that produces
 * its tasks' events on the fly, deterministically from its settings and seed.
 * Documented, with where their sizes and timings come from, in
 * docs/workloads.md.
 *
 * name is one workload ("llm-decode", "dl-train", "sci-stencil", "sci-sparse")
 * or several joined by '+' ("sci-stencil+sci-sparse"), whose tasks are put
 * side by side. settings are "key=value" strings; an unknown key or a bad
 * value is an error naming it.
 */
#ifndef SIM_WORKLOAD_H
#define SIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/trace.h"

/* The most the tasks of a workload may allocate together (the sum of each
 * task's peak of live allocations): 64 TiB, 32 M chunks of 2 MiB, whose
 * state in the simulator is some 4 GiB. Settings that pass it are refused
 * at the allocation that would (sim_source_next fails with GMUX_ERR_RANGE,
 * the error naming the settings given), before the simulator holds it. */
#define SIM_WORKLOAD_MAX_BYTES (64ull << 40)

gmux_status_t sim_workload_open(const char *name, const char *const *settings, size_t nsettings,
                                uint64_t seed, sim_source_t **src_p, char *err, size_t errlen);

/* Prints every workload with its settings, defaults and help. */
void sim_workload_print_help(FILE *out);

#endif /* SIM_WORKLOAD_H */
