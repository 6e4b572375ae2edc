/*
 * net_devstage: device-memory windows staged through pinned host memory,
 * for providers that cannot reach GPU memory (Debian's libfabric has no CUDA
 * HMEM). Part of the device handle's service thread (devsvc.c); needs no
 * CUDA itself: the copies and pinned allocations come as callbacks
 * (device.cu passes cudaMemcpyAsync on its own stream + synchronise; tests
 * pass memcpy).
 *
 * How it keeps the net core's guarantees without touching the proxy:
 *   source  kernels of a staged handle write descriptors into staging rings
 *           (same format, same ring code) instead of the comm's rings; the
 *           service thread forwards them in order, one ring per (ctx, peer),
 *           so stream order is kept. A put whose source lies in a registered
 *           device window is copied device-to-host into a pinned bounce
 *           arena first and forwarded with the bounce address (D2H before
 *           the send). Source ranges are registered apart from target
 *           windows (net_devstage_source_register) and never copied back. The arena is recycled
 * after a flush of every context. target  a device window is a device buffer plus a pinned host
 * shadow; the shadow is what the comm registers, so remote data lands there. Kernels of a staged
 * handle read signals from a mirror: when the service thread sees comm signal words change, it
 * first copies every staged window host-to-device (and waits for the copy), then publishes the new
 * values in the mirror. A kernel therefore sees a signal only after the data it covers is in device
 * memory (H2D before the signal is applied). Costs and limits: one extra hop per operation; the
 * target copies whole windows when signals change, so windows should be receive buffers that
 * kernels do not write locally (a local write would be overwritten by the
 * next copy); sources live in source ranges.
 *
 * Direct: where the provider reaches the device memory itself (FI_HMEM, a
 * libfabric built with CUDA; copy->mem says what it is), a window is that
 * memory, registered as such (no shadow, no copy), and a source range is
 * registered with the comm (no bounce). Each is decided for itself, by a
 * local probe before the collective, so a peer's data never lands before
 * this rank knows which way it comes. Kernels still read signals from the
 * mirror, which stays correct: direct data is in device memory before its
 * signal is applied.
 *
 * Ownership: create allocates; destroy frees (windows are deregistered by
 * the caller before, collectively).
 * LOCKING: stage->lock guards the window table (registration vs the service
 * thread) and is held across staging copies and the arena's recycling flush.
 * Lock order: stage->lock, then the comm's progress_lock (never the reverse;
 * the proxy never takes stage->lock).
 * Thread-safety: forward/mirror from the service thread only;
 * window_register from the thread that owns the handle (collective).
 */
#ifndef NET_DEVSTAGE_H
#define NET_DEVSTAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/net_device.h>
#include <gmux/net_ext.h>

#include "net/devsvc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct net_devstage_copy {
    /* synchronous copies; return 0 on success */
    int (*d2h)(void *arg, void *dst_host, const void *src_dev, size_t n);
    int (*h2d)(void *arg, void *dst_dev, const void *src_host, size_t n);
    void *(*host_alloc)(void *arg, size_t n); /* pinned, page aligned */
    void (*host_free)(void *arg, void *p);
    void *arg;
    /* What the device memory is to the provider: windows and sources it
     * reaches (FI_HMEM) are registered directly, neither copied nor
     * bounced; GMUX_MEM_HOST (zero): always staged. */
    gmux_mem_t mem;
    /* any direction (a rank's puts to itself between direct memory); may be NULL */
    int (*copy)(void *arg, void *dst, const void *src, size_t n);
} net_devstage_copy_t;

typedef struct net_devstage net_devstage_t;

gmux_status_t net_devstage_create(gmux_comm_t *comm, const net_devstage_copy_t *copy,
                                  size_t arena_bytes, net_devstage_t **stage_p);
void net_devstage_destroy(net_devstage_t *stage);

/* Points the handle's rings at the staging rings and its sigview at the
 * mirror (host pointers). */
void net_devstage_fill(net_devstage_t *stage, gmux_dev_handle_t *h);

/* Adds the memory a device must reach (staging rings, mirror) to out[n..). */
size_t net_devstage_ranges(const net_devstage_t *stage, net_devsvc_range_t *out, size_t n,
                           size_t max);

/* Collective. A rank that fails before the exchange (a bad argument, no
 * shadow, a full table) still takes part in it, announcing its failure: the
 * registration then fails on every rank. */
gmux_status_t net_devstage_window_register(net_devstage_t *stage, void *dev_base, size_t size,
                                           gmux_window_t *win_p);
gmux_status_t net_devstage_window_deregister(net_devstage_t *stage, gmux_window_t win);

/* A device range puts may take their source from (staged D2H). Local,
 * not collective. */
gmux_status_t net_devstage_source_register(net_devstage_t *stage, void *dev_base, size_t size);
gmux_status_t net_devstage_source_deregister(net_devstage_t *stage, void *dev_base);

/* 1: the window or source registered at dev_base goes direct, 0: staged,
 * -1: none is registered there. */
int net_devstage_is_direct(net_devstage_t *stage, const void *dev_base);

/* Forwards complete descriptors; with drain, until every ticket claimed
 * before the call is forwarded (bounded by the comm's timeout). Returns the
 * number forwarded, or a negative status. */
int net_devstage_forward(net_devstage_t *stage, bool drain);

/* Copies windows and publishes changed signals; returns 1 when it did. */
int net_devstage_mirror(net_devstage_t *stage);

#ifdef __cplusplus
}
#endif

#endif /* NET_DEVSTAGE_H */
