/*
 * Plots of the CLI's reports: runs gnuplot on a script the caller wrote, and
 * writes strings (paths, titles) into such a script so that gnuplot reads
 * them back unchanged.
 */
#ifndef GMUX_TOOLS_PLOT_H
#define GMUX_TOOLS_PLOT_H

#include <stdbool.h>
#include <stdio.h>

/* Runs `gnuplot SCRIPT` (a script whose name begins with '-' as ./SCRIPT,
 * never as an option); its exit status, PLOT_SIGNALLED + N when signal N
 * ended it, or -1 when gnuplot cannot be run. */
#define PLOT_SIGNALLED 256
int plot_gnuplot(const char *script);

/* Closes f, a script or data file written to path: 0, or 1 after saying
 * "gmux CMD: cannot write PATH: why" (a full disk shows only at the flush,
 * so a file cut short is never drawn from). */
int plot_file_close(FILE *f, const char *cmd, const char *path);

/* Runs gnuplot on script gp, which draws png from data (a path, or a
 * pattern for several), and says on out what came of it: the plot, or
 * gnuplot missing or failing (not an error: the data and script stay). */
void plot_draw(const char *gp, const char *png, const char *data, FILE *out);

/* Whether s can go into a script as plot_put_str writes it: no control
 * characters (a line break would end gnuplot's command). */
bool plot_str_ok(const char *s);

/* Whether prefix (--plot PREFIX: the files are PREFIX.dat, .gp, .png) names
 * a folder rather than the files' stem: its last component is empty ("DIR/")
 * or "." or "..", which would make hidden files ("DIR/.png", "DIR/..png").
 * The commands refuse such a prefix (a usage error). */
bool plot_prefix_is_folder(const char *prefix);

/* Writes s to f as a gnuplot single-quoted string: a ' is doubled, and
 * nothing inside is expanded (no backquote commands, no @macros, no
 * backslash escapes). Control characters, which plot_str_ok refuses in
 * paths, become '?' (for titles made of names). */
void plot_put_str(FILE *f, const char *s);

#endif /* GMUX_TOOLS_PLOT_H */
