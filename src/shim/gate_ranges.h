/*
 * Range arithmetic of the gate's stores of daemon orders (gate.c), kept
 * apart so it can be tested without a driver: taking an order's ranges out
 * of the stored orders of the other direction, storing an eviction without
 * losing a byte when the store is full, and the pieces of a range that no
 * stored range covers.
 *
 * A store is a caller-owned array v of at most cap ranges and its count *n;
 * nothing allocates (the shim lives in another program's process). The
 * order of a store's ranges carries no meaning.
 *
 * Pure functions over caller-owned arrays; thread-safe (gate.c calls them
 * under its gate_mu).
 */
#ifndef SHIM_GATE_RANGES_H
#define SHIM_GATE_RANGES_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/proto.h"

/*
 * Takes the k ranges of cut out of the store v: what a stored range keeps
 * below and above each is kept as one or two pieces. tmp: scratch of cap
 * ranges. When the pieces of one range of cut do not all fit cap, either
 * (keep_whole) the store stays as it was for that range and *whole is
 * counted up, or the pieces beyond cap are dropped and counted in the
 * return value.
 */
uint32_t shim_gate_ranges_cut(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t *tmp,
                              const dmn_range_t *cut, uint32_t k, bool keep_whole, uint32_t *whole);

/*
 * Sorts the store by base and joins ranges that overlap or touch (the bytes
 * covered do not change).
 */
void shim_gate_ranges_coalesce(dmn_range_t *v, uint32_t *n);

/*
 * Adds r to the store without losing a byte of it: appended while there is
 * room; else the store is coalesced and, if still full, r is joined with
 * the stored range nearest it into one range covering both and what lies
 * between them. Returns whether r had to be joined so (the store then
 * covers bytes it was not asked to). For evictions: evicting more than
 * asked only costs faults, evicting less leaves memory counted as free that
 * the task holds.
 */
bool shim_gate_ranges_add_whole(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t r);

/*
 * Calls fn for each piece of r that no range of the store covers, in
 * address order. The store must be coalesced (shim_gate_ranges_coalesce).
 */
void shim_gate_ranges_outside(const dmn_range_t *v, uint32_t n, dmn_range_t r,
                              void (*fn)(void *arg, dmn_range_t piece), void *arg);

#endif /* SHIM_GATE_RANGES_H */
