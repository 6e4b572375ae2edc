/*
 * A test double of the CUDA driver (libcuda.so.1), for tests only.
 *
 * It implements the subset of the driver API that libgmux.so and its tests
 * use, on host memory: "device" allocations are host blocks, streams and
 * events are tokens, kernels are host functions registered by the test and
 * run synchronously at launch. cuGetProcAddress / cuGetProcAddress_v2
 * resolve (name, version, flags) like the real driver, including older ABIs
 * (cuMemAlloc v2000) and the per-thread (_ptsz) variants.
 *
 * Every driver call is recorded (name and up to four arguments) so tests can
 * assert what reached the driver and in which order. The test API below is
 * exported with a fake_ prefix and reached with dlsym on the driver handle.
 *
 * Thread-safety: calls may come from any thread (one mutex); the log is
 * appended atomically.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_LOG_CAP 65536

typedef struct fake_call {
    char fn[40];   /* exported symbol that was called, e.g. "cuLaunchKernel_ptsz" */
    uint64_t a[4]; /* arguments, per function (see fake_cuda.c) */
    uint64_t ns;   /* when (CLOCK_MONOTONIC), comparable across processes */
} fake_call_t;

/* The byte a discarded range's contents become (cuMemDiscardBatchAsync,
 * cuMemDiscardAndPrefetchBatchAsync: cuda.h leaves them indeterminate). */
#define FAKE_DISCARDED 0xdb

/* A kernel: runs on the host with its argument pointers (kernelParams form). */
typedef void (*fake_kernel_fn)(void **args, const unsigned grid[3], const unsigned block[3]);

/* Test API (exported; reach with dlsym). Types for dlsym'd pointers: */
typedef void (*fake_reset_fn)(void);
typedef size_t (*fake_log_count_fn)(void);
typedef const fake_call_t *(*fake_log_get_fn)(size_t i);
typedef void (*fake_set_logging_fn)(int on);
typedef void *(*fake_register_kernel_fn)(const char *name, unsigned nparams, const size_t *sizes,
                                         fake_kernel_fn fn);
/* Gives kernel f (a handle fake_register_kernel returned) another name,
 * parameters and body: what a module loaded after an unload may get, the
 * same handle for another function. */
typedef void (*fake_reload_kernel_fn)(void *f, const char *name, unsigned nparams,
                                      const size_t *sizes, fake_kernel_fn fn);
typedef void *(*fake_entry_fn)(const char *sym);
/* Ends every capture in progress (their graphs destroyed) and makes
 * cuStreamIsCapturing report stream (NULL: none) as capturing;
 * CU_STREAM_PER_THREAD: the calling thread's per-thread default stream (each
 * thread's is a stream of its own, as stream 0 through a _ptsz entry point;
 * stream 0 through the others is the legacy stream). */
typedef void (*fake_set_capturing_fn)(void *stream);
/* The same for a blocking stream: every context's legacy stream is
 * unusable meanwhile (a capture begun on a stream created without
 * CU_STREAM_NON_BLOCKING makes only its own context's so)
 * (work on it fails with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates
 * the capture; a query of it fails and invalidates nothing). */
typedef void (*fake_set_capturing_blocking_fn)(void *stream);
/* Whether a capture in progress, or one that ended since a capture was last
 * begun with cuStreamBeginCapture, was invalidated: by work on the legacy stream while a
 * blocking stream (or a per-thread default stream) captures, or (for one
 * begun with cuStreamBeginCapture) a synchronization of a capturing stream
 * or a potentially unsafe call its capture mode forbids; or joined by a
 * stream through an event and not joined back into its origin, now or when
 * it ended (not an invalidation: the capture stays active, its end fails
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED; in a fake_set_capturing capture, which
 * records no work, every join counts) (fake_cuda_capture.c, fake_cuda_join.c). */
typedef int (*fake_capture_invalidated_fn)(void);
/* How many potentially unsafe calls a capture's mode would have refused
 * went through because the calling thread was in mode RELAXED. */
typedef unsigned (*fake_unsafe_relaxed_fn)(void);

