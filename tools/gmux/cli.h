/*
 * Helpers shared by the gmux subcommands: uniform usage errors.
 * A usage error is one line on stderr naming the command and the offending
 * word, and exit status 2.
 */
#ifndef GMUX_CLI_H
#define GMUX_CLI_H

#define CLI_EXIT_USAGE 2

/* Prints "gmux CMD: <message> (see gmux CMD --help)" and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "gmux CMD: <message>" to stderr and returns 1. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether argv[i] is -h or --help. */
int cli_is_help(const char *arg);

#endif /* GMUX_CLI_H */
