/*
 * The driver double's captures in progress (fake_cuda_capture.h): several at
 * once, on different streams and threads, each with its own graph, mode,
 * origin stream, joined streams (fake_cuda_join.c) and invalidation, as
 * cuda.h and the CUDA programming guide describe stream capture:
 * - cuStreamBeginCapture on a stream taking part in a capture in progress:
 *   CUDA_ERROR_ILLEGAL_STATE; on any other stream a capture of its own begins;
 * - cuStreamEndCapture on a stream that joined a capture and did not begin it:
 *   CUDA_ERROR_STREAM_CAPTURE_UNMATCHED ("the capture was not initiated in
 *   this stream"); from a thread other than the one that began a capture not
 *   begun RELAXED: CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD. Either is an
 *   invalid operation: the capture is invalidated and stays in progress until
 *   ended where it may be;
 * - an invalid operation invalidates the capture(s) it concerns, no other
 *   (the programming guide's "Invalidation": the capture graphs associated
 *   with it): a synchronization of a capturing stream, work on a legacy
 *   stream that a blocking stream's capture makes unusable (each such
 *   capture), a potentially unsafe call (each capture whose mode refused it).
 * The double has no notion of device: a capture's mode holds back the calls
 * of every context's threads. Captures set up with fake_set_capturing (no
 * graph, no mode) replace every capture in progress.
 */
#include <stdatomic.h>
#include <string.h>

#include "fake_cuda_capture.h"
#include "fake_cuda_internal.h"

pthread_mutex_t fake_cap_mu = PTHREAD_MUTEX_INITIALIZER;
fake_capture_t fake_caps[FAKE_CAPTURES];
static uint64_t fake_cap_next_id;
/* Some capture ended (or was replaced) invalidated, or with a stream that
 * joined it not joined back into its origin: until a capture is next begun
 * with cuStreamBeginCapture (fake_capture_invalidated). */
static bool fake_cap_ended_bad;

/* Each thread is named by the address of a thread-local; its capture mode. */
static __thread int fake_thread_tag;
static __thread int fake_thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

fake_capture_t *fake_cap_of(uintptr_t s)
{
    for (int k = 0; s && k < FAKE_CAPTURES; k++)
        for (int i = 0; fake_caps[k].id && i < FAKE_JOIN_STREAMS; i++)
            if (fake_caps[k].js[i].s == s)
                return &fake_caps[k];
    return NULL;
}

fake_capture_t *fake_cap_by_id(uint64_t id)
{
    for (int k = 0; id && k < FAKE_CAPTURES; k++)
        if (fake_caps[k].id == id)
            return &fake_caps[k];
    return NULL;
}

/* Under fake_cap_mu: a new capture with origin s, or NULL when FAKE_CAPTURES
 * are in progress. */
static fake_capture_t *fake_cap_new(uintptr_t s)
{
    for (int k = 0; k < FAKE_CAPTURES; k++)
        if (!fake_caps[k].id) {
            fake_capture_t *c = &fake_caps[k];
            memset(c, 0, sizeof(*c));
            c->id = ++fake_cap_next_id;
            c->js[0].s = s;
            return c;
        }
    return NULL;
}

/* Under fake_cap_mu: c ends, every stream leaving it; its graph is the
 * caller's. CUDA_ERROR_STREAM_CAPTURE_INVALIDATED if it was invalidated,
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED if a stream that joined it was not
 * joined back (fake_cuda_join.c). */
static CUresult fake_cap_end(fake_capture_t *c)
{
    CUresult r = c->broken              ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                 : fake_cap_unjoined(c) ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED
                                        : CUDA_SUCCESS;
    fake_cap_ended_bad |= r != CUDA_SUCCESS;
    c->id = 0;
    return r;
}

/* Every capture in progress ends, its graph destroyed; a fake_set_capturing
 * capture on s (NULL: none) begins. */
static void fake_cap_replace(void *stream, bool blocking)
{
    uintptr_t s = U(fake_stream_of(stream, 0));
    CUgraph gone[FAKE_CAPTURES];
    int n = 0;
    pthread_mutex_lock(&fake_cap_mu);
    for (int k = 0; k < FAKE_CAPTURES; k++)
        if (fake_caps[k].id) {
            if (fake_caps[k].graph)
                gone[n++] = fake_caps[k].graph;
            (void)fake_cap_end(&fake_caps[k]);
        }
    fake_capture_t *c = s ? fake_cap_new(s) : NULL;
    if (c)
        c->blocking = blocking;
    pthread_mutex_unlock(&fake_cap_mu);
    while (n > 0)
        (void)fk_cuGraphDestroy(gone[--n]);
}

FAKE_API void fake_set_capturing(void *stream)
{
    fake_cap_replace(stream, false);
}

