/* net_ring: see ring.h for the protocol. */
#include "net/ring.h"

#include <stdlib.h>
#include <string.h>

#define RING_LINE 64

gmux_status_t net_ring_create(uint32_t nslots, net_ring_t *ring)
{
    if (nslots < 2 || (nslots & (nslots - 1)) != 0)
        return GMUX_ERR_INVALID;
    size_t slots_bytes = (size_t)nslots * sizeof(net_desc_slot_t);
    size_t size = slots_bytes + 2 * RING_LINE;
    size = (size + 4095) & ~(size_t)4095;
    void *mem = NULL;
    if (posix_memalign(&mem, 4096, size) != 0)
        return GMUX_ERR_NOMEM;
    memset(mem, 0, size);
    ring->mem = mem;
    ring->mem_size = size;
    ring->slots = mem;
    ring->nslots = nslots;
    ring->tail = (_Atomic uint64_t *)((char *)mem + slots_bytes);
    ring->head = (_Atomic uint64_t *)((char *)mem + slots_bytes + RING_LINE);
    atomic_init(ring->tail, 0);
    atomic_init(ring->head, 0);
    atomic_init(&ring->head_seen, 0);
    return GMUX_OK;
}

void net_ring_destroy(net_ring_t *ring)
{
    free(ring->mem);
    memset(ring, 0, sizeof(*ring));
}

static _Atomic uint64_t *slot_word(net_ring_t *ring, uint64_t ticket, int word)
{
    return (_Atomic uint64_t *)&ring->slots[ticket & (ring->nslots - 1)].w[word];
}

gmux_status_t net_ring_claim(net_ring_t *ring, uint64_t *ticket_p)
{
    uint64_t t = atomic_load_explicit(ring->tail, memory_order_relaxed);
    /* acquire: pairs with the release below, which carries the consumer's
     * release of head (its clearing of the slots) to this thread */
    uint64_t h = atomic_load_explicit(&ring->head_seen, memory_order_acquire);
    for (;;) {
        if (t - h >= ring->nslots) {
            h = atomic_load_explicit(ring->head, memory_order_acquire);
            if (t - h >= ring->nslots)
                return GMUX_ERR_BUSY;
            /* a racing producer may store an older value: that only makes
             * the next claim look at head again */
            atomic_store_explicit(&ring->head_seen, h, memory_order_release);
        }
        /* acquire on success: the consumer's clearing of this slot happened before. */
        if (atomic_compare_exchange_weak_explicit(ring->tail, &t, t + 1, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            *ticket_p = t;
            return GMUX_OK;
        }
    }
}

void net_ring_store_word(net_ring_t *ring, uint64_t ticket, int word, uint64_t value)
{
    atomic_store_explicit(slot_word(ring, ticket, word), value, memory_order_release);
}

gmux_status_t net_ring_try_push(net_ring_t *ring, net_desc_t *d)
{
    uint64_t t;
    gmux_status_t st = net_ring_claim(ring, &t);
    if (st != GMUX_OK)
        return st;
    d->ticket = (uint32_t)t;
    uint64_t w[NET_DESC_WORDS];
    net_desc_encode(d, w);
    for (int i = 0; i < NET_DESC_WORDS; i++)
        net_ring_store_word(ring, t, i, w[i]);
    return GMUX_OK;
}

gmux_status_t net_ring_peek_at(net_ring_t *ring, uint64_t k, net_desc_t *d)
{
    /* The consumer never reads tail: an empty slot and a slot being written
     * look the same (flags clear), so the producers' index may live anywhere,
     * e.g. in GPU memory for a GPU producer. */
    if (k >= ring->nslots)
        return GMUX_ERR_BUSY;
    uint64_t t = atomic_load_explicit(ring->head, memory_order_relaxed) + k;
    uint64_t w[NET_DESC_WORDS];
    for (int i = 0; i < NET_DESC_WORDS; i++) {
        w[i] = atomic_load_explicit(slot_word(ring, t, i), memory_order_acquire);
        if (!(w[i] & NET_DESC_VALID))
            return GMUX_ERR_BUSY; /* claimed, not fully written yet */
    }
    if (!net_desc_decode(w, d) || d->ticket != (uint32_t)t)
        return GMUX_ERR_PARSE;
    return GMUX_OK;
}

gmux_status_t net_ring_peek(net_ring_t *ring, net_desc_t *d)
{
    return net_ring_peek_at(ring, 0, d);
}

void net_ring_pop_n(net_ring_t *ring, uint64_t n)
{
    if (n == 0)
        return;
    uint64_t h = atomic_load_explicit(ring->head, memory_order_relaxed);
    for (uint64_t k = 0; k < n; k++)
        for (int i = 0; i < NET_DESC_WORDS; i++)
            atomic_store_explicit(slot_word(ring, h + k, i), 0, memory_order_relaxed);
    atomic_store_explicit(ring->head, h + n, memory_order_release);
}

void net_ring_pop(net_ring_t *ring)
{
    net_ring_pop_n(ring, 1);
}

uint64_t net_ring_pending(const net_ring_t *ring)
{
    return atomic_load_explicit(ring->tail, memory_order_acquire) -
           atomic_load_explicit(ring->head, memory_order_acquire);
}

uint64_t net_ring_tail(const net_ring_t *ring)
{
    return atomic_load_explicit(ring->tail, memory_order_acquire);
}

uint64_t net_ring_head(const net_ring_t *ring)
{
    return atomic_load_explicit(ring->head, memory_order_acquire);
}
