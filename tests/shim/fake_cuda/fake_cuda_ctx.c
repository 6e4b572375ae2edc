/*
 * The driver double's device and contexts: the one device, its primary
 * context, contexts created and destroyed, green contexts, each thread's
 * context stack.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda_internal.h"

CUresult fk_cuInit(unsigned flags)
{
    (void)flags;
    REC0();
    return CUDA_SUCCESS;
}

CUresult fk_cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}

CUresult fk_cuDeviceGet(CUdevice *dev, int ordinal)
{
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = 0;
    return CUDA_SUCCESS;
}

/*
 * Contexts: FAKE_CTX is the device's primary context, current on every thread
 * unless the thread created or pushed another. cuCtxCreate makes a new one
 * current on the calling thread; destroying a context, or releasing the
 * primary one for the last time (or resetting it), frees every allocation
 * made while it was current. Pushing a context is logged (tests check a
 * thread that enters it leaves it too), popping gives the previous one back;
 * popping the primary context where nothing was pushed or created leaves the
 * thread with none current (as popping the context the runtime made current
 * does), until it pushes or creates one; launches then fail.
 */
#define FAKE_CTX_DEPTH 8
#define FAKE_MAX_CTX   128 /* slots; FAKE_CUDA_MAX_CTX of them may be live (16 unless set) */

static __thread CUcontext fake_ctx_stack[FAKE_CTX_DEPTH];
static __thread bool fake_ctx_pushed[FAKE_CTX_DEPTH]; /* the entry came from cuCtxPushCurrent */
static __thread int fake_ctx_depth;
static __thread bool fake_ctx_none; /* the primary context popped: none under the stack */
static pthread_mutex_t fake_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t fake_ctx_live[FAKE_MAX_CTX]; /* created, not destroyed; under fake_ctx_lock */
static bool fake_ctx_green[FAKE_MAX_CTX];     /* slot i: a green context's; under fake_ctx_lock */
static int fake_primary_refs;
/* Pushes of each context not popped yet, counted from the push's start (an
 * armed hook runs inside it): [0] the primary context's, [1 + i] slot i's.
 * Under fake_ctx_lock, like the count of contexts that went meanwhile. */
static int fake_ctx_use[1 + FAKE_MAX_CTX];
static unsigned fake_ctx_misused;
/* fake_ctx_next_handle's: the handle the next cuCtxCreate hands out; 0: none. */
static uintptr_t fake_ctx_next;

/* How many contexts may live at once (cuCtxCreate answers out of memory
 * beyond): FAKE_CUDA_MAX_CTX in the environment, 1 to FAKE_MAX_CTX, else
 * 16, read at the first create. Tests that need more live contexts than the
 * shim tracks set it. Under fake_ctx_lock. */
static size_t fake_ctx_limit(void)
{
    static size_t limit;
    if (!limit) {
        const char *v = getenv("FAKE_CUDA_MAX_CTX");
        long n = v ? strtol(v, NULL, 10) : 0;
        limit = n >= 1 && n <= FAKE_MAX_CTX ? (size_t)n : 16;
    }
    return limit;
}

/* The index of ctx in fake_ctx_use, or -1 for a handle the double never hands out. */
static int fake_ctx_index(CUcontext ctx)
{
    uintptr_t v = U(ctx);
    if (v == FAKE_CTX)
        return 0;
    if (v <= FAKE_CTX || (v - FAKE_CTX) % 0x1000 != 0 || (v - FAKE_CTX) / 0x1000 > FAKE_MAX_CTX)
        return -1;
    return (int)((v - FAKE_CTX) / 0x1000);
}

static void fake_ctx_use_add(int idx, int n)
{
    pthread_mutex_lock(&fake_ctx_lock);
    fake_ctx_use[idx] += n;
    pthread_mutex_unlock(&fake_ctx_lock);
}

/* ctx goes (destroyed, or the primary context's last release or reset):
 * counted when a thread other than the calling one has it pushed. The
 * driver leaves that undefined: no call may use a context while it is
 * destroyed. Under fake_ctx_lock. */
