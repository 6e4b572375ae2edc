/*
 * Taking the progress lock: by whoever waits (try, poll, sleep on it) and by
 * a thread that finds it held while a rank died (net_progress_blocked frees a
 * shm region lock the dead rank left, so the holder is not stuck for good).
 * The pass itself is net_progress_locked (proxy.c). See internal.h.
 */
#include <sched.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
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

/* Polls for the lock, running net_progress_blocked while it is taken; gives
 * up once deadline passed (UINT64_MAX: never). */
static bool lock_until(gmux_comm_t *comm, uint64_t deadline)
{
    for (unsigned i = 0; pthread_mutex_trylock(&comm->progress_lock) != 0; i++) {
        if (i > 64) {
            net_progress_blocked(comm);
            if ((i & 63) == 0 && com_deadline_passed(deadline))
                return false;
            sched_yield();
        }
    }
    return true;
}

gmux_status_t net_progress_lock(gmux_comm_t *comm)
{
    double limit_s = net_timeout_s(comm);
    bool never = !(limit_s < NET_TIMEOUT_MAX_S);
    if (lock_until(comm, com_deadline_after_ns(never ? UINT64_MAX : (uint64_t)(limit_s * 1e9))))
        return GMUX_OK;
    COM_ERROR(NET,
              "rank %d: the progress lock stayed taken for %.1f s (GMUX_NET_TIMEOUT): its holder "
              "is stuck, e.g. inside the provider behind a dead rank's lock",
              comm->rank, limit_s);
    return GMUX_ERR_TIMEOUT;
}

void net_progress_lock_wait(gmux_comm_t *comm)
{
    lock_until(comm, UINT64_MAX);
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
