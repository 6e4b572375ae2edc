/*
 * CUDA graphs: kernel nodes are inspected once, when the graph is
 * instantiated (cuGraphGetNodes, cuGraphKernelNodeGetParams; child-graph
 * nodes are walked too, cuGraphChildGraphNodeGetGraph, and so are the body
 * graphs of conditional nodes), and the candidate pointers of all its
 * kernels are kept per executable graph; each cuGraphLaunch then runs the
 * policy on them like one big launch. A cuGraphExecUpdate that succeeds
 * gives the executable graph another graph's parameters: that graph is
 * inspected in its place.
 *
 * Conditional nodes (IF, WHILE, SWITCH; CUDA 12.3+): the driver has no call
 * that hands out a conditional node's body graphs; they are only returned
 * once, by the cuGraphAddNode that creates the node. So cuGraphAddNode(_v2)
 * is hooked and, in proactive mode, a copy of the body handles is kept per
 * node with the graph the node was added to. A node whose bodies were never
 * seen is counted (graph_cond_unknown) and not walked. Body handles die with
 * their node, and node and graph handles can be reused by the driver, so
 * entries are dropped before the driver destroys them: cuGraphDestroyNode
 * and cuGraphDestroy are hooked, find every graph that dies with the node or
 * graph (bodies of known conditional nodes, graphs of child-graph nodes,
 * recursively) and forget the entries owned by any of them. When that walk
 * cannot be completed, every entry is forgotten: a conditional node may
 * then go unwalked, but a freed body is never walked.
 *
 * The program's prefetches recorded into a graph by a stream capture are
 * kept per graph (graph.h), copied into the executable graph with the
 * kernels' candidates, applied to the policy's record at each launch, and
 * forgotten with the graph like conditional nodes (or with their node);
 * cuGraphAddChildGraphNode, which embeds a copy of a graph, and cuGraphClone
 * give the copy the prefetches of the graph copied.
 *
 * LOCKING: graph_lock (rwlock) guards the table of executable graphs;
 * launches hold it shared while the policy runs (policy takes the region
 * lock inside: graph_lock is always taken first). cond_lock (mutex) guards
 * the table of conditional nodes; it is held only to read or change that
 * table, never across a driver call, and never together with graph_lock.
 * The prefetches recorded into graphs are graph_pf.c's (its own lock).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"
#include "shim/backend_cuda.h"
#include "shim/gate.h"
#include "shim/graph.h"
#include "shim/params.h"
#include "shim/policy.h"
#include "shim/shim.h"
#include "shim/stats.h"

typedef struct graph_exec {
    CUgraphExec exec;
    uint64_t *vals;
    size_t n;
    shim_graph_pf_t *pf; /* the prefetches its graphs hold */
    size_t npf;
} graph_exec_t;

/* What a walk of a graph collects for its executable graph (pf_only: the
 * prefetches alone, nothing counted in the stats). */
typedef struct graph_walk {
    uint64_t *vals;
    size_t n;
    shim_graph_pf_t *pf;
    size_t npf;
    bool pf_only;
} graph_walk_t;

static pthread_rwlock_t graph_lock = PTHREAD_RWLOCK_INITIALIZER;
static graph_exec_t *graph_execs;
static size_t graph_n, graph_cap;

#define GRAPH_DEPTH_MAX 8 /* child graphs / conditional bodies within each other walked */

/* A conditional node created through a hooked cuGraphAddNode. */
typedef struct graph_cond {
    CUgraphNode node;
    CUgraph owner;   /* the graph the node was added to */
    CUgraph *bodies; /* copy of the driver's phGraph_out array */
    unsigned n;
} graph_cond_t;

static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static graph_cond_t *conds;
static size_t cond_n, cond_cap;

static void cond_drop_locked(size_t i)
{
    free(conds[i].bodies);
    conds[i] = conds[--cond_n];
}

/* Forgets whatever was known of node, then remembers its n bodies (copied)
 * when n > 0; a node left unknown is never walked. */
