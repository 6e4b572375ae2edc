/*
 * The program's non-blocking streams, per context: the legacy default
 * stream waits for the work of every blocking stream but not for theirs, so
 * an eviction ordered after "everything queued" must also wait on each of
 * them (shim_backend_after_queued). Filled by the cuStreamCreate hooks and
 * cuGreenCtxStreamCreate's (its streams, all non-blocking, belong to the
 * green context's converted context), emptied by cuStreamDestroy and by a
 * context's destruction.
 *
 * Thread-safety: any thread; one mutex, a leaf, held across the driver
 * calls of shim_streams_order_after so that a stream is never destroyed
 * between being chosen and used, and across the cuStreamBeginCapture hooks'
 * driver calls so that no capture begins between its queries and its event
 * records. Nothing here runs on the launch path.
 */
#ifndef SHIM_STREAMS_H
#define SHIM_STREAMS_H

#include <stddef.h>

#include <cuda.h>

#include <gmux/status.h>

/* Tracks s, created non-blocking in ctx. Without memory for it the stream
 * goes untracked (counter streams_untracked): evictions are then not
 * ordered after its work, which costs faults back, never correctness
 * (managed memory stays coherent). */
void shim_streams_add(CUstream s, CUcontext ctx);
void shim_streams_remove(CUstream s);
/* Forgets every stream of ctx (destroyed with it). */
void shim_streams_forget_ctx(CUcontext ctx);
/* Non-blocking streams tracked now (tests and stats). */
size_t shim_streams_count(void);

/*
 * Makes mig wait, on the GPU, for the work queued so far on the legacy
 * default stream (hence on every blocking stream) and on every tracked
 * non-blocking stream of ctx, recording ev on each. Errors: GMUX_ERR_BUSY
 * when one of them captures a graph (work on the legacy stream would
 * invalidate the capture of a blocking stream; an event recorded on a
 * capturing stream would join the migration stream to it: nothing is done,
 * try later); GMUX_ERR_STATE when mig turns out to have joined a capture
 * all the same (one begun where the shim does not see it, between a query
 * and its record; counted as capture_joined): mig's status is read after
 * each wait and the first found joined ends the ordering, nothing more
 * queued on mig (a wait for an event recorded outside the capture would
 * invalidate it), so the program's capture holds nothing of the shim's and
 * can end well. Until the program ends that capture nothing takes mig out
 * of it and whatever is queued on it is captured, not run: the caller must
 * stop using mig (shim_backend_after_queued retires it, and
 * shim_backend_release_left destroys it once it no longer captures);
 * GMUX_ERR_DRIVER. Needs ctx current.
 */
gmux_status_t shim_streams_order_after(CUcontext ctx, CUstream mig, CUevent ev);

#endif /* SHIM_STREAMS_H */
