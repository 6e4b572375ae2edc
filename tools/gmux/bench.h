/* The benchmarks behind `gmux bench NAME`; each returns an exit status. */
#ifndef GMUX_CLI_BENCH_H
#define GMUX_CLI_BENCH_H

#include "bench_series.h"

/* gmux bench net: runs per figure (pairs of a gmux and a raw run) */
#define BENCH_NET_REPS     6 /* default: even, so each order runs as often */
#define BENCH_NET_REPS_MAX BENCH_SERIES_MAX

int bench_net(int argc, char **argv);

/* The net part of `gmux demo`. */
int demo_net(void);

#endif /* GMUX_CLI_BENCH_H */
