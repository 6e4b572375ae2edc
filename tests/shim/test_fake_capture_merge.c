/*
 * The driver double itself (no shim preloaded): several captures in progress
 * at once, each with its own graph, mode, streams and invalidation, as cuda.h
 * and the CUDA programming guide ("Prohibited and Unhandled Operations")
 * describe them (fake_cuda_capture.c):
 *   - two streams capture at once, each into its own graph with its own id,
 *     and a stream joins one of them through an event;
 *   - a stream of one capture waiting for an event captured in the other
 *     would merge them: CUDA_ERROR_STREAM_CAPTURE_MERGE, both invalidated;
 *   - an invalid operation invalidates the capture it concerns only;
 *   - a potentially unsafe call refused invalidates the captures whose mode
 *     refused it, not the others;
 *   - cuEventQuery and cuEventSynchronize of an event last recorded in a
 *     capture in progress: CUDA_ERROR_CAPTURED_EVENT in every mode, the
 *     capture invalidated;
 *   - a capture not begun RELAXED ended from another thread:
 *     CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD.
 * On main each test failed: the double took one capture at a time (a second
 * cuStreamBeginCapture: CUDA_ERROR_ILLEGAL_STATE), answered a query of a
 * captured event CUDA_SUCCESS, had no cuEventSynchronize, and let any thread
 * end a capture.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <dlfcn.h>

#include "shim_harness.h"

#define N 64

static CUevent recorded(CUstream s)
{
    CUevent e;
    assert_int_equal(GET(PFN_cuEventCreate_v2000, "cuEventCreate", 12000)(&e, 0), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuEventRecord_v2000, "cuEventRecord", 12000)(e, s), CUDA_SUCCESS);
    return e;
}

static CUresult wait_for(CUstream s, CUevent e)
{
    return GET(PFN_cuStreamWaitEvent_v3020, "cuStreamWaitEvent", 12000)(s, e, 0);
}

static CUstreamCaptureStatus status(CUstream s)
{
    CUstreamCaptureStatus st;
    assert_int_equal(GET(PFN_cuStreamIsCapturing_v10000, "cuStreamIsCapturing", 12000)(s, &st),
                     CUDA_SUCCESS);
    return st;
}

/* cuStreamGetCaptureInfo's id and graph of s (capturing, active). */
static cuuint64_t capture_id(CUstream s, CUgraph *g)
{
    CUstreamCaptureStatus st;
    cuuint64_t id = 0;
    assert_int_equal(GET(PFN_cuStreamGetCaptureInfo_v11030, "cuStreamGetCaptureInfo",
                         11030)(s, &st, &id, g, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    return id;
}

static CUresult begin_mode(CUstream s, CUstreamCaptureMode mode)
{
    return GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture", 12000)(s, mode);
}

static CUstreamCaptureMode exchange_mode(CUstreamCaptureMode mode)
{
    assert_int_equal(GET(PFN_cuThreadExchangeStreamCaptureMode_v10010,
                         "cuThreadExchangeStreamCaptureMode", 12000)(&mode),
                     CUDA_SUCCESS);
    return mode;
}

static CUresult query(CUevent e)
{
    return GET(PFN_cuEventQuery_v2000, "cuEventQuery", 12000)(e);
}

static CUresult event_sync(CUevent e)
{
    PFN_cuEventSynchronize_v2000 f = GET(PFN_cuEventSynchronize_v2000, "cuEventSynchronize", 12000);
    assert_non_null(f);
    return f(e);
}

/* s's capture ends with a graph of `kernels` kernel nodes, destroyed. */
static void ends_with_kernels(CUstream s, size_t kernels)
{
    CUgraph g = NULL;
    assert_int_equal(capture_end(s, &g), CUDA_SUCCESS);
    assert_non_null(g);
    assert_int_equal(graph_nodes_of(g, FAKE_NODE_KERNEL), kernels);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g), CUDA_SUCCESS);
}

