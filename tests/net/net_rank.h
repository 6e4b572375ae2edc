/*
 * What the parts of net_rank share: the job, this rank, and the checks that
 * end the rank with a message.
 */
#ifndef NET_RANK_H
#define NET_RANK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <gmux/net.h>

#include "rank_check.h"

extern gmux_comm_t *comm;
extern int me, n;

/* net_rank_mixed.c: direct and ring-path operations of several threads on
 * one stream (src/net/proxy.c, net_progress_direct). */
int mode_mixed(uint64_t rounds, int threads);

/* net_rank_hmem.c: windows and sources registered as device memory. */
int mode_hmem(const char *expect);

/* net_rank_teams.c: barriers, team splits and their failures. */
#define TEAMS_TIMEOUT_S 30.0 /* the job's timeout in that mode (main sets it) */
int mode_teams(void);

/* net_rank_guard.c: the shm guard leaves a live rank's region lock alone. */
int mode_guardlive(void);

/* net_rank_stall.c: rank_kill_before_barrier for net_rank kill with
 * NET_RANK_KILL_STALL: rank 0 held inside the barrier while the victim
 * leaves it. */
void kill_stall_before_barrier(gmux_comm_t *c);

/* net_rank_orphan.c: the launcher is killed mid-job; every rank must end
 * by itself (how: exit, or finalize first). */
int mode_orphan(const char *how);

/* net_rank_orphan.c: a rank killed at the end of its join; the others find
 * none of its files left once they know it is dead. */
int mode_leftover(void);

/* net_rank_audit.c: scenarios of defects an audit found (quiet2, rxerr,
 * fetchlate, deadops, deadfetch, deadring, staleop, devwinbad, stagefull). audit_mode says whether
 * `what` is one and adjusts the job's parameters for it; mode_audit runs it. */
bool audit_mode(const char *what, gmux_comm_params_t *p);
int mode_audit(const char *what);

#endif /* NET_RANK_H */
