/*
 * The progress pass: drains the descriptor rings into libfabric operations,
 * reads the completion queue, and applies incoming signals in stream order.
 * The same pass (net_progress_locked) runs on the proxy thread
 * (proxy_thread.c) and on any CPU thread that waits, whoever holds the
 * progress lock.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "common/clock.h"
#include "common/log.h"
#include "net/fiload.h"
#include "net/internal.h"

#define DRAIN_BATCH 64
#define CQ_BATCH    64
/* Refusals (-FI_EAGAIN) of one write retried at once before the writer
 * yields between tries (docs/net.md, "Progress model"). */
#define EAGAIN_SPINS 1

static void apply_signal(gmux_comm_t *comm, uint32_t id, uint8_t op, uint64_t value)
{
    _Atomic uint64_t *w = &comm->signals[id];
    if (op == GMUX_SIGNAL_ADD)
        atomic_fetch_add_explicit(w, value, memory_order_release);
    else if (op == GMUX_SIGNAL_INC)
        atomic_fetch_add_explicit(w, 1, memory_order_release);
    else if (op == GMUX_SIGNAL_SET)
        atomic_store_explicit(w, value, memory_order_release);
}

static void bump_counter(gmux_comm_t *comm, uint32_t counter)
{
    if (counter != GMUX_NO_COUNTER)
        atomic_fetch_add_explicit(&comm->counters[counter], 1, memory_order_release);
}

static int poll_cq(gmux_comm_t *comm);

/* Ops to a dead peer may never complete: on shm never (the peer does their
 * work and answers), on tcp a few are never reported. Once the completions
 * already there are read, the rest are taken back (failed, orphaned), once
 * per dead peer. LOCKING: held. */
static void reclaim_dead(gmux_comm_t *comm)
{
    if (!comm->have_fab || !net_boot_any_dead(comm->boot))
        return;
    for (int p = 0; p < comm->size; p++) {
        if (comm->peer_reclaimed[p] || !net_peer_dead(comm, p))
            continue;
        comm->peer_reclaimed[p] = 1;
        for (int i = 0; i < 64 && poll_cq(comm) > 0; i++)
            ;
        net_ops_take_back(comm, p);
    }
}

/* Reads death notices at most once a millisecond. The clock itself is read
 * on every 16th call: it costs more than the rest of a pass that finds a
 * few descriptors (a pass is a few microseconds at most, so notices are
 * still read within about a millisecond). */
static void poll_boot(gmux_comm_t *comm)
{
    if (!comm->boot || (comm->boot_poll_calls++ & 15) != 0)
        return;
    uint64_t now = com_clock_ns();
    if (now >= comm->boot_poll_ns) {
        net_boot_poll(comm->boot);
        comm->boot_poll_ns = now + COM_NS_PER_MS;
    }
}

/* Sends a control message; with may_poll it progresses the CQ while the
 * provider is busy, up to the timeout. */
static gmux_status_t send_msg(gmux_comm_t *comm, int peer, const net_msg_t *m, bool may_poll)
{
    uint64_t deadline = 0;
    for (;;) {
        net_shmguard_enter(comm->guard, peer);
        ssize_t r = fi_inject(comm->fab.ep, m, sizeof(*m), comm->fab.peers[peer]);
        net_shmguard_leave(comm->guard);
        if (r == 0) {
            comm->stats.msgs++;
            return GMUX_OK;
        }
        if (r != -FI_EAGAIN)
            return net_fab_status((int)r);
        if (!may_poll)
            return GMUX_ERR_BUSY;
        if (!deadline)
            deadline = com_deadline_after_ns((uint64_t)(net_timeout_s(comm) * 1e9));
        poll_boot(comm);
        if (net_peer_dead(comm, peer))
            return GMUX_ERR_PEER;
        if (com_deadline_passed(deadline))
            return GMUX_ERR_TIMEOUT;
        poll_cq(comm);
    }
}

gmux_status_t net_send_quiet_req(gmux_comm_t *comm, uint32_t ctx, int peer, uint64_t *token_p)
{
    net_out_t *o = &comm->out[ctx * comm->size + (uint32_t)peer];
    net_msg_t m = {.version = NET_PROTO_VERSION,
                   .type = NET_MSG_QUIET_REQ,
                   .ctx = (uint8_t)ctx,
                   .src = (uint32_t)comm->rank,
                   .seq = o->wseq,
                   .value = ++o->quiet_token};
    gmux_status_t st = send_msg(comm, peer, &m, true);
    if (st == GMUX_OK)
        *token_p = m.value;
    return st;
}