static void cond_remember(CUgraphNode node, CUgraph owner, const CUgraph *bodies, unsigned n)
{
    CUgraph *copy = NULL;
    if (n > 0 && bodies && (copy = malloc(n * sizeof(*copy))) != NULL)
        memcpy(copy, bodies, n * sizeof(*copy));
    pthread_mutex_lock(&cond_lock);
    for (size_t i = 0; i < cond_n; i++)
        if (conds[i].node == node) {
            cond_drop_locked(i);
            break;
        }
    if (!copy)
        goto out_unlock;
    if (cond_n == cond_cap && com_array_grow((void **)&conds, &cond_cap, cond_n + 1, sizeof(*conds),
                                             16, SIZE_MAX) != GMUX_OK)
        goto out_free_copy;
    conds[cond_n++] = (graph_cond_t){.node = node, .owner = owner, .bodies = copy, .n = n};
    pthread_mutex_unlock(&cond_lock);
    return;
out_free_copy:
    free(copy);
out_unlock:
    pthread_mutex_unlock(&cond_lock);
    if (n > 0 && bodies)
        COM_DEBUG(SHIM, "conditional node %p: out of memory, its bodies will not be walked",
                  (void *)node);
}

/* A copy of node's bodies in *bodies_p (NULL when they are unknown; the
 * caller frees it) and their number in *n_p. */
static gmux_status_t cond_bodies(CUgraphNode node, CUgraph **bodies_p, unsigned *n_p)
{
    gmux_status_t st = GMUX_OK;
    CUgraph *copy = NULL;
    unsigned n = 0;
    pthread_mutex_lock(&cond_lock);
    for (size_t i = 0; i < cond_n; i++)
        if (conds[i].node == node) {
            n = conds[i].n;
            if ((copy = malloc(n * sizeof(*copy))) == NULL)
                st = GMUX_ERR_NOMEM;
            else
                memcpy(copy, conds[i].bodies, n * sizeof(*copy));
            break;
        }
    pthread_mutex_unlock(&cond_lock);
    *bodies_p = copy;
    *n_p = copy ? n : 0;
    return st;
}

static gmux_status_t graph_collect(CUgraph graph, graph_walk_t *w, int depth);

/* Walks every body of a conditional node found at depth (see graph_collect).
 * Which body runs (IF or ELSE, which SWITCH case, whether and how often a
 * WHILE body) is decided on the device at each launch, so any of them may
 * run: all of them are walked and their data prefetched. */
static gmux_status_t graph_collect_cond(CUgraphNode node, graph_walk_t *w, int depth)
{
    CUgraph *bodies;
    unsigned n;
    gmux_status_t st = cond_bodies(node, &bodies, &n);
    if (st != GMUX_OK)
        return st;
    if (!bodies) {
        SHIM_STAT_ADD(graph_cond_unknown, !w->pf_only);
        return GMUX_OK;
    }
    if (depth >= GRAPH_DEPTH_MAX) {
        SHIM_STAT_ADD(graph_too_deep, !w->pf_only);
        goto out_free_bodies;
    }
    SHIM_STAT_ADD(graph_conditionals, !w->pf_only);
    for (unsigned b = 0; b < n && st == GMUX_OK; b++)
        if (bodies[b])
            st = graph_collect(bodies[b], w, depth + 1);
out_free_bodies:
    free(bodies);
    return st;
}

/* Appends the candidate pointers of every kernel node of graph, and of the
 * graphs of its child-graph nodes and the bodies of its known conditional
 * nodes (to depth GRAPH_DEPTH_MAX), to w->vals, and the prefetches recorded
 * into each of those graphs to w->pf. */
