/*
 * What the parts of `gmux sim`'s reports share: the results of one
 * configuration (one device-memory size: its transfer bound and every chosen
 * policy's run), computed by sim_report.c and printed by sim_report_print.c.
 * Internal to the gmux command.
 */
#ifndef GMUX_SIM_REPORT_CFG_H
#define GMUX_SIM_REPORT_CFG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim_report.h"

typedef struct cfg_result {
    uint64_t capacity;
    double pct;
    double asked_pct; /* the PCT asked (--oversub, a sweep's row); 0: none, hbm */
    bool one_chunk;   /* the PCT asked would leave less than one chunk */
    sim_bound_t bound;
    gmux_status_t bound_st; /* GMUX_OK: bound defined; GMUX_ERR_CAPACITY: no launch fits */
    sim_result_t res[SIM_POLICY_COUNT];
    gmux_status_t st[SIM_POLICY_COUNT];
    char err[SIM_POLICY_COUNT][256];
} cfg_result_t;

/* The trace's path or the workload's name, as reports name the input. */
const char *sim_report_job_name(const sim_job_t *job);

/* The table of one configuration (gmux sim without --json). */
void sim_report_table(const sim_job_t *job, const sim_profile_t *prof, const cfg_result_t *cr,
                      FILE *out);

/* One JSON object for one configuration, without a newline. */
void sim_report_json(const sim_job_t *job, const sim_profile_t *prof, const cfg_result_t *cr,
                     FILE *out);

#endif /* GMUX_SIM_REPORT_CFG_H */
