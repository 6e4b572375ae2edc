/*
 * What the tests of gmuxd's failure paths share (test_server_conn,
 * test_server_accept): their -Wl,--wrap wrappers act only in a server run in
 * a forked child (tsrv.h), armed and counted through ints in a page shared
 * with it (MAP_SHARED), read and written atomically; the child's log goes
 * to a file the test reads back. The fixture (tfault_fix: page, folder,
 * socket, log, child) and each test's setup and teardown live here, once.
 * Thread-safety: the counters are atomic; the rest is the test's thread's.
 */
#ifndef TFAULT_H
#define TFAULT_H

#include <stddef.h>
#include <sys/types.h>

/* A test binary's fixture, one per binary: the page shared with the server
 * child (its first member is that child's pid_t, 0 before it runs; the rest
 * the test's faults and counts), the folder made from a mkdtemp template,
 * the socket and log paths in it, and the child (tsrv_start's slot). */
typedef struct tfault_fix {
    void *page;
    size_t size;
    char dir[64], path[108], log[128];
    pid_t child;
} tfault_fix_t;

extern tfault_fix_t tfault_fix;

/* Readies the binary: SIGPIPE ignored (a peer gone is an error return), a
 * zeroed page of size bytes shared with the children forked after, the
 * folder made from tmpl ("/tmp/gmux-xx-XXXXXX"). The page, or NULL. */
void *tfault_init(size_t size, const char *tmpl);

/* Removes the log and the folder tfault_init made. */
void tfault_fini(void);

/* An int of the shared page, read, written or counted up atomically. */
int tfault_get(const int *v);
void tfault_set(int *v, int to);
void tfault_bump(int *v);

/* Whether this process is the server child (never before tfault_init). */
int tfault_in_server(void);

/* Takes one of the faults counted in *left: 1 when one was left and this
 * process is the server child, else 0. */
int tfault_take(int *left);

/* cmocka setup: the page zeroed, then a server on tfault_fix.path (quantum
 * 10 ms, messages 2 s) started in a child that logs to tfault_fix.log and
 * notes its pid in the page before it runs (tsrv_start). */
int tfault_setup(void **state);

/* cmocka teardown: the page zeroed (the server's own exit path unharmed),
 * the child continued (SIGCONT) should a test have stopped it, and killed
 * (a teardown after a failure); nothing when tfault_stop has ended it. */
int tfault_teardown(void **state);

/* As tfault_teardown, but the server must stop on SIGTERM and exit 0
 * (tsrv_stop): it was never wedged. */
void tfault_stop(void);

/* How many lines of the server's log hold what. */
int tfault_log_count(const char *what);

#endif /* TFAULT_H */
