/*
 * The driver double's graphs: kernel, child-graph and conditional nodes
 * added through the graph API, and the nodes a stream capture records
 * (kernels, memsets, copies, graph launches, prefetches, event records and
 * waits queued on a capturing stream: fake_cuda_stream.c decides which),
 * run only when an instantiated graph is launched. Kernels:
 * fake_cuda_exec.c; memsets and copies: fake_cuda_copy.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_graph.h"
#include "fake_cuda_internal.h"

/*
 * --- graphs: a list of nodes, kernel nodes with their argument values copied.
 *
 * Handles are reused the way a driver may reuse them, deterministically: a
 * destroyed graph goes on a free list that cuGraphCreate and new conditional
 * bodies take from first (last destroyed first), and a destroyed node's
 * slot is the next one its graph hands out. A dead graph or node is refused
 * (CUDA_ERROR_INVALID_VALUE) until it is handed out again, and its memory is
 * never freed, so a caller holding a stale handle gets an error or, after
 * reuse, the new graph: tests see which through the call log.
 */

static pthread_mutex_t fake_graph_lock = PTHREAD_MUTEX_INITIALIZER;
static fake_graph_t *fake_graph_free; /* under fake_graph_lock */
static _Atomic uint64_t fake_next_cond_handle = 1;

static fake_graph_t *fake_graph_new(void)
{
    pthread_mutex_lock(&fake_graph_lock);
    fake_graph_t *g = fake_graph_free;
    if (g)
        fake_graph_free = g->next_free;
    pthread_mutex_unlock(&fake_graph_lock);
    if (!g && !(g = malloc(sizeof(*g))))
        return NULL;
    memset(g, 0, sizeof(*g));
    g->live = true;
    return g;
}

static void fake_graph_release(fake_graph_t *g);

/* Kills node and the bodies and child graph it owns. */
static void fake_node_release(fake_node_t *nd)
{
    if (nd->type == CU_GRAPH_NODE_TYPE_GRAPH && nd->owns_child)
        fake_graph_release(nd->child);
    if (nd->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
        for (unsigned b = 0; b < nd->nbodies; b++)
            fake_graph_release((fake_graph_t *)nd->bodies[b]);
    nd->live = false;
}

/* Kills g with its nodes (and what they own). */
static void fake_graph_release(fake_graph_t *g)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->nodes[i].live)
            fake_node_release(&g->nodes[i]);
    g->live = false;
    pthread_mutex_lock(&fake_graph_lock);
    g->next_free = fake_graph_free;
    fake_graph_free = g;
    pthread_mutex_unlock(&fake_graph_lock);
}

fake_graph_t *fake_graph_of(CUgraph g)
{
    fake_graph_t *fg = (fake_graph_t *)g;
    return fg && fg->live ? fg : NULL;
}

static fake_node_t *fake_node_of(CUgraphNode node)
{
    fake_node_t *nd = (fake_node_t *)node;
    return nd && nd->live ? nd : NULL;
}

/* A free node slot of g, cleared (not live until the caller says so), or NULL. */
static fake_node_t *fake_node_slot(fake_graph_t *g)
{
    size_t i = 0;
    while (i < g->n && g->nodes[i].live)
        i++;
    if (i == FAKE_MAX_NODES)
        return NULL;
    if (i == g->n)
        g->n++;
    memset(&g->nodes[i], 0, sizeof(g->nodes[i]));
    return &g->nodes[i];
}

