/*
 * Growth of the heap arrays that modules append to (pending messages, heaps,
 * region tables, recorded allocations). One place decides how much to grow
 * and checks the arithmetic, so no call site can wrap `cap * 2` or
 * `cap * elem` into a smaller buffer than it then writes to.
 *
 * Capacities are counted in elements and passed as size_t. A site that stores
 * its capacity in a narrower type passes that type's maximum as `max`, so the
 * capacity handed back always fits where it is stored; com_array_grow_u32 does
 * that for the common uint32_t case.
 *
 * The array belongs to the caller; these functions only ever realloc it.
 * Thread-safety: pure apart from the allocator; callers serialise access to
 * their own array.
 */
#ifndef COM_ARRAY_H
#define COM_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

/*
 * The capacity an array of `cap` elements of `elem` bytes should grow to so
 * that it holds at least `need`: `first` when empty, otherwise twice `cap`,
 * and never less than `need`. The result is clamped to `max` elements and to
 * PTRDIFF_MAX bytes, the largest object C can index. When need <= cap the
 * answer is cap itself.
 *
 * GMUX_ERR_CAPACITY when need > max, GMUX_ERR_NOMEM when need elements would
 * not fit in PTRDIFF_MAX bytes, GMUX_ERR_INVALID when elem is 0. *cap_p is
 * written only on success. For sites that must allocate the new array
 * themselves (a ring buffer copied out in order, a calloc'd array).
 */
gmux_status_t com_array_next_cap(size_t cap, size_t need, size_t elem, size_t first, size_t max,
                                 size_t *cap_p);

/*
 * Makes room for at least `need` elements of `elem` bytes in *arr_p, whose
 * capacity is *cap_p, with realloc and the policy of com_array_next_cap. New
 * space is not zeroed. Nothing is allocated when need <= *cap_p.
 *
 * On any error (those of com_array_next_cap, or GMUX_ERR_NOMEM when realloc
 * fails) *arr_p and *cap_p are left as they were and the array stays valid.
 */
gmux_status_t com_array_grow(void **arr_p, size_t *cap_p, size_t need, size_t elem, size_t first,
                             size_t max);

/*
 * com_array_grow for an array whose capacity is stored as uint32_t: max is
 * UINT32_MAX, so the capacity written back always fits. Same errors and the
 * same untouched-on-error promise.
 */
gmux_status_t com_array_grow_u32(void **arr_p, uint32_t *cap_p, size_t need, size_t elem,
                                 size_t first);

#endif /* COM_ARRAY_H */
