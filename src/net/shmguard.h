/*
 * net_shmguard: keeps a dead rank from stranding the survivors of a shm job.
 *
 * libfabric 1.17's shm provider guards each rank's shared region with a
 * pthread spin lock that lives in the region itself. A sender takes the
 * target's lock, and a rank takes its own while it progresses (inside
 * fi_cq_read). A rank SIGKILLed while holding one leaves it held for good:
 * every later sender to that region, or its owner's own progress, spins
 * inside libfabric where no timeout of ours reaches.
 *
 * The guard maps the header of every rank's region. Each libfabric call
 * that may spin on a region lock is bracketed (net_shmguard_enter/leave,
 * naming the region). A thread of the same rank that cannot get the
 * progress lock (a waiter, the proxy) calls net_shmguard_check: once some
 * rank has died and one bracketed call has stayed inside libfabric for
 * NET_SHMGUARD_STUCK_NS while its region's lock is held, the lock can only
 * have been left by the dead rank (a live holder keeps it for
 * microseconds), and the guard releases it. The stuck call then proceeds,
 * and the operation fails or is dropped by the usual dead-peer handling.
 * (Misjudged only if, after a death, one call of ours spends the whole
 * period inside a critical section it holds itself: see docs/net.md.)
 * Lock words are read and written as plain atomics, never through
 * pthread_spin_* on a lock another process holds.
 *
 * Only used when the provider is shm and the region header is the one this
 * file knows (libfabric 1.17, region version 4); otherwise open returns
 * UNSUPPORTED and the launcher's --grace remains the last resort.
 *
 * Ownership: one per communicator, owned by it. Thread-safety: enter/leave
 * by the progress-lock holder; check by any thread (serialised inside).
 */
#ifndef NET_SHMGUARD_H
#define NET_SHMGUARD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#define NET_SHMGUARD_STUCK_NS (1000ull * 1000 * 1000)

typedef struct net_shmguard {
    int n;
    void **hdr;           /* per rank: the mapped first page of its region, or NULL */
    _Atomic uint64_t seq; /* odd while a bracketed call is inside libfabric */
    _Atomic int region;   /* the region that call may spin on */
    pthread_mutex_t lock; /* serialises check */
    uint64_t seen_seq;    /* check's view: the call last seen inside */
    uint64_t seen_ns;     /* and since when */
    uint64_t released;    /* locks released so far */
    int unlocked;         /* the word of an unlocked spin lock */
} net_shmguard_t;

/* Maps the regions named by names (n * name_stride bytes; each an shm
 * endpoint name, with or without the "fi_shm://" prefix). */
gmux_status_t net_shmguard_open(const char *names, size_t name_stride, int n,
                                net_shmguard_t **guard_p);
void net_shmguard_close(net_shmguard_t *g);

static inline void net_shmguard_enter(net_shmguard_t *g, int region)
{
    if (g) { /* one writer (the progress-lock holder): no read-modify-write needed */
        atomic_store_explicit(&g->region, region, memory_order_relaxed);
        uint64_t s = atomic_load_explicit(&g->seq, memory_order_relaxed);
        atomic_store_explicit(&g->seq, s + 1, memory_order_release);
    }
}

static inline void net_shmguard_leave(net_shmguard_t *g)
{
    if (g) {
        uint64_t s = atomic_load_explicit(&g->seq, memory_order_relaxed);
        atomic_store_explicit(&g->seq, s + 1, memory_order_release);
    }
}

/* Releases a region lock left held by a dead rank (see above). Call only
 * after a death was announced. Returns true when it released one. */
bool net_shmguard_check(net_shmguard_t *g, uint64_t now_ns);

/* The lock word of rank r's region (tests use it to play a rank dying
 * inside libfabric); NULL when not mapped. */
pthread_spinlock_t *net_shmguard_lock_of(net_shmguard_t *g, int r);

#endif /* NET_SHMGUARD_H */
