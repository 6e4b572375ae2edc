/*
 * Test rig for the daemon's integration tests: a private directory with a
 * socket path, the real gmuxd started as a process, synthetic clients
 * (gmux_test_client) as processes, their logs parsed back, and waits with
 * deadlines so a hang fails the test instead of the run.
 * Not thread-safe (waitpid on its own children).
 */
#ifndef DRIG_H
#define DRIG_H

#include <stdint.h>
#include <sys/types.h>

#include "daemon/report.h"

typedef struct drig {
    char dir[64];
    char sock[128];
    pid_t daemon;
    pid_t spawned[32]; /* every process started, killed by drig_fini if still there */
    int n_spawned;
} drig_t;

typedef struct dkernel {
    int task; /* index of the client in the caller's list */
    long index;
    uint64_t req, start, end;
    int local;
    /* gmux_test_client only: the daemon's sequence number of the grant the
     * kernel ran in (0: local), and when its PENDING was in the socket
     * (else req) */
    uint64_t grant, asked;
} dkernel_t;

typedef struct dlog {
    dkernel_t *k;
    int n;
    int registrations;
    long fills, evicts, aheads; /* PLAN ranges received, by kind */
} dlog_t;

void drig_init(drig_t *r); /* fresh directory, no daemon */
void drig_fini(drig_t *r); /* kills what is left, removes the directory */
/* The rig of the running test, finished by drig_teardown when an assertion
 * fails half-way (so no daemon or client outlives its test). */
extern drig_t *drig_current;
int drig_teardown(void **state);
pid_t drig_start_daemon(drig_t *r, int quantum_ms, const char *placement);
void drig_kill_daemon(drig_t *r, int sig); /* and reaps it */
pid_t drig_start_client(drig_t *r, const char *name, const char *cls, int prio, long kernels,
                        long run_us, long idle_us);
/* The same with a declared budget (also reported as allocated: the task's
 * footprint) and the device memory it reports (0: none), in MiB. */
pid_t drig_start_client_mem(drig_t *r, const char *name, const char *cls, int prio, long kernels,
                            long run_us, long idle_us, long budget_mib, long device_mib);
/* The clients started from now on register, then wait (gmux_test_client's
 * GMUX_TEST_CLIENT_GO, 20 s at most unless GMUX_TEST_CLIENT_WAIT_S says
 * otherwise) until drig_go(r, name) before their first kernel; name NULL:
 * they no longer wait. Lets a test start clients on a state (all
 * registered, one running) rather than on how long a process takes to
 * start. */
void drig_wait_for_go(drig_t *r, const char *name);
/* Creates the go file `name` of the rig: the clients waiting on it run.
 * Returns 0, or -1 if it could not be made. */
int drig_go(drig_t *r, const char *name);
/* Starts argv[0] with argv as a process of the rig (killed by drig_fini). */
pid_t drig_spawn(drig_t *r, char *const argv[]);
/* Exit status of pid within timeout_s (128+N for signal N), -1 on timeout (then killed). */
int drig_wait(pid_t pid, double timeout_s);
/* Reads the client's log (kernels tagged with task). Returns 0 on success. */
int drig_read_log(drig_t *r, const char *name, int task, dlog_t *log);
void drig_free_log(dlog_t *log);
/* Polls the daemon until pred(report) holds or timeout_s passes; returns 1 if it held. */
int drig_until(drig_t *r, int (*pred)(const dmn_report_t *, void *), void *arg, double timeout_s,
               dmn_report_t *last);
/* drig_until predicate: the report lists exactly *(int *)arg tasks. */
int drig_n_tasks_is(const dmn_report_t *rep, void *arg);
/* drig_until predicate: exactly *(int *)arg tasks, each having run a kernel. */
int drig_n_running_is(const dmn_report_t *rep, void *arg);
/* Kills (SIGKILL) the task holding the turn in *rep (else fallback); returns
 * it once the daemon has reclaimed its slot (exactly one reclaimed), leaving
 * `remaining` tasks (*rep: the report that showed it), or -1 with a message
 * when it has not within 30 s. */
pid_t drig_kill_holder(drig_t *r, dmn_report_t *rep, pid_t fallback, int remaining);
/* The order of the priority tests: clients "low" and "high", started
 * waiting on their go files of those names (drig_wait_for_go), are let go
 * in turn: low once the report lists both tasks (60 s at most), high once
 * ran(report, NULL) holds (30 s at most). Returns 0 once both have exited 0
 * within exit_s each, or -1 with a message naming the step that failed
 * (*rep: the last report). */
int drig_low_then_high(drig_t *r, pid_t low, pid_t high, int (*ran)(const dmn_report_t *, void *),
                       double exit_s, dmn_report_t *rep);
/* Whether no two non-local kernels of different tasks overlap in time. */
int drig_exclusive(const dkernel_t *k, int n);

#ifdef GMUX_CLI_PATH
/* argv for the gmux CLI with up to four words (NULL ends it early); one
 * static array, overwritten by the next call. */
static inline char *const *drig_cli_argv(const char *a, const char *b, const char *c, const char *d)
{
    static char *argv[6];
    argv[0] = GMUX_CLI_PATH;
    argv[1] = (char *)a, argv[2] = (char *)b, argv[3] = (char *)c, argv[4] = (char *)d;
    argv[5] = NULL;
    return argv;
}
#endif

#endif /* DRIG_H */
