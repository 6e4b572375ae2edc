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
#include <stdio.h>
#include <stdlib.h>

/* The next number after *state (never 0 from a non-zero state). */
static inline uint64_t trand_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* A number below n (n > 0); the modulo's bias is of no matter to tests. */
static inline uint64_t trand_below(uint64_t *state, uint64_t n)
{
    return trand_next(state) % n;
}

/* The first state of a random test: from GMUX_TEST_SEED when it is set (any
 * base strtoull reads), from dflt otherwise. The seed goes to stderr before
 * anything is drawn, with the test's name, so that a run that fails, crashes
 * or hangs to its timeout can be made again with the same numbers. The seed's
 * bits are spread (times 2^64 / golden ratio) so that seeds 1, 2, 3 start far
 * apart, and the state is never 0, where xorshift would stay. */
static inline uint64_t trand_from_env(const char *test, uint64_t dflt)
{
    const char *s = getenv("GMUX_TEST_SEED");
    uint64_t seed = s && *s ? strtoull(s, NULL, 0) : dflt;
    fprintf(stderr, "%s: random inputs of seed %llu (GMUX_TEST_SEED=%llu repeats them)\n", test,
            (unsigned long long)seed, (unsigned long long)seed);
    uint64_t state = (seed + 1) * 0x9e3779b97f4a7c15ull;
    return state ? state : 1;
}

#endif /* GMUX_TESTS_TRAND_H */