static void fake_ctx_going(CUcontext ctx)
{
    int idx = fake_ctx_index(ctx), mine = 0;
    for (int i = 0; i < fake_ctx_depth; i++)
        mine += fake_ctx_pushed[i] && fake_ctx_stack[i] == ctx;
    if (idx >= 0 && fake_ctx_use[idx] > mine)
        fake_ctx_misused++;
}

FAKE_API unsigned fake_ctx_destroyed_in_use(void)
{
    pthread_mutex_lock(&fake_ctx_lock);
    unsigned n = fake_ctx_misused;
    pthread_mutex_unlock(&fake_ctx_lock);
    return n;
}

/*
 * One-shot hooks: armed with a function, fired by a driver call, which then
 * runs the function on a thread of its own and waits for it (wait_ms at
 * most) before it goes on, as another thread of a program could act in that
 * window. Joining waits for the function and disarms.
 */
typedef struct fake_hook {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(void); /* set before the thread starts, cleared only after its join */
    uintptr_t key;    /* what fires it (a context); 0: any call of its kind */
    pthread_t thread;
    int started, done;
} fake_hook_t;

static fake_hook_t fake_last_release = {.mu = PTHREAD_MUTEX_INITIALIZER,
                                        .cv = PTHREAD_COND_INITIALIZER};
static fake_hook_t fake_push = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void fake_hook_arm(fake_hook_t *h, uintptr_t key, void (*fn)(void))
{
    pthread_mutex_lock(&h->mu);
    h->fn = fn;
    h->key = key;
    h->started = h->done = 0;
    pthread_mutex_unlock(&h->mu);
}

