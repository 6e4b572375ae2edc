/*
 * Test helper: the pseudo-random numbers of tests and benches (xorshift64,
 * shifts 13, 7, 17): the same seed gives the same numbers on every machine,
 * so a failing input can be made again. Not for anything secret.
 *
 * Thread-safety: the state is the caller's; one caller per state.
 */
#ifndef GMUX_TESTS_TRAND_H
#define GMUX_TESTS_TRAND_H

#include <stdint.h>

/* The next number after *state (never 0 from a non-zero state). */
static inline uint64_t trand_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

#endif /* GMUX_TESTS_TRAND_H */