static gmux_status_t graph_collect(CUgraph graph, graph_walk_t *w, int depth)
{
    gmux_status_t st = shim_graph_pf_collect(graph, &w->pf, &w->npf);
    if (st != GMUX_OK)
        return st;
    size_t count = 0;
    if (SHIM_CALL(cuGraphGetNodes, graph, NULL, &count) != CUDA_SUCCESS)
        return GMUX_ERR_DRIVER;
    if (count == 0)
        return GMUX_OK;
    CUgraphNode *nodes = calloc(count, sizeof(*nodes));
    if (!nodes)
        return GMUX_ERR_NOMEM;
    if (SHIM_CALL(cuGraphGetNodes, graph, nodes, &count) != CUDA_SUCCESS) {
        st = GMUX_ERR_DRIVER;
        goto out_free_nodes;
    }
    for (size_t i = 0; i < count; i++) {
        CUgraphNodeType type;
        CUDA_KERNEL_NODE_PARAMS p;
        if (SHIM_CALL(cuGraphNodeGetType, nodes[i], &type) != CUDA_SUCCESS)
            continue;
        if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
            CUgraph child = NULL;
            if (depth >= GRAPH_DEPTH_MAX) {
                SHIM_STAT_ADD(graph_too_deep, !w->pf_only);
                continue;
            }
            if (SHIM_CALL(cuGraphChildGraphNodeGetGraph, nodes[i], &child) != CUDA_SUCCESS ||
                !child)
                continue;
            SHIM_STAT_ADD(graph_children, !w->pf_only);
            if ((st = graph_collect(child, w, depth + 1)) != GMUX_OK)
                goto out_free_nodes;
            continue;
        }
        if (type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
            if ((st = graph_collect_cond(nodes[i], w, depth)) != GMUX_OK)
                goto out_free_nodes;
            continue;
        }
        if (type != CU_GRAPH_NODE_TYPE_KERNEL || w->pf_only)
            continue;
        memset(&p, 0, sizeof(p));
        if (SHIM_CALL(cuGraphKernelNodeGetParams_v2, nodes[i], &p) != CUDA_SUCCESS)
            continue;
        uint64_t tmp[SHIM_MAX_CANDIDATES];
        CUfunction f = p.func ? p.func : (CUfunction)p.kern;
        size_t k = shim_params_decode(f, p.kernelParams, p.extra, tmp, SHIM_MAX_CANDIDATES);
        if (k == 0)
            continue;
        uint64_t *v = realloc(w->vals, (w->n + k) * sizeof(*v));
        if (!v) {
            st = GMUX_ERR_NOMEM;
            goto out_free_nodes;
        }
        memcpy(v + w->n, tmp, k * sizeof(*v));
        w->vals = v;
        w->n += k;
    }
out_free_nodes:
    free(nodes);
    return st;
}

static void graph_forget_locked(CUgraphExec exec)
{
    for (size_t i = 0; i < graph_n; i++)
        if (graph_execs[i].exec == exec) {
            free(graph_execs[i].vals);
            free(graph_execs[i].pf);
            graph_execs[i] = graph_execs[--graph_n];
            return;
        }
}

/* Inspects graph and records its candidates for exec (replacing any stale entry). */
static void graph_inspect(CUgraphExec exec, CUgraph graph)
{
    if (shim_state.mode != SHIM_MODE_PROACTIVE)
        return;
    graph_walk_t w = {0};
    if (graph_collect(graph, &w, 0) != GMUX_OK)
        COM_DEBUG(SHIM, "graph %p: inspection incomplete", (void *)graph);
    SHIM_STAT_ADD(graphs_inspected, 1);
    pthread_rwlock_wrlock(&graph_lock);
    graph_forget_locked(exec);
    if (graph_n == graph_cap && com_array_grow((void **)&graph_execs, &graph_cap, graph_n + 1,
                                               sizeof(*graph_execs), 32, SIZE_MAX) != GMUX_OK) {
        free(w.vals);
        free(w.pf);
        goto out_unlock;
    }
    graph_execs[graph_n++] =
        (graph_exec_t){.exec = exec, .vals = w.vals, .n = w.n, .pf = w.pf, .npf = w.npf};
out_unlock:
    pthread_rwlock_unlock(&graph_lock);
}

