/*
 * Helpers shared by the gmux subcommands: uniform usage errors.
 * A usage error is one line on stderr naming the command and the offending
 * word, and exit status 2. The words themselves are read with
 * common/cliopt.h (help scan, option values, option tables), which gmuxd
 * reads its own with too.
 */
#ifndef GMUX_CLI_H
#define GMUX_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/cliopt.h"
#include "common/settings.h"
#include "sim/trace.h"

#define CLI_EXIT_USAGE COM_CLI_EXIT_USAGE

/* Prints "gmux CMD: <message> (see gmux CMD --help)" and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The usage error for a word the command does not take: "unknown option
 * 'X'" when it begins with '-' ("-" alone excepted), else "unexpected
 * argument 'X'"; CLI_EXIT_USAGE. */
int cli_bad_word(const char *cmd, const char *arg);

/* "option 'OPT' needs a value" (com_cli_no_value), given without one or
 * with an empty one; CLI_EXIT_USAGE. */
int cli_no_value(const char *cmd, const char *opt);

/* "option 'OPT' wants WANTS, not 'VALUE'" (com_cli_bad_value), for a
 * value the option does not take; CLI_EXIT_USAGE. */
int cli_bad_value(const char *cmd, const char *opt, const char *value, const char *wants_fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "option 'OPT' wants WANTS, not 'VALUE' (the word 'WORD' is none of
 * them)" (com_cli_bad_list_word), for a list option (words separated by
 * commas) one word of which it does not take; CLI_EXIT_USAGE. */
int cli_bad_list_word(const char *cmd, const char *opt, const char *value, const char *word,
                      const char *wants_fmt, ...) __attribute__((format(printf, 5, 6)));

/* Prints "gmux CMD: <message>" to stderr and returns 1. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* sim_workload_open for gmux CMD's --workload NAME and --set KEY=VALUE
 * options: 0 with *src_p, or a usage error said (CLI_EXIT_USAGE): the
 * workload's words for a bad name; for settings the workload does not
 * take, "option '--set' wants KEY=VALUE, a setting of NAME, not
 * 'SETTING': WHY", quoting the setting that made the list fail (the last of
 * the shortest run of the first ones that fails alike), WHY the workload's
 * words; 1 after "out of memory". */
int cli_workload_open(const char *cmd, const char *name, const char *const *sets, size_t nsets,
                      uint64_t seed, sim_source_t **src_p);

/* dmn_cli_socket_path for gmux CMD. */
int cli_socket_path(const char *cmd, const char *given, char *out, size_t cap);

/* Whether execvp(cmd, ...) would find an executable: 0, or the errno it
 * would fail with (ENOENT, EACCES). A name with a slash is checked as it
 * is, others along $PATH. Lets a command refuse a missing program once,
 * before it starts ranks or daemons for it. */
int cli_command_errno(const char *cmd);

/* For gmux run/trace/profile/launch: "cannot run 'CMD': reason" once, and
 * the shell's status for it (127 not found, 126 not executable); 0 when
 * cmd can be run. */
int cli_check_command(const char *sub, const char *cmd);

/* The GMUX_* variables of the settings read in `scopes` (COM_SCOPE_* bits:
 * the parts a command runs): 0 when none is malformed, else a usage error
 * naming each with the form it wants (CLI_EXIT_USAGE, said). With getenv_fn
 * NULL it reloads the settings from the environment first (after a command
 * has set some from its options); else it checks the variables as getenv_fn
 * gives them and loads nothing. */
int cli_settings_check(const char *cmd, unsigned scopes, com_getenv_fn getenv_fn);

/* Prints the "Task states" section of gmux status and top --help: each
 * state the daemon's report can show (dmn_state_name) and what it means. */
void cli_print_task_states(FILE *out);

/* Widest COLUMNS taken as given. */
#define CLI_MAX_COLUMNS 4096

/* The columns a table may fill: COLUMNS when it is a number from 1 to
 * CLI_MAX_COLUMNS (set by hand, it wins, as with ncurses), else the width
 * of the terminal on stdout (TIOCGWINSZ), else COM_TEXT_WIDTH (80: a pipe, a
 * file). Asked again at each use: a terminal can be resized. */
unsigned cli_columns(void);

/* The dispositions of SIGINT, SIGTERM and SIGHUP before cli_interrupts_catch. */
struct cli_interrupts {
    struct sigaction old[3];
};

/* For a command that owns children (ranks, a daemon): until
 * cli_interrupts_restore, SIGINT, SIGTERM and SIGHUP only record their
 * number (cli_interrupted) and cut short blocking calls (EINTR, no
 * SA_RESTART), so that the command stops its children, removes its
 * temporary files and exits 128+N itself instead of dying with children
 * left running. Not thread-safe; the previous dispositions go to saved. */
void cli_interrupts_catch(struct cli_interrupts *saved);
void cli_interrupts_restore(const struct cli_interrupts *saved);

/* fork() for a command between cli_interrupts_catch and _restore: the
 * child starts with the dispositions saved (as exec would leave them), and
 * an interrupt sent to it before it has them is not lost to the handler it
 * inherited (it stays pending until then, and then acts as it would have).
 * Returns what fork returns, errno kept. */
pid_t cli_fork_child(const struct cli_interrupts *saved);

/* The signal caught since the process started (the first one), or 0. It
 * stays set after cli_interrupts_restore, for the caller's caller. */
int cli_interrupted(void);

#endif /* GMUX_CLI_H */
