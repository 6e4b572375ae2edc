/* eng_ranges: see ranges.h. */
#include "engine/ranges.h"

#include <stdlib.h>

static int ranges_cmp(const void *a, const void *b)
{
    uint64_t x = ((const eng_range_t *)a)->addr, y = ((const eng_range_t *)b)->addr;
    return (x > y) - (x < y);
}

/* Insertion sort by addr, stable like glibc's merge sort, so equal addresses
 * keep their order: cheaper than qsort's call per comparison on the few
 * ranges of a launch, often in order already. */
static void sort_small(eng_range_t *r, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        eng_range_t x = r[i];
        size_t j = i;
        for (; j > 0 && r[j - 1].addr > x.addr; j--)
            r[j] = r[j - 1];
        r[j] = x;
    }
}

size_t eng_ranges_normalise(eng_range_t *r, size_t n)
{
    size_t out = 0;
    if (n <= ENG_RANGES_SORT_SMALL)
        sort_small(r, n);
    else
        qsort(r, n, sizeof(*r), ranges_cmp);
    for (size_t i = 0; i < n; i++) {
        if (r[i].len > UINT64_MAX - r[i].addr)
            r[i].len = UINT64_MAX - r[i].addr; /* saturate: addr + len never wraps */
        if (r[i].len == 0)
            continue;
        if (out && r[i].addr <= r[out - 1].addr + r[out - 1].len) {
            uint64_t end = r[i].addr + r[i].len;
            if (end > r[out - 1].addr + r[out - 1].len)
                r[out - 1].len = end - r[out - 1].addr;
            r[out - 1].mode |= r[i].mode;
            continue;
        }
        r[out++] = r[i];
    }
    return out;
}
