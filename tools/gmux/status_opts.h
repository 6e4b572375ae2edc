/*
 * gmux status's words (`--json`, `--socket PATH`), read without connecting
 * to anything, so that unit tests (test_view_opts) and fuzz_status_args
 * reach the reader alone. A usage error is said on stderr ("gmux status:
 * ... (see gmux status --help)").
 *
 * Thread-safety: none needed (a pure function of its arguments; errors go
 * to stderr).
 */
#ifndef GMUX_STATUS_OPTS_H
#define GMUX_STATUS_OPTS_H

#include <stdbool.h>

struct status_opts {
    const char *sock; /* --socket, into argv; NULL: GMUX_SOCKET or the default */
    bool json;        /* one JSON object instead of the table */
};

/* Reads argv[1..] (argv[0] is "status") into *o, which it sets whole: 0
 * when the options are good, -1 when --help is asked (anywhere: nothing
 * else is checked; nothing said), else 2 after saying the usage error. */
int status_opts_read(int argc, char **argv, struct status_opts *o);

#endif /* GMUX_STATUS_OPTS_H */
