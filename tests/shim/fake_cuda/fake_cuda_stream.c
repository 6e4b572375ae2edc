/*
 * The driver double's streams: tokens, every call recorded, and stream
 * capture as far as the shim needs it (which stream captures, whether the
 * legacy stream is usable meanwhile, the capture modes, and the graph a
 * capture records: fake_cuda.h). Events, and a stream's wait for one, are
 * fake_cuda_event.c's.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "fake_cuda_internal.h"

static _Atomic uintptr_t fake_next_stream = 0x5000;

/* The flags each stream was created with, by stream number (tokens from
 * 0x5000), FAKE_STREAM_LIVE set while the stream lives. A handle the double
 * did not hand out (a test's own token) has none: taken for a non-blocking
 * stream. */
#define FAKE_STREAMS     4096
#define FAKE_STREAM_LIVE 0x80000000u
static _Atomic unsigned fake_stream_flags[FAKE_STREAMS];
/* the context each was created in: a blocking stream is ordered with that
 * context's legacy stream (every context has its own) */
static _Atomic uintptr_t fake_stream_ctx_of[FAKE_STREAMS];

static _Atomic unsigned *fake_stream_slot(CUstream s)
{
    uintptr_t i = U(s) - 0x5000;
    return U(s) >= 0x5000 && i < FAKE_STREAMS ? &fake_stream_flags[i] : NULL;
}

/* A stream of context ctx. */
static CUstream fake_stream_new(unsigned flags, CUcontext ctx)
{
    CUstream s = (CUstream)atomic_fetch_add(&fake_next_stream, 1);
    _Atomic unsigned *f = fake_stream_slot(s);
    if (f) {
        atomic_store(&fake_stream_ctx_of[f - fake_stream_flags], U(ctx));
        atomic_store(f, FAKE_STREAM_LIVE | flags);
    }
    return s;
}

