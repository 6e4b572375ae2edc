/* Tests of array growth: the capacity policy and its refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "common/array.h"

static void test_grow_from_empty(void **state)
{
    (void)state;
    uint32_t *a = NULL;
    size_t cap = 0;
    assert_int_equal(com_array_grow((void **)&a, &cap, 1, sizeof(*a), 16, SIZE_MAX), GMUX_OK);
    assert_non_null(a);
    assert_int_equal(cap, 16);
    a[15] = 7; /* the whole capacity is writable (ASan checks) */
    free(a);
}

static void test_noop_when_room(void **state)
{
    (void)state;
    uint32_t *a = malloc(8 * sizeof(*a));
    assert_non_null(a);
    uint32_t *before = a;
    size_t cap = 8;
    assert_int_equal(com_array_grow((void **)&a, &cap, 8, sizeof(*a), 16, SIZE_MAX), GMUX_OK);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 8);
    assert_int_equal(com_array_grow((void **)&a, &cap, 0, sizeof(*a), 16, SIZE_MAX), GMUX_OK);
    assert_int_equal(cap, 8);
    free(a);
    /* a capacity that already covers need allocates nothing */
    uint32_t *none = NULL;
    cap = 5;
    assert_int_equal(com_array_grow((void **)&none, &cap, 3, sizeof(*none), 16, SIZE_MAX), GMUX_OK);
    assert_null(none);
    assert_int_equal(cap, 5);
}

static void test_doubling_keeps_contents(void **state)
{
    (void)state;
    uint64_t *a = NULL;
    size_t cap = 0, n = 0;
    const size_t want[] = {4, 8, 16, 32, 64};
    size_t seen = 0;
    for (uint64_t i = 0; i < 64; i++) {
        size_t old = cap;
        assert_int_equal(com_array_grow((void **)&a, &cap, n + 1, sizeof(*a), 4, SIZE_MAX),
                         GMUX_OK);
        if (cap != old) {
            assert_true(seen < sizeof(want) / sizeof(want[0]));
            assert_int_equal(cap, want[seen++]);
        }
        a[n++] = i * 3;
    }
    assert_int_equal(seen, 5);
    for (uint64_t i = 0; i < 64; i++)
        assert_int_equal(a[i], i * 3);
    free(a);
}

static void test_big_need_jumps_to_need(void **state)
{
    (void)state;
    char *a = NULL;
    size_t cap = 0;
    /* first is too small for the first request */
    assert_int_equal(com_array_grow((void **)&a, &cap, 100, 1, 16, SIZE_MAX), GMUX_OK);
    assert_int_equal(cap, 100);
    /* twice the capacity is too small */
    assert_int_equal(com_array_grow((void **)&a, &cap, 1000, 1, 16, SIZE_MAX), GMUX_OK);
    assert_int_equal(cap, 1000);
    a[999] = 1;
    /* twice the capacity is enough */
    assert_int_equal(com_array_grow((void **)&a, &cap, 1001, 1, 16, SIZE_MAX), GMUX_OK);
    assert_int_equal(cap, 2000);
    free(a);
}

/*
 * Asserts that growing from cap to need is refused with want and leaves the
 * array and its capacity as they were. The refusal must come before realloc:
 * cap is far larger than the real 16-byte buffer, which is never touched.
 */
static void assert_refused(size_t cap, size_t need, size_t elem, size_t max, gmux_status_t want)
{
    char *a = malloc(16);
    assert_non_null(a);
    char *before = a;
    size_t c = cap;
    assert_int_equal(com_array_grow((void **)&a, &c, need, elem, 16, max), want);
    assert_ptr_equal(a, before);
    assert_int_equal(c, cap);
    size_t ncap = 7;
    assert_int_equal(com_array_next_cap(cap, need, elem, 16, max, &ncap), want);
    assert_int_equal(ncap, 7);
    free(a);
}

static void test_doubling_overflow_refused(void **state)
{
    (void)state;
    /* cap * 2 wraps to 0 in size_t */
    assert_refused(SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 2, 1, SIZE_MAX, GMUX_ERR_NOMEM);
    /* need itself is the largest size_t */
    assert_refused(SIZE_MAX - 1, SIZE_MAX, 1, SIZE_MAX, GMUX_ERR_NOMEM);
}

