/*
 * Sets of touched ranges (eng_range_t, launch.h): the one normal form the
 * predictor, the launch history and the stream learner compare and attribute
 * ranges in.
 *
 * Thread-safety: pure functions over caller-owned arrays.
 */
#ifndef ENG_RANGES_H
#define ENG_RANGES_H

#include <stddef.h>

#include "engine/launch.h"

/*
 * Sorts r[0..n) by address and merges overlapping or adjacent ranges in
 * place (their modes or'ed together); empty ranges are dropped. A range
 * running past the top of the address space is first clipped to end at
 * UINT64_MAX (so addr + len of every result is exact; the byte at UINT64_MAX
 * itself cannot be named). Returns the new count.
 */
size_t eng_ranges_normalise(eng_range_t *r, size_t n);

/* Up to this many ranges are sorted by insertion (stable), more by qsort. */
#define ENG_RANGES_SORT_SMALL 32

#endif /* ENG_RANGES_H */