CUresult shim_hook_cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                               unsigned long long flags)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphInstantiateWithFlags, exec, graph, flags);
    if (r == CUDA_SUCCESS)
        graph_inspect(*exec, graph);
    return r;
}

CUresult shim_hook_cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph graph,
                                                CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphInstantiateWithParams, exec, graph, params);
    if (r == CUDA_SUCCESS)
        graph_inspect(*exec, graph);
    return r;
}

CUresult shim_hook_cuGraphInstantiateWithParams_ptsz(CUgraphExec *exec, CUgraph graph,
                                                     CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphInstantiateWithParams_ptsz, exec, graph, params);
    if (r == CUDA_SUCCESS)
        graph_inspect(*exec, graph);
    return r;
}

/* Runs the policy on the graph's kernels. The regions the graph itself moves
 * whole to the device are marked first, so the launch leaves their move to
 * the graph (the order of its nodes is the program's part, as for its
 * prefetches outside graphs); those it moves to the host are marked after,
 * so the next launch that uses them prefetches them again: which of its
 * nodes comes first is not known here, and a region the graph moves both
 * ways is taken as moved to the host (one prefetch more at worst). Nothing
 * runs where the graph is launched into a capturing stream. */
static void graph_before_launch(CUgraphExec exec, CUstream s, bool per_thread)
{
    SHIM_STAT_ADD(graph_launches, 1);
    if (shim_state.mode != SHIM_MODE_PROACTIVE)
        return;
    pthread_rwlock_rdlock(&graph_lock);
    for (size_t i = 0; i < graph_n; i++)
        if (graph_execs[i].exec == exec) {
            const graph_exec_t *e = &graph_execs[i];
            bool runs = e->npf > 0 && !shim_backend_capturing(s, per_thread);
            uint64_t key = shim_policy_stream_key(s, per_thread);
            if (runs)
                shim_graph_pf_apply(e->pf, e->npf, true, key);
            shim_launch_info_t l = {
                .stream = s, .per_thread = per_thread, .vals = e->vals, .nvals = e->n};
            shim_policy_before_launch(&l);
            if (runs)
                shim_graph_pf_apply(e->pf, e->npf, false, key);
            break;
        }
    pthread_rwlock_unlock(&graph_lock);
}

CUresult shim_hook_cuGraphLaunch(CUgraphExec exec, CUstream s)
{
    shim_ensure_init();
    bool gated = shim_gate_enter();
    graph_before_launch(exec, s, false);
    CUresult r = SHIM_CALL(cuGraphLaunch, exec, s);
    shim_gate_exit(gated);
    return r;
}

CUresult shim_hook_cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s)
{
    shim_ensure_init();
    bool gated = shim_gate_enter();
    graph_before_launch(exec, s, true);
    CUresult r = SHIM_CALL(cuGraphLaunch_ptsz, exec, s);
    shim_gate_exit(gated);
    return r;
}

/* cuGraphExecUpdate: once it succeeds, exec runs graph's node parameters
 * (cuda.h: the topology stays, the parameters of its nodes change), so its
 * record is graph's, kernel arguments and prefetches alike. */
CUresult shim_hook_cuGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphNode *err,
                                     CUgraphExecUpdateResult *res)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphExecUpdate, exec, graph, err, res);
    if (r == CUDA_SUCCESS)
        graph_inspect(exec, graph);
    return r;
}

CUresult shim_hook_cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph,
                                        CUgraphExecUpdateResultInfo *info)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphExecUpdate_v2, exec, graph, info);
    if (r == CUDA_SUCCESS)
        graph_inspect(exec, graph);
    return r;
}

CUresult shim_hook_cuGraphExecDestroy(CUgraphExec exec)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphExecDestroy, exec);
    pthread_rwlock_wrlock(&graph_lock);
    graph_forget_locked(exec);
    pthread_rwlock_unlock(&graph_lock);
    return r;
}

/* --- copies of graphs: child graphs and clones ---------------------------- */

