/*
 * What the tests of the gate's range arithmetic (src/shim/gate_ranges.c:
 * test_shim_gate_ranges.c, test_shim_gate_outside.c, test_shim_gate_cover.c)
 * check stores with, and the random input they feed it. Thread-safety: none.
 */
#ifndef GATE_RANGES_CHECK_H
#define GATE_RANGES_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/proto.h"

/* Whether the store covers every byte of [lo, hi). */
int covers(const dmn_range_t *v, uint32_t n, uint64_t lo, uint64_t hi);

/* A pseudo-random value below below (one fixed sequence per process). */
uint64_t rnd(uint64_t below);

/* Whether v (coalesced by the caller) is sorted, with no two ranges that
 * overlap or touch. */
int is_coalesced(const dmn_range_t *v, uint32_t n);

/* Up to max random ranges from about base on: in order (sorted, touching at
 * times, none overlapping) or anywhere (overlaps and ties), empty ones
 * among them where empty. Returns the count. */
uint32_t random_ranges(dmn_range_t *v, uint32_t max, uint64_t span, bool ordered, bool empty);

#endif /* GATE_RANGES_CHECK_H */
