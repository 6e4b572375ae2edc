/*
 * net_order: the target-side ordering of one incoming (source, context)
 * stream. Every write carries its sequence number in its remote CQ data; a
 * signal rides on a write (its carrier) and is applied only once every
 * write of the stream up to its carrier has landed, and after every signal
 * carried by an earlier write, whatever order the provider delivered writes
 * and control messages in. A quiet request numbered q is answered once
 * every write below q landed and every signal among them was applied.
 *
 * Ownership: the stream owns its pending list. Thread-safety: none; the
 * holder of the progress lock drives it.
 */
#ifndef NET_ORDER_H
#define NET_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

#include "net/net_proto.h"

typedef struct net_pend {
    uint32_t seq;   /* SIGNAL: its carrier; QUIET: writes below come first */
    uint8_t type;   /* NET_MSG_SIGNAL or NET_MSG_QUIET_REQ */
    uint8_t op;     /* signal op */
    bool known;     /* the signal's id and operand are known */
    uint32_t id;    /* signal index */
    uint64_t value; /* operand, or the quiet token */
} net_pend_t;

typedef struct net_order {
    uint32_t landed;     /* every write with seq < landed has landed */
    uint64_t *bits;      /* out-of-order writes above landed: bit (seq - landed) */
    uint32_t nbits;      /* capacity of bits, a power of two (0: none yet) */
    uint32_t base_bit;   /* bit index of seq == landed in the circular bitmap */
    net_pend_t *pending; /* signals and quiet requests not yet ready */
    uint32_t npending, cap;
} net_order_t;

void net_order_init(net_order_t *o);
void net_order_fini(net_order_t *o);

/* The full sequence number of a write numbered seq24 (low bits only). */
uint32_t net_order_expand(const net_order_t *o, uint32_t seq24);

/* Write seq landed; c (may be NULL) says what signal it carries. */
gmux_status_t net_order_write(net_order_t *o, uint32_t seq, const net_cqd_t *c);

/* A SIGNAL (id and operand of a carried signal) or QUIET_REQ message. */
gmux_status_t net_order_message(net_order_t *o, const net_msg_t *m);

/* The next ready item, removed: signals in carrier order once their
 * carriers and everything before landed; quiet requests once ready. */
bool net_order_next(net_order_t *o, net_pend_t *out);

#endif /* NET_ORDER_H */
