/*
 * The program's prefetches recorded into graphs (graph.h): a table of
 * (graph, range, direction), filled by hooks_prefetch.c while a stream
 * captures, read by graph.c at instantiation, emptied of a graph's entries
 * when the graph dies.
 *
 * An entry is pending while its capture is in progress (it carries the
 * capture's id, unique in the process) and is counted only once that
 * capture ended with a graph: the driver destroys the graph of a capture
 * that fails to end (invalidated) without a cuGraphDestroy, and may give
 * its handle to a later graph, which must not take the dead capture's
 * prefetches over. cuStreamEndCapture is hooked for this: a capture that
 * ends with a graph makes its entries count and drops the pending entries
 * of any earlier capture at the same handle; one that fails drops its own,
 * by id where the driver still says which capture it was, and in any case
 * those queued on the stream it ends on (the driver says nothing but the
 * status of an invalidated capture; a stream is in one capture at a time,
 * so what is pending on it is this capture's or a dead one's). Those it
 * recorded on other streams joined to it stay pending, never counted, after
 * an invalidation, until their handle is reused or destroyed.
 *
 * LOCKING: pf_lock (mutex) guards the table; it is never held across a
 * driver call or together with another shim lock.
 */
#include <pthread.h>
#include <stdlib.h>

#include "common/array.h"
#include "shim/backend_cuda.h"
#include "shim/graph.h"
#include "shim/policy.h"
#include "shim/shim.h"

#define GRAPH_PF_MAX (1u << 20) /* prefetches recorded into live graphs, at most */

static pthread_mutex_t pf_lock = PTHREAD_MUTEX_INITIALIZER;
static shim_graph_pf_t *pfs;
static size_t pf_n, pf_cap, pf_pending;

static CUstream stream_of(CUstream s, bool per_thread)
{
    return per_thread && s == NULL ? CU_STREAM_PER_THREAD : s;
}

bool shim_graph_capture_of(CUstream s, bool per_thread, shim_graph_capture_t *c_p)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph g = NULL;
    cuuint64_t id = 0;
    const CUgraphNode *deps = NULL;
    size_t ndeps = 0;
    *c_p = (shim_graph_capture_t){.stream = shim_policy_stream_key(s, per_thread)};
    if (SHIM_CALL(cuStreamGetCaptureInfo_v2, stream_of(s, per_thread), &st, &id, &g, &deps,
                  &ndeps) != CUDA_SUCCESS)
        return shim_backend_capturing(s, per_thread); /* a driver without it: no graph */
    if (st == CU_STREAM_CAPTURE_STATUS_NONE)
        return false;
    if (st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0) {
        c_p->graph = g;
        c_p->id = id;
        c_p->last = ndeps == 1 && deps ? deps[0] : NULL;
    }
    return true;
}

bool shim_graph_note_prefetch(const shim_graph_capture_t *c, uint64_t addr, uint64_t len,
                              bool to_device)
{
    bool kept = false;
    if (!c->graph || len == 0)
        return false;
    pthread_mutex_lock(&pf_lock);
    if (pf_n < pf_cap || com_array_grow((void **)&pfs, &pf_cap, pf_n + 1, sizeof(*pfs), 16,
                                        GRAPH_PF_MAX) == GMUX_OK) {
        pfs[pf_n++] = (shim_graph_pf_t){c->graph, addr, len, to_device, c->id, c->last, c->stream};
        pf_pending += c->id != 0;
        kept = true;
    }
    pthread_mutex_unlock(&pf_lock);
    return kept;
}

/* Whether w already holds what p does. */
static bool pf_held(const shim_graph_pf_t *v, size_t n, const shim_graph_pf_t *p)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].addr == p->addr && v[i].len == p->len && v[i].to_device == p->to_device)
            return true;
    return false;
}