CUresult fk_cuGraphCreate(CUgraph *g, unsigned flags)
{
    (void)flags;
    fake_graph_t *fg = fake_graph_new();
    if (!fg)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *g = (CUgraph)fg;
    REC(U(fg), 0, 0, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphDestroy(CUgraph g)
{
    REC(U(g), 0, 0, 0);
    fake_graph_t *fg = fake_graph_of(g);
    if (!fg)
        return CUDA_ERROR_INVALID_VALUE;
    fake_graph_release(fg);
    return CUDA_SUCCESS;
}

static CUresult fake_add_kernel(CUgraphNode *node, fake_graph_t *fg,
                                const CUDA_KERNEL_NODE_PARAMS *p)
{
    const fake_kernel_t *k = (const fake_kernel_t *)p->func;
    if (!fg || !k || !p->kernelParams)
        return CUDA_ERROR_INVALID_VALUE;
    fake_node_t *nd = fake_node_slot(fg);
    if (!nd)
        return CUDA_ERROR_INVALID_VALUE;
    nd->type = CU_GRAPH_NODE_TYPE_KERNEL;
    nd->p = *p;
    for (unsigned i = 0; i < k->n; i++) {
        if (k->offset[i] + k->size[i] > sizeof(nd->args))
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(nd->args + k->offset[i], p->kernelParams[i], k->size[i]);
        nd->argv[i] = nd->args + k->offset[i];
    }
    nd->p.kernelParams = nd->argv;
    nd->p.extra = NULL;
    nd->live = true;
    *node = (CUgraphNode)nd;
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                    size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
    (void)deps;
    (void)ndeps;
    CUresult r = fake_add_kernel(node, fake_graph_of(g), p);
    if (r == CUDA_SUCCESS)
        REC(U(*node), U(g), 0, 0);
    return r;
}

/* A conditional node: its bodies are new empty graphs, handed out in
 * p->conditional.phGraph_out, which points into the node. */
static CUresult fake_add_conditional(CUgraphNode *node, fake_graph_t *fg,
                                     CUDA_CONDITIONAL_NODE_PARAMS *c)
{
    unsigned n = c->size;
    bool size_ok = (c->type == CU_GRAPH_COND_TYPE_IF && (n == 1 || n == 2)) ||
                   (c->type == CU_GRAPH_COND_TYPE_WHILE && n == 1) ||
                   (c->type == CU_GRAPH_COND_TYPE_SWITCH && n >= 1);
    if (!fg || !c->handle || !size_ok || n > FAKE_MAX_BODIES)
        return CUDA_ERROR_INVALID_VALUE;
    fake_node_t *nd = fake_node_slot(fg);
    if (!nd)
        return CUDA_ERROR_INVALID_VALUE;
    nd->type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    for (unsigned b = 0; b < n; b++) {
        fake_graph_t *body = fake_graph_new();
        if (!body) {
            nd->nbodies = b;
            fake_node_release(nd);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        nd->bodies[b] = (CUgraph)body;
    }
    nd->nbodies = n;
    nd->live = true;
    c->phGraph_out = nd->bodies;
    *node = (CUgraphNode)nd;
    return CUDA_SUCCESS;
}

/* cuGraphAddNode: kernel and conditional nodes. */
static CUresult fake_add_node(CUgraphNode *node, CUgraph g, CUgraphNodeParams *p)
{
    fake_graph_t *fg = fake_graph_of(g);
    if (!node || !fg || !p)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
        return fake_add_conditional(node, fg, &p->conditional);
    if (p->type != CU_GRAPH_NODE_TYPE_KERNEL)
        return CUDA_ERROR_NOT_SUPPORTED;
    const CUDA_KERNEL_NODE_PARAMS_v3 *k = &p->kernel;
    const CUDA_KERNEL_NODE_PARAMS kp = {.func = k->func,
                                        .gridDimX = k->gridDimX,
                                        .gridDimY = k->gridDimY,
                                        .gridDimZ = k->gridDimZ,
                                        .blockDimX = k->blockDimX,
                                        .blockDimY = k->blockDimY,
                                        .blockDimZ = k->blockDimZ,
                                        .sharedMemBytes = k->sharedMemBytes,
                                        .kernelParams = k->kernelParams,
                                        .extra = k->extra,
                                        .kern = k->kern,
                                        .ctx = k->ctx};
    return fake_add_kernel(node, fg, &kp);
}

/* Logged as (node, graph, type, number of bodies). */
CUresult fk_cuGraphAddNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                           CUgraphNodeParams *p)
{
    (void)deps;
    (void)ndeps;
    CUresult r = fake_add_node(node, g, p);
    if (r == CUDA_SUCCESS)
        REC(U(*node), U(g), (uint64_t)p->type,
            p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL ? p->conditional.size : 0);
    return r;
}

CUresult fk_cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                              const CUgraphEdgeData *edges, size_t ndeps, CUgraphNodeParams *p)
{
    (void)deps;
    (void)edges;
    (void)ndeps;
    CUresult r = fake_add_node(node, g, p);
    if (r == CUDA_SUCCESS)
        REC(U(*node), U(g), (uint64_t)p->type,
            p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL ? p->conditional.size : 0);
    return r;
}

/* Handles are counters; the double never evaluates a condition. */
CUresult fk_cuGraphConditionalHandleCreate(CUgraphConditionalHandle *h, CUgraph g, CUcontext ctx,
                                           unsigned def, unsigned flags)
{
    (void)ctx;
    (void)def;
    (void)flags;
    if (!h || !fake_graph_of(g))
        return CUDA_ERROR_INVALID_VALUE;
    *h = atomic_fetch_add(&fake_next_cond_handle, 1);
    REC(*h, U(g), 0, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphDestroyNode(CUgraphNode node)
{
    REC(U(node), 0, 0, 0);
    fake_node_t *nd = fake_node_of(node);
    if (!nd)
        return CUDA_ERROR_INVALID_VALUE;
    fake_node_release(nd);
    return CUDA_SUCCESS;
}

/* Logged as (graph, 0, 0, 0), refused for a dead graph (a stale handle). */
CUresult fk_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    REC(U(g), 0, 0, 0);
    fake_graph_t *fg = fake_graph_of(g);
    if (!fg || !n)
        return CUDA_ERROR_INVALID_VALUE;
    size_t k = 0;
    for (size_t i = 0; i < fg->n; i++) {
        if (!fg->nodes[i].live)
            continue;
        if (nodes && k < *n)
            nodes[k] = (CUgraphNode)&fg->nodes[i];
        k++;
    }
    *n = k;
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type)
{
    fake_node_t *nd = fake_node_of(node);
    if (!nd || !type)
        return CUDA_ERROR_INVALID_VALUE;
    *type = nd->type;
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *p)
{
    REC(U(node), 0, 0, 0);
    fake_node_t *nd = fake_node_of(node);
    if (!nd || nd->type != CU_GRAPH_NODE_TYPE_KERNEL)
        return CUDA_ERROR_INVALID_VALUE;
    *p = nd->p;
    return CUDA_SUCCESS;
}

/* A deep copy of src at a new handle: its nodes in the same slots, kernel
 * arguments and copy descriptors pointing into the copies, child graphs
 * copied too; NULL when out of graphs. src holds no conditional node (its
 * callers refuse such a graph, as the driver does). */
static fake_graph_t *fake_graph_clone(const fake_graph_t *src)
{
    fake_graph_t *g = fake_graph_new();
    if (!g)
        return NULL;
    g->n = src->n;
    for (size_t i = 0; i < src->n; i++) {
        const fake_node_t *o = &src->nodes[i];
        fake_node_t *nd = &g->nodes[i];
        *nd = *o;
        if (!o->live)
            continue;
        if (o->type == CU_GRAPH_NODE_TYPE_KERNEL) {
            for (size_t k = 0; k < FAKE_MAX_PARAMS; k++)
                if (o->argv[k])
                    nd->argv[k] = nd->args + ((const unsigned char *)o->argv[k] - o->args);
            nd->p.kernelParams = nd->argv;
        } else if (o->type == CU_GRAPH_NODE_TYPE_GRAPH) {
            nd->child = fake_graph_clone(o->child);
            nd->owns_child = true;
        } else if (o->op == FAKE_NODE_MEMCPY3D) {
            nd->a0 = U(nd->args);
        }
    }
    return g;
}

/* Whether g holds a conditional node, itself or in a graph embedded in it
 * (a child-graph node's graph, at any depth, as fake_graph_clone copies). */
static bool fake_graph_has_conditional(const fake_graph_t *g)
{
    for (size_t i = 0; g && i < g->n; i++) {
        const fake_node_t *nd = &g->nodes[i];
        if (nd->live &&
            (nd->type == CU_GRAPH_NODE_TYPE_CONDITIONAL ||
             (nd->type == CU_GRAPH_NODE_TYPE_GRAPH && fake_graph_has_conditional(nd->child))))
            return true;
    }
    return false;
}

/* cuda.h: a copy of original with all its parameters, nested graphs
 * included, at a new handle; its nodes in the slots of the original's.
 * "Cloning is not supported for graphs which contain ... conditional
 * nodes": refused with CUDA_ERROR_INVALID_VALUE, the error its
 * documentation lists (what a driver returns is not checked on a GPU), for
 * one embedded in a child-graph node too (only a captured graph launch puts
 * one there). */
CUresult fk_cuGraphClone(CUgraph *clone, CUgraph original)
{
    const fake_graph_t *o = fake_graph_of(original);
    if (!clone || !o)
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_graph_has_conditional(o))
        return CUDA_ERROR_INVALID_VALUE;
    fake_graph_t *g = fake_graph_clone(o);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *clone = (CUgraph)g;
    REC(U(*clone), U(original), 0, 0);
    return CUDA_SUCCESS;
}

static CUresult fake_add_child(CUgraphNode *node, fake_graph_t *fg, CUgraph child, bool copy)
{
    fake_node_t *nd = fg && fake_graph_of(child) ? fake_node_slot(fg) : NULL;
    if (!nd)
        return CUDA_ERROR_INVALID_VALUE;
    nd->type = CU_GRAPH_NODE_TYPE_GRAPH;
    nd->child = copy ? fake_graph_clone((const fake_graph_t *)child) : (fake_graph_t *)child;
    if (!nd->child)
        return CUDA_ERROR_OUT_OF_MEMORY;
    nd->owns_child = copy;
    nd->live = true;
    *node = (CUgraphNode)nd;
    return CUDA_SUCCESS;
}

/* cuda.h: "The child graph is cloned in this call": the node embeds a copy,
 * at a handle of its own (cuGraphChildGraphNodeGetGraph gives it), which dies
 * with the node; the program keeps and destroys its own graph. "If
 * childGraph contains ... conditional nodes, this call will return an
 * error": CUDA_ERROR_INVALID_VALUE, as for cuGraphClone. */
CUresult fk_cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                     size_t ndeps, CUgraph child)
{
    (void)deps;
    (void)ndeps;
    if (fake_graph_has_conditional(fake_graph_of(child)))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fake_add_child(node, fake_graph_of(g), child, true);
    if (r == CUDA_SUCCESS)
        REC(U(*node), U(g), U(child), 0);
    return r;
}

