/*
 * The driver double's events and a stream's wait for one, with what stream
 * capture makes of them as cuda.h and the CUDA programming guide ("Cross-stream
 * Dependencies and Events", "Prohibited and Unhandled Operations") describe it:
 * - cuEventRecord (and cuEventRecordWithFlags without flags) on a stream taking
 *   part in a capture makes no node: the event becomes a captured event holding
 *   the stream's dependency set (fake_join_record). Only
 *   CU_EVENT_RECORD_EXTERNAL makes an event record node (the event is then also
 *   captured, holding that node: the double's reading);
 * - cuStreamWaitEvent for a captured event joins the capture or merges the
 *   event's set (fake_cuda_join.c). From a stream taking part in a capture, a
 *   wait for an event recorded outside it (before it, in an earlier capture,
 *   on a stream taking no part) is refused with
 *   CUDA_ERROR_STREAM_CAPTURE_ISOLATION ("a dependency ... which crosses the
 *   capture sequence boundary") and, being an invalid operation, invalidates
 *   the capture; with CU_EVENT_WAIT_EXTERNAL it is an event wait node instead
 *   (whatever the event's state: the double's reading). A wait for an event
 *   never recorded waits for nothing ("an empty set of work": no node, no
 *   error; the double's reading);
 * - a wait from a stream of one capture for an event captured in another
 *   capture in progress: CUDA_ERROR_STREAM_CAPTURE_MERGE, both invalidated
 *   (fake_cuda_join.c). A wait from a stream taking part in no capture for a
 *   captured event is no error: the stream joins that capture;
 * - cuEventQuery and cuEventSynchronize of an event last recorded in a
 *   capture still in progress (a captured event, which stands for no work
 *   scheduled for execution): CUDA_ERROR_CAPTURED_EVENT ("not permitted on an
 *   event which was last recorded in a capturing stream"), in every capture
 *   mode (PyTorch's caching allocator gets it polling such an event during a
 *   THREAD_LOCAL capture: pytorch/pytorch#193982), checked before the mode's
 *   own refusal and invalidating that capture (the double's readings). Once
 *   the capture has ended the event stands for no work (the double's
 *   reading): complete;
 * - the EXTERNAL flags outside a capture ("invalid when used outside of
 *   capture") and unknown flags: CUDA_ERROR_INVALID_VALUE.
 * Not checked on a GPU.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fake_cuda_graph.h"
#include "fake_cuda_internal.h"

static _Atomic uintptr_t fake_next_event = 0x7000;

/* A wait queued on the legacy stream while a blocking stream captures is
 * work there like any other (fake_legacy_work). */
static CUresult fake_wait(CUstream s, CUevent e, unsigned flags)
{
    bool in = fake_in_capture(U(s));
    if (flags > CU_EVENT_WAIT_EXTERNAL || (flags && !in))
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_legacy_work(s))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    CUgraph g = fake_capture_graph(s, 0);
    if (flags == CU_EVENT_WAIT_EXTERNAL) {
        if (g)
            (void)fake_capture_op(g, FAKE_NODE_EVENT_WAIT, U(e), 0, 0);
        return CUDA_SUCCESS;
    }
    fake_ev_state_t ev = fake_join_wait(U(s), e);
    if (ev == FAKE_EV_MERGE)
        return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    if (in && ev == FAKE_EV_OUTSIDE) {
        fake_capture_invalidate(U(s));
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    if (!fake_capture_graph(s, 0))
        fake_order_wait(s, e);
    return CUDA_SUCCESS;
}

CUresult fk_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
    REC(U(s), U(e), flags, 0);
    return fake_wait(fake_stream_of(s, 0), e, flags);
}

CUresult fk_cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned flags)
{
    REC(U(s), U(e), flags, 0);
    return fake_wait(fake_stream_of(s, 1), e, flags);
}

