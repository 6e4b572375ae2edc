/*
 * The template database: what the predictor learned, per kernel identity
 * (name and parameter layout), in a versioned text file that `gmux profile`
 * writes and `gmux sim --templates` / `gmux predict-report --templates` read.
 * The format is documented in docs/templates.md.
 *
 * Loading is all or nothing: a truncated, corrupt or newer-version file
 * changes nothing in the predictor and returns an error whose message names
 * the file and the line (and byte offset) of the first problem; the caller
 * goes on with online learning.
 *
 * Thread-safety: as for the predictor (one thread at a time).
 */
#ifndef ENG_TEMPLATE_DB_H
#define ENG_TEMPLATE_DB_H

#include <stddef.h>
#include <stdio.h>

#include <gmux/status.h>

#include "engine/predictor.h"

#define ENG_TPL_DB_VERSION 1

/* Writes every kernel the predictor has named and seen. */
gmux_status_t eng_tpl_db_write(const eng_predictor_t *p, FILE *f);

/* Writes the database to path (replacing it). */
gmux_status_t eng_tpl_db_save(const eng_predictor_t *p, const char *path, char *err, size_t errlen);

/*
 * Parses a database held in memory (len bytes, need not be NUL-terminated)
 * and adds its entries to the predictor's library. what names the input in
 * error messages ("FILE:LINE: ...").
 */
gmux_status_t eng_tpl_db_parse(eng_predictor_t *p, const char *text, size_t len, const char *what,
                               char *err, size_t errlen);

/* The largest file eng_tpl_db_load reads (a database of 100,000 kernels is
 * a few MiB); beyond it GMUX_ERR_RANGE, before the rest is read. */
#define ENG_TPL_DB_MAX_BYTES (64u << 20)

/* Reads path and parses it as above. */
gmux_status_t eng_tpl_db_load(eng_predictor_t *p, const char *path, char *err, size_t errlen);

#endif /* ENG_TEMPLATE_DB_H */
