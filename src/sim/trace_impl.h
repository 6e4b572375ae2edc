/*
 * Internal entry points of the trace file forms, used by trace_io.c to
 * dispatch on the form of a file. Not for use outside src/sim.
 */
#ifndef SIM_TRACE_IMPL_H
#define SIM_TRACE_IMPL_H

#include <stdio.h>

#include "sim/trace_io.h"

/* First word of a text trace: "gmux-trace <version>". */
#define SIM_TEXT_MAGIC "gmux-trace"

gmux_status_t sim_text_open(const char *path, sim_source_t **src_p, char *err, size_t errlen);
gmux_status_t sim_bin_open(const char *path, sim_source_t **src_p, char *err, size_t errlen);

#endif /* SIM_TRACE_IMPL_H */