static void ends_invalidated(CUstream s)
{
    CUgraph g = (CUgraph)&g;
    assert_int_equal(capture_end(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(g);
    assert_int_equal(status(s), CU_STREAM_CAPTURE_STATUS_NONE);
}

/* Two streams capture at once, each into a graph of its own: a stream
 * joining the second captures into the second's graph only, and each ends
 * with its own kernels. */
static void test_two_captures_at_once(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream s1 = new_stream(), s2 = new_stream(), j = new_stream();
    capture_begin(s1);
    capture_begin(s2);
    CUgraph g1, g2, gj;
    cuuint64_t id1 = capture_id(s1, &g1), id2 = capture_id(s2, &g2);
    assert_true(id1 != id2);
    assert_ptr_not_equal(g1, g2);
    launch_vadd(s1, a, a, a, N);
    launch_vadd(s2, a, a, a, N);
    capture_join(j, s2);
    assert_int_equal(capture_id(j, &gj), id2);
    assert_ptr_equal(gj, g2);
    launch_vadd(j, a, a, a, N);
    capture_join(s2, j);
    /* a stream already capturing cannot begin another */
    assert_int_equal(begin_mode(j, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    ends_with_kernels(s1, 1);
    assert_int_equal(status(s2), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ends_with_kernels(s2, 2);
    assert_int_equal(status(j), CU_STREAM_CAPTURE_STATUS_NONE);
}

/* A stream of one capture (its origin, or one that joined it) waits for an
 * event captured in the other: that would merge them,
 * CUDA_ERROR_STREAM_CAPTURE_MERGE, and both are invalidated (an invalid
 * operation invalidates the captures it concerns). */
static void test_wait_across_captures_merge(void **state)
{
    (void)state;
    CUstream s1 = new_stream(), s2 = new_stream(), j = new_stream();
    for (int joined = 0; joined < 2; joined++) {
        capture_begin(s1);
        capture_begin(s2);
        CUstream waiter = s2;
        if (joined) {
            capture_join(j, s2);
            waiter = j;
        }
        CUevent e1 = recorded(s1);
        assert_int_equal(wait_for(waiter, e1), CUDA_ERROR_STREAM_CAPTURE_MERGE);
        assert_int_equal(status(s1), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        assert_int_equal(status(s2), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        assert_int_equal(status(waiter), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        ends_invalidated(s1);
        ends_invalidated(s2);
        assert_int_equal(status(j), CU_STREAM_CAPTURE_STATUS_NONE);
    }
}

/* An invalid operation (a synchronization of a capturing stream) invalidates
 * its own capture only: the other ends with its graph. */
static void test_invalidation_is_per_capture(void **state)
{
    (void)state;
    CUdeviceptr a = alloc(N * 4);
    CUstream s1 = new_stream(), s2 = new_stream();
    assert_int_equal(begin_mode(s1, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    assert_int_equal(begin_mode(s2, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    launch_vadd(s2, a, a, a, N);
    assert_int_equal(GET(PFN_cuStreamSynchronize_v2000, "cuStreamSynchronize", 12000)(s1),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(status(s1), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(status(s2), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ends_invalidated(s1);
    ends_with_kernels(s2, 1);
}

/* Ends s's capture, destroying its graph if it gave one. */
static CUresult end_discarding(CUstream s)
{
    CUgraph g = NULL;
    CUresult r = capture_end(s, &g);
    if (g)
        (void)GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g);
    return r;
}

/* A second thread's capture, begun GLOBAL and ended there when told. */
typedef struct {
    CUstream s;
    pthread_barrier_t begun, end;
    CUresult begin_r, end_r;
} other_capture_t;

static void *other_capture(void *arg)
{
    other_capture_t *o = arg;
    o->begin_r = begin_mode(o->s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    pthread_barrier_wait(&o->begun);
    pthread_barrier_wait(&o->end);
    o->end_r = end_discarding(o->s);
    return NULL;
}

/* This thread captures RELAXED while another thread captures GLOBAL: this
 * thread's allocation (GLOBAL mode) is refused by the other's capture only,
 * which is invalidated; this thread's own capture is not. Made RELAXED, the
 * allocation goes through. */
static void test_refusal_invalidates_refusing_capture(void **state)
{
    (void)state;
    CUstream mine = new_stream();
    other_capture_t o = {.s = new_stream()};
    pthread_barrier_init(&o.begun, NULL, 2);
    pthread_barrier_init(&o.end, NULL, 2);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_capture, &o), 0);
    pthread_barrier_wait(&o.begun);
    assert_int_equal(o.begin_r, CUDA_SUCCESS);
    assert_int_equal(begin_mode(mine, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    PFN_cuMemAlloc_v3020 mem_alloc = GET(PFN_cuMemAlloc_v3020, "cuMemAlloc", 12000);
    CUdeviceptr p = 0;
    CUstreamCaptureMode prev = exchange_mode(CU_STREAM_CAPTURE_MODE_RELAXED);
    assert_int_equal(mem_alloc(&p, 64), CUDA_SUCCESS);
    assert_int_equal(status(o.s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    (void)exchange_mode(prev);
    assert_int_equal(mem_alloc(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(status(o.s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(status(mine), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    pthread_barrier_wait(&o.end);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(o.end_r, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ends_with_kernels(mine, 0);
    pthread_barrier_destroy(&o.begun);
    pthread_barrier_destroy(&o.end);
}

/* An event last recorded in a capture in progress cannot be queried nor
 * synchronized, in any mode: CUDA_ERROR_CAPTURED_EVENT, and its capture is
 * invalidated. Once that capture has ended the event holds no work (the
 * double's reading), and one recorded again outside a capture is an
 * ordinary event. */
static void test_query_captured_event(void **state)
{
    (void)state;
    CUstream s = new_stream(), other = new_stream();
    for (int sync = 0; sync < 2; sync++) {
        for (int relaxed = 0; relaxed < 2; relaxed++) {
            CUstreamCaptureMode prev = exchange_mode(relaxed ? CU_STREAM_CAPTURE_MODE_RELAXED
                                                             : CU_STREAM_CAPTURE_MODE_GLOBAL);
            capture_begin(s);
            CUevent e = recorded(s);
            assert_int_equal(sync ? event_sync(e) : query(e), CUDA_ERROR_CAPTURED_EVENT);
            assert_int_equal(status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
            ends_invalidated(s);
            assert_int_equal(sync ? event_sync(e) : query(e), CUDA_SUCCESS);
            (void)exchange_mode(prev);
        }
    }
    /* recorded again outside any capture while another capture runs */
    assert_int_equal(begin_mode(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    CUevent e = recorded(s);
    assert_int_equal(GET(PFN_cuEventRecord_v2000, "cuEventRecord", 12000)(e, other), CUDA_SUCCESS);
    assert_int_equal(query(e), CUDA_SUCCESS);
    assert_int_equal(event_sync(e), CUDA_SUCCESS);
    ends_with_kernels(s, 0);
}

typedef struct {
    CUstream s;
    CUresult r;
} end_elsewhere_t;

static void *end_elsewhere(void *arg)
{
    end_elsewhere_t *x = arg;
    x->r = end_discarding(x->s);
    return NULL;
}

/* A capture begun GLOBAL or THREAD_LOCAL ended from another thread:
 * CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, the capture invalidated and still
 * in progress until ended here; one begun RELAXED may end anywhere. */
static void test_end_from_other_thread(void **state)
{
    (void)state;
    const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                         CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                         CU_STREAM_CAPTURE_MODE_RELAXED};
    for (size_t m = 0; m < 3; m++) {
        end_elsewhere_t x = {.s = new_stream()};
        assert_int_equal(begin_mode(x.s, modes[m]), CUDA_SUCCESS);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, end_elsewhere, &x), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        if (modes[m] == CU_STREAM_CAPTURE_MODE_RELAXED) {
            assert_int_equal(x.r, CUDA_SUCCESS);
            assert_int_equal(status(x.s), CU_STREAM_CAPTURE_STATUS_NONE);
            continue;
        }
        assert_int_equal(x.r, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
        assert_int_equal(status(x.s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        ends_invalidated(x.s);
    }
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_captures_at_once),
        cmocka_unit_test(test_wait_across_captures_merge),
        cmocka_unit_test(test_invalidation_is_per_capture),
        cmocka_unit_test(test_refusal_invalidates_refusing_capture),
        cmocka_unit_test(test_query_captured_event),
        cmocka_unit_test(test_end_from_other_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
