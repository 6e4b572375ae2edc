/*
 * Test helper: a scripted gmuxd in a forked child, for tests of the client
 * library that play the daemon's side themselves. The child listens on a
 * socket path, accepts one client (waiting up to 20 s), answers its REGISTER,
 * then runs the test's script on that connection and exits with its value.
 * The test steers the script over a control socket (`ctl`: a byte to go on,
 * results back; the test's end closed, the script reads end of file) and
 * collects how the child ended. What is particular to a test is its script.
 *
 * Thread-safety: not thread-safe (forks and reaps its own child).
 */
#ifndef GMUX_TESTS_FAKE_DAEMON_H
#define GMUX_TESTS_FAKE_DAEMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* How the child ends before its script runs. */
#define TDMN_ERR_LISTEN   10 /* cannot listen on the path */
#define TDMN_ERR_REGISTER 11 /* no client came, or its first message is no REGISTER */
#define TDMN_ERR_ANSWER   12 /* the REGISTERED answer could not be written */

/* The script: fd is the client's connection (registered), ctl the child's
 * end of the control socket; its value is the child's exit code. */
typedef int (*tdmn_script_fn)(int fd, int ctl, void *arg);

typedef struct tdmn {
    pid_t pid;      /* the child; 0: none running */
    int ctl;        /* the test's end of the control socket; -1: none */
    char path[108]; /* the socket */
} tdmn_t;

/* Forks the scripted daemon on path; returns once it listens: 0, or -1 with
 * nothing left running. It answers REGISTER with task_id (quantum 20 ms). */
int tdmn_start(tdmn_t *d, const char *path, uint32_t task_id, tdmn_script_fn script, void *arg);

/* A daemon that never registers anyone: forks a child that takes every
 * connection on path, reads its REGISTER, writes the len bytes of answer
 * (nothing when len is 0) and closes the connection, until the test closes
 * ctl. tdmn_end then reports TDMN_CLOSER_BASE + the number of REGISTERs it
 * took (at most 100): every one sent before tdmn_end, those of connections
 * still queued when ctl ended included (read then, left unanswered). 0, or
 * -1 with nothing left running. */
#define TDMN_CLOSER_BASE 100
int tdmn_start_closer(tdmn_t *d, const char *path, const uint8_t *answer, size_t len);

/* A wedged daemon: like the closer, but it answers no REGISTER and closes no
 * connection; it reads (and ignores) whatever comes, and closes each once
 * the client does (the 32 most recent stay open at most). tdmn_end reports
 * TDMN_CLOSER_BASE + the REGISTERs it took. 0, or -1 with nothing left
 * running. */
int tdmn_start_silent(tdmn_t *d, const char *path);

/* Writes one byte on ctl (the script's signal to go on): 0, or -1. */
int tdmn_go(const tdmn_t *d);

/* Closes ctl, waits for the child, removes the socket and its lock file:
 * how the child ended, as tproc_reap reports it. */
int tdmn_end(tdmn_t *d);

/* For cmocka teardowns: kills a child still running (a test that failed an
 * assertion), closes ctl and removes the files; nothing when none runs. */
void tdmn_kill(tdmn_t *d);

#endif