CUresult fk_cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph *graph)
{
    REC(U(node), 0, 0, 0);
    fake_node_t *nd = fake_node_of(node);
    if (!nd || nd->type != CU_GRAPH_NODE_TYPE_GRAPH)
        return CUDA_ERROR_INVALID_VALUE;
    *graph = (CUgraph)nd->child;
    return CUDA_SUCCESS;
}

/* --- captures: nodes recorded from a capturing stream's work ---------------- */

/* Captures may come from several threads (a capturing stream and one that
 * joined it): their nodes are added one at a time. */
static pthread_mutex_t fake_capture_mu = PTHREAD_MUTEX_INITIALIZER;

/* The stream whose work the calling thread records now (fake_capture_graph);
 * each node captured goes into its dependency set (fake_cuda_join.c). */
static __thread uintptr_t fake_capture_from;

void fake_capture_from_stream(uintptr_t s)
{
    fake_capture_from = s;
}

CUresult fake_capture_kernel(CUgraph g, const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUgraphNode node;
    pthread_mutex_lock(&fake_capture_mu);
    fake_graph_t *fg = fake_graph_of(g);
    CUresult r = fake_add_kernel(&node, fg, p);
    if (r == CUDA_SUCCESS)
        fake_join_node(fake_capture_from, fg, (const fake_node_t *)node);
    pthread_mutex_unlock(&fake_capture_mu);
    return r;
}

