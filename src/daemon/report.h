/*
 * What `gmux status --json` and `gmux top` show: a STATUS snapshot asked of
 * the daemon over a connection of its own (no registration), printed as JSON
 * or as a table. A task's share is the fraction of the time since it
 * registered during which it held the turn. The mode (sliced or shared)
 * comes with the capacity and the footprints it was decided on.
 *
 * Ownership: the caller owns the report. Thread-safety: none needed.
 */
#ifndef DMN_REPORT_H
#define DMN_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <gmux/status.h>

#include "daemon/arbiter.h"
#include "daemon/proto.h"

typedef struct dmn_report {
    /* the process serving the socket, from SO_PEERCRED (as gmux daemon --stop
     * finds it); 0 when the kernel did not say (another pid namespace) */
    int32_t daemon_pid;
    uint64_t uptime_ns, switches, reclaimed;
    uint32_t mode;                /* dmn_mode_t: sliced or shared */
    uint64_t capacity, footprint; /* what the mode was decided on (share.h) */
    uint64_t mode_changes;
    /* planned so far (the placement's orders, not what the tasks moved) */
    uint64_t evict_bytes, fill_bytes, ahead_bytes, ahead_plans;
    /* switches held for their evictions, those that gave up, time held (v6) */
    uint64_t evict_waits, evict_timeouts, evict_wait_ns, evict_wait_max_ns;
    uint32_t n_tasks;
    dmn_status_task_t tasks[DMN_ARB_MAX_TASKS];
} dmn_report_t;

/* Sends QUERY on fd (connected to the daemon) and reads the STATUS reply;
 * out->daemon_pid is the peer's pid. */
gmux_status_t dmn_report_query(int fd, dmn_report_t *out, int timeout_ms);

/* As dmn_report_query; on an error why (when not NULL) gets the reason for a
 * user, without the path: the system's words for a failed send or recv, "it
 * closed the connection", "no answer within N s", or that the answer was no
 * status report (a malformed or unexpected message). */
gmux_status_t dmn_report_query_why(int fd, dmn_report_t *out, int timeout_ms, char *why,
                                   size_t why_cap);

/* Connects to path, queries once, disconnects. */
gmux_status_t dmn_report_fetch(const char *path, dmn_report_t *out, int timeout_ms);

double dmn_report_share(const dmn_status_task_t *t);

void dmn_report_json(FILE *out, const char *path, const dmn_report_t *r);

/* The summary lines and the task table (report_table.c), fitted to width
 * columns where they can be: the summary wraps between its fields; the
 * table is wide (whole headers, sizes to two decimals, exact counts) when
 * it fits with names of up to 16 bytes, else narrow (sizes in at most 4
 * columns, counts in 5: com_format_size_short and _count_short; headers
 * RES and MIGR), its names cut with "..." last (to no fewer than 8 columns,
 * so a table can pass a width under about 70). */
void dmn_report_table(FILE *out, const char *path, const dmn_report_t *r, unsigned width);

/* What a refreshing view (`gmux top`) keeps from one table to the next, so
 * that its layout does not jump: a column that has appeared stays. Zeroed
 * before the first table; the caller's, one per view. */
typedef struct dmn_table_keep {
    bool pin; /* a task pinned memory: PINNED (PIN) stays, 0 B for none */
} dmn_table_keep_t;

/* dmn_report_table for the next table of a refreshing view: the columns
 * keep has seen are shown, and those this one shows are added to keep. */
void dmn_report_table_keep(FILE *out, const char *path, const dmn_report_t *r, unsigned width,
                           dmn_table_keep_t *keep);

#endif /* DMN_REPORT_H */
