/*
 * What the tests of gmuxd's failure paths share (test_server_conn,
 * test_server_accept): their -Wl,--wrap wrappers act only in a server run in
 * a forked child (tsrv.h), armed and counted through ints in a page shared
 * with it (MAP_SHARED), read and written atomically; the child's log goes
 * to a file the test reads back.
 * Thread-safety: the counters are atomic; the rest is the test's thread's.
 */
#ifndef TFAULT_H
#define TFAULT_H

#include <stddef.h>
#include <sys/types.h>

/* A zeroed page of size bytes shared with the children forked after; NULL
 * when it cannot be mapped. */
void *tfault_shared(size_t size);

/* An int of the shared page, read, written or counted up atomically. */
int tfault_get(const int *v);
void tfault_set(int *v, int to);
void tfault_bump(int *v);

/* Whether this process is *server (the server child, 0 before it runs). */
int tfault_in_server(const pid_t *server);

/* Takes one of the faults counted in *left: 1 when one was left and this
 * process is *server, else 0. */
int tfault_take(int *left, const pid_t *server);

/* Starts a server on path (quantum 10 ms, messages 2 s) in a child that
 * logs to log and notes its pid in *server before it runs; *slot holds the
 * child (tsrv_start). */
void tfault_start(const char *path, const char *log, pid_t *server, pid_t *slot);

/* A test's setup: the shared page (size bytes) zeroed, then tfault_start. */
void tfault_setup(void *page, size_t size, pid_t *server, const char *path, const char *log,
                  pid_t *slot);

/* The server child *slot ended, the page zeroed first (the server's own exit
 * path unharmed) and the child continued (SIGCONT) should a test have
 * stopped it: with clean, it must stop on SIGTERM and exit 0 (tsrv_stop);
 * else it is killed (a teardown after a failure). */
void tfault_end(void *page, size_t size, pid_t *slot, int clean);

/* A test binary's folder (dir, a mkdtemp template) made, with its socket's
 * path and its log's in it: 0, or -1 when it cannot be made. */
int tfault_paths(char *dir, char *path, size_t path_cap, char *log, size_t log_cap);

/* Removes the log and the folder tfault_paths made. */
void tfault_remove(const char *dir, const char *log);

/* How many lines of the file log hold what. */
int tfault_log_count(const char *log, const char *what);

#endif /* TFAULT_H */
