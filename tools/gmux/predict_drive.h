/*
 * Driving the working-set predictor over a trace or workload source, shared
 * by `gmux profile` and `gmux predict-report`: opens the source named on the
 * command line, replays every task's events (tasks interleaved one event at a
 * time, each with its own regions from its alloc/free events) and, per
 * launch, predicts (scoring the prediction and the whole-region baseline
 * against the recorded ranges) and/or observes.
 *
 * Ownership: the caller owns the predictor; the report's arrays belong to the
 * report (pdrive_report_fini). Thread-safety: none needed (one CLI thread).
 */
#ifndef GMUX_CLI_PREDICT_DRIVE_H
#define GMUX_CLI_PREDICT_DRIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/predictor.h"
#include "engine/score.h"
#include "sim/trace.h"

/* What the command line named as input. */
typedef struct pdrive_input {
    const char *trace;    /* a trace file, or NULL */
    const char *workload; /* a built-in workload, or NULL */
    const char **sets;    /* --set KEY=VALUE for the workload */
    size_t nsets;
    uint64_t seed;
    bool seed_given; /* --seed was given: only a workload takes it */
} pdrive_input_t;

/*
 * Parses argv[i] if it is one of the input options (TRACE positional,
 * --workload NAME, --set K=V, --seed S); returns how many words it took
 * (0: not an input option, -1: usage error already printed, an empty word
 * among them: a TRACE no file is named, not one to fail to open).
 */
int pdrive_parse_arg(const char *cmd, pdrive_input_t *in, int argc, char **argv, int i);

/* The usage error (said, CLI_EXIT_USAGE) of a --set or --seed given for
 * input that is no workload (a TRACE, or the program gmux profile records);
 * else 0. */
int pdrive_check_workload_options(const char *cmd, const pdrive_input_t *in);

/* Opens the input; 0, 1 or CLI_EXIT_USAGE (message printed). */
int pdrive_open(const char *cmd, const pdrive_input_t *in, sim_source_t **src_p);

typedef struct pdrive_kernel {
    uint64_t launches;
    uint64_t launches_templated; /* predicted with every pointer argument trusted */
    eng_score_t pred, whole;
    eng_score_t trusted; /* pred, over the launches_templated launches only */
} pdrive_kernel_t;

typedef struct pdrive_report {
    uint32_t nkernels;
    pdrive_kernel_t *kernels; /* nkernels entries, by kernel id of the source */
} pdrive_report_t;

/*
 * Replays src. With predict, each launch is predicted and scored first (into
 * report, which may be NULL otherwise); with observe, the predictor then
 * learns from it. Names every kernel of the source in the predictor first.
 * Returns 0, or 1 with a message printed.
 */
int pdrive_run(const char *cmd, sim_source_t *src, eng_predictor_t *p, bool predict, bool observe,
               pdrive_report_t *report);

void pdrive_report_fini(pdrive_report_t *r);

#endif /* GMUX_CLI_PREDICT_DRIVE_H */
