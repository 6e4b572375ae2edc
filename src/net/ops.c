/*
 * The CPU-thread operations: each one becomes a descriptor, executed at
 * once when the ring of its (context, peer) is empty and the progress lock
 * free (the direct path, proxy.c), else pushed into that ring; flush, quiet
 * and the waits block while driving progress themselves (the proxy steps
 * aside while someone waits).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/export.h"
#include "common/log.h"
#include "net/internal.h"

/* A waiter that finds the progress lock taken this many passes in a row
 * sleeps on it, at most WAIT_SLEEP_NS at a time, checking its deadline and
 * dead peers between sleeps. */
#define WAIT_BUSY_SPINS 64
#define WAIT_SLEEP_NS   (1000u * 1000u)

gmux_status_t net_wait(gmux_comm_t *comm, net_cond_fn cond, void *arg, double timeout_s,
                       bool fail_on_any_dead)
{
    if (cond(comm, arg))
        return GMUX_OK;
    bool never = timeout_s < 0 || !(timeout_s < NET_TIMEOUT_MAX_S);
    uint64_t deadline = com_deadline_after_ns(never ? UINT64_MAX : (uint64_t)(timeout_s * 1e9));
    gmux_status_t st = GMUX_OK;
    atomic_fetch_add(&comm->waiters, 1);
    unsigned busy = 0; /* passes in a row that found the progress lock taken */
    for (unsigned idle = 0;; idle++) {
        /* When another thread keeps the lock (a proxy posting a long stream),
         * sleep on the lock instead of spinning beside it: on a small machine
         * the spinning takes a core from the peer the data goes to. */
        bool sleeping = busy > WAIT_BUSY_SPINS;
        int work = sleeping ? net_progress_sleep(comm, WAIT_SLEEP_NS) : net_progress_poll(comm);
        busy = work < 0 ? busy + 1 : 0;
        if (cond(comm, arg))
            break;
        if (fail_on_any_dead && net_boot_any_dead(comm->boot)) {
            st = GMUX_ERR_PEER;
            break;
        }
        if ((sleeping || (idle & 63) == 0) && com_deadline_passed(deadline)) {
            st = GMUX_ERR_TIMEOUT;
            break;
        }
        if (work > 0) {
            idle = 0;
        } else if (sleeping) {
            net_progress_blocked(comm); /* the holder may be stuck behind a dead rank */
        } else if (idle > 256) {
            net_progress_blocked(comm);
            sched_yield();
        }
    }
    atomic_fetch_sub(&comm->waiters, 1);
    return st;
}

static gmux_status_t push(gmux_comm_t *comm, net_desc_t *d)
{
    uint32_t ring_index = d->ctx * (uint32_t)comm->size + d->peer;
    bool inl = atomic_load_explicit(&comm->inline_progress, memory_order_relaxed);
    /* nothing waits in the ring and nobody progresses: execute it from here */
    if (inl && comm->direct && net_progress_direct(comm, ring_index, d))
        return GMUX_OK;
    net_ring_t *ring = &comm->rings[ring_index];
    gmux_status_t st = net_ring_try_push(ring, d);
    if (st == GMUX_ERR_BUSY) {
        /* back-pressure: with a proxy thread, let it drain (kick it, yield);
         * without one, drive progress here. Bounded by the timeout. */
        uint64_t deadline = com_deadline_after_ns((uint64_t)(net_timeout_s(comm) * 1e9));
        bool self_drive = !comm->proxy_running;
        if (self_drive)
            atomic_fetch_add(&comm->waiters, 1);
        for (unsigned i = 0; st == GMUX_ERR_BUSY; i++) {
            if (self_drive) {
                if (net_progress_try(comm) == 0 && i > 64)
                    sched_yield();
            } else {
                net_proxy_kick(comm);
                if (i > 16)
                    sched_yield();
            }
            if (i > 256)
                net_progress_blocked(comm);
            st = net_ring_try_push(ring, d);
            if (st == GMUX_ERR_BUSY && (i & 63) == 0 && com_deadline_passed(deadline))
                st = net_peer_dead(comm, (int)d->peer) ? GMUX_ERR_PEER : GMUX_ERR_TIMEOUT;
        }
        if (self_drive)
            atomic_fetch_sub(&comm->waiters, 1);
    }
    if (st != GMUX_OK)
        return st;
    /* post it now if nobody else is progressing; else leave it to the proxy */
    if (!inl || !net_progress_inline(comm, ring_index))
        net_proxy_kick(comm);
    return GMUX_OK;
}

void net_comm_set_inline_progress(gmux_comm_t *comm, bool on)
{
    atomic_store(&comm->inline_progress, on);
}

