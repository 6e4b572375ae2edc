/* Launch gating: registration, the slow path of a launch, the watcher thread. */
#include "shim/gate.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"
#include "daemon/client.h"
#include "shim/backend_cuda.h"
#include "shim/gate_apply.h"
#include "shim/gate_evicted.h"
#include "shim/gate_plan.h"
#include "shim/gate_ws.h"
#include "shim/shim.h"
#include "shim/stats.h"

_Atomic int shim_gate_state_;
_Atomic unsigned shim_gate_in_flight_;
atomic_bool shim_gate_turn_;

static pthread_once_t gate_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static dmn_client_t *gate_client; /* guarded by gate_mu */

/* The daemon's orders are stored by gate_plan.c (which says when each kind
 * is carried out) and carried out by gate_apply.c, under gate_mu. Before a
 * launching thread applies the stored fills ahead, it reads what already
 * waits in the socket (gate_read_waiting). */
static bool gate_waiting; /* a launching thread waits in dmn_client_wait_turn */
/* Whether the client was in local mode (no daemon connection) when gate_mu
 * was last taken or given back. While it is, whoever holds gate_mu may be
 * inside a reconnection attempt (the watcher's; it does not wait on the
 * daemon, daemon/client.h, but a launch has no reason to queue behind it):
 * a launch then goes on ungated instead of waiting for gate_mu
 * (gate_lock_launch). */
static atomic_bool gate_local;
static _Atomic uint64_t gate_grants; /* turns received: activity, like launches */
static _Atomic uint64_t
    gate_device_bytes; /* the GPU's memory, for gmuxd's share mode; 0: unknown */

static void gate_fill_stats(dmn_msg_stats_t *s);

/* Reads the device's memory once, on a launching thread (its context is
 * current; the watcher thread has none), and reports it at once so the
 * daemon can decide its mode before this first wait. Under gate_mu. */
static void gate_learn_device(void)
{
    if (atomic_load_explicit(&gate_device_bytes, memory_order_relaxed))
        return;
    CUdevice dev = 0;
    size_t total = 0;
    if (SHIM_CALL(cuCtxGetDevice, &dev) != CUDA_SUCCESS ||
        SHIM_CALL(cuDeviceTotalMem_v2, &total, dev) != CUDA_SUCCESS || total == 0)
        return;
    atomic_store_explicit(&gate_device_bytes, (uint64_t)total, memory_order_relaxed);
    if (dmn_client_is_local(gate_client))
        return; /* the watcher's next report carries it (a report may reconnect) */
    dmn_msg_stats_t st;
    gate_fill_stats(&st);
    (void)dmn_client_report(gate_client, &st);
}

/* Everything the daemon had sent was read and stored (gate_plan.h): a
 * launching thread waiting for its turn carries out the evictions, without
 * the turn (shim_gate_apply_evictions), and then the fills ahead. Only now, never
 * as each message is read: an eviction later in the same read takes its
 * ranges out of the stored fills ahead first (gate_plan.h), and a fill ahead
 * later than an eviction takes its ranges out of that. The watcher thread
 * and gate_read_waiting do the same after their own reads. Under gate_mu. */
static void gate_on_read_end(void *arg)
{
    (void)arg;
    if (!gate_waiting) /* the watcher thread: see gate_watch */
        return;
    shim_gate_apply_evictions(gate_client, shim_backend_current());
    shim_gate_apply_ahead(gate_client);
}

/* Reads, without blocking, what the daemon already sent, before a launching
 * thread about to wait applies the stored fills ahead: an EVICT there takes
 * its ranges out of them (gate_plan.h) and goes now, before anything moves to
 * the device. Read only in the wait, it came after the fill ahead had moved
 * memory the daemon had given to another task, held until the eviction
 * followed on the same stream. Under gate_mu; cx: the thread's context. */
