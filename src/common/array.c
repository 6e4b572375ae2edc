/* Growth of heap arrays with checked arithmetic (common/array.h). */
#include "common/array.h"

#include <stdint.h>
#include <stdlib.h>

gmux_status_t com_array_next_cap(size_t cap, size_t need, size_t elem, size_t first, size_t max,
                                 size_t *cap_p)
{
    if (elem == 0)
        return GMUX_ERR_INVALID;
    if (need <= cap) {
        *cap_p = cap;
        return GMUX_OK;
    }
    if (need > max)
        return GMUX_ERR_CAPACITY;
    /* Beyond PTRDIFF_MAX bytes, pointer differences inside the array overflow. */
    size_t limit = max;
    if (limit > PTRDIFF_MAX / elem)
        limit = PTRDIFF_MAX / elem;
    if (need > limit)
        return GMUX_ERR_NOMEM;
    /* cap < need <= limit <= PTRDIFF_MAX, so doubling cannot wrap. */
    size_t ncap = cap ? cap * 2 : first;
    if (ncap < need)
        ncap = need;
    if (ncap > limit)
        ncap = limit;
    *cap_p = ncap;
    return GMUX_OK;
}

gmux_status_t com_array_grow(void **arr_p, size_t *cap_p, size_t need, size_t elem, size_t first,
                             size_t max)
{
    size_t ncap;
    gmux_status_t st = com_array_next_cap(*cap_p, need, elem, first, max, &ncap);
    if (st != GMUX_OK || ncap == *cap_p)
        return st;
    void *a = realloc(*arr_p, ncap * elem);
    if (!a)
        return GMUX_ERR_NOMEM;
    *arr_p = a;
    *cap_p = ncap;
    return GMUX_OK;
}

gmux_status_t com_array_grow_u32(void **arr_p, uint32_t *cap_p, size_t need, size_t elem,
                                 size_t first)
{
    size_t cap = *cap_p;
    gmux_status_t st = com_array_grow(arr_p, &cap, need, elem, first, UINT32_MAX);
    if (st == GMUX_OK)
        *cap_p = (uint32_t)cap; /* at most UINT32_MAX: the max passed above */
    return st;
}
