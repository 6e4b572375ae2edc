/* net_batch: see coalesce.h for the rules and why they keep the ordering. */
#include "net/coalesce.h"

#include <string.h>

#include <gmux/net.h>

static bool has_payload(const net_desc_t *d)
{
    return d->opcode == NET_OP_PUT_VALUE || (d->opcode == NET_OP_PUT && d->size > 0);
}

static const void *payload(const net_desc_t *d)
{
    return d->opcode == NET_OP_PUT ? (const void *)(uintptr_t)d->src : (const void *)&d->src;
}

static void take_counter(net_batch_t *b, const net_desc_t *d)
{
    if (d->flags & NET_DESC_F_COUNTER)
        b->counters[b->ncounter++] = d->counter_id;
}

/* One ring is one stream; a descriptor naming another ends the batch, and
 * the proxy refuses it (proxy.c, desc_in_ring). */
static bool same_stream(const net_batch_t *b, const net_desc_t *n)
{
    return n->peer == b->d.peer && n->ctx == b->d.ctx;
}

/* Whether n can extend the gathered run of b (b->d.size bytes so far). */
static bool contiguous(const net_batch_t *b, const net_desc_t *n, size_t gather_max)
{
    return has_payload(n) && same_stream(b, n) && n->window == b->d.window &&
           n->offset == b->d.offset + b->d.size && n->size <= gather_max - b->d.size;
}

static void gather(net_batch_t *b, size_t gather_max, net_batch_peek_fn peek, void *arg)
{
    if (!has_payload(&b->d) || b->d.signal_op != GMUX_SIGNAL_NONE || b->d.size > gather_max)
        return;
    net_desc_t n;
    if (peek(arg, 1, &n) != GMUX_OK || !contiguous(b, &n, gather_max))
        return; /* one put: executed as it is, without the copy */
    memcpy(b->data, payload(&b->d), b->d.size);
    take_counter(b, &b->d);
    b->d.flags &= (uint8_t)~NET_DESC_F_COUNTER; /* the counters are in the list now */
    b->d.opcode = NET_OP_PUT;
    b->d.src = (uint64_t)(uintptr_t)b->data;
    b->gathered = true;
    do {
        memcpy(b->data + b->d.size, payload(&n), n.size);
        b->d.size += n.size;
        take_counter(b, &n);
        b->ndesc++;
        if (n.signal_op != GMUX_SIGNAL_NONE) {
            b->d.signal_op = n.signal_op;
            b->d.signal_id = n.signal_id;
            b->d.signal_value = n.signal_value;
            return; /* a signal ends the batch */
        }
    } while (b->ndesc < NET_BATCH_MAX && peek(arg, b->ndesc, &n) == GMUX_OK &&
             contiguous(b, &n, gather_max));
}

void net_batch_build(net_batch_t *b, const net_desc_t *first, size_t gather_max, bool fold,
                     net_batch_peek_fn peek, void *arg)
{
    b->d = *first;
    b->ndesc = 1;
    b->gathered = false;
    b->ncounter = 0;
    if (gather_max > NET_BATCH_BYTES)
        gather_max = NET_BATCH_BYTES;
    if (gather_max)
        gather(b, gather_max, peek, arg);
    if (!fold || b->d.signal_op != GMUX_SIGNAL_NONE || !has_payload(&b->d) ||
        b->ndesc >= NET_BATCH_MAX)
        return;
    net_desc_t n;
    if (peek(arg, b->ndesc, &n) != GMUX_OK || n.opcode != NET_OP_SIGNAL ||
        n.signal_op == GMUX_SIGNAL_NONE || !same_stream(b, &n))
        return;
    /* the signal rides on the last put's write: every payload before it in
     * the stream is in that write or in an earlier one */
    b->d.signal_op = n.signal_op;
    b->d.signal_id = n.signal_id;
    b->d.signal_value = n.signal_value;
    b->ndesc++;
}
