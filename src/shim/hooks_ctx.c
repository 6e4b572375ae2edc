/*
 * Context hooks: a context the driver destroys takes every allocation made in
 * it along (cuCtxDestroy; the primary context at its last release or at a
 * reset; a green context's converted context at cuGreenCtxDestroy), so the regions allocated in it
 * stop being tracked and counted, and a recording frees them. Each region carries the context that
 * was current when it was allocated (hooks_mem.c); the context's migration stream is retired too
 * (backend_cuda.c), its non-blocking streams and its CUDA arrays are forgotten (streams.c,
 * arrays.c). VMM mappings belong to no context (cuMemCreate memory is the device's, mapped
 * process-wide) and stay.
 *
 * The primary context's handle is learnt from cuDevicePrimaryCtxRetain (the
 * runtime retains it before its first use), or, if no retain the shim saw
 * named it, at the release or reset (ctx_primary_live), and forgotten when
 * the context goes (its handle may come back for a created context);
 * whether a release was the last is asked of the driver
 * (cuDevicePrimaryCtxGetState), never counted here, since retains made
 * before the shim saw them would throw a count off. A reset of a primary
 * context that is not active destroys nothing.
 *
 * LOCKING: ctx_primary_mu serialises the shim's retain, release and reset
 * hooks of primary contexts (and the green context hooks, a retain and a
 * release), each with its driver call: a release, the state
 * query after it and the forgetting are one step, so a retain of another
 * thread cannot come between the release that destroyed the context and the
 * query (the query would see the new context active and the gone one's
 * allocations would stay tracked: test_primary_retained_while_released). It
 * is taken before the regions' and the backend's locks, never after.
 *
 * Every hook that may destroy a context holds the backend's destroy lock
 * exclusively from its driver call to the context's retiring
 * (shim_backend_destroy_begin): the gate's watcher thread, which enters the
 * context the launching threads last waited in to evict, holds it shared
 * while inside, so a context is never destroyed under it, and the watcher
 * finds it retired afterwards instead of pushing a handle the driver may
 * have given to a new context (test_evict_on_arrival, scenario 5).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/log.h"
#include "shim/arrays.h"
#include "shim/backend_cuda.h"
#include "shim/policy.h"
#include "shim/record.h"
#include "shim/shim.h"
#include "shim/stats.h"
#include "shim/streams.h"

#define CTX_MAX_DEVICES 64
#define CTX_BATCH       256

static _Atomic uintptr_t ctx_primary[CTX_MAX_DEVICES]; /* primary context per device; 0: unknown */
static pthread_mutex_t ctx_primary_mu = PTHREAD_MUTEX_INITIALIZER;

/* Forgets every region allocated in ctx. */
static void ctx_forget(CUcontext ctx)
{
    if (!ctx)
        return;
    shim_backend_forget(ctx);
    shim_streams_forget_ctx(ctx); /* its streams went with it */
    shim_arrays_forget_ctx(ctx);  /* and its CUDA arrays */
    shim_region_t gone[CTX_BATCH];
    size_t n, total = 0;
    do {
        n = shim_regions_remove_ctx(&shim_state.regions, (uint64_t)(uintptr_t)ctx, gone, CTX_BATCH);
        for (size_t i = 0; i < n; i++)
            shim_record_free(gone[i].base);
        total += n;
    } while (n == CTX_BATCH);
    SHIM_STAT_ADD(frees, total);
    if (total) {
        /* the daemon's marks went with the regions: a grant need not wait
         * for a migration stream for them (policy.h) */
        shim_policy_evicted_recount();
        COM_DEBUG(SHIM, "context %p went with %zu tracked allocations", (void *)ctx, total);
    }
}

static CUcontext ctx_primary_of(CUdevice dev)
{
    if (dev < 0 || dev >= CTX_MAX_DEVICES)
        return NULL;
    return (CUcontext)atomic_load(&ctx_primary[dev]);
}

/* Each function has two ABIs, both hooked: CUDA 2.0's cuCtxDestroy and
 * 4.0's cuCtxDestroy_v2, 7.0's cuDevicePrimaryCtxRelease / Reset and 11.0's
 * _v2. A program built against an old toolkit, or a runtime that asks
 * cuGetProcAddress for an old version, destroys contexts through the old
 * ones just the same. */
static CUresult ctx_destroyed(CUresult r, CUcontext ctx)
{
    if (r == CUDA_SUCCESS)
        ctx_forget(ctx);
    return r;
}

CUresult shim_hook_cuCtxDestroy(CUcontext ctx)
{
    shim_ensure_init();
    bool locked = shim_backend_destroy_begin();
    CUresult r = ctx_destroyed(SHIM_CALL(cuCtxDestroy, ctx), ctx);
    shim_backend_destroy_end(locked);
    return r;
}

