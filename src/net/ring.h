/*
 * net_ring: the descriptor ring of one (context, peer) stream.
 *
 * Many producers, one consumer. Memory is one page-aligned block (slots,
 * then the producer and consumer indices on their own cache lines) that can
 * be pinned or registered for GPU access (cudaHostRegister) unchanged.
 *
 * Protocol:
 *   producer  loads tail; if tail - head >= slots the ring is full (back-
 *             pressure: the caller progresses or waits and retries); else
 *             claims ticket `tail` with a compare-and-swap, so a claimed slot
 *             is always free and no claimed ticket is ever abandoned. It then
 *             stores the eight words of the slot with release order (each
 *             carries the valid flag; on a GPU: system-scope release fence).
 *   consumer  reads slot head % slots; when all words are valid and the
 *             ticket matches, decodes it, zeroes the slot and then publishes
 *             head + 1 with release order. It never reads tail (an empty slot
 *             and one being written look alike), so a GPU producer may keep
 *             its claim counter in device memory and only read head. Descriptors are consumed
 * strictly in ticket order; a slot claimed but not yet written stalls the ring until its producer
 * finishes. Device producers may instead claim with fetch-and-add
 * (GMUX_NET_DEV_CLAIM=faa, net_device.h): a ticket may then be claimed before its
 * slot is free, and its producer waits for head to free it before writing;
 * the consumer never looks more than nslots ahead, so it never sees such a slot.
 *
 * Ownership: net_ring_create allocates, net_ring_destroy frees.
 * Thread-safety: net_ring_try_push from any number of threads; peek/pop from
 * one consumer at a time (the holder of the progress lock).
 */
#ifndef NET_RING_H
#define NET_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "net/net_proto.h"

typedef struct net_ring {
    net_desc_slot_t *slots;
    uint32_t nslots;        /* power of two */
    _Atomic uint64_t *tail; /* producers' next ticket */
    _Atomic uint64_t *head; /* consumer index: tickets below it are consumed */
    /* CPU producers' copy of head (never ahead of it): they read the
     * consumer's line only when this copy says the ring is full, instead of
     * on every claim. Not in the mapped block: a GPU producer reads head. */
    _Atomic uint64_t head_seen;
    void *mem; /* the one allocation */
    size_t mem_size;
} net_ring_t;

gmux_status_t net_ring_create(uint32_t nslots, net_ring_t *ring);
void net_ring_destroy(net_ring_t *ring);

/* Claims a slot and writes d into it (d->ticket is filled in). Returns
 * GMUX_ERR_BUSY when the ring is full. */
gmux_status_t net_ring_try_push(net_ring_t *ring, net_desc_t *d);

/* Writes raw words into the slot of ticket t (tests: torn-write simulation). */
void net_ring_store_word(net_ring_t *ring, uint64_t ticket, int word, uint64_t value);

/* Claims a ticket without writing (tests). GMUX_ERR_BUSY when full. */
gmux_status_t net_ring_claim(net_ring_t *ring, uint64_t *ticket_p);

/* Looks at the next descriptor: GMUX_OK and *d when complete, GMUX_ERR_BUSY
 * when the ring is empty or the slot is not fully written, GMUX_ERR_PARSE
 * when the slot is complete but not a valid descriptor of its ticket. */
gmux_status_t net_ring_peek(net_ring_t *ring, net_desc_t *d);

/* Consumes the slot just peeked: clears it and advances head. */
void net_ring_pop(net_ring_t *ring);

/* The consumer's batch form: looks at the k-th unconsumed descriptor
 * (k = 0 is what net_ring_peek sees), same results as net_ring_peek; the
 * consumer looks ahead this way to coalesce consecutive descriptors. */
gmux_status_t net_ring_peek_at(net_ring_t *ring, uint64_t k, net_desc_t *d);

/* Consumes the next n slots (all peeked complete): clears them, then
 * publishes head + n with one release store, so that producers see one
 * change of the consumer index per batch instead of one per descriptor. */
void net_ring_pop_n(net_ring_t *ring, uint64_t n);

/* Descriptors claimed and not yet consumed. */
uint64_t net_ring_pending(const net_ring_t *ring);

/* Whether no ticket has been claimed past head, i.e. there is nothing to
 * drain (a slot still being written counts as claimed). For the holder of
 * the progress lock (the only writer of head), before it peeks: two loads
 * instead of a call that reads the slot. */
static inline bool net_ring_idle(const net_ring_t *ring)
{
    return atomic_load_explicit(ring->tail, memory_order_acquire) ==
           atomic_load_explicit(ring->head, memory_order_relaxed);
}

/* The ticket that will be claimed next (a flush waits for head to reach it). */
uint64_t net_ring_tail(const net_ring_t *ring);
uint64_t net_ring_head(const net_ring_t *ring);

#endif /* NET_RING_H */