static void gate_read_waiting(shim_cuctx_t *cx)
{
    if (dmn_client_is_local(gate_client))
        return;
    (void)dmn_client_poll(gate_client); /* the orders stored, as the watcher's are */
    shim_gate_apply_evictions(gate_client, cx);
}

static void gate_sleep_ns(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* Waits (bounded, 10 s) until no launch is inside the driver; the turn flag is clear. */
static void gate_drain(void)
{
    for (int i = 0; i < 200000 && atomic_load(&shim_gate_in_flight_) != 0; i++)
        gate_sleep_ns(50000);
}

/* Announces the task's working set before it asks for a turn: every tracked
 * managed allocation, in at most SHIM_GATE_WS_CAP ranges (gate_ws.h; the
 * daemon's placement plans over these). Under gate_mu. */
static void gate_announce(void)
{
    const dmn_range_t *ws;
    uint32_t n = shim_gate_ws_build(&ws);
    (void)dmn_client_pending(gate_client, 1, ws, n);
}

/* Takes gate_mu for a launching thread: true once held; false, without it,
 * when the client is in local mode and gate_mu stays taken (its holder may
 * be reconnecting): the launch goes on ungated, as in local mode. */
static bool gate_lock_launch(void)
{
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        if (pthread_mutex_timedlock(&gate_mu, &until) == 0)
            return true;
        if (atomic_load(&gate_local))
            return false;
    }
}

/* Gives gate_mu back, noting whether the client is in local mode now. In
 * local mode launches are not gated: the turn flag is set. Under gate_mu. */
static void gate_unlock(void)
{
    bool local = dmn_client_is_local(gate_client) != 0;
    atomic_store(&gate_local, local);
    if (local)
        atomic_store(&shim_gate_turn_, true);
    pthread_mutex_unlock(&gate_mu);
}

/* The launch path never calls into the client in local mode: every client
 * call may try to reconnect, which is the watcher thread's work (connecting
 * and registering do not wait, but cost system calls a launch should not
 * pay). */
void shim_gate_slow(void)
{
    for (int round = 0; round < 1000; round++) {
        atomic_fetch_sub(&shim_gate_in_flight_, 1);
        if (!gate_lock_launch()) {
            atomic_fetch_add(&shim_gate_in_flight_, 1);
            return;
        }
        bool launch_anyway = false;
        if (!atomic_load(&shim_gate_turn_) && !dmn_client_is_local(gate_client)) {
            gate_learn_device();
            shim_cuctx_t *cx = shim_backend_current();
            if (cx)
                shim_gate_apply_waited_in(cx);
            SHIM_STAT_ADD(gate_waits, 1);
            gate_announce();
            gate_read_waiting(cx);
            shim_gate_apply_ahead(gate_client); /* what the watcher thread stored */
            gmux_status_t st = GMUX_OK;
            if (!dmn_client_is_local(gate_client)) { /* the announcement may have failed */
                gate_waiting = true;
                st = dmn_client_wait_turn(gate_client, dmn_client_turn_timeout_ns());
                gate_waiting = false;
            }
            shim_gate_apply_grant(gate_client);
            atomic_fetch_add(&gate_grants, 1);
            if (st == GMUX_OK)
                atomic_store(&shim_gate_turn_, true);
            else {
                COM_WARN(SHIM, "no turn from gmuxd in time: launching anyway");
                SHIM_STAT_ADD(gate_no_turn, 1);
                launch_anyway = true;
            }
        }
        gate_unlock(); /* in local mode: the turn flag set */
        atomic_fetch_add(&shim_gate_in_flight_, 1);
        if (launch_anyway || atomic_load(&shim_gate_turn_))
            return;
    }
    /* the turn taken back 1000 times over before this launch went: it goes */
    SHIM_STAT_ADD(gate_no_turn, 1);
}

