/* The program's non-blocking streams: see streams.h. */
#include "shim/streams.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/log.h"
#include "shim/graph.h"
#include "shim/shim.h"
#include "shim/stats.h"

typedef struct shim_stream {
    CUstream s;
    CUcontext ctx;
} shim_stream_t;

static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;
static shim_stream_t *streams; /* [0, streams_n), under streams_mu */
static size_t streams_n, streams_cap;

void shim_streams_add(CUstream s, CUcontext ctx)
{
    pthread_mutex_lock(&streams_mu);
    if (streams_n == streams_cap) {
        size_t cap = streams_cap ? 2 * streams_cap : 16;
        shim_stream_t *p = realloc(streams, cap * sizeof(*p));
        if (!p) {
            pthread_mutex_unlock(&streams_mu);
            SHIM_STAT_ADD(streams_untracked, 1);
            COM_WARN(SHIM, "no memory to track stream %p: evictions not ordered after it",
                     (void *)s);
            return;
        }
        streams = p;
        streams_cap = cap;
    }
    streams[streams_n++] = (shim_stream_t){s, ctx};
    pthread_mutex_unlock(&streams_mu);
}

/* Removes entry i (the last one takes its place). Under streams_mu. */
static void streams_drop(size_t i)
{
    streams[i] = streams[--streams_n];
}

void shim_streams_remove(CUstream s)
{
    pthread_mutex_lock(&streams_mu);
    for (size_t i = 0; i < streams_n; i++)
        if (streams[i].s == s) {
            streams_drop(i);
            break;
        }
    pthread_mutex_unlock(&streams_mu);
}

void shim_streams_forget_ctx(CUcontext ctx)
{
    pthread_mutex_lock(&streams_mu);
    for (size_t i = streams_n; i-- > 0;)
        if (streams[i].ctx == ctx)
            streams_drop(i);
    pthread_mutex_unlock(&streams_mu);
}

size_t shim_streams_count(void)
{
    pthread_mutex_lock(&streams_mu);
    size_t n = streams_n;
    pthread_mutex_unlock(&streams_mu);
    return n;
}

/* Whether s captures a graph (or, for the legacy stream, whether a blocking
 * stream does, which makes it unusable); a query invalidates nothing. */
static gmux_status_t streams_query(CUstream s)
{
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = SHIM_CALL(cuStreamIsCapturing, s, &cs);
    if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT ||
        (r == CUDA_SUCCESS && cs != CU_STREAM_CAPTURE_STATUS_NONE))
        return GMUX_ERR_BUSY;
    return r == CUDA_SUCCESS ? GMUX_OK : GMUX_ERR_DRIVER;
}

/* Makes mig wait for the work queued so far on s, with ev. A capture begun
 * on s where the shim does not see it (an ABI it does not hook), after the
 * query and before the record, makes the record a captured event and the
 * wait pulls mig into the capture: then GMUX_ERR_STATE, nothing more is
 * queued on mig (its next wait, for an event recorded outside the capture,
 * would be refused CUDA_ERROR_STREAM_CAPTURE_ISOLATION and invalidate the
 * program's capture: test_gate_evicted_capture
 * test_joined_migration_stream_left). */
static gmux_status_t streams_wait(CUstream mig, CUevent ev, CUstream s)
{
    CUresult r = SHIM_CALL(cuEventRecord, ev, s);
    if (r == CUDA_SUCCESS)
        r = SHIM_CALL(cuStreamWaitEvent, mig, ev, 0);
    if (r != CUDA_SUCCESS)
        return GMUX_ERR_DRIVER;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    if (SHIM_CALL(cuStreamIsCapturing, mig, &cs) == CUDA_SUCCESS &&
        cs != CU_STREAM_CAPTURE_STATUS_NONE) {
        SHIM_STAT_ADD(capture_joined, 1);
        COM_WARN(SHIM, "the migration stream joined a graph capture of the program");
        return GMUX_ERR_STATE;
    }
    return GMUX_OK;
}

gmux_status_t shim_streams_order_after(CUcontext ctx, CUstream mig, CUevent ev)
{
    /* Under streams_mu, which the cuStreamBeginCapture hooks take too: no
     * capture begins between the queries and the records. One that began
     * there made the record on its stream a captured event, and the wait for
     * it pulled the migration stream into the capture; on the legacy
     * stream, the record failed and invalidated the capture. Every capture
     * is ruled out before anything is recorded: the orders are then either
     * all placed or all left for later. The legacy default stream (NULL
     * through the non-_ptsz entry) waits for the work of every blocking
     * stream queued before; the non-blocking ones are the program's own. A
     * capture begun where the shim does not see it may still pull the
     * migration stream in: each wait is checked (streams_wait). */
    pthread_mutex_lock(&streams_mu);
    gmux_status_t st = streams_query(NULL);
    for (size_t i = 0; i < streams_n && st == GMUX_OK; i++)
        if (streams[i].ctx == ctx)
            st = streams_query(streams[i].s);
    if (st == GMUX_OK)
        st = streams_wait(mig, ev, NULL);
    for (size_t i = 0; i < streams_n && st == GMUX_OK; i++)
        if (streams[i].ctx == ctx)
            st = streams_wait(mig, ev, streams[i].s);
    pthread_mutex_unlock(&streams_mu);
    return st;
}

