/*
 * The driver double's streams of a capture and their dependency sets
 * (fake_cuda_internal.h), as cuda.h and the CUDA programming guide describe
 * them:
 * - the stream a capture begins on (its origin) takes part in it; another
 *   stream joins it when it waits for an event recorded in it (a captured
 *   event: an event recorded on a stream taking part, which holds that
 *   stream's dependency set at the record; cuEventRecord: waits use the state
 *   captured most recently). Nothing takes a stream out of the capture
 *   before cuStreamEndCapture, which takes them all out;
 * - each stream's dependency set is the set of nodes its next captured node
 *   depends on (cuStreamGetCaptureInfo's dependencies_out): the node it
 *   captured last, merged with a captured event's set at each wait for one;
 *   a joining stream starts with the event's set;
 * - the end fails with CUDA_ERROR_STREAM_CAPTURE_UNJOINED unless every node
 *   in another stream's dependency set is reachable from the origin's
 *   (cuda.h: "a fork that was not joined to the primary stream"; nodes
 *   unreachable from the origin stream through direct actions on the graph
 *   or cuStreamUpdateCaptureDependencies do not count): each joined stream's
 *   work joined back into the origin, directly or through another stream.
 * A node's ancestors are kept as a mask of node slots (a graph has at most
 * FAKE_MAX_NODES = 64). A capture set up with fake_set_capturing records no
 * nodes: there a joined stream is taken for unjoined, as the double cannot
 * tell. LOCKING: fake_join_mu guards everything here; fake_cuda_graph.c
 * calls fake_join_node under its fake_capture_mu (that order only).
 */
#include <pthread.h>
#include <string.h>

#include "fake_cuda_graph.h"
#include "fake_cuda_internal.h"

#define FAKE_JOIN_STREAMS 16 /* streams taking part in a capture, origin included */
#define FAKE_JOIN_EVENTS  4096

static pthread_mutex_t fake_join_mu = PTHREAD_MUTEX_INITIALIZER;
/* The capture in progress: its streams (slot 0 the origin; s 0 where free)
 * with their dependency sets, its graph (NULL for fake_set_capturing's), a
 * serial (events captured in an earlier capture are not captured in this
 * one), and whether a join found no free slot (then taken for unjoined). */
static struct {
    uintptr_t s;
    uint64_t deps;
} fake_js[FAKE_JOIN_STREAMS];
static fake_graph_t *fake_join_g;
static uint64_t fake_join_serial, fake_join_lost;
static uint64_t fake_anc[FAKE_MAX_NODES]; /* each node slot's ancestors */
/* Each event's last record: the capture serial it was captured in (0: not
 * captured) and the dependency set it holds, by event number (from 0x7000);
 * whether it was ever recorded. */
static uint64_t fake_ev_serial[FAKE_JOIN_EVENTS], fake_ev_deps[FAKE_JOIN_EVENTS];
static bool fake_ev_recorded[FAKE_JOIN_EVENTS];

void fake_join_begin(uintptr_t origin, CUgraph g)
{
    pthread_mutex_lock(&fake_join_mu);
    memset(fake_js, 0, sizeof(fake_js));
    memset(fake_anc, 0, sizeof(fake_anc));
    fake_js[0].s = origin;
    fake_join_g = fake_graph_of(g);
    fake_join_serial++;
    fake_join_lost = 0;
    pthread_mutex_unlock(&fake_join_mu);
}

/* Under fake_join_mu: s's slot, or NULL when s takes no part. */
static __typeof__(&fake_js[0]) fake_join_slot(uintptr_t s)
{
    for (int i = 0; s && i < FAKE_JOIN_STREAMS; i++)
        if (fake_js[i].s == s)
            return &fake_js[i];
    return NULL;
}

bool fake_join_in(uintptr_t s)
{
    pthread_mutex_lock(&fake_join_mu);
    bool in = fake_join_slot(s) != NULL;
    pthread_mutex_unlock(&fake_join_mu);
    return in;
}

/* Under fake_join_mu: deps and every ancestor of them. */
static uint64_t fake_join_closure(uint64_t deps)
{
    uint64_t all = deps;
    for (int i = 0; i < FAKE_MAX_NODES; i++)
        if (deps & (UINT64_C(1) << i))
            all |= fake_anc[i];
    return all;
}