/* The id and operand of a signal too wide for the CQ data of its carrier. */
static gmux_status_t send_signal(gmux_comm_t *comm, const net_desc_t *d, uint32_t carrier)
{
    net_msg_t m = {.version = NET_PROTO_VERSION,
                   .type = NET_MSG_SIGNAL,
                   .signal_op = d->signal_op,
                   .ctx = (uint8_t)d->ctx,
                   .src = (uint32_t)comm->rank,
                   .seq = carrier,
                   .signal_id = d->signal_id,
                   .value = d->signal_value};
    return send_msg(comm, (int)d->peer, &m, true);
}

/* Posts one write of the stream (inject when small) carrying c in its CQ
 * data. BUSY when no op is free. */
static gmux_status_t post_write(gmux_comm_t *comm, const net_desc_t *d, net_out_t *o,
                                uint64_t raddr, uint64_t key, const void *buf, size_t len,
                                void *desc, uint32_t counter, net_cqd_t *c)
{
    fi_addr_t dest = comm->fab.peers[d->peer];
    /* a device source (desc) is read by the provider only: inject would memcpy it */
    bool inject = !desc && len <= comm->fab.rma_inject_size;
    net_op_t *op = NULL;
    if (!inject) {
        op = net_op_get(comm);
        if (!op)
            return GMUX_ERR_BUSY;
        op->id = comm->ctx_issued[d->ctx];
        op->ctx = d->ctx;
        op->peer = d->peer;
        op->counter = counter;
        if (d->opcode == NET_OP_PUT_VALUE && buf == &d->src) {
            /* the descriptor is gone by the time the write completes */
            memcpy(&op->value, &d->src, sizeof(op->value));
            buf = &op->value;
        }
    }
    c->seq = o->wseq;
    uint64_t data = net_cqd_make(c);
    uint64_t deadline = 0;
    for (unsigned tries = 0;; tries++) {
        net_shmguard_enter(comm->guard, (int)d->peer);
        ssize_t r =
            inject ? fi_inject_writedata(comm->fab.ep, buf, len, data, dest, raddr, key)
                   : fi_writedata(comm->fab.ep, buf, len, desc, data, dest, raddr, key, &op->fctx);
        net_shmguard_leave(comm->guard);
        if (r == 0)
            break;
        gmux_status_t st = net_fab_status((int)r);
        if (r == -FI_EAGAIN) {
            comm->stats.eagain++;
            if (!deadline)
                deadline = com_deadline_after_ns((uint64_t)(net_timeout_s(comm) * 1e9));
            poll_boot(comm);
            if (net_peer_dead(comm, (int)d->peer))
                st = GMUX_ERR_PEER;
            else if (com_deadline_passed(deadline))
                st = GMUX_ERR_TIMEOUT;
            else {
                /* the target's queue is full: it needs the CPU more than we do,
                 * and retrying at once takes its region lock from under it */
                if (poll_cq(comm) == 0 && tries >= EAGAIN_SPINS)
                    sched_yield();
                continue;
            }
        }
        if (op)
            net_op_put(comm, op);
        return st;
    }
    o->wseq++;
    comm->ctx_issued[d->ctx]++;
    comm->stats.writes++;
    comm->stats.dev_writes += desc && !inject;
    if (inject)
        bump_counter(comm, counter);
    return GMUX_OK;
}

/* Executes a descriptor addressed to this rank itself: in order, at once.
 * A window or source registered as device memory is copied through the
 * comm's mem_copy (CUDA memory cannot be copied without one). */
