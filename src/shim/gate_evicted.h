/*
 * The gate's answer to the end of a switch's evictions (protocol v6,
 * docs/daemon-evict.md): gmuxd holds the grant of the
 * task the evictions make room for until this task reports them done. The
 * gate (gate.c) notes the request (shim_gate_evicted_due, from the client's
 * on_evict_end), and once the evictions stored before it were issued on the
 * migration stream of the context they went to, records an event there
 * after them (shim_gate_evicted_mark); it then polls that event, never
 * waiting on it (cuEventQuery: the watcher thread every round, a launching
 * thread that waits for its turn between its reads, inside the event's
 * context when that is not its own), and sends EVICTED once
 * it completed. With the shim's mode off (nothing moved), or no context, or
 * an event the driver refuses, EVICTED goes at once: there is nothing to
 * wait for, or no way to. So does it, flagged failed, while a graph capture
 * puts the evictions off (shim_gate_evicted_deferred), and once the driver
 * fails a query of the event (an error other than "not ready"): whether the
 * evictions completed is not known then. A request or mark of
 * a connection that ended is dropped (its grant numbers belong to that
 * daemon). One request and one mark at a time: a newer one replaces the
 * older (the daemon holds one switch at a time, and an event recorded later
 * comes after the earlier evictions on the same stream). The same event
 * orders, inside the process, fills issued on another context's migration
 * stream after the evictions (shim_gate_evicted_issued,
 * shim_gate_evicted_order).
 *
 * Thread-safety: none (static storage); the gate calls it under gate_mu.
 */
#ifndef SHIM_GATE_EVICTED_H
#define SHIM_GATE_EVICTED_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/client.h"
#include "shim/backend_cuda.h"

/* The daemon asked for EVICTED for grant_seq (connection epoch). */
void shim_gate_evicted_due(uint64_t epoch, uint64_t grant_seq);

/* The client's callbacks (arg: the dmn_client_t ** of the gate): the end of
 * a switch's evictions (on_evict_end: shim_gate_evicted_due), and between a
 * waiting launching thread's reads the mark polled (on_wait: 1, read again
 * soon, while one is outstanding), in its own context or, when the mark is
 * another context's, inside that one (shim_gate_evicted_watch): the watcher,
 * which would poll it there, cannot take gate_mu while the thread waits. */
void shim_gate_evicted_on_end(void *arg, uint64_t grant_seq);
int shim_gate_evicted_on_wait(void *arg);

/* Whether a request waits for its mark (on the client's connection of now). */
bool shim_gate_evicted_is_due(const dmn_client_t *cl);

/* The stored evictions were all issued on cx (current on the calling
 * thread; NULL when nothing was moved): marks them for a request waiting. */
void shim_gate_evicted_mark(dmn_client_t *cl, shim_cuctx_t *cx);

/* The stored evictions (n ranges) were put off (a graph capture the
 * migration stream must not join): a request waiting is answered at once,
 * EVICTED with failed = n, instead of when the capture ends, so that gmuxd
 * does not hold its switch for the bound (it treats the evictions as not
 * done: the granted task's fills go, as without a hold). The evictions
 * themselves stay stored and go once the capture ended. */
void shim_gate_evicted_deferred(dmn_client_t *cl, uint32_t n);

/* The stored evictions cannot be carried out now: the context the launching
 * threads waited in is gone (destroyed: the memory allocated in it went with
 * it), or none is known. A request waiting is answered at once, EVICTED with
 * failed = the stored ranges that still cover tracked managed memory (0 when
 * all of it went with the context), instead of at the next wait of a
 * launching thread, which gmuxd would wait its bound for. The evictions stay
 * stored for that wait. */
void shim_gate_evicted_ctx_gone(dmn_client_t *cl, uint32_t failed);

/* Polls the mark on cx (current on the calling thread): sends EVICTED when it
 * completed. Returns whether a mark is still outstanding (on any context). */
bool shim_gate_evicted_poll(dmn_client_t *cl, shim_cuctx_t *cx);

/* For the watcher thread (no context of its own), and a waiting launching
 * thread whose context is not the mark's: polls the outstanding mark inside
 * its context (shim_backend_enter, popped after); a context that went took
 * the memory with it, and EVICTED goes at once (failed 0). */
void shim_gate_evicted_watch(dmn_client_t *cl);

/* Evictions were issued on cx (current): marked, so that fills issued later
 * on another context's migration stream are ordered after them (one
 * process, several contexts: one migration stream each). */
void shim_gate_evicted_issued(shim_cuctx_t *cx);

/* Before fills (a fill ahead, a grant's fills) on cx (current): its
 * migration stream waits for the mark of the last evictions when they went
 * on another context's. */
void shim_gate_evicted_order(shim_cuctx_t *cx);

#endif /* SHIM_GATE_EVICTED_H */
