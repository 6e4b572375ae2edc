/* CUDA backend: migration stream, prefetch/evict, ordering event, per context. */
#include "shim/backend_cuda.h"

#include <pthread.h>
#include <stdatomic.h>

#include "common/clock.h"
#include "common/log.h"
#include "shim/shim.h"
#include "shim/stats.h"
#include "shim/streams.h"

#define BACKEND_MAX_CTX 64
#define BACKEND_RETIRED ((uintptr_t)1) /* ctx of a destroyed context's entry: matches none */

struct shim_cuctx {
    _Atomic uintptr_t ctx; /* CUcontext; BACKEND_RETIRED once the context is destroyed */
    /* Bumped each time the entry is given to a context (backend_create):
     * who keeps an entry across calls (the gate's watcher) checks it. */
    _Atomic uint32_t gen;
    /* Retired entries: the context the entry had (under backend_lock), and
     * whether that context is gone, so the entry may be given to another:
     * one retired while its context lives on (its stream left to a capture,
     * shim_backend_after_queued) becomes free only when that context goes. */
    uintptr_t was;
    bool reusable;
    CUdevice dev;
    CUstream mig;
    CUevent ev;
    CUevent ev_queued;    /* shim_backend_after_queued's, apart from the launches' ev */
    CUevent ev_mark;      /* shim_backend_mark's: the gate's evictions done */
    _Atomic uint64_t seq; /* tickets handed out */
    /* Launches that hold the entry (shim_backend_take to _put), and whether
     * shim_backend_after_queued orders its stream after the program's
     * streams now: never both (a Dekker pair, sequentially consistent).
     * Each side writes its own, then reads the other's (store buffering):
     * only sequentially consistent operations (or fences) keep both reads
     * from seeing the old values; acquire/release allow it, in C11 and on
     * ARM and POWER. Nothing weaker would be cheaper on x86-64 either: the
     * launch's add and subtract are one locked instruction whatever their
     * order, its load a plain mov. The put's subtract alone could be
     * release (it orders the launch's queued calls before an ordering that
     * reads 0), the same instruction there. TSan does not model store buffering, so
     * no test could show a weaker order wrong: they stay as they are. */
    _Atomic unsigned users;
    atomic_bool ordering;
};

static shim_cuctx_t backend_ctx[BACKEND_MAX_CTX];
static _Atomic size_t backend_nctx;
static pthread_mutex_t backend_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool backend_full_warned;
static _Atomic uint32_t backend_epoch; /* bumped when an entry retires */
static _Atomic unsigned backend_left;  /* entries retired with their stream left to a capture */
static __thread CUcontext backend_last_ctx;
static __thread shim_cuctx_t *backend_last;
static __thread uint32_t backend_last_epoch;
/* Shared from shim_backend_enter to shim_backend_leave, exclusive around a
 * context's destruction (backend_cuda.h, LOCKING). */
static pthread_rwlock_t backend_destroy_lock = PTHREAD_RWLOCK_INITIALIZER;

/* See backend_cuda.h. The test: test_gate_plans
 * test_capture_in_other_thread_survives (the double models the modes). */
bool shim_backend_relax(CUstreamCaptureMode *prev_p)
{
    *prev_p = CU_STREAM_CAPTURE_MODE_RELAXED;
    return SHIM_CALL(cuThreadExchangeStreamCaptureMode, prev_p) == CUDA_SUCCESS;
}

void shim_backend_unrelax(bool relaxed, CUstreamCaptureMode prev)
{
    if (relaxed)
        (void)SHIM_CALL(cuThreadExchangeStreamCaptureMode, &prev);
}