/* The prefetches recorded into graph and the graphs nested in it run at
 * each launch of a copy of it (a child graph's, a clone): the copy's handle
 * gets them (counted at once; not tied to the copy's nodes, whose removal
 * the shim then does not see). */
static void graph_copy_pf(CUgraph graph, CUgraph copy)
{
    if (!copy || copy == graph)
        return;
    graph_walk_t w = {.pf_only = true};
    if (graph_collect(graph, &w, 0) != GMUX_OK)
        COM_DEBUG(SHIM, "graph %p: its prefetches not all followed", (void *)graph);
    const shim_graph_capture_t into = {.graph = copy};
    for (size_t i = 0; i < w.npf; i++)
        (void)shim_graph_note_prefetch(&into, w.pf[i].addr, w.pf[i].len, w.pf[i].to_device);
    free(w.vals);
    free(w.pf);
}

/* Only the proactive policy keeps prefetches, and a copy of a graph can
 * hold some only while any is kept. */
static bool graph_pf_kept(void)
{
    return shim_state.mode == SHIM_MODE_PROACTIVE && shim_graph_pf_count() > 0;
}

/* The driver embeds a copy of child, at a handle of its own, in the node
 * cuGraphAddChildGraphNode made. */
CUresult shim_hook_cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph graph,
                                            const CUgraphNode *deps, size_t ndeps, CUgraph child)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphAddChildGraphNode, node, graph, deps, ndeps, child);
    CUgraph copy = NULL;
    if (r == CUDA_SUCCESS && node && graph_pf_kept() &&
        SHIM_CALL(cuGraphChildGraphNodeGetGraph, *node, &copy) == CUDA_SUCCESS)
        graph_copy_pf(child, copy);
    return r;
}

/* cuGraphClone: a copy of original, with the graphs nested in it, at a new
 * handle. */
CUresult shim_hook_cuGraphClone(CUgraph *clone, CUgraph original)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphClone, clone, original);
    if (r == CUDA_SUCCESS && clone && graph_pf_kept())
        graph_copy_pf(original, *clone);
    return r;
}

/* --- conditional nodes: creation and destruction -------------------------- */

/* Remembers the bodies of a conditional node a successful cuGraphAddNode created. */
static void graph_after_add(CUresult r, const CUgraphNode *node_p, CUgraph graph,
                            const CUgraphNodeParams *p)
{
    if (r != CUDA_SUCCESS || shim_state.mode != SHIM_MODE_PROACTIVE || !node_p || !p ||
        p->type != CU_GRAPH_NODE_TYPE_CONDITIONAL)
        return;
    cond_remember(*node_p, graph, p->conditional.phGraph_out, p->conditional.size);
}

CUresult shim_hook_cuGraphAddNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                  size_t ndeps, CUgraphNodeParams *p)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphAddNode, node, graph, deps, ndeps, p);
    graph_after_add(r, node, graph, p);
    return r;
}

CUresult shim_hook_cuGraphAddNode_v2(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                     const CUgraphEdgeData *edges, size_t ndeps,
                                     CUgraphNodeParams *p)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphAddNode_v2, node, graph, deps, edges, ndeps, p);
    graph_after_add(r, node, graph, p);
    return r;
}

#define GRAPH_DYING_MAX 65536 /* graphs one destruction may take with it, at most */

/* Graphs about to be destroyed together. */
typedef struct graph_set {
    CUgraph *v;
    size_t n, cap;
} graph_set_t;

static gmux_status_t graph_set_add(graph_set_t *set, CUgraph g)
{
    if (!g)
        return GMUX_OK;
    if (set->n == set->cap) {
        gmux_status_t st = com_array_grow((void **)&set->v, &set->cap, set->n + 1, sizeof(*set->v),
                                          16, GRAPH_DYING_MAX);
        if (st != GMUX_OK)
            return st;
    }
    set->v[set->n++] = g;
    return GMUX_OK;
}

/* Adds to set what dies with node: the graph of a child-graph node, the
 * bodies of a known conditional node. */