CUresult fake_capture_child(CUgraph g, CUgraph child)
{
    CUgraphNode node;
    pthread_mutex_lock(&fake_capture_mu);
    fake_graph_t *fg = fake_graph_of(g);
    CUresult r = fake_add_child(&node, fg, child, false);
    if (r == CUDA_SUCCESS)
        fake_join_node(fake_capture_from, fg, (const fake_node_t *)node);
    pthread_mutex_unlock(&fake_capture_mu);
    return r;
}

CUresult fake_capture_op(CUgraph g, int kind, uint64_t a0, uint64_t a1, uint64_t a2)
{
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fake_capture_mu);
    fake_graph_t *fg = fake_graph_of(g);
    fake_node_t *nd = fg ? fake_node_slot(fg) : NULL;
    if (nd) {
        nd->type =
            kind == FAKE_NODE_EVENT_RECORD ? CU_GRAPH_NODE_TYPE_EVENT_RECORD
            : kind == FAKE_NODE_EVENT_WAIT ? CU_GRAPH_NODE_TYPE_WAIT_EVENT
            : kind == FAKE_NODE_MEMSET || kind == FAKE_NODE_MEMSET2D ? CU_GRAPH_NODE_TYPE_MEMSET
            : kind == FAKE_NODE_MEMCPY || kind == FAKE_NODE_MEMCPY3D ? CU_GRAPH_NODE_TYPE_MEMCPY
                                                                     : CU_GRAPH_NODE_TYPE_EMPTY;
        nd->op = kind;
        nd->a0 = a0;
        /* a 2D/3D copy's or 2D memset's descriptor (a0, a1 bytes) is kept in
         * the node, a0 then names the copy */
        if ((kind == FAKE_NODE_MEMCPY3D || kind == FAKE_NODE_MEMSET2D) && a1 <= sizeof(nd->args)) {
            memcpy(nd->args, (const void *)(uintptr_t)a0, a1);
            nd->a0 = U(nd->args);
        }
        nd->a1 = a1;
        nd->a2 = a2;
        nd->live = true;
        fake_join_node(fake_capture_from, fg, nd);
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&fake_capture_mu);
    return r;
}

