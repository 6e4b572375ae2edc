/* net_devsvc: see devsvc.h. */
#include "net/devsvc.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/export.h"
#include "common/log.h"
#include "common/settings.h"
#include "net/boot.h"
#include "net/devstage.h"
#include "net/internal.h"

#define SVC_PAGE      4096u
#define SVC_SPIN      256u
#define SVC_YIELD     512u
#define SVC_BUSY_SPIN 4u            /* empty passes while a kernel waits before each yield */
#define SVC_SLEEP_NS  (50u * 1000u) /* longest idle sleep: bounds a kernel's first-op latency */

struct net_devsvc {
    gmux_comm_t *comm;
    _Atomic uint64_t *mbox; /* the mailbox, SVC_PAGE aligned */
    size_t mbox_bytes;
    gmux_dev_ring_t *rings; /* host pointers */
    pthread_t thread;
    bool running;
    _Atomic bool stop;
    void (*unmap)(void *arg);
    void (*release)(void *arg);
    void *unmap_arg;
    net_devstage_t *stage; /* staged handles only */
};

/* The device API reads the bootstrap's death flags as bytes, nonzero when set */
_Static_assert(sizeof(_Atomic bool) == sizeof(uint8_t), "a death flag is one byte");

static _Atomic uint64_t *ctx_word(net_devsvc_t *s, uint32_t ctx, int word)
{
    return &s->mbox[GMUX_DEV_SVC_CTX0 + GMUX_DEV_SVC_CTX_WORDS * ctx + (uint32_t)word];
}

/* Serves pending flush (or quiet) requests of ctx; returns whether it did. */
static bool serve(net_devsvc_t *s, uint32_t ctx, int req_w, int done_w, int status_w, bool quiet)
{
    uint64_t req = atomic_load_explicit(ctx_word(s, ctx, req_w), memory_order_acquire);
    if (req == atomic_load_explicit(ctx_word(s, ctx, done_w), memory_order_relaxed))
        return false;
    if (s->stage) /* the requesters' staged descriptors go first */
        net_devstage_forward(s->stage, true);
    /* every descriptor the requesters pushed before their request is in the
     * rings now, so the host call covers them (and possibly more) */
    gmux_status_t st = quiet ? gmux_quiet(s->comm, ctx) : gmux_flush(s->comm, ctx);
    atomic_store_explicit(ctx_word(s, ctx, status_w), (uint64_t)(int64_t)st, memory_order_relaxed);
    atomic_store_explicit(ctx_word(s, ctx, done_w), req, memory_order_release);
    return true;
}

/* One progress pass for the device side; when another thread holds the
 * progress lock, it reads death notices (and runs the shm guard) as a
 * waiting host thread does: that holder may be stuck behind a dead rank,
 * and the device side learns of deaths from the notices alone. */
static int svc_progress(gmux_comm_t *comm)
{
    int work = net_progress_poll(comm);
    if (work >= 0)
        return work;
    net_progress_blocked(comm);
    return 0;
}

static bool rings_busy(gmux_comm_t *comm)
{
    uint32_t nrings = comm->nctx * (uint32_t)comm->size;
    for (uint32_t i = 0; i < nrings; i++)
        if (net_ring_pending(&comm->rings[i]))
            return true;
    return false;
}

