/*
 * net_batch: coalescing consecutive descriptors of one ring into one write.
 *
 * The proxy drains a ring in order; when several descriptors are already
 * complete it can execute them as one libfabric write instead of one each:
 *
 *   gather  consecutive small PUT / PUT_VALUE descriptors whose destinations
 *           are contiguous in the same window become one injected write of
 *           their bytes, copied into the batch (only up to the provider's
 *           inject size, so the copy is the one inject makes anyway and the
 *           sources are reusable once it is posted, as with one inject each);
 *   fold    a SIGNAL descriptor that directly follows a put without a
 *           signal rides on that put's write (its carrier) instead of an
 *           8-byte write of its own.
 *
 * Both keep the ordering rule: a signal becomes visible at the target only
 * after the payload of its own put and of every earlier put on the same
 * (context, peer) stream. One ring is one stream, every descriptor of a
 * batch is consecutive in it, and a signal is only ever taken by the last
 * descriptor of a batch, so its carrier is a write that comes after (or
 * contains) every payload before the signal in ring order; the target
 * applies a signal once every write up to its carrier landed (net_order).
 * A batch never skips or reorders a descriptor: it is a prefix of the ring.
 *
 * Ownership: the caller owns the batch (it holds up to NET_BATCH_BYTES of
 * gathered payload; keep it off small stacks). Thread-safety: pure; the
 * peek callback is called from the calling thread only.
 */
#ifndef NET_COALESCE_H
#define NET_COALESCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "net/net_proto.h"

#define NET_BATCH_MAX   64   /* descriptors in one batch */
#define NET_BATCH_BYTES 4096 /* gathered payload */

typedef struct net_batch {
    net_desc_t d;      /* what to execute: the first descriptor, with the
                          gathered size and the taken signal */
    uint32_t ndesc;    /* descriptors it consumes (a prefix of the ring) */
    bool gathered;     /* the payload is data[0..d.size) (more than one put) */
    uint32_t ncounter; /* counters to bump once the write is posted (gathered) */
    uint32_t counters[NET_BATCH_MAX];
    uint8_t data[NET_BATCH_BYTES];
} net_batch_t;

/* Looks at the k-th unconsumed descriptor of the ring being drained
 * (k >= 1 here): GMUX_OK when it is complete and valid for execution; any
 * other status ends the batch before it. */
typedef gmux_status_t (*net_batch_peek_fn)(void *arg, uint64_t k, net_desc_t *d);

/* Builds the batch that starts with first (complete and valid, the ring's
 * next descriptor). gather_max: the largest gathered write (0: no
 * gathering, e.g. on a provider without injected writes); fold: whether a
 * following signal may be folded. The source of a gathered PUT is read here
 * (it must be host-readable, as for posting it). */
void net_batch_build(net_batch_t *b, const net_desc_t *first, size_t gather_max, bool fold,
                     net_batch_peek_fn peek, void *arg);

#endif /* NET_COALESCE_H */