/* While a blocking stream captures, the legacy stream is unusable: work on it
 * would depend on the capture. The driver refuses it with
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and the capture is invalidated; the
 * double records that (fake_capture_invalidated). A query of the legacy
 * stream gets the same error and invalidates nothing. */
FAKE_API void fake_set_capturing_blocking(void *stream)
{
    fake_cap_replace(stream, stream != NULL);
}

/* Whether a capture in progress was invalidated (work on the legacy stream,
 * a potentially unsafe call, an invalid operation) or joined by another
 * stream through an event recorded in it and not joined back, or one that
 * ended since a capture was last begun was (fake_cap_ended_bad). */
FAKE_API int fake_capture_invalidated(void)
{
    pthread_mutex_lock(&fake_cap_mu);
    bool bad = fake_cap_ended_bad;
    for (int k = 0; k < FAKE_CAPTURES && !bad; k++)
        bad = fake_caps[k].id && (fake_caps[k].broken || fake_cap_unjoined(&fake_caps[k]));
    pthread_mutex_unlock(&fake_cap_mu);
    return bad;
}

bool fake_in_capture(uintptr_t s)
{
    pthread_mutex_lock(&fake_cap_mu);
    bool in = fake_cap_of(s) != NULL;
    pthread_mutex_unlock(&fake_cap_mu);
    return in;
}

CUgraph fake_capture_graph(CUstream s, int ptsz)
{
    s = fake_stream_of(s, ptsz);
    pthread_mutex_lock(&fake_cap_mu);
    fake_capture_t *c = fake_cap_of(U(s));
    CUgraph g = c && c->begun ? c->graph : NULL;
    pthread_mutex_unlock(&fake_cap_mu);
    if (g)
        fake_capture_from_stream(U(s));
    return g;
}

void fake_capture_invalidate(uintptr_t s)
{
    pthread_mutex_lock(&fake_cap_mu);
    fake_capture_t *c = fake_cap_of(s);
    if (c)
        c->broken = true;
    pthread_mutex_unlock(&fake_cap_mu);
}

CUstreamCaptureStatus fake_capture_status(uintptr_t s, uint64_t *id_p)
{
    pthread_mutex_lock(&fake_cap_mu);
    fake_capture_t *c = fake_cap_of(s);
    CUstreamCaptureStatus st = !c          ? CU_STREAM_CAPTURE_STATUS_NONE
                               : c->broken ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                           : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    *id_p = c && c->begun ? c->id : 0;
    pthread_mutex_unlock(&fake_cap_mu);
    return st;
}

/* Whether s is the legacy stream and a blocking stream's capture makes it
 * unusable (one of the calling thread's current context, or a
 * fake_set_capturing_blocking one, which names no context); those captures
 * are invalidated too when invalidate is set. */
static bool fake_legacy_check(CUstream s, bool invalidate)
{
    if (s != NULL)
        return false;
    uintptr_t cur = U(fake_current());
    bool blocked = false;
    pthread_mutex_lock(&fake_cap_mu);
    for (int k = 0; k < FAKE_CAPTURES; k++) {
        fake_capture_t *c = &fake_caps[k];
        if (c->id && c->blocking && (!c->ctx || c->ctx == cur)) {
            blocked = true;
            c->broken |= invalidate;
        }
    }
    pthread_mutex_unlock(&fake_cap_mu);
    return blocked;
}

bool fake_legacy_blocked(CUstream s)
{
    return fake_legacy_check(s, false);
}

bool fake_legacy_work(CUstream s)
{
    return fake_legacy_check(s, true);
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
 * capture by nature, such as a query of an event recorded in it, is apart:
 * fake_event_captured). A refused call fails with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and each capture that refused it is
 * invalidated (the driver invalidates "all the conflicting captures"): its
 * cuStreamEndCapture fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and
 * gives no graph; a capture in progress whose mode allowed the call is left
 * as it was. The calls the double refuses so: cuMemAlloc_v2,
 * cuMemAllocManaged, cuMemAllocPitch_v2, cuMemFree_v2, cuStreamSynchronize,
 * cuCtxSynchronize, cuEventQuery and cuEventSynchronize (a watchdog thread's
 * event query breaks a GLOBAL capture of another thread on the real driver,
 * the reason programs that poll events switch their mode). The driver's
 * documentation names no further calls (its example is cudaMalloc, and it
 * forbids in every mode what conflicts with a capture by nature); stream and
 * event creation, which it does not name, are not refused but counted
 * (fake_unsafe_watched). fake_unsafe_relaxed counts the calls a capture's
 * mode would have refused that went through because the caller was
 * RELAXED, so a test can tell that such calls were made, and made RELAXED.
 */
static _Atomic unsigned fake_relaxed_calls;

FAKE_API unsigned fake_unsafe_relaxed(void)
{
    return atomic_load(&fake_relaxed_calls);
}