static void gate_fill_stats(dmn_msg_stats_t *s)
{
    uint64_t total = shim_regions_total_bytes(&shim_state.regions);
    uint64_t managed = shim_regions_bytes(&shim_state.regions, SHIM_REGION_MANAGED);
    /* everything not managed stays where it is: on the device (read apart,
     * so a free between the two reads may leave managed above total) */
    uint64_t pinned = total > managed ? total - managed : 0;
    uint64_t in, out;
    shim_gate_apply_bytes(&in, &out);
    in += atomic_load(&shim_stats.prefetch_bytes);
    uint64_t resident = total;
    if (shim_redirects()) { /* managed memory: what was moved in and not out, at most all of it */
        uint64_t moved = in > out ? in - out : 0;
        resident = pinned + (moved < managed ? moved : managed);
    }
    *s = (dmn_msg_stats_t){.resident = resident,
                           .total = total,
                           .faults = 0, /* not observable without a profiler */
                           .migrated = in + out,
                           .kernels = atomic_load(&shim_stats.launches) +
                                      atomic_load(&shim_stats.graph_launches),
                           .device = atomic_load(&gate_device_bytes),
                           .pinned = pinned};
}

/* Clears the turn flag and waits for launches inside the driver to leave it. */
static void gate_stop_launches(void)
{
    atomic_store(&shim_gate_turn_, false);
    gate_drain();
}

static void *gate_watch(void *arg)
{
    (void)arg;
    int64_t idle_ms = COM_SETTING_INT(GATE_IDLE_MS), report_ms = COM_SETTING_INT(GATE_REPORT_MS);
    uint64_t idle_ns = (uint64_t)(idle_ms > 0 ? idle_ms : 1) * COM_NS_PER_MS;
    uint64_t report_ns = (uint64_t)(report_ms > 0 ? report_ms : 1) * COM_NS_PER_MS;
    unsigned long seen = 0;
    uint64_t last_change = com_clock_ns(), next_report = 0;
    bool idle_sent = false;
    uint32_t registered = 0;
    for (;;) {
        pthread_mutex_lock(&gate_mu);
        int fd = dmn_client_fd(gate_client);
        gate_unlock();
        if (fd >= 0) {
            struct pollfd pf = {fd, POLLIN, 0};
            (void)poll(&pf, 1, 1);
        } else {
            gate_sleep_ns(20000000); /* local mode: only reconnection and stats to look after */
        }
        if (pthread_mutex_trylock(&gate_mu) != 0) {
            gate_sleep_ns(200000);
            continue;
        }
        /* in local mode the client calls below may reconnect: this thread's
         * business, never a launch's (gate_local is set: launches go on) */
        bool was_local = dmn_client_is_local(gate_client) != 0;
        if (!dmn_client_poll(gate_client) && atomic_load(&shim_gate_turn_)) {
            /* revoked (or registered again after a reconnection): this is the boundary */
            gate_stop_launches();
            if (dmn_client_holds_turn(gate_client))
                (void)dmn_client_wait_turn(gate_client, 0); /* releases; stays queued */
        }
        /* evict orders for this task, now without the turn: they make room
         * for the task granted, so they go now, inside the context the
         * launching threads wait in (this thread has none) */
        shim_gate_apply_evictions(gate_client, NULL); /* none of a connection that ended */
        shim_gate_evicted_watch(gate_client);
        uint32_t r = dmn_client_registrations(gate_client);
        if (r != registered) {
            SHIM_STAT_ADD(gate_registrations, r - registered);
            registered = r;
        }
        uint64_t now = com_clock_ns();
        /* the hooks count launches anyway: idle is when those counters stop moving */
        unsigned long n =
            (unsigned long)(atomic_load(&shim_stats.launches) +
                            atomic_load(&shim_stats.graph_launches) + atomic_load(&gate_grants));
        if (n != seen) {
            seen = n;
            last_change = now;
            idle_sent = false;
        } else if (!idle_sent && now - last_change >= idle_ns) {
            /* in local mode there is no turn to give back: launches stay ungated */
            if (!dmn_client_is_local(gate_client))
                gate_stop_launches();
            (void)dmn_client_idle(gate_client);
            idle_sent = true;
        }
        if (now >= next_report) {
            dmn_msg_stats_t s;
            gate_fill_stats(&s);
            (void)dmn_client_report(gate_client, &s);
            next_report = now + report_ns;
        }
        if (was_local && !dmn_client_is_local(gate_client) && atomic_load(&shim_gate_turn_))
            gate_stop_launches(); /* registered again: the next launch asks for a turn */
        gate_unlock();
    }
    return NULL;
}

