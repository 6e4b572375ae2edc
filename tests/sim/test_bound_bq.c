/* The transfer bound's bucket queue (sim_bq_t, sim/bound_impl.h) against a
 * plain reference: per chunk its bucket and when it last entered it; the top
 * is the chunk of the largest bucket that entered it last. The passes' counts
 * hang on which chunk the top is, so the test asks for that exact chunk after
 * every operation of long random runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/bound_impl.h"
#include "trand.h"

typedef struct ref_q {
    uint32_t nc, inf;
    uint32_t *bucket; /* INF32: not queued */
    uint64_t *stamp;  /* when it entered its bucket */
    uint64_t clock;
    uint32_t n;
} ref_q_t;

static void ref_set(ref_q_t *r, uint32_t c, uint32_t key)
{
    uint32_t b = key == INF32 ? r->inf : key;
    if (r->bucket[c] == b)
        return; /* keeps its place */
    if (r->bucket[c] == INF32)
        r->n++;
    r->bucket[c] = b;
    r->stamp[c] = ++r->clock;
}

static void ref_remove(ref_q_t *r, uint32_t c)
{
    if (r->bucket[c] != INF32)
        r->n--;
    r->bucket[c] = INF32;
}

static uint32_t ref_top(const ref_q_t *r)
{
    uint32_t best = INF32;
    for (uint32_t c = 0; c < r->nc; c++) {
        if (r->bucket[c] == INF32)
            continue;
        if (best == INF32 || r->bucket[c] > r->bucket[best] ||
            (r->bucket[c] == r->bucket[best] && r->stamp[c] > r->stamp[best]))
            best = c;
    }
    return best;
}

/* A key for a set: mostly near the top or a chunk's own, some INF32. */
static uint32_t pick_key(uint64_t *s, const ref_q_t *r, uint32_t nkeys, uint32_t c)
{
    switch (trand_next(s) % 6) {
    case 0:
        return INF32;
    case 1: /* its own: no move */
        return r->bucket[c] == INF32 || r->bucket[c] == r->inf ? INF32 : r->bucket[c];
    case 2: { /* next to the present top */
        uint32_t t = ref_top(r);
        if (t == INF32 || r->bucket[t] == r->inf)
            return (uint32_t)(trand_next(s) % (nkeys - 1));
        uint64_t k = r->bucket[t] + trand_next(s) % 3; /* its key - 1 to + 1 */
        k = k >= 1 ? k - 1 : 0;
        return k <= nkeys - 2 ? (uint32_t)k : nkeys - 2;
    }
    case 3: /* a few keys only: full buckets */
        return (uint32_t)(trand_next(s) % (nkeys - 1 < 4 ? nkeys - 1 : 4));
    default:
        return (uint32_t)(trand_next(s) % (nkeys - 1));
    }
}

static void check_same(const sim_bq_t *q, const ref_q_t *r)
{
    assert_int_equal(q->n, r->n);
    for (uint32_t c = 0; c < r->nc; c++) {
        assert_int_equal(sim_bq_queued(q, c), r->bucket[c] != INF32);
        if (r->bucket[c] != INF32)
            assert_int_equal(sim_bq_key(q, c), r->bucket[c] == r->inf ? INF32 : r->bucket[c]);
    }
    if (r->n)
        assert_int_equal(sim_bq_top(q), ref_top(r));
}

static void run_random(uint64_t seed, uint32_t nc, uint32_t nkeys, uint32_t ops)
{
    sim_bq_t q;
    assert_int_equal(sim_bq_init(&q, nc, nkeys), GMUX_OK);
    ref_q_t r = {.nc = nc, .inf = nkeys - 1};
    r.bucket = malloc(nc * sizeof(*r.bucket));
    r.stamp = calloc(nc, sizeof(*r.stamp));
    assert_non_null(r.bucket);
    assert_non_null(r.stamp);
    memset(r.bucket, 0xFF, nc * sizeof(*r.bucket));
    uint64_t s = seed;
    for (uint32_t i = 0; i < ops; i++) {
        uint32_t c = (uint32_t)(trand_next(&s) % nc), op = (uint32_t)(trand_next(&s) % 100);
        if (op < 55) {
            uint32_t key = pick_key(&s, &r, nkeys, c);
            sim_bq_set(&q, c, key);
            ref_set(&r, c, key);
        } else if (op < 80) {
            sim_bq_remove(&q, c);
            ref_remove(&r, c);
        } else if (op < 97) { /* what the passes do: take the top out */
            if (r.n) {
                uint32_t t = sim_bq_top(&q);
                sim_bq_remove(&q, t);
                ref_remove(&r, t);
            }
        } else if (op < 98) {
            sim_bq_clear(&q);
            for (uint32_t x = 0; x < nc; x++)
                ref_remove(&r, x);
        } else { /* drain */
            while (r.n) {
                uint32_t t = sim_bq_top(&q);
                assert_int_equal(t, ref_top(&r));
                sim_bq_remove(&q, t);
                ref_remove(&r, t);
            }
        }
        check_same(&q, &r);
    }
    free(r.bucket);
    free(r.stamp);
    sim_bq_free(&q);
}

/* Key counts of one, two and three bitmap levels and on their edges. */
static void test_matches_reference(void **state)
{
    (void)state;
    static const uint32_t nkeys[] = {2, 3, 64, 65, 66, 4097, 4098, 300000};
    static const uint32_t ncs[] = {1, 2, 7, 64, 200};
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t k = 0; k < sizeof(nkeys) / sizeof(nkeys[0]); k++)
        for (size_t n = 0; n < sizeof(ncs) / sizeof(ncs[0]); n++)
            run_random(seed + k * 31 + n, ncs[n], nkeys[k], 4000);
}

/* The top bucket empties while others stay: the top falls to the next one. */
static void test_top_falls_back(void **state)
{
    (void)state;
    sim_bq_t q;
    assert_int_equal(sim_bq_init(&q, 4, 5000), GMUX_OK);
    sim_bq_set(&q, 0, 3);
    sim_bq_set(&q, 1, 4000);
    sim_bq_set(&q, 2, INF32);
    assert_int_equal(sim_bq_top(&q), 2);
    sim_bq_set(&q, 2, 70); /* moves down */
    assert_int_equal(sim_bq_top(&q), 1);
    sim_bq_remove(&q, 1);
    assert_int_equal(sim_bq_top(&q), 2);
    sim_bq_set(&q, 3, 70);
    assert_int_equal(sim_bq_top(&q), 3); /* the last in, first */
    sim_bq_set(&q, 2, 70);               /* no move: keeps its place */
    assert_int_equal(sim_bq_top(&q), 3);
    sim_bq_remove(&q, 3);
    sim_bq_remove(&q, 2);
    assert_int_equal(sim_bq_top(&q), 0);
    assert_int_equal(q.n, 1);
    sim_bq_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_reference),
        cmocka_unit_test(test_top_falls_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
