/* Tests of a task's stream rules (sim/trace_check.h): the live set against a
 * plain list, and the work of large live sets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/trace_check.h"

static uint64_t rng = 42;
static uint64_t next_rand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 17;
}

static gmux_status_t do_alloc(sim_check_t *c, uint64_t id, uint64_t base, uint64_t size)
{
    sim_event_t ev = {.kind = SIM_EV_ALLOC};
    ev.u.alloc.id = id;
    ev.u.alloc.base = base;
    ev.u.alloc.size = size;
    char why[200];
    return sim_check_event(c, &ev, why, sizeof(why));
}

static gmux_status_t do_free(sim_check_t *c, uint64_t id)
{
    sim_event_t ev = {.kind = SIM_EV_FREE};
    ev.u.free.id = id;
    char why[200];
    return sim_check_event(c, &ev, why, sizeof(why));
}

/* The plain model: live regions in an unsorted array. */
typedef struct model {
    sim_region_t v[64];
    size_t n;
} model_t;

static bool model_alloc(model_t *m, uint64_t id, uint64_t base, uint64_t size)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].id == id || (base < m->v[i].base + m->v[i].size && m->v[i].base < base + size))
            return false;
    m->v[m->n++] = (sim_region_t){.base = base, .size = size, .id = id};
    return true;
}

static bool model_free(model_t *m, uint64_t id)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].id == id) {
            m->v[i] = m->v[--m->n];
            return true;
        }
    return false;
}

static const sim_region_t *model_find(const model_t *m, uint64_t addr, uint64_t len)
{
    for (size_t i = 0; i < m->n; i++)
        if (addr >= m->v[i].base && addr - m->v[i].base <= m->v[i].size &&
            len <= m->v[i].size - (addr - m->v[i].base))
            return &m->v[i];
    return NULL;
}

/* Random allocations (some overlapping, some with a live id), frees (some of
 * ids not live) and lookups over a small address space: every answer is the
 * plain model's. */
static void test_live_set_matches_model(void **state)
{
    (void)state;
    sim_check_t c;
    sim_check_init(&c, 1);
    model_t m = {.n = 0};
    uint64_t live = 0, peak = 0;
    for (int step = 0; step < 300000; step++) {
        uint64_t r = next_rand();
        uint64_t id = r % 48, base = (next_rand() % 4096) * 16, size = 1 + next_rand() % 200;
        switch (r % 5) {
        case 0:
        case 1: {
            bool ok = m.n < 40 && model_alloc(&m, id, base, size);
            if (m.n >= 40 && !ok)
                break;
            assert_int_equal(do_alloc(&c, id, base, size), ok ? GMUX_OK : GMUX_ERR_PARSE);
            if (ok) {
                live += size;
                peak = live > peak ? live : peak;
            }
            break;
        }
        case 2: {
            uint64_t sz = 0;
            for (size_t i = 0; i < m.n; i++)
                if (m.v[i].id == id)
                    sz = m.v[i].size;
            bool ok = model_free(&m, id);
            assert_int_equal(do_free(&c, id), ok ? GMUX_OK : GMUX_ERR_PARSE);
            live -= ok ? sz : 0;
            break;
        }
        default: {
            uint64_t len = next_rand() % 64;
            const sim_region_t *want = model_find(&m, base, len);
            const sim_region_t *got = sim_check_find(&c, base, len);
            assert_int_equal(want == NULL, got == NULL);
            if (want) {
                assert_int_equal(got->id, want->id);
                assert_int_equal(got->base, want->base);
                assert_int_equal(got->size, want->size);
            }
            break;
        }
        }
        assert_int_equal(c.n, m.n);
        assert_int_equal(c.live_bytes, live);
        assert_int_equal(c.peak_bytes, peak);
    }
    sim_check_fini(&c);
}

/* 200 000 live allocations in random address order, looked up, then freed in
 * another order: the work grows as n log n (it was quadratic in the live
 * allocations: 23 s to load a trace with 100 000). */
static void test_many_live_allocations(void **state)
{
    (void)state;
    const uint64_t n = 200000;
    uint64_t *perm = malloc(n * sizeof(*perm));
    assert_non_null(perm);
    for (uint64_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint64_t i = n - 1; i > 0; i--) {
        uint64_t j = next_rand() % (i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    sim_check_t c;
    sim_check_init(&c, 1);
    for (uint64_t i = 0; i < n; i++) /* id i at slot perm[i] */
        assert_int_equal(do_alloc(&c, i * 7 + 3, (perm[i] + 1) << 20, 4096), GMUX_OK);
    assert_int_equal(c.n, n);
    assert_int_equal(do_alloc(&c, 3, 1ull << 50, 4096), GMUX_ERR_PARSE);              /* id live */
    assert_int_equal(do_alloc(&c, 1, ((perm[5] + 1) << 20) + 64, 8), GMUX_ERR_PARSE); /* overlap */
    for (uint64_t i = 0; i < n; i += 1000) {
        const sim_region_t *r = sim_check_find(&c, ((perm[i] + 1) << 20) + 100, 8);
        assert_non_null(r);
        assert_int_equal(r->id, i * 7 + 3);
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = (i * 7919) % n; /* 7919 is prime to n: every id once */
        assert_int_equal(do_free(&c, k * 7 + 3), GMUX_OK);
    }
    assert_int_equal(c.n, 0);
    assert_int_equal(c.live_bytes, 0);
    assert_int_equal(c.peak_bytes, n * 4096);
    /* n log2 n is 3.5 M; quadratic, 2e10 */
    assert_true(c.work < 100 * 18 * n);
    sim_check_fini(&c);
    free(perm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_set_matches_model),
        cmocka_unit_test(test_many_live_allocations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