CUresult fk_cuStreamCreate(CUstream *s, unsigned flags)
{
    fake_unsafe_watched();
    *s = fake_stream_new(flags, fake_current());
    REC(U(*s), flags, 0, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuStreamCreateWithPriority(CUstream *s, unsigned flags, int priority)
{
    fake_unsafe_watched();
    *s = fake_stream_new(flags, fake_current());
    REC(U(*s), flags, (uint64_t)(int64_t)priority, 0);
    return CUDA_SUCCESS;
}

/* A stream of a green context's converted context; the driver takes
 * non-blocking ones only. */
CUresult fk_cuGreenCtxStreamCreate(CUstream *s, CUgreenCtx green, unsigned flags, int priority)
{
    CUcontext ctx = NULL;
    if (!s || !(flags & CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fk_cuCtxFromGreenCtx(&ctx, green);
    if (r != CUDA_SUCCESS)
        return r;
    fake_unsafe_watched();
    *s = fake_stream_new(flags, ctx);
    REC(U(*s), flags, (uint64_t)(int64_t)priority, U(green));
    return CUDA_SUCCESS;
}

static void fake_stream_gone(CUstream s)
{
    _Atomic unsigned *f = fake_stream_slot(s);
    if (f)
        atomic_store(f, 0);
}

CUresult fk_cuStreamDestroy_v2(CUstream s)
{
    REC(U(s), 0, 0, 0);
    fake_stream_gone(s);
    return CUDA_SUCCESS;
}

/* The CUDA 2.0 ABI: the same here. */
CUresult fk_cuStreamDestroy(CUstream s)
{
    REC(U(s), 0, 0, 0);
    fake_stream_gone(s);
    return CUDA_SUCCESS;
}

static __thread char fake_pt_stream;

uintptr_t fake_stream_ctx(CUstream s)
{
    _Atomic unsigned *f = fake_stream_slot(s);
    if (f && (atomic_load(f) & FAKE_STREAM_LIVE))
        return atomic_load(&fake_stream_ctx_of[f - fake_stream_flags]);
    return U(fake_current());
}

bool fake_stream_blocking(CUstream s)
{
    if (s == (CUstream)&fake_pt_stream)
        return true;
    _Atomic unsigned *f = fake_stream_slot(s);
    unsigned v = f ? atomic_load(f) : 0;
    return (v & FAKE_STREAM_LIVE) && !(v & CU_STREAM_NON_BLOCKING);
}

/* The flags s (fake_stream_of) was created with; the legacy stream and a
 * per-thread default stream have CU_STREAM_DEFAULT. */
static CUresult fake_get_flags(CUstream s, unsigned *flags)
{
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (s == NULL || s == (CUstream)&fake_pt_stream) {
        *flags = CU_STREAM_DEFAULT;
        return CUDA_SUCCESS;
    }
    _Atomic unsigned *f = fake_stream_slot(s);
    unsigned v = f ? atomic_load(f) : 0;
    if (!(v & FAKE_STREAM_LIVE))
        return CUDA_ERROR_INVALID_HANDLE;
    *flags = v & ~FAKE_STREAM_LIVE;
    return CUDA_SUCCESS;
}

CUresult fk_cuStreamGetFlags(CUstream s, unsigned *flags)
{
    REC(U(s), 0, 0, 0);
    return fake_get_flags(fake_stream_of(s, 0), flags);
}

CUresult fk_cuStreamGetFlags_ptsz(CUstream s, unsigned *flags)
{
    REC(U(s), 0, 0, 0);
    return fake_get_flags(fake_stream_of(s, 1), flags);
}

/* Work runs at once in the double, so a synchronization has nothing to wait
 * for; what it checks is the driver's: a potentially unsafe call
 * (fake_unsafe_refused), refused on a stream that captures (a capture has
 * nothing to wait for: refused, and the capture invalidated), and on the
 * legacy stream while a blocking stream captures (fake_legacy_work). */
static CUresult fake_stream_sync(CUstream s)
{
    if (fake_unsafe_refused())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (fake_capture_graph(s, 0)) {
        fake_capture_invalidate();
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return fake_legacy_work(s) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
}

CUresult fk_cuStreamSynchronize(CUstream s)
{
    REC(U(s), 0, 0, 0);
    return fake_stream_sync(fake_stream_of(s, 0));
}

CUresult fk_cuStreamSynchronize_ptsz(CUstream s)
{
    REC(U(s), 0, 0, 0);
    return fake_stream_sync(fake_stream_of(s, 1));
}

/* Each thread's per-thread default stream is a stream of its own, named
 * by the address of a thread-local (fake_pt_stream: no stream token is one),
 * apart from the legacy stream (NULL) and from every other thread's. */

CUstream fake_stream_of(CUstream s, int ptsz)
{
    if (s == CU_STREAM_LEGACY)
        return NULL;
    if (s == CU_STREAM_PER_THREAD || (s == NULL && ptsz))
        return (CUstream)&fake_pt_stream;
    return s;
}

static _Atomic(uintptr_t) fake_capturing;
static _Atomic int fake_capture_blocking; /* the capturing stream is a blocking one */
/* the context whose legacy stream that makes unusable; 0: every context's
 * (fake_set_capturing_blocking, which names no context) */
static _Atomic(uintptr_t) fake_capture_ctx;
static _Atomic int fake_capture_broken;
/* A capture ended (or was replaced) with a stream that joined it (through an
 * event: fake_wait_joins_capture) not joined back into its origin
 * (fake_cuda_join.c): its end failed unjoined. Apart from
 * fake_capture_broken, which is an invalidation; both until the next
 * capture begins. */
static _Atomic int fake_capture_joined;

/* The capture in progress ends (or a fake_set_capturing one is replaced):
 * every stream leaves it; whether one that joined was not joined back. */
static bool fake_unjoin_all(void)
{
    bool unjoined = atomic_load(&fake_capturing) && fake_join_unjoined();
    if (unjoined)
        atomic_store(&fake_capture_joined, 1);
    fake_join_end();
    return unjoined;
}

/* Whether s captures: the capturing stream, or one that joined it. */
bool fake_in_capture(uintptr_t s)
{
    return s && atomic_load(&fake_capturing) && fake_join_in(s);
}

/* A capture begun with cuStreamBeginCapture: its mode, and the thread that
 * began it (the address of a thread-local); none for fake_set_capturing's. */
static _Atomic int fake_capture_begun;
static _Atomic int fake_capture_mode;
static _Atomic(uintptr_t) fake_capture_thread;
static _Atomic(uintptr_t) fake_capture_g; /* the graph it records (fake_cuda.h) */
static _Atomic uint64_t fake_capture_id;  /* its sequence number, from 1 */
static __thread int fake_thread_tag;
static __thread int fake_thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

FAKE_API void fake_set_capturing(void *stream)
{
    fake_unjoin_all();
    atomic_store(&fake_capture_begun, 0);
    atomic_store(&fake_capture_blocking, 0);
    fake_join_begin(U(fake_stream_of(stream, 0)), NULL);
    atomic_store(&fake_capturing, U(fake_stream_of(stream, 0)));
}

/* While a blocking stream captures, the legacy stream is unusable: work on it
 * would depend on the capture. The driver refuses it with
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and the capture is invalidated; the
 * double records that (fake_capture_invalidated). A query of the legacy
 * stream gets the same error and invalidates nothing. */
FAKE_API void fake_set_capturing_blocking(void *stream)
{
    fake_unjoin_all();
    atomic_store(&fake_capture_begun, 0);
    fake_join_begin(U(fake_stream_of(stream, 0)), NULL);
    atomic_store(&fake_capturing, U(fake_stream_of(stream, 0)));
    atomic_store(&fake_capture_ctx, 0);
    atomic_store(&fake_capture_blocking, stream != NULL);
}

/* Whether the last capture was invalidated (work on the legacy stream, a
 * potentially unsafe call), or joined by another stream through an event
 * recorded in it and not joined back (now, or when it ended). */
FAKE_API int fake_capture_invalidated(void)
{
    return atomic_load(&fake_capture_broken) || atomic_load(&fake_capture_joined) ||
           (atomic_load(&fake_capturing) && fake_join_unjoined());
}

/* The calling thread's legacy stream is that of its current context. */
bool fake_legacy_blocked(CUstream s)
{
    uintptr_t ctx = atomic_load(&fake_capture_ctx);
    return s == NULL && atomic_load(&fake_capturing) && atomic_load(&fake_capture_blocking) &&
           (!ctx || ctx == U(fake_current()));
}

void fake_capture_invalidate(void)
{
    atomic_store(&fake_capture_broken, 1);
}

bool fake_legacy_work(CUstream s)
{
    if (!fake_legacy_blocked(s))
        return false;
    fake_capture_invalidate();
    return true;
}

/*
 * Capture interaction modes (cuThreadExchangeStreamCaptureMode), as the
 * driver documents them: each thread has a mode, GLOBAL until it exchanges
 * it, and each capture keeps the mode it was begun with. A thread may not
 * make a potentially unsafe call (one that is not queued to a stream, so a
 * capture would not see it: a synchronization, a query of an event or a
 * stream, an allocation or a free) while
 * - it is GLOBAL or THREAD_LOCAL and began a capture still in progress that
 *   was not begun RELAXED, or
 * - it is GLOBAL and another thread has a capture in progress begun GLOBAL.
 * A RELAXED thread is never held back by the mode (what conflicts with a
 * capture by nature, such as a query of an event recorded in it, is apart).
 * A refused call fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the
 * capture is invalidated: its cuStreamEndCapture fails with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and gives no graph. The calls the
 * double refuses so: cuMemAlloc_v2, cuMemAllocManaged, cuMemAllocPitch_v2,
 * cuMemFree_v2, cuStreamSynchronize, cuCtxSynchronize and cuEventQuery
 * (a watchdog thread's event query breaks a GLOBAL capture of another
 * thread on the real driver, the reason programs that poll events switch
 * their mode). The driver's documentation names no further calls (its
 * example is cudaMalloc, and it forbids in every mode what conflicts with a
 * capture by nature); stream and event creation, which it does not name,
 * are not refused but counted (fake_unsafe_watched). The double models one capture at a time, with
 * no notion of device: a capture refuses the calls of every context's threads. fake_unsafe_relaxed
 * counts the calls a capture's mode would have refused that went through because the caller was
 * RELAXED, so a test can tell that such calls were made, and made RELAXED.
 */
static _Atomic unsigned fake_relaxed_calls;

FAKE_API unsigned fake_unsafe_relaxed(void)
{
    return atomic_load(&fake_relaxed_calls);
}

/* Whether a capture begun with cuStreamBeginCapture forbids the calling
 * thread potentially unsafe calls, by the mode it was begun with and by who
 * began it, leaving the caller's own mode apart (fake_unsafe_refused). */
static bool fake_capture_forbids(void)
{
    if (!atomic_load(&fake_capture_begun))
        return false;
    int mode = atomic_load(&fake_capture_mode);
    bool mine = atomic_load(&fake_capture_thread) == U(&fake_thread_tag);
    return mine ? mode != CU_STREAM_CAPTURE_MODE_RELAXED : mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
}

int fake_unsafe_refused(void)
{
    bool forbidden = fake_capture_forbids();
    if (fake_thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED) {
        if (forbidden)
            atomic_fetch_add(&fake_relaxed_calls, 1);
        return 0;
    }
    bool mine = atomic_load(&fake_capture_thread) == U(&fake_thread_tag);
    bool refused = forbidden && (mine || fake_thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (refused)
        atomic_store(&fake_capture_broken, 1);
    return refused;
}

/* Stream and event creation: see fake_capture_creations (fake_cuda.h). */
static _Atomic unsigned fake_created_relaxed, fake_created_strict;

void fake_unsafe_watched(void)
{
    if (!fake_capture_forbids())
        return;
    bool mine = atomic_load(&fake_capture_thread) == U(&fake_thread_tag);
    if (fake_thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        atomic_fetch_add(&fake_created_relaxed, 1);
    else if (mine || fake_thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
        atomic_fetch_add(&fake_created_strict, 1);
}

FAKE_API void fake_capture_creations(unsigned *relaxed_p, unsigned *strict_p)
{
    *relaxed_p = atomic_load(&fake_created_relaxed);
    *strict_p = atomic_load(&fake_created_strict);
}

CUresult fk_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    REC((uint64_t)*mode, (uint64_t)fake_thread_mode, 0, 0);
    int prev = fake_thread_mode;
    fake_thread_mode = (int)*mode;
    *mode = (CUstreamCaptureMode)prev;
    return CUDA_SUCCESS;
}

/* Begins capturing on stream s (fake_stream_of). While a blocking stream
 * (a per-thread default stream, or one created without
 * CU_STREAM_NON_BLOCKING: fake_stream_blocking) captures, whatever the
 * capture's mode, the legacy stream of its context (the one current where
 * it was created; a per-thread default stream's: the one current here) is
 * unusable, as with fake_set_capturing_blocking (CUDA's cuStreamIsCapturing
 * documentation); other contexts' legacy streams are not. */
static CUresult fake_begin_capture(CUstream s, CUstreamCaptureMode mode)
{
    if (!s || atomic_load(&fake_capturing))
        return CUDA_ERROR_ILLEGAL_STATE;
    CUgraph g;
    CUresult r = fk_cuGraphCreate(&g, 0);
    if (r != CUDA_SUCCESS)
        return r;
    fake_join_begin(U(s), g);
    atomic_store(&fake_capture_g, U(g));
    atomic_fetch_add(&fake_capture_id, 1);
    atomic_store(&fake_capture_broken, 0);
    atomic_store(&fake_capture_joined, 0);
    atomic_store(&fake_capture_mode, (int)mode);
    atomic_store(&fake_capture_thread, U(&fake_thread_tag));
    atomic_store(&fake_capture_ctx, fake_stream_ctx(s));
    atomic_store(&fake_capture_blocking, fake_stream_blocking(s));
    atomic_store(&fake_capturing, U(s));
    atomic_store(&fake_capture_begun, 1);
    return CUDA_SUCCESS;
}

/* CUDA 10.0's ABI: no mode argument, the capture is begun GLOBAL. */
CUresult fk_cuStreamBeginCapture(CUstream s)
{
    REC(U(s), (uint64_t)CU_STREAM_CAPTURE_MODE_GLOBAL, 0, 0);
    return fake_begin_capture(fake_stream_of(s, 0), CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult fk_cuStreamBeginCapture_ptsz(CUstream s)
{
    REC(U(s), (uint64_t)CU_STREAM_CAPTURE_MODE_GLOBAL, 0, 0);
    return fake_begin_capture(fake_stream_of(s, 1), CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult fk_cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    REC(U(s), (uint64_t)mode, 0, 0);
    return fake_begin_capture(fake_stream_of(s, 0), mode);
}

CUresult fk_cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    REC(U(s), (uint64_t)mode, 0, 0);
    return fake_begin_capture(fake_stream_of(s, 1), mode);
}

/* Ends it, taking every stream out of it: a graph, or no graph and
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED if something invalidated the capture
 * meanwhile, or CUDA_ERROR_STREAM_CAPTURE_UNJOINED if a stream that joined
 * it has work not joined back into s (fake_cuda_join.c). Ended on a stream
 * that joined it: CUDA_ERROR_STREAM_CAPTURE_UNMATCHED (cuda.h: "the capture
 * was not initiated in this stream"), the capture invalidated and still in
 * progress. */
static CUresult fake_end_capture(CUstream s, CUgraph *g)
{
    if (g && s && atomic_load(&fake_capture_begun) && atomic_load(&fake_capturing) != U(s) &&
        fake_in_capture(U(s))) {
        fake_capture_invalidate(); /* an illegal operation, as the programming guide has it */
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    }
    if (!g || !s || atomic_load(&fake_capturing) != U(s) || !atomic_load(&fake_capture_begun))
        return CUDA_ERROR_ILLEGAL_STATE;
    atomic_store(&fake_capture_begun, 0);
    atomic_store(&fake_capture_blocking, 0);
    bool joined = fake_unjoin_all();
    atomic_store(&fake_capturing, 0);
    CUgraph captured = (CUgraph)atomic_exchange(&fake_capture_g, 0);
    *g = NULL;
    int broken = atomic_load(&fake_capture_broken);
    if (broken || joined) {
        (void)fk_cuGraphDestroy(captured);
        return broken ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    }
    *g = captured;
    return CUDA_SUCCESS;
}

CUresult fk_cuStreamEndCapture(CUstream s, CUgraph *g)
{
    REC(U(s), 0, 0, 0);
    return fake_end_capture(fake_stream_of(s, 0), g);
}

CUresult fk_cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
    REC(U(s), 0, 0, 0);
    return fake_end_capture(fake_stream_of(s, 1), g);
}

CUgraph fake_capture_graph(CUstream s, int ptsz)
{
    s = fake_stream_of(s, ptsz);
    if (!atomic_load(&fake_capture_begun) || !fake_in_capture(U(s)))
        return NULL;
    fake_capture_from_stream(U(s));
    return (CUgraph)atomic_load(&fake_capture_g);
}

static CUresult fake_is_capturing(CUstream s, int ptsz, CUstreamCaptureStatus *st)
{
    CUstream of = fake_stream_of(s, ptsz);
    *st = !fake_in_capture(U(of))             ? CU_STREAM_CAPTURE_STATUS_NONE
          : atomic_load(&fake_capture_broken) ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                              : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CUresult r = fake_legacy_blocked(of) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
    fake_arm_fire(s);
    return r;
}

CUresult fk_cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    CUresult r = fake_is_capturing(s, 0, st);
    REC(U(s), (uint64_t)*st, 0, 0);
    return r;
}

CUresult fk_cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st)
{
    CUresult r = fake_is_capturing(s, 1, st);
    REC(U(s), (uint64_t)*st, 0, 0);
    return r;
}

/* CUDA 11.3's cuStreamGetCaptureInfo: the status as cuStreamIsCapturing
 * answers it, and while a capture begun with cuStreamBeginCapture records
 * (fake_capture_graph) and is active (cuda.h: nothing but the status is
 * valid otherwise; an invalidated capture gives id 0 and no graph) its id, unique in the process,
 * the graph it records into and the stream's dependency set (fake_join_deps: the node it
 * captured last, and the sets of the captured events it waited for since; the array is the
 * calling thread's, valid until its next query); a fake_set_capturing capture has id 0, no
 * graph and no dependencies. */
static __thread CUgraphNode fake_dep_out[64];

CUresult fk_cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id,
                                      CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_is_capturing(s, 0, st);
    CUgraph g = r == CUDA_SUCCESS && *st == CU_STREAM_CAPTURE_STATUS_ACTIVE
                    ? fake_capture_graph(s, 0)
                    : NULL;
    REC(U(s), (uint64_t)*st, U(g), 0);
    if (id)
        *id = g ? atomic_load(&fake_capture_id) : 0;
    if (graph)
        *graph = g;
    size_t n = g ? fake_join_deps(U(fake_stream_of(s, 0)), fake_dep_out, 64) : 0;
    if (deps)
        *deps = n ? fake_dep_out : NULL;
    if (ndeps)
        *ndeps = n;
    return r;
}

/* CUDA 11.3's cuStreamUpdateCaptureDependencies: adds nodes of the capture's
 * graph to the dependency set of s, or replaces it with them
 * (CU_STREAM_SET_CAPTURE_DEPENDENCIES); CUDA_ERROR_ILLEGAL_STATE where s
 * does not capture into a graph (fake_join_update). */
static CUresult fake_update_deps(CUstream s, int ptsz, CUgraphNode *deps, size_t n, unsigned flags)
{
    CUstream of = fake_stream_of(s, ptsz);
    if (!fake_capture_graph(of, 0))
        return CUDA_ERROR_ILLEGAL_STATE;
    return fake_join_update(U(of), deps, n, flags);
}

CUresult fk_cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode *deps, size_t n,
                                              unsigned flags)
{
    REC(U(s), n, flags, 0);
    return fake_update_deps(s, 0, deps, n, flags);
}

CUresult fk_cuStreamUpdateCaptureDependencies_ptsz(CUstream s, CUgraphNode *deps, size_t n,
                                                   unsigned flags)
{
    REC(U(s), n, flags, 0);
    return fake_update_deps(s, 1, deps, n, flags);
}