static void exec_self(gmux_comm_t *comm, const net_desc_t *d)
{
    if (d->opcode == NET_OP_PUT || d->opcode == NET_OP_PUT_VALUE) {
        char *dst = (char *)comm->win[d->window].base + d->offset;
        const void *src = d->opcode == NET_OP_PUT ? (const void *)(uintptr_t)d->src : &d->src;
        const net_hsrc_t *h = net_desc_hsrc(comm, d);
        gmux_status_t st = net_local_copy(comm, dst, comm->win[d->window].mem, src,
                                          h ? h->mem : GMUX_MEM_HOST, d->size);
        if (st != GMUX_OK) {
            net_ctx_set_error(comm, d->ctx, st);
            return; /* no counter, no signal: the data is not there */
        }
        if (d->flags & NET_DESC_F_COUNTER)
            bump_counter(comm, d->counter_id);
    }
    if (d->signal_op != GMUX_SIGNAL_NONE)
        apply_signal(comm, d->signal_id, d->signal_op, d->signal_value);
}

/* The part of desc_valid that can change after a caller's check: the
 * window (gmux_window_deregister, under the progress lock, may have taken
 * it away, or put another of another size in its place, since the API
 * looked at it without the lock). */
static bool desc_window_valid(const gmux_comm_t *comm, const net_desc_t *d)
{
    if (d->opcode != NET_OP_PUT && d->opcode != NET_OP_PUT_VALUE)
        return true;
    if (d->window >= NET_MAX_WINDOWS || !comm->win[d->window].used)
        return false;
    return d->size <= comm->win[d->window].size && d->offset <= comm->win[d->window].size - d->size;
}

/* Every field of a descriptor from anywhere (a ring: CPU or GPU producers,
 * the device service) against the comm's bounds, which never change. */
static bool desc_valid(const gmux_comm_t *comm, const net_desc_t *d)
{
    if (d->peer >= (uint32_t)comm->size || d->ctx >= comm->nctx)
        return false;
    if (d->signal_op != GMUX_SIGNAL_NONE && d->signal_id >= comm->nsig_all)
        return false;
    if ((d->flags & NET_DESC_F_COUNTER) && d->counter_id >= comm->ncnt)
        return false;
    if (d->opcode == NET_OP_PUT_VALUE && (d->size == 0 || d->size > 8))
        return false;
    return desc_window_valid(comm, d);
}

/* Whether d, read from ring i, names that ring's stream (context, peer): a
 * flush or quiet of a context looks at that context's rings only, and the
 * ordering rule holds within a ring, so a descriptor of another stream
 * would escape both (until 2026-12-01 it was executed on the stream it
 * named; test_desc_checks). */
static bool desc_in_ring(const gmux_comm_t *comm, const net_desc_t *d, uint32_t i)
{
    uint32_t size = (uint32_t)comm->size;
    return d->opcode == NET_OP_NOP || (d->ctx == i / size && d->peer == i % size);
}

/* Executes one descriptor, or the merged descriptor of batch b (whose
 * counters are bumped once its write is posted); BUSY leaves it in the ring
 * for later. `checked`: d was built by the API (ops.c: gmux_put, _put_value,
 * gmux_signal, and net_signal_any for the teams' own words), which checked
 * its peer, context, signal, counter and value size against the comm's
 * fixed bounds; only its window is checked again. Descriptors read from a
 * ring are never `checked`: any producer, a GPU's included, writes there. */
