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
 * Thread-safety: safe from any thread.
 * LOCKING: takes the table's own mutex inside, never with another shim lock.
 */
#ifndef SHIM_GRAPH_H
#define SHIM_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

/* Whether stream s (stream 0 of a _ptsz entry point: the per-thread one) is
 * being captured; *graph_p receives the graph it records into, NULL when the
 * driver does not say. */
bool shim_graph_capture_of(CUstream s, bool per_thread, CUgraph *graph_p);

/* Keeps the program's prefetch of [addr, addr+len), to the current context's
 * device (to_device) or elsewhere, recorded into graph. False when it could
 * not be kept (no memory): the caller then does what it did without. */
bool shim_graph_note_prefetch(CUgraph graph, uint64_t addr, uint64_t len, bool to_device);

#endif /* SHIM_GRAPH_H */
