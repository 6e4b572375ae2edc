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
 * that may take a region lock is bracketed (net_shmguard_enter/leave) with
 * the region it may WAIT for: a peer's for a send, a read or an atomic to
 * it (which takes that lock only), the rank's own for its progress
 * (fi_cq_read: it waits for its own lock, and while holding it may also
 * take any peer's lock by trylock, never waiting for one). Each rank
 * publishes its bracket in a small shared page of its own (NAME.guard next
 * to its region NAME), so every guard sees which call every rank is in.
 * Once every rank has mapped every region and page, each rank unlinks its
 * own page (net_shmguard_unlink; its region, net_fab_shm_unlink, with the
 * guard or without): the mappings stay valid, and a job whose ranks or
 * launcher are SIGKILLed leaves nothing in /dev/shm.
 *
 * A thread of the same rank that cannot get the progress lock (a waiter,
 * the proxy) calls net_shmguard_check once some rank died. It looks at the
 * lock of the region R its own stuck call waits for, and releases it only
 * when no live rank can be its holder: glibc's x86-64 spin lock decrements
 * the word once for each thread that starts waiting while it is held (1
 * free, 0 taken, -k with k waiters), so a word of -k with k >= the number
 * of live ranks inside a call that waits for R, and no live rank inside a
 * progress call that could hold R by trylock, leaves no live rank that
 * could hold it: every candidate is accounted for as a waiter. That view
 * (every live rank's bracket and the word) must stay the same for
 * NET_SHMGUARD_STUCK_NS, and the release is a compare-and-swap of that very
 * word, made under a process-shared robust mutex in R's owner's page, so
 * that two guards never release twice. The exact argument and its one
 * limit are in docs/net-faults.md. Lock words are read and written as
 * plain atomics, never through pthread_spin_* on a lock another process
 * holds.
 *
 * Only used when the provider is shm, the region header is the one this
 * file knows (libfabric 1.17, region version 4) and the spin lock is glibc's
 * x86-64 one; otherwise open returns UNSUPPORTED and the launcher's --grace
 * remains the last resort.
 *
 * Ownership: one per communicator, owned by it; it creates and removes its
 * rank's page. Thread-safety: enter/leave by the progress-lock holder;
 * check by any thread (serialised inside).
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

typedef struct net_shmguard_page net_shmguard_page_t; /* a rank's shared page (shmguard.c) */

typedef struct net_shmguard {
    int n, me;
    void **hdr;                 /* per rank: the mapped first page of its region, or NULL */
    net_shmguard_page_t **page; /* per rank: its guard page, or NULL (mapped when needed) */
    char *names;                /* the region names, to find the pages of the others */
    size_t name_stride;
    _Atomic uint64_t *mine; /* this rank's bracket, in its page (see shmguard.c) */
    uint64_t calls;         /* brackets opened and closed so far (the writer's count) */
    pthread_mutex_t lock;   /* serialises check */
    uint64_t *seen;         /* check's view: every rank's bracket, the word, the region */
    uint64_t seen_ns;       /* and since when it has not changed (0: no view) */
    uint64_t *view;         /* check's scratch view */
    uint64_t released;      /* locks released so far */
    bool unlinked;          /* this rank's page is unlinked */
} net_shmguard_t;

/* Maps the regions named by names (n * name_stride bytes; each an shm
 * endpoint name, with or without the "fi_shm://" prefix) and creates the
 * page of rank me (its name's). */
gmux_status_t net_shmguard_open(const char *names, size_t name_stride, int n, int me,
                                net_shmguard_t **guard_p);
void net_shmguard_close(net_shmguard_t *g);

/* Maps the page of every rank that has one now (call once every rank has
 * opened its guard: a page not mapped by then cannot be found once
 * unlinked, and while such a rank lives check releases nothing, as it
 * might be the holder). NULL: nothing. */
void net_shmguard_map_pages(net_shmguard_t *g);

/* Unlinks this rank's page from /dev/shm, once every rank has mapped it
 * (net_shmguard_map_pages on every rank, then a barrier); the region is
 * net_fab_shm_unlink's, guard or not. NULL: nothing. */
void net_shmguard_unlink(net_shmguard_t *g);

/* The bracket word: the count of brackets opened and closed (above bit
 * 24) and, while inside, the region + 1 (below). Stored with release (a
 * plain store on x86-64, the only place the guard opens: spin_lock_known):
 * the store cannot move past the opaque call into libfabric, whose every
 * change to a lock word is a lock-prefixed instruction that x86 never makes
 * visible before an earlier store; and the unlock, a plain store, stays
 * ordered before the leaving store. So a guard that sees this rank's lock
 * attempt sees the bracket around it, and one that sees the bracket closed
 * sees the unlock. Until 2026-12-02 both were sequentially consistent (an
 * xchg each): the leaving one waited for the stores of fi_cq_read to drain,
 * and the two took some 80% of poll_cq's own cycles, about 8% of a waiting
 * rank's (docs/bench/net.md, "put_signal_rtt and the guard"). */
#define NET_SHMGUARD_REGION_BITS 24

static inline void net_shmguard_enter(net_shmguard_t *g, int region)
{
    if (g) /* one writer (the progress-lock holder): no read-modify-write needed */
        atomic_store_explicit(
            g->mine, (++g->calls << NET_SHMGUARD_REGION_BITS) | (uint64_t)(uint32_t)(region + 1),
            memory_order_release);
}

static inline void net_shmguard_leave(net_shmguard_t *g)
{
    if (g)
        atomic_store_explicit(g->mine, ++g->calls << NET_SHMGUARD_REGION_BITS,
                              memory_order_release);
}

/* Whether rank r is dead (the caller's view: once true, always true). */
typedef bool (*net_shmguard_dead_fn)(void *arg, int r);

/* Releases a region lock left held by a dead rank (see above). Call only
 * after a death was announced; dead(arg, r) says which ranks died. Returns
 * true when it released one. */
bool net_shmguard_check(net_shmguard_t *g, uint64_t now_ns, net_shmguard_dead_fn dead, void *arg);

/* The lock word of rank r's region (tests use it to play a rank dying
 * inside libfabric); NULL when not mapped. */
pthread_spinlock_t *net_shmguard_lock_of(net_shmguard_t *g, int r);

#endif /* NET_SHMGUARD_H */
