/*
 * Plots of the CLI's reports: runs gnuplot on a script the caller wrote.
 */
#ifndef GMUX_TOOLS_PLOT_H
#define GMUX_TOOLS_PLOT_H

/* Runs `gnuplot SCRIPT`; its exit status, or -1 when gnuplot cannot be run. */
int plot_gnuplot(const char *script);

#endif /* GMUX_TOOLS_PLOT_H */