/* --- hooks ----------------------------------------------------------------- */

/* A stream created in ctx (NULL: the current context). */
static void created(CUresult r, const CUstream *s, unsigned flags, CUcontext ctx)
{
    if (r != CUDA_SUCCESS || !(flags & CU_STREAM_NON_BLOCKING) || shim_state.mode == SHIM_MODE_OFF)
        return;
    if (ctx || (SHIM_CALL(cuCtxGetCurrent, &ctx) == CUDA_SUCCESS && ctx))
        shim_streams_add(*s, ctx);
}

CUresult shim_hook_cuStreamCreate(CUstream *s, unsigned flags)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuStreamCreate, s, flags);
    created(r, s, flags, NULL);
    return r;
}

CUresult shim_hook_cuStreamCreateWithPriority(CUstream *s, unsigned flags, int priority)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuStreamCreateWithPriority, s, flags, priority);
    created(r, s, flags, NULL);
    return r;
}

/* A green context's stream (CUDA 12.5) belongs to its converted context,
 * where the program launches to use the green context, whatever is current
 * here; the driver makes only non-blocking ones. Until 2026-12-03 these went
 * untracked, and evictions were not ordered after their work. */
CUresult shim_hook_cuGreenCtxStreamCreate(CUstream *s, CUgreenCtx green, unsigned flags,
                                          int priority)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGreenCtxStreamCreate, s, green, flags, priority);
    CUcontext ctx = NULL;
    if (r == CUDA_SUCCESS && SHIM_CALL(cuCtxFromGreenCtx, &ctx, green) == CUDA_SUCCESS && ctx)
        created(r, s, flags, ctx);
    return r;
}

/* Both ABIs (CUDA 2.0's cuStreamDestroy, 4.0's _v2) destroy the stream. The
 * stream is forgotten first: once destroyed, the handle may come back for
 * another stream, of another context. */
CUresult shim_hook_cuStreamDestroy(CUstream s)
{
    shim_ensure_init();
    shim_streams_remove(s);
    return SHIM_CALL(cuStreamDestroy, s);
}

CUresult shim_hook_cuStreamDestroy_v2(CUstream s)
{
    shim_ensure_init();
    shim_streams_remove(s);
    return SHIM_CALL(cuStreamDestroy_v2, s);
}

/* A capture begins only while no eviction is being ordered after the
 * program's streams (shim_streams_order_after); once begun, its id is noted
 * (graph.h: its end may no longer be told it). Not on the launch path. */
#define STREAMS_BEGIN(call, s, per_thread)                                                         \
    do {                                                                                           \
        shim_ensure_init();                                                                        \
        pthread_mutex_lock(&streams_mu);                                                           \
        CUresult r_ = (call);                                                                      \
        pthread_mutex_unlock(&streams_mu);                                                         \
        if (r_ == CUDA_SUCCESS)                                                                    \
            shim_graph_capture_begun(s, per_thread);                                               \
        return r_;                                                                                 \
    } while (0)

CUresult shim_hook_cuStreamBeginCapture(CUstream s)
{
    STREAMS_BEGIN(SHIM_CALL(cuStreamBeginCapture, s), s, false);
}

CUresult shim_hook_cuStreamBeginCapture_ptsz(CUstream s)
{
    STREAMS_BEGIN(SHIM_CALL(cuStreamBeginCapture_ptsz, s), s, true);
}

CUresult shim_hook_cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    STREAMS_BEGIN(SHIM_CALL(cuStreamBeginCapture_v2, s, mode), s, false);
}

CUresult shim_hook_cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    STREAMS_BEGIN(SHIM_CALL(cuStreamBeginCapture_v2_ptsz, s, mode), s, true);
}

CUresult shim_hook_cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
                                               const CUgraphEdgeData *edges, size_t n,
                                               CUstreamCaptureMode mode)
{
    STREAMS_BEGIN(SHIM_CALL(cuStreamBeginCaptureToGraph, s, g, deps, edges, n, mode), s, false);
}

CUresult shim_hook_cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                    const CUgraphEdgeData *edges, size_t n,
                                                    CUstreamCaptureMode mode)
{
    STREAMS_BEGIN(SHIM_CALL(cuStreamBeginCaptureToGraph_ptsz, s, g, deps, edges, n, mode), s, true);
}
