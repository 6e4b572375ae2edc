/*
 * gmux predict-report's words (`TRACE` or `--workload NAME [--set KEY=VALUE
 * ...] [--seed S]`, `--templates FILE`, `--json`), read without reading any
 * file or opening any workload, so that unit tests (test_predict_report_opts)
 * and fuzz_predict_report_args reach the reader alone. The input words are
 * predict_drive.c's (pdrive_parse_arg, which gmux profile reads too). A
 * usage error is said on stderr ("gmux predict-report: ... (see gmux
 * predict-report --help)"). Which of TRACE and --workload is given, and
 * whether --set or --seed goes with a trace, pdrive_open checks.
 *
 * Thread-safety: none needed (a function of its arguments; errors go to
 * stderr).
 */
#ifndef GMUX_PREDICT_REPORT_OPTS_H
#define GMUX_PREDICT_REPORT_OPTS_H

#include <stdbool.h>

#include "predict_drive.h"

struct predict_report_opts {
    pdrive_input_t in;     /* in.sets: an array of its own (argc + 1 entries) */
    const char *templates; /* --templates, into argv, or NULL */
    bool json;
};

/* Reads argv[1..] (argv[0] is "predict-report") into *o, which it sets
 * whole: 0 when the words are good, -1 when --help is asked (anywhere before
 * "--": nothing else is checked; nothing said), else the status of the error
 * said (2 for a usage error, 1 without memory). Whatever it answers,
 * predict_report_opts_free(o) gives back what it took. */
int predict_report_opts_read(int argc, char **argv, struct predict_report_opts *o);

/* Frees o->in.sets. */
void predict_report_opts_free(struct predict_report_opts *o);

#endif /* GMUX_PREDICT_REPORT_OPTS_H */