CUresult shim_hook_cuCtxDestroy_v2(CUcontext ctx)
{
    shim_ensure_init();
    bool locked = shim_backend_destroy_begin();
    CUresult r = ctx_destroyed(SHIM_CALL(cuCtxDestroy_v2, ctx), ctx);
    shim_backend_destroy_end(locked);
    return r;
}

CUresult shim_hook_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    shim_ensure_init();
    pthread_mutex_lock(&ctx_primary_mu);
    CUresult r = SHIM_CALL(cuDevicePrimaryCtxRetain, pctx, dev);
    if (r == CUDA_SUCCESS && pctx && dev >= 0 && dev < CTX_MAX_DEVICES)
        atomic_store(&ctx_primary[dev], (uintptr_t)*pctx);
    pthread_mutex_unlock(&ctx_primary_mu);
    return r;
}

/*
 * dev's primary context, before a release or a reset: the handle while the
 * context is active, learnt if no retain the shim saw named it (one made
 * before its hooks were in place, or through a path it does not wrap): a
 * release that turns out to be the last must know which context went. While
 * the context is active a retain of the shim's own, released at once, hands
 * out the handle and leaves the count as it was. Without it the context's
 * regions stayed tracked (test_primary_released_after_unseen_retain).
 * NULL while the context is not active: nothing of it is left to forget.
 * Under ctx_primary_mu.
 */
static CUcontext ctx_primary_live(CUdevice dev)
{
    unsigned flags = 0;
    int active = 1;
    CUcontext ctx = NULL;
    if (dev < 0 || dev >= CTX_MAX_DEVICES)
        return NULL;
    if (SHIM_CALL(cuDevicePrimaryCtxGetState, dev, &flags, &active) != CUDA_SUCCESS)
        return ctx_primary_of(dev);
    if (!active) {
        atomic_store(&ctx_primary[dev], 0); /* gone where the shim did not see it */
        return NULL;
    }
    if (!ctx_primary_of(dev) && SHIM_CALL(cuDevicePrimaryCtxRetain, &ctx, dev) == CUDA_SUCCESS) {
        if (SHIM_REAL(cuDevicePrimaryCtxRelease_v2))
            (void)SHIM_CALL(cuDevicePrimaryCtxRelease_v2, dev);
        else
            (void)SHIM_CALL(cuDevicePrimaryCtxRelease, dev);
        atomic_store(&ctx_primary[dev], (uintptr_t)ctx);
    }
    return ctx_primary_of(dev);
}

/*
 * dev's primary context ctx went: its state is forgotten, and so is its
 * handle. The driver may give that handle to a context created next (a
 * handle is an address), which is not the primary: a later reset of the
 * primary context (not active then) forgot that context's regions and
 * retired its migration stream (test_context_at_gone_primary_handle). The
 * next retain, or the next release or reset, learns the handle again.
 * Under ctx_primary_mu.
 */
static void ctx_primary_gone(CUdevice dev, CUcontext ctx)
{
    ctx_forget(ctx);
    if (dev >= 0 && dev < CTX_MAX_DEVICES)
        atomic_store(&ctx_primary[dev], 0);
}

/* After a release of dev's primary context ctx (NULL: it was not active). */
static CUresult ctx_released(CUresult r, CUdevice dev, CUcontext ctx)
{
    if (r != CUDA_SUCCESS)
        return r;
    unsigned flags = 0;
    int active = 1;
    /* the last reference gone: the driver destroyed the context */
    if (SHIM_CALL(cuDevicePrimaryCtxGetState, dev, &flags, &active) == CUDA_SUCCESS && !active)
        ctx_primary_gone(dev, ctx);
    return r;
}

CUresult shim_hook_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    shim_ensure_init();
    pthread_mutex_lock(&ctx_primary_mu);
    bool locked = shim_backend_destroy_begin();
    CUcontext ctx = ctx_primary_live(dev);
    CUresult r = ctx_released(SHIM_CALL(cuDevicePrimaryCtxRelease, dev), dev, ctx);
    shim_backend_destroy_end(locked);
    pthread_mutex_unlock(&ctx_primary_mu);
    return r;
}

CUresult shim_hook_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    shim_ensure_init();
    pthread_mutex_lock(&ctx_primary_mu);
    bool locked = shim_backend_destroy_begin();
    CUcontext ctx = ctx_primary_live(dev);
    CUresult r = ctx_released(SHIM_CALL(cuDevicePrimaryCtxRelease_v2, dev), dev, ctx);
    shim_backend_destroy_end(locked);
    pthread_mutex_unlock(&ctx_primary_mu);
    return r;
}

/* After a reset of dev's primary context ctx (NULL: it was not active). */
static CUresult ctx_reset(CUresult r, CUdevice dev, CUcontext ctx)
{
    if (r == CUDA_SUCCESS)
        ctx_primary_gone(dev, ctx);
    return r;
}