/* Arms a capture that begins while the shim looks: the next query of stream
 * (cuStreamIsCapturing), once answered, starts a thread calling
 * begin(stream, CU_STREAM_CAPTURE_MODE_RELAXED) (begin: the program's
 * cuStreamBeginCapture_v2, the shim's hook) and waits for it at most 200 ms,
 * as if another thread of the program began the capture right after the
 * shim's query. */
typedef void (*fake_arm_capture_fn)(void *stream, void *begin);
/* fake_arm_capture_also: as fake_arm_capture, a second capture armed on
 * another stream beside the first (fake_arm_capture disarms it). */
/* Joins those threads: the first failed begin's CUresult, -1 if one never
 * started, else CUDA_SUCCESS. */
typedef int (*fake_armed_capture_join_fn)(void);

/*
 * Fake CUPTI: a host kernel calls fake_touch(addr, len, mode) for each range
 * it touches (mode 1 read, 2 write, 3 both); gmux_test_cupti_touched() hands
 * the ranges touched since its previous call to the shim's recorder (which
 * looks that symbol up in the driver when no real CUPTI is loaded).
 */
/* Arms a one-shot hook: right after the next release of the primary context
 * that drops its last reference (the context gone), fn runs on another
 * thread, and the release waits for it (2 s at most) before it returns, as
 * another thread of a program could retain the context in that window.
 * fake_last_release_join waits for fn and disarms. */
typedef void (*fake_arm_last_release_fn)(void (*fn)(void));
typedef void (*fake_last_release_join_fn)(void);
/* Arms a one-shot hook on pushes: at the next cuCtxPushCurrent of ctx, by
 * any thread, fn runs on another thread and the push waits for it (500 ms
 * at most) before it looks the context up, as another thread of a program
 * could destroy the context (and create one at its handle) between the
 * pushing thread's choice of the handle and its push. fake_armed_push_join
 * waits for fn, disarms, and returns whether the hook fired. */
typedef void (*fake_arm_push_fn)(void *ctx, void (*fn)(void));
typedef int (*fake_armed_push_join_fn)(void);
/* Arms a one-shot stall of the calling thread: its next cuCtxGetCurrent
 * creates the file mark and then waits until the file until exists (a
 * minute at most), as a thread of a program could be descheduled there. */
typedef void (*fake_arm_stall_fn)(const char *mark, const char *until);
/* The same, at the calling thread's next prefetch (cuMemPrefetchAsync_v2 or
 * cuMemPrefetchBatchAsync, either way), before the double records it. */
typedef void (*fake_arm_stall_prefetch_fn)(const char *mark, const char *until);
/* The same, at the calling thread's next cuFuncGetParamInfo (the shim's
 * first lookup of a kernel's layout, at its first launch, after the gate). */
typedef void (*fake_arm_stall_param_info_fn)(const char *mark, const char *until);
/* The same at the next cuStreamIsCapturing of stream, by any thread (the
 * shim's query of a program's stream as it orders evictions after it),
 * armed beside a stall of another kind. */
typedef void (*fake_arm_stall_query_fn)(void *stream, const char *mark, const char *until);
/* How many times a context went (cuCtxDestroy, or the primary context's
 * last release or reset) while a thread other than the one destroying it
 * had it pushed, counting from the push's start to its pop: the driver
 * leaves that undefined (no call may use a context while it is destroyed). */
typedef unsigned (*fake_ctx_destroyed_in_use_fn)(void);
/* Arms a one-shot handle: the next context created (cuCtxCreate, or a green
 * context's converted one at cuGreenCtxCreate) gets ctx, if no live
 * context has it (the primary context's handle only while the primary is
 * not active), as the driver may give a gone context's memory, and so its
 * handle, to the next context created, the primary context's included.
 * A context created at the primary context's handle is not the primary:
 * a reset of the (inactive) primary leaves it alone. */
typedef void (*fake_ctx_next_handle_fn)(void *ctx);
/* Arms a meeting: the next n calls of cuCtxGetCurrent, by any threads, each
 * wait until all n have come (10 s at most), and then return together, as
 * threads of a program that reach the shim's lookup of their context at the
 * same moment; a cuCtxGetDevice after the meeting waits (10 s at most) until
 * all n have left it, so that the one that went first (and creates the
 * shim's state of the context) is held while the others look it up.
 * n = 0 disarms. */
