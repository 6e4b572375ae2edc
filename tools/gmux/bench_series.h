/*
 * The estimator of `gmux bench net`: one figure is n alternating runs of
 * gmux and of raw libfabric (run i of each side back to back), summarised
 * as the median of each column and the median of the n per-run ratios.
 *
 * Why pairs and medians: on a shared machine a whole run can sit in a slow
 * or a fast scheduling mode (two busy threads on one core or not). Run i of
 * gmux and run i of raw usually share a mode, so their ratio cancels it;
 * the best of each column instead compares the two luckiest runs, which may
 * come from modes the other column never saw. The bests are kept for
 * comparison with older records.
 *
 * Pure functions on caller-owned arrays; thread-safe.
 */
#ifndef GMUX_CLI_BENCH_SERIES_H
#define GMUX_CLI_BENCH_SERIES_H

#include <stdbool.h>

#define BENCH_SERIES_MAX 100 /* runs per figure */

typedef struct bench_summary {
    int n;                       /* runs summarised */
    double gmux, raw;            /* median of each column */
    double gmux_best, raw_best;  /* best run of each column */
    double ratio;                /* median of gmux[i] / raw[i] */
    double ratio_min, ratio_max; /* the range of those ratios */
} bench_summary_t;

/* Summarises g[0..n) and r[0..n), values of the same unit (n below 1 counts
 * as 1, above BENCH_SERIES_MAX is clamped; every value > 0). lower_better says
 * which end is best (times: lower; rates: higher). */
bench_summary_t bench_summarize(const double *g, const double *r, int n, bool lower_better);

/* The median of v[0..n) (1 <= n <= BENCH_SERIES_MAX; the mean of the two
 * middle values for even n). v is not changed. */
double bench_median(const double *v, int n);

#endif /* GMUX_CLI_BENCH_SERIES_H */
