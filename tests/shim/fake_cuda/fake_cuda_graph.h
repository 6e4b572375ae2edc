/*
 * The driver double's graphs (fake_cuda_graph.c) as its executable graphs
 * (fake_cuda_graph_exec.c) see them. Internal to the double.
 */
#ifndef FAKE_CUDA_GRAPH_H
#define FAKE_CUDA_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "fake_cuda_internal.h"

#define FAKE_MAX_NODES  64
#define FAKE_MAX_BODIES 8 /* bodies of one conditional node */

typedef struct fake_graph fake_graph_t;

typedef struct fake_node {
    bool live;
    CUgraphNodeType type; /* KERNEL, GRAPH (a child graph) or CONDITIONAL */
    CUDA_KERNEL_NODE_PARAMS p;
    void *argv[FAKE_MAX_PARAMS];
    unsigned char args[1024];
    /* GRAPH: the embedded graph: a copy the node owns (cuGraphAddChildGraphNode
     * clones), or, for a captured graph launch, the launched graph itself */
    fake_graph_t *child;
    bool owns_child;
    /* CONDITIONAL: the body graphs, owned by the node; phGraph_out points here */
    CUgraph bodies[FAKE_MAX_BODIES];
    unsigned nbodies;
    /* EMPTY (a captured prefetch), EVENT_RECORD, WAIT_EVENT, MEMSET, MEMCPY:
     * FAKE_NODE_*, a0, a1, a2 */
    int op;
    uint64_t a0, a1, a2;
} fake_node_t;

struct fake_graph {
    bool live;
    fake_graph_t *next_free;
    fake_node_t nodes[FAKE_MAX_NODES];
    size_t n; /* slots handed out so far, live or not */
};

typedef struct fake_exec {
    fake_graph_t *g;
} fake_exec_t;

/* The live graph at handle g, or NULL. */
__attribute__((visibility("hidden"))) fake_graph_t *fake_graph_of(CUgraph g);
/* Records child (not a copy) as a child-graph node of capture graph g. */
__attribute__((visibility("hidden"))) CUresult fake_capture_child(CUgraph g, CUgraph child);

/* Node nd of g captured from stream s: its ancestors are s's dependency
 * set and theirs, and it becomes that set (fake_cuda_join.c). */
__attribute__((visibility("hidden"))) void fake_join_node(uintptr_t s, const fake_graph_t *g,
                                                          const fake_node_t *nd);

#endif
