/*
 * A real server (dmn_server_run) in a forked child of a cmocka test, for the
 * tests that talk to it in-process (test_client, test_server_plan,
 * test_server_hold). A helper that fails fails the test with a message
 * naming what failed and the caller's file:line.
 */
#ifndef TSRV_H
#define TSRV_H

#include <sys/types.h>

#include "daemon/server.h"

/* Forks a child that runs prep(o', arg) on its copy o' of *o (when prep is
 * not NULL; nonzero: the child exits 2 at once; it may set what must be made
 * after the settings it sets, such as the placement), then the server with
 * options o' until SIGTERM (exit 0 when it ran clean). Returns the child once it listens; *slot
 * holds it from the fork on, for a teardown that kills what an early failure left. */
#define tsrv_start(o, prep, arg, slot) tsrv_start_at(__FILE__, __LINE__, (o), (prep), (arg), (slot))
pid_t tsrv_start_at(const char *file, int line, const dmn_server_opts_t *o,
                    int (*prep)(dmn_server_opts_t *, void *), void *arg, pid_t *slot);

/* A prep for tsrv_start: arg is a tsrv_cfg_t. With a capacity, sets
 * GMUX_DAEMON_CAPACITY to it and turns the share mode off (time slices
 * whatever the footprints); then the placement named, which reads the
 * capacity. */
typedef struct tsrv_cfg {
    const char *placement, *capacity; /* capacity NULL: the default */
} tsrv_cfg_t;
int tsrv_prep_cfg(dmn_server_opts_t *o, void *arg);

/* In a server child (from a prep): its log lines, as filtered by GMUX_LOG
 * (warn and above by default), go to the file at path, made anew, as well as
 * to stderr. Nonzero when the file cannot be made. */
int tsrv_log_to(const char *path);

/* Reaps the child *slot (0 after), which must exit by itself with status 0. */
#define tsrv_wait_exit0(slot) tsrv_wait_exit0_at(__FILE__, __LINE__, (slot))
void tsrv_wait_exit0_at(const char *file, int line, pid_t *slot);

/* SIGTERM to the server child *slot, reaped, and it must have exited 0. */
#define tsrv_stop(slot) tsrv_stop_at(__FILE__, __LINE__, (slot))
void tsrv_stop_at(const char *file, int line, pid_t *slot);

#endif /* TSRV_H */