void fake_join_node(uintptr_t s, const fake_graph_t *g, const fake_node_t *nd)
{
    size_t i = (size_t)(nd - g->nodes);
    pthread_mutex_lock(&fake_join_mu);
    __typeof__(&fake_js[0]) js = fake_join_slot(s);
    if (g == fake_join_g && i < FAKE_MAX_NODES) {
        fake_anc[i] = js ? fake_join_closure(js->deps) : 0;
        if (js)
            js->deps = UINT64_C(1) << i;
    }
    pthread_mutex_unlock(&fake_join_mu);
}

void fake_join_record(CUevent e, uintptr_t s)
{
    uintptr_t k = U(e) - 0x7000;
    if (k >= FAKE_JOIN_EVENTS)
        return;
    pthread_mutex_lock(&fake_join_mu);
    __typeof__(&fake_js[0]) js = fake_join_slot(s);
    fake_ev_serial[k] = js ? fake_join_serial : 0;
    fake_ev_deps[k] = js ? js->deps : 0;
    fake_ev_recorded[k] = true;
    pthread_mutex_unlock(&fake_join_mu);
}

fake_ev_state_t fake_join_wait(uintptr_t s, CUevent e)
{
    uintptr_t k = U(e) - 0x7000;
    if (k >= FAKE_JOIN_EVENTS) /* not one of the double's events: taken for never recorded */
        return FAKE_EV_EMPTY;
    pthread_mutex_lock(&fake_join_mu);
    if (!fake_ev_recorded[k]) {
        pthread_mutex_unlock(&fake_join_mu);
        return FAKE_EV_EMPTY;
    }
    bool captured = s && fake_js[0].s && fake_ev_serial[k] == fake_join_serial;
    __typeof__(&fake_js[0]) js = captured ? fake_join_slot(s) : NULL;
    for (int i = 1; captured && !js && i < FAKE_JOIN_STREAMS; i++)
        if (!fake_js[i].s) {
            js = &fake_js[i]; /* s joins the capture */
            js->s = s;
            js->deps = 0;
        }
    if (captured && js)
        js->deps |= fake_ev_deps[k];
    fake_join_lost += captured && !js;
    pthread_mutex_unlock(&fake_join_mu);
    return captured ? FAKE_EV_CAPTURED : FAKE_EV_OUTSIDE;
}

bool fake_join_unjoined(void)
{
    pthread_mutex_lock(&fake_join_mu);
    bool unjoined = fake_join_lost != 0;
    uint64_t reached = fake_join_closure(fake_js[0].deps);
    for (int i = 1; i < FAKE_JOIN_STREAMS && !unjoined; i++)
        unjoined = fake_js[i].s && (!fake_join_g || (fake_js[i].deps & ~reached));
    pthread_mutex_unlock(&fake_join_mu);
    return unjoined;
}

size_t fake_join_deps(uintptr_t s, CUgraphNode *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&fake_join_mu);
    __typeof__(&fake_js[0]) js = fake_join_slot(s);
    for (int i = 0; js && fake_join_g && i < FAKE_MAX_NODES && n < max; i++)
        if (js->deps & (UINT64_C(1) << i))
            out[n++] = (CUgraphNode)&fake_join_g->nodes[i];
    pthread_mutex_unlock(&fake_join_mu);
    return n;
}

CUresult fake_join_update(uintptr_t s, const CUgraphNode *nodes, size_t n, unsigned flags)
{
    if ((n && !nodes) || flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fake_join_mu);
    __typeof__(&fake_js[0]) js = fake_join_slot(s);
    const fake_graph_t *g = fake_join_g;
    bool ok = js && g;
    uint64_t set = 0;
    for (size_t k = 0; ok && k < n; k++) { /* each a live node of the capture's graph */
        uintptr_t at = U(nodes[k]) - U(g->nodes), i = at / sizeof(g->nodes[0]);
        ok = U(nodes[k]) >= U(g->nodes) && at % sizeof(g->nodes[0]) == 0 && i < g->n &&
             g->nodes[i].live;
        set |= ok ? UINT64_C(1) << i : 0;
    }
    if (ok)
        js->deps = flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES ? set : js->deps | set;
    CUresult r = !js || !g ? CUDA_ERROR_ILLEGAL_STATE
                 : ok      ? CUDA_SUCCESS
                           : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&fake_join_mu);
    return r;
}

void fake_join_end(void)
{
    pthread_mutex_lock(&fake_join_mu);
    memset(fake_js, 0, sizeof(fake_js));
    fake_join_g = NULL;
    pthread_mutex_unlock(&fake_join_mu);
}
