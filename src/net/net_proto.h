/*
 * net wire formats, version 1: the 64-byte ring descriptor, the remote CQ
 * data of a write, and the control messages between proxies.
 *
 * Descriptor. A producer (a CPU thread now, a GPU thread later) writes eight
 * 8-byte words into a ring slot; the words may become visible in any order
 * (PCIe writes from a GPU can be reordered or torn between words). Bit 63 of
 * every word is a valid flag, so the consumer takes a slot only when all
 * eight words carry it, and it clears the slot (all zero) before handing it
 * back. The descriptor's seven logical 64-bit fields are stored in words
 * 0..6 with their top bit moved into word 7 (bit i of word 7 = bit 63 of
 * field i), so no field loses a bit to the flag.
 *
 *   field 0  version:8 | opcode:8 | signal op:8 | flags:8 | window:16 | ctx:16
 *   field 1  ticket (low 32 bits) | counter id:32
 *   field 2  peer:32 | signal id:32
 *   field 3  destination offset in the window
 *   field 4  source address (PUT) or inline value (PUT_VALUE)
 *   field 5  size in bytes
 *   field 6  signal value
 *   word 7   top bits of fields 0..6 (bits 0..6) | magic 0x5a (bits 8..15) | valid
 *
 * The ticket lets the consumer check that the slot holds the descriptor of
 * the lap it expects, not a stale one.
 *
 * Thread-safety: pure functions; the ring does the atomics.
 */
#ifndef NET_PROTO_H
#define NET_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#define NET_PROTO_VERSION 1u
#define NET_DESC_WORDS    8
#define NET_DESC_VALID    (1ull << 63)
#define NET_DESC_MAGIC    0x5aull

enum net_opcode {
    NET_OP_NOP = 0, /* consumed and ignored (a producer that gave up a slot) */
    NET_OP_PUT = 1,
    NET_OP_PUT_VALUE = 2,
    NET_OP_SIGNAL = 3,
    NET_OP_COUNT_ = 4,
};

#define NET_DESC_F_COUNTER 0x1u /* counter_id is valid */

/* The decoded descriptor. */
typedef struct net_desc {
    uint8_t version;
    uint8_t opcode;
    uint8_t signal_op; /* gmux_signal_op_t */
    uint8_t flags;
    uint16_t window;
    uint16_t ctx;
    uint32_t ticket;
    uint32_t counter_id;
    uint32_t peer;
    uint32_t signal_id;
    uint64_t offset;
    uint64_t src; /* address, or the value of PUT_VALUE */
    uint64_t size;
    uint64_t signal_value;
} net_desc_t;

typedef struct net_desc_slot {
    uint64_t w[NET_DESC_WORDS];
} __attribute__((aligned(64))) net_desc_slot_t;

_Static_assert(sizeof(net_desc_slot_t) == 64, "descriptor must be 64 bytes");

static inline void net_desc_encode(const net_desc_t *d, uint64_t out[NET_DESC_WORDS])
{
    uint64_t f[7];
    f[0] = (uint64_t)d->version | (uint64_t)d->opcode << 8 | (uint64_t)d->signal_op << 16 |
           (uint64_t)d->flags << 24 | (uint64_t)d->window << 32 | (uint64_t)d->ctx << 48;
    f[1] = (uint64_t)d->ticket | (uint64_t)d->counter_id << 32;
    f[2] = (uint64_t)d->peer | (uint64_t)d->signal_id << 32;
    f[3] = d->offset;
    f[4] = d->src;
    f[5] = d->size;
    f[6] = d->signal_value;
    uint64_t top = 0;
    for (int i = 0; i < 7; i++) {
        top |= (f[i] >> 63) << i;
        out[i] = f[i] | NET_DESC_VALID;
    }
    out[7] = top | NET_DESC_MAGIC << 8 | NET_DESC_VALID;
}

/* Whether all eight words carry the valid flag (the slot is fully written). */
static inline bool net_desc_complete(const uint64_t w[NET_DESC_WORDS])
{
    uint64_t all = NET_DESC_VALID;
    for (int i = 0; i < NET_DESC_WORDS; i++)
        all &= w[i];
    return all != 0;
}

/* Decodes a complete slot. Returns false when the words are not a version-1
 * descriptor (bad magic, version or opcode): a producer bug, never consumed. */
