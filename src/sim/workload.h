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

gmux_status_t sim_workload_open(const char *name, const char *const *settings, size_t nsettings,
                                uint64_t seed, sim_source_t **src_p, char *err, size_t errlen);

/* Prints every workload with its settings, defaults and help. */
void sim_workload_print_help(FILE *out);

#endif /* SIM_WORKLOAD_H */
