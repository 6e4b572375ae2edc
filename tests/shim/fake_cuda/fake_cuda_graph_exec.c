/*
 * The driver double's executable graphs: instantiation, launch (the graph's
 * nodes run in place, or recorded into a capture), update and destruction.
 * An executable graph runs the graph it was made from, which the tests keep
 * alive.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "fake_cuda_graph.h"

CUresult fk_cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags)
{
    (void)flags;
    if (!fake_graph_of(g))
        return CUDA_ERROR_INVALID_VALUE;
    fake_exec_t *e = calloc(1, sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->g = (fake_graph_t *)g;
    *exec = (CUgraphExec)e;
    REC(U(e), U(g), 0, 0);
    return CUDA_SUCCESS;
}

/* Runs the live nodes in the order of their slots (the tests add them in
 * dependency order; a capture records them in issue order), child graphs in
 * place. Kernels, memsets and copies do something here: prefetches, event
 * records and waits have nothing to move or order on the host, and
 * conditional nodes are passed over (the double has no device-side
 * condition to evaluate). */
static CUresult fake_graph_nodes_run(const fake_graph_t *g)
{
    for (size_t i = 0; i < g->n; i++) {
        const fake_node_t *nd = &g->nodes[i];
        if (!nd->live)
            continue;
        if (nd->type == CU_GRAPH_NODE_TYPE_GRAPH) {
            CUresult r = fake_graph_nodes_run(nd->child);
            if (r != CUDA_SUCCESS)
                return r;
            continue;
        }
        if (nd->type == CU_GRAPH_NODE_TYPE_MEMSET || nd->type == CU_GRAPH_NODE_TYPE_MEMCPY) {
            fake_copy_run(nd->op, nd->a0, nd->a1, nd->a2);
            continue;
        }
        if (nd->type != CU_GRAPH_NODE_TYPE_KERNEL)
            continue;
        const CUDA_KERNEL_NODE_PARAMS *p = &nd->p;
        const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
        const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
        CUresult r = fake_run((const fake_kernel_t *)p->func, grid, block, p->kernelParams, NULL);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_graph_run(CUgraphExec exec)
{
    fake_exec_t *e = (fake_exec_t *)exec;
    return e ? fake_graph_nodes_run(e->g) : CUDA_ERROR_INVALID_HANDLE;
}

/* A graph launched into a capturing stream becomes a child-graph node of the
 * capture's graph (the launched graph itself, not a copy: the tests keep it
 * alive), run when that graph runs; on the legacy stream while a blocking
 * stream captures it is refused. */
static CUresult fake_graph_launch(CUgraphExec exec, CUstream s, int ptsz)
{
    fake_exec_t *e = (fake_exec_t *)exec;
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_legacy_work(fake_stream_of(s, ptsz)))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    CUgraph g = fake_capture_graph(s, ptsz);
    if (!g) {
        fake_order_work(fake_stream_of(s, ptsz), fake_rec_last());
        return fake_graph_run(exec);
    }
    return fake_capture_child(g, (CUgraph)e->g);
}

CUresult fk_cuGraphLaunch(CUgraphExec exec, CUstream s)
{
    REC(U(exec), U(s), 0, 0);
    return fake_graph_launch(exec, s, 0);
}

CUresult fk_cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s)
{
    REC(U(exec), U(s), 0, 0);
    return fake_graph_launch(exec, s, 1);
}

/* cuGraphExecUpdate: exec takes graph's node parameters where the two
 * have the same topology (the double: the same nodes, of the same kinds,
 * slot by slot); else CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, exec as it was.
 * The double's executable graph runs its graph in place: then graph's. */
static CUresult fake_exec_update(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResult *res)
{
    fake_exec_t *e = (fake_exec_t *)exec;
    const fake_graph_t *g = fake_graph_of(graph);
    if (!e || !g)
        return CUDA_ERROR_INVALID_VALUE;
    bool same = g->n == e->g->n;
    for (size_t i = 0; i < g->n && same; i++) {
        const fake_node_t *a = &g->nodes[i], *b = &e->g->nodes[i];
        same = a->live == b->live && (!a->live || (a->type == b->type && a->op == b->op));
    }
    *res = same ? CU_GRAPH_EXEC_UPDATE_SUCCESS : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    if (same)
        e->g = (fake_graph_t *)g;
    return same ? CUDA_SUCCESS : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}

CUresult fk_cuGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphNode *err,
                              CUgraphExecUpdateResult *res)
{
    REC(U(exec), U(graph), 0, 0);
    CUgraphExecUpdateResult r_ = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    if (err)
        *err = NULL;
    CUresult r = fake_exec_update(exec, graph, &r_);
    if (res)
        *res = r_;
    return r;
}

CUresult fk_cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *info)
{
    REC(U(exec), U(graph), 0, 0);
    CUgraphExecUpdateResultInfo i_ = {.result = CU_GRAPH_EXEC_UPDATE_SUCCESS};
    CUresult r = fake_exec_update(exec, graph, &i_.result);
    if (info)
        *info = i_;
    return r;
}

CUresult fk_cuGraphExecDestroy(CUgraphExec exec)
{
    REC(U(exec), 0, 0, 0);
    free(exec);
    return CUDA_SUCCESS;
}
