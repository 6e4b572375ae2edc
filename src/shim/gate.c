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
#include "shim/gate_evicted.h"
#include "shim/gate_plan.h"
#include "shim/gate_ranges.h"
#include "shim/gate_ws.h"
#include "shim/policy.h"
#include "shim/shim.h"
#include "shim/stats.h"

_Atomic int shim_gate_state_;
_Atomic unsigned shim_gate_in_flight_;
atomic_bool shim_gate_turn_;

static pthread_once_t gate_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static dmn_client_t *gate_client; /* guarded by gate_mu */

/* The daemon's orders are stored by gate_plan.c (which says when each kind
 * is carried out) and carried out here, under gate_mu. Before a launching
 * thread applies the stored fills ahead, it reads what already waits in the
 * socket (gate_read_waiting). */
static bool gate_waiting; /* a launching thread waits in dmn_client_wait_turn */
/* The context launching threads last waited in, and the entry's generation
 * then (gate_cx_gen). It may name an entry whose context was destroyed
 * since, or one given to a later context (backend_cuda.h): entries are
 * static, and shim_backend_enter refuses a retired one or one of another
 * generation, so the watcher then leaves the evictions for the next wait or
 * grant, and answers a request for EVICTED at once (gate_evict_left); the
 * next wait sets it again. Once entered, the context is not destroyed
 * before the watcher leaves it: the destroy hooks wait. */
static shim_cuctx_t *gate_cx;
static uint32_t gate_cx_gen;
/* Whether the client was in local mode (no daemon connection) when gate_mu
 * was last taken or given back. While it is, whoever holds gate_mu may be
 * inside a reconnection attempt (the watcher's; it does not wait on the
 * daemon, daemon/client.h, but a launch has no reason to queue behind it):
 * a launch then goes on ungated instead of waiting for gate_mu
 * (gate_lock_launch). */
static atomic_bool gate_local;
static _Atomic uint64_t gate_grants; /* turns received: activity, like launches */
static _Atomic uint64_t gate_bytes_in, gate_bytes_out, gate_plans_applied;
static _Atomic uint64_t
    gate_device_bytes; /* the GPU's memory, for gmuxd's share mode; 0: unknown */

static void gate_fill_stats(dmn_msg_stats_t *s);

/* Drops the stored orders unless they came on the client's connection of
 * now (gate_plan.h). Under gate_mu. */
static void gate_plan_current(void)
{
    shim_gate_plan_current(gate_client);
}

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

