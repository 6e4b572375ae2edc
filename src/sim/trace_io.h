/*
 * Trace files: opening one as a source (text or binary form, detected from
 * the first bytes) and writing one. Formats: docs/trace-format.md.
 *
 * Errors name the file and the line (text) or byte offset (binary) of the
 * first malformed record; nothing before it is lost.
 */
#ifndef SIM_TRACE_IO_H
#define SIM_TRACE_IO_H

#include <stddef.h>

#include "sim/trace.h"

/* Limits every reader and writer enforces (a record beyond them is malformed). */
#define SIM_TRACE_MAX_NAME    1024u      /* bytes of a task or kernel name */
#define SIM_TRACE_MAX_ARGS    4096u      /* arguments of one launch */
#define SIM_TRACE_MAX_RANGES  (1u << 20) /* touched ranges of one launch */
#define SIM_TRACE_MAX_TASKS   65536u
#define SIM_TRACE_MAX_KERNELS (1u << 20)

typedef enum sim_trace_format {
    SIM_TRACE_TEXT = 1,
    SIM_TRACE_BINARY = 2,
} sim_trace_format_t;

/* Opens a trace file as a source. On failure err says why (with line/offset). */
gmux_status_t sim_trace_open(const char *path, sim_source_t **src_p, char *err, size_t errlen);

/* The form of an existing trace file (from its first bytes). */
gmux_status_t sim_trace_detect(const char *path, sim_trace_format_t *format_p, char *err,
                               size_t errlen);

/* Whether name is acceptable as a task or kernel name in both forms: 1 to
 * SIM_TRACE_MAX_NAME bytes, no control characters, no leading or trailing blank. */
int sim_trace_name_ok(const char *name);

typedef struct sim_trace_writer sim_trace_writer_t;

/* Creates a trace file in the given form. */
gmux_status_t sim_trace_writer_open(const char *path, sim_trace_format_t format,
                                    sim_trace_writer_t **w_p, char *err, size_t errlen);

/* Declares task (ids 0..n-1, in order) and kernel names before their first use. */
gmux_status_t sim_trace_writer_task(sim_trace_writer_t *w, uint32_t task, const char *name);
gmux_status_t sim_trace_writer_kernel(sim_trace_writer_t *w, uint32_t kernel, const char *name);

/* Appends one event to task's stream (events of different tasks may interleave). */
gmux_status_t sim_trace_writer_event(sim_trace_writer_t *w, uint32_t task, const sim_event_t *ev);

/* Hands what the text form holds in its stdio buffer to the file (the
 * binary form keeps whole blocks in memory and writes them itself). Called
 * before a fork: the child's copy of the buffer, which stdio would flush at
 * its exit, is then empty, and nothing is written twice. */
void sim_trace_writer_sync(sim_trace_writer_t *w);

/* Flushes and closes; the file is complete only if this returns GMUX_OK. */
gmux_status_t sim_trace_writer_close(sim_trace_writer_t *w, char *err, size_t errlen);

/* Copies every task of src into w (convert, generate). */
gmux_status_t sim_trace_copy(sim_source_t *src, sim_trace_writer_t *w, char *err, size_t errlen);

#endif /* SIM_TRACE_IO_H */
