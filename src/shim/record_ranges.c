/* Touched-range arithmetic of the recorder: see record_ranges.h. */
#include "shim/record_ranges.h"

#include <stdlib.h>

static int rec_range_cmp(const void *a, const void *b)
{
    const eng_range_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr ? 1 : 0;
}

size_t shim_rec_ranges_merge(eng_range_t *r, size_t n)
{
    if (n < 2)
        return n;
    qsort(r, n, sizeof(*r), rec_range_cmp);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t end = r[k].addr + r[k].len;
        if (r[i].addr <= end) {
            uint64_t iend = r[i].addr + r[i].len;
            if (iend > end)
                r[k].len = iend - r[k].addr;
            r[k].mode |= r[i].mode;
        } else {
            r[++k] = r[i];
        }
    }
    return k + 1;
}

size_t shim_rec_ranges_from_faults(const uint64_t *addrs, size_t n, uint64_t gran, eng_range_t *out,
                                   size_t max)
{
    if (gran == 0 || (gran & (gran - 1)) != 0)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        eng_range_t r = {.addr = addrs[i] & ~(gran - 1), .len = gran, .mode = ENG_ACCESS_RW};
        if (k < max) {
            out[k++] = r;
        } else {
            k = shim_rec_ranges_merge(out, k); /* make room before giving up */
            if (k == max)
                break;
            out[k++] = r;
        }
    }
    return shim_rec_ranges_merge(out, k);
}

size_t shim_rec_ranges_clip(const eng_range_t *in, size_t n, const shim_rec_alloc_t *live,
                            size_t nlive, eng_range_t *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t lo = in[i].addr, hi = in[i].addr + in[i].len;
        if (hi < lo)
            hi = UINT64_MAX;
        for (size_t j = 0; j < nlive && k < max; j++) {
            uint64_t a = live[j].base, b = live[j].base + live[j].size;
            uint64_t s = lo > a ? lo : a, e = hi < b ? hi : b;
            if (s < e)
                out[k++] = (eng_range_t){.addr = s, .len = e - s, .mode = in[i].mode};
        }
    }
    return k;
}