static gmux_status_t exec_desc(gmux_comm_t *comm, const net_desc_t *d, const net_batch_t *b,
                               bool checked)
{
    if (d->opcode == NET_OP_NOP)
        return GMUX_OK;
    if (checked ? !desc_window_valid(comm, d) : !desc_valid(comm, d)) {
        COM_ERROR(NET, "rank %d: invalid descriptor (op %u, peer %u)", comm->rank, d->opcode,
                  d->peer);
        net_ctx_set_error(comm, d->ctx < comm->nctx ? d->ctx : 0, GMUX_ERR_INVALID);
        return GMUX_OK;
    }
    if ((int)d->peer == comm->rank) {
        exec_self(comm, d);
        return GMUX_OK;
    }
    if (net_peer_dead(comm, (int)d->peer)) {
        net_ctx_set_error(comm, d->ctx, GMUX_ERR_PEER);
        return GMUX_OK;
    }
    net_out_t *o = &comm->out[d->ctx * comm->size + d->peer];
    uint32_t counter = (d->flags & NET_DESC_F_COUNTER) ? d->counter_id : GMUX_NO_COUNTER;
    uint8_t sop = d->signal_op;
    bool fits = sop && net_cqd_fits(sop, d->signal_id, d->signal_value);
    net_cqd_t c = {.src = (uint32_t)comm->rank,
                   .ctx = d->ctx,
                   .sig_op = sop,
                   .sig_in_msg = sop && !fits,
                   .sig_id = d->signal_id,
                   .sig_value = d->signal_value};
    uint32_t carrier = o->wseq;
    gmux_status_t st = GMUX_OK;
    if ((d->opcode == NET_OP_PUT && d->size > 0) || d->opcode == NET_OP_PUT_VALUE) {
        const net_win_t *w = &comm->win[d->window];
        const void *buf = d->opcode == NET_OP_PUT ? (const void *)(uintptr_t)d->src : &d->src;
        const net_hsrc_t *h = net_desc_hsrc(comm, d);
        st = post_write(comm, d, o, w->raddr[d->peer] + d->offset, w->key[d->peer], buf, d->size,
                        h ? h->desc : NULL, counter, &c);
        for (uint32_t k = 0; st == GMUX_OK && b && k < b->ncounter; k++)
            bump_counter(comm, b->counters[k]); /* gathered: injected, sources consumed */
    } else if (sop) {
        /* a signal alone rides on an 8-byte write to the peer's scratch word */
        st = post_write(comm, d, o, comm->scratch_raddr[d->peer], comm->scratch_key[d->peer],
                        &comm->scratch[1], 8, NULL, GMUX_NO_COUNTER, &c);
        if (st == GMUX_OK && d->opcode == NET_OP_PUT)
            bump_counter(comm, counter);
    } else if (d->opcode == NET_OP_PUT) {
        bump_counter(comm, counter);
    }
    if (st == GMUX_ERR_BUSY)
        return st;
    if (st == GMUX_OK && sop && !fits)
        st = send_signal(comm, d, carrier);
    if (st != GMUX_OK)
        net_ctx_set_error(comm, d->ctx, st);
    return GMUX_OK;
}

static void drain_stream(gmux_comm_t *comm, uint32_t src, uint32_t ctx)
{
    net_order_t *o = &comm->in[src * comm->nctx + ctx];
    net_pend_t p;
    while (net_order_next(o, &p)) {
        if (p.type == NET_MSG_SIGNAL) {
            apply_signal(comm, p.id, p.op, p.value);
            continue;
        }
        net_msg_t ack = {.version = NET_PROTO_VERSION,
                         .type = NET_MSG_QUIET_ACK,
                         .ctx = (uint8_t)ctx,
                         .src = (uint32_t)comm->rank,
                         .value = p.value};
        /* the ack may wait for tx resources; never recursively */
        if (send_msg(comm, (int)src, &ack, false) == GMUX_ERR_BUSY) {
            net_msg_t again = {.version = NET_PROTO_VERSION,
                               .type = NET_MSG_QUIET_REQ,
                               .seq = p.seq,
                               .value = p.value};
            net_order_message(o, &again); /* retried at the next pass */
            comm->ack_backlog = true;
            return;
        }
    }
}

static void handle_msg(gmux_comm_t *comm, const net_msg_t *m)
{
    if (m->version != NET_PROTO_VERSION || m->src >= (uint32_t)comm->size || m->ctx >= comm->nctx) {
        COM_ERROR(NET, "rank %d: malformed control message", comm->rank);
        return;
    }
    if (m->type == NET_MSG_QUIET_ACK) {
        net_out_t *o = &comm->out[m->ctx * comm->size + m->src];
        if (m->value > atomic_load_explicit(&o->acked, memory_order_relaxed))
            atomic_store_explicit(&o->acked, m->value, memory_order_release);
        return;
    }
    if (m->type == NET_MSG_SIGNAL && (m->signal_id >= comm->nsig_all || m->signal_op > 3)) {
        COM_ERROR(NET, "rank %d: signal %u out of range", comm->rank, m->signal_id);
        return;
    }
    if (m->type != NET_MSG_SIGNAL && m->type != NET_MSG_QUIET_REQ)
        return;
    if (net_order_message(&comm->in[m->src * comm->nctx + m->ctx], m) != GMUX_OK)
        COM_ERROR(NET, "rank %d: unexpected control message from rank %u", comm->rank, m->src);
    drain_stream(comm, m->src, m->ctx);
}

