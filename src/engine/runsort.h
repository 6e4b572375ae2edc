/*
 * Sorting the migration's arrays, which nearly always arrive in order, in
 * reverse order, or as a few such runs: a natural merge sort.
 *
 * One pass finds the maximal runs (non-decreasing, or non-increasing and then
 * reversed in place); while more than one remains, each pass merges them two
 * by two into the caller's scratch array and back. An array in order costs
 * n - 1 comparisons and no writes, one in reverse order n - 1 comparisons and
 * n / 2 swaps; r runs cost about n log2(r) comparisons, and any input at most
 * about n log2(n). The comparisons are inline, not a callback.
 *
 * Not stable: equal elements may swap (a reversed run is reversed whole).
 * Both element types here are equal only when they are the same value, so
 * the result is the one any correct sort (qsort included) gives.
 *
 * Thread-safety: pure functions over caller-owned arrays.
 */
#ifndef ENG_RUNSORT_H
#define ENG_RUNSORT_H

#include <stdint.h>

#include "engine/backend.h"

/* A chunk to move and how many of its bytes move; ordered by chunk, then by
 * bytes. */
typedef struct eng_move {
    uint64_t bytes;
    uint32_t chunk;
} eng_move_t;

/* Sorts a[0..n) ascending; tmp holds at least n elements (scratch). */
void eng_runsort_tickets(eng_ticket_t *a, uint32_t n, eng_ticket_t *tmp);

/* Sorts a[0..n) by (chunk, bytes) ascending; tmp holds at least n elements. */
void eng_runsort_moves(eng_move_t *a, uint32_t n, eng_move_t *tmp);

#endif /* ENG_RUNSORT_H */
