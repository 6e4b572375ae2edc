/*
 * Fetching operations (see gmux/net_ext.h): get and remote atomics, posted
 * directly by the calling thread under the progress lock, completed through
 * the proxy's completion queue like any other posted op (an op of the pool,
 * numbered in its context's issue order, so a flush covers them too). The
 * provider reads operands from and writes results to memory of the op, never
 * the caller's: a fetch the caller gave up on completes into the op alone.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <gmux/net_ext.h>

#include "common/clock.h"
#include "common/export.h"
#include "common/log.h"
#include "net/fiload.h"
#include "net/internal.h"

enum fetch_kind { FETCH_READ, FETCH_ATOMIC, FETCH_COMPARE };

/* A read lands in a buffer of its op, copied out on completion: at most this
 * much per op (gmux_get goes in chunks). */
#define FETCH_BOUNCE_MAX ((size_t)4 << 20)

typedef struct fetch_req {
    enum fetch_kind kind;
    void *dst; /* READ: destination; atomics: the old value (the caller's) */
    size_t len;
    uint64_t raddr, key;
    enum fi_datatype dt;
    enum fi_op fop;
    uint64_t operand, compare;
} fetch_req_t;

struct done_arg {
    uint32_t ctx;
    uint64_t below;
    int peer;
    bool dead;
};

static bool op_done(gmux_comm_t *comm, void *arg)
{
    struct done_arg *a = arg;
    if (net_peer_dead(comm, a->peer)) {
        a->dead = true;
        return true;
    }
    if (pthread_mutex_trylock(&comm->progress_lock) != 0)
        return false; /* not known yet: net_wait bounds the wait and runs the guard */
    bool out = net_ctx_outstanding_below(comm, a->ctx, a->below);
    pthread_mutex_unlock(&comm->progress_lock);
    return !out;
}

/* Posts r through op, whose own memory the provider reads the operands from
 * and writes the result to. */
static ssize_t fetch_post(gmux_comm_t *comm, int peer, const fetch_req_t *r, net_op_t *op)
{
    struct fid_ep *ep = comm->fab.ep;
    fi_addr_t dest = comm->fab.peers[peer];
    switch (r->kind) {
    case FETCH_READ:
        return fi_read(ep, op->fetch_buf, r->len, NULL, dest, r->raddr, r->key, &op->fctx);
    case FETCH_ATOMIC:
        return fi_fetch_atomic(ep, &op->amo[0], 1, NULL, op->fetch_buf, NULL, dest, r->raddr,
                               r->key, r->dt, r->fop, &op->fctx);
    case FETCH_COMPARE:
        return fi_compare_atomic(ep, &op->amo[0], 1, NULL, &op->amo[1], NULL, op->fetch_buf, NULL,
                                 dest, r->raddr, r->key, r->dt, FI_CSWAP, &op->fctx);
    }
    return -FI_EINVAL;
}

/* Posts r on ctx and waits for its completion, which copies the result to
 * r->dst. A caller that stops waiting (timeout, dead peer) detaches from
 * its op first: the op stays outstanding until the provider is done with it
 * and its result is dropped, so nothing writes r->dst after the return. */
