/*
 * gmux bench net's words (`--provider`, `--reps N`, `--json`, `--quick`,
 * `--calls`, `--same SIDE`, `--plot PREFIX`), read without starting
 * anything, so that unit tests (test_bench_net_opts) and
 * fuzz_bench_net_args reach the reader alone. A usage error is said on
 * stderr ("gmux bench net: ... (see gmux bench net --help)").
 *
 * Thread-safety: none needed (a function of its arguments; errors go to
 * stderr).
 */
#ifndef GMUX_BENCH_NET_OPTS_H
#define GMUX_BENCH_NET_OPTS_H

#include <stdbool.h>

struct bench_net_opts {
    const char *provs[2]; /* "shm", "tcp" (default both), or the one --provider names */
    int nprov;            /* 1 or 2 */
    bool json, quick, calls;
    const char *same; /* --same: "gmux" or "raw", or NULL */
    const char *plot; /* --plot PREFIX, or NULL */
    char reps[16];    /* --reps: 1 to BENCH_NET_REPS_MAX runs, in decimal (the ranks' word) */
};

/* Reads argv[1..] (argv[0] is "net") into *o, which it sets whole: 0 when
 * the options are good, -1 when --help is asked (anywhere: nothing else is
 * checked; nothing said), else 2 after saying the usage error. */
int bench_net_opts_read(int argc, char **argv, struct bench_net_opts *o);

#endif /* GMUX_BENCH_NET_OPTS_H */
