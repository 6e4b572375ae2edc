/*
 * The CUDA backend of the engine interface (src/engine/backend.h): moves
 * managed memory with cuMemPrefetchAsync on a migration stream of its own,
 * one per CUDA context, and orders launches after migrations with an event.
 *
 *   prefetch  cuMemPrefetchAsync to the context's device (host to device);
 *             a launch's several ranges go in one cuMemPrefetchBatchAsync
 *             where the driver has it (CUDA 13), shim_backend_prefetch_ranges
 *   evict     cuMemPrefetchAsync to host memory (device to host)
 *   fence     waits for the migration stream (every transfer issued before)
 *   now       the monotonic clock, in ns
 *
 * The migration stream is non-blocking, so migrations overlap the task's
 * kernels: shim_backend_order() records the event on the migration stream
 * and makes the launch's stream wait on it, so launch k+1's data moves while
 * launch k runs and launch k+1 still starts only after its data is there.
 *
 * The task argument of the ops is ignored: one process is one task.
 * Thread-safety: safe from any thread; each context's state is created once
 * (mutex) and then only read; the driver serialises work on the stream.
 * LOCKING: the destroy lock (a rwlock) keeps a thread that entered a context
 * (shim_backend_enter, shared) and a hook destroying one (exclusive, from
 * shim_backend_destroy_begin to _end, around the driver's call and the
 * retiring) apart. It is taken after hooks_ctx.c's ctx_primary_mu and
 * before every other lock of the shim; the launch path never takes it.
 */
#ifndef SHIM_BACKEND_CUDA_H
#define SHIM_BACKEND_CUDA_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

#include "engine/backend.h"

typedef struct shim_cuctx shim_cuctx_t;

/* The state of the calling thread's current context, created on first use; NULL if none. */
shim_cuctx_t *shim_backend_current(void);

/* The context ctx was destroyed: its state (migration stream, events, which
 * went with it) is retired, so a context created later at the same handle
 * gets its own. A retired entry is given to a later context once the
 * context it had is destroyed: at most 64 contexts live at once get state
 * (a context beyond that gets no migration stream, so no prefetches and no
 * evictions of the daemon's plans, warned once, until one of the others is
 * destroyed); contexts created and destroyed one after another have no limit. */
void shim_backend_forget(CUcontext ctx);

/* The generation of c: it changes when c is given to another context (after
 * its own was destroyed). Whoever keeps c across calls keeps this with it. */
uint32_t shim_backend_gen(shim_cuctx_t *c);

/*
 * Makes c's context current on the calling thread (pushed: the gate's
 * watcher, which has none of its own, or a launching thread that waits for
 * its turn in another context), unless it was retired or given to another
 * context since shim_backend_gen returned gen: true if it did; then
 * shim_backend_leave must follow, on the same thread. In between, the
 * context is not destroyed through the shim's hooks: they wait (the driver
 * may hand a destroyed context's handle to the next context created, and the
 * thread would work in that one, on the old context's stream and events).
 */
bool shim_backend_enter(shim_cuctx_t *c, uint32_t gen);
void shim_backend_leave(void);

/*
 * Around a destroy hook's driver call that may destroy a context and the
 * shim_backend_forget that follows: waits until no thread is inside a
 * context it entered, and keeps others from entering until _end. Returns
 * whether it took the lock (not in a forked child, which has no watcher and
 * may hold a copy of a lock the parent's watcher held); pass that to _end.
 */
bool shim_backend_destroy_begin(void);
void shim_backend_destroy_end(bool locked);

/* Makes c's migration stream wait, on the GPU, for the work queued so far
 * on the context's legacy default stream and so on every blocking stream,
 * and on each non-blocking stream of the context the program created
 * (streams.h); no thread waits. Errors: GMUX_ERR_BUSY while a blocking
 * stream of the device captures a graph (the legacy stream cannot be used
 * without invalidating that capture), or one of those non-blocking streams
 * does (an event recorded on it would pull the migration stream into the
 * capture), or a launch holds c (shim_backend_take: it may be queueing on
 * the migration stream): nothing was ordered that matters, try later; also when the
 * migration stream was found joined to a capture of the program all the
 * same (one begun where the shim does not see it): c is then retired, its
 * stream left to that capture with nothing more queued on it, and the
 * context's next user gets a new one (shim_backend_release_left destroys
 * the old one once the capture ended); GMUX_ERR_DRIVER. Needs c's context
 * current on the calling thread. */