static void *svc_main(void *arg)
{
    net_devsvc_t *s = arg;
    gmux_comm_t *comm = s->comm;
    unsigned idle = 0, busy_idle = 0;
    uint64_t sleep_ns = 1000;
    while (!atomic_load_explicit(&s->stop, memory_order_acquire)) {
        bool work = false;
        for (uint32_t c = 0; c < comm->nctx; c++) {
            work |= serve(s, c, GMUX_DEV_SVC_FLUSH_REQ, GMUX_DEV_SVC_FLUSH_DONE,
                          GMUX_DEV_SVC_FLUSH_STATUS, false);
            work |= serve(s, c, GMUX_DEV_SVC_QUIET_REQ, GMUX_DEV_SVC_QUIET_DONE,
                          GMUX_DEV_SVC_QUIET_STATUS, true);
        }
        if (s->stage) {
            work |= net_devstage_forward(s->stage, false) > 0;
            work |= net_devstage_mirror(s->stage) > 0;
        }
        bool waiting =
            atomic_load_explicit(&s->mbox[GMUX_DEV_SVC_WAITERS], memory_order_acquire) != 0;
        if (waiting || rings_busy(comm)) {
            /* a kernel waits or pushed: drive progress like a waiting CPU
             * thread, spinning while it does, but yielding after a run of
             * passes that found nothing: on a machine with no core to spare
             * a thread that never yields keeps the ones that would make
             * progress (the peer's, the producer's) off the CPU for whole
             * time slices */
            if (svc_progress(comm) > 0 || work) {
                busy_idle = 0;
            } else if (++busy_idle > SVC_BUSY_SPIN) {
                sched_yield();
            }
            idle = 0;
            sleep_ns = 1000;
            continue;
        }
        busy_idle = 0;
        if (work) {
            idle = 0;
            sleep_ns = 1000;
            continue;
        }
        idle++;
        if (idle < SVC_SPIN)
            continue;
        if (idle < SVC_YIELD) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, (long)sleep_ns};
        nanosleep(&ts, NULL);
        sleep_ns = sleep_ns * 2 > SVC_SLEEP_NS ? SVC_SLEEP_NS : sleep_ns * 2;
    }
    return NULL;
}

gmux_status_t net_devsvc_start(gmux_comm_t *comm, gmux_dev_handle_t *handle_p, net_devsvc_t **svc_p)
{
    return net_devsvc_start_staged(comm, NULL, handle_p, svc_p);
}

gmux_status_t net_devsvc_start_staged(gmux_comm_t *comm, const net_devstage_copy_t *copy,
                                      gmux_dev_handle_t *handle_p, net_devsvc_t **svc_p)
{
    if (!comm || !handle_p || !svc_p)
        return GMUX_ERR_INVALID;
    gmux_status_t st = GMUX_ERR_NOMEM;
    net_devsvc_t *s = calloc(1, sizeof(*s));
    if (!s)
        goto fail;
    s->comm = comm;
    s->mbox_bytes =
        (GMUX_DEV_SVC_CTX0 + (size_t)GMUX_DEV_SVC_CTX_WORDS * comm->nctx) * sizeof(uint64_t);
    s->mbox_bytes = (s->mbox_bytes + SVC_PAGE - 1) & ~(size_t)(SVC_PAGE - 1);
    void *mbox = NULL;
    if (posix_memalign(&mbox, SVC_PAGE, s->mbox_bytes) != 0)
        goto free_svc;
    memset(mbox, 0, s->mbox_bytes);
    s->mbox = mbox;
    uint32_t nrings = comm->nctx * (uint32_t)comm->size;
    s->rings = calloc(nrings, sizeof(*s->rings));
    if (!s->rings)
        goto free_mbox;
    for (uint32_t i = 0; i < nrings; i++) {
        s->rings[i].slots = (uint64_t *)comm->rings[i].slots;
        s->rings[i].tail = (uint64_t *)comm->rings[i].tail;
        s->rings[i].head = (uint64_t *)comm->rings[i].head;
    }
    if (copy && (st = net_devstage_create(comm, copy, NET_DEVSTAGE_ARENA, &s->stage)) != GMUX_OK)
        goto free_rings;
    if (pthread_create(&s->thread, NULL, svc_main, s) != 0) {
        st = GMUX_ERR_STATE;
        goto destroy_stage;
    }
    s->running = true;
    int64_t backoff_ns = COM_SETTING_INT(NET_DEV_BACKOFF_NS);
    backoff_ns = backoff_ns < 0 ? 0 : backoff_ns > 1000000 ? 1000000 : backoff_ns;
    const char *claim = COM_SETTING_STRING(NET_DEV_CLAIM);
    uint32_t claim_mode = GMUX_DEV_CLAIM_CAS;
    if (strcmp(claim, "faa") == 0)
        claim_mode = GMUX_DEV_CLAIM_FAA;
    else if (strcmp(claim, "cas") != 0)
        COM_WARN(NET, "GMUX_NET_DEV_CLAIM=%s: not cas or faa; using cas", claim);
    gmux_dev_handle_t h = {
        .rank = comm->rank,
        .size = comm->size,
        .nctx = comm->nctx,
        .nsig = comm->nsig,
        .ncnt = comm->ncnt,
        .nslots = comm->ring_slots,
        .sig_base = NET_SIG_RESERVED,
        .claim_backoff_ns = (uint32_t)backoff_ns,
        .timeout_ns = (uint64_t)(net_timeout_s(comm) * 1e9),
        .rings = s->rings,
        .signals = (uint64_t *)&comm->signals[NET_SIG_RESERVED],
        .counters = (uint64_t *)comm->counters,
        .ctx_error = (int32_t *)comm->ctx_error,
        .svc = (uint64_t *)s->mbox,
        .host = s,
        .claim_mode = claim_mode,
        /* staged descriptors are forwarded by the service thread alone */
        .host_progress = !s->stage && COM_SETTING_BOOL(NET_DEV_HOST_PROGRESS),
        /* the bootstrap's own flags, set by whichever thread reads a death
         * notice: no copy that a stuck thread would have to make */
        .peer_dead = comm->boot ? (const uint8_t *)comm->boot->dead : NULL,
        .any_dead = comm->boot ? (const uint8_t *)&comm->boot->any_dead : NULL,
    };
    if (s->stage)
        net_devstage_fill(s->stage, &h);
    *handle_p = h;
    *svc_p = s;
    return GMUX_OK;

destroy_stage:
    net_devstage_destroy(s->stage);
free_rings:
    free(s->rings);
free_mbox:
    free(mbox);
free_svc:
    free(s);
fail:
    return st;
}