static inline bool net_desc_decode(const uint64_t w[NET_DESC_WORDS], net_desc_t *d)
{
    if (!net_desc_complete(w) || ((w[7] >> 8) & 0xff) != NET_DESC_MAGIC ||
        (w[7] & ~(NET_DESC_VALID | 0xff7full)) != 0)
        return false; /* not ours, or reserved bits set */
    uint64_t f[7];
    for (int i = 0; i < 7; i++)
        f[i] = (w[i] & ~NET_DESC_VALID) | ((w[7] >> i) & 1ull) << 63;
    d->version = (uint8_t)f[0];
    d->opcode = (uint8_t)(f[0] >> 8);
    d->signal_op = (uint8_t)(f[0] >> 16);
    d->flags = (uint8_t)(f[0] >> 24);
    d->window = (uint16_t)(f[0] >> 32);
    d->ctx = (uint16_t)(f[0] >> 48);
    d->ticket = (uint32_t)f[1];
    d->counter_id = (uint32_t)(f[1] >> 32);
    d->peer = (uint32_t)f[2];
    d->signal_id = (uint32_t)(f[2] >> 32);
    d->offset = f[3];
    d->src = f[4];
    d->size = f[5];
    d->signal_value = f[6];
    return d->version == NET_PROTO_VERSION && d->opcode < NET_OP_COUNT_ && d->signal_op <= 3;
}

/*
 * Remote CQ data of every write (fi_writedata), 64 bits, version 1:
 *   bits  0..23  sequence number of the write in its (source, ctx) stream,
 *                low 24 bits (the target expands it next to what landed)
 *   bits 24..35  source rank (< 4096)
 *   bits 36..39  context (< 16)
 *   bits 40..41  signal op carried by this write (0: none)
 *   bit  42      the signal's id and operand come in a control message
 *   bits 43..52  signal index (< 1024), when carried here
 *   bits 53..63  signal operand (< 2048), when carried here
 * A signal rides on a write: the write of its own put, or an 8-byte write
 * to the peer's scratch word for a signal alone. The target applies it once
 * every write of the stream up to and including its carrier has landed, and
 * signals in carrier order, whatever order the provider delivered things in.
 */
#define NET_CQD_SEQ_BITS  24
#define NET_CQD_SEQ_MASK  ((1u << NET_CQD_SEQ_BITS) - 1)
#define NET_CQD_MAX_RANKS 4096u
#define NET_CQD_MAX_CTX   16u
#define NET_CQD_SIG_IDS   1024u
#define NET_CQD_SIG_VALS  2048u

typedef struct net_cqd {
    uint32_t seq; /* low NET_CQD_SEQ_BITS */
    uint32_t src;
    uint32_t ctx;
    uint8_t sig_op;  /* gmux_signal_op_t, 0: none */
    bool sig_in_msg; /* id and operand follow in a NET_MSG_SIGNAL */
    uint32_t sig_id;
    uint64_t sig_value;
} net_cqd_t;

/* Whether a signal fits in the CQ data (INC needs no operand). */
static inline bool net_cqd_fits(uint8_t op, uint32_t id, uint64_t value)
{
    return id < NET_CQD_SIG_IDS && (op == 2 || value < NET_CQD_SIG_VALS);
}

static inline uint64_t net_cqd_make(const net_cqd_t *c)
{
    uint64_t v = (uint64_t)(c->seq & NET_CQD_SEQ_MASK) | (uint64_t)(c->src & 0xfff) << 24 |
                 (uint64_t)(c->ctx & 0xf) << 36 | (uint64_t)(c->sig_op & 3) << 40;
    if (c->sig_op && c->sig_in_msg)
        v |= 1ull << 42;
    else if (c->sig_op)
        v |= (uint64_t)(c->sig_id & 0x3ff) << 43 |
             (uint64_t)(c->sig_op == 2 ? 0 : c->sig_value & 0x7ff) << 53;
    return v;
}

static inline void net_cqd_parse(uint64_t v, net_cqd_t *c)
{
    c->seq = (uint32_t)v & NET_CQD_SEQ_MASK;
    c->src = (uint32_t)(v >> 24) & 0xfff;
    c->ctx = (uint32_t)(v >> 36) & 0xf;
    c->sig_op = (uint8_t)((v >> 40) & 3);
    c->sig_in_msg = (v >> 42) & 1;
    c->sig_id = (uint32_t)(v >> 43) & 0x3ff;
    c->sig_value = v >> 53;
}

/* Control messages (fi_send), 32 bytes, version 1. */
enum net_msg_type {
    NET_MSG_SIGNAL = 1,    /* the id and operand of the signal carried by write `seq` */
    NET_MSG_QUIET_REQ = 2, /* answer QUIET_ACK once writes < seq landed, their signals applied */
    NET_MSG_QUIET_ACK = 3, /* token echoes the request */
};

typedef struct net_msg {
    uint8_t version;
    uint8_t type;
    uint8_t signal_op;
    uint8_t ctx;
    uint32_t src;
    uint32_t seq; /* full sequence number (see above) */
    uint32_t signal_id;
    uint64_t value; /* SIGNAL: operand; QUIET_*: token */
    uint64_t reserved;
} net_msg_t;

_Static_assert(sizeof(net_msg_t) == 32, "control message must be 32 bytes");

#endif /* NET_PROTO_H */
