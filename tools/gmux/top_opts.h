/*
 * gmux top's words (`--socket PATH`, `--interval SECONDS`, `--once`,
 * `--batch N`), read without connecting to anything, so that unit tests
 * (test_view_opts) and fuzz_top_args reach the reader alone. A usage error
 * is said on stderr ("gmux top: ... (see gmux top --help)").
 *
 * Thread-safety: none needed (a pure function of its arguments; errors go
 * to stderr).
 */
#ifndef GMUX_TOP_OPTS_H
#define GMUX_TOP_OPTS_H

#include <stdbool.h>
#include <stdint.h>

/* the bounds of --interval, in seconds */
#define TOP_MIN_INTERVAL 0.05
#define TOP_MAX_INTERVAL 3600

struct top_opts {
    const char *sock; /* --socket, into argv; NULL: GMUX_SOCKET or the default */
    double interval;  /* seconds between two tables (default 1) */
    int64_t rounds;   /* tables to print; -1: until q, Ctrl-C or SIGTERM */
    bool live;        /* until q or Ctrl-C, quitting on q (neither --once nor --batch) */
};

/* Reads argv[1..] (argv[0] is "top") into *o, which it sets whole: 0 when
 * the options are good, -1 when --help is asked (anywhere: nothing else is
 * checked; nothing said), else 2 after saying the usage error. */
int top_opts_read(int argc, char **argv, struct top_opts *o);

#endif /* GMUX_TOP_OPTS_H */