/* The first region of t that ends after base. Under t->lock. */
static size_t gate_first_region(const shim_regions_t *t, uint64_t base)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].base + t->v[mid].size <= base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Moves the managed memory inside r to the device or to the host on the
 * migration stream and returns the bytes it asked for; the regions it moves
 * to the host count as evicted by the daemon (SHIM_GEN_EVICTED: prefetched
 * again at their next use unless a GRANT leaves them to demand paging,
 * gate_apply_plan). With gen non-zero (a
 * FILL at the grant, waited for before the launch), the regions it moves
 * whole to the device count as prefetched in generation gen: the launch
 * does not move them again (until 2026-12-03 it did, one redundant prefetch
 * per region evicted and filled back; test_gate_order
 * test_filled_not_prefetched_again). The daemon's orders are rounded out to
 * its chunks, and the driver only takes ranges of managed memory (a range
 * over a region's end or a gap is refused whole). */
static uint64_t gate_move(eng_backend_t be, const dmn_range_t *r, bool to_device, uint32_t gen)
{
    shim_regions_t *t = &shim_state.regions;
    uint64_t moved = 0, end = r->base + r->len;
    eng_ticket_t tk;
    pthread_rwlock_rdlock(&t->lock);
    for (size_t i = gate_first_region(t, r->base); i < t->n && t->v[i].base < end; i++) {
        shim_region_t *g = &t->v[i];
        uint64_t a = g->base > r->base ? g->base : r->base;
        uint64_t b = g->base + g->size < end ? g->base + g->size : end;
        if (g->kind != SHIM_REGION_MANAGED || a >= b)
            continue;
        gmux_status_t st = to_device ? be.ops->prefetch(be.ctx, 0, a, b - a, &tk)
                                     : be.ops->evict(be.ctx, 0, a, b - a, &tk);
        moved += st == GMUX_OK ? b - a : 0;
        /* written atomically under the shared lock, as shim_regions_claim does */
        if (to_device && gen && st == GMUX_OK && a == g->base && b == g->base + g->size) {
            __atomic_store_n(&g->order, 0, __ATOMIC_RELAXED); /* waited for */
            __atomic_store_n(&g->gen, gen, __ATOMIC_RELAXED);
        }
    }
    pthread_rwlock_unlock(&t->lock);
    /* what went to the host is prefetched again at its next use under the
     * proactive policy: no FILL may bring it back first (policy.h) */
    if (!to_device)
        shim_policy_evicted(r->base, r->len);
    return moved;
}

/* Moves the stored orders of one kind on cx's migration stream (to the
 * device or to the host) and returns the bytes asked for; gen: as gate_move. */
static uint64_t gate_move_stored(shim_cuctx_t *cx, dmn_plan_kind_t kind, bool to_device,
                                 uint32_t gen)
{
    eng_backend_t be = shim_backend_engine(cx);
    uint64_t bytes = 0;
    uint32_t n;
    const dmn_range_t *v = shim_gate_plan_ranges(kind, &n);
    for (uint32_t i = 0; i < n; i++)
        bytes += gate_move(be, &v[i], to_device, gen);
    return bytes;
}

/* The stored EVICT orders that still cover tracked managed memory: what
 * nobody moved when the watcher cannot enter the context the launching
 * threads waited in (destroyed: the memory allocated in it went with it,
 * hooks_ctx.c; what is left belongs to other contexts). Under gate_mu. */
static uint32_t gate_evict_left(void)
{
    shim_regions_t *t = &shim_state.regions;
    uint32_t n, left = 0;
    const dmn_range_t *v = shim_gate_plan_ranges(DMN_PLAN_EVICT, &n);
    pthread_rwlock_rdlock(&t->lock);
    for (uint32_t k = 0; k < n; k++) {
        uint64_t end = v[k].base + v[k].len;
        for (size_t i = gate_first_region(t, v[k].base); i < t->n && t->v[i].base < end; i++)
            if (t->v[i].kind == SHIM_REGION_MANAGED) {
                left++;
                break;
            }
    }
    pthread_rwlock_unlock(&t->lock);
    return left;
}

typedef struct gate_mover {
    eng_backend_t be;
    uint64_t bytes;
} gate_mover_t;

static void gate_prefetch_piece(void *arg, dmn_range_t piece)
{
    gate_mover_t *mv = arg;
    mv->bytes += gate_move(mv->be, &piece, true, 0); /* not waited for: no mark */
}

/* Prefetches the stored AHEAD orders to the device on the calling thread's
 * context (a launching thread), on the migration stream, without waiting for
 * them: the task is not running, nothing of its own needs them yet. Pieces
 * inside evictions still stored are left out: an eviction a fill could not
 * cut (no room in the store, gate_plan.c) is kept whole and carried out
 * after this, which would only move them back. Under gate_mu. */
static void gate_apply_ahead(void)
{
    gate_plan_current();
    uint32_t na, ne;
    const dmn_range_t *ahead = shim_gate_plan_ranges(DMN_PLAN_AHEAD, &na);
    const dmn_range_t *evict = shim_gate_plan_ranges(DMN_PLAN_EVICT, &ne);
    if (na == 0)
        return;
    shim_cuctx_t *cx = shim_backend_current();
    if (cx && shim_state.mode != SHIM_MODE_OFF) {
        gate_mover_t mv = {shim_backend_engine(cx), 0};
        shim_gate_evicted_order(cx);
        /* both stores coalesced: one merge pass */
        shim_gate_ranges_outside(evict, ne, ahead, na, gate_prefetch_piece, &mv);
        uint64_t bytes = mv.bytes;
        atomic_fetch_add(&gate_bytes_in, bytes);
        SHIM_STAT_ADD(ahead_plans, 1);
        SHIM_STAT_ADD(ahead_bytes, bytes);
        shim_gate_plan_clear(DMN_PLAN_AHEAD);
    }
    shim_gate_plan_give_up(DMN_PLAN_AHEAD); /* none left when carried out */
}

/* Moves the stored EVICT orders to the host now, on cx (current on the
 * calling thread), for a task without the turn. The daemon sent them to make
 * room for the task it just granted; kept until this task's next grant they
 * freed nothing in time and then evicted what that grant fills again. The
 * moves go on the migration stream after the work this task queued (kernels
 * of its last turn may still run, and would fault the data straight back),
 * ordered on the GPU: a thread that waited for that work here could wait for
 * ever on a program whose queued work waits for its own gated threads (a
 * host function taking a lock the launching thread holds). Nothing waits for
 * the moves; the next grant's fence covers them. */
static void gate_evict_now(shim_cuctx_t *cx)
{
    gate_plan_current();
    if (shim_gate_plan_count(DMN_PLAN_EVICT) && shim_state.mode != SHIM_MODE_OFF) {
        gmux_status_t st = shim_backend_after_queued(cx);
        if (st == GMUX_ERR_BUSY) {
            /* a graph capture the legacy stream would break: the orders stay
             * for the watcher's next round or this task's next grant */
            SHIM_STAT_ADD(evict_deferred, shim_gate_plan_evict_put_off());
            shim_gate_evicted_deferred(gate_client, shim_gate_plan_count(DMN_PLAN_EVICT));
            return;
        }
        if (st != GMUX_OK)
            COM_DEBUG(SHIM, "daemon plan: evictions not ordered after the queued work");
        atomic_fetch_add(&gate_bytes_out, gate_move_stored(cx, DMN_PLAN_EVICT, false, 0));
        shim_gate_evicted_issued(cx);
        SHIM_STAT_ADD(evict_plans_early, 1);
    }
    shim_gate_plan_clear(DMN_PLAN_EVICT); /* then a request for EVICTED after them is marked */
    shim_gate_evicted_mark(gate_client, shim_state.mode != SHIM_MODE_OFF ? cx : NULL);
}

/* Carries out the stored evictions (and marks a request for EVICTED) for a
 * thread without a context of its own to use: the watcher, or a launching
 * thread waiting with none current or one the backend has no room for. They
 * go inside the context the launching threads last waited in (pushed, popped
 * after); where that cannot be entered, a request is answered at once
 * (gate_evict_left). Under gate_mu, without the turn.
 * LOCKING: takes the destroy lock shared (shim_backend_enter), after gate_mu. */
static void gate_evict_elsewhere(void)
{
    if (gate_cx && shim_backend_enter(gate_cx, gate_cx_gen)) {
        gate_evict_now(gate_cx);
        shim_backend_leave();
    } else if (shim_gate_evicted_is_due(gate_client)) {
        /* no context to move them in: gmuxd is not kept waiting for the next wait */
        shim_gate_evicted_ctx_gone(gate_client,
                                   shim_state.mode != SHIM_MODE_OFF ? gate_evict_left() : 0);
    }
}

/* The stored evictions (and a due request for EVICTED), without the turn,
 * on cx: a launching thread's context while it waits for its turn; NULL for
 * the watcher, or a waiting thread with no context the shim can use (then
 * as gate_evict_elsewhere does; the watcher cannot take gate_mu while a
 * thread waits). Under gate_mu. */
static void gate_evict_stored(shim_cuctx_t *cx)
{
    gate_plan_current();
    if ((!shim_gate_plan_count(DMN_PLAN_EVICT) && !shim_gate_evicted_is_due(gate_client)) ||
        atomic_load(&shim_gate_turn_))
        return;
    if (cx)
        gate_evict_now(cx);
    else
        gate_evict_elsewhere();
}

/* Everything the daemon had sent was read and stored (gate_plan.h): a
 * launching thread waiting for its turn carries out the evictions, without
 * the turn (gate_evict_stored), and then the fills ahead. Only now, never
 * as each message is read: an eviction later in the same read takes its
 * ranges out of the stored fills ahead first (gate_plan.h), and a fill ahead
 * later than an eviction takes its ranges out of that. The watcher thread
 * and gate_read_waiting do the same after their own reads. Under gate_mu. */
static void gate_on_read_end(void *arg)
{
    (void)arg;
    if (!gate_waiting) /* the watcher thread: see gate_watch */
        return;
    gate_evict_stored(shim_backend_current());
    gate_apply_ahead();
}

/* Applies the stored plan of grant (0: none, the wait failed) on the calling
 * thread's context: evictions first, then fills, all on the migration
 * stream, then waits for them. With planned (a GRANT with
 * DMN_GRANT_PLANNED, protocol v8: "opt", "chunk") it then leaves what the daemon
 * evicted and no fill brought back to demand paging: the placement filled
 * what it plans the task to hold, and the policy's prefetch of the rest
 * would move in more than that, so the driver would evict other tasks'
 * memory or the chunks just filled. Until 2026-12-03 it did
 * (test_gate_order test_unfilled_left_to_paging). Not after a fill given up
 * (marked, shim_policy_lost), a store that overflowed, a wait that failed,
 * nor at a GRANT without the flag. Fills only at
 * the grant they belong to (shim_gate_plan_fill_seq): those of another grant are
 * dropped, and kept without a grant (the wait timed out: theirs may come).
 * With no context the shim can use, the fills are given up (faults only) and
 * the evictions go as during the wait (gate_evict_stored, called before the
 * turn flag is set): inside the context last waited in, else kept for the
 * watcher once the turn is given back, or the next wait; until 2026-12-02
 * they were dropped (test_gate_evicted_capture
 * test_kept_at_grant_without_context).
 * Under gate_mu. */
static void gate_apply_orders(uint64_t grant, bool planned)
{
    bool fills_kept = grant == 0 && shim_gate_plan_count(DMN_PLAN_FILL) > 0;
    if (grant != 0 && grant != shim_gate_plan_fill_seq() && shim_gate_plan_count(DMN_PLAN_FILL)) {
        COM_DEBUG(SHIM, "daemon plan: %u fill orders of grant %llu dropped at grant %llu",
                  shim_gate_plan_count(DMN_PLAN_FILL),
                  (unsigned long long)shim_gate_plan_fill_seq(), (unsigned long long)grant);
        shim_gate_plan_give_up(DMN_PLAN_FILL);
    }
    uint32_t fills = fills_kept ? 0 : shim_gate_plan_count(DMN_PLAN_FILL);
    uint32_t orders = shim_gate_plan_count(DMN_PLAN_EVICT) + fills;
    /* with no orders, the fence is only there for the marks planned leaves
     * to paging (fills ahead and evictions in flight are waited for before
     * those regions count as resident); none marked, nothing to wait for:
     * until 2026-12-03 every flagged grant waited for the migration stream
     * (test_gate_fence test_no_fence_for_nothing) */
    if (orders == 0 &&
        (!planned || shim_state.mode != SHIM_MODE_PROACTIVE || !shim_policy_any_evicted()))
        return;
    shim_cuctx_t *cx = shim_backend_current();
    if (!cx) {
        gate_evict_stored(NULL); /* what it leaves stays stored */
        if (!fills_kept)
            shim_gate_plan_give_up(DMN_PLAN_FILL); /* faulted in, or prefetched at its use */
    } else if (shim_state.mode != SHIM_MODE_OFF) {
        atomic_fetch_add(&gate_bytes_out, gate_move_stored(cx, DMN_PLAN_EVICT, false, 0));
        shim_gate_evicted_order(cx);
        /* the fills are waited for below, before the launch: the regions they
         * bring back whole need no prefetch of the launch's policy */
        if (!fills_kept)
            atomic_fetch_add(&gate_bytes_in,
                             gate_move_stored(cx, DMN_PLAN_FILL, true, shim_policy_generation()));
        /* the fence also covers the fills ahead: the launch is not
         * ordered after them when planned leaves their regions unclaimed */
        eng_backend_t be = shim_backend_engine(cx);
        if (be.ops->fence(be.ctx, 0) != GMUX_OK) {
            COM_WARN(SHIM, "daemon plan: migration stream failed");
            shim_policy_invalidate(); /* nothing it holds counts as done */
        } else if (planned) {
            shim_policy_evicted_to_paging();
        }
        if (orders) {
            atomic_fetch_add(&gate_plans_applied, 1);
            SHIM_STAT_ADD(gate_plans, 1);
        }
    }
    if (cx)
        shim_gate_plan_clear(DMN_PLAN_EVICT);
    if (!fills_kept)
        shim_gate_plan_clear(DMN_PLAN_FILL);
}

/* Carries out the stored plan at a grant (gate_apply_orders). After a store
 * overflowed (shim_gate_plan_overflowed, taken at every grant) the grant's
 * flag is ignored, and every region still marked evicted by the daemon is
 * marked lost once its orders are carried out (shim_policy_evicted_lost):
 * the overflow's bytes are not known, and a region it touched that this
 * turn leaves unused would otherwise be left to demand paging at a later
 * flagged grant though gmuxd counts it resident. Until 2026-12-03 it was
 * (test_gate_overflow test_overflow_unused_prefetched_later). Under gate_mu. */
static void gate_apply_plan(void)
{
    gate_plan_current();
    uint64_t grant = dmn_client_grant_seq(gate_client);
    bool overflowed = grant != 0 && shim_gate_plan_overflowed();
    gate_apply_orders(grant,
                      (dmn_client_grant_flags(gate_client) & DMN_GRANT_PLANNED) && !overflowed);
    if (overflowed)
        shim_policy_evicted_lost();
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
    gate_evict_stored(cx);
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
            if (cx) {
                gate_cx = cx;
                gate_cx_gen = shim_backend_gen(cx);
            }
            SHIM_STAT_ADD(gate_waits, 1);
            gate_announce();
            gate_read_waiting(cx);
            gate_apply_ahead(); /* what the watcher thread stored */
            gmux_status_t st = GMUX_OK;
            if (!dmn_client_is_local(gate_client)) { /* the announcement may have failed */
                gate_waiting = true;
                st = dmn_client_wait_turn(gate_client, dmn_client_turn_timeout_ns());
                gate_waiting = false;
            }
            gate_apply_plan();
            atomic_fetch_add(&gate_grants, 1);
            if (st == GMUX_OK)
                atomic_store(&shim_gate_turn_, true);
            else {
                COM_WARN(SHIM, "no turn from gmuxd in time: launching anyway");
                launch_anyway = true;
            }
        }
        gate_unlock(); /* in local mode: the turn flag set */
        atomic_fetch_add(&shim_gate_in_flight_, 1);
        if (launch_anyway || atomic_load(&shim_gate_turn_))
            return;
    }
}

static void gate_fill_stats(dmn_msg_stats_t *s)
{
    uint64_t total = shim_regions_total_bytes(&shim_state.regions);
    uint64_t in = atomic_load(&shim_stats.prefetch_bytes) + atomic_load(&gate_bytes_in);
    uint64_t out = atomic_load(&gate_bytes_out);
    uint64_t resident = total;
    if (shim_redirects()) /* managed memory: what was moved in and not out, at most total */
        resident = in > out ? (in - out < total ? in - out : total) : 0;
    *s = (dmn_msg_stats_t){.resident = resident,
                           .total = total,
                           .faults = 0, /* not observable without a profiler */
                           .migrated = in + out,
                           .kernels = atomic_load(&shim_stats.launches) +
                                      atomic_load(&shim_stats.graph_launches),
                           .device = atomic_load(&gate_device_bytes)};
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
        gate_evict_stored(NULL); /* none of a connection that ended (gate_plan_current) */
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