static shim_cuctx_t *backend_create(CUcontext ctx)
{
    shim_cuctx_t *c = NULL;
    pthread_mutex_lock(&backend_lock);
    size_t n = atomic_load(&backend_nctx);
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&backend_ctx[i].ctx) == (uintptr_t)ctx) {
            c = &backend_ctx[i];
            goto out_unlock;
        }
    /* a free entry: a new one, else one whose context was destroyed */
    size_t slot = n;
    for (size_t i = 0; slot == BACKEND_MAX_CTX && i < n; i++)
        if (backend_ctx[i].reusable)
            slot = i;
    if (slot == BACKEND_MAX_CTX) {
        if (!atomic_exchange(&backend_full_warned, true))
            COM_WARN(SHIM,
                     "more than %d live CUDA contexts: no migration stream (no prefetch) "
                     "for context %p and later ones while they last",
                     BACKEND_MAX_CTX, (void *)ctx);
        goto out_unlock;
    }
    shim_cuctx_t tmp = {.ctx = (uintptr_t)ctx};
    CUstreamCaptureMode mode;
    bool relaxed = shim_backend_relax(&mode);
    CUresult r = SHIM_CALL(cuCtxGetDevice, &tmp.dev);
    if (r == CUDA_SUCCESS)
        r = SHIM_CALL(cuStreamCreate, &tmp.mig, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS)
        r = SHIM_CALL(cuEventCreate, &tmp.ev, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS)
        r = SHIM_CALL(cuEventCreate, &tmp.ev_queued, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS)
        r = SHIM_CALL(cuEventCreate, &tmp.ev_mark, CU_EVENT_DISABLE_TIMING);
    shim_backend_unrelax(relaxed, mode);
    if (r != CUDA_SUCCESS) {
        COM_WARN(SHIM, "cannot create the migration stream of context %p (CUresult %d)",
                 (void *)ctx, (int)r);
        goto out_unlock;
    }
    /* A reused entry's context is gone: a thread still holding the entry
     * would be using a destroyed context (the driver leaves that undefined),
     * the watcher checks gen, and the threads' caches the epoch, bumped when
     * it retired. The context is published last. */
    c = &backend_ctx[slot];
    c->reusable = false;
    c->was = 0;
    c->dev = tmp.dev;
    c->mig = tmp.mig;
    c->ev = tmp.ev;
    c->ev_queued = tmp.ev_queued;
    c->ev_mark = tmp.ev_mark;
    atomic_store(&c->seq, 0);
    atomic_fetch_add(&c->gen, 1);
    atomic_store(&c->ctx, (uintptr_t)ctx);
    if (slot == n)
        atomic_store(&backend_nctx, n + 1);
out_unlock:
    pthread_mutex_unlock(&backend_lock);
    return c;
}

void shim_backend_forget(CUcontext ctx)
{
    pthread_mutex_lock(&backend_lock);
    size_t n = atomic_load(&backend_nctx);
    for (size_t i = 0; i < n; i++) {
        shim_cuctx_t *c = &backend_ctx[i];
        uintptr_t v = atomic_load(&c->ctx);
        if (v == (uintptr_t)ctx) {
            /* its stream and events went with the context; a later context
             * may get the entry (backend_create) */
            atomic_store(&c->ctx, BACKEND_RETIRED);
            c->reusable = true;
            atomic_fetch_add(&backend_epoch, 1);
        } else if (v == BACKEND_RETIRED && c->was == (uintptr_t)ctx) {
            c->reusable = true; /* retired earlier, its stream left to a capture: gone now */
            c->was = 0;
            atomic_fetch_sub(&backend_left, 1);
        }
    }
    pthread_mutex_unlock(&backend_lock);
}

/* See backend_cuda.h. The test: test_gate_plans test_evict_on_arrival,
 * the context destroyed as the watcher pushes it (the double counts a
 * context destroyed while another thread has it pushed). */
bool shim_backend_enter(shim_cuctx_t *c, uint32_t gen)
{
    pthread_rwlock_rdlock(&backend_destroy_lock);
    uintptr_t ctx = atomic_load(&c->ctx);
    if (ctx != BACKEND_RETIRED && atomic_load(&c->gen) == gen &&
        SHIM_CALL(cuCtxPushCurrent_v2, (CUcontext)ctx) == CUDA_SUCCESS)
        return true;
    pthread_rwlock_unlock(&backend_destroy_lock);
    return false;
}

void shim_backend_leave(void)
{
    CUcontext prev;
    (void)SHIM_CALL(cuCtxPopCurrent_v2, &prev);
    pthread_rwlock_unlock(&backend_destroy_lock);
}

bool shim_backend_destroy_begin(void)
{
    if (shim_forked_child())
        return false;
    pthread_rwlock_wrlock(&backend_destroy_lock);
    return true;
}

void shim_backend_destroy_end(bool locked)
{
    if (locked)
        pthread_rwlock_unlock(&backend_destroy_lock);
}

/* Retires c, whose context lives on: the next shim_backend_current of it
 * creates a new entry, with a stream and events of its own. */
static void backend_retire(shim_cuctx_t *c, uintptr_t ctx)
{
    pthread_mutex_lock(&backend_lock);
    uintptr_t had = ctx;
    if (atomic_compare_exchange_strong(&c->ctx, &ctx, BACKEND_RETIRED)) {
        c->was = had; /* free once released, or that context destroyed (shim_backend_forget) */
        atomic_fetch_add(&backend_left, 1);
        atomic_fetch_add(&backend_epoch, 1);
    }
    pthread_mutex_unlock(&backend_lock);
}

