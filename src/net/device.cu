/*
 * net device handle for CUDA kernels (libgmux-net-cuda, built only with
 * nvcc): pins and maps the host memory the device API touches, and rewrites
 * the pointers of a host handle (devsvc.c) into device pointers.
 *
 * Thread-safety: create/destroy from one thread per handle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "common/export.h"
#include "net/devstage.h"
#include "net/devsvc.h"

typedef struct dev_map {
    net_devsvc_range_t ranges[NET_DEVSVC_MAX_RANGES];
    char *dev[NET_DEVSVC_MAX_RANGES]; /* device address of each range */
    bool registered[NET_DEVSVC_MAX_RANGES];
    size_t n;
    gmux_dev_ring_t *dev_rings; /* device copy of the rings array */
    cudaStream_t stream;        /* staging copies (staged handles) */
} dev_map_t;

static void dev_unmap(void *arg)
{
    dev_map_t *m = (dev_map_t *)arg;
    if (m->dev_rings)
        cudaFree(m->dev_rings);
    m->dev_rings = NULL;
    for (size_t i = 0; i < m->n; i++)
        if (m->registered[i])
            cudaHostUnregister(m->ranges[i].base);
    m->n = 0;
}

static void dev_release(void *arg)
{
    dev_map_t *m = (dev_map_t *)arg;
    if (m->stream)
        cudaStreamDestroy(m->stream);
    free(m);
}

/* Staging copies: on the handle's own stream, complete when they return. */
static int stage_copy(dev_map_t *m, void *dst, const void *src, size_t n, cudaMemcpyKind kind)
{
    if (cudaMemcpyAsync(dst, src, n, kind, m->stream) != cudaSuccess)
        return -1;
    return cudaStreamSynchronize(m->stream) == cudaSuccess ? 0 : -1;
}

static int stage_d2h(void *arg, void *dst_host, const void *src_dev, size_t n)
{
    return stage_copy((dev_map_t *)arg, dst_host, src_dev, n, cudaMemcpyDeviceToHost);
}

static int stage_h2d(void *arg, void *dst_dev, const void *src_host, size_t n)
{
    return stage_copy((dev_map_t *)arg, dst_dev, src_host, n, cudaMemcpyHostToDevice);
}

/* A rank's puts to itself where device memory is involved (direct windows
 * and sources): any direction, unified addressing tells which. */
static int stage_any(void *arg, void *dst, const void *src, size_t n)
{
    return stage_copy((dev_map_t *)arg, dst, src, n, cudaMemcpyDefault);
}

static void *stage_alloc(void *arg, size_t n)
{
    (void)arg;
    void *p = NULL;
    return cudaHostAlloc(&p, n, cudaHostAllocPortable) == cudaSuccess ? p : NULL;
}

static void stage_free(void *arg, void *p)
{
    (void)arg;
    cudaFreeHost(p);
}

/* The device address of host address p, or NULL when p is in no range. */
template <class T> static T *dev_ptr(const dev_map_t *m, T *p)
{
    for (size_t i = 0; i < m->n; i++) {
        char *b = (char *)m->ranges[i].base;
        if ((char *)p >= b && (char *)p < b + m->ranges[i].size)
            return (T *)(m->dev[i] + ((char *)p - b));
    }
    return NULL;
}

static gmux_status_t cuda_status(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return GMUX_OK;
    fprintf(stderr, "gmux net: %s: %s\n", what, cudaGetErrorString(e));
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
        return GMUX_ERR_UNSUPPORTED;
    return GMUX_ERR_DRIVER;
}