CUresult fk_cuEventCreate(CUevent *e, unsigned flags)
{
    fake_unsafe_watched();
    *e = (CUevent)atomic_fetch_add(&fake_next_event, 1);
    REC(U(*e), flags, 0, 0);
    return CUDA_SUCCESS;
}

/* Records e on s (fake_stream_of): a captured event holding s's dependency
 * set while s captures (fake_join_record), so that a wait for e can join the
 * capture; a node only with CU_EVENT_RECORD_EXTERNAL. */
static CUresult fake_record(CUevent e, CUstream s, unsigned flags)
{
    if (flags > CU_EVENT_RECORD_EXTERNAL || (flags && !fake_in_capture(U(s))))
        return CUDA_ERROR_INVALID_VALUE;
    CUgraph g = fake_capture_graph(s, 0);
    if (g && flags == CU_EVENT_RECORD_EXTERNAL)
        (void)fake_capture_op(g, FAKE_NODE_EVENT_RECORD, U(e), 0, 0);
    fake_join_record(e, U(s));
    if (fake_legacy_work(s))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (!g)
        fake_order_record(e, s);
    return CUDA_SUCCESS;
}

CUresult fk_cuEventRecord(CUevent e, CUstream s)
{
    REC(U(e), U(s), 0, 0);
    return fake_record(e, fake_stream_of(s, 0), 0);
}

CUresult fk_cuEventRecord_ptsz(CUevent e, CUstream s)
{
    REC(U(e), U(s), 0, 0);
    return fake_record(e, fake_stream_of(s, 1), 0);
}

CUresult fk_cuEventRecordWithFlags(CUevent e, CUstream s, unsigned flags)
{
    REC(U(e), U(s), flags, 0);
    return fake_record(e, fake_stream_of(s, 0), flags);
}

CUresult fk_cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned flags)
{
    REC(U(e), U(s), flags, 0);
    return fake_record(e, fake_stream_of(s, 1), flags);
}

/* Complete unless the file FAKE_CUDA_EVENT_HOLD names exists: then not
 * ready, and each such question (re)creates that path with ".busy"
 * appended, so a test sees that it was asked, and asked again. While the
 * file FAKE_CUDA_EVENT_FAIL names exists, the answer is
 * CUDA_ERROR_ILLEGAL_ADDRESS instead (a kernel's fault, sticky on a real
 * driver: whether the event's work completed is not known). A potentially
 * unsafe call (fake_unsafe_refused), refused for a captured event first
 * (fake_event_captured). */
CUresult fk_cuEventQuery(CUevent e)
{
    const char *hold = getenv("FAKE_CUDA_EVENT_HOLD");
    int held = hold && hold[0] && access(hold, F_OK) == 0;
    REC(U(e), (uint64_t)held, 0, 0);
    if (held) { /* asked, refused or not */
        char busy[512];
        snprintf(busy, sizeof(busy), "%s.busy", hold);
        int fd = open(busy, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
    }
    if (fake_event_captured(e))
        return CUDA_ERROR_CAPTURED_EVENT;
    if (fake_unsafe_refused())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    const char *fail = getenv("FAKE_CUDA_EVENT_FAIL");
    if (fail && fail[0] && access(fail, F_OK) == 0)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    return held ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

/* Work runs at once in the double: nothing to wait for. Refused as
 * cuEventQuery is (a captured event, a potentially unsafe call), and failing
 * as it does while FAKE_CUDA_EVENT_FAIL names a file that exists
 * (FAKE_CUDA_EVENT_HOLD is cuEventQuery's alone). */
CUresult fk_cuEventSynchronize(CUevent e)
{
    REC(U(e), 0, 0, 0);
    if (fake_event_captured(e))
        return CUDA_ERROR_CAPTURED_EVENT;
    if (fake_unsafe_refused())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    const char *fail = getenv("FAKE_CUDA_EVENT_FAIL");
    return fail && fail[0] && access(fail, F_OK) == 0 ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}