/* Releases the entries of ctx retired with their stream left to a capture
 * (backend_retire) whose stream no longer captures: the program ended that
 * capture, which took the stream out of it. The stream and its events are
 * destroyed and the entry may be given to another context. cuda.h says
 * nothing of destroying a stream that takes part in a capture, so a stream
 * still capturing (or whose status the driver does not tell) is left for a
 * later call. No launch uses a retired entry: it retired while none held
 * it, and a launch that takes it after finds it retired and lets it go
 * (shim_backend_take). Needs ctx current. */
static void backend_release_left(uintptr_t ctx)
{
    if (!atomic_load(&backend_left))
        return;
    pthread_mutex_lock(&backend_lock);
    size_t n = atomic_load(&backend_nctx);
    for (size_t i = 0; i < n; i++) {
        shim_cuctx_t *c = &backend_ctx[i];
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        if (atomic_load(&c->ctx) != BACKEND_RETIRED || c->reusable || c->was != ctx ||
            SHIM_CALL(cuStreamIsCapturing, c->mig, &cs) != CUDA_SUCCESS ||
            cs != CU_STREAM_CAPTURE_STATUS_NONE)
            continue;
        CUstreamCaptureMode mode;
        bool relaxed = shim_backend_relax(&mode);
        (void)SHIM_CALL(cuStreamDestroy_v2, c->mig);
        (void)SHIM_CALL(cuEventDestroy_v2, c->ev);
        (void)SHIM_CALL(cuEventDestroy_v2, c->ev_queued);
        (void)SHIM_CALL(cuEventDestroy_v2, c->ev_mark);
        shim_backend_unrelax(relaxed, mode);
        c->was = 0;
        c->reusable = true;
        atomic_fetch_sub(&backend_left, 1);
        SHIM_STAT_ADD(capture_released, 1);
    }
    pthread_mutex_unlock(&backend_lock);
}

void shim_backend_release_left(void)
{
    CUcontext ctx = NULL;
    if (atomic_load(&backend_left) && SHIM_CALL(cuCtxGetCurrent, &ctx) == CUDA_SUCCESS && ctx)
        backend_release_left((uintptr_t)ctx);
}

gmux_status_t shim_backend_after_queued(shim_cuctx_t *c)
{
    /* the legacy default stream and the program's non-blocking streams
     * (streams.c), with no capture beginning meanwhile */
    uintptr_t ctx = atomic_load(&c->ctx);
    backend_release_left(ctx);
    /* A launch holding the entry (one without a turn) may be about to queue
     * its prefetch and event on the stream, which may join a capture now:
     * then put off, as for a capture. One that takes the entry from now on
     * finds the flag and queues nothing (shim_backend_take). */
    atomic_store(&c->ordering, true);
    if (atomic_load(&c->users)) {
        atomic_store(&c->ordering, false);
        return GMUX_ERR_BUSY;
    }
    gmux_status_t st = shim_streams_order_after((CUcontext)ctx, c->mig, c->ev_queued);
    if (st == GMUX_ERR_STATE) {
        /* The migration stream joined a capture of the program: it stays in
         * it until the program ends the capture, and what the shim put on
         * it meanwhile (migrations, the event each prefetching launch's
         * stream waits for, which would pull that stream in too) would be
         * captured instead of run. It is left to the capture; the context
         * gets a new one (test_evict_on_arrival, scenario 6). */
        COM_WARN(SHIM, "context %p: a new migration stream, the old one stays in the capture",
                 (void *)ctx);
        backend_retire(c, ctx);
        st = GMUX_ERR_BUSY;
    }
    atomic_store(&c->ordering, false);
    return st;
}

/* shim_backend_current, and the current context in *ctx_p (NULL: none). */
static shim_cuctx_t *backend_current(CUcontext *ctx_p)
{
    CUcontext ctx = NULL;
    if (SHIM_CALL(cuCtxGetCurrent, &ctx) != CUDA_SUCCESS)
        ctx = NULL;
    *ctx_p = ctx;
    if (!ctx)
        return NULL;
    uint32_t epoch = atomic_load_explicit(&backend_epoch, memory_order_acquire);
    if (ctx == backend_last_ctx && backend_last && epoch == backend_last_epoch)
        return backend_last;
    shim_cuctx_t *c = NULL;
    size_t n = atomic_load(&backend_nctx);
    for (size_t i = 0; i < n && !c; i++)
        if (atomic_load(&backend_ctx[i].ctx) == (uintptr_t)ctx)
            c = &backend_ctx[i];
    if (!c)
        c = backend_create(ctx);
    if (c) {
        backend_last_ctx = ctx;
        backend_last = c;
        backend_last_epoch = epoch;
    }
    return c;
}

