/*
 * CUDA graphs: kernel nodes are inspected once, when the graph is
 * instantiated (cuGraphGetNodes, cuGraphKernelNodeGetParams; child-graph
 * nodes are walked too, cuGraphChildGraphNodeGetGraph), and the
 * candidate pointers of all its kernels are kept per executable graph; each
 * cuGraphLaunch then runs the policy on them like one big launch.
 *
 * LOCKING: graph_lock (rwlock) guards the table; launches hold it shared
 * while the policy runs (policy takes the region lock inside: graph_lock is
 * always taken first).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "shim/gate.h"
#include "shim/params.h"
#include "shim/policy.h"
#include "shim/shim.h"
#include "shim/stats.h"

typedef struct graph_exec {
    CUgraphExec exec;
    uint64_t *vals;
    size_t n;
} graph_exec_t;

static pthread_rwlock_t graph_lock = PTHREAD_RWLOCK_INITIALIZER;
static graph_exec_t *graph_execs;
static size_t graph_n, graph_cap;

#define GRAPH_DEPTH_MAX 8 /* child graphs within child graphs walked */

/* Appends the candidate pointers of every kernel node of graph, and of the
 * graphs of its child-graph nodes (to depth GRAPH_DEPTH_MAX), to *vals_p. */
static gmux_status_t graph_collect(CUgraph graph, uint64_t **vals_p, size_t *n_p, int depth)
{
    size_t count = 0;
    if (SHIM_CALL(cuGraphGetNodes, graph, NULL, &count) != CUDA_SUCCESS)
        return GMUX_ERR_DRIVER;
    if (count == 0)
        return GMUX_OK;
    gmux_status_t st = GMUX_OK;
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
                SHIM_STAT_ADD(graph_too_deep, 1);
                continue;
            }
            if (SHIM_CALL(cuGraphChildGraphNodeGetGraph, nodes[i], &child) != CUDA_SUCCESS ||
                !child)
                continue;
            SHIM_STAT_ADD(graph_children, 1);
            if ((st = graph_collect(child, vals_p, n_p, depth + 1)) != GMUX_OK)
                goto out_free_nodes;
            continue;
        }
        if (type != CU_GRAPH_NODE_TYPE_KERNEL)
            continue;
        memset(&p, 0, sizeof(p));
        if (SHIM_CALL(cuGraphKernelNodeGetParams_v2, nodes[i], &p) != CUDA_SUCCESS)
            continue;
        uint64_t tmp[SHIM_MAX_CANDIDATES];
        CUfunction f = p.func ? p.func : (CUfunction)p.kern;
        size_t k = shim_params_decode(f, p.kernelParams, p.extra, tmp, SHIM_MAX_CANDIDATES);
        if (k == 0)
            continue;
        uint64_t *v = realloc(*vals_p, (*n_p + k) * sizeof(*v));
        if (!v) {
            st = GMUX_ERR_NOMEM;
            goto out_free_nodes;
        }
        memcpy(v + *n_p, tmp, k * sizeof(*v));
        *vals_p = v;
        *n_p += k;
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
            graph_execs[i] = graph_execs[--graph_n];
            return;
        }
}

/* Inspects graph and records its candidates for exec (replacing any stale entry). */
static void graph_inspect(CUgraphExec exec, CUgraph graph)
{
    if (shim_state.mode != SHIM_MODE_PROACTIVE)
        return;
    uint64_t *vals = NULL;
    size_t n = 0;
    if (graph_collect(graph, &vals, &n, 0) != GMUX_OK)
        COM_DEBUG(SHIM, "graph %p: inspection incomplete", (void *)graph);
    SHIM_STAT_ADD(graphs_inspected, 1);
    pthread_rwlock_wrlock(&graph_lock);
    graph_forget_locked(exec);
    if (graph_n == graph_cap) {
        size_t cap = graph_cap ? graph_cap * 2 : 32;
        graph_exec_t *v = realloc(graph_execs, cap * sizeof(*v));
        if (!v) {
            free(vals);
            goto out_unlock;
        }
        graph_execs = v;
        graph_cap = cap;
    }
    graph_execs[graph_n++] = (graph_exec_t){.exec = exec, .vals = vals, .n = n};
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

static void graph_before_launch(CUgraphExec exec, CUstream s, bool per_thread)
{
    SHIM_STAT_ADD(graph_launches, 1);
    if (shim_state.mode != SHIM_MODE_PROACTIVE)
        return;
    pthread_rwlock_rdlock(&graph_lock);
    for (size_t i = 0; i < graph_n; i++)
        if (graph_execs[i].exec == exec) {
            shim_launch_info_t l = {.stream = s,
                                    .per_thread = per_thread,
                                    .vals = graph_execs[i].vals,
                                    .nvals = graph_execs[i].n};
            shim_policy_before_launch(&l);
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

CUresult shim_hook_cuGraphExecDestroy(CUgraphExec exec)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGraphExecDestroy, exec);
    pthread_rwlock_wrlock(&graph_lock);
    graph_forget_locked(exec);
    pthread_rwlock_unlock(&graph_lock);
    return r;
}