static int range_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const net_devsvc_range_t *)a)->base;
    uintptr_t y = (uintptr_t)((const net_devsvc_range_t *)b)->base;
    return x < y ? -1 : x > y;
}

static size_t add_range(net_devsvc_range_t *out, size_t n, size_t max, const void *p, size_t size)
{
    if (n >= max || !p || size == 0)
        return n;
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(SVC_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + size + SVC_PAGE - 1) & ~(uintptr_t)(SVC_PAGE - 1);
    out[n].base = (void *)lo;
    out[n].size = hi - lo;
    return n + 1;
}

size_t net_devsvc_ranges(const net_devsvc_t *s, net_devsvc_range_t *out, size_t max)
{
    const gmux_comm_t *comm = s->comm;
    size_t n = 0;
    uint32_t nrings = comm->nctx * (uint32_t)comm->size;
    for (uint32_t i = 0; i < nrings; i++)
        n = add_range(out, n, max, comm->rings[i].mem, comm->rings[i].mem_size);
    /* kernels touch only the user signal words, which follow the barrier words */
    n = add_range(out, n, max, (const void *)&comm->signals[NET_SIG_RESERVED],
                  comm->nsig * sizeof(uint64_t));
    n = add_range(out, n, max, (const void *)comm->counters,
                  (comm->ncnt ? comm->ncnt : 1) * sizeof(uint64_t));
    n = add_range(out, n, max, (const void *)comm->ctx_error, comm->nctx * sizeof(int));
    n = add_range(out, n, max, (const void *)s->mbox, s->mbox_bytes);
    if (comm->boot) { /* the death flags (gmux_dev_handle_t's peer_dead, any_dead) */
        n = add_range(out, n, max, (const void *)comm->boot->dead,
                      (size_t)comm->size * sizeof(*comm->boot->dead));
        n = add_range(out, n, max, (const void *)&comm->boot->any_dead,
                      sizeof(comm->boot->any_dead));
    }
    if (s->stage)
        n = net_devstage_ranges(s->stage, out, n, max);
    qsort(out, n, sizeof(*out), range_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        char *end = (char *)out[i].base + out[i].size;
        if (m > 0 && (char *)out[i].base <= (char *)out[m - 1].base + out[m - 1].size) {
            char *prev_end = (char *)out[m - 1].base + out[m - 1].size;
            if (end > prev_end)
                out[m - 1].size = (size_t)(end - (char *)out[m - 1].base);
        } else {
            out[m++] = out[i];
        }
    }
    return m;
}

