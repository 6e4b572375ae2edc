/*
 * Windows and device-memory sources: registering memory with the provider,
 * the collective that exchanges every rank's address and key, and
 * deregistration; split from comm.c (the communicator's join and finalize).
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/export.h"
#include "common/log.h"
#include "common/settings.h"
#include "net/internal.h"

static uint64_t timeout_ns(const gmux_comm_t *comm)
{
    return (uint64_t)(net_timeout_s(comm) * 1e9);
}

/* Registers base with the provider as memory *mem (NULL: host) under key_req;
 * GMUX_ERR_UNSUPPORTED where the provider cannot reach that memory. */
static gmux_status_t mem_reg(gmux_comm_t *comm, void *base, size_t size, const gmux_mem_t *mem,
                             uint64_t key_req, struct fid_mr **mr_p, uint64_t *key_p, void **desc_p)
{
    *desc_p = NULL;
    if (!mem || mem->kind == GMUX_MEM_HOST)
        return net_fab_mr_reg(&comm->fab, base, size, key_req, mr_p, key_p);
    if (mem->kind != GMUX_MEM_CUDA && mem->kind != GMUX_MEM_HOST_HMEM)
        return GMUX_ERR_INVALID;
    if (mem->kind == GMUX_MEM_CUDA &&
        !net_fab_cuda_direct(&comm->fab, COM_SETTING_BOOL(NET_SHM_CUDA_DIRECT))) {
        if (comm->fab.hmem)
            COM_INFO(NET, "%s: CUDA memory is staged (GMUX_NET_SHM_CUDA_DIRECT=1: direct)",
                     comm->fab.prov_name);
        return GMUX_ERR_UNSUPPORTED;
    }
    enum fi_hmem_iface iface = mem->kind == GMUX_MEM_CUDA ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
    return net_fab_mr_reg_hmem(&comm->fab, base, size, iface, mem->device, key_req, mr_p, key_p,
                               desc_p);
}

/* The collective behind both window registrations: this rank registers base
 * as *mem, or fallback (host) where that is unsupported; every rank learns
 * the others' addresses, keys, sizes and outcomes, and all fail together:
 * a rank with a bad argument or no free window still takes part in the
 * exchange, so that no rank waits for it until the timeout. */
static gmux_status_t window_register(gmux_comm_t *comm, gmux_status_t local, void *base,
                                     size_t size, const gmux_mem_t *mem, void *fallback,
                                     gmux_window_t *win_p, bool *direct_p)
{
    if (!comm)
        return GMUX_ERR_INVALID;
    int w = 0;
    while (w < NET_MAX_WINDOWS && comm->win[w].used)
        w++;
    gmux_status_t st = GMUX_OK;
    net_win_t *win = NULL;
    if (local != GMUX_OK)
        st = local; /* failed before: only announces it */
    else if ((!base && size) || !win_p)
        st = GMUX_ERR_INVALID;
    else if (w == NET_MAX_WINDOWS)
        st = GMUX_ERR_CAPACITY;
    else
        win = &comm->win[w];
    if (win) {
        win->raddr = calloc((size_t)comm->size, sizeof(uint64_t));
        win->key = calloc((size_t)comm->size, sizeof(uint64_t));
        if (!win->raddr || !win->key)
            st = GMUX_ERR_NOMEM;
    }
    bool direct = mem && mem->kind != GMUX_MEM_HOST;
    uint64_t key = 0;
    void *desc;
    if (st == GMUX_OK && direct && !comm->have_fab)
        st = GMUX_ERR_UNSUPPORTED; /* nothing reaches it but this rank's own copies */
    if (st == GMUX_OK && comm->have_fab && (st = net_progress_lock(comm)) == GMUX_OK) {
        st = mem_reg(comm, base, size ? size : 1, mem, (uint64_t)w + 1, &win->mr, &key, &desc);
        pthread_mutex_unlock(&comm->progress_lock);
        if (st != GMUX_OK)
            win->mr = NULL;
    }
    if (st == GMUX_ERR_UNSUPPORTED && direct && fallback) {
        direct = false;
        base = fallback;
        st = GMUX_OK;
        if (comm->have_fab && (st = net_progress_lock(comm)) == GMUX_OK) {
            st = mem_reg(comm, base, size ? size : 1, NULL, (uint64_t)w + 1, &win->mr, &key, &desc);
            pthread_mutex_unlock(&comm->progress_lock);
            if (st != GMUX_OK)
                win->mr = NULL;
        }
    }
    /* address, key, size, outcome */
    uint64_t mine[4] = {comm->have_fab && comm->fab.virt_addr ? (uint64_t)(uintptr_t)base : 0, key,
                        size, (uint64_t)(-(int64_t)st)};
    uint64_t *all = NULL;
    if (comm->boot) {
        gmux_status_t xs = net_boot_allgather(comm->boot, mine, sizeof(mine), (void **)&all,
                                              com_deadline_after_ns(timeout_ns(comm)));
        if (xs != GMUX_OK)
            st = xs;
    }
    for (int r = 0; all && r < comm->size; r++) {
        if (st == GMUX_OK && all[4 * r + 3] != 0)
            st = (gmux_status_t)(-(int64_t)all[4 * r + 3]); /* that rank's failure */
        if (st == GMUX_OK && all[4 * r + 2] != size)
            st = GMUX_ERR_INVALID; /* not symmetric */
        if (win && win->raddr) {
            win->raddr[r] = all[4 * r];
            win->key[r] = all[4 * r + 1];
        }
    }
    free(all);
    if (st != GMUX_OK)
        goto undo;
    if (!comm->boot) {
        win->raddr[comm->rank] = mine[0];
        win->key[comm->rank] = mine[1];
    }
    win->base = base;
    win->size = size;
    win->mem = (uint8_t)(direct ? mem->kind : GMUX_MEM_HOST);
    win->used = true;
    *win_p = (gmux_window_t)w;
    if (direct_p)
        *direct_p = direct;
    return GMUX_OK;
undo:
    if (win) {
        if (win->mr)
            fi_close(&win->mr->fid);
        win->mr = NULL;
        free(win->raddr);
        free(win->key);
        win->raddr = win->key = NULL;
    }
    return st;
}

