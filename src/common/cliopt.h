/*
 * The words of a command line, read alike by every gmux program (the gmux
 * commands, gmuxd): which options a command takes and which of them take a
 * value, listed once in a table that its parser and its --help scan both
 * read; and a usage error said in one form, "PROG: <message> (see PROG
 * --help)", with exit status COM_CLI_EXIT_USAGE, its message worded alike
 * for a missing value and a bad one.
 * Thread-safety: none needed (pure functions of their arguments; the
 * errors go to stderr).
 */
#ifndef COM_CLIOPT_H
#define COM_CLIOPT_H

#include <stdarg.h>
#include <stdbool.h>

#define COM_CLI_EXIT_USAGE 2

/* An option of a command; a table of them ends with a NULL name. */
typedef struct com_cli_opt {
    const char *name; /* "--socket", "-o" */
    bool valued;      /* takes the next word as its value */
} com_cli_opt_t;

/* The index of word in opts, or -1 when it is none of them. */
int com_cli_opt_find(const com_cli_opt_t *opts, const char *word);

/* Whether arg is -h or --help. */
bool com_cli_is_help(const char *arg);

/* Whether -h or --help is among the command's options, argv[1] on, so that
 * it prints its help before it checks any other option, reads any file or
 * any setting. The scan ends at "--" (what follows is a program's). A
 * command that takes a program as its first word that is no option (gmux
 * run) passes its options in program_opts: the scan skips the values of
 * those that take one, exactly as its parser does, and ends at that word.
 * With program_opts NULL every word up to "--" is looked at. */
bool com_cli_help_asked(int argc, char **argv, const com_cli_opt_t *program_opts);

/* Whether arg is -V or --version. */
bool com_cli_is_version(const char *arg);

/* Whether -V or --version is among the command's options, found as
 * com_cli_help_asked finds --help (so that `gmux CMD --version` prints the
 * version before any option, file or setting is read). */
bool com_cli_version_asked(int argc, char **argv, const com_cli_opt_t *program_opts);

/* The value of the option at argv[i]: argv[i + 1], or NULL when there is
 * none (the end of argv, or the "--" that starts a command: `--hosts -- CMD`
 * is a missing host list, not hosts named "--") or it is empty: `--socket
 * "$UNSET"` is no socket named, not the default one. */
const char *com_cli_option_value(int argc, char **argv, int i);

/* Prints "PROG: <message> (see PROG --help)" to stderr and returns
 * COM_CLI_EXIT_USAGE. */
int com_cli_usage_error(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int com_cli_usage_verror(const char *prog, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* The usage error for a word the command does not take: "unknown option
 * 'X'" when it begins with '-' ("-" alone excepted), else "unexpected
 * argument 'X'". */
int com_cli_bad_word(const char *prog, const char *arg);

/* The usage error of an option given without its value (or an empty one):
 * "option 'X' needs a value". */
int com_cli_no_value(const char *prog, const char *opt);

/* The usage error of an option given a value it does not take, said alike
 * for numbers, sizes, durations and words out of a list: "option 'OPT'
 * wants WANTS, not 'VALUE'", WANTS written from wants_fmt as printf would
 * ("seconds from 0.05 to 3600", "off, demand or proactive"). */
int com_cli_bad_value(const char *prog, const char *opt, const char *value, const char *wants_fmt,
                      ...) __attribute__((format(printf, 4, 5)));
int com_cli_bad_vvalue(const char *prog, const char *opt, const char *value, const char *wants_fmt,
                       va_list ap) __attribute__((format(printf, 4, 0)));

/* The usage error of a list option (words separated by commas) given a word
 * it does not take: com_cli_bad_value's words, the whole value quoted, then
 * the word: "option 'OPT' wants WANTS, not 'VALUE' (the word 'WORD' is none
 * of them)"; without the parenthesis when the value is that one word. */
int com_cli_bad_list_word(const char *prog, const char *opt, const char *value, const char *word,
                          const char *wants_fmt, ...) __attribute__((format(printf, 5, 6)));

#endif /* COM_CLIOPT_H */
