/*
 * The op pool: the libfabric operations in flight, their slots, and the
 * orphans left by peers that died with ops outstanding (taken back, never
 * reused: the provider may still write their buffers or report them).
 * LOCKING: everything here runs under the progress lock.
 */
#include <stdlib.h>
#include <string.h>

#include "net/internal.h"

void net_ctx_set_error(gmux_comm_t *comm, uint32_t ctx, gmux_status_t st)
{
    int expected = GMUX_OK;
    atomic_compare_exchange_strong(&comm->ctx_error[ctx], &expected, (int)st);
}

net_op_t *net_op_get(gmux_comm_t *comm)
{
    net_op_t *op = comm->free_ops;
    if (op) {
        comm->free_ops = op->next_free;
        op->in_use = true;
    }
    return op;
}

void net_op_put(gmux_comm_t *comm, net_op_t *op)
{
    op->in_use = false;
    op->next_free = comm->free_ops;
    comm->free_ops = op;
}

void net_op_finish(gmux_comm_t *comm, net_op_t *op, bool ok)
{
    if (op->fetch_len) {
        if (ok && op->fetch_dst)
            memcpy(op->fetch_dst, op->fetch_buf, op->fetch_len);
        if (op->fetch_buf != &op->amo[2])
            free(op->fetch_buf);
        op->fetch_dst = op->fetch_buf = NULL;
        op->fetch_len = 0;
    }
    net_op_put(comm, op);
}

/* Makes slot i's op, in use, an orphan: failed for its caller, kept out of
 * the pool for good (the provider may still write its buffers or report
 * it), a fresh op in its place. Without memory for one the slot keeps the
 * orphan and the pool is one op smaller. */
static void op_orphan(gmux_comm_t *comm, uint32_t i)
{
    net_op_t *op = comm->ops[i];
    net_ctx_set_error(comm, op->ctx, GMUX_ERR_PEER);
    op->fetch_dst = NULL; /* its caller is told it failed: never written */
    op->in_use = false;
    comm->stats.ops_taken_back++;
    net_op_t *fresh = calloc(1, sizeof(*fresh));
    if (!fresh)
        return;
    op->next_free = comm->orphans;
    comm->orphans = op;
    fresh->heap = true;
    comm->ops[i] = fresh;
    net_op_put(comm, fresh);
}

void net_ops_take_back(gmux_comm_t *comm, int peer)
{
    for (uint32_t i = 0; i < comm->nops; i++)
        if (comm->ops[i]->in_use && comm->ops[i]->peer == (uint32_t)peer)
            op_orphan(comm, i);
}

bool net_ctx_outstanding_below(gmux_comm_t *comm, uint32_t ctx, uint64_t below)
{
    for (uint32_t i = 0; i < comm->nops; i++) {
        const net_op_t *op = comm->ops[i];
        if (!op->in_use || op->ctx != ctx || op->id >= below)
            continue;
        if (!net_peer_dead(comm, (int)op->peer))
            return true;
        /* an operation to a dead peer may never complete: count it as failed */
        net_ctx_set_error(comm, ctx, GMUX_ERR_PEER);
    }
    return false;
}
