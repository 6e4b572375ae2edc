/*
 * gmux net, extensions: operations that bring data back from a peer (get
 * and remote atomics) and a progress-driving wait, which the OpenSHMEM layer
 * (libgmux-shmem) needs on top of the put/signal core of gmux/net.h.
 *
 * Unlike puts, these do not travel through the descriptor rings: the
 * calling CPU thread takes the progress lock, first drains the rings (so
 * the context's earlier puts are posted before it), posts the libfabric
 * operation (fi_read, fi_fetch_atomic, fi_compare_atomic) and then waits
 * for its completion while driving progress. They return once the data is
 * in the caller's buffer (get) or the atomic has executed at the target.
 *
 * Atomicity: every atomic, including one addressed to the calling rank
 * itself, is executed by the target's provider, so atomics from all ranks
 * on one word are atomic with respect to each other. They are not atomic
 * with respect to plain CPU stores to the same word.
 *
 * Ordering: like gmux_put, these are ordered after earlier operations of
 * the same context only by gmux_quiet (the provider ordering is not relied
 * on). After a failure (GMUX_ERR_PEER, GMUX_ERR_TIMEOUT) the communicator
 * should be finalized: a late completion may still arrive.
 *
 * Thread-safety: as gmux/net.h; any thread once init returned.
 */
#ifndef GMUX_NET_EXT_H
#define GMUX_NET_EXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/net.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Copies size bytes from window win of peer at offset into dst (blocking). */
gmux_status_t gmux_get(gmux_comm_t *comm, uint32_t ctx, int peer, gmux_window_t win,
                       uint64_t offset, void *dst, size_t size);

typedef enum gmux_amo_op {
    GMUX_AMO_FETCH = 0, /* old = word */
    GMUX_AMO_SET = 1,   /* old = word; word = operand (swap) */
    GMUX_AMO_ADD = 2,   /* old = word; word += operand */
    GMUX_AMO_AND = 3,
    GMUX_AMO_OR = 4,
    GMUX_AMO_XOR = 5,
    GMUX_AMO_CSWAP = 6, /* old = word; if (word == compare) word = operand */
} gmux_amo_op_t;

/* Executes op on the `bytes` (4 or 8) byte word at (win, offset) of peer;
 * *old_p (may be NULL) gets the word's value before the op. Blocking. */
gmux_status_t gmux_atomic(gmux_comm_t *comm, uint32_t ctx, int peer, gmux_window_t win,
                          uint64_t offset, gmux_amo_op_t op, unsigned bytes, uint64_t operand,
                          uint64_t compare, uint64_t *old_p);

/* Waits until cond(arg) is true, driving progress; GMUX_ERR_PEER when a rank
 * died, GMUX_ERR_TIMEOUT after timeout_s (< 0: the communicator's timeout,
 * 0: no timeout). */
gmux_status_t gmux_wait_cond(gmux_comm_t *comm, bool (*cond)(void *arg), void *arg,
                             double timeout_s);

/* Whether peer is a live rank of the communicator. */
bool gmux_peer_alive(gmux_comm_t *comm, int peer);

/* The local address of window win, and its size (0 when not registered). */
void *gmux_window_base(gmux_comm_t *comm, gmux_window_t win, size_t *size_p);

#ifdef __cplusplus
}
#endif

#endif /* GMUX_NET_EXT_H */