/* A child forked after registration shares the parent's connection and has no
 * watcher thread: it runs ungated. */
static void gate_atfork_child(void)
{
    atomic_store(&shim_gate_state_, SHIM_GATE_OFF);
}

static void gate_name(char *out, size_t cap)
{
    const char *n = COM_SETTING_STRING(TASK_NAME);
    if (n && n[0]) {
        snprintf(out, cap, "%s", n);
        return;
    }
    snprintf(out, cap, "pid%d", (int)getpid());
    FILE *f = fopen("/proc/self/comm", "r");
    if (f) {
        if (fgets(out, (int)cap, f))
            out[strcspn(out, "\n")] = '\0';
        fclose(f);
    }
}

static void gate_open(void)
{
    int state = SHIM_GATE_OFF;
    if (!COM_SETTING_BOOL(GATE))
        goto out_state;
    char name[32];
    gate_name(name, sizeof(name));
    const char *cls = COM_SETTING_STRING(TASK_CLASS);
    int64_t prio = COM_SETTING_INT(TASK_PRIORITY);
    if (prio < DMN_PRIORITY_MIN || prio > DMN_PRIORITY_MAX) {
        COM_WARN(SHIM, "GMUX_TASK_PRIORITY=%lld out of -20..20: 0 used", (long long)prio);
        prio = 0;
    }
    dmn_client_opts_t o = {.name = name,
                           .cls = strcmp(cls, "latency") == 0 ? DMN_CLASS_LATENCY : DMN_CLASS_BATCH,
                           .priority = (int32_t)prio,
                           .budget = shim_state.budget,
                           .on_plan = shim_gate_plan_on_plan,
                           .on_plan_end = shim_gate_plan_on_plan_end,
                           .on_read_end = gate_on_read_end,
                           .plan_arg = &gate_client, /* gate_evicted.h's callbacks */
                           .on_evict_end = shim_gate_evicted_on_end,
                           .on_wait = shim_gate_evicted_on_wait};
    if (strcmp(cls, "latency") != 0 && strcmp(cls, "batch") != 0)
        COM_WARN(SHIM, "GMUX_TASK_CLASS='%s' is not batch or latency: batch used", cls);
    char why[DMN_CLIENT_WHY_MAX];
    gmux_status_t st = dmn_client_open_why(&o, &gate_client, why, sizeof(why));
    if (st != GMUX_OK) {
        COM_WARN(SHIM, "gate: %s: running ungated", why);
        goto out_state;
    }
    atomic_store(&gate_local, dmn_client_is_local(gate_client) != 0);
    atomic_store(&shim_gate_turn_, dmn_client_is_local(gate_client) != 0);
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &attr, gate_watch, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        char text[64]; /* not strerror: the program's own threads may call it */
        COM_WARN(SHIM, "cannot start the gate's watcher thread (%s): running ungated",
                 strerror_r(rc, text, sizeof(text)));
        dmn_client_close(gate_client);
        gate_client = NULL;
        goto out_state;
    }
    COM_INFO(SHIM, "gate: task %u (%s) %s", dmn_client_task_id(gate_client), name,
             dmn_client_is_local(gate_client) ? "in local mode (no gmuxd)" : "registered");
    (void)pthread_atfork(NULL, NULL, gate_atfork_child);
    state = SHIM_GATE_ON;
out_state:
    atomic_store_explicit(&shim_gate_state_, state, memory_order_release);
}

void shim_gate_init(void)
{
    pthread_once(&gate_once, gate_open);
}