static gmux_status_t fetch_run(gmux_comm_t *comm, uint32_t ctx, int peer, const fetch_req_t *r)
{
    void *bounce = NULL;
    if (r->kind == FETCH_READ && !(bounce = malloc(r->len ? r->len : 1)))
        return GMUX_ERR_NOMEM;
    uint64_t deadline = com_deadline_after_ns((uint64_t)(net_timeout_s(comm) * 1e9));
    gmux_status_t st = GMUX_OK;
    uint64_t id = 0;
    net_op_t *posted = NULL;
    gmux_status_t locked = net_progress_lock(comm);
    if (locked != GMUX_OK) {
        free(bounce);
        return locked;
    }
    net_progress_locked(comm); /* earlier puts of the rings are posted first */
    for (;;) {
        /* the pass may have read the peer's death and taken its ops back:
         * an op posted to it now would never be */
        if (net_peer_dead(comm, peer)) {
            st = GMUX_ERR_PEER;
            break;
        }
        net_op_t *op = comm->free_ops;
        if (op) {
            ssize_t ret;
            comm->free_ops = op->next_free;
            op->in_use = true;
            op->id = comm->ctx_issued[ctx];
            op->ctx = ctx;
            op->peer = (uint32_t)peer;
            op->counter = GMUX_NO_COUNTER;
            op->amo[0] = r->operand;
            op->amo[1] = r->compare;
            op->amo[2] = 0;
            op->fetch_dst = r->dst;
            op->fetch_buf = bounce ? bounce : (void *)&op->amo[2];
            op->fetch_len = r->len;
            net_shmguard_enter(comm->guard, peer);
            ret = fetch_post(comm, peer, r, op);
            net_shmguard_leave(comm->guard);
            if (ret == 0) {
                id = comm->ctx_issued[ctx]++;
                posted = op;
                bounce = NULL; /* the op's now */
                break;
            }
            op->fetch_dst = op->fetch_buf = NULL;
            op->fetch_len = 0;
            op->in_use = false;
            op->next_free = comm->free_ops;
            comm->free_ops = op;
            if (ret != -FI_EAGAIN) {
                COM_ERROR(NET, "rank %d: posting a fetch to rank %d: %s", comm->rank, peer,
                          net_fi_strerror((int)-ret));
                st = net_fab_status((int)ret);
                break;
            }
        }
        if (com_deadline_passed(deadline)) {
            st = GMUX_ERR_TIMEOUT;
            break;
        }
        net_progress_locked(comm);
    }
    pthread_mutex_unlock(&comm->progress_lock);
    free(bounce);
    if (st != GMUX_OK)
        return st;
    struct done_arg a = {ctx, id + 1, peer, false};
    st = net_wait(comm, op_done, &a, net_timeout_s(comm), false);
    if (st == GMUX_OK && a.dead)
        st = GMUX_ERR_PEER;
    net_progress_lock_wait(comm); /* unbounded: without it the late result lands in r->dst */
    if (posted->in_use && posted->ctx == ctx && posted->id == id && posted->fetch_len)
        posted->fetch_dst = NULL; /* still in flight: its result is dropped */
    pthread_mutex_unlock(&comm->progress_lock);
    gmux_status_t e = (gmux_status_t)atomic_exchange(&comm->ctx_error[ctx], GMUX_OK);
    return st != GMUX_OK ? st : e;
}

static gmux_status_t check_args(gmux_comm_t *comm, uint32_t ctx, int peer, gmux_window_t win,
                                uint64_t offset, size_t size)
{
    if (!comm || ctx >= comm->nctx || peer < 0 || peer >= comm->size)
        return GMUX_ERR_INVALID;
    if (win >= NET_MAX_WINDOWS || !comm->win[win].used)
        return GMUX_ERR_INVALID;
    if (size > comm->win[win].size || offset > comm->win[win].size - size)
        return GMUX_ERR_RANGE;
    if (net_peer_dead(comm, peer))
        return GMUX_ERR_PEER;
    return GMUX_OK;
}

GMUX_API gmux_status_t gmux_get(gmux_comm_t *comm, uint32_t ctx, int peer, gmux_window_t win,
                                uint64_t offset, void *dst, size_t size)
{
    gmux_status_t st = check_args(comm, ctx, peer, win, offset, size);
    if (st != GMUX_OK)
        return st;
    if (!dst && size)
        return GMUX_ERR_INVALID;
    const net_win_t *w = &comm->win[win];
    if (!comm->have_fab || peer == comm->rank) {
        /* own memory: post what the rings hold first, then copy */
        st = net_progress_lock(comm);
        if (st != GMUX_OK)
            return st;
        net_progress_locked(comm);
        st = net_local_copy(comm, dst, GMUX_MEM_HOST, (const char *)w->base + offset, w->mem, size);
        pthread_mutex_unlock(&comm->progress_lock);
        return st;
    }
    size_t chunk = comm->fab.max_msg && comm->fab.max_msg < FETCH_BOUNCE_MAX ? comm->fab.max_msg
                                                                             : FETCH_BOUNCE_MAX;
    for (size_t done = 0; done < size && st == GMUX_OK;) {
        size_t len = size - done < chunk ? size - done : chunk;
        fetch_req_t r = {.kind = FETCH_READ,
                         .dst = (char *)dst + done,
                         .len = len,
                         .raddr = w->raddr[peer] + offset + done,
                         .key = w->key[peer]};
        st = fetch_run(comm, ctx, peer, &r);
        done += len;
    }
    return st;
}