typedef void (*fake_arm_ctx_meet_fn)(unsigned n);
typedef void (*fake_touch_fn)(const void *addr, uint64_t len, int mode);
/* Fake CUPTI kernel records: a host kernel declares the nanoseconds it "took"
 * with fake_spend(ns); gmux_test_cupti_kernel_ns() hands the recorder the sum
 * since its previous call. */
typedef void (*fake_spend_fn)(uint64_t ns);

/*
 * Graphs and captures. While a capture begun with cuStreamBeginCapture is in
 * progress, the work queued on a stream that takes part in it (the stream it
 * began on, or one that joined it) is recorded as nodes of the capture's
 * graph instead of run: kernel launches (argument values copied),
 * asynchronous memsets and copies (cuMemsetD8/D16/D32Async, cuMemcpy*Async,
 * 2D, 3D and peer ones too, 2D memsets, batched copies; their addresses kept,
 * the data read when the graph runs), graph launches
 * (a child-graph node of the launched graph), prefetches, and event records
 * and waits made EXTERNAL (a plain record makes no node, a wait for an event
 * recorded inside the capture is an edge, and one for an event recorded
 * outside it fails CUDA_ERROR_STREAM_CAPTURE_ISOLATION: fake_cuda_event.c). Kernel, memset, copy
 * and child-graph nodes run, in order, when the graph runs (cuGraphLaunch of an instantiated
 * graph); the others have nothing to do on the host. fake_graph_nodes describes the live nodes of a
 * graph in order (at most max of them in out) and returns how many it has.
 */
enum {
    FAKE_NODE_KERNEL = 1,   /* func: the kernel; a0: its first argument's 8 bytes (if any) */
    FAKE_NODE_GRAPH,        /* a child graph (a0: the graph) */
    FAKE_NODE_CONDITIONAL,  /* a conditional node */
    FAKE_NODE_PREFETCH,     /* a0: address, a1: length */
    FAKE_NODE_EVENT_RECORD, /* a0: the event */
    FAKE_NODE_EVENT_WAIT,   /* a0: the event */
    FAKE_NODE_MEMSET,       /* a0: address, a1: elements, a2: value | element size << 32 */
    FAKE_NODE_MEMCPY,       /* a0: destination, a1: bytes, a2: source */
    FAKE_NODE_MEMCPY3D,     /* a 2D or 3D copy: a0 its CUDA_MEMCPY3D (the node's copy) */
    FAKE_NODE_MEMSET2D,     /* a 2D memset: a0 its CUDA_MEMSET_NODE_PARAMS (the node's copy) */
};
typedef struct fake_node_info {
    int kind;
    void *func;
    uint64_t a0, a1, a2;
} fake_node_info_t;
typedef size_t (*fake_graph_nodes_fn)(void *graph, fake_node_info_t *out, size_t max);
/* Stream and event creations made while a capture begun with
 * cuStreamBeginCapture was in progress whose mode would forbid the caller a
 * potentially unsafe call: made RELAXED (*relaxed_p), or not (*strict_p).
 * The driver's documentation does not count them potentially unsafe, so
 * the double does not refuse them; it counts them, for tests of a caller
 * that chooses to make them RELAXED. Counted over the process's life. */
typedef void (*fake_capture_creations_fn)(unsigned *relaxed_p, unsigned *strict_p);

/* Stream order (fake_cuda_order.c): whether the work logged at index after
 * (a launch, graph launch, memset, copy or prefetch that ran, not captured)
 * is ordered after the work logged at before, as the driver orders streams:
 * in a stream, through events (a wait for an event orders after the work its
 * record followed), and implicitly between a context's legacy stream and its
 * blocking streams (created without CU_STREAM_NON_BLOCKING, and per-thread
 * default streams), never with non-blocking ones; -1 if either is not such
 * work (or not placed: the first 16384 entries since fake_reset, on the
 * first 64 streams used, are). */
typedef int (*fake_ordered_fn)(size_t before, size_t after);

/* Fixed handles and sizes the double reports. */
#define FAKE_CTX          ((uintptr_t)0xC0C0)
#define FAKE_TOTAL_MEMORY (16ull << 30)

#endif /* FAKE_CUDA_H */
