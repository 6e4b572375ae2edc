/*
 * net_order: the target-side ordering of one incoming (source, context)
 * stream. Writes carry a sequence number in their remote CQ data; signals
 * and quiet requests arrive as control messages that name how many writes
 * (and signals) of the stream come before them. This module decides when a
 * signal may be applied: only after every write numbered below it has
 * landed, and after every earlier signal of the stream, whatever order the
 * provider delivered things in.
 *
 * Ownership: the stream owns its pending lists. Thread-safety: none; the
 * holder of the progress lock drives it.
 */
#ifndef NET_ORDER_H
#define NET_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

#include "net/net_proto.h"

typedef struct net_order {
    uint32_t landed;      /* every write with seq < landed has landed */
    uint64_t *bits;       /* out-of-order writes above landed: bit (seq - landed) */
    uint32_t nbits;       /* capacity of bits, a power of two (0: none yet) */
    uint32_t base_bit;    /* bit index of seq == landed in the circular bitmap */
    uint32_t next_signal; /* signals of the stream applied so far */
    net_msg_t *pending;   /* signals and quiet requests not yet ready */
    uint32_t npending, cap;
} net_order_t;

void net_order_init(net_order_t *o);
void net_order_fini(net_order_t *o);

/* A write of the stream landed. */
gmux_status_t net_order_write(net_order_t *o, uint32_t seq);

/* A SIGNAL or QUIET_REQ message arrived; it is kept until ready. */
gmux_status_t net_order_message(net_order_t *o, const net_msg_t *m);

/* Returns the next message that is ready (signals in stream order, each once
 * its writes landed; quiet requests once their writes landed and their
 * signals were applied), removing it; false when none is. The caller applies
 * a returned signal before calling again. */
bool net_order_next(net_order_t *o, net_msg_t *m);

#endif /* NET_ORDER_H */