/* Under fake_cap_mu: whether capture c (begun with cuStreamBeginCapture)
 * forbids the calling thread potentially unsafe calls, by the mode it was
 * begun with and by who began it, leaving the caller's own mode apart; and
 * whether it refuses the caller one, its mode counted. */
static bool fake_cap_forbids(const fake_capture_t *c)
{
    if (!c->id || !c->begun)
        return false;
    bool mine = c->thread == U(&fake_thread_tag);
    return mine ? c->mode != CU_STREAM_CAPTURE_MODE_RELAXED
                : c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
}

static bool fake_cap_refuses(const fake_capture_t *c)
{
    if (!fake_cap_forbids(c) || fake_thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return false;
    return c->thread == U(&fake_thread_tag) || fake_thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
}

/* Whether some capture forbids the calling thread a potentially unsafe call
 * (*forbidden_p) and whether one refuses it; those are invalidated when
 * invalidate is set. */
static bool fake_unsafe_check(bool *forbidden_p, bool invalidate)
{
    bool forbidden = false, refused = false;
    pthread_mutex_lock(&fake_cap_mu);
    for (int k = 0; k < FAKE_CAPTURES; k++) {
        forbidden |= fake_cap_forbids(&fake_caps[k]);
        if (fake_cap_refuses(&fake_caps[k])) {
            refused = true;
            fake_caps[k].broken |= invalidate;
        }
    }
    pthread_mutex_unlock(&fake_cap_mu);
    *forbidden_p = forbidden;
    return refused;
}

int fake_unsafe_refused(void)
{
    bool forbidden;
    bool refused = fake_unsafe_check(&forbidden, true);
    if (forbidden && fake_thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        atomic_fetch_add(&fake_relaxed_calls, 1);
    return refused;
}

/* Stream and event creation: see fake_capture_creations (fake_cuda.h). */
static _Atomic unsigned fake_created_relaxed, fake_created_strict;

void fake_unsafe_watched(void)
{
    bool forbidden;
    bool refused = fake_unsafe_check(&forbidden, false);
    if (forbidden && fake_thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        atomic_fetch_add(&fake_created_relaxed, 1);
    else if (refused)
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

/* While a blocking stream (a per-thread default stream, or one created
 * without CU_STREAM_NON_BLOCKING: fake_stream_blocking) captures, whatever
 * the capture's mode, the legacy stream of its context (the one current
 * where it was created; a per-thread default stream's: the one current here)
 * is unusable, as with fake_set_capturing_blocking (CUDA's
 * cuStreamIsCapturing documentation); other contexts' legacy streams are
 * not. More captures than FAKE_CAPTURES at once: CUDA_ERROR_OUT_OF_MEMORY. */
CUresult fake_begin_capture(CUstream s, CUstreamCaptureMode mode)
{
    if (!s || fake_in_capture(U(s)))
        return CUDA_ERROR_ILLEGAL_STATE;
    CUgraph g;
    CUresult r = fk_cuGraphCreate(&g, 0);
    if (r != CUDA_SUCCESS)
        return r;
    uintptr_t ctx = fake_stream_ctx(s);
    bool blocking = fake_stream_blocking(s);
    pthread_mutex_lock(&fake_cap_mu);
    bool taken = fake_cap_of(U(s)) != NULL; /* by another thread meanwhile */
    fake_capture_t *c = taken ? NULL : fake_cap_new(U(s));
    if (c) {
        c->begun = true;
        c->mode = (int)mode;
        c->thread = U(&fake_thread_tag);
        c->ctx = ctx;
        c->blocking = blocking;
        c->graph = g;
        c->g = fake_graph_of(g);
        fake_cap_ended_bad = false;
    }
    pthread_mutex_unlock(&fake_cap_mu);
    if (c)
        return CUDA_SUCCESS;
    (void)fk_cuGraphDestroy(g);
    return taken ? CUDA_ERROR_ILLEGAL_STATE : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult fake_end_capture(CUstream s, CUgraph *g)
{
    CUgraph captured = NULL;
    pthread_mutex_lock(&fake_cap_mu);
    fake_capture_t *c = fake_cap_of(U(s));
    CUresult r = CUDA_ERROR_ILLEGAL_STATE;
    if (g && c && c->begun) {
        bool elsewhere =
            c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != U(&fake_thread_tag);
        r = c->js[0].s != U(s) ? CUDA_ERROR_STREAM_CAPTURE_UNMATCHED
            : elsewhere        ? CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD
                               : CUDA_SUCCESS;
        if (r != CUDA_SUCCESS) {
            c->broken = true; /* an invalid operation, as the programming guide has it */
        } else {
            captured = c->graph;
            r = fake_cap_end(c);
        }
    }
    pthread_mutex_unlock(&fake_cap_mu);
    if (!captured)
        return r;
    *g = r == CUDA_SUCCESS ? captured : NULL;
    if (r != CUDA_SUCCESS)
        (void)fk_cuGraphDestroy(captured);
    return r;
}
