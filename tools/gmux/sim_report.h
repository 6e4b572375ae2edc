/*
 * Reports of `gmux sim` (and of the mem part of `gmux demo`): runs the chosen
 * policies on one workload or trace, computes the transfer bound, and prints
 * a table or one JSON object; the sweep does it over oversubscription ratios
 * and plots the result with gnuplot.
 *
 * Output is a pure function of the input, the seed and the parameters (no
 * wall-clock figures), so reports are byte-identical from run to run.
 */
#ifndef GMUX_SIM_REPORT_H
#define GMUX_SIM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/params.h"
#include "sim/predict.h"
#include "sim/run.h"

typedef struct sim_job {
    const char *workload;    /* or NULL with trace */
    const char *const *sets; /* workload settings key=value */
    size_t nsets;
    const char *trace; /* trace file, or NULL */
    uint64_t seed;
    sim_params_t params;
    bool policies[SIM_POLICY_COUNT];
    double oversub_pct; /* > 0: device memory = footprint * 100 / pct; else params.hbm_bytes */
    const uint8_t *lc;  /* NULL or per-task latency-critical flags */
    const int *prio;    /* NULL or per-task priorities */
    uint32_t nclass;    /* entries of lc/prio */
    bool progress;      /* progress lines on stderr */
    /* Working-set prediction of the proactive policies: NULL uses the recorded
     * ranges; predict_label says which one in reports. */
    const sim_predictor_hooks_t *predictor;
    const char *predict_label;
} sim_job_t;

/* What learned prediction needs to live as long as the job that uses it. */
typedef struct sim_learned {
    sim_predict_opts_t opts;
    sim_predictor_hooks_t hooks;
    char label[512];
} sim_learned_t;

/* Makes job's proactive policies use learned prediction (the default),
 * starting from the template database at templates when not NULL: each run
 * learns online; whole regions are prefetched where faulting into them would
 * cost more (the device model's fault / prefetch rates). */
void sim_report_use_learned(sim_job_t *job, sim_learned_t *l, const char *templates);

/* One run of every chosen policy; returns the process exit status. */
int sim_report_run(const sim_job_t *job, bool json, FILE *out);

/* 100% to 400% oversubscription; writes PREFIX.dat, PREFIX.gp and PREFIX.png
 * (when gnuplot is present) and says where on msg; prefix NULL: no files. Tables (or the JSON
 * object) go to out, which may be NULL. */
int sim_report_sweep(const sim_job_t *job, bool json, const char *prefix, FILE *out, FILE *msg);

/* The mem part of `gmux demo`; the sweep's plot goes to plot_dir (NULL: the
 * current directory), and is skipped where that cannot be written. */
int sim_report_demo(const char *plot_dir);

#endif /* GMUX_SIM_REPORT_H */
