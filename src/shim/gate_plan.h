/*
 * The gate's stores of gmuxd's orders (gate_apply.c carries them out): the plan
 * received for the next turn, applied by the thread that gets it (its
 * context current) before its launch, and the orders that reach the task
 * without the turn. Static storage: nothing allocates.
 *
 * AHEAD orders (a fill for the next turn, sent while another task runs) are
 * applied at once when the launching thread receives them while it waits
 * for its turn, once the read they came in is over (gate.c's
 * gate_on_read_end); the watcher thread, which has no context, only stores
 * them for the launching thread's next wait. EVICT orders that reach a task
 * without the turn (they make room for the task just granted) are applied
 * on arrival, at the end of that read: by the waiting launching thread, or
 * by the watcher inside the context the launching threads last waited in.
 * Stored fills (FILL and AHEAD) lose the ranges of every EVICT that arrives
 * after them (gate_plan_cut): the daemon keeps counting the memory of an
 * order as the task's until it sends an eviction for it. Stored EVICT
 * orders lose the ranges of every fill that arrives after them, which gives
 * that memory back. No eviction is ever dropped: a full store joins it with
 * its nearest stored range (gate_ranges.h); a full store of fills gives up
 * a range (faults only; counted in fill_dropped). Every store stays
 * coalesced (gate_ranges.h), so gate_apply.c may merge one with another.
 *
 * Orders are kept for the client's connection they came on (its epoch,
 * dmn_client_epoch): those of a connection that ended (a daemon that died,
 * the one registered with after it numbering its grants from 1 again) are
 * dropped, never carried out. FILL orders belong to one grant (the PLAN's
 * grant sequence: the GRANT sent right after them) and are carried out at
 * that grant only: one the task did not use (its wait timed out, or the
 * turn was revoked before a launch asked for it) is over, and at a later
 * grant the daemon has given that memory to other tasks and orders again
 * what is still missing.
 *
 * Thread-safety: none; every function is called under gate.c's gate_mu
 * (the client's callbacks run inside client calls made under it).
 */
#ifndef SHIM_GATE_PLAN_H
#define SHIM_GATE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/client.h"
#include "daemon/proto.h"

#define SHIM_GATE_PLAN_CAP 1024u /* ranges of each store */

/* The client's on_plan: stores the orders of a PLAN (batch by batch) after
 * taking them out of the stored orders of the other direction. arg: the
 * gate's dmn_client_t **. */
void shim_gate_plan_on_plan(void *arg, uint64_t grant_seq, dmn_plan_kind_t kind,
                            const dmn_range_t *ranges, uint32_t n);

/* The client's on_plan_end: says once if a store could not keep all of a
 * PLAN (the client hands one over in batches of 256 ranges). */
void shim_gate_plan_on_plan_end(void *arg, uint64_t grant_seq, dmn_plan_kind_t kind, uint32_t n);

/* Drops the stored orders unless they came on cl's connection of now. */
void shim_gate_plan_current(const dmn_client_t *cl);

/* The stored orders of one kind (EVICT, FILL or AHEAD), coalesced: *n ranges. */
const dmn_range_t *shim_gate_plan_ranges(dmn_plan_kind_t kind, uint32_t *n);

/* The count of stored orders of one kind. */
uint32_t shim_gate_plan_count(dmn_plan_kind_t kind);

/* Empties the store of one kind (carried out, or dropped). */
void shim_gate_plan_clear(dmn_plan_kind_t kind);

/* Empties a store of fills (FILL or AHEAD) that is not carried out (no
 * context, another grant's): the regions its ranges overlap are prefetched
 * again at their next use (shim_policy_lost), whatever the next GRANT says. */
void shim_gate_plan_give_up(dmn_plan_kind_t kind);

/* Whether a store overflowed since the last call (a piece of a fill given
 * up by a cut, an eviction joined with another or left whole for want of
 * room: the orders carried out are not those the daemon sent, and which
 * memory that touched is not known); clears it. A grant then does not leave
 * what the daemon evicted to demand paging, and marks it lost (gate_apply.c,
 * shim_policy_evicted_lost). Fills given up whole
 * are marked themselves (shim_policy_lost). */
bool shim_gate_plan_overflowed(void);
/* Sets the flag shim_gate_plan_overflowed cleared again: a grant that
 * carried out none of the evictions stored (no context to move them in)
 * leaves the overflow to the grant after they went. */
void shim_gate_plan_overflow_kept(void);

/* The grant the stored FILL orders belong to. */
uint64_t shim_gate_plan_fill_seq(void);

/* The stored evictions were put off (a graph capture): returns the EVICT
 * ranges stored since the last put-off (or since the store was empty) and
 * starts that count again, so each is counted in evict_deferred once. */
uint32_t shim_gate_plan_evict_put_off(void);

#endif /* SHIM_GATE_PLAN_H */