shim_cuctx_t *shim_backend_current(void)
{
    CUcontext ctx;
    return backend_current(&ctx);
}

shim_cuctx_t *shim_backend_take(void)
{
    for (int tries = 0; tries < 2; tries++) {
        CUcontext ctx;
        shim_cuctx_t *c = backend_current(&ctx);
        if (!c) {
            /* no context: the driver refuses the launch; else one past the
             * 64 with state, or whose stream could not be made (warned) */
            if (ctx)
                SHIM_STAT_ADD(launch_no_prefetch_no_entry, 1);
            return NULL;
        }
        atomic_fetch_add(&c->users, 1);
        if (atomic_load(&c->ordering)) {
            atomic_fetch_sub(&c->users, 1);
            SHIM_STAT_ADD(launch_no_prefetch_ordering, 1);
            return NULL;
        }
        if (atomic_load(&c->ctx) == (uintptr_t)backend_last_ctx)
            return c;
        /* retired since shim_backend_current found it (its stream left to
         * a capture): the context's new entry, made or found by a lookup
         * past this thread's cache */
        atomic_fetch_sub(&c->users, 1);
        backend_last = NULL;
    }
    /* the new entry retired too: two orderings under this launch */
    SHIM_STAT_ADD(launch_no_prefetch_ordering, 1);
    return NULL;
}

void shim_backend_put(shim_cuctx_t *c)
{
    atomic_fetch_sub(&c->users, 1);
}

static gmux_status_t backend_move(shim_cuctx_t *c, uint64_t addr, uint64_t len,
                                  CUmemLocationType type, eng_ticket_t *ticket_p)
{
    CUmemLocation loc = {.type = type, .id = type == CU_MEM_LOCATION_TYPE_DEVICE ? c->dev : 0};
    CUresult r = SHIM_CALL(cuMemPrefetchAsync_v2, (CUdeviceptr)addr, (size_t)len, loc, 0, c->mig);
    if (r != CUDA_SUCCESS) {
        COM_DEBUG(SHIM, "cuMemPrefetchAsync(%#llx, %llu) failed: CUresult %d",
                  (unsigned long long)addr, (unsigned long long)len, (int)r);
        return GMUX_ERR_DRIVER;
    }
    *ticket_p = atomic_fetch_add(&c->seq, 1) + 1;
    return GMUX_OK;
}

static gmux_status_t backend_prefetch(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                                      eng_ticket_t *ticket_p)
{
    (void)task;
    return backend_move(ctx, addr, len, CU_MEM_LOCATION_TYPE_DEVICE, ticket_p);
}

static gmux_status_t backend_evict(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                                   eng_ticket_t *ticket_p)
{
    (void)task;
    return backend_move(ctx, addr, len, CU_MEM_LOCATION_TYPE_HOST, ticket_p);
}

/* One cuMemPrefetchBatchAsync of ranges[0..n) to the device; whether the driver took it. */
static bool backend_batch(shim_cuctx_t *c, const uint64_t *addr, const uint64_t *len, size_t n)
{
    enum { BATCH_MAX = 64 };
    CUdeviceptr ptrs[BATCH_MAX];
    size_t sizes[BATCH_MAX], loc_idx[1] = {0};
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = c->dev};
    if (n > BATCH_MAX || !SHIM_REAL(cuMemPrefetchBatchAsync))
        return false;
    for (size_t i = 0; i < n; i++) {
        ptrs[i] = (CUdeviceptr)addr[i];
        sizes[i] = (size_t)len[i];
    }
    if (SHIM_CALL(cuMemPrefetchBatchAsync, ptrs, sizes, n, &loc, loc_idx, 1, 0, c->mig) !=
        CUDA_SUCCESS) {
        COM_DEBUG(SHIM, "cuMemPrefetchBatchAsync of %zu ranges refused: one call each", n);
        return false;
    }
    atomic_fetch_add(&c->seq, 1);
    return true;
}

