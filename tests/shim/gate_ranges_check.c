/* Checks the gate's range tests share (gate_ranges_check.h). */
#include "gate_ranges_check.h"

#include "trand.h"

/* Whether the store covers every byte of [lo, hi). */
int covers(const dmn_range_t *v, uint32_t n, uint64_t lo, uint64_t hi)
{
    while (lo < hi) {
        uint64_t next = lo;
        for (uint32_t i = 0; i < n; i++)
            if (v[i].base <= lo && lo < v[i].base + v[i].len && v[i].base + v[i].len > next)
                next = v[i].base + v[i].len;
        if (next == lo)
            return 0;
        lo = next;
    }
    return 1;
}

static uint64_t rng_state = 88172645463325252ull;
uint64_t rnd(uint64_t below)
{
    return trand_next(&rng_state) % below;
}

/* Whether v (coalesced by the caller) is sorted, with no two ranges that
 * overlap or touch. */
int is_coalesced(const dmn_range_t *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i].len == 0 || (i > 0 && v[i - 1].base + v[i - 1].len >= v[i].base))
            return 0;
    return 1;
}

/* Up to max random ranges from about base on: in order (sorted, touching at
 * times, none overlapping) or anywhere (overlaps and ties), empty ones
 * among them where empty. Returns the count. */
uint32_t random_ranges(dmn_range_t *v, uint32_t max, uint64_t span, bool ordered, bool empty)
{
    uint32_t n = (uint32_t)rnd(max + 1);
    uint64_t p = rnd(span / 4 + 1);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t len = empty && rnd(6) == 0 ? 0 : 1 + rnd(span / 16 + 1);
        if (!ordered) {
            v[i] = (dmn_range_t){rnd(span), len};
            continue;
        }
        p += rnd(3) == 0 ? 0 : rnd(span / 16 + 1); /* 0: touching the one before */
        v[i] = (dmn_range_t){p, len};
        p += len;
    }
    return n;
}
