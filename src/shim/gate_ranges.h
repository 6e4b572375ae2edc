/*
 * Range arithmetic of the gate's stores of daemon orders (gate_plan.c), kept
 * apart so it can be tested without a driver: taking an order's ranges out
 * of the stored orders of the other direction, storing an eviction without
 * losing a byte when the store is full, the pieces of a range that no
 * stored range covers, and a covering set of a working set too large to
 * announce range by range (gate_ws.h).
 *
 * A store is a caller-owned array v of at most cap ranges and its count *n;
 * nothing allocates (the shim lives in another program's process). Every
 * store is kept coalesced: sorted by base, no two ranges overlapping or
 * touching, none empty (shim_gate_ranges_add_whole for evictions,
 * shim_gate_ranges_add_fill for fills, shim_gate_ranges_cut keeps it so).
 * The order in which the daemon sent the ranges carries no meaning: it sends
 * them in address order (src/daemon/place_*.c), and the prefetches of one
 * plan all go on the one migration stream, waited for together.
 *
 * A store one range over cap: a store of evictions joins two ranges (a byte
 * left out would stay counted as free memory the task holds); a store of
 * fills gives up a range, counted: a new one that finds it full, or, where
 * a cut splits a stored range, the smaller piece of the two (the upper one
 * of two as large), so at most half of that range. Joining fills instead
 * would also fill the gap between them, which may hold memory the daemon
 * gave to another task (where a cut split a range, the nearest two are the
 * pieces around that very cut); a fill left out only costs faults. Both
 * choices take no more than the pass they are part of.
 *
 * Pure functions over caller-owned arrays; thread-safe (they touch nothing
 * but what they are given; the stores' callers hold the gate's gate_mu).
 */
#ifndef SHIM_GATE_RANGES_H
#define SHIM_GATE_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/proto.h"

/*
 * Takes the k ranges of cut out of the store v (*n at most cap): what a
 * stored range keeps below and above each is kept as one or two pieces. tmp:
 * scratch of cap ranges. When a cut splits a range of a full store, either
 * (keep_whole) the store stays as it was for that cut and *whole is counted
 * up, or the smaller piece is given up (see above), counted in the return
 * value and its bytes in *dropped_bytes (either may be NULL). The
 * cuts are taken one after the other, in the order given; each run of them
 * sorted by base (touching allowed, empty ones skipped) takes one pass over
 * the store, O(n + k) when all are. A store that is not sorted is coalesced
 * first.
 */
uint32_t shim_gate_ranges_cut(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t *tmp,
                              const dmn_range_t *cut, uint32_t k, bool keep_whole, uint32_t *whole,
                              uint64_t *dropped_bytes);

/*
 * Sorts the store by base and joins ranges that overlap or touch (the bytes
 * covered do not change).
 */
void shim_gate_ranges_coalesce(dmn_range_t *v, uint32_t *n);

/*
 * Adds r to a coalesced store (shim_gate_ranges_coalesce, or built by this
 * function alone) without losing a byte of it, and keeps it coalesced: r is
 * joined with the stored ranges it overlaps or touches, else inserted in
 * place while there is room; in a full store it is joined with the nearer
 * of its neighbours (the lower one when both are as near) into one range
 * covering both and what lies between them. Returns whether r had to be
 * joined so (the store then covers bytes it was not asked to). For
 * evictions: evicting more than asked only costs faults, evicting less
 * leaves memory counted as free that the task holds. O(log n) to find the
 * place, plus moving the ranges above it when the count changes.
 */
bool shim_gate_ranges_add_whole(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t r);

/*
 * Adds r to a coalesced store of fills and keeps it coalesced: r is joined
 * with the stored ranges it overlaps or touches, else inserted in place
 * while there is room, else given up. Returns the bytes given up: 0 or
 * r.len. O(log n) to find the place, plus moving the ranges above it.
 */
uint64_t shim_gate_ranges_add_fill(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t r);

/*
 * Calls fn for each piece of the m ranges of w that no range of the store v
 * covers: range after range in the order of w, the pieces of each in
 * address order (the calls of one pass per range of w). v must be
 * coalesced (shim_gate_ranges_coalesce; asserted). When w is sorted by base
 * (a store of gate_plan.c's) this is one merge pass over both, O(n + m); each
 * range of w that starts below the one before it starts a pass over v
 * again.
 */
void shim_gate_ranges_outside(const dmn_range_t *v, uint32_t n, const dmn_range_t *w, uint32_t m,
                              void (*fn)(void *arg, dmn_range_t piece), void *arg);

/*
 * Writes to out at most cap ranges that cover every byte of the n ranges
 * at(arg, i, &r) yields for i in [0, n) (false: none for that i), which
 * come sorted by base without overlapping (a region table). Ranges that
 * touch are joined; when more than cap would remain, gaps are covered too,
 * the smallest first, until cap remain (of gaps as wide as the widest one
 * covered, the first in address order are kept); *coarse is then true. For a working
 * set announced to gmuxd: a range left out would be planned without, a gap
 * covered only counts bytes the task does not have. scratch: cap values.
 * Two passes over the input, O(n log cap); returns the count written.
 */
uint32_t shim_gate_ranges_cover(dmn_range_t *out, uint32_t cap, uint64_t *scratch, size_t n,
                                bool (*at)(const void *arg, size_t i, dmn_range_t *r),
                                const void *arg, bool *coarse);

#endif /* SHIM_GATE_RANGES_H */
