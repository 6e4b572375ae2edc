/* Tests of the migration's natural merge sort against qsort with the
 * comparisons migrate.c used: the same array, element for element, on the
 * shapes the migration sorts (in order, reversed, a few runs, long stretches
 * of one ticket) and on random arrays full of ties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/runsort.h"
#include "trand.h"

#define MAXN 5000u

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* The reference: migrate.c's comparisons before the natural merge sort. */
static int cmp_ticket(const void *a, const void *b)
{
    eng_ticket_t x = *(const eng_ticket_t *)a, y = *(const eng_ticket_t *)b;
    return (x > y) - (x < y);
}

static int cmp_move(const void *a, const void *b)
{
    const eng_move_t *x = a, *y = b;
    if (x->chunk != y->chunk)
        return (x->chunk > y->chunk) - (x->chunk < y->chunk);
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

enum shape { RANDOM, SORTED, REVERSED, RUNS, STRETCHES, ALMOST, NSHAPES };

/* v[0..n) of the given shape, values below range (a small range: many ties). */
static void make(uint64_t *v, uint32_t n, enum shape s, uint64_t range)
{
    for (uint32_t i = 0; i < n; i++)
        v[i] = trand_next(&rng) % range;
    if (s == SORTED || s == REVERSED || s == ALMOST)
        qsort(v, n, sizeof(*v), cmp_ticket);
    if (s == REVERSED)
        for (uint32_t i = 0, j = n - 1; n > 0 && i < j; i++, j--) {
            uint64_t t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
    if (s == ALMOST) /* a few elements moved anywhere */
        for (uint32_t k = 0; n > 1 && k < 3; k++)
            v[trand_next(&rng) % n] = trand_next(&rng) % range;
    if (s == RUNS) { /* a few runs, each up or down */
        for (uint32_t i = 0; i < n;) {
            uint32_t len = 1 + (uint32_t)(trand_next(&rng) % (n / 3 + 1));
            if (len > n - i)
                len = n - i;
            qsort(v + i, len, sizeof(*v), cmp_ticket);
            if (trand_next(&rng) & 1)
                for (uint32_t a = i, b = i + len - 1; a < b; a++, b--) {
                    uint64_t t = v[a];
                    v[a] = v[b];
                    v[b] = t;
                }
            i += len;
        }
    }
    if (s == STRETCHES) { /* long stretches of one value, as the slots' tickets */
        for (uint32_t i = 0; i < n;) {
            uint32_t len = 1 + (uint32_t)(trand_next(&rng) % 200);
            uint64_t x = trand_next(&rng) % range;
            for (uint32_t k = 0; k < len && i < n; k++)
                v[i++] = x;
        }
    }
}

static uint32_t pick_n(uint32_t round)
{
    if (round < 70) /* every small size, the migration's batches */
        return round;
    return (uint32_t)(trand_next(&rng) % (round % 4 == 0 ? MAXN + 1 : 600));
}

static void test_tickets_match_qsort(void **state)
{
    (void)state;
    uint64_t *v = malloc(MAXN * sizeof(*v)), *ref = malloc(MAXN * sizeof(*ref));
    eng_ticket_t *tmp = malloc(MAXN * sizeof(*tmp));
    assert_non_null(v);
    assert_non_null(ref);
    assert_non_null(tmp);
    static const uint64_t ranges[] = {2, 7, 1000, UINT64_MAX};
    for (uint32_t round = 0; round < 400; round++)
        for (int s = 0; s < NSHAPES; s++)
            for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
                uint32_t n = pick_n(round);
                make(v, n, (enum shape)s, ranges[r]);
                memcpy(ref, v, n * sizeof(*v));
                qsort(ref, n, sizeof(*ref), cmp_ticket);
                eng_runsort_tickets(v, n, tmp);
                assert_memory_equal(v, ref, n * sizeof(*v));
            }
    free(v);
    free(ref);
    free(tmp);
}

static void test_moves_match_qsort(void **state)
{
    (void)state;
    uint64_t *k = malloc(MAXN * sizeof(*k)), *b = malloc(MAXN * sizeof(*b));
    eng_move_t *v = malloc(MAXN * sizeof(*v)), *ref = malloc(MAXN * sizeof(*ref));
    eng_move_t *tmp = malloc(MAXN * sizeof(*tmp));
    assert_non_null(k);
    assert_non_null(b);
    assert_non_null(v);
    assert_non_null(ref);
    assert_non_null(tmp);
    for (uint32_t round = 0; round < 400; round++)
        for (int s = 0; s < NSHAPES; s++) {
            uint32_t n = pick_n(round);
            /* chunks of the given shape, few distinct (ties on chunk); bytes
             * from a few values (ties on both, as the same move twice) */
            make(k, n, (enum shape)s, round % 2 ? 9 : 1u << 20);
            make(b, n, RANDOM, round % 3 ? 3 : UINT64_MAX);
            for (uint32_t i = 0; i < n; i++) {
                memset(&v[i], 0, sizeof(v[i]));
                v[i].chunk = (uint32_t)k[i];
                v[i].bytes = b[i];
            }
            memcpy(ref, v, n * sizeof(*v));
            qsort(ref, n, sizeof(*ref), cmp_move);
            eng_runsort_moves(v, n, tmp);
            for (uint32_t i = 0; i < n; i++) {
                assert_int_equal(v[i].chunk, ref[i].chunk);
                assert_int_equal(v[i].bytes, ref[i].bytes);
            }
        }
    free(k);
    free(b);
    free(v);
    free(ref);
    free(tmp);
}

/* In order: no element is written, the scratch array is not touched. */
static void test_sorted_needs_no_scratch(void **state)
{
    (void)state;
    eng_ticket_t v[] = {1, 1, 2, 5, 5, 9};
    eng_runsort_tickets(v, 6, NULL);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[5], 9);
    eng_ticket_t d[] = {9, 5, 5, 2, 1, 1}; /* reversed in place */
    eng_runsort_tickets(d, 6, NULL);
    for (int i = 0; i < 6; i++)
        assert_int_equal(d[i], v[i]);
    eng_move_t m[] = {{4, 3}, {2, 3}, {1, 1}};
    eng_runsort_moves(m, 3, NULL);
    assert_int_equal(m[0].chunk, 1);
    assert_int_equal(m[1].bytes, 2);
    assert_int_equal(m[2].bytes, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tickets_match_qsort),
        cmocka_unit_test(test_moves_match_qsort),
        cmocka_unit_test(test_sorted_needs_no_scratch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
