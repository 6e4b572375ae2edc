/*
 * net_boot: a rank's side of the bootstrap: the connection to the
 * launcher's rendezvous server, collectives over it (allgather, barrier),
 * and the death notices the server sends when a rank dies.
 *
 * Ownership: net_boot_open allocates, net_boot_close frees.
 * Thread-safety: all functions may be called from any thread; one mutex
 * guards the socket. net_boot_dead and net_boot_any_dead are lock-free.
 * LOCKING: boot->lock is a leaf lock (nothing is taken while holding it).
 */
#ifndef NET_BOOT_H
#define NET_BOOT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

typedef struct net_boot {
    int fd;
    int rank, size;
    pthread_mutex_t lock;
    _Atomic bool any_dead;
    _Atomic bool *dead; /* per rank */
    _Atomic bool lost;  /* the server connection broke */
    /* a collective failed part-way (timeout, or no memory for a frame): the
     * socket is out of step with the server. Guarded by lock. */
    bool broken;
} net_boot_t;

gmux_status_t net_boot_open(int rank, int size, const char *hostport, uint64_t deadline_ns,
                            net_boot_t **boot_p);
/* Says BYE (unless bye is false, or the connection is broken) and closes. */
void net_boot_close(net_boot_t *boot, bool bye);

/* Every rank contributes len bytes; *all_p (malloc'd, freed by the caller)
 * receives size blobs of len bytes each, in rank order. Fails with
 * GMUX_ERR_PEER when a rank died or the server connection was lost,
 * GMUX_ERR_TIMEOUT at the deadline, or the status the server answered
 * every rank with when it could not make the result (GMUX_ERR_NOMEM,
 * GMUX_ERR_CAPACITY past NET_BOOT_MAX_LEN); after that last, the next
 * collective works.
 *
 * A collective that fails part-way leaves the connection broken: at a
 * timeout (whether or not part of the result had arrived) the result is
 * still to come, and when this rank had no memory for it (GMUX_ERR_NOMEM,
 * unlike the server's answer above) its bytes are still in the socket, so
 * the next collective would take them for its own.
 * They are not resumed: every later collective fails at once with
 * GMUX_ERR_STATE and sends nothing, net_boot_poll reads nothing (death
 * notices stop arriving; peers are not marked dead for it), and
 * net_boot_close says no BYE, so the launcher counts the rank's exit as a
 * failure. A bootstrap collective is part of joining, a window or a team,
 * so a rank whose collective timed out has failed that already. */
gmux_status_t net_boot_allgather(net_boot_t *boot, const void *mine, uint32_t len, void **all_p,
                                 uint64_t deadline_ns);
gmux_status_t net_boot_barrier(net_boot_t *boot, uint64_t deadline_ns);

/* Reads pending death notices without blocking (skips if the socket is busy
 * or broken). */
void net_boot_poll(net_boot_t *boot);

static inline bool net_boot_dead(const net_boot_t *boot, int rank)
{
    return boot && atomic_load_explicit(&boot->dead[rank], memory_order_relaxed);
}

static inline bool net_boot_any_dead(const net_boot_t *boot)
{
    return boot && atomic_load_explicit(&boot->any_dead, memory_order_relaxed);
}

#endif /* NET_BOOT_H */
