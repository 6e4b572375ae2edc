/*
 * Plots of the CLI's reports: runs gnuplot on a script the caller wrote, and
 * writes strings (paths, titles) into such a script so that gnuplot reads
 * them back unchanged.
 */
#ifndef GMUX_TOOLS_PLOT_H
#define GMUX_TOOLS_PLOT_H

#include <stdbool.h>
#include <stdio.h>

#include "out_file.h"

/* Runs `gnuplot SCRIPT` (a script whose name begins with '-' as ./SCRIPT,
 * never as an option), with the variable gmux_png set to png when not NULL;
 * its exit status, PLOT_SIGNALLED + N when signal N ended it, or -1 when
 * gnuplot cannot be run. */
#define PLOT_SIGNALLED 256
int plot_gnuplot(const char *script, const char *png);

/* Closes f, a script or data file written to path: 0, or 1 after saying
 * "gmux CMD: cannot write PATH: why" (a full disk shows only at the flush,
 * so a file cut short is never drawn from). */
int plot_file_close(FILE *f, const char *cmd, const char *path);

/* A script PREFIX.gp being written, which draws PREFIX.png. Both appear
 * whole or not at all (out_file.h): the script is written as a part file
 * renamed once complete, and gnuplot draws into PREFIX.png.part~ (the
 * script's output is the variable gmux_png, PREFIX.png unless gnuplot is
 * given another), renamed over PREFIX.png once gnuplot succeeded. A script
 * cut short or a gnuplot that fails leaves the earlier files as they were. */
typedef struct plot_script {
    FILE *f; /* the body goes here, after plot_script_begin's lines */
    const char *cmd;
    char gp[1024], png[1024];
    cli_out_t out;
} plot_script_t;

/* Opens PREFIX.gp's part file and writes its first lines: the png
 * terminal of size ("W,H") and its output; 0, or 1 after saying why. */
int plot_script_begin(plot_script_t *s, const char *cmd, const char *prefix, const char *size);

/* Closes the script and puts it in place, then has gnuplot draw PREFIX.png
 * from data (a path, or a pattern for several) and says on out what came of
 * it: the plot, or gnuplot missing or failing (not an error: the data and
 * script stay). 0, or 1 when the script cannot be written whole (said;
 * nothing drawn). */
int plot_script_finish(plot_script_t *s, const char *data, FILE *out);

/* Whether s can go into a script as plot_put_str writes it: no control
 * characters (a line break would end gnuplot's command). */
bool plot_str_ok(const char *s);

/* Whether prefix (--plot PREFIX: the files are PREFIX.dat, .gp, .png) names
 * a folder rather than the files' stem: its last component is empty ("DIR/")
 * or "." or "..", which would make hidden files ("DIR/.png", "DIR/..png").
 * The commands refuse such a prefix (a usage error). */
bool plot_prefix_is_folder(const char *prefix);

/* A --plot PREFIX (option opt of gmux CMD) checked: 0, or the usage error
 * said with cli_bad_value (CLI_EXIT_USAGE) for a prefix with control
 * characters (plot_str_ok) or one that names a folder
 * (plot_prefix_is_folder; stem is the example given, "gmux-sim-sweep"). */
int plot_prefix_check(const char *cmd, const char *opt, const char *prefix, const char *stem);

/* Writes s to f as a gnuplot single-quoted string: a ' is doubled, and
 * nothing inside is expanded (no backquote commands, no @macros, no
 * backslash escapes). Control characters, which plot_str_ok refuses in
 * paths, become '?' (for titles made of names). */
void plot_put_str(FILE *f, const char *s);

#endif /* GMUX_TOOLS_PLOT_H */