static void repost_rx(gmux_comm_t *comm, net_rx_t *rx)
{
    ssize_t r = fi_recv(comm->fab.ep, &rx->msg, sizeof(rx->msg), NULL, FI_ADDR_UNSPEC, &rx->fctx);
    if (r != 0)
        COM_ERROR(NET, "rank %d: reposting a receive: %s", comm->rank, net_fi_strerror((int)-r));
}

static void handle_cq_error(gmux_comm_t *comm)
{
    struct fi_cq_err_entry err = {0};
    if (fi_cq_readerr(comm->fab.cq, &err, 0) != 1)
        return;
    /* by its context: not every provider flags a failed receive FI_RECV */
    bool is_rx =
        (err.flags & FI_RECV) || (err.op_context && (net_rx_t *)err.op_context >= comm->rx &&
                                  (net_rx_t *)err.op_context < comm->rx + NET_RX_BUFS);
    if (is_rx) {
        /* the buffer is ours again: post it anew, or the endpoint runs out
         * of receives and control messages (quiet, wide signals) stop */
        if (!comm->rx_warned) {
            comm->rx_warned = true;
            COM_WARN(NET, "rank %d: receive error: %s", comm->rank, net_fi_strerror(err.err));
        }
        if (err.op_context)
            repost_rx(comm, (net_rx_t *)err.op_context);
        return;
    }
    if (err.op_context)
        net_op_completed(comm, err.op_context, false, err.err);
}

void net_op_completed(gmux_comm_t *comm, void *op_context, bool ok, int err)
{
    net_op_t *op = (net_op_t *)op_context;
    if (!op->in_use)
        return; /* an orphan, taken back when its peer died: never reused */
    if (ok)
        comm->stats.ops_done++;
    else
        comm->stats.ops_failed++;
    if (ok) {
        bump_counter(comm, op->counter);
        net_op_finish(comm, op, true);
        return;
    }
    gmux_status_t st = net_fab_status(-err);
    /* a dead peer fails every operation in flight to it: say so once */
    if (op->peer < (uint32_t)comm->size && !comm->peer_warned[op->peer]) {
        comm->peer_warned[op->peer] = 1;
        COM_WARN(NET, "rank %d: operation to rank %u failed: %s", comm->rank, op->peer,
                 net_fi_strerror(err));
    }
    net_ctx_set_error(comm, op->ctx, st == GMUX_ERR_PEER ? st : GMUX_ERR_TRANSPORT);
    net_op_finish(comm, op, false);
}

static int poll_cq(gmux_comm_t *comm)
{
    struct fi_cq_data_entry e[CQ_BATCH];
    net_shmguard_enter(comm->guard, comm->rank); /* shm progresses under its own region lock */
    ssize_t n = fi_cq_read(comm->fab.cq, e, CQ_BATCH);
    net_shmguard_leave(comm->guard);
    comm->stats.cq_reads++;
    if (n > 0)
        comm->stats.cq_entries += (uint64_t)n;
    if (n == -FI_EAVAIL) {
        handle_cq_error(comm);
        return 1;
    }
    if (n <= 0)
        return 0;
    for (ssize_t i = 0; i < n; i++) {
        if (e[i].flags & FI_REMOTE_CQ_DATA) {
            net_cqd_t c;
            net_cqd_parse(e[i].data, &c);
            if (c.src >= (uint32_t)comm->size || c.ctx >= comm->nctx ||
                (c.sig_op && !c.sig_in_msg && c.sig_id >= comm->nsig_all)) {
                COM_ERROR(NET, "rank %d: foreign remote CQ data %#llx", comm->rank,
                          (unsigned long long)e[i].data);
                continue;
            }
            net_order_t *in = &comm->in[c.src * comm->nctx + c.ctx];
            uint32_t seq = net_order_expand(in, c.seq);
            if (net_order_write(in, seq, &c) != GMUX_OK)
                COM_ERROR(NET, "rank %d: write %u of rank %u duplicated", comm->rank, seq, c.src);
            drain_stream(comm, c.src, c.ctx);
        } else if (e[i].flags & FI_RECV) {
            net_rx_t *rx = (net_rx_t *)e[i].op_context;
            net_msg_t m = rx->msg;
            repost_rx(comm, rx);
            handle_msg(comm, &m);
        } else if (e[i].op_context) {
            net_op_completed(comm, e[i].op_context, true, 0);
        }
    }
    return (int)n;
}

