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

/* The team's id: the same on every member, below 16, and no other live team
 * of more than one member has it (ids are never reused). The world's is 0;
 * a team of one member has 0 too (it agrees with no one). */
int gmux_team_id(const gmux_team_t *team);

/*
 * Device memory. Where the provider reaches device memory itself (it offers
 * FI_HMEM and accepts the registration: a libfabric built with CUDA), a
 * window or a put source may be device memory, and transfers go to and from
 * it directly. Debian's libfabric cannot: callers then fall back, e.g. to
 * the device API's staged windows (gmux/net_device.h). GMUX_NET_HMEM=0 turns
 * the direct path off.
 */
typedef enum gmux_mem_kind {
    GMUX_MEM_HOST = 0,      /* ordinary host memory */
    GMUX_MEM_CUDA = 1,      /* CUDA device memory of device `device` */
    GMUX_MEM_HOST_HMEM = 2, /* host memory through the provider's HMEM path
                               (FI_HMEM_SYSTEM): the direct path without a GPU, for tests */
} gmux_mem_kind_t;

typedef struct gmux_mem {
    gmux_mem_kind_t kind;
    int device; /* CUDA device ordinal (GMUX_MEM_CUDA) */
} gmux_mem_t;

/* Collective, like gmux_window_register. Registers [base, base+size) of
 * memory *mem as window win, written by the provider directly. On a rank
 * whose provider cannot, fallback (a host buffer of size bytes) is registered
 * instead and *direct_p (may be NULL) is false there; each rank decides for
 * itself, and peers address the window the same way either way. With no
 * fallback, or when any rank's registration failed, every rank's call fails
 * (GMUX_ERR_UNSUPPORTED where nothing else went wrong). */
gmux_status_t gmux_window_register_mem(gmux_comm_t *comm, void *base, size_t size,
                                       const gmux_mem_t *mem, void *fallback, gmux_window_t *win_p,
                                       bool *direct_p);

/* Local. Lets puts take their source from [base, base+size) of memory *mem
 * (device memory the CPU cannot read): the proxy hands the provider the
 * registration, and never copies such a source itself (no inject, no
 * coalescing). GMUX_ERR_UNSUPPORTED where the provider cannot reach it;
 * GMUX_ERR_CAPACITY past 16 ranges. */
gmux_status_t gmux_source_register_mem(gmux_comm_t *comm, void *base, size_t size,
                                       const gmux_mem_t *mem);
gmux_status_t gmux_source_deregister(gmux_comm_t *comm, void *base);

/* How a rank's puts to itself are copied when their source or window is
 * CUDA memory (the proxy executes those itself, in stream order): copy(arg,
 * dst, src, n) returns 0 on success, e.g. a cudaMemcpy. Without one such a
 * put fails with GMUX_ERR_UNSUPPORTED (at the context's next flush or
 * quiet). The device API's handles set it. */
typedef int (*gmux_mem_copy_fn)(void *arg, void *dst, const void *src, size_t n);
void gmux_comm_set_mem_copy(gmux_comm_t *comm, gmux_mem_copy_fn copy, void *arg);

/* The local address of window win, and its size (0 when not registered). */
void *gmux_window_base(gmux_comm_t *comm, gmux_window_t win, size_t *size_p);

#ifdef __cplusplus
}
#endif

#endif /* GMUX_NET_EXT_H */