size_t shim_backend_prefetch_ranges(shim_cuctx_t *c, const uint64_t *addr, const uint64_t *len,
                                    size_t n, uint64_t *bytes_p)
{
    size_t issued = 0;
    for (size_t at = 0; at < n; at += 64) {
        size_t m = n - at < 64 ? n - at : 64;
        if (m > 1 && backend_batch(c, addr + at, len + at, m)) {
            for (size_t i = at; i < at + m; i++)
                *bytes_p += len[i];
            issued += m;
            continue;
        }
        for (size_t i = at; i < at + m; i++) {
            eng_ticket_t t;
            if (backend_move(c, addr[i], len[i], CU_MEM_LOCATION_TYPE_DEVICE, &t) == GMUX_OK) {
                issued++;
                *bytes_p += len[i];
            }
        }
    }
    return issued;
}

static gmux_status_t backend_fence(void *ctx, eng_ticket_t ticket)
{
    shim_cuctx_t *c = ctx;
    (void)ticket; /* the stream runs in issue order: waiting for all covers this one */
    CUstreamCaptureMode mode;
    bool relaxed = shim_backend_relax(&mode);
    CUresult r = SHIM_CALL(cuStreamSynchronize, c->mig);
    shim_backend_unrelax(relaxed, mode);
    return r == CUDA_SUCCESS ? GMUX_OK : GMUX_ERR_DRIVER;
}

static uint64_t backend_now(void *ctx)
{
    (void)ctx;
    return com_clock_ns();
}

static const eng_backend_ops_t backend_ops = {
    .prefetch = backend_prefetch,
    .evict = backend_evict,
    .fence = backend_fence,
    .now = backend_now,
};

eng_backend_t shim_backend_engine(shim_cuctx_t *c)
{
    return (eng_backend_t){.ops = &backend_ops, .ctx = c};
}

CUresult shim_backend_order(shim_cuctx_t *c, CUstream stream, bool per_thread)
{
    if (per_thread && stream == NULL)
        stream = CU_STREAM_PER_THREAD;
    CUresult r = SHIM_CALL(cuEventRecord, c->ev, c->mig);
    if (r == CUDA_SUCCESS)
        r = SHIM_CALL(cuStreamWaitEvent, stream, c->ev, 0);
    return r;
}

gmux_status_t shim_backend_mark(shim_cuctx_t *c)
{
    return SHIM_CALL(cuEventRecord, c->ev_mark, c->mig) == CUDA_SUCCESS ? GMUX_OK : GMUX_ERR_DRIVER;
}

gmux_status_t shim_backend_after_mark(shim_cuctx_t *c, shim_cuctx_t *from, uint32_t gen)
{
    pthread_rwlock_rdlock(&backend_destroy_lock); /* from's context is not destroyed meanwhile */
    CUresult r = CUDA_SUCCESS;
    if (atomic_load(&from->ctx) != BACKEND_RETIRED && atomic_load(&from->gen) == gen)
        r = SHIM_CALL(cuStreamWaitEvent, c->mig, from->ev_mark, 0);
    pthread_rwlock_unlock(&backend_destroy_lock);
    return r == CUDA_SUCCESS ? GMUX_OK : GMUX_ERR_DRIVER;
}

/* An event query is potentially unsafe: made in the thread's default GLOBAL
 * mode while another thread of the program captures in mode GLOBAL (the
 * watcher polls during the program's captures), it would be refused and
 * invalidate that capture (test_gate_evicted_capture
 * test_mark_polled_relaxed_in_capture). Any other error was taken for
 * "done" until 2026-12-02 (test_gate_evicted
 * test_failed_query_reported_not_done). */
int shim_backend_mark_done(shim_cuctx_t *c)
{
    CUstreamCaptureMode mode;
    bool relaxed = shim_backend_relax(&mode);
    CUresult r = SHIM_CALL(cuEventQuery, c->ev_mark);
    shim_backend_unrelax(relaxed, mode);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY)
        return r == CUDA_SUCCESS;
    static atomic_bool warned;
    if (!atomic_exchange(&warned, true))
        COM_WARN(SHIM,
                 "cannot tell whether the migrations of context %p completed (cuEventQuery: "
                 "CUresult %d); reported not done",
                 (void *)atomic_load(&c->ctx), (int)r);
    return -1;
}

bool shim_backend_capturing(CUstream stream, bool per_thread)
{
    if (per_thread && stream == NULL)
        stream = CU_STREAM_PER_THREAD;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (SHIM_CALL(cuStreamIsCapturing, stream, &st) != CUDA_SUCCESS)
        return false;
    return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

uint32_t shim_backend_gen(shim_cuctx_t *c)
{
    return atomic_load(&c->gen);
}

CUstream shim_backend_stream(const shim_cuctx_t *c)
{
    return c->mig;
}