CUresult shim_hook_cuDevicePrimaryCtxReset(CUdevice dev)
{
    shim_ensure_init();
    pthread_mutex_lock(&ctx_primary_mu);
    bool locked = shim_backend_destroy_begin();
    CUcontext ctx = ctx_primary_live(dev);
    CUresult r = ctx_reset(SHIM_CALL(cuDevicePrimaryCtxReset, dev), dev, ctx);
    shim_backend_destroy_end(locked);
    pthread_mutex_unlock(&ctx_primary_mu);
    return r;
}

CUresult shim_hook_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    shim_ensure_init();
    pthread_mutex_lock(&ctx_primary_mu);
    bool locked = shim_backend_destroy_begin();
    CUcontext ctx = ctx_primary_live(dev);
    CUresult r = ctx_reset(SHIM_CALL(cuDevicePrimaryCtxReset_v2, dev), dev, ctx);
    shim_backend_destroy_end(locked);
    pthread_mutex_unlock(&ctx_primary_mu);
    return r;
}

/*
 * Green contexts (CUDA 12.4). A green context holds a context of its own,
 * its converted one (cuCtxFromGreenCtx), where the program allocates and
 * launches, and a reference to its device's primary context, taken by
 * cuGreenCtxCreate and dropped by cuGreenCtxDestroy. The destroy takes the
 * converted context along, asked of the driver just before (the same handle
 * whenever asked), and is a release of the primary context: if it was the
 * last reference, the primary context goes too (test_shim_lifecycle
 * test_green_context_*). The device of each green context is learnt at its
 * creation; one created before the shim's hooks were in place has none, and
 * then the primary context of no device is looked at.
 *
 * LOCKING: the table of green contexts is under ctx_primary_mu, which both
 * hooks hold across their driver call anyway.
 */
typedef struct ctx_green {
    CUgreenCtx green;
    CUdevice dev;
} ctx_green_t;

static ctx_green_t *ctx_greens;
static size_t ctx_green_n, ctx_green_cap;

/* Records green on dev (a gone green context's entry at its handle
 * replaced). Under ctx_primary_mu. */
static void ctx_green_add(CUgreenCtx green, CUdevice dev)
{
    size_t i = 0;
    while (i < ctx_green_n && ctx_greens[i].green != green)
        i++;
    if (i == ctx_green_n && ctx_green_n == ctx_green_cap) {
        size_t cap = ctx_green_cap ? 2 * ctx_green_cap : 16;
        ctx_green_t *grown = realloc(ctx_greens, cap * sizeof(*grown));
        if (!grown) {
            COM_WARN(SHIM, "green context %p: out of memory, its device unknown", (void *)green);
            return;
        }
        ctx_greens = grown;
        ctx_green_cap = cap;
    }
    if (i == ctx_green_n)
        ctx_green_n++;
    ctx_greens[i] = (ctx_green_t){.green = green, .dev = dev};
}

/* green's device, or -1 where unknown; forgets it if drop. Under ctx_primary_mu. */
static CUdevice ctx_green_dev(CUgreenCtx green, bool drop)
{
    CUdevice dev = -1;
    for (size_t i = 0; i < ctx_green_n; i++)
        if (ctx_greens[i].green == green) {
            dev = ctx_greens[i].dev;
            if (drop)
                ctx_greens[i] = ctx_greens[--ctx_green_n];
            break;
        }
    return dev;
}

CUresult shim_hook_cuGreenCtxCreate(CUgreenCtx *green, CUdevResourceDesc desc, CUdevice dev,
                                    unsigned flags)
{
    shim_ensure_init();
    /* a retain of the primary context: serialised with its releases */
    pthread_mutex_lock(&ctx_primary_mu);
    CUresult r = SHIM_CALL(cuGreenCtxCreate, green, desc, dev, flags);
    if (r == CUDA_SUCCESS && green)
        ctx_green_add(*green, dev);
    pthread_mutex_unlock(&ctx_primary_mu);
    return r;
}

CUresult shim_hook_cuGreenCtxDestroy(CUgreenCtx green)
{
    shim_ensure_init();
    pthread_mutex_lock(&ctx_primary_mu);
    bool locked = shim_backend_destroy_begin();
    CUcontext ctx = NULL;
    if (SHIM_CALL(cuCtxFromGreenCtx, &ctx, green) != CUDA_SUCCESS)
        ctx = NULL;
    CUdevice dev = ctx_green_dev(green, false);
    CUcontext primary = dev >= 0 ? ctx_primary_live(dev) : NULL;
    CUresult r = SHIM_CALL(cuGreenCtxDestroy, green);
    if (r == CUDA_SUCCESS) {
        (void)ctx_green_dev(green, true);
        ctx_forget(ctx);
        if (dev >= 0)
            (void)ctx_released(r, dev, primary);
    }
    shim_backend_destroy_end(locked);
    pthread_mutex_unlock(&ctx_primary_mu);
    return r;
}
