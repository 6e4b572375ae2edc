/*
 * gmux launch's words (`-n N`, `--hosts`, `--timeout S`, `--grace S`,
 * `--bind ADDR`, `-- CMD`), read without starting anything, so that unit
 * tests (test_launch_opts) and fuzz_launch_args reach the reader alone. A
 * usage error is said on stderr ("gmux launch: ... (see gmux launch
 * --help)"), as cli.h's helpers say it.
 *
 * Thread-safety: none (the --hosts list is split with strtok).
 */
#ifndef GMUX_LAUNCH_OPTS_H
#define GMUX_LAUNCH_OPTS_H

#include <stdbool.h>

#define LAUNCH_MAX_RANKS 1024
#define LAUNCH_MAX_HOSTS 64
/* the least and the most seconds --timeout and --grace take: below a
 * millisecond a deadline is as good as now (--timeout 1e-300 ended the job
 * at once until 2026-12-04), so those are refused, not rounded up */
#define LAUNCH_MIN_SECONDS 1e-3
#define LAUNCH_MAX_SECONDS 1e6

struct launch_opts {
    int n;
    double timeout_s, grace_s; /* timeout_s 0: none */
    const char *bind;
    char *hosts[LAUNCH_MAX_HOSTS];
    int nhosts;
    char *hosts_copy; /* the last --hosts value, split in place; hosts point into it */
    char **cmd;       /* into argv */
};

/* -n's value: an integer from 1 to LAUNCH_MAX_RANKS as com_parse_i64 reads
 * it (common/parse.h: blanks around it and a sign taken, decimal or 0x hex;
 * until 2026-12-04 strtol's, a trailing blank refused). *n_p written only
 * when true. */
bool launch_parse_ranks(const char *text, int *n_p);

/* --timeout's and --grace's value: seconds from LAUNCH_MIN_SECONDS to
 * LAUNCH_MAX_SECONDS as com_parse_double reads them (strtod's forms, an
 * exponent, C99 hex floats, with blanks around them; finite). *s_p written
 * only when true. */
bool launch_parse_seconds(const char *text, double *s_p);

/* Reads argv[1..] (argv[0] is "launch") into *o, which it sets whole:
 * 0 when the options are good (then o->cmd is argv's words after "--",
 * at least one), -1 when --help is asked (nothing said), else the exit
 * status of the error it said (2 for a usage error, 1 without memory).
 * Whatever it answers, launch_opts_free(o) gives back what it took. */
int launch_opts_read(int argc, char **argv, struct launch_opts *o);

/* Frees the --hosts copy; o->hosts are no longer valid. */
void launch_opts_free(struct launch_opts *o);

#endif /* GMUX_LAUNCH_OPTS_H */
