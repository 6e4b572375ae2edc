/*
 * Running the gmux CLI from a test, for the tests of its words (test_cli_help,
 * test_cli_words): gmux WORDS as a real process with a timeout, its stdout in
 * out and its stderr in err (each NUL-terminated, cut at their size).
 * Thread-safety: none (one buffer each, rewritten by every run).
 */
#ifndef GMUX_TEST_CLI_WORDS_H
#define GMUX_TEST_CLI_WORDS_H

#include <stddef.h>

extern char out[65536], err[16384];

/* Most words a run takes. */
#define MAX_WORDS 12

/* gmux WORDS (NULL-terminated) with the variables of env (NULL, or
 * NULL-terminated) added to the environment; its exit status. */
int run_words_env(const char *const words[], char *const env[]);
int run_words(const char *const words[]);

/* The commands `gmux --help` lists, into names (at most cap); their count. */
size_t list_commands(char names[][32], size_t cap);

#endif /* GMUX_TEST_CLI_WORDS_H */
