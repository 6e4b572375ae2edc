/*
 * Memory that went with a destroyed context, or was freed, as the gate's
 * stores of gmuxd's orders must see it (gate_plan.c). A context the driver
 * destroys takes every allocation made in it along (hooks_ctx.c), and
 * cuMemFree and its kin free one (hooks_mem.c); an order stored for that
 * memory (an eviction kept while the task held its turn or for
 * want of a context, a fill, a fill ahead) names memory that is gone, and
 * the driver may hand its addresses to a new allocation, which the order
 * would then move (and mark, policy.h) though the daemon never named it.
 *
 * hooks_ctx.c and hooks_mem.c note each range that went (any thread); the gate takes them
 * under its gate_mu, cuts them out of its stores, and out of every order
 * that arrives until it announces its working set again: until then the
 * daemon knows the task's memory only from the announcement before, and an
 * order for those addresses names the memory that went. After an
 * announcement (which no longer holds it) the ranges are forgotten: a new
 * allocation at the same addresses is the daemon's to order.
 *
 * The note keeps at most SHIM_GATE_GONE_CAP coalesced ranges; one more
 * that would need a slot is left out (its orders then stay: moving memory
 * that went is a no-op, and one at a reused address only costs faults),
 * never joined with another, which would cut orders for memory still held.
 *
 * Thread-safety: shim_gate_gone_note from any thread; the others under
 * gate.c's gate_mu. LOCKING: one mutex of its own, a leaf (taken under
 * gate_mu, and under the backend's destroy lock in hooks_ctx.c).
 */
#ifndef SHIM_GATE_GONE_H
#define SHIM_GATE_GONE_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/proto.h"

#define SHIM_GATE_GONE_CAP 1024u

/* [base, base+len) went with a destroyed context, or was freed. */
void shim_gate_gone_note(uint64_t base, uint64_t len);

/* The ranges noted since the last announcement, coalesced, copied to out (at
 * least SHIM_GATE_GONE_CAP ranges) when any was noted since the last call:
 * true then, with *n set; false, untouched, when none was. */
bool shim_gate_gone_take(dmn_range_t *out, uint32_t *n);

/* The working set was announced: the ranges noted so far are forgotten (the
 * taker forgets its copy itself). */
void shim_gate_gone_announced(void);

#endif /* SHIM_GATE_GONE_H */
