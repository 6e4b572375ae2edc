/*
 * The proxy thread: runs the progress pass (proxy.c) for producers that do
 * not post their own work (GPU producers, GMUX_NET_INLINE_PROGRESS=0, a
 * producer that found the progress lock taken). It steps aside while a CPU
 * thread waits or while producers keep their rings empty themselves, and an
 * idle proxy backs off: spin, yield, then sleep on a futex doorbell with a
 * timeout that doubles up to GMUX_NET_PROXY_IDLE_US, so that producers that
 * cannot ring it (a GPU) are still served.
 */
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "net/internal.h"

static bool rings_pending(gmux_comm_t *comm)
{
    uint32_t nrings = comm->nctx * (uint32_t)comm->size;
    for (uint32_t i = 0; i < nrings; i++)
        if (net_ring_pending(&comm->rings[i]))
            return true;
    return false;
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t val, uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / COM_NS_PER_S), (long)(ns % COM_NS_PER_S)};
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

void net_proxy_kick(gmux_comm_t *comm)
{
    if (atomic_load(&comm->proxy_sleeping)) {
        atomic_fetch_add(&comm->doorbell, 1);
        syscall(SYS_futex, (uint32_t *)&comm->doorbell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

static void *proxy_main(void *arg)
{
    gmux_comm_t *comm = arg;
    unsigned idle = 0;
    uint64_t sleep_ns = COM_NS_PER_US;
    uint64_t seen_epoch = 0;
    while (!atomic_load_explicit(&comm->stop, memory_order_acquire)) {
        /* producers that post their own work and threads that wait drive
         * progress themselves; the proxy only fills in for them */
        /* read before the exchange: no write to the shared line on every pass */
        bool failed = atomic_load_explicit(&comm->inline_failed, memory_order_relaxed) &&
                      atomic_exchange_explicit(&comm->inline_failed, false, memory_order_relaxed);
        uint64_t epoch = atomic_load_explicit(&comm->inline_epoch, memory_order_relaxed);
        bool producers_busy = !failed && epoch != seen_epoch;
        seen_epoch = epoch;
        bool others = producers_busy || atomic_load_explicit(&comm->waiters, memory_order_relaxed);
        int work = others ? 0 : net_progress_try(comm);
        if (work > 0) {
            idle = 0;
            sleep_ns = COM_NS_PER_US;
            continue;
        }
        idle++;
        if (!others && idle < 64)
            continue;
        if (!others && idle < 128) {
            sched_yield();
            continue;
        }
        net_progress_blocked(comm);
        uint32_t bell = atomic_load(&comm->doorbell);
        atomic_store(&comm->proxy_sleeping, 1);
        if (others || !rings_pending(comm))
            futex_wait(&comm->doorbell, bell, sleep_ns);
        atomic_store(&comm->proxy_sleeping, 0);
        sleep_ns = sleep_ns * 2 > comm->idle_max_ns ? comm->idle_max_ns : sleep_ns * 2;
    }
    return NULL;
}

gmux_status_t net_proxy_start(gmux_comm_t *comm)
{
    atomic_store(&comm->stop, false);
    if (pthread_create(&comm->proxy, NULL, proxy_main, comm) != 0)
        return GMUX_ERR_NOMEM;
    comm->proxy_running = true;
    return GMUX_OK;
}

bool net_proxy_stop(gmux_comm_t *comm)
{
    if (!comm->proxy_running)
        return true;
    atomic_store_explicit(&comm->stop, true, memory_order_release);
    atomic_fetch_add(&comm->doorbell, 1);
    syscall(SYS_futex, (uint32_t *)&comm->doorbell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    /* bounded: a proxy stuck inside the provider (see docs/net.md) is left
     * behind; meanwhile the shm guard may free it from a dead rank's lock */
    uint64_t deadline = com_deadline_after_ns((uint64_t)((2 + net_timeout_s(comm)) * 1e9));
    int joined = -1;
    while (joined != 0 && !com_deadline_passed(deadline)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        joined = pthread_timedjoin_np(comm->proxy, NULL, &ts);
        if (joined != 0)
            net_progress_blocked(comm);
    }
    if (joined != 0) {
        COM_ERROR(NET, "rank %d: the proxy thread does not stop; leaving it", comm->rank);
        pthread_detach(comm->proxy);
        return false;
    }
    comm->proxy_running = false;
    return true;
}
