/*
 * The peer-death setup that net_rank (kill, killlock, deadops) and
 * netdev_rank (kill) share: a window on every rank (RANK_KILL_WORDS words,
 * or as many bytes as the scenario asks), a barrier, then the last rank (the
 * victim) waits until every other rank has left that barrier, lets them start
 * talking to it and dies by SIGKILL, optionally after a last step of its own
 * (killlock takes shm region locks there). Declarations for plain C and CUDA
 * host code; the definitions are in rank_kill.c, linked into both programs.
 */
#ifndef RANK_KILL_H
#define RANK_KILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/net.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RANK_KILL_WORDS    16
#define RANK_KILL_DELAY_US (200 * 1000) /* the victim lives on this long once all left it */
/* The victim's signal word that counts the ranks out of the barrier: the last
 * of the default 1024, which no scenario uses otherwise. */
#define RANK_KILL_SIGNAL 1023

/* A scenario's knob, NULL unless it sets one before rank_kill_start: runs on
 * every rank between the window's registration and the barrier (net_rank
 * kill with NET_RANK_KILL_STALL: net_rank_stall.c). One for the program. */
extern void (*rank_kill_before_barrier)(gmux_comm_t *comm);

/* Whether this process will be the victim, from the launcher's environment
 * (before gmux_comm_init: the victim may be given other parameters, such as
 * no proxy thread). */
bool rank_kill_victim_env(void);

/* Registers a window of `bytes` zeroed bytes (its memory in *mem_p, the
 * caller's to free once the communicator is gone), waits for every rank, and
 * kills the victim (rank n - 1) RANK_KILL_DELAY_US after the last of the
 * others left that barrier, after before_death(arg) when given. Returns on
 * the others only, with the victim's rank. A failed step ends the rank with
 * a message naming it (rank_check.h).
 *
 * Leaving a barrier says that every rank entered it, not that every rank
 * left: a rank held up (a loaded machine) may still wait there for a signal
 * of the victim's, or of a rank that waits for the victim's, and a death
 * then fails that barrier with GMUX_ERR_PEER. So each of the others signals
 * the victim once out, and the victim waits for all of them; that wait is its
 * last progress (deadops counts on none after it), and it also sends the
 * victim's own last signals of the barrier, should any still wait in its
 * rings. The others flush their signal into the provider, which delivers it
 * without their further progress (shm writes into the victim's queue as it
 * posts; tcp sends at once on a connection with nothing queued): deadops'
 * survivors progress no more until the victim has counted them. */
int rank_kill_start_bytes(gmux_comm_t *comm, size_t bytes, void **mem_p, gmux_window_t *win_p,
                          void (*before_death)(void *), void *arg);

/* rank_kill_start_bytes with the scenarios' usual window of RANK_KILL_WORDS
 * words. */
int rank_kill_start(gmux_comm_t *comm, uint64_t **mem_p, gmux_window_t *win_p,
                    void (*before_death)(void *), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* RANK_KILL_H */
