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
 *   work joined back into the origin, directly or through another stream;
 * - a stream of one capture waiting for an event captured in another capture
 *   in progress would merge them: CUDA_ERROR_STREAM_CAPTURE_MERGE (cuda.h:
 *   a merge of two independent capture sequences; the programming guide
 *   forbids waiting, from a stream being captured, for an event captured
 *   into another capture graph), an invalid operation that invalidates both
 *   (the double's reading of the guide's "Invalidation": the capture graphs
 *   associated with an invalid operation are invalidated);
 * - an event last recorded in a capture in progress cannot be queried nor
 *   synchronized (CUDA_ERROR_CAPTURED_EVENT: fake_event_captured).
 * Each capture (fake_cuda_capture.h) has its own streams and dependency
 * sets. A node's ancestors are kept as a mask of node slots (a graph has at
 * most FAKE_MAX_NODES = 64). A capture set up with fake_set_capturing
 * records no nodes: there a joined stream is taken for unjoined, as the
 * double cannot tell. LOCKING: fake_cap_mu (fake_cuda_capture.h).
 */
#include <pthread.h>
#include <string.h>

#include "fake_cuda_capture.h"
#include "fake_cuda_internal.h"

#define FAKE_JOIN_EVENTS 4096

/* Each event's last record, by event number (from 0x7000): the id of the
 * capture it was captured in (0: not captured) and the dependency set it
 * holds; whether it was ever recorded. Under fake_cap_mu. */
static uint64_t fake_ev_capture[FAKE_JOIN_EVENTS], fake_ev_deps[FAKE_JOIN_EVENTS];
static bool fake_ev_recorded[FAKE_JOIN_EVENTS];

typedef __typeof__(&fake_caps[0].js[0]) fake_js_t;

/* Under fake_cap_mu: s's slot in c, or NULL when s takes no part. */
static fake_js_t fake_join_slot(fake_capture_t *c, uintptr_t s)
{
    for (int i = 0; c && s && i < FAKE_JOIN_STREAMS; i++)
        if (c->js[i].s == s)
            return &c->js[i];
    return NULL;
}

/* Under fake_cap_mu: deps and every ancestor of them in c. */
static uint64_t fake_join_closure(const fake_capture_t *c, uint64_t deps)
{
    uint64_t all = deps;
    for (int i = 0; i < FAKE_MAX_NODES; i++)
        if (deps & (UINT64_C(1) << i))
            all |= c->anc[i];
    return all;
}

void fake_join_node(uintptr_t s, const fake_graph_t *g, const fake_node_t *nd)
{
    size_t i = (size_t)(nd - g->nodes);
    pthread_mutex_lock(&fake_cap_mu);
    fake_capture_t *c = NULL;
    for (int k = 0; g && !c && k < FAKE_CAPTURES; k++)
        if (fake_caps[k].id && fake_caps[k].g == g)
            c = &fake_caps[k];
    fake_js_t js = fake_join_slot(c, s);
    if (c && i < FAKE_MAX_NODES) {
        c->anc[i] = js ? fake_join_closure(c, js->deps) : 0;
        if (js)
            js->deps = UINT64_C(1) << i;
    }
    pthread_mutex_unlock(&fake_cap_mu);
}

void fake_join_record(CUevent e, uintptr_t s)
{
    uintptr_t k = U(e) - 0x7000;
    if (k >= FAKE_JOIN_EVENTS)
        return;
    pthread_mutex_lock(&fake_cap_mu);
    fake_capture_t *c = fake_cap_of(s);
    fake_js_t js = fake_join_slot(c, s);
    fake_ev_capture[k] = c ? c->id : 0;
    fake_ev_deps[k] = js ? js->deps : 0;
    fake_ev_recorded[k] = true;
    pthread_mutex_unlock(&fake_cap_mu);
}

fake_ev_state_t fake_join_wait(uintptr_t s, CUevent e)
{
    uintptr_t k = U(e) - 0x7000;
    if (k >= FAKE_JOIN_EVENTS) /* not one of the double's events: taken for never recorded */
        return FAKE_EV_EMPTY;
    pthread_mutex_lock(&fake_cap_mu);
    if (!fake_ev_recorded[k]) {
        pthread_mutex_unlock(&fake_cap_mu);
        return FAKE_EV_EMPTY;
    }
    /* the legacy stream never joins a capture */
    fake_capture_t *ec = s ? fake_cap_by_id(fake_ev_capture[k]) : NULL;
    fake_capture_t *sc = fake_cap_of(s);
    fake_ev_state_t st = !ec ? FAKE_EV_OUTSIDE : sc && sc != ec ? FAKE_EV_MERGE : FAKE_EV_CAPTURED;
    if (st == FAKE_EV_MERGE)
        ec->broken = sc->broken = true;
    fake_js_t js = st == FAKE_EV_CAPTURED ? fake_join_slot(ec, s) : NULL;
    for (int i = 1; st == FAKE_EV_CAPTURED && !js && i < FAKE_JOIN_STREAMS; i++)
        if (!ec->js[i].s) {
            js = &ec->js[i]; /* s joins the capture */
            js->s = s;
            js->deps = 0;
        }
    if (js)
        js->deps |= fake_ev_deps[k];
    else if (st == FAKE_EV_CAPTURED)
        ec->lost++;
    pthread_mutex_unlock(&fake_cap_mu);
    return st;
}

bool fake_event_captured(CUevent e)
{
    uintptr_t k = U(e) - 0x7000;
    if (k >= FAKE_JOIN_EVENTS)
        return false;
    pthread_mutex_lock(&fake_cap_mu);
    fake_capture_t *c = fake_ev_recorded[k] ? fake_cap_by_id(fake_ev_capture[k]) : NULL;
    if (c)
        c->broken = true;
    pthread_mutex_unlock(&fake_cap_mu);
    return c != NULL;
}

bool fake_cap_unjoined(const fake_capture_t *c)
{
    bool unjoined = c->lost != 0;
    uint64_t reached = fake_join_closure(c, c->js[0].deps);
    for (int i = 1; i < FAKE_JOIN_STREAMS && !unjoined; i++)
        unjoined = c->js[i].s && (!c->g || (c->js[i].deps & ~reached));
    return unjoined;
}

size_t fake_join_deps(uintptr_t s, CUgraphNode *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&fake_cap_mu);
    fake_capture_t *c = fake_cap_of(s);
    fake_js_t js = fake_join_slot(c, s);
    for (int i = 0; js && c->g && i < FAKE_MAX_NODES && n < max; i++)
        if (js->deps & (UINT64_C(1) << i))
            out[n++] = (CUgraphNode)&c->g->nodes[i];
    pthread_mutex_unlock(&fake_cap_mu);
    return n;
}

CUresult fake_join_update(uintptr_t s, const CUgraphNode *nodes, size_t n, unsigned flags)
{
    if ((n && !nodes) || flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fake_cap_mu);
    fake_capture_t *c = fake_cap_of(s);
    fake_js_t js = fake_join_slot(c, s);
    const fake_graph_t *g = c ? c->g : NULL;
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
    pthread_mutex_unlock(&fake_cap_mu);
    return r;
}