static void test_byte_size_overflow_refused(void **state)
{
    (void)state;
    /* cap * 2 fits in size_t, cap * 2 * 8 bytes does not */
    assert_refused(SIZE_MAX / 16 + 1, SIZE_MAX / 16 + 2, 8, SIZE_MAX, GMUX_ERR_NOMEM);
    /* from empty: need alone is too many bytes */
    assert_refused(0, SIZE_MAX / 4, 8, SIZE_MAX, GMUX_ERR_NOMEM);
    /* a huge element */
    assert_refused(0, 2, SIZE_MAX / 2, SIZE_MAX, GMUX_ERR_NOMEM);
}

static void test_next_cap_clamps_to_bytes(void **state)
{
    (void)state;
    /* doubling would pass PTRDIFF_MAX bytes: clamp to the most that fits */
    size_t elem = 8, lim = PTRDIFF_MAX / 8, ncap = 0;
    assert_int_equal(com_array_next_cap(lim / 2 + 1, lim / 2 + 2, elem, 16, SIZE_MAX, &ncap),
                     GMUX_OK);
    assert_int_equal(ncap, lim);
    /* one past it is refused */
    ncap = 123;
    assert_int_equal(com_array_next_cap(lim, lim + 1, elem, 16, SIZE_MAX, &ncap), GMUX_ERR_NOMEM);
    assert_int_equal(ncap, 123);
    /* room already: the capacity is kept */
    assert_int_equal(com_array_next_cap(40, 40, elem, 16, SIZE_MAX, &ncap), GMUX_OK);
    assert_int_equal(ncap, 40);
    assert_int_equal(com_array_next_cap(40, 41, 0, 16, SIZE_MAX, &ncap), GMUX_ERR_INVALID);
}

static void test_max_bound(void **state)
{
    (void)state;
    uint32_t *a = NULL;
    size_t cap = 0;
    /* first is clamped to max */
    assert_int_equal(com_array_grow((void **)&a, &cap, 1, sizeof(*a), 16, 10), GMUX_OK);
    assert_int_equal(cap, 10);
    a[9] = 1;
    /* past max: refused, array untouched */
    assert_refused(10, 11, sizeof(*a), 10, GMUX_ERR_CAPACITY);
    /* doubling is clamped to max rather than refused */
    size_t ncap = 0;
    assert_int_equal(com_array_next_cap(6, 7, sizeof(*a), 16, 10, &ncap), GMUX_OK);
    assert_int_equal(ncap, 10);
    /* a uint32_t capacity: doubling past UINT32_MAX stops at it */
    assert_int_equal(
        com_array_next_cap((size_t)1 << 31, ((size_t)1 << 31) + 1, 1, 16, UINT32_MAX, &ncap),
        GMUX_OK);
    assert_int_equal(ncap, UINT32_MAX);
    ncap = 5;
    assert_int_equal(
        com_array_next_cap(UINT32_MAX, (size_t)UINT32_MAX + 1, 1, 16, UINT32_MAX, &ncap),
        GMUX_ERR_CAPACITY);
    assert_int_equal(ncap, 5);
    free(a);
}

static void test_u32_capacity(void **state)
{
    (void)state;
    uint16_t *a = NULL;
    uint32_t cap = 0;
    assert_int_equal(com_array_grow_u32((void **)&a, &cap, 1, sizeof(*a), 8), GMUX_OK);
    assert_int_equal(cap, 8);
    assert_int_equal(com_array_grow_u32((void **)&a, &cap, 9, sizeof(*a), 8), GMUX_OK);
    assert_int_equal(cap, 16);
    a[15] = 1;
    free(a);
    /* one more than a uint32_t can count: refused before realloc, untouched */
    char *b = malloc(16);
    assert_non_null(b);
    char *before = b;
    cap = UINT32_MAX;
    assert_int_equal(com_array_grow_u32((void **)&b, &cap, (size_t)UINT32_MAX + 1, 1, 8),
                     GMUX_ERR_CAPACITY);
    assert_ptr_equal(b, before);
    assert_int_equal(cap, UINT32_MAX);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_from_empty),
        cmocka_unit_test(test_noop_when_room),
        cmocka_unit_test(test_doubling_keeps_contents),
        cmocka_unit_test(test_big_need_jumps_to_need),
        cmocka_unit_test(test_doubling_overflow_refused),
        cmocka_unit_test(test_byte_size_overflow_refused),
        cmocka_unit_test(test_next_cap_clamps_to_bytes),
        cmocka_unit_test(test_max_bound),
        cmocka_unit_test(test_u32_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
