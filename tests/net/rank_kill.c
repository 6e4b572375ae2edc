/*
 * The peer-death setup of rank_kill.h: the hook, the victim's choice and the
 * barrier after which the victim dies. Linked into net_rank and netdev_rank.
 */
#include "rank_kill.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "rank_check.h"

void (*rank_kill_before_barrier)(gmux_comm_t *comm);

bool rank_kill_victim_env(void)
{
    const char *r = getenv("GMUX_RANK"), *s = getenv("GMUX_SIZE");
    return r && s && atoi(r) == atoi(s) - 1;
}

int rank_kill_start_bytes(gmux_comm_t *comm, size_t bytes, void **mem_p, gmux_window_t *win_p,
                          void (*before_death)(void *), void *arg)
{
    int me = gmux_comm_rank(comm); /* the rank rank_check.h's messages name */
    void *mem = calloc(1, bytes);
    CHECK(mem, "out of memory");
    OK(gmux_window_register(comm, mem, bytes, win_p));
    if (rank_kill_before_barrier)
        rank_kill_before_barrier(comm);
    OK(gmux_barrier(gmux_team_world(comm)));
    int victim = gmux_comm_size(comm) - 1;
    if (me == victim) {
        OK(gmux_signal_wait(comm, RANK_KILL_SIGNAL, (uint64_t)victim, NULL));
        usleep(RANK_KILL_DELAY_US);
        if (before_death)
            before_death(arg);
        kill(getpid(), SIGKILL);
    }
    OK(gmux_signal(comm, 0, victim, RANK_KILL_SIGNAL, GMUX_SIGNAL_INC, 1));
    OK(gmux_flush(comm, 0));
    *mem_p = mem;
    return victim;
}

int rank_kill_start(gmux_comm_t *comm, uint64_t **mem_p, gmux_window_t *win_p,
                    void (*before_death)(void *), void *arg)
{
    void *mem = NULL;
    int victim = rank_kill_start_bytes(comm, RANK_KILL_WORDS * sizeof(uint64_t), &mem, win_p,
                                       before_death, arg);
    *mem_p = (uint64_t *)mem;
    return victim;
}