/* A one-rank job has no provider: the CPU does the atomic. */
static uint64_t local_atomic(void *p, gmux_amo_op_t op, unsigned bytes, uint64_t v, uint64_t cmp)
{
    if (bytes == 4) {
        uint32_t *w = p, old = (uint32_t)cmp;
        switch (op) {
        case GMUX_AMO_FETCH:
            return __atomic_load_n(w, __ATOMIC_SEQ_CST);
        case GMUX_AMO_SET:
            return __atomic_exchange_n(w, (uint32_t)v, __ATOMIC_SEQ_CST);
        case GMUX_AMO_ADD:
            return __atomic_fetch_add(w, (uint32_t)v, __ATOMIC_SEQ_CST);
        case GMUX_AMO_AND:
            return __atomic_fetch_and(w, (uint32_t)v, __ATOMIC_SEQ_CST);
        case GMUX_AMO_OR:
            return __atomic_fetch_or(w, (uint32_t)v, __ATOMIC_SEQ_CST);
        case GMUX_AMO_XOR:
            return __atomic_fetch_xor(w, (uint32_t)v, __ATOMIC_SEQ_CST);
        case GMUX_AMO_CSWAP:
            __atomic_compare_exchange_n(w, &old, (uint32_t)v, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
            return old;
        }
        return 0;
    }
    uint64_t *w = p, old = cmp;
    switch (op) {
    case GMUX_AMO_FETCH:
        return __atomic_load_n(w, __ATOMIC_SEQ_CST);
    case GMUX_AMO_SET:
        return __atomic_exchange_n(w, v, __ATOMIC_SEQ_CST);
    case GMUX_AMO_ADD:
        return __atomic_fetch_add(w, v, __ATOMIC_SEQ_CST);
    case GMUX_AMO_AND:
        return __atomic_fetch_and(w, v, __ATOMIC_SEQ_CST);
    case GMUX_AMO_OR:
        return __atomic_fetch_or(w, v, __ATOMIC_SEQ_CST);
    case GMUX_AMO_XOR:
        return __atomic_fetch_xor(w, v, __ATOMIC_SEQ_CST);
    case GMUX_AMO_CSWAP:
        __atomic_compare_exchange_n(w, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return old;
    }
    return 0;
}

GMUX_API gmux_status_t gmux_atomic(gmux_comm_t *comm, uint32_t ctx, int peer, gmux_window_t win,
                                   uint64_t offset, gmux_amo_op_t op, unsigned bytes,
                                   uint64_t operand, uint64_t compare, uint64_t *old_p)
{
    static const enum fi_op fops[] = {FI_ATOMIC_READ, FI_ATOMIC_WRITE, FI_SUM,  FI_BAND,
                                      FI_BOR,         FI_BXOR,         FI_CSWAP};
    gmux_status_t st = check_args(comm, ctx, peer, win, offset, bytes);
    if (st != GMUX_OK)
        return st;
    if ((bytes != 4 && bytes != 8) || (unsigned)op > GMUX_AMO_CSWAP || offset % bytes)
        return GMUX_ERR_INVALID;
    const net_win_t *w = &comm->win[win];
    uint64_t old = 0;
    if (comm->have_fab && !comm->fab.atomics)
        return GMUX_ERR_UNSUPPORTED; /* GMUX_NET_HMEM=rma chose FI_HMEM over them */
    if (!comm->have_fab) {
        old = local_atomic((char *)w->base + offset, op, bytes, operand, compare);
    } else {
        uint32_t old32 = 0;
        fetch_req_t r = {.kind = op == GMUX_AMO_CSWAP ? FETCH_COMPARE : FETCH_ATOMIC,
                         .dst = bytes == 4 ? (void *)&old32 : (void *)&old,
                         .len = bytes,
                         .raddr = w->raddr[peer] + offset,
                         .key = w->key[peer],
                         .dt = bytes == 4 ? FI_UINT32 : FI_UINT64,
                         .fop = fops[op]};
        /* the provider reads a 4-byte operand from the first 4 bytes */
        if (bytes == 4) {
            uint32_t o = (uint32_t)operand, c = (uint32_t)compare;
            memcpy(&r.operand, &o, 4);
            memcpy(&r.compare, &c, 4);
        } else {
            r.operand = operand;
            r.compare = compare;
        }
        st = fetch_run(comm, ctx, peer, &r);
        if (bytes == 4)
            old = old32;
    }
    if (st == GMUX_OK && old_p)
        *old_p = old;
    return st;
}

struct cond_arg {
    bool (*cond)(void *);
    void *arg;
};

static bool cond_tramp(gmux_comm_t *comm, void *arg)
{
    (void)comm;
    struct cond_arg *a = arg;
    return a->cond(a->arg);
}

GMUX_API gmux_status_t gmux_wait_cond(gmux_comm_t *comm, bool (*cond)(void *arg), void *arg,
                                      double timeout_s)
{
    if (!comm || !cond)
        return GMUX_ERR_INVALID;
    struct cond_arg a = {cond, arg};
    double t = timeout_s < 0 ? net_timeout_s(comm) : timeout_s == 0 ? -1.0 : timeout_s;
    return net_wait(comm, cond_tramp, &a, t, true);
}

GMUX_API bool gmux_peer_alive(gmux_comm_t *comm, int peer)
{
    return comm && peer >= 0 && peer < comm->size && !net_peer_dead(comm, peer);
}

GMUX_API void *gmux_window_base(gmux_comm_t *comm, gmux_window_t win, size_t *size_p)
{
    bool ok = comm && win < NET_MAX_WINDOWS && comm->win[win].used;
    if (size_p)
        *size_p = ok ? comm->win[win].size : 0;
    return ok ? comm->win[win].base : NULL;
}
