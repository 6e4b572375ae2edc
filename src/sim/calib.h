/*
 * Calibration: simulator parameters measured on a real GPU by
 * gmux-calibrate (tools/calibrate), read from its JSON output and applied
 * over the datasheet defaults (`gmux sim --calibration FILE`; --param still
 * overrides). Which measured value feeds which parameter, and why, is in
 * docs/sim.md ("Calibration").
 *
 * The file comes from outside: the reader accepts exactly one flat JSON
 * object (string keys; number, string, true/false/null values), rejects
 * anything else with the byte offset, and has a libFuzzer harness.
 * Thread-safety: pure functions of their arguments.
 */
#ifndef SIM_CALIB_H
#define SIM_CALIB_H

#include <stddef.h>

#include "sim/params.h"

/* Applies the calibration in text[0..len) to p. applied (may be NULL) gets a
 * human-readable list such as "h2d_gbps=24.1 d2h_gbps=25.3"; a file that
 * lacks a measurement leaves that parameter alone. */
gmux_status_t sim_calib_apply_text(sim_params_t *p, const char *text, size_t len, char *applied,
                                   size_t applied_len, char *err, size_t errlen);

/* Reads path and applies it as above; err names the file. */
gmux_status_t sim_calib_apply_file(sim_params_t *p, const char *path, char *applied,
                                   size_t applied_len, char *err, size_t errlen);

#endif /* SIM_CALIB_H */
