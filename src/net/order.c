/* net_order: see order.h. */
#include "net/order.h"

#include <stdlib.h>
#include <string.h>

#include "common/array.h"

void net_order_init(net_order_t *o)
{
    memset(o, 0, sizeof(*o));
}

void net_order_fini(net_order_t *o)
{
    free(o->bits);
    free(o->pending);
    memset(o, 0, sizeof(*o));
}

static bool bit_get(const net_order_t *o, uint32_t rel)
{
    uint32_t i = (o->base_bit + rel) & (o->nbits - 1);
    return (o->bits[i / 64] >> (i % 64)) & 1;
}

static void bit_set(net_order_t *o, uint32_t rel, bool v)
{
    uint32_t i = (o->base_bit + rel) & (o->nbits - 1);
    if (v)
        o->bits[i / 64] |= 1ull << (i % 64);
    else
        o->bits[i / 64] &= ~(1ull << (i % 64));
}

static gmux_status_t grow_bits(net_order_t *o, uint32_t need)
{
    uint32_t n = o->nbits ? o->nbits : 1024;
    while (n <= need) {
        if (n >= (1u << 30))
            return GMUX_ERR_RANGE;
        n *= 2;
    }
    uint64_t *b = calloc(n / 64, sizeof(uint64_t));
    if (!b)
        return GMUX_ERR_NOMEM;
    for (uint32_t rel = 0; rel < o->nbits; rel++)
        if (bit_get(o, rel))
            b[rel / 64] |= 1ull << (rel % 64);
    free(o->bits);
    o->bits = b;
    o->nbits = n;
    o->base_bit = 0;
    return GMUX_OK;
}

uint32_t net_order_expand(const net_order_t *o, uint32_t seq24)
{
    /* nearest to landed: writes of a stream are never that far apart */
    uint32_t delta = (seq24 - o->landed) & NET_CQD_SEQ_MASK;
    if (delta >= (1u << (NET_CQD_SEQ_BITS - 1)))
        return o->landed + delta - (1u << NET_CQD_SEQ_BITS);
    return o->landed + delta;
}

static gmux_status_t mark_landed(net_order_t *o, uint32_t seq)
{
    uint32_t rel = seq - o->landed;
    if (rel >= (1u << 31))
        return GMUX_ERR_PARSE; /* below landed: a duplicate */
    if (rel == 0) {
        o->landed++;
        if (o->nbits) {
            o->base_bit = (o->base_bit + 1) & (o->nbits - 1);
            /* the old bit 0 is clear (seq landed had not arrived); absorb what follows */
            while (bit_get(o, 0)) {
                bit_set(o, 0, false);
                o->landed++;
                o->base_bit = (o->base_bit + 1) & (o->nbits - 1);
            }
        }
        return GMUX_OK;
    }
    if (rel >= o->nbits) {
        gmux_status_t st = grow_bits(o, rel);
        if (st != GMUX_OK)
            return st;
    }
    if (bit_get(o, rel))
        return GMUX_ERR_PARSE;
    bit_set(o, rel, true);
    return GMUX_OK;
}

static net_pend_t *find_signal(net_order_t *o, uint32_t seq)
{
    for (uint32_t i = 0; i < o->npending; i++)
        if (o->pending[i].type == NET_MSG_SIGNAL && o->pending[i].seq == seq)
            return &o->pending[i];
    return NULL;
}

static net_pend_t *add_pending(net_order_t *o)
{
    if (o->npending == o->cap) {
        if (com_array_grow_u32((void **)&o->pending, &o->cap, (size_t)o->npending + 1,
                               sizeof(*o->pending), 16) != GMUX_OK)
            return NULL;
    }
    net_pend_t *p = &o->pending[o->npending++];
    memset(p, 0, sizeof(*p));
    return p;
}

gmux_status_t net_order_write(net_order_t *o, uint32_t seq, const net_cqd_t *c)
{
    gmux_status_t st = mark_landed(o, seq);
    if (st != GMUX_OK || !c || c->sig_op == 0)
        return st;
    net_pend_t *p = find_signal(o, seq);
    if (p) {
        if (!c->sig_in_msg)
            return GMUX_ERR_PARSE; /* a message for a signal carried inline */
        return GMUX_OK;            /* the message came first */
    }
    if (!(p = add_pending(o)))
        return GMUX_ERR_NOMEM;
    p->seq = seq;
    p->type = NET_MSG_SIGNAL;
    p->op = c->sig_op;
    p->known = !c->sig_in_msg;
    p->id = c->sig_id;
    p->value = c->sig_value;
    return GMUX_OK;
}

gmux_status_t net_order_message(net_order_t *o, const net_msg_t *m)
{
    net_pend_t *p = NULL;
    if (m->type == NET_MSG_SIGNAL && (p = find_signal(o, m->seq))) {
        if (p->known)
            return GMUX_ERR_PARSE;
    } else if (m->type == NET_MSG_SIGNAL || m->type == NET_MSG_QUIET_REQ) {
        if (!(p = add_pending(o)))
            return GMUX_ERR_NOMEM;
        p->seq = m->seq;
        p->type = m->type;
    } else {
        return GMUX_ERR_INVALID;
    }
    if (m->type == NET_MSG_SIGNAL) {
        p->op = m->signal_op;
        p->id = m->signal_id;
        p->known = true;
    }
    p->value = m->value;
    return GMUX_OK;
}

/* a is below b, in wrapping 32-bit order */
static bool seq_lt(uint32_t a, uint32_t b)
{
    return a != b && (uint32_t)(b - a) < (1u << 31);
}

bool net_order_next(net_order_t *o, net_pend_t *out)
{
    /* the earliest signal gates everything after it */
    int first = -1;
    for (uint32_t i = 0; i < o->npending; i++)
        if (o->pending[i].type == NET_MSG_SIGNAL &&
            (first < 0 || seq_lt(o->pending[i].seq, o->pending[first].seq)))
            first = (int)i;
    if (first >= 0 && o->pending[first].known && seq_lt(o->pending[first].seq, o->landed)) {
        *out = o->pending[first];
        o->pending[first] = o->pending[--o->npending];
        return true;
    }
    for (uint32_t i = 0; i < o->npending; i++) {
        const net_pend_t *q = &o->pending[i];
        if (q->type != NET_MSG_QUIET_REQ || seq_lt(o->landed, q->seq))
            continue;
        if (first >= 0 && seq_lt(o->pending[first].seq, q->seq))
            continue; /* a signal below the quiet is not applied yet */
        *out = *q;
        o->pending[i] = o->pending[--o->npending];
        return true;
    }
    return false;
}
