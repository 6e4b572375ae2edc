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
 * of any earlier capture at the same handle; one that fails drops its own
 * by id, and in any case those queued on the stream it ends on (a stream is
 * in one capture at a time, so what is pending on it is this capture's or
 * a dead one's). The driver says nothing but the status of an invalidated
 * capture (cuda.h), so the id of each capture is also asked when it begins
 * (the cuStreamBeginCapture hooks, streams.c) and kept by the stream it
 * began on, where its end is called: an invalidated capture's prefetches
 * queued on streams that joined it (through an event) are dropped by that
 * id. Until 2026-12-03 they stayed pending until their handle was reused
 * or destroyed.
 *
 * A captured batch of several ranges that added several nodes (which node
 * moves which range is not documented) is a batch of its own: its ranges'
 * entries carry its id and no node, and each of its nodes is an entry of no
 * range (len 0, never collected), so that it dies with the graph or the
 * failed capture as the ranges do. Its first node destroyed, its moves to
 * the device no longer count; its last, nothing of it does.
 *
 * LOCKING: pf_lock (mutex) guards both tables; it is never held across a
 * driver call or together with another shim lock.
 */
#include <pthread.h>
#include <stdlib.h>

#include "common/array.h"
#include "shim/backend_cuda.h"
#include "shim/graph.h"
#include "shim/policy.h"
#include "shim/shim.h"

#define GRAPH_PF_MAX    (1u << 20) /* prefetches recorded into live graphs, at most */
#define GRAPH_BEGUN_MAX 4096       /* captures in progress whose id is kept, at most */

static pthread_mutex_t pf_lock = PTHREAD_MUTEX_INITIALIZER;
static shim_graph_pf_t *pfs;
static size_t pf_n, pf_cap, pf_pending;

/* A capture in progress: the stream it began on (shim_policy_stream_key)
 * and its id. One per stream. */
typedef struct pf_begun {
    uint64_t stream, id;
} pf_begun_t;

static pf_begun_t *begun;
static size_t begun_n, begun_cap;

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
        pfs[pf_n++] =
            (shim_graph_pf_t){c->graph, addr, len, to_device, c->id, c->last, c->stream, c->batch};
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
        if (pfs[i].graph != graph || pfs[i].capture != 0 || pfs[i].len == 0 ||
            pf_held(*pf_p, *npf_p, &pfs[i]))
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

/* One of batch b's nodes is gone: its moves to the device no longer count,
 * and its other moves once none of its nodes is left. */
static void batch_node_gone_locked(uint64_t b)
{
    bool left = false;
    for (size_t i = 0; i < pf_n && !left; i++)
        left = pfs[i].batch == b && pfs[i].len == 0;
    for (size_t i = pf_n; i-- > 0;)
        if (pfs[i].batch == b && pfs[i].len != 0 && (pfs[i].to_device || !left))
            pf_drop_locked(i);
}

void shim_graph_pf_forget_node(CUgraphNode node)
{
    if (!node)
        return;
    pthread_mutex_lock(&pf_lock);
    for (size_t i = 0; i < pf_n;) {
        if (pfs[i].node != node) {
            i++;
            continue;
        }
        uint64_t b = pfs[i].batch;
        pf_drop_locked(i);
        if (b != 0) {
            batch_node_gone_locked(b);
            i = 0; /* entries moved */
        }
    }
    pthread_mutex_unlock(&pf_lock);
}

/* --- batches: the nodes they add ------------------------------------------- */

static int node_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (const CUgraphNode *)a, y = (uintptr_t) * (const CUgraphNode *)b;
    return (x > y) - (x < y);
}

/* graph's nodes in *v_p (malloc'd, sorted) and *n_p; false if not known. */
static bool graph_nodes(CUgraph graph, CUgraphNode **v_p, size_t *n_p)
{
    size_t n = 0;
    *v_p = NULL;
    if (SHIM_CALL(cuGraphGetNodes, graph, NULL, &n) != CUDA_SUCCESS)
        return false;
    CUgraphNode *v = malloc((n + 1) * sizeof(*v));
    if (!v || SHIM_CALL(cuGraphGetNodes, graph, v, &n) != CUDA_SUCCESS) {
        free(v);
        return false;
    }
    qsort(v, n, sizeof(*v), node_cmp);
    *v_p = v;
    *n_p = n;
    return true;
}

void shim_graph_nodes_before(CUstream s, bool per_thread, size_t count, shim_graph_nodes_t *b)
{
    shim_graph_capture_t c;
    *b = (shim_graph_nodes_t){0};
    if (count > 1 && shim_state.mode == SHIM_MODE_PROACTIVE &&
        shim_graph_capture_of(s, per_thread, &c) && c.graph && graph_nodes(c.graph, &b->v, &b->n))
        b->graph = c.graph;
}

