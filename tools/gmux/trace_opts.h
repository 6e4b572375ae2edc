/*
 * gmux trace's words: the subcommand (generate, convert, show, or a
 * recording: -o FILE -- CMD) and its options, read without reading or
 * writing any file, opening any workload or starting any program, so that
 * unit tests (test_trace_opts) and fuzz_trace_args reach the reader alone.
 * A usage error is said on stderr ("gmux trace: ... (see gmux trace
 * --help)").
 *
 * Thread-safety: none needed (a function of its arguments; errors go to
 * stderr).
 */
#ifndef GMUX_TRACE_OPTS_H
#define GMUX_TRACE_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/trace_io.h"

enum trace_sub { TRACE_SUB_GENERATE, TRACE_SUB_CONVERT, TRACE_SUB_SHOW, TRACE_SUB_RECORD };

struct trace_opts {
    enum trace_sub sub;
    /* generate: --workload NAME (given), its --set words (an array of its
     * own, argc entries) and --seed (default 1) */
    const char *workload;
    const char **sets;
    size_t nsets;
    uint64_t seed;
    /* the form written: generate's (default binary); convert's (0: the
     * other form than IN's); a recording's is format_word */
    sim_trace_format_t format;
    const char *format_word; /* a recording's --format, "binary" by default */
    bool probe;              /* a recording without --no-ranges */
    const char *in;          /* convert's IN, show's FILE */
    const char *out;         /* generate's and a recording's -o FILE, convert's OUT */
    char **cmd;              /* a recording's program and its words, into argv */
};

/* Reads argv[1..] (argv[0] is "trace") into *o, which it sets whole: 0 when
 * the words are good, -1 when --help is asked (anywhere before "--":
 * nothing else is checked; nothing said), else the status of the error
 * said (2 for a usage error, 1 without memory). Whatever it answers,
 * trace_opts_free(o) gives back what it took. */
int trace_opts_read(int argc, char **argv, struct trace_opts *o);

/* Frees o->sets. */
void trace_opts_free(struct trace_opts *o);

#endif /* GMUX_TRACE_OPTS_H */
