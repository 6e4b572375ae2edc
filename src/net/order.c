/* net_order: see order.h. */
#include "net/order.h"

#include <stdlib.h>
#include <string.h>

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

gmux_status_t net_order_write(net_order_t *o, uint32_t seq)
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

gmux_status_t net_order_message(net_order_t *o, const net_msg_t *m)
{
    if (o->npending == o->cap) {
        uint32_t cap = o->cap ? o->cap * 2 : 16;
        net_msg_t *p = realloc(o->pending, cap * sizeof(*p));
        if (!p)
            return GMUX_ERR_NOMEM;
        o->pending = p;
        o->cap = cap;
    }
    o->pending[o->npending++] = *m;
    return GMUX_OK;
}

/* seq a is at or below b, in wrapping 32-bit order */
static bool seq_le(uint32_t a, uint32_t b)
{
    return (uint32_t)(b - a) < (1u << 31);
}

bool net_order_next(net_order_t *o, net_msg_t *m)
{
    for (uint32_t i = 0; i < o->npending; i++) {
        const net_msg_t *p = &o->pending[i];
        bool ready;
        if (p->type == NET_MSG_SIGNAL)
            ready = (uint32_t)p->nsignals == o->next_signal && seq_le(p->seq, o->landed);
        else
            ready = seq_le(p->seq, o->landed) && seq_le((uint32_t)p->nsignals, o->next_signal);
        if (!ready)
            continue;
        *m = *p;
        o->pending[i] = o->pending[--o->npending];
        if (m->type == NET_MSG_SIGNAL)
            o->next_signal++;
        return true;
    }
    return false;
}