static gmux_status_t graph_set_add_owned(graph_set_t *set, CUgraphNode node)
{
    CUgraphNodeType type;
    if (SHIM_CALL(cuGraphNodeGetType, node, &type) != CUDA_SUCCESS)
        return GMUX_ERR_DRIVER;
    if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
        CUgraph child = NULL;
        if (SHIM_CALL(cuGraphChildGraphNodeGetGraph, node, &child) != CUDA_SUCCESS)
            return GMUX_ERR_DRIVER;
        return graph_set_add(set, child);
    }
    if (type != CU_GRAPH_NODE_TYPE_CONDITIONAL)
        return GMUX_OK;
    CUgraph *bodies;
    unsigned n;
    gmux_status_t st = cond_bodies(node, &bodies, &n);
    for (unsigned b = 0; b < n && st == GMUX_OK; b++)
        st = graph_set_add(set, bodies[b]);
    free(bodies);
    return st;
}

/* Extends set (whose graphs are all still alive) with every graph nested in
 * them, breadth first. */
static gmux_status_t graph_set_close(graph_set_t *set)
{
    gmux_status_t st = GMUX_OK;
    for (size_t g = 0; g < set->n && st == GMUX_OK; g++) {
        size_t count = 0;
        if (SHIM_CALL(cuGraphGetNodes, set->v[g], NULL, &count) != CUDA_SUCCESS)
            return GMUX_ERR_DRIVER;
        if (count == 0)
            continue;
        CUgraphNode *nodes = calloc(count, sizeof(*nodes));
        if (!nodes)
            return GMUX_ERR_NOMEM;
        if (SHIM_CALL(cuGraphGetNodes, set->v[g], nodes, &count) != CUDA_SUCCESS)
            st = GMUX_ERR_DRIVER;
        for (size_t i = 0; i < count && st == GMUX_OK; i++)
            st = graph_set_add_owned(set, nodes[i]);
        free(nodes);
    }
    return st;
}

/*
 * Forgets the conditional nodes that die with node (when graph is NULL) or
 * with graph, before the driver destroys them: node itself, and every entry
 * owned by a graph that dies along; and the prefetches recorded into any of
 * those graphs. Everything is forgotten when that set cannot be found.
 */
static void graph_forget_dying(CUgraphNode node, CUgraph graph)
{
    if (!node && !graph)
        return;
    pthread_mutex_lock(&cond_lock);
    size_t known = cond_n;
    pthread_mutex_unlock(&cond_lock);
    known += shim_graph_pf_count();
    if (known == 0)
        return;
    graph_set_t set = {0};
    gmux_status_t st = graph ? graph_set_add(&set, graph) : graph_set_add_owned(&set, node);
    if (st == GMUX_OK)
        st = graph_set_close(&set);
    pthread_mutex_lock(&cond_lock);
    for (size_t i = cond_n; i-- > 0;) {
        bool dies = st != GMUX_OK || (!graph && conds[i].node == node);
        for (size_t g = 0; g < set.n && !dies; g++)
            dies = conds[i].owner == set.v[g];
        if (dies)
            cond_drop_locked(i);
    }
    pthread_mutex_unlock(&cond_lock);
    shim_graph_pf_forget(set.v, set.n, st != GMUX_OK);
    if (st != GMUX_OK)
        COM_DEBUG(SHIM, "destroying graph %p / node %p: not followed (%s), all forgotten",
                  (void *)graph, (void *)node, gmux_status_str(st));
    free(set.v);
}

CUresult shim_hook_cuGraphDestroyNode(CUgraphNode node)
{
    shim_ensure_init();
    shim_graph_pf_forget_node(node);
    graph_forget_dying(node, NULL);
    return SHIM_CALL(cuGraphDestroyNode, node);
}

CUresult shim_hook_cuGraphDestroy(CUgraph graph)
{
    shim_ensure_init();
    graph_forget_dying(NULL, graph);
    return SHIM_CALL(cuGraphDestroy, graph);
}
