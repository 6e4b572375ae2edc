/*
 * Taking the progress lock: by whoever waits (try, poll, sleep on it) and by
 * a thread that finds it held while a rank died (net_progress_blocked frees a
 * shm region lock the dead rank left, so the holder is not stuck for good).
 * The pass itself is net_progress_locked (proxy.c). See internal.h.
 */
#include <sched.h>
#include <time.h>

#include "common/clock.h"
#include "net/internal.h"

static bool rank_dead(void *arg, int r)
{
    return net_peer_dead(arg, r);
}

void net_progress_blocked(gmux_comm_t *comm)
{
    if (!comm->boot)
        return;
    uint64_t now = com_clock_ns();
    uint64_t last = atomic_load_explicit(&comm->blocked_ns, memory_order_relaxed);
    if (now - last < COM_NS_PER_MS ||
        !atomic_compare_exchange_strong_explicit(&comm->blocked_ns, &last, now,
                                                 memory_order_relaxed, memory_order_relaxed))
        return; /* at most once a millisecond, one thread */
    /* the lock holder may be unable to read notices (stuck in a provider
     * call; the device API sees a death only through them) */
    net_boot_poll(comm->boot);
    if (comm->guard && net_boot_any_dead(comm->boot))
        net_shmguard_check(comm->guard, now, rank_dead, comm);
}

void net_progress_lock(gmux_comm_t *comm)
{
    for (unsigned i = 0; pthread_mutex_trylock(&comm->progress_lock) != 0; i++) {
        if (i > 64) {
            net_progress_blocked(comm);
            sched_yield();
        }
    }
}

int net_progress_sleep(gmux_comm_t *comm, uint64_t wait_ns)
{
    /* timedlock (CLOCK_REALTIME), not clocklock: ThreadSanitizer intercepts only
     * the former. A step of the wall clock can stretch one sleep, which still
     * ends as soon as the holder lets go. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(wait_ns / COM_NS_PER_S);
    ts.tv_nsec += (long)(wait_ns % COM_NS_PER_S);
    if (ts.tv_nsec >= (long)COM_NS_PER_S) {
        ts.tv_sec++;
        ts.tv_nsec -= (long)COM_NS_PER_S;
    }
    if (pthread_mutex_timedlock(&comm->progress_lock, &ts) != 0)
        return -1;
    int work = net_progress_locked(comm);
    pthread_mutex_unlock(&comm->progress_lock);
    return work;
}

int net_progress_poll(gmux_comm_t *comm)
{
    if (pthread_mutex_trylock(&comm->progress_lock) != 0)
        return -1;
    int work = net_progress_locked(comm);
    pthread_mutex_unlock(&comm->progress_lock);
    return work;
}

int net_progress_try(gmux_comm_t *comm)
{
    int work = net_progress_poll(comm);
    return work < 0 ? 0 : work;
}
