/* Range arithmetic of the gate's stores of daemon orders: see gate_ranges.h. */
#include "shim/gate_ranges.h"

#include <string.h>

uint32_t shim_gate_ranges_cut(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t *tmp,
                              const dmn_range_t *cut, uint32_t k, bool keep_whole, uint32_t *whole)
{
    uint32_t dropped = 0;
    for (uint32_t c = 0; c < k && *n; c++) {
        uint64_t lo = cut[c].base, hi = cut[c].base + cut[c].len;
        uint32_t i = 0;
        while (i < *n && !(v[i].base < hi && lo < v[i].base + v[i].len))
            i++;
        if (i == *n)
            continue; /* nothing stored overlaps it */
        uint32_t m = 0, lost = 0;
        for (i = 0; i < *n; i++) {
            uint64_t a = v[i].base, b = v[i].base + v[i].len;
            bool over = a < hi && lo < b; /* then what is left below and above it */
            dmn_range_t piece[2] = {{a, !over    ? b - a
                                        : a < lo ? lo - a
                                                 : 0},
                                    {hi, over && b > hi ? b - hi : 0}};
            for (int j = 0; j < 2; j++) {
                if (piece[j].len == 0)
                    continue;
                if (m < cap)
                    tmp[m++] = piece[j];
                else
                    lost++;
            }
        }
        if (lost && keep_whole) {
            if (whole)
                (*whole)++;
            continue;
        }
        dropped += lost;
        memcpy(v, tmp, m * sizeof(*v));
        *n = m;
    }
    return dropped;
}

void shim_gate_ranges_coalesce(dmn_range_t *v, uint32_t *n)
{
    /* insertion sort: no allocation (qsort may), and the stores are small
     * and mostly in order already (the daemon sends its chunks in order) */
    for (uint32_t i = 1; i < *n; i++) {
        dmn_range_t r = v[i];
        uint32_t j = i;
        while (j > 0 && v[j - 1].base > r.base) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = r;
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < *n; i++) {
        if (v[i].len == 0)
            continue;
        if (m > 0 && v[i].base <= v[m - 1].base + v[m - 1].len) {
            uint64_t end = v[i].base + v[i].len;
            if (end > v[m - 1].base + v[m - 1].len)
                v[m - 1].len = end - v[m - 1].base;
        } else {
            v[m++] = v[i];
        }
    }
    *n = m;
}

/* The bytes between a and b (0 when they overlap or touch). */
static uint64_t gate_ranges_gap(const dmn_range_t *a, const dmn_range_t *b)
{
    if (a->base + a->len <= b->base)
        return b->base - (a->base + a->len);
    if (b->base + b->len <= a->base)
        return a->base - (b->base + b->len);
    return 0;
}

bool shim_gate_ranges_add_whole(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t r)
{
    if (r.len == 0 || cap == 0)
        return false;
    if (*n == cap)
        shim_gate_ranges_coalesce(v, n);
    if (*n < cap) {
        v[(*n)++] = r;
        return false;
    }
    uint32_t near = 0;
    uint64_t best = UINT64_MAX;
    for (uint32_t i = 0; i < *n && best; i++) {
        uint64_t g = gate_ranges_gap(&v[i], &r);
        if (g < best) {
            best = g;
            near = i;
        }
    }
    uint64_t lo = v[near].base < r.base ? v[near].base : r.base;
    uint64_t hi = v[near].base + v[near].len, rhi = r.base + r.len;
    v[near] = (dmn_range_t){lo, (hi > rhi ? hi : rhi) - lo};
    return best > 0;
}

void shim_gate_ranges_outside(const dmn_range_t *v, uint32_t n, dmn_range_t r,
                              void (*fn)(void *arg, dmn_range_t piece), void *arg)
{
    uint64_t p = r.base, end = r.base + r.len;
    for (uint32_t i = 0; i < n && p < end; i++) {
        uint64_t a = v[i].base, b = v[i].base + v[i].len;
        if (b <= p)
            continue;
        if (a >= end)
            break;
        if (a > p)
            fn(arg, (dmn_range_t){p, a - p});
        p = b;
    }
    if (p < end)
        fn(arg, (dmn_range_t){p, end - p});
}
