/* eng_ranges: see ranges.h. */
#include "engine/ranges.h"

#include <stdlib.h>

static int ranges_cmp(const void *a, const void *b)
{
    uint64_t x = ((const eng_range_t *)a)->addr, y = ((const eng_range_t *)b)->addr;
    return (x > y) - (x < y);
}

size_t eng_ranges_normalise(eng_range_t *r, size_t n)
{
    size_t out = 0;
    if (n > 1)
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