void shim_graph_nodes_free(shim_graph_nodes_t *b)
{
    free(b->v);
    *b = (shim_graph_nodes_t){0};
}

/* Keeps batch's k nodes, each as an entry of no range; its id, 0 if not. */
static uint64_t batch_keep(const shim_graph_capture_t *c, const CUgraphNode *nodes, size_t k)
{
    static uint64_t next_batch = 1; /* under pf_lock */
    uint64_t b = 0;
    pthread_mutex_lock(&pf_lock);
    if (pf_n + k <= pf_cap || com_array_grow((void **)&pfs, &pf_cap, pf_n + k, sizeof(*pfs), 16,
                                             GRAPH_PF_MAX) == GMUX_OK) {
        b = next_batch++;
        for (size_t i = 0; i < k; i++)
            pfs[pf_n++] = (shim_graph_pf_t){.graph = c->graph,
                                            .capture = c->id,
                                            .node = nodes[i],
                                            .stream = c->stream,
                                            .batch = b};
        pf_pending += c->id != 0 ? k : 0;
    }
    pthread_mutex_unlock(&pf_lock);
    return b;
}

void shim_graph_batch_nodes(shim_graph_capture_t *c, const shim_graph_nodes_t *b, size_t count)
{
    CUgraphNode *v = NULL;
    size_t n = 0, k = 0;
    if (!b->graph || b->graph != c->graph || !graph_nodes(c->graph, &v, &n))
        return;
    for (size_t i = 0; i < n; i++) /* the nodes not there before, in place */
        if (!bsearch(&v[i], b->v, b->n, sizeof(*v), node_cmp))
            v[k++] = v[i];
    if (k == 1) {
        c->last = v[0];
    } else if (k > 1 && k <= count && (c->batch = batch_keep(c, v, k)) != 0) {
        c->last = NULL;
    }
    free(v);
}

void shim_graph_pf_apply(const shim_graph_pf_t *pf, size_t n, bool to_device, uint64_t stream)
{
    for (size_t k = 0; k < n; k++)
        if (pf[k].to_device == to_device)
            shim_policy_program_prefetched(pf[k].addr, pf[k].len, to_device, stream);
}

/* --- captures beginning and ending ----------------------------------------- */

void shim_graph_capture_begun(CUstream s, bool per_thread)
{
    shim_graph_capture_t c;
    if (shim_state.mode != SHIM_MODE_PROACTIVE || !shim_graph_capture_of(s, per_thread, &c) ||
        c.id == 0)
        return;
    pthread_mutex_lock(&pf_lock);
    size_t i = 0;
    while (i < begun_n && begun[i].stream != c.stream)
        i++;
    if (i < begun_n || begun_n < begun_cap ||
        com_array_grow((void **)&begun, &begun_cap, begun_n + 1, sizeof(*begun), 16,
                       GRAPH_BEGUN_MAX) == GMUX_OK) {
        begun_n += i == begun_n;
        begun[i] = (pf_begun_t){c.stream, c.id};
    }
    pthread_mutex_unlock(&pf_lock);
}

/* The id of the capture begun on stream (0 if none is kept), forgotten. */
static uint64_t begun_take_locked(uint64_t stream)
{
    for (size_t i = 0; i < begun_n; i++)
        if (begun[i].stream == stream) {
            uint64_t id = begun[i].id;
            begun[i] = begun[--begun_n];
            return id;
        }
    return 0;
}

/* The capture s ends, asked before cuStreamEndCapture while any entry is
 * pending (c->id: the driver's, else the one asked when it began; 0 when
 * neither is known); false when none is. */
static bool capture_ending(CUstream s, bool per_thread, shim_graph_capture_t *c)
{
    *c = (shim_graph_capture_t){0};
    if (shim_state.mode != SHIM_MODE_PROACTIVE)
        return false;
    pthread_mutex_lock(&pf_lock);
    uint64_t id = begun_take_locked(shim_policy_stream_key(s, per_thread));
    size_t pending = pf_pending;
    pthread_mutex_unlock(&pf_lock);
    if (pending == 0 || !shim_graph_capture_of(s, per_thread, c))
        return false;
    if (c->id == 0) /* invalidated: the driver no longer says */
        c->id = id;
    return true;
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
    shim_backend_release_left(); /* a migration stream left to this capture */
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
    shim_backend_release_left(); /* a migration stream left to this capture */
    return r;
}