GMUX_API gmux_status_t gmux_window_register(gmux_comm_t *comm, void *base, size_t size,
                                            gmux_window_t *win_p)
{
    return window_register(comm, GMUX_OK, base, size, NULL, NULL, win_p, NULL);
}

gmux_status_t net_window_register_failed(gmux_comm_t *comm, size_t size, gmux_status_t why)
{
    gmux_window_t unused;
    gmux_status_t st = window_register(comm, why, NULL, size, NULL, NULL, &unused, NULL);
    return st != GMUX_OK ? st : why;
}

GMUX_API gmux_status_t gmux_window_register_mem(gmux_comm_t *comm, void *base, size_t size,
                                                const gmux_mem_t *mem, void *fallback,
                                                gmux_window_t *win_p, bool *direct_p)
{
    if (!mem) /* still part of the collective, as every failure before it */
        return comm ? net_window_register_failed(comm, size, GMUX_ERR_INVALID) : GMUX_ERR_INVALID;
    return window_register(comm, GMUX_OK, base, size, mem, fallback, win_p, direct_p);
}

GMUX_API gmux_status_t gmux_source_register_mem(gmux_comm_t *comm, void *base, size_t size,
                                                const gmux_mem_t *mem)
{
    if (!comm || !base || size == 0 || !mem || mem->kind == GMUX_MEM_HOST)
        return GMUX_ERR_INVALID;
    if (!comm->have_fab)
        return GMUX_ERR_UNSUPPORTED;
    gmux_status_t st = net_progress_lock(comm);
    if (st != GMUX_OK)
        return st;
    st = GMUX_ERR_CAPACITY;
    if (comm->nhsrc < NET_MAX_HSRC) {
        net_hsrc_t h = {.base = (uint64_t)(uintptr_t)base, .size = size, .mem = (uint8_t)mem->kind};
        uint64_t key;
        /* sources are never addressed remotely; keys past the windows' and scratch's */
        st = mem_reg(comm, base, size, mem, NET_MAX_WINDOWS + 2 + comm->hsrc_keys++, &h.mr, &key,
                     &h.desc);
        if (st == GMUX_OK)
            comm->hsrc[comm->nhsrc++] = h;
    }
    pthread_mutex_unlock(&comm->progress_lock);
    return st;
}

GMUX_API gmux_status_t gmux_source_deregister(gmux_comm_t *comm, void *base)
{
    if (!comm || !base)
        return GMUX_ERR_INVALID;
    /* under the lock: the proxy posts from it only while holding it, and
     * what it posted earlier completes before the caller's flush returns */
    gmux_status_t st = net_progress_lock(comm);
    if (st != GMUX_OK)
        return st;
    st = GMUX_ERR_NOT_FOUND;
    for (uint32_t i = 0; i < comm->nhsrc && st != GMUX_OK; i++) {
        if (comm->hsrc[i].base == (uint64_t)(uintptr_t)base) {
            fi_close(&comm->hsrc[i].mr->fid);
            comm->hsrc[i] = comm->hsrc[--comm->nhsrc];
            st = GMUX_OK;
        }
    }
    pthread_mutex_unlock(&comm->progress_lock);
    return st;
}

GMUX_API void gmux_comm_set_mem_copy(gmux_comm_t *comm, gmux_mem_copy_fn copy, void *arg)
{
    if (!comm)
        return;
    net_progress_lock_wait(comm); /* returns nothing: must not go on without it */
    comm->mem_copy = copy;
    comm->mem_copy_arg = arg;
    pthread_mutex_unlock(&comm->progress_lock);
}

GMUX_API gmux_status_t gmux_window_deregister(gmux_comm_t *comm, gmux_window_t w)
{
    if (!comm || w >= NET_MAX_WINDOWS || !comm->win[w].used)
        return GMUX_ERR_INVALID;
    gmux_status_t st = gmux_barrier(&comm->world);
    gmux_status_t locked = net_progress_lock(comm);
    if (locked != GMUX_OK)
        return locked; /* still registered: the caller may try again */
    net_win_t *win = &comm->win[w];
    if (win->mr)
        fi_close(&win->mr->fid);
    free(win->raddr);
    free(win->key);
    memset(win, 0, sizeof(*win));
    pthread_mutex_unlock(&comm->progress_lock);
    return st;
}