gmux_status_t shim_backend_after_queued(shim_cuctx_t *c);

/*
 * A launch's hold of the current context's entry, taken before it queues
 * anything on the migration stream and given back (shim_backend_put) after
 * its event: while a launch holds it, shim_backend_after_queued puts the
 * ordering off (GMUX_ERR_BUSY), so the stream joins no capture under the
 * launch; while an ordering is in progress, this returns NULL (the launch
 * prefetches nothing; counted, launch_no_prefetch_ordering). An entry found
 * retired is never returned: the context's new one is (NULL, counted the
 * same, if that one retired too). NULL also when there is no context, or no
 * entry (counted, launch_no_prefetch_no_entry).
 * No lock: an atomic add, two loads (test_gate_evicted_capture
 * test_launch_without_turn_joined).
 */
shim_cuctx_t *shim_backend_take(void);
void shim_backend_put(shim_cuctx_t *c);

/* Releases the current context's migration streams left to a capture
 * (shim_backend_after_queued) that no longer capture: each is destroyed with
 * its events, and its entry may go to another context. A stream still in
 * its capture is left for a later call (cuda.h says nothing of destroying
 * one). Called by the program's cuStreamEndCapture hooks, after the driver's
 * end, and by shim_backend_after_queued; one atomic load when none is left.
 * LOCKING: takes backend_lock (a leaf, held across the driver calls). */
void shim_backend_release_left(void);

/* The engine backend of one context. */
eng_backend_t shim_backend_engine(shim_cuctx_t *c);

/*
 * Prefetches ranges[0..n) (addr/len pairs) to the context's device on its
 * migration stream: one cuMemPrefetchBatchAsync where the driver has it and
 * there is more than one range, else (or if the batch is refused) one
 * cuMemPrefetchAsync each. Returns how many ranges were issued; their bytes
 * are added to *bytes_p.
 */
size_t shim_backend_prefetch_ranges(shim_cuctx_t *c, const uint64_t *addr, const uint64_t *len,
                                    size_t n, uint64_t *bytes_p);

/*
 * Makes stream (per_thread: the launch came through a _ptsz entry point, so
 * stream 0 means the per-thread default stream) wait for every migration
 * issued so far in this context.
 */
CUresult shim_backend_order(shim_cuctx_t *c, CUstream stream, bool per_thread);

/*
 * The mark: an event recorded on c's migration stream after every migration
 * issued so far (the gate's evictions), and whether it completed, polled
 * without waiting: 1 done, 0 not yet, -1 unknown: the driver failed the
 * query with another error (a sticky fault of the context, a handle gone),
 * which is logged once per process. The migrations may or may not have
 * completed then; the caller must not take -1 for done.
 * A new mark replaces the last. Both need c's context current on the calling
 * thread (entered, for the watcher).
 */
gmux_status_t shim_backend_mark(shim_cuctx_t *c);
int shim_backend_mark_done(shim_cuctx_t *c);
/* Makes c's migration stream wait, on the GPU, for the last mark of another
 * context's (from, of generation gen), unless that context went since.
 * LOCKING: takes the destroy lock shared. */
gmux_status_t shim_backend_after_mark(shim_cuctx_t *c, shim_cuctx_t *from, uint32_t gen);

/*
 * Whether stream is being captured into a graph: no migration may be ordered
 * before its work then (an outside event would break the capture).
 */
bool shim_backend_capturing(CUstream stream, bool per_thread);

/*
 * The shim's own potentially unsafe driver calls (a synchronization, an
 * event query, creating a stream or an event) go between shim_backend_relax, which puts the calling
 * thread in RELAXED stream-capture mode and returns whether it did (the
 * thread's mode before in *prev_p), and shim_backend_unrelax, which restores
 * that mode. In the thread's default GLOBAL mode such a call, made while any
 * thread of the program captures a graph in GLOBAL mode, is refused and
 * invalidates that capture; the shim's calls never concern the capture.
 */
bool shim_backend_relax(CUstreamCaptureMode *prev_p);
void shim_backend_unrelax(bool relaxed, CUstreamCaptureMode prev);

/* The migration stream of a context (tests and logs). */
CUstream shim_backend_stream(const shim_cuctx_t *c);

#endif /* SHIM_BACKEND_CUDA_H */