gmux_status_t net_proxy_post_rx(gmux_comm_t *comm)
{
    for (int i = 0; i < NET_RX_BUFS; i++) {
        net_rx_t *rx = &comm->rx[i];
        ssize_t r =
            fi_recv(comm->fab.ep, &rx->msg, sizeof(rx->msg), NULL, FI_ADDR_UNSPEC, &rx->fctx);
        if (r != 0)
            return net_fab_status((int)r);
    }
    return GMUX_OK;
}

struct batch_peek {
    gmux_comm_t *comm;
    net_ring_t *ring;
    uint64_t base; /* the batch's first descriptor, counted from head */
};

/* Whether d's source is device memory: read by the provider only, so never
 * gathered into a batch (the gather copies with the CPU). */
static bool desc_dev_source(const gmux_comm_t *comm, const net_desc_t *d)
{
    return net_desc_hsrc(comm, d) != NULL;
}

static gmux_status_t batch_peek(void *arg, uint64_t k, net_desc_t *d)
{
    struct batch_peek *a = arg;
    gmux_status_t st = net_ring_peek_at(a->ring, a->base + k, d);
    if (st == GMUX_OK && !desc_valid(a->comm, d))
        return GMUX_ERR_INVALID; /* executed alone, where it is reported */
    if (st == GMUX_OK && desc_dev_source(a->comm, d))
        return GMUX_ERR_UNSUPPORTED; /* ends the batch before it */
    return st;
}

/* Whether d, the k-th descriptor of ring, may start a batch: a valid put to
 * a live remote peer, with the next slot already complete (a lone
 * descriptor, the latency case, skips the batch machinery). */
static bool batch_start(gmux_comm_t *comm, net_ring_t *ring, uint64_t k, const net_desc_t *d)
{
    net_desc_t next;
    return comm->coalesce && comm->have_fab && net_ring_peek_at(ring, k + 1, &next) == GMUX_OK &&
           (d->opcode == NET_OP_PUT || d->opcode == NET_OP_PUT_VALUE) && desc_valid(comm, d) &&
           (int)d->peer != comm->rank && !net_peer_dead(comm, (int)d->peer) &&
           !desc_dev_source(comm, d);
}

/* Drains up to DRAIN_BATCH descriptors of ring i, merging consecutive ones
 * where coalesce.h allows, and publishes the new head once; -1 when out of
 * operations. */
static int drain_ring(gmux_comm_t *comm, uint32_t i)
{
    net_ring_t *ring = &comm->rings[i];
    uint64_t k = 0;
    int out = 0;
    while (k < DRAIN_BATCH) {
        net_desc_t d;
        gmux_status_t st = net_ring_peek_at(ring, k, &d);
        if (st == GMUX_ERR_BUSY)
            break;
        uint64_t used = 1;
        if (st != GMUX_OK) {
            COM_ERROR(NET, "rank %d: corrupt descriptor in ring %u", comm->rank, i);
            net_ctx_set_error(comm, i / (uint32_t)comm->size, GMUX_ERR_PARSE);
        } else if (!desc_in_ring(comm, &d, i)) {
            COM_ERROR(NET,
                      "rank %d: descriptor of context %u to rank %u in ring %u, another stream's",
                      comm->rank, d.ctx, d.peer, i);
            net_ctx_set_error(comm, i / (uint32_t)comm->size, GMUX_ERR_INVALID);
        } else if (batch_start(comm, ring, k, &d)) {
            struct batch_peek pa = {comm, ring, k};
            net_batch_build(comm->batch, &d, comm->fab.rma_inject_size, true, batch_peek, &pa);
            if (exec_desc(comm, &comm->batch->d, comm->batch, false) == GMUX_ERR_BUSY) {
                out = -1; /* out of operations: completions first */
                break;
            }
            used = comm->batch->ndesc;
        } else if (exec_desc(comm, &d, NULL, false) == GMUX_ERR_BUSY) {
            out = -1;
            break;
        }
        k += used;
    }
    net_ring_pop_n(ring, k);
    comm->stats.descs += k;
    return out < 0 ? -1 : (int)k;
}

