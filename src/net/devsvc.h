/*
 * net_devsvc: the host side of the device API (include/gmux/net_device.h).
 *
 * Owns the service mailbox and the service thread of one device handle, and
 * knows which host memory a device must reach (the comm's rings, signals,
 * counters and context error words, plus the mailbox). It needs no CUDA:
 * src/net/device.cu (built only with nvcc) maps the ranges listed here into
 * the device and rewrites the handle's pointers.
 *
 * Written to be included from C and from CUDA C++ (no C11 atomics here).
 *
 * Ownership: net_devsvc_start allocates; net_devsvc_stop frees (after calling
 * the unmap hook, if one was set).
 * Thread-safety: start/stop from one thread; the service thread is internal.
 */
#ifndef NET_DEVSVC_H
#define NET_DEVSVC_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/net_device.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NET_DEVSVC_MAX_RANGES 4096

/* A block of host memory the device must reach. */
typedef struct net_devsvc_range {
    void *base;
    size_t size;
} net_devsvc_range_t;

typedef struct net_devsvc net_devsvc_t;

/* Allocates the mailbox, fills *handle_p with host pointers (rings array
 * included) and starts the service thread. */
gmux_status_t net_devsvc_start(gmux_comm_t *comm, gmux_dev_handle_t *handle_p,
                               net_devsvc_t **svc_p);

/* The same with device-memory windows staged through pinned memory
 * (devstage.h); copy NULL: not staged. */
struct net_devstage_copy;
gmux_status_t net_devsvc_start_staged(gmux_comm_t *comm, const struct net_devstage_copy *copy,
                                      gmux_dev_handle_t *handle_p, net_devsvc_t **svc_p);

/* Bytes of pinned bounce memory for device sources of a staged handle. */
#define NET_DEVSTAGE_ARENA (8u << 20)

/* The host memory behind the handle's pointers, page-rounded, sorted and
 * merged (no two ranges share a page). Returns the number of ranges. */
size_t net_devsvc_ranges(const net_devsvc_t *svc, net_devsvc_range_t *out, size_t max);

/* Hooks of stop: unmap runs before anything is freed (device.cu:
 * unregister), release last (after the staging copies' memory is freed). */
void net_devsvc_set_unmap(net_devsvc_t *svc, void (*unmap)(void *arg), void (*release)(void *arg),
                          void *arg);

void net_devsvc_stop(net_devsvc_t *svc);

#ifdef __cplusplus
}
#endif

#endif /* NET_DEVSVC_H */