static void *fake_hook_run(void *arg)
{
    fake_hook_t *h = arg;
    pthread_mutex_lock(&h->mu);
    void (*fn)(void) = h->fn;
    pthread_mutex_unlock(&h->mu);
    if (fn)
        fn();
    pthread_mutex_lock(&h->mu);
    h->done = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void fake_hook_fire(fake_hook_t *h, uintptr_t key, long wait_ms)
{
    pthread_mutex_lock(&h->mu);
    if (h->fn && !h->started && (!h->key || h->key == key)) {
        h->started = pthread_create(&h->thread, NULL, fake_hook_run, h) == 0;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += wait_ms / 1000;
        until.tv_nsec += (wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (h->started && !h->done && pthread_cond_timedwait(&h->cv, &h->mu, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&h->mu);
}

/* Whether the hook had fired. */
static int fake_hook_join(fake_hook_t *h)
{
    pthread_mutex_lock(&h->mu);
    int started = h->started;
    pthread_mutex_unlock(&h->mu);
    /* the thread may not have read fn yet (the firing call waits a while at
     * most): cleared only once it has ended */
    if (started)
        pthread_join(h->thread, NULL);
    pthread_mutex_lock(&h->mu);
    h->fn = NULL;
    h->started = 0;
    pthread_mutex_unlock(&h->mu);
    return started;
}

FAKE_API void fake_arm_push(void *ctx, void (*fn)(void))
{
    fake_hook_arm(&fake_push, U(ctx), fn);
}

FAKE_API int fake_armed_push_join(void)
{
    return fake_hook_join(&fake_push);
}

CUcontext fake_current(void)
{
    if (fake_ctx_depth)
        return fake_ctx_stack[fake_ctx_depth - 1];
    return fake_ctx_none ? NULL : (CUcontext)FAKE_CTX;
}

static bool fake_ctx_valid(CUcontext ctx)
{
    bool ok = ctx == (CUcontext)FAKE_CTX;
    pthread_mutex_lock(&fake_ctx_lock);
    for (size_t i = 0; i < FAKE_MAX_CTX && !ok; i++)
        ok = ctx && fake_ctx_live[i] == U(ctx);
    pthread_mutex_unlock(&fake_ctx_lock);
    return ok;
}

/* fake_arm_ctx_meet's: how many cuCtxGetCurrent calls it waits for (0: not
 * armed), how many came, and how many of those left the meeting since. */
static pthread_mutex_t fake_meet_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_meet_cv = PTHREAD_COND_INITIALIZER;
static unsigned fake_meet_want, fake_meet_came, fake_meet_left;

FAKE_API void fake_arm_ctx_meet(unsigned n)
{
    pthread_mutex_lock(&fake_meet_mu);
    fake_meet_want = n;
    fake_meet_came = fake_meet_left = 0;
    pthread_mutex_unlock(&fake_meet_mu);
}

/* Waits (10 s at most) until done() holds. Under fake_meet_mu. */
static void fake_meet_wait(bool (*done)(void))
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (!done() && pthread_cond_timedwait(&fake_meet_cv, &fake_meet_mu, &until) == 0) {
    }
}

static bool fake_meet_all_came(void)
{
    return fake_meet_came >= fake_meet_want;
}

static bool fake_meet_all_left(void)
{
    return fake_meet_left >= fake_meet_want;
}

/* A call of the armed meeting waits for the others. */
static void fake_meet(void)
{
    pthread_mutex_lock(&fake_meet_mu);
    if (fake_meet_want && fake_meet_came < fake_meet_want) {
        fake_meet_came++;
        pthread_cond_broadcast(&fake_meet_cv);
        fake_meet_wait(fake_meet_all_came);
        fake_meet_left++;
        pthread_cond_broadcast(&fake_meet_cv);
    }
    pthread_mutex_unlock(&fake_meet_mu);
}

/* Whoever leaves the meeting first and asks for its context's device (the
 * shim does, creating its state for a context) waits until the others left
 * too: they looked their context up while it had no state yet. */
static void fake_meet_after(void)
{
    pthread_mutex_lock(&fake_meet_mu);
    if (fake_meet_want && fake_meet_came >= fake_meet_want)
        fake_meet_wait(fake_meet_all_left);
    pthread_mutex_unlock(&fake_meet_mu);
}

CUresult fk_cuCtxGetCurrent(CUcontext *ctx)
{
    fake_stall_fire(FAKE_STALL_CTX_GET_CURRENT);
    fake_meet();
    *ctx = fake_current();
    return CUDA_SUCCESS;
}

CUresult fk_cuCtxPushCurrent_v2(CUcontext ctx)
{
    REC(U(ctx), 0, 0, 0);
    int idx = fake_ctx_index(ctx);
    if (idx < 0 || fake_ctx_depth == FAKE_CTX_DEPTH)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_ctx_use_add(idx, 1);
    fake_hook_fire(&fake_push, U(ctx), 500);
    if (!fake_ctx_valid(ctx)) {
        fake_ctx_use_add(idx, -1);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    fake_ctx_pushed[fake_ctx_depth] = true;
    fake_ctx_stack[fake_ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

CUresult fk_cuCtxPopCurrent_v2(CUcontext *ctx)
{
    REC0();
    CUcontext top = fake_current();
    if (!fake_ctx_depth) {
        fake_ctx_none = true;
        if (!top)
            return CUDA_ERROR_INVALID_CONTEXT;
    } else if (fake_ctx_pushed[--fake_ctx_depth]) {
        fake_ctx_pushed[fake_ctx_depth] = false;
        fake_ctx_use_add(fake_ctx_index(top), -1);
    }
    if (ctx)
        *ctx = top;
    return CUDA_SUCCESS;
}

FAKE_API void fake_ctx_next_handle(void *ctx)
{
    pthread_mutex_lock(&fake_ctx_lock);
    fake_ctx_next = U(ctx);
    pthread_mutex_unlock(&fake_ctx_lock);
}

/* Whether a created context holds handle v now. Under fake_ctx_lock. */
static bool fake_ctx_created(uintptr_t v)
{
    for (size_t i = 0; i < FAKE_MAX_CTX; i++)
        if (fake_ctx_live[i] == v)
            return true;
    return false;
}

/* The armed handle for the next context, if it is free: not a live
 * context's, and for the primary context's, not while it is active. Under
 * fake_ctx_lock; disarms. */
static uintptr_t fake_ctx_take_next(void)
{
    uintptr_t v = fake_ctx_next;
    fake_ctx_next = 0;
    if (!v || fake_ctx_created(v) || (v == FAKE_CTX && fake_primary_refs > 0))
        return 0;
    return v;
}

/* A new context's handle (a green context's converted one if green), or
 * NULL where FAKE_CUDA_MAX_CTX contexts live. Under fake_ctx_lock. */
static CUcontext fake_ctx_new(bool green)
{
    uintptr_t next = fake_ctx_take_next();
    for (size_t i = 0, limit = fake_ctx_limit(); i < limit; i++)
        if (!fake_ctx_live[i]) {
            /* the handle of slot i: a destroyed context's comes back, as the
             * driver's addresses do (or the one armed) */
            fake_ctx_live[i] = next ? next : FAKE_CTX + 0x1000 * (i + 1);
            fake_ctx_green[i] = green;
            return (CUcontext)fake_ctx_live[i];
        }
    return NULL;
}

/* Drops the created context ctx (green: a green context's) from the live
 * ones; whether it lived. Under fake_ctx_lock. */
static bool fake_ctx_drop(CUcontext ctx, bool green)
{
    for (size_t i = 0; i < FAKE_MAX_CTX; i++)
        if (ctx && fake_ctx_live[i] == U(ctx) && fake_ctx_green[i] == green) {
            fake_ctx_going(ctx);
            fake_ctx_live[i] = 0;
            fake_ctx_green[i] = false;
            return true;
        }
    return false;
}

/* ctx went: no longer current on this thread (other threads' stacks are theirs). */
static void fake_ctx_unstack(CUcontext ctx)
{
    int keep = 0;
    for (int i = 0; i < fake_ctx_depth; i++) {
        if (fake_ctx_stack[i] == ctx) {
            if (fake_ctx_pushed[i])
                fake_ctx_use_add(fake_ctx_index(ctx), -1);
            continue;
        }
        fake_ctx_pushed[keep] = fake_ctx_pushed[i];
        fake_ctx_stack[keep++] = fake_ctx_stack[i];
    }
    fake_ctx_depth = keep;
}

CUresult fk_cuCtxCreate_v2(CUcontext *ctx, unsigned flags, CUdevice dev)
{
    (void)flags;
    if (!ctx || dev != 0 || fake_ctx_depth == FAKE_CTX_DEPTH)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fake_ctx_lock);
    CUcontext c = fake_ctx_new(false);
    pthread_mutex_unlock(&fake_ctx_lock);
    REC(U(c), 0, 0, 0);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ctx = c;
    fake_ctx_pushed[fake_ctx_depth] = false;
    fake_ctx_stack[fake_ctx_depth++] = c;
    return CUDA_SUCCESS;
}

CUresult fk_cuCtxDestroy_v2(CUcontext ctx)
{
    REC(U(ctx), 0, 0, 0);
    /* neither the primary context nor a green context's is destroyed so */
    pthread_mutex_lock(&fake_ctx_lock);
    bool went = fake_ctx_drop(ctx, false);
    pthread_mutex_unlock(&fake_ctx_lock);
    if (!went)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_free_ctx(ctx);
    fake_ctx_unstack(ctx);
    return CUDA_SUCCESS;
}

/* The CUDA 2.0 ABI (before the context stack of 4.0): the same here. */
CUresult fk_cuCtxDestroy(CUcontext ctx)
{
    REC(U(ctx), 0, 0, 0);
    return fk_cuCtxDestroy_v2(ctx);
}

CUresult fk_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    REC(U(dev), 0, 0, 0);
    if (!ctx || dev != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fake_ctx_lock);
    fake_primary_refs++;
    pthread_mutex_unlock(&fake_ctx_lock);
    *ctx = (CUcontext)FAKE_CTX;
    return CUDA_SUCCESS;
}

FAKE_API void fake_arm_last_release(void (*fn)(void))
{
    fake_hook_arm(&fake_last_release, 0, fn);
}

FAKE_API void fake_last_release_join(void)
{
    (void)fake_hook_join(&fake_last_release);
}

CUresult fk_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    REC(U(dev), 0, 0, 0);
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fake_ctx_lock);
    int refs = fake_primary_refs > 0 ? --fake_primary_refs : -1;
    if (refs == 0)
        fake_ctx_going((CUcontext)FAKE_CTX);
    pthread_mutex_unlock(&fake_ctx_lock);
    if (refs < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (refs == 0) {
        fake_free_ctx((CUcontext)FAKE_CTX);
        fake_hook_fire(&fake_last_release, 0, 2000);
    }
    return CUDA_SUCCESS;
}

CUresult fk_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    REC(U(dev), 0, 0, 0);
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fake_ctx_lock);
    /* a created context at the gone primary context's handle is not it */
    bool other = fake_ctx_created(FAKE_CTX);
    if (!other)
        fake_ctx_going((CUcontext)FAKE_CTX);
    pthread_mutex_unlock(&fake_ctx_lock);
    if (!other)
        fake_free_ctx((CUcontext)FAKE_CTX);
    return CUDA_SUCCESS;
}

/* The CUDA 7.0 ABIs (before 11.0's): the same here. */
CUresult fk_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    REC(U(dev), 0, 0, 0);
    return fk_cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult fk_cuDevicePrimaryCtxReset(CUdevice dev)
{
    REC(U(dev), 0, 0, 0);
    return fk_cuDevicePrimaryCtxReset_v2(dev);
}

/*
 * Green contexts: each holds a created context, its converted one
 * (cuCtxFromGreenCtx hands it out, always the same), which a program pushes
 * to make the green context current, and a reference to the primary
 * context, taken at its creation and dropped at its destruction (the last
 * one then destroys the primary context, as a release does). A green
 * context's handle is its converted context's plus FAKE_GREEN_OFFSET, never
 * a context's. cuCtxDestroy does not destroy a converted context.
 */
#define FAKE_GREEN_OFFSET 0x800

CUresult fk_cuGreenCtxCreate(CUgreenCtx *green, CUdevResourceDesc desc, CUdevice dev,
                             unsigned flags)
{
    (void)desc;
    if (!green || dev != 0 || !(flags & CU_GREEN_CTX_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fake_ctx_lock);
    CUcontext c = fake_ctx_new(true);
    if (c)
        fake_primary_refs++;
    pthread_mutex_unlock(&fake_ctx_lock);
    REC(U(c), 0, 0, 0);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *green = (CUgreenCtx)(U(c) + FAKE_GREEN_OFFSET);
    return CUDA_SUCCESS;
}

CUresult fk_cuCtxFromGreenCtx(CUcontext *ctx, CUgreenCtx green)
{
    CUresult r = CUDA_ERROR_INVALID_CONTEXT;
    uintptr_t c = U(green) - FAKE_GREEN_OFFSET;
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fake_ctx_lock);
    for (size_t i = 0; i < FAKE_MAX_CTX && green; i++)
        if (fake_ctx_live[i] == c && fake_ctx_green[i]) {
            *ctx = (CUcontext)c;
            r = CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&fake_ctx_lock);
    return r;
}

CUresult fk_cuGreenCtxDestroy(CUgreenCtx green)
{
    REC(U(green), 0, 0, 0);
    CUcontext c = (CUcontext)(U(green) - FAKE_GREEN_OFFSET);
    int refs = -1;
    pthread_mutex_lock(&fake_ctx_lock);
    if (green && fake_ctx_drop(c, true)) {
        refs = --fake_primary_refs;
        if (refs == 0)
            fake_ctx_going((CUcontext)FAKE_CTX);
    }
    pthread_mutex_unlock(&fake_ctx_lock);
    if (refs < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_free_ctx(c);
    fake_ctx_unstack(c);
    if (refs == 0) {
        fake_free_ctx((CUcontext)FAKE_CTX);
        fake_hook_fire(&fake_last_release, 0, 2000);
    }
    return CUDA_SUCCESS;
}

CUresult fk_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fake_ctx_lock);
    *active = fake_primary_refs > 0;
    pthread_mutex_unlock(&fake_ctx_lock);
    *flags = 0;
    return CUDA_SUCCESS;
}

CUresult fk_cuCtxGetDevice(CUdevice *dev)
{
    fake_meet_after();
    *dev = 0;
    return CUDA_SUCCESS;
}

CUresult fk_cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    (void)dev;
    *bytes = FAKE_TOTAL_MEMORY;
    return CUDA_SUCCESS;
}
