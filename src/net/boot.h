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
} net_boot_t;

gmux_status_t net_boot_open(int rank, int size, const char *hostport, uint64_t deadline_ns,
                            net_boot_t **boot_p);
/* Says BYE (unless bye is false) and closes. */
void net_boot_close(net_boot_t *boot, bool bye);

/* Every rank contributes len bytes; *all_p (malloc'd, freed by the caller)
 * receives size blobs of len bytes each, in rank order. Fails with
 * GMUX_ERR_PEER when a rank died, GMUX_ERR_TIMEOUT at the deadline. */
gmux_status_t net_boot_allgather(net_boot_t *boot, const void *mine, uint32_t len, void **all_p,
                                 uint64_t deadline_ns);
gmux_status_t net_boot_barrier(net_boot_t *boot, uint64_t deadline_ns);

/* Reads pending death notices without blocking (skips if the socket is busy). */
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