void net_devsvc_set_unmap(net_devsvc_t *s, void (*unmap)(void *arg), void (*release)(void *arg),
                          void *arg)
{
    s->unmap = unmap;
    s->release = release;
    s->unmap_arg = arg;
}

void net_devsvc_stop(net_devsvc_t *s)
{
    if (!s)
        return;
    if (s->running) {
        atomic_store_explicit(&s->stop, true, memory_order_release);
        pthread_join(s->thread, NULL);
    }
    if (s->unmap)
        s->unmap(s->unmap_arg);
    net_devstage_destroy(s->stage);
    if (s->release)
        s->release(s->unmap_arg);
    free(s->rings);
    free((void *)s->mbox);
    free(s);
}

GMUX_API gmux_status_t gmux_dev_handle_create_host(gmux_comm_t *comm, gmux_dev_handle_t *handle_p)
{
    net_devsvc_t *s = NULL;
    return net_devsvc_start(comm, handle_p, &s);
}

GMUX_API void gmux_dev_handle_destroy(gmux_dev_handle_t *handle)
{
    if (!handle || !handle->host)
        return;
    net_devsvc_stop(handle->host);
    memset(handle, 0, sizeof(*handle));
}

GMUX_API int gmux_dev_progress(const gmux_dev_handle_t *handle)
{
    if (!handle || !handle->host)
        return 0;
    const net_devsvc_t *s = handle->host;
    return s->stage ? 0 : net_progress_poll(s->comm);
}

GMUX_API gmux_status_t gmux_dev_window_register(gmux_dev_handle_t *handle, void *dev_base,
                                                size_t size, gmux_window_t *win_p)
{
    if (!handle || !handle->host)
        return GMUX_ERR_INVALID; /* no communicator to tell the others */
    net_devsvc_t *s = handle->host;
    /* collective: a refusal still takes part in the exchange, or the other
     * ranks would wait in it and pair with this rank's next registration */
    if (!win_p)
        return net_window_register_failed(s->comm, size, GMUX_ERR_INVALID);
    if (!s->stage) /* not a staged handle */
        return net_window_register_failed(s->comm, size, GMUX_ERR_STATE);
    return net_devstage_window_register(s->stage, dev_base, size, win_p);
}

GMUX_API gmux_status_t gmux_dev_window_deregister(gmux_dev_handle_t *handle, gmux_window_t win)
{
    if (!handle || !handle->host)
        return GMUX_ERR_INVALID;
    net_devsvc_t *s = handle->host;
    if (!s->stage)
        return GMUX_ERR_STATE;
    return net_devstage_window_deregister(s->stage, win);
}

GMUX_API gmux_status_t gmux_dev_source_register(gmux_dev_handle_t *handle, void *dev_base,
                                                size_t size)
{
    if (!handle || !handle->host)
        return GMUX_ERR_INVALID;
    net_devsvc_t *s = handle->host;
    return s->stage ? net_devstage_source_register(s->stage, dev_base, size) : GMUX_ERR_STATE;
}

GMUX_API gmux_status_t gmux_dev_source_deregister(gmux_dev_handle_t *handle, void *dev_base)
{
    if (!handle || !handle->host)
        return GMUX_ERR_INVALID;
    net_devsvc_t *s = handle->host;
    return s->stage ? net_devstage_source_deregister(s->stage, dev_base) : GMUX_ERR_STATE;
}

GMUX_API int gmux_dev_is_direct(const gmux_dev_handle_t *handle, const void *dev_base)
{
    if (!handle || !handle->host || !dev_base)
        return -1;
    const net_devsvc_t *s = handle->host;
    return s->stage ? net_devstage_is_direct(s->stage, dev_base) : -1;
}
