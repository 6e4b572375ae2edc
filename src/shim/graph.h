/*
 * The program's own prefetches recorded into graphs (graph.c). A prefetch
 * queued on a stream that is being captured moves nothing when it is made:
 * it becomes part of the capture's graph and moves its range each time an
 * executable graph instantiated from it runs. CUDA has no graph node type
 * for a prefetch and no call that reads one back from a graph, so the shim
 * keeps each such prefetch with the graph being captured into (asked of the
 * driver with cuStreamGetCaptureInfo), copies those of a graph and of the
 * graphs nested in it into the executable graph at instantiation, and at
 * each launch of that executable graph does what the program's prefetch
 * outside a graph does to the policy's record (policy.h): a region the
 * graph moves whole to the device is not prefetched by the launch, and a
 * region it moves to the host, even in part, is prefetched again at the
 * next launch that uses it.
 *
 * The table is graph_pf.c's; graph.c walks graphs and applies it.
 *
 * Thread-safety: safe from any thread.
 * LOCKING: takes the table's own mutex inside, never with another shim lock.
 */
#ifndef SHIM_GRAPH_H
#define SHIM_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

#include <stddef.h>

#include <gmux/status.h>

/* A prefetch of the program recorded into a graph. */
typedef struct shim_graph_pf {
    CUgraph graph;
    uint64_t addr, len;
    bool to_device;
    uint64_t capture; /* the capture in progress that recorded it; 0 once it ended with graph */
    CUgraphNode node; /* the node it became, where known */
    uint64_t stream;  /* the stream it was queued on (shim_policy_stream_key) */
    uint64_t batch;   /* the batch of several nodes it came in (0: none; graph_pf.c) */
} shim_graph_pf_t;

/* What a capture records into, as the driver says (cuStreamGetCaptureInfo). */
typedef struct shim_graph_capture {
    CUgraph graph;    /* NULL when the driver does not say */
    uint64_t id;      /* the capture's, unique in the process; 0 when not said */
    CUgraphNode last; /* the stream's single dependency: the node it captured last */
    uint64_t stream;  /* the stream asked of (shim_policy_stream_key) */
    uint64_t batch;   /* the batch of several nodes a prefetch came in (0: none) */
} shim_graph_capture_t;

/* The nodes of the graph a stream captures into, asked before a batch. */
typedef struct shim_graph_nodes {
    CUgraph graph;  /* NULL: not known */
    CUgraphNode *v; /* sorted */
    size_t n;
} shim_graph_nodes_t;

/* Whether stream s (stream 0 of a _ptsz entry point: the per-thread one) is
 * being captured; *c_p receives what the driver says of the capture. */
bool shim_graph_capture_of(CUstream s, bool per_thread, shim_graph_capture_t *c_p);

/* Notes the id of the capture just begun on stream s (the driver's answer
 * now, while it is active), so that its end, asked after an invalidation,
 * still knows which capture it was. Proactive mode only; no-op when the
 * driver does not say. */
void shim_graph_capture_begun(CUstream s, bool per_thread);

/* Keeps the program's prefetch of [addr, addr+len), to the current context's
 * device (to_device) or elsewhere, recorded by capture c into its graph as
 * node c->last (the entry counts once that capture ends with the graph).
 * False when it could not be kept (no graph known, no memory): the caller
 * then does what it did without. */
bool shim_graph_note_prefetch(const shim_graph_capture_t *c, uint64_t addr, uint64_t len,
                              bool to_device);

/* Before a batch of prefetches or discards of count ranges on stream s
 * (proactive mode, several ranges): *b receives the nodes of the graph s
 * captures into, if it does (else b->graph is NULL). Release with
 * shim_graph_nodes_free. */
void shim_graph_nodes_before(CUstream s, bool per_thread, size_t count, shim_graph_nodes_t *b);
void shim_graph_nodes_free(shim_graph_nodes_t *b);

/* After the batch of count ranges the driver took, c being what it says of
 * the capture: the nodes the batch added to the graph (those not in *b). One
 * node: the batch's ranges all take it (c->last). Several, at most count: a
 * batch of its own (c->batch, c->last NULL) that knows its nodes; else
 * c->last is left as the driver said. */
void shim_graph_batch_nodes(shim_graph_capture_t *c, const shim_graph_nodes_t *b, size_t count);

/* Forgets the prefetches recorded as node (being destroyed). A node of a
 * batch of several (whose ranges' nodes are not known): the batch's moves
 * to the device no longer count, and its moves elsewhere once its last node
 * is destroyed. */
void shim_graph_pf_forget_node(CUgraphNode node);

/* Appends to *pf_p (realloc'd; *npf_p entries) the prefetches graph holds
 * that count and that *pf_p does not hold yet. */
gmux_status_t shim_graph_pf_collect(CUgraph graph, shim_graph_pf_t **pf_p, size_t *npf_p);

/* How many prefetches are kept (counted or pending). */
size_t shim_graph_pf_count(void);

/* Forgets the prefetches of the n graphs (every one where all). */
void shim_graph_pf_forget(const CUgraph *graphs, size_t n, bool all);

/* Tells the policy the n prefetches of one direction, as the program's own
 * prefetches outside a graph are (hooks_prefetch.c), queued on stream (the
 * graph launch's, shim_policy_stream_key). */
void shim_graph_pf_apply(const shim_graph_pf_t *pf, size_t n, bool to_device, uint64_t stream);

#endif /* SHIM_GRAPH_H */