static gmux_status_t create(gmux_comm_t *comm, bool staged, gmux_dev_handle_t *handle_p)
{
    int ndev = 0;
    gmux_status_t st = cuda_status(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
    if (st != GMUX_OK)
        return st;
    if (ndev == 0)
        return GMUX_ERR_UNSUPPORTED;
    dev_map_t *m = (dev_map_t *)calloc(1, sizeof(*m));
    if (!m)
        return GMUX_ERR_NOMEM;
    gmux_dev_handle_t h;
    net_devsvc_t *svc = NULL;
    int cur = 0;
    if ((st = cuda_status(cudaGetDevice(&cur), "cudaGetDevice")) != GMUX_OK) {
        free(m);
        return st;
    }
    /* device windows and sources go direct where the provider reaches CUDA memory */
    net_devstage_copy_t copy = {
        stage_d2h, stage_h2d, stage_alloc, stage_free, m, {GMUX_MEM_CUDA, cur}, stage_any};
    if (staged && (st = cuda_status(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking),
                                    "cudaStreamCreate")) != GMUX_OK) {
        free(m);
        return st;
    }
    if ((st = net_devsvc_start_staged(comm, staged ? &copy : NULL, &h, &svc)) != GMUX_OK) {
        dev_release(m);
        return st;
    }
    net_devsvc_set_unmap(svc, dev_unmap, dev_release, m); /* stop undoes all from here */
    m->n = net_devsvc_ranges(svc, m->ranges, NET_DEVSVC_MAX_RANGES);
    for (size_t i = 0; i < m->n; i++) {
        st = cuda_status(cudaHostRegister(m->ranges[i].base, m->ranges[i].size,
                                          cudaHostRegisterMapped | cudaHostRegisterPortable),
                         "cudaHostRegister");
        if (st != GMUX_OK)
            goto stop_svc;
        m->registered[i] = true;
        void *d = NULL;
        st = cuda_status(cudaHostGetDevicePointer(&d, m->ranges[i].base, 0),
                         "cudaHostGetDevicePointer");
        if (st != GMUX_OK)
            goto stop_svc;
        m->dev[i] = (char *)d;
    }
    {
        size_t nrings = (size_t)h.nctx * (size_t)h.size;
        gmux_dev_ring_t *rings = (gmux_dev_ring_t *)calloc(nrings, sizeof(*rings));
        if (!rings) {
            st = GMUX_ERR_NOMEM;
            goto stop_svc;
        }
        for (size_t i = 0; i < nrings; i++) {
            rings[i].slots = dev_ptr(m, h.rings[i].slots);
            rings[i].tail = dev_ptr(m, h.rings[i].tail);
            rings[i].head = dev_ptr(m, h.rings[i].head);
        }
        st = cuda_status(cudaMalloc((void **)&m->dev_rings, nrings * sizeof(*rings)), "cudaMalloc");
        if (st == GMUX_OK)
            st = cuda_status(
                cudaMemcpy(m->dev_rings, rings, nrings * sizeof(*rings), cudaMemcpyHostToDevice),
                "cudaMemcpy");
        free(rings);
        if (st != GMUX_OK)
            goto stop_svc;
    }
    h.rings = m->dev_rings;
    h.signals = dev_ptr(m, h.signals);
    h.counters = dev_ptr(m, h.counters);
    h.ctx_error = dev_ptr(m, h.ctx_error);
    h.svc = dev_ptr(m, h.svc);
    if (h.sigview)
        h.sigview = dev_ptr(m, h.sigview);
    if (h.peer_dead) {
        h.peer_dead = dev_ptr(m, h.peer_dead);
        h.any_dead = dev_ptr(m, h.any_dead);
    }
    *handle_p = h;
    return GMUX_OK;

stop_svc:
    net_devsvc_stop(svc);
    return st;
}

extern "C" GMUX_API gmux_status_t gmux_dev_handle_create(gmux_comm_t *comm,
                                                         gmux_dev_handle_t *handle_p)
{
    return create(comm, false, handle_p);
}

extern "C" GMUX_API gmux_status_t gmux_dev_handle_create_staged(gmux_comm_t *comm,
                                                                gmux_dev_handle_t *handle_p)
{
    return create(comm, true, handle_p);
}
