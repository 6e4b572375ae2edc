/* Range arithmetic of the gate's stores of daemon orders: see gate_ranges.h. */
#include "shim/gate_ranges.h"

#include <assert.h>
#include <string.h>

/* Whether the n ranges of v are sorted by base, none wrapping past the end
 * of the address space nor overlapping the next (touching is allowed), and
 * (nonempty) none empty. */
static bool gate_ranges_in_order(const dmn_range_t *v, uint32_t n, bool nonempty)
{
    for (uint32_t i = 0; i < n; i++) {
        if (v[i].base + v[i].len < v[i].base || (nonempty && v[i].len == 0))
            return false;
        if (i > 0 && v[i].base < v[i - 1].base + v[i - 1].len)
            return false;
    }
    return true;
}

/*
 * Takes the k cuts (sorted by base, none overlapping the next; empty ones
 * skipped) out of the store of non-empty ranges sorted by base without
 * overlaps, in one pass: a cut only meets the ranges from where the one
 * before stopped. The store as it stands after each cut is tmp[0, m) (below
 * every cut to come), then up if has_up (what the last cut left of a range
 * above it), then v[r, e) (not reached yet). A cut that splits a range of
 * a full store gives up the smaller piece (the upper one of two as large).
 */
static uint32_t gate_ranges_cut_merge(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t *tmp,
                                      const dmn_range_t *cut, uint32_t k, bool keep_whole,
                                      uint32_t *whole, uint64_t *bytes)
{
    uint32_t m = 0, r = 0, e = *n, dropped = 0;
    dmn_range_t up = {0, 0};
    bool has_up = false;
    for (uint32_t c = 0; c < k; c++) {
        uint64_t lo = cut[c].base, hi = cut[c].base + cut[c].len;
        if (hi <= lo)
            continue; /* empty (or wrapping: gate_ranges_in_order) */
        if (has_up && up.base + up.len <= lo) {
            tmp[m++] = up;
            has_up = false;
        }
        while (r < e && v[r].base + v[r].len <= lo)
            tmp[m++] = v[r++];
        /* the ranges it overlaps: up and v[r, j); a, b: from the start of
         * the first to the end of the last */
        uint32_t over = 0, j = r;
        uint64_t a = 0, b = 0;
        if (has_up && up.base < hi) {
            over = 1;
            a = up.base;
            b = up.base + up.len;
        }
        for (; j < e && v[j].base < hi; j++, over++) {
            a = over ? a : v[j].base;
            b = v[j].base + v[j].len;
        }
        if (over == 0)
            continue;
        dmn_range_t below = {a, a < lo ? lo - a : 0}, above = {hi, b > hi ? b - hi : 0};
        uint32_t count = m + has_up + (e - r);
        if (count - over + (below.len > 0) + (above.len > 0) > cap) { /* by one */
            if (keep_whole) {
                if (whole)
                    (*whole)++;
                continue;
            }
            dmn_range_t *lost = below.len < above.len ? &below : &above;
            dropped++;
            *bytes += lost->len;
            lost->len = 0;
        }
        if (below.len)
            tmp[m++] = below;
        has_up = above.len > 0;
        up = above;
        r = j;
    }
    if (has_up)
        tmp[m++] = up;
    memcpy(&tmp[m], &v[r], (e - r) * sizeof(*v));
    m += e - r;
    memcpy(v, tmp, m * sizeof(*v));
    *n = m;
    return dropped;
}

uint32_t shim_gate_ranges_cut(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t *tmp,
                              const dmn_range_t *cut, uint32_t k, bool keep_whole, uint32_t *whole,
                              uint64_t *dropped_bytes)
{
    uint64_t bytes = 0;
    uint32_t dropped = 0;
    assert(*n <= cap);
    /* not a store of gate_plan.c's: the same bytes, in order */
    if (!gate_ranges_in_order(v, *n, true))
        shim_gate_ranges_coalesce(v, n);
    /* cuts out of order: one pass for each run of them in order */
    for (uint32_t c = 0, d; c < k && *n; c = d) {
        for (d = c + 1; d < k && gate_ranges_in_order(&cut[d - 1], 2, false); d++)
            ;
        dropped += gate_ranges_cut_merge(v, n, cap, tmp, &cut[c], d - c, keep_whole, whole, &bytes);
    }
    if (dropped_bytes)
        *dropped_bytes = bytes;
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

/* The first range of the coalesced store v that ends at or after x (one
 * that touches x counts): an index in [0, n]. */
static uint32_t gate_ranges_first_reaching(const dmn_range_t *v, uint32_t n, uint64_t x)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v[mid].base + v[mid].len < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Joins [lo, hi) with the stored ranges v[i, j) (at least one) into v[i]. */
static void gate_ranges_join(dmn_range_t *v, uint32_t *n, uint32_t i, uint32_t j, uint64_t lo,
                             uint64_t hi)
{
    lo = v[i].base < lo ? v[i].base : lo;
    uint64_t end = v[j - 1].base + v[j - 1].len;
    hi = end > hi ? end : hi;
    v[i] = (dmn_range_t){lo, hi - lo};
    memmove(&v[i + 1], &v[j], (*n - j) * sizeof(*v));
    *n -= j - i - 1;
}

/* Inserts r at v[i] (room for it). */
static void gate_ranges_insert(dmn_range_t *v, uint32_t *n, uint32_t i, dmn_range_t r)
{
    memmove(&v[i + 1], &v[i], (*n - i) * sizeof(*v));
    v[i] = r;
    (*n)++;
}

/* [*i, *j): the ranges of the coalesced store that r overlaps or touches. */
static void gate_ranges_meeting(const dmn_range_t *v, uint32_t n, dmn_range_t r, uint32_t *i,
                                uint32_t *j)
{
    *i = *j = gate_ranges_first_reaching(v, n, r.base);
    while (*j < n && v[*j].base <= r.base + r.len)
        (*j)++;
}

bool shim_gate_ranges_add_whole(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t r)
{
    if (r.len == 0 || cap == 0)
        return false;
    uint64_t lo = r.base, hi = r.base + r.len;
    uint32_t i, j;
    gate_ranges_meeting(v, *n, r, &i, &j);
    if (i < j) {
        gate_ranges_join(v, n, i, j, lo, hi);
        return false;
    }
    if (*n < cap) {
        gate_ranges_insert(v, n, i, r);
        return false;
    }
    /* full: joined with the nearer neighbour, the lower one on a tie */
    uint64_t below = i > 0 ? lo - (v[i - 1].base + v[i - 1].len) : UINT64_MAX;
    uint64_t above = i < *n ? v[i].base - hi : UINT64_MAX;
    if (below <= above)
        i--;
    gate_ranges_join(v, n, i, i + 1, lo, hi);
    return true;
}

uint64_t shim_gate_ranges_add_fill(dmn_range_t *v, uint32_t *n, uint32_t cap, dmn_range_t r)
{
    if (r.len == 0)
        return 0;
    uint32_t i, j;
    gate_ranges_meeting(v, *n, r, &i, &j);
    if (i < j)
        gate_ranges_join(v, n, i, j, r.base, r.base + r.len);
    else if (*n < cap)
        gate_ranges_insert(v, n, i, r);
    else
        return r.len;
    return 0;
}

#ifndef NDEBUG /* for assert() alone */
/* Whether the store is coalesced: sorted by base, none empty or wrapping,
 * no two overlapping or touching. */
static bool gate_ranges_coalesced(const dmn_range_t *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i].len == 0 || v[i].base + v[i].len < v[i].base ||
            (i > 0 && v[i - 1].base + v[i - 1].len >= v[i].base))
            return false;
    return true;
}
#endif

