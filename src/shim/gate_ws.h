/*
 * The working set the gate announces to gmuxd before a launching thread
 * asks for a turn (gate.c): every tracked managed allocation, as at most
 * SHIM_GATE_WS_CAP ranges. More allocations than that (a caching allocator
 * makes thousands) are announced as a covering set, the smallest gaps
 * between them joined (shim_gate_ranges_cover): gmuxd plans for every
 * managed byte, and counts a few bytes the task does not have. Each such
 * announcement is counted (stat ws_coarsened); the log says it once. The set
 * is rebuilt only when an allocation was made or freed since the last wait
 * (gate_ws_cache.h; stat ws_builds).
 *
 * Thread-safety: none (static storage); the gate calls it under gate_mu.
 * LOCKING: takes the region table's lock shared, inside gate_mu.
 */
#ifndef SHIM_GATE_WS_H
#define SHIM_GATE_WS_H

#include <stdint.h>

#include "daemon/proto.h"
#include "shim/gate_ws_cache.h"

/* Builds the working set of now; *ws_p points at it (valid until the next
 * call). Returns its count of ranges. */
uint32_t shim_gate_ws_build(const dmn_range_t **ws_p);

#endif /* SHIM_GATE_WS_H */
