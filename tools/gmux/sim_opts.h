/*
 * gmux sim's words, read and checked without reading any file or opening
 * any workload, so that unit tests (test_sim_opts) and fuzz_sim_args reach
 * the reader alone. A usage error is said on stderr ("gmux sim: ... (see
 * gmux sim --help)"). What needs the files (a --plot that would write over
 * an input, the --calibration files, the workload's own words) is checked
 * by cmd_sim.c afterwards.
 *
 * Thread-safety: none needed (a function of its arguments; --policy's list
 * is split with strtok_r on a copy; errors go to stderr).
 */
#ifndef GMUX_SIM_OPTS_H
#define GMUX_SIM_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "sim_report.h"

#define SIM_OPTS_MAX_SETS    64  /* --set options */
#define SIM_OPTS_MAX_CLASSED 256 /* task numbers --lc and --prio take: 0 to this - 1 */
#define SIM_OPTS_MAX_PRIO    1000000

/* What a word of argv is to the steps after the options are checked: the
 * value of a --calibration (a file read then) or of a --param. */
enum { SIM_ARG_OTHER, SIM_ARG_CALIB, SIM_ARG_PARAM };

struct sim_opts {
    /* workload or trace (one of them), seed, oversub_pct, policies (at least
     * one), progress, params (the defaults: --param is applied later) */
    sim_job_t job;
    const char *sets[SIM_OPTS_MAX_SETS]; /* --set, into argv */
    size_t nsets;
    uint8_t lc[SIM_OPTS_MAX_CLASSED]; /* --lc TASK: 1 */
    int prio[SIM_OPTS_MAX_CLASSED];   /* --prio TASK=N */
    uint32_t nclass;                  /* the highest TASK of --lc and --prio, plus 1 */
    bool json, sweep;
    bool recorded, predict_given; /* --predict recorded; --predict given at all */
    bool plot_given, seed_given;
    const char *templates; /* --templates, or NULL */
    const char *plot;      /* --plot, or the default stem gmux-sim-sweep */
};

/* Reads argv[1..] (argv[0] is "sim") into *o, which it sets whole, and
 * marks in role (argc bytes, zeroed by the caller) the words that are the
 * value of a --calibration (SIM_ARG_CALIB) or of a --param (SIM_ARG_PARAM,
 * checked on the default parameters): 0 when the words are good, else the
 * status of the error said (2 for a usage error, 1 without memory). --help
 * is the caller's to find first (com_cli_help_asked). */
int sim_opts_read(int argc, char **argv, unsigned char *role, struct sim_opts *o);

#endif /* GMUX_SIM_OPTS_H */
