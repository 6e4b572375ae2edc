/*
 * The driver double's streams: tokens, every call recorded, and the stream
 * capture entry points (which stream captures, whether the legacy stream is
 * usable meanwhile, the graph a capture records: fake_cuda.h). The captures
 * in progress, their modes and invalidation are fake_cuda_capture.c's;
 * events, and a stream's wait for one, fake_cuda_event.c's.
 */
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
        fake_capture_invalidate(U(s));
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

/* Ends the capture begun on s (fake_end_capture, fake_cuda_capture.c): a
 * graph, or no graph and CUDA_ERROR_STREAM_CAPTURE_INVALIDATED if something
 * invalidated the capture meanwhile, or CUDA_ERROR_STREAM_CAPTURE_UNJOINED if
 * a stream that joined it has work not joined back into s
 * (fake_cuda_join.c). */
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

static CUresult fake_is_capturing(CUstream s, int ptsz, CUstreamCaptureStatus *st)
{
    CUstream of = fake_stream_of(s, ptsz);
    uint64_t id;
    *st = fake_capture_status(U(of), &id);
    CUresult r = fake_legacy_blocked(of) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
    fake_arm_fire(s);
    return r;
}

CUresult fk_cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    fake_stall_fire_on(FAKE_STALL_QUERY, U(s));
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
    uint64_t cid = 0;
    (void)fake_capture_status(U(fake_stream_of(s, 0)), &cid);
    if (id)
        *id = g ? cid : 0;
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