static gmux_status_t check_target(gmux_comm_t *comm, uint32_t ctx, int peer)
{
    if (!comm || ctx >= comm->nctx || peer < 0 || peer >= comm->size)
        return GMUX_ERR_INVALID;
    if (net_peer_dead(comm, peer))
        return GMUX_ERR_PEER;
    return GMUX_OK;
}

static gmux_status_t fill_opts(gmux_comm_t *comm, const gmux_op_opts_t *opts, net_desc_t *d)
{
    if (!opts)
        return GMUX_OK;
    if (opts->signal_op != GMUX_SIGNAL_NONE) {
        if ((unsigned)opts->signal_op > GMUX_SIGNAL_SET || opts->signal_id >= comm->nsig)
            return GMUX_ERR_INVALID;
        d->signal_op = (uint8_t)opts->signal_op;
        d->signal_id = opts->signal_id + NET_SIG_RESERVED;
        d->signal_value = opts->signal_value;
    }
    if (opts->counter_id != GMUX_NO_COUNTER) {
        if (opts->counter_id >= comm->ncnt)
            return GMUX_ERR_INVALID;
        d->flags |= NET_DESC_F_COUNTER;
        d->counter_id = opts->counter_id;
    }
    return GMUX_OK;
}

static gmux_status_t check_window(gmux_comm_t *comm, gmux_window_t win, uint64_t offset,
                                  size_t size)
{
    if (win >= NET_MAX_WINDOWS || !comm->win[win].used)
        return GMUX_ERR_INVALID;
    if (size > comm->win[win].size || offset > comm->win[win].size - size)
        return GMUX_ERR_RANGE;
    return GMUX_OK;
}

GMUX_API gmux_status_t gmux_put(gmux_comm_t *comm, uint32_t ctx, int peer, gmux_window_t win,
                                uint64_t offset, const void *src, size_t size,
                                const gmux_op_opts_t *opts)
{
    gmux_status_t st = check_target(comm, ctx, peer);
    if (st != GMUX_OK)
        return st;
    if ((st = check_window(comm, win, offset, size)) != GMUX_OK)
        return st;
    if (!src && size)
        return GMUX_ERR_INVALID;
    if (comm->have_fab && size > comm->fab.max_msg)
        return GMUX_ERR_RANGE;
    net_desc_t d = {.version = NET_PROTO_VERSION,
                    .opcode = NET_OP_PUT,
                    .window = (uint16_t)win,
                    .ctx = (uint16_t)ctx,
                    .peer = (uint32_t)peer,
                    .offset = offset,
                    .src = (uint64_t)(uintptr_t)src,
                    .size = size};
    if ((st = fill_opts(comm, opts, &d)) != GMUX_OK)
        return st;
    return push(comm, &d);
}

GMUX_API gmux_status_t gmux_put_value(gmux_comm_t *comm, uint32_t ctx, int peer, gmux_window_t win,
                                      uint64_t offset, uint64_t value, unsigned bytes,
                                      const gmux_op_opts_t *opts)
{
    gmux_status_t st = check_target(comm, ctx, peer);
    if (st != GMUX_OK)
        return st;
    if (bytes == 0 || bytes > 8)
        return GMUX_ERR_INVALID;
    if ((st = check_window(comm, win, offset, bytes)) != GMUX_OK)
        return st;
    net_desc_t d = {.version = NET_PROTO_VERSION,
                    .opcode = NET_OP_PUT_VALUE,
                    .window = (uint16_t)win,
                    .ctx = (uint16_t)ctx,
                    .peer = (uint32_t)peer,
                    .offset = offset,
                    .src = value,
                    .size = bytes};
    if ((st = fill_opts(comm, opts, &d)) != GMUX_OK)
        return st;
    return push(comm, &d);
}

/* Signals without a size check on the id: barriers use the words past nsig. */
gmux_status_t net_signal_any(gmux_comm_t *comm, uint32_t ctx, int peer, uint32_t signal_id,
                             gmux_signal_op_t op, uint64_t value);
gmux_status_t net_signal_any(gmux_comm_t *comm, uint32_t ctx, int peer, uint32_t signal_id,
                             gmux_signal_op_t op, uint64_t value)
{
    net_desc_t d = {.version = NET_PROTO_VERSION,
                    .opcode = NET_OP_SIGNAL,
                    .signal_op = (uint8_t)op,
                    .ctx = (uint16_t)ctx,
                    .peer = (uint32_t)peer,
                    .signal_id = signal_id,
                    .signal_value = value};
    return push(comm, &d);
}

GMUX_API gmux_status_t gmux_signal(gmux_comm_t *comm, uint32_t ctx, int peer, uint32_t signal_id,
                                   gmux_signal_op_t op, uint64_t value)
{
    gmux_status_t st = check_target(comm, ctx, peer);
    if (st != GMUX_OK)
        return st;
    if (op == GMUX_SIGNAL_NONE || (unsigned)op > GMUX_SIGNAL_SET || signal_id >= comm->nsig)
        return GMUX_ERR_INVALID;
    return net_signal_any(comm, ctx, peer, signal_id + NET_SIG_RESERVED, op, value);
}

