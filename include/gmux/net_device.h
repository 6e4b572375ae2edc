/*
 * gmux net device handle: what a CUDA kernel needs to issue gmux operations
 * itself (include/gmux/net_device.cuh), as one plain struct passed to the
 * kernel by value.
 *
 * The handle points at the communicator's own descriptor rings, signal words,
 * counters and per-context error words, plus a small service mailbox; kernels
 * write descriptors into the same rings, in the same format, as CPU threads
 * calling include/gmux/net.h, and the same proxy executes them.
 *
 * Two ways to make one:
 *   gmux_dev_handle_create       (libgmux-net-cuda, built only with nvcc)
 *                                pins and maps that memory into the device
 *                                (cudaHostRegister + cudaHostGetDevicePointer);
 *                                the pointers in the handle are device pointers.
 *   gmux_dev_handle_create_host  (libgmux-net, no CUDA) the same handle with
 *                                host pointers: the functions of
 *                                net_device.cuh compiled as host code then run
 *                                on CPU threads (tests, CPU fallback).
 * Both start a service thread (see below); destroy stops it. Destroy every
 * handle before gmux_comm_finalize. At most one CUDA-mapped handle per
 * communicator at a time (the pages are registered once); the registration
 * pins whole pages, so the application must not cudaHostRegister memory that
 * shares a page with the communicator's internals.
 *
 * Service thread. A GPU cannot wake a sleeping proxy or run a flush. The
 * thread (a) drives progress while a kernel waits (it counts itself as a
 * waiter in the mailbox) or while descriptors are pending, so a kernel's
 * round trip does not pay the proxy's idle sleep; (b) serves flush and quiet
 * requests: a kernel bumps a request word, the thread calls gmux_flush or
 * gmux_quiet on that context and then publishes the request number as done.
 *
 * Thread-safety: create/destroy from one thread per handle; the handle itself
 * is read-only data and may be copied into any number of kernels.
 */
