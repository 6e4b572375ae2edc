/*
 * The peer-death setup that net_rank (kill, killlock, deadops) and
 * netdev_rank (kill) share: a window on every rank (RANK_KILL_WORDS words,
 * or as many bytes as the scenario asks), a barrier, then the last rank (the
 * victim) lets the others start talking to it and dies by SIGKILL,
 * optionally after a last step of its own (killlock takes shm region locks
 * there). Plain C and CUDA host code; the including file has an int `me` in
 * scope (rank_check.h).
 */
#ifndef RANK_KILL_H
#define RANK_KILL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <gmux/net.h>

#include "rank_check.h"

#define RANK_KILL_WORDS    16
#define RANK_KILL_DELAY_US (200 * 1000) /* the victim lives on this long after the barrier */

/* A scenario's knob, NULL unless it sets one before rank_kill_start: runs on
 * every rank between the window's registration and the barrier (net_rank
 * kill with NET_RANK_KILL_STALL: net_rank_stall.c). */
static void (*rank_kill_before_barrier)(gmux_comm_t *comm);

/* Whether this process will be the victim, from the launcher's environment
 * (before gmux_comm_init: the victim may be given other parameters, such as
 * no proxy thread). */
static inline bool rank_kill_victim_env(void)
{
    const char *r = getenv("GMUX_RANK"), *s = getenv("GMUX_SIZE");
    return r && s && atoi(r) == atoi(s) - 1;
}

/* Registers a window of `bytes` zeroed bytes (its memory in *mem_p, the
 * caller's to free once the communicator is gone), waits for every rank, and
 * kills the victim (rank n - 1) RANK_KILL_DELAY_US later, after
 * before_death(arg) when given. Returns on the others only, with the
 * victim's rank. */
static inline int rank_kill_start_bytes(gmux_comm_t *comm, size_t bytes, void **mem_p,
                                        gmux_window_t *win_p, void (*before_death)(void *),
                                        void *arg)
{
    void *mem = calloc(1, bytes);
    CHECK(mem, "out of memory");
    OK(gmux_window_register(comm, mem, bytes, win_p));
    if (rank_kill_before_barrier)
        rank_kill_before_barrier(comm);
    OK(gmux_barrier(gmux_team_world(comm)));
    int victim = gmux_comm_size(comm) - 1;
    if (gmux_comm_rank(comm) == victim) {
        usleep(RANK_KILL_DELAY_US);
        if (before_death)
            before_death(arg);
        kill(getpid(), SIGKILL);
    }
    *mem_p = mem;
    return victim;
}

/* rank_kill_start_bytes with the scenarios' usual window of RANK_KILL_WORDS
 * words. */
static inline int rank_kill_start(gmux_comm_t *comm, uint64_t **mem_p, gmux_window_t *win_p,
                                  void (*before_death)(void *), void *arg)
{
    void *mem = NULL;
    int victim = rank_kill_start_bytes(comm, RANK_KILL_WORDS * sizeof(uint64_t), &mem, win_p,
                                       before_death, arg);
    *mem_p = (uint64_t *)mem;
    return victim;
}

#endif /* RANK_KILL_H */