/* --- flush and quiet ------------------------------------------------------ */

struct drain_arg {
    uint32_t ctx;
    uint64_t *tails; /* per peer: tickets to be consumed */
};

static bool rings_drained(gmux_comm_t *comm, void *arg)
{
    struct drain_arg *a = arg;
    for (int p = 0; p < comm->size; p++)
        if ((int64_t)(net_ring_head(&comm->rings[a->ctx * (uint32_t)comm->size + (uint32_t)p]) -
                      a->tails[p]) < 0)
            return false;
    return true;
}

struct below_arg {
    uint32_t ctx;
    uint64_t below;
};

static bool ops_complete(gmux_comm_t *comm, void *arg)
{
    struct below_arg *a = arg;
    /* taken: not known yet; net_wait bounds the wait and runs the guard */
    if (pthread_mutex_trylock(&comm->progress_lock) != 0)
        return false;
    bool out = net_ctx_outstanding_below(comm, a->ctx, a->below);
    pthread_mutex_unlock(&comm->progress_lock);
    return !out;
}

static gmux_status_t take_ctx_error(gmux_comm_t *comm, uint32_t ctx)
{
    return (gmux_status_t)atomic_exchange(&comm->ctx_error[ctx], GMUX_OK);
}

/* Waits until every descriptor pushed on ctx before the call is consumed. */
static gmux_status_t drain_ctx(gmux_comm_t *comm, uint32_t ctx)
{
    uint64_t *t = calloc((size_t)comm->size, sizeof(uint64_t));
    if (!t)
        return GMUX_ERR_NOMEM;
    for (int p = 0; p < comm->size; p++)
        t[p] = net_ring_tail(&comm->rings[ctx * (uint32_t)comm->size + (uint32_t)p]);
    struct drain_arg a = {ctx, t};
    gmux_status_t st = net_wait(comm, rings_drained, &a, net_timeout_s(comm), false);
    free(t);
    return st;
}

gmux_status_t net_flush_wait(gmux_comm_t *comm, uint32_t ctx)
{
    gmux_status_t st = drain_ctx(comm, ctx);
    if (st == GMUX_OK)
        st = net_progress_lock(comm);
    if (st == GMUX_OK) {
        struct below_arg b = {ctx, comm->ctx_issued[ctx]};
        pthread_mutex_unlock(&comm->progress_lock);
        st = net_wait(comm, ops_complete, &b, net_timeout_s(comm), false);
    }
    return st;
}

GMUX_API gmux_status_t gmux_flush(gmux_comm_t *comm, uint32_t ctx)
{
    if (!comm || ctx >= comm->nctx)
        return GMUX_ERR_INVALID;
    gmux_status_t st = net_flush_wait(comm, ctx);
    gmux_status_t e = take_ctx_error(comm, ctx);
    return st != GMUX_OK ? st : e;
}

struct ack_arg {
    uint32_t ctx;
    uint64_t *tokens; /* per peer, 0: nothing to wait for */
    int failed_peer;
};

static bool acks_in(gmux_comm_t *comm, void *arg)
{
    struct ack_arg *a = arg;
    for (int p = 0; p < comm->size; p++) {
        if (!a->tokens[p])
            continue;
        if (net_peer_dead(comm, p)) {
            a->failed_peer = p;
            return true;
        }
        if (atomic_load_explicit(&comm->out[a->ctx * (uint32_t)comm->size + (uint32_t)p].acked,
                                 memory_order_acquire) < a->tokens[p])
            return false;
    }
    return true;
}

GMUX_API gmux_status_t gmux_quiet(gmux_comm_t *comm, uint32_t ctx)
{
    if (!comm || ctx >= comm->nctx)
        return GMUX_ERR_INVALID;
    gmux_status_t st = drain_ctx(comm, ctx);
    if (st != GMUX_OK || !comm->have_fab) {
        gmux_status_t e = take_ctx_error(comm, ctx);
        return st != GMUX_OK ? st : e;
    }
    struct ack_arg a = {ctx, calloc((size_t)comm->size, sizeof(uint64_t)), -1};
    if (!a.tokens)
        return GMUX_ERR_NOMEM;
    st = net_progress_lock(comm);
    if (st != GMUX_OK) {
        free(a.tokens);
        return st;
    }
    for (int p = 0; p < comm->size && st == GMUX_OK; p++) {
        net_out_t *o = &comm->out[ctx * (uint32_t)comm->size + (uint32_t)p];
        if (p == comm->rank)
            continue;
        if (o->wseq == o->quiet_wseq) {
            /* nothing written since the last request, which covers every
             * write of ours (drained above); it may be another thread's,
             * still unanswered: wait for its ack too */
            if (o->quiet_token > atomic_load_explicit(&o->acked, memory_order_acquire))
                a.tokens[p] = o->quiet_token;
            continue;
        }
        if (net_peer_dead(comm, p)) {
            st = GMUX_ERR_PEER;
            break;
        }
        st = net_send_quiet_req(comm, ctx, p, &a.tokens[p]);
        if (st == GMUX_OK) {
            o->quiet_wseq = o->wseq;
        }
    }
    pthread_mutex_unlock(&comm->progress_lock);
    if (st == GMUX_OK)
        st = net_wait(comm, acks_in, &a, net_timeout_s(comm), false);
    if (st == GMUX_OK && a.failed_peer >= 0)
        st = GMUX_ERR_PEER;
    free(a.tokens);
    gmux_status_t e = take_ctx_error(comm, ctx);
    return st != GMUX_OK ? st : e;
}

