/*
 * Carrying out gmuxd's orders (gate.c's side of the connection reads them,
 * gate_plan.c stores them): on the migration stream of a context, through
 * the CUDA backend, with the marks the proactive policy reads (policy.h).
 *
 *   evictions    without the turn, as soon as they are read: on the
 *                context of the launching thread that waits for its turn,
 *                else (the watcher thread, a thread without a usable
 *                context) inside the context launching threads last waited
 *                in; nothing waits for them
 *   fills ahead  at a launching thread's wait, on its context, trimmed by
 *                the evictions still stored; nothing waits for them
 *   the plan     at the grant, on the granted thread's context: evictions,
 *                then the grant's fills, then a wait for the stream; with
 *                the flag PLANNED (unless a store overflowed) what the
 *                daemon evicted and no fill brought back is left to demand
 *                paging, and after an overflow it is marked lost
 *
 * Thread-safety: none; every function but shim_gate_apply_bytes is called
 * under gate.c's gate_mu (cl: the gate's client).
 * LOCKING: takes the region table's lock (shared), and the destroy lock
 * shared to enter a context (shim_backend_enter), after gate_mu.
 */
#ifndef SHIM_GATE_APPLY_H
#define SHIM_GATE_APPLY_H

#include <stdint.h>

#include "daemon/client.h"
#include "shim/backend_cuda.h"

/* A launching thread waits for its turn in cx: the context evictions read
 * by a thread without one of its own go to, while the backend still knows
 * it (its entry's generation of now). */
void shim_gate_apply_waited_in(shim_cuctx_t *cx);

/* Carries out the stored evictions (and marks a due request for EVICTED)
 * for a task without the turn, on cx (the waiting thread's context), or,
 * cx NULL, inside the context last waited in; nothing when the task holds
 * the turn. */
void shim_gate_apply_evictions(dmn_client_t *cl, shim_cuctx_t *cx);

/* Prefetches the stored fills ahead on the calling thread's context (a
 * launching thread about to wait) and empties their store. */
void shim_gate_apply_ahead(const dmn_client_t *cl);

/* Carries out the plan of the grant just received (or of none: the wait
 * failed) on the calling thread's context, before its launch. */
void shim_gate_apply_grant(dmn_client_t *cl);

/* The bytes the orders moved to the device and to the host so far. Any thread. */
void shim_gate_apply_bytes(uint64_t *in_p, uint64_t *out_p);

#endif /* SHIM_GATE_APPLY_H */