static int drain_rings(gmux_comm_t *comm)
{
    int work = 0;
    uint32_t nrings = comm->nctx * (uint32_t)comm->size;
    for (uint32_t i = 0; i < nrings; i++) {
        if (net_ring_idle(&comm->rings[i]))
            continue; /* most rings, most passes: waits poll here */
        int w = drain_ring(comm, i);
        if (w < 0)
            break;
        work += w;
    }
    return work;
}

/*
 * The direct path: executes d, a CPU caller's descriptor on its stack, with
 * no trip through the ring, when the ring of its stream holds nothing.
 *
 * Why this keeps the ring's order (docs/net.md, "Direct path and
 * ordering"): the stream order is the order in which the holder of the
 * progress lock executes descriptors (it assigns the sequence numbers), and
 * only the holder ever consumes a ring. The emptiness check (tail == head) is made while holding
 * the lock, so head cannot move until we are done; tail is read with
 * acquire after the lock was taken. tail == head then means every ticket
 * ever claimed on this ring (by any CPU or GPU producer: all of them claim
 * by advancing tail, the GPU with a system-scope CAS on the same word) has
 * already been consumed, so every descriptor pushed before this point
 * already has its write posted with a lower sequence number. A producer
 * that claims after our read of tail gets a ticket its consumer can only
 * execute once it holds the lock, after we released it: a higher sequence
 * number. A thread's own earlier operation is either executed (direct, or
 * consumed) or still in the ring, and then tail != head sends this one to
 * the ring behind it. So the stream order is a linearisation that keeps
 * every producer thread's program order, which is what the target's
 * ordering (order.c) needs. The proxy drains under the same lock, so it
 * cannot interleave with the execution either.
 *
 * Returns false (nothing done) when the lock is taken, the ring holds
 * anything, or no op is free for a write that needs one (the caller then
 * takes the ring path, as it would have without this one).
 */
/* inline_epoch is written only under the progress lock (here), read by the
 * proxy without it: a load and a store, no locked read-modify-write. */
static void bump_epoch(gmux_comm_t *comm)
{
    uint64_t e = atomic_load_explicit(&comm->inline_epoch, memory_order_relaxed);
    atomic_store_explicit(&comm->inline_epoch, e + 1, memory_order_relaxed);
}

bool net_progress_direct(gmux_comm_t *comm, uint32_t ring, const net_desc_t *d)
{
    if (pthread_mutex_trylock(&comm->progress_lock) != 0)
        return false;
    bool done = false;
    if (net_ring_pending(&comm->rings[ring]) == 0 && exec_desc(comm, d, NULL, true) == GMUX_OK) {
        comm->stats.descs++;
        done = true;
        /* like an inline pass that emptied its ring: the proxy stays asleep */
        bump_epoch(comm);
    }
    pthread_mutex_unlock(&comm->progress_lock);
    return done;
}

bool net_progress_inline(gmux_comm_t *comm, uint32_t ring)
{
    if (pthread_mutex_trylock(&comm->progress_lock) != 0)
        return false;
    int w = drain_ring(comm, ring); /* completions are read by waits and the proxy */
    bool drained = w >= 0 && net_ring_pending(&comm->rings[ring]) == 0;
    /* while producers keep up by themselves, the proxy stays out of their way */
    if (drained)
        bump_epoch(comm);
    pthread_mutex_unlock(&comm->progress_lock);
    if (!drained)
        atomic_store_explicit(&comm->inline_failed, true, memory_order_relaxed);
    return drained;
}

int net_progress_locked(gmux_comm_t *comm)
{
    int work = 0;
    poll_boot(comm);
    reclaim_dead(comm);
    if (comm->have_fab)
        work += poll_cq(comm);
    /* drain in rounds while producers keep up, before paying for the CQ again */
    for (int round = 0; round < 4; round++) {
        int w = drain_rings(comm);
        work += w;
        if (w == 0)
            break;
    }
    if (comm->have_fab && comm->ack_backlog) {
        /* quiet requests whose ack found the provider busy */
        comm->ack_backlog = false;
        for (int src = 0; src < comm->size; src++)
            for (uint32_t c = 0; c < comm->nctx; c++)
                if (comm->in[(uint32_t)src * comm->nctx + c].npending)
                    drain_stream(comm, (uint32_t)src, c);
    }
    return work;
}