FAKE_API size_t fake_graph_nodes(void *graph, fake_node_info_t *out, size_t max)
{
    const fake_graph_t *fg = fake_graph_of((CUgraph)graph);
    size_t k = 0;
    for (size_t i = 0; fg && i < fg->n; i++) {
        const fake_node_t *nd = &fg->nodes[i];
        if (!nd->live)
            continue;
        if (k < max) {
            fake_node_info_t *o = &out[k];
            memset(o, 0, sizeof(*o));
            if (nd->type == CU_GRAPH_NODE_TYPE_KERNEL) {
                o->kind = FAKE_NODE_KERNEL;
                o->func = (void *)nd->p.func;
                const fake_kernel_t *kn = (const fake_kernel_t *)nd->p.func;
                if (kn->n)
                    memcpy(&o->a0, nd->argv[0], kn->size[0] < 8 ? kn->size[0] : 8);
            } else if (nd->type == CU_GRAPH_NODE_TYPE_GRAPH) {
                o->kind = FAKE_NODE_GRAPH;
                o->a0 = U(nd->child);
            } else if (nd->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
                o->kind = FAKE_NODE_CONDITIONAL;
            } else {
                o->kind = nd->op;
                o->a0 = nd->a0;
                o->a1 = nd->a1;
                o->a2 = nd->a2;
            }
        }
        k++;
    }
    return k;
}
