/*
 * The shared part of the libgmux.so tests against the driver double: the
 * driver reached the way the CUDA runtime reaches it (dlopen of
 * libcuda.so.1, dlsym of cuGetProcAddress_v2, every entry point through
 * it), the double's test API, the policy under test (from GMUX_POLICY and
 * GMUX_SHIM_MANAGED), and assertions on the double's call log.
 *
 * The helpers assert with cmocka: call them from a test.
 */
#ifndef SHIM_HARNESS_H
#define SHIM_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "fake_cuda/fake_cuda.h"

#define LEGACY CU_GET_PROC_ADDRESS_LEGACY_STREAM
#define PT     CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

extern void *drv; /* the double's handle */
extern PFN_cuGetProcAddress_v12000 gpa;
extern fake_reset_fn f_reset;
extern fake_log_count_fn f_count;
extern fake_log_get_fn f_get;
extern fake_register_kernel_fn f_register;
extern fake_entry_fn f_entry;
/* proactive policy; plain allocations redirected to managed memory; both */
extern int mode_proactive, mode_redirect, mode_prefetch;

/* Reads the policy and opens the double; 0, or -1 with a message on stderr. */
int shim_harness_open(void);

/* The entry point cudart would get for (base, version, flags). */
void *get(const char *base, int version, cuuint64_t flags);
#define GET(pfn, base, ver) ((pfn)get(base, ver, LEGACY))

/* Index of the first call of fn at or after from, or -1. */
long find_call(const char *fn, size_t from);
size_t count_calls(const char *fn);
/* Prefetch log entries of either form (a batch logs one entry per range). */
size_t count_prefetches(void);
/* The shim's prefetches logged from index from on: each must be to the
 * device; returns how many there were, and of base in *of_p, the index of
 * the last such in *at_p (left as it was if none). */
size_t shim_prefetches_since(size_t from, CUdeviceptr base, size_t *of_p, long *at_p);
/* The form the shim must use for n ranges (see shim_harness.c). */
const char *prefetch_form(size_t n);

CUdeviceptr alloc(size_t size);
/* A managed region: a plain allocation the shim redirects, or (redirection
 * off) the program's own managed memory. */
CUdeviceptr managed_region(size_t size);
CUstream new_stream(void); /* blocking (flags 0) */
CUstream new_stream_flags(unsigned flags);

/* The double's stream order (fake_ordered): 1 if the work logged at index
 * after is ordered after the work logged at before, 0 if not, -1 where
 * either is not work. */
int ordered(long before, long after);

/* vadd(a, b, c, n): c[i] = a[i] + b[i], registered with the double once. */
CUfunction vadd_fn(void);
/* Launches vadd of n floats on s (one block of n threads) through cuLaunchKernel. */
void launch_vadd(CUstream s, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int n);

/* A 2D or 3D copy of w x h x d bytes between pitched memory of either kind
 * (CU_MEMORYTYPE_HOST: dst or src is a host address), planes of h rows. */
CUDA_MEMCPY3D copy3d(CUmemorytype dt, uintptr_t dst, size_t dpitch, CUmemorytype st, uintptr_t src,
                     size_t spitch, size_t w, size_t h, size_t d);

/* Asserts the prefetch/record/wait/launch sequence for one launch of the n
 * regions bases[]/sizes[] on stream s (or that nothing moved, where the
 * policy does not prefetch). */
void assert_prefetched_before(const char *launch_fn, CUstream s, const CUdeviceptr *bases,
                              const size_t *sizes, size_t n);

/* Asserts that the log's prefetches are each of the n ranges mine[] once
 * (none where the policy does not prefetch), nothing else, all between the
 * calls at indices after and before, followed by the order of the launch
 * after them (a wait on the per-thread default stream) before before. */
void assert_prefetched_only(const CUdeviceptr *mine, size_t n, long after, long before);

/* Asserts that graph g holds exactly n nodes, kernel nodes of vadd whose
 * first arguments are first[] in order (fake_graph_nodes; n at most 8). */
void assert_graph_vadds(void *g, const CUdeviceptr *first, size_t n);

/* Instantiates g (no flags) and launches it on s, through the shim; returns
 * the executable graph and, where mark_p is given, the call log's length
 * just before the launch. */
CUgraphExec graph_run(CUgraph g, CUstream s, size_t *mark_p);
/* Destroys the executable graph e and then g. */
void graph_done(CUgraphExec e, CUgraph g);

/* Stream captures: one begun on s (mode GLOBAL, asserted), its end; s
 * waiting for a new event recorded on from (a stream joining the capture
 * from takes part in, or joining back into it). */
void capture_begin(CUstream s);
CUresult capture_end(CUstream s, CUgraph *g);
void capture_join(CUstream s, CUstream from);
/* The node of type type in g (exactly one, of at most 16 nodes). */
CUgraphNode graph_node_of_type(CUgraph g, CUgraphNodeType type);
/* How many live nodes of kind (FAKE_NODE_*) graph g holds (at most 32). */
size_t graph_nodes_of(CUgraph g, int kind);
/* The shim's prefetches of base logged from index from on (as
 * shim_prefetches_since: every prefetch since must be to the device). */
size_t shim_prefetches_of(size_t from, CUdeviceptr base);
/* How many graphs the shim walks (cuGraphGetNodes) when the program
 * destroys a new empty graph: none unless it keeps some prefetch recorded
 * into a graph, or a conditional node. */
size_t unrelated_destroy_walks(void);

#endif /* SHIM_HARNESS_H */