gmux_status_t shim_graph_pf_collect(CUgraph graph, shim_graph_pf_t **pf_p, size_t *npf_p)
{
    gmux_status_t st = GMUX_OK;
    pthread_mutex_lock(&pf_lock);
    for (size_t i = 0; i < pf_n; i++) {
        if (pfs[i].graph != graph || pfs[i].capture != 0 || pf_held(*pf_p, *npf_p, &pfs[i]))
            continue;
        shim_graph_pf_t *v = realloc(*pf_p, (*npf_p + 1) * sizeof(*v));
        if (!v) {
            st = GMUX_ERR_NOMEM;
            break;
        }
        v[(*npf_p)++] = pfs[i];
        *pf_p = v;
    }
    pthread_mutex_unlock(&pf_lock);
    return st;
}

size_t shim_graph_pf_count(void)
{
    pthread_mutex_lock(&pf_lock);
    size_t n = pf_n;
    pthread_mutex_unlock(&pf_lock);
    return n;
}

static void pf_drop_locked(size_t i)
{
    pf_pending -= pfs[i].capture != 0;
    pfs[i] = pfs[--pf_n];
}

void shim_graph_pf_forget(const CUgraph *graphs, size_t n, bool all)
{
    pthread_mutex_lock(&pf_lock);
    for (size_t i = pf_n; i-- > 0;) {
        bool dies = all;
        for (size_t g = 0; g < n && !dies; g++)
            dies = pfs[i].graph == graphs[g];
        if (dies)
            pf_drop_locked(i);
    }
    pthread_mutex_unlock(&pf_lock);
}

void shim_graph_pf_forget_node(CUgraphNode node)
{
    if (!node)
        return;
    pthread_mutex_lock(&pf_lock);
    for (size_t i = pf_n; i-- > 0;)
        if (pfs[i].node == node)
            pf_drop_locked(i);
    pthread_mutex_unlock(&pf_lock);
}

void shim_graph_pf_apply(const shim_graph_pf_t *pf, size_t n, bool to_device, uint64_t stream)
{
    for (size_t k = 0; k < n; k++)
        if (pf[k].to_device == to_device)
            shim_policy_program_prefetched(pf[k].addr, pf[k].len, to_device, stream);
}

/* --- captures ending ------------------------------------------------------ */

/* The capture s ends, asked before cuStreamEndCapture while any entry is
 * pending (c->id 0 when none is or the driver does not say); false when
 * none is. */
static bool capture_ending(CUstream s, bool per_thread, shim_graph_capture_t *c)
{
    *c = (shim_graph_capture_t){0};
    if (shim_state.mode != SHIM_MODE_PROACTIVE)
        return false;
    pthread_mutex_lock(&pf_lock);
    size_t pending = pf_pending;
    pthread_mutex_unlock(&pf_lock);
    return pending > 0 && shim_graph_capture_of(s, per_thread, c);
}

/* Capture c ended with graph (NULL: it failed). */
static void capture_ended(const shim_graph_capture_t *c, CUgraph graph)
{
    pthread_mutex_lock(&pf_lock);
    for (size_t i = pf_n; i-- > 0;) {
        if (pfs[i].capture == 0)
            continue;
        if (graph && pfs[i].graph == graph && pfs[i].capture == c->id && c->id != 0) {
            pfs[i].capture = 0; /* counts from now on */
            pf_pending--;
        } else if ((c->id != 0 && pfs[i].capture == c->id) || pfs[i].stream == c->stream ||
                   (graph && pfs[i].graph == graph)) {
            pf_drop_locked(i); /* this capture failed, or a dead one held the handle */
        }
    }
    pthread_mutex_unlock(&pf_lock);
}

CUresult shim_hook_cuStreamEndCapture(CUstream s, CUgraph *graph)
{
    shim_ensure_init();
    shim_graph_capture_t c;
    bool ending = capture_ending(s, false, &c);
    CUresult r = SHIM_CALL(cuStreamEndCapture, s, graph);
    if (ending)
        capture_ended(&c, r == CUDA_SUCCESS && graph ? *graph : NULL);
    return r;
}

CUresult shim_hook_cuStreamEndCapture_ptsz(CUstream s, CUgraph *graph)
{
    shim_ensure_init();
    shim_graph_capture_t c;
    bool ending = capture_ending(s, true, &c);
    CUresult r = SHIM_CALL(cuStreamEndCapture_ptsz, s, graph);
    if (ending)
        capture_ended(&c, r == CUDA_SUCCESS && graph ? *graph : NULL);
    return r;
}