void shim_gate_ranges_outside(const dmn_range_t *v, uint32_t n, const dmn_range_t *w, uint32_t m,
                              void (*fn)(void *arg, dmn_range_t piece), void *arg)
{
    /* the gate does not coalesce its stores before this: they stay so */
    assert(gate_ranges_coalesced(v, n));
    /* v[i]: the first stored range that may meet w[k]; the ranges below it
     * end at or below w[k - 1]'s base, so below w[k]'s when w is sorted */
    uint32_t i = 0;
    for (uint32_t k = 0; k < m; k++) {
        uint64_t p = w[k].base, end = w[k].base + w[k].len;
        if (k > 0 && p < w[k - 1].base)
            i = 0; /* out of order: a pass of its own */
        while (i < n && v[i].base + v[i].len <= p)
            i++;
        /* v[j] for j >= i ends above p: a piece before it, then p past it;
         * the last one met may reach into w[k + 1], so i stays */
        for (uint32_t j = i; j < n && p < end && v[j].base < end; j++) {
            if (v[j].base > p)
                fn(arg, (dmn_range_t){p, v[j].base - p});
            p = v[j].base + v[j].len;
        }
        if (p < end)
            fn(arg, (dmn_range_t){p, end - p});
    }
}

/* Keeps in the min-heap h (*s of cap) the cap largest values offered. */
static void gate_ranges_heap_offer(uint64_t *h, uint32_t *s, uint32_t cap, uint64_t g)
{
    uint32_t i;
    if (*s < cap) {
        for (i = (*s)++; i > 0 && h[(i - 1) / 2] > g; i = (i - 1) / 2)
            h[i] = h[(i - 1) / 2];
        h[i] = g;
        return;
    }
    if (g <= h[0])
        return;
    for (i = 0;;) {
        uint32_t c = 2 * i + 1;
        if (c >= *s)
            break;
        if (c + 1 < *s && h[c + 1] < h[c])
            c++;
        if (h[c] >= g)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = g;
}

uint32_t shim_gate_ranges_cover(dmn_range_t *out, uint32_t cap, uint64_t *scratch, size_t n,
                                bool (*at)(const void *arg, size_t i, dmn_range_t *r),
                                const void *arg, bool *coarse)
{
    *coarse = false;
    if (cap == 0)
        return 0;
    /* the cap largest gaps between the ranges: covering every gap up to
     * the least of them leaves at most cap - 1 gaps, cap ranges */
    uint32_t held = 0, gaps = 0;
    uint64_t end = 0, join = 0;
    bool any = false;
    dmn_range_t r;
    for (size_t i = 0; i < n; i++) {
        if (!at(arg, i, &r) || r.len == 0)
            continue;
        if (any && r.base > end) {
            gaps += gaps < cap;
            gate_ranges_heap_offer(scratch, &held, cap, r.base - end);
        }
        end = any && end > r.base + r.len ? end : r.base + r.len;
        any = true;
    }
    /* gaps of exactly join: as many kept as there is room for (the first) */
    uint32_t spare = 0;
    if (gaps >= cap) {
        join = scratch[0];
        *coarse = true;
        spare = cap - 1;
        for (uint32_t k = 0; k < held; k++)
            spare -= scratch[k] > join;
    }
    uint32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!at(arg, i, &r) || r.len == 0)
            continue;
        uint64_t e = m ? out[m - 1].base + out[m - 1].len : 0;
        bool keep_gap = m && r.base > e && r.base - e == join && spare > 0;
        if (m && (r.base <= e || r.base - e <= join) && !keep_gap) {
            if (r.base + r.len > e)
                out[m - 1].len = r.base + r.len - out[m - 1].base;
        } else {
            spare -= keep_gap;
            out[m++] = r;
        }
    }
    return m;
}