#ifndef GMUX_NET_DEVICE_H
#define GMUX_NET_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/net.h>
#include <gmux/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Service mailbox words (uint64 each). Per context c, 8 words from
 * GMUX_DEV_SVC_CTX0 + 8c; the status words hold the gmux_status_t of the
 * most recently completed request of that kind (two's complement). */
#define GMUX_DEV_SVC_WAITERS      0 /* kernels waiting now (they drive no progress) */
#define GMUX_DEV_SVC_CTX0         8
#define GMUX_DEV_SVC_CTX_WORDS    8
#define GMUX_DEV_SVC_FLUSH_REQ    0 /* flush requests issued (device: atomic add) */
#define GMUX_DEV_SVC_FLUSH_DONE   1 /* flush requests completed (service thread) */
#define GMUX_DEV_SVC_FLUSH_STATUS 2
#define GMUX_DEV_SVC_QUIET_REQ    3
#define GMUX_DEV_SVC_QUIET_DONE   4
#define GMUX_DEV_SVC_QUIET_STATUS 5

/* One ring as the device sees it (see src/net/ring.h for the protocol). */
typedef struct gmux_dev_ring {
    uint64_t *slots; /* nslots * 8 words */
    uint64_t *tail;  /* producers' next ticket (claimed with a system-scope CAS) */
    uint64_t *head;  /* consumer index, written by the proxy */
    /* Hints kept beside this struct (device memory for a device handle), so a
     * producer crosses the bus once per push, for the claim itself: the tail
     * the last claim left (a guess for the CAS; a wrong one just fails it) and
     * the highest head a producer has read (head only grows, so a stale value
     * only makes a ring look fuller than it is). Start at 0. */
    uint64_t tail_hint;
    uint64_t head_hint;
} gmux_dev_ring_t;

typedef struct gmux_dev_handle {
    int32_t rank, size;
    uint32_t nctx, nsig, ncnt, nslots;
    uint32_t sig_base;         /* added to a user signal id in a descriptor (the
                                * proxy's own signal words come first) */
    uint32_t claim_backoff_ns; /* a claim that lost its CAS twice sleeps a random
                                * share of this, doubling per further loss (up
                                * to 256x); 0: retries at once (GMUX_NET_DEV_BACKOFF_NS) */
    uint64_t timeout_ns;       /* default timeout of waits and of a full ring */
    gmux_dev_ring_t *rings;    /* [ctx * size + peer] */
    uint64_t *signals;         /* nsig words, applied by the proxy */
    uint64_t *counters;        /* ncnt words, bumped by the proxy */
    int32_t *ctx_error;        /* per ctx: first failure since the last flush/quiet */
    uint64_t *svc;             /* service mailbox */
    void *host;                /* host-side state (opaque, for destroy) */
    uint64_t *sigview;         /* staged handles: the mirror kernels read signals
                                * from (NULL: read `signals` directly) */
    uint64_t *claim_stats;     /* NULL, or two words the claims add to (relaxed):
                                * [0] claims made, [1] compare-and-swaps they lost
                                * (cas) or claims that waited for their slots (faa);
                                * set by the application to measure contention */
    uint32_t claim_mode;       /* GMUX_DEV_CLAIM_CAS or _FAA (GMUX_NET_DEV_CLAIM) */
    uint32_t host_progress;    /* 1: CPU threads calling the thread forms post
                                * and receive themselves (gmux_dev_progress), as
                                * with the host API; kernels never do
                                * (GMUX_NET_DEV_HOST_PROGRESS; 0 for staged handles) */
    /* The bootstrap's death flags (one byte each, nonzero once the rank's
     * death was announced; any_dead once any was), set by whichever thread
     * of the rank reads the notice: device operations to a dead rank fail
     * with GMUX_ERR_PEER, and waits once any rank died, without waiting for
     * the proxy. NULL without a bootstrap (nobody can die). */
    const uint8_t *peer_dead;
    const uint8_t *any_dead;
} gmux_dev_handle_t;

/* How device producers claim ring slots (docs/net-device.md):
 *   CAS  compare-and-swap on the tail: never claims a slot that is not free,
 *        so a claim that gives up (full ring, timeout) leaves nothing behind;
 *        contended, each winner costs every other producer a failed atomic.
 *   FAA  fetch-and-add on the tail once the hints show room: one atomic per
 *        claim whatever the contention; a producer that raced past the free
 *        slots waits for its own. If that wait times out, the ticket is
 *        abandoned and the ring stalls at it (the context's error word then
 *        says GMUX_ERR_TIMEOUT): only a job whose proxy freed no slot for the
 *        whole timeout gets there. Experimental: the GPU check compares both. */
#define GMUX_DEV_CLAIM_CAS 0u
#define GMUX_DEV_CLAIM_FAA 1u

/* Handle with host pointers (no CUDA needed). */
gmux_status_t gmux_dev_handle_create_host(gmux_comm_t *comm, gmux_dev_handle_t *handle_p);

/* Handle with device pointers: pins and maps the rings, signals, counters
 * and mailbox for the current CUDA device. GMUX_ERR_UNSUPPORTED where the
 * library was built without CUDA or no device is present. */
gmux_status_t gmux_dev_handle_create(gmux_comm_t *comm, gmux_dev_handle_t *handle_p);

/* Staged handle (CUDA): as gmux_dev_handle_create, plus device-memory
 * windows and put sources (see docs/net-device.md). Where the provider
 * reaches CUDA memory (FI_HMEM), each goes direct: registered as device
 * memory, nothing copied. Elsewhere it is staged through pinned host memory:
 * kernel descriptors go through staging rings that the service thread
 * forwards in order, copying device sources to pinned bounce buffers first;
 * signals reach kernels only after the windows' data was copied to the
 * device. */
gmux_status_t gmux_dev_handle_create_staged(gmux_comm_t *comm, gmux_dev_handle_t *handle_p);

/* Registers device memory [dev_base, dev_base+size) as a window of a staged
 * handle's communicator. Collective, like gmux_window_register. Kernels read
 * the window in device memory. Direct, remote puts land there; staged, they
 * land in its pinned shadow and are copied to the device before the signal
 * that covers them becomes visible to kernels. Write the window only through
 * remote puts (staged, a local write is overwritten by the next copy); keep
 * put sources in source ranges. */
gmux_status_t gmux_dev_window_register(gmux_dev_handle_t *handle, void *dev_base, size_t size,
                                       gmux_window_t *win_p);
gmux_status_t gmux_dev_window_deregister(gmux_dev_handle_t *handle, gmux_window_t win);

/* Registers device memory kernels may pass as the source of a put on a
 * staged handle (direct: read by the provider; staged: copied to a pinned
 * bounce buffer by the service thread, on its own stream, before the write
 * is posted). Local, not collective. Deregistering a direct range flushes
 * every context first. */
gmux_status_t gmux_dev_source_register(gmux_dev_handle_t *handle, void *dev_base, size_t size);
gmux_status_t gmux_dev_source_deregister(gmux_dev_handle_t *handle, void *dev_base);

/* Which way the window or source registered at dev_base on a staged handle
 * goes: 1 direct (the provider reaches the device memory), 0 staged through
 * pinned host memory, -1 nothing registered there (or not a staged handle). */
int gmux_dev_is_direct(const gmux_dev_handle_t *handle, const void *dev_base);

/* For CPU threads only: one progress pass of the handle's communicator
 * (posts what the rings hold, reads completions), unless another thread is
 * progressing (-1). The thread forms call it when compiled as host code and
 * the handle's host_progress is set: after a push, and while they wait for
 * a signal or counter, so a CPU thread needs no hand-off to the service
 * thread. Returns the work done. */
int gmux_dev_progress(const gmux_dev_handle_t *handle);

/* Stops the service thread and unmaps what create mapped. */
void gmux_dev_handle_destroy(gmux_dev_handle_t *handle);

#ifdef __cplusplus
}
#endif

#endif /* GMUX_NET_DEVICE_H */