/* --- signals and counters ------------------------------------------------- */

struct ge_arg {
    _Atomic uint64_t *word;
    uint64_t value;
    uint64_t seen;
};

static bool word_ge(gmux_comm_t *comm, void *arg)
{
    (void)comm;
    struct ge_arg *a = arg;
    a->seen = atomic_load_explicit(a->word, memory_order_acquire);
    return a->seen >= a->value;
}

static gmux_status_t wait_word(gmux_comm_t *comm, _Atomic uint64_t *word, uint64_t value,
                               double timeout_s, uint64_t *value_p)
{
    struct ge_arg a = {word, value, 0};
    gmux_status_t st = net_wait(comm, word_ge, &a, timeout_s, true);
    if (value_p)
        *value_p = a.seen;
    return st;
}

gmux_status_t net_wait_signal_any(gmux_comm_t *comm, uint32_t id, uint64_t value);
gmux_status_t net_wait_signal_any(gmux_comm_t *comm, uint32_t id, uint64_t value)
{
    return wait_word(comm, &comm->signals[id], value, net_timeout_s(comm), NULL);
}

GMUX_API uint64_t gmux_signal_read(gmux_comm_t *comm, uint32_t id)
{
    if (!comm || id >= comm->nsig)
        return 0;
    return atomic_load_explicit(&comm->signals[NET_SIG_RESERVED + id], memory_order_acquire);
}

GMUX_API void gmux_signal_reset(gmux_comm_t *comm, uint32_t id)
{
    if (comm && id < comm->nsig)
        atomic_store_explicit(&comm->signals[NET_SIG_RESERVED + id], 0, memory_order_release);
}

GMUX_API gmux_status_t gmux_signal_wait_timeout(gmux_comm_t *comm, uint32_t id, uint64_t value,
                                                double timeout_s, uint64_t *value_p)
{
    if (!comm || id >= comm->nsig)
        return GMUX_ERR_INVALID;
    return wait_word(comm, &comm->signals[NET_SIG_RESERVED + id], value, timeout_s, value_p);
}

GMUX_API gmux_status_t gmux_signal_wait(gmux_comm_t *comm, uint32_t id, uint64_t value,
                                        uint64_t *value_p)
{
    if (!comm)
        return GMUX_ERR_INVALID;
    return gmux_signal_wait_timeout(comm, id, value, net_timeout_s(comm), value_p);
}

GMUX_API uint64_t gmux_counter_read(gmux_comm_t *comm, uint32_t id)
{
    if (!comm || id >= comm->ncnt)
        return 0;
    return atomic_load_explicit(&comm->counters[id], memory_order_acquire);
}

GMUX_API void gmux_counter_reset(gmux_comm_t *comm, uint32_t id)
{
    if (comm && id < comm->ncnt)
        atomic_store_explicit(&comm->counters[id], 0, memory_order_release);
}

GMUX_API gmux_status_t gmux_counter_wait_timeout(gmux_comm_t *comm, uint32_t id, uint64_t value,
                                                 double timeout_s, uint64_t *value_p)
{
    if (!comm || id >= comm->ncnt)
        return GMUX_ERR_INVALID;
    struct ge_arg a = {&comm->counters[id], value, 0};
    /* a put to a dead peer never bumps its counter: fail rather than wait */
    gmux_status_t st = net_wait(comm, word_ge, &a, timeout_s, true);
    if (value_p)
        *value_p = a.seen;
    return st;
}

GMUX_API gmux_status_t gmux_counter_wait(gmux_comm_t *comm, uint32_t id, uint64_t value,
                                         uint64_t *value_p)
{
    if (!comm)
        return GMUX_ERR_INVALID;
    return gmux_counter_wait_timeout(comm, id, value, net_timeout_s(comm), value_p);
}
