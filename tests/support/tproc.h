/*
 * Test helper: run several processes at once with a timeout and collect how
 * each ended. Integration tests (daemon and clients, ranks over loopback)
 * use it so that a hang fails the test instead of the whole CI run.
 *
 * Every child runs in its own process group; on timeout the whole group is
 * sent SIGKILL, so grandchildren (a launcher's ranks) go too. On Linux each
 * child also gets SIGKILL when the test process dies (PR_SET_PDEATHSIG, from
 * the thread that called): a test stopped by a signal (ctest's timeout)
 * leaves none running; until 2026-12-02 they ran on (test_gate_harness).
 *
 * Thread-safety: not thread-safe (uses waitpid on its own children).
 */
#ifndef TPROC_H
#define TPROC_H

#include <stddef.h>
#include <sys/types.h>

/* How a process ended, as stored in the status arrays below. */
#define TPROC_TIMED_OUT (-1) /* killed by the helper at the deadline */
#define TPROC_NOT_RUN   (-2) /* fork or exec failed */
/* 0..255: exit code; 128+N: killed by signal N (as a shell reports it). */

/* Runs argvs[i] (argv arrays, NULL-terminated, argvs[i][0] looked up in PATH)
 * concurrently; waits at most timeout_s for all of them. status[i] as above.
 * Returns the number of processes that did not exit 0. */
int tproc_run_all(size_t n, char *const *const argvs[], double timeout_s, int *status);

/* Forks n children; child i runs fn(i, arg) and exits with its return value.
 * Same waiting and status as tproc_run_all. */
int tproc_fork_all(size_t n, int (*fn)(int index, void *arg), void *arg, double timeout_s,
                   int *status);

/* Runs one command, capturing stdout and stderr (NUL-terminated, truncated to
 * the buffer). envp_extra: "NAME=value" strings added to the environment, or
 * NULL. Returns the status as above. */
int tproc_capture(char *const argv[], char *const envp_extra[], double timeout_s, char *out,
                  size_t outlen, char *err, size_t errlen);

/* tproc_capture of `exe sub args...` (args NULL-terminated, at most 29). */
int tproc_capture_sub(const char *exe, const char *sub, const char *const *args, double timeout_s,
                      char *out, size_t outlen, char *err, size_t errlen);

/* The number after the first occurrence of key in s (key includes the ": "
 * of a JSON member), or NAN when key is absent. */
double tproc_json_num(const char *s, const char *key);

/* Whether no line of text passes cols columns (bytes); prints the first that
 * does. */
int tproc_fits_cols(const char *text, int cols);

/* Joins a report's wrapped lines, in place: each newline and the blanks
 * after it become one blank, so that strstr finds a phrase the report broke
 * across lines (com_text_wrap). Returns s. */
char *tproc_unwrap(char *s);

/* Waits for child *pid to end and sets *pid to 0: its status as above
 * (TPROC_NOT_RUN when *pid is 0 or less or cannot be waited for). */
int tproc_reap(pid_t *pid);

/* Kills *pid (SIGKILL) and reaps it, then sets *pid to 0; nothing when *pid
 * is 0 or less. For cmocka teardowns: a child forked by a test that failed
 * an assertion would otherwise keep the test's output open until ctest's
 * timeout. */
void tproc_kill_reap(pid_t *pid);

/* For tests of an output written as a part file and renamed once complete:
 * makes a FIFO at part, runs argv (its stdout and stderr to /dev/null),
 * sends it SIGTERM once its first bytes reach the FIFO (or after timeout_s),
 * and reaps it; the writer is caught mid-write on a machine of any speed.
 * Returns the status as above; *written: whether bytes arrived before the
 * signal. The FIFO is left to the caller (the writer should have removed
 * it). */
int tproc_stop_once_written(char *const argv[], const char *part, double timeout_s, int *written);

#endif /* TPROC_H */
