/* EVICTED once a switch's evictions completed on the GPU; see gate_evicted.h. */
#include "shim/gate_evicted.h"

#include "common/log.h"
#include "shim/stats.h"

static uint64_t due_seq, due_epoch;   /* a request not marked yet; 0: none */
static uint64_t mark_seq, mark_epoch; /* a mark not completed yet; 0: none */
static shim_cuctx_t *mark_cx;
static uint32_t mark_gen;
static shim_cuctx_t *issued_cx; /* the context of the last evictions, marked; NULL: none */
static uint32_t issued_gen;

void shim_gate_evicted_due(uint64_t epoch, uint64_t grant_seq)
{
    due_seq = grant_seq;
    due_epoch = epoch;
}

bool shim_gate_evicted_is_due(const dmn_client_t *cl)
{
    if (due_seq && due_epoch != dmn_client_epoch(cl))
        due_seq = 0;
    return due_seq != 0;
}

static void send_now(dmn_client_t *cl, uint64_t seq)
{
    (void)dmn_client_evicted(cl, seq, 0);
    SHIM_STAT_ADD(evicted_reports, 1);
}

void shim_gate_evicted_mark(dmn_client_t *cl, shim_cuctx_t *cx)
{
    if (!shim_gate_evicted_is_due(cl))
        return;
    uint64_t seq = due_seq;
    due_seq = 0;
    if (cx && shim_backend_mark(cx) == GMUX_OK) {
        mark_seq = seq;
        mark_epoch = due_epoch;
        mark_cx = cx;
        mark_gen = shim_backend_gen(cx);
        return;
    }
    if (cx)
        COM_DEBUG(SHIM, "daemon plan: evictions of grant %llu not marked: reported at once",
                  (unsigned long long)seq);
    send_now(cl, seq);
}

/* Answers a request waiting for EVICTED at once, with failed (0: done), and
 * returns its grant sequence; 0 when none is due. */
static uint64_t answer_now(dmn_client_t *cl, uint32_t failed)
{
    if (!shim_gate_evicted_is_due(cl))
        return 0;
    uint64_t seq = due_seq;
    due_seq = 0;
    (void)dmn_client_evicted(cl, seq, failed);
    return seq;
}

void shim_gate_evicted_deferred(dmn_client_t *cl, uint32_t n)
{
    uint64_t seq = answer_now(cl, n ? n : 1); /* failed: never 0, which means done */
    if (!seq)
        return;
    COM_DEBUG(
        SHIM,
        "daemon plan: %u evictions of grant %llu put off by a graph capture: reported not done", n,
        (unsigned long long)seq);
    SHIM_STAT_ADD(evicted_put_off, 1);
}

void shim_gate_evicted_ctx_gone(dmn_client_t *cl, uint32_t failed)
{
    uint64_t seq = answer_now(cl, failed);
    if (!seq)
        return;
    COM_DEBUG(SHIM,
              "daemon plan: evictions of grant %llu without their context (destroyed): reported "
              "at once, %u ranges still tracked",
              (unsigned long long)seq, failed);
    SHIM_STAT_ADD(evicted_ctx_gone, 1);
}

static bool mark_of(const dmn_client_t *cl, shim_cuctx_t **cx_p, uint32_t *gen_p)
{
    if (mark_seq && mark_epoch != dmn_client_epoch(cl))
        mark_seq = 0;
    if (!mark_seq)
        return false;
    *cx_p = mark_cx;
    *gen_p = mark_gen;
    return true;
}

bool shim_gate_evicted_poll(dmn_client_t *cl, shim_cuctx_t *cx)
{
    shim_cuctx_t *m;
    uint32_t gen;
    if (!mark_of(cl, &m, &gen))
        return false;
    if (cx != m || shim_backend_gen(cx) != gen)
        return true;
    int done = shim_backend_mark_done(cx);
    if (done == 0)
        return true;
    uint64_t seq = mark_seq;
    mark_seq = 0;
    if (done > 0) {
        send_now(cl, seq);
        return false;
    }
    /* the driver failed the query: whether the evictions completed is not
     * known, so they are reported not done (failed: never 0), as when a
     * capture put them off, and gmuxd does not count their room as free */
    (void)dmn_client_evicted(cl, seq, 1);
    SHIM_STAT_ADD(evicted_unknown, 1);
    COM_DEBUG(SHIM, "daemon plan: evictions of grant %llu not known done: reported failed",
              (unsigned long long)seq);
    return false;
}

void shim_gate_evicted_watch(dmn_client_t *cl)
{
    shim_cuctx_t *cx;
    uint32_t gen;
    if (!mark_of(cl, &cx, &gen))
        return;
    if (!shim_backend_enter(cx, gen)) { /* its context went, and its memory with it */
        uint64_t seq = mark_seq;
        mark_seq = 0;
        (void)dmn_client_evicted(cl, seq, 0);
        SHIM_STAT_ADD(evicted_ctx_gone, 1);
        return;
    }
    (void)shim_gate_evicted_poll(cl, cx);
    shim_backend_leave();
}

void shim_gate_evicted_issued(shim_cuctx_t *cx)
{
    issued_cx = shim_backend_mark(cx) == GMUX_OK ? cx : NULL;
    issued_gen = cx ? shim_backend_gen(cx) : 0;
}

void shim_gate_evicted_order(shim_cuctx_t *cx)
{
    if (issued_cx && cx && issued_cx != cx &&
        shim_backend_after_mark(cx, issued_cx, issued_gen) != GMUX_OK)
        COM_DEBUG(SHIM, "daemon plan: fills not ordered after the evictions of another context");
}

void shim_gate_evicted_on_end(void *arg, uint64_t grant_seq)
{
    shim_gate_evicted_due(dmn_client_epoch(*(dmn_client_t **)arg), grant_seq);
}

int shim_gate_evicted_on_wait(void *arg)
{
    dmn_client_t *cl = *(dmn_client_t **)arg;
    shim_cuctx_t *cx = shim_backend_current(), *m;
    uint32_t gen;
    if (!mark_of(cl, &m, &gen))
        return 0;
    if (m == cx && shim_backend_gen(cx) == gen)
        return shim_gate_evicted_poll(cl, cx);
    /* the mark is another context's: the watcher, which would poll it there,
     * waits for gate_mu, which this thread holds through its wait */
    shim_gate_evicted_watch(cl);
    return mark_of(cl, &m, &gen);
}
