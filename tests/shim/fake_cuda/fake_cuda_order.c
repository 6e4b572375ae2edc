/*
 * The driver double's model of stream order. Work runs at once in the
 * double, so order is never seen in the data; what a test can ask is
 * whether the driver would have ordered one piece of work after another
 * (fake_ordered). Each stream has a vector clock: its own count of work and,
 * for every other stream, the last of that stream's work it is ordered
 * after. Work queued on a stream counts one; an event recorded on a stream
 * keeps the stream's clock; a wait for it merges that clock into the waiting
 * stream's. The legacy stream of a context (stream 0 through the non-_ptsz
 * entry points, CU_STREAM_LEGACY) synchronizes implicitly with that
 * context's blocking streams (created without CU_STREAM_NON_BLOCKING, and
 * per-thread default streams): whatever is queued on it is ordered after the
 * work queued before on every one of them, and whatever is queued on one of
 * them after the work queued before on it. Non-blocking streams take part in
 * neither.
 *
 * Streams are known from their first work on, 64 at most (later ones are not
 * modelled: their work has no place in the order); the work of the first
 * 16384 log entries since the last fake_reset is placed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_internal.h"

#define ORD_STREAMS 64
#define ORD_WORK    16384
#define ORD_EVENTS  4096

typedef struct {
    uintptr_t s, ctx; /* ctx: the legacy stream's context (s 0), a blocking stream's */
    bool blocking;
} ord_stream_t;

static pthread_mutex_t ord_mu = PTHREAD_MUTEX_INITIALIZER;
static ord_stream_t ord_streams[ORD_STREAMS];
static size_t ord_n;
static uint32_t ord_vc[ORD_STREAMS][ORD_STREAMS];
/* the events' clocks, by event number (fake_cuda_stream.c's tokens from 0x7000) */
static uint32_t (*ord_ev)[ORD_STREAMS];
/* the placed work: its stream and clock; ord_log[log index] = 1 + its index */
static uint32_t (*ord_work)[ORD_STREAMS];
static uint8_t ord_work_stream[ORD_WORK];
static size_t ord_nwork;
static uint32_t ord_log[FAKE_LOG_CAP];

/* The slot of stream s (fake_stream_of), made at its first use; -1 when
 * the table is full or out of memory. Under ord_mu. */
static int ord_slot(CUstream s)
{
    uintptr_t key = U(s), ctx = s ? fake_stream_ctx(s) : U(fake_current());
    for (size_t i = 0; i < ord_n; i++)
        if (ord_streams[i].s == key && (key || ord_streams[i].ctx == ctx))
            return (int)i;
    if (!ord_work && !(ord_work = calloc(ORD_WORK, sizeof(*ord_work))))
        return -1;
    if (!ord_ev && !(ord_ev = calloc(ORD_EVENTS, sizeof(*ord_ev))))
        return -1;
    if (ord_n == ORD_STREAMS)
        return -1;
    ord_streams[ord_n] = (ord_stream_t){key, ctx, s && fake_stream_blocking(s)};
    memset(ord_vc[ord_n], 0, sizeof(ord_vc[ord_n]));
    return (int)ord_n++;
}

static void ord_merge(uint32_t *into, const uint32_t *from)
{
    for (size_t i = 0; i < ORD_STREAMS; i++)
        into[i] = from[i] > into[i] ? from[i] : into[i];
}

/* The implicit synchronization of work queued on slot k now. Under ord_mu. */
static void ord_implicit(int k)
{
    const ord_stream_t *st = &ord_streams[k];
    if (st->s == 0) { /* the legacy stream: after its context's blocking streams */
        for (size_t b = 0; b < ord_n; b++)
            if (ord_streams[b].blocking && ord_streams[b].ctx == st->ctx)
                ord_merge(ord_vc[k], ord_vc[b]);
    } else if (st->blocking) { /* a blocking stream: after its context's legacy stream */
        for (size_t l = 0; l < ord_n; l++)
            if (ord_streams[l].s == 0 && ord_streams[l].ctx == st->ctx)
                ord_merge(ord_vc[k], ord_vc[l]);
    }
}

void fake_order_work(CUstream s, size_t log_index)
{
    pthread_mutex_lock(&ord_mu);
    int k = ord_slot(s);
    if (k >= 0) {
        ord_implicit(k);
        ord_vc[k][k]++;
        if (log_index < FAKE_LOG_CAP && ord_nwork < ORD_WORK) {
            memcpy(ord_work[ord_nwork], ord_vc[k], sizeof(ord_vc[k]));
            ord_work_stream[ord_nwork] = (uint8_t)k;
            ord_log[log_index] = (uint32_t)++ord_nwork;
        }
    }
    pthread_mutex_unlock(&ord_mu);
}

static uint32_t *ord_event(CUevent e)
{
    uintptr_t i = U(e) - 0x7000;
    return U(e) >= 0x7000 && i < ORD_EVENTS && ord_ev ? ord_ev[i] : NULL;
}

void fake_order_record(CUevent e, CUstream s)
{
    pthread_mutex_lock(&ord_mu);
    int k = ord_slot(s);
    uint32_t *ev = ord_event(e);
    if (k >= 0 && ev) {
        ord_implicit(k);
        memcpy(ev, ord_vc[k], sizeof(ord_vc[k]));
    }
    pthread_mutex_unlock(&ord_mu);
}

void fake_order_wait(CUstream s, CUevent e)
{
    pthread_mutex_lock(&ord_mu);
    int k = ord_slot(s);
    const uint32_t *ev = ord_event(e);
    if (k >= 0 && ev) {
        ord_implicit(k);
        ord_merge(ord_vc[k], ev);
    }
    pthread_mutex_unlock(&ord_mu);
}

void fake_order_reset(void)
{
    pthread_mutex_lock(&ord_mu);
    memset(ord_log, 0, sizeof(ord_log));
    ord_nwork = 0;
    pthread_mutex_unlock(&ord_mu);
}

FAKE_API int fake_ordered(size_t before, size_t after)
{
    pthread_mutex_lock(&ord_mu);
    int r = -1;
    if (before < FAKE_LOG_CAP && after < FAKE_LOG_CAP && ord_log[before] && ord_log[after]) {
        const uint32_t *a = ord_work[ord_log[before] - 1], *b = ord_work[ord_log[after] - 1];
        uint8_t k = ord_work_stream[ord_log[before] - 1];
        r = b[k] >= a[k];
    }
    pthread_mutex_unlock(&ord_mu);
    return r;
}
