/* Unit tests of the data-carrying simulated memory of the trace clients. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

#include "tmem.h"

#define CH   (64u << 10)
#define BASE 0x200000000000ull

static sim_params_t sp;

static tmem_t *mk(uint64_t budget, tmem_shared_t *sh, uint64_t device)
{
    sim_params_default(&sp);
    sp.chunk_bytes = CH;
    tmem_params_t p = {CH, budget, 64, sh, device, &sp};
    tmem_t *m = NULL;
    assert_int_equal(tmem_create(&p, &m), GMUX_OK);
    assert_int_equal(tmem_alloc(m, 1, BASE, 4 * CH), GMUX_OK);
    return m;
}

static void fill(tmem_t *m, uint64_t addr, uint64_t len)
{
    eng_backend_t be = tmem_backend(m);
    eng_ticket_t t;
    assert_int_equal(be.ops->prefetch(be.ctx, 0, addr, len, &t), GMUX_OK);
}

static const eng_range_t rw0 = {BASE + 100, 1000, ENG_ACCESS_RW};

/* A launch on a chunk that is not resident is an error; once filled it runs
 * and changes the contents. */
static void test_residency_checked(void **state)
{
    (void)state;
    tmem_t *m = mk(4 * CH, NULL, 0);
    uint64_t before = tmem_checksum(m);
    assert_int_equal(tmem_launch(m, 3, &rw0, 1), GMUX_ERR_STATE);
    assert_non_null(strstr(tmem_error(m), "not resident"));
    tmem_destroy(m);
    m = mk(4 * CH, NULL, 0);
    fill(m, BASE, CH);
    assert_int_equal(tmem_checksum(m), before); /* a fill moves, never changes */
    assert_int_equal(tmem_launch(m, 3, &rw0, 1), GMUX_OK);
    assert_int_not_equal(tmem_checksum(m), before);
    /* A range across two chunks needs both. */
    eng_range_t across = {BASE + CH - 8, 16, ENG_ACCESS_READ};
    assert_int_equal(tmem_launch(m, 3, &across, 1), GMUX_ERR_STATE);
    tmem_destroy(m);
}

/* Eviction writes back: the same launches with and without an eviction in
 * between give the same checksum; a discard of written data does not. */
static void test_writeback_and_discard(void **state)
{
    (void)state;
    tmem_t *a = mk(4 * CH, NULL, 0), *b = mk(4 * CH, NULL, 0), *c = mk(4 * CH, NULL, 0);
    eng_range_t w1 = {BASE + CH + 64, 4096, ENG_ACCESS_WRITE};
    tmem_t *all[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        fill(all[i], BASE, 2 * CH);
        assert_int_equal(tmem_launch(all[i], 1, &rw0, 1), GMUX_OK);
    }
    eng_backend_t be = tmem_backend(b);
    eng_ticket_t t;
    assert_int_equal(be.ops->evict(be.ctx, 0, BASE, CH, &t), GMUX_OK);
    assert_int_equal(tmem_stats(b)->resident, CH);
    fill(b, BASE, CH);
    be = tmem_backend(c);
    assert_int_equal(be.ops->discard(be.ctx, 0, BASE, CH), GMUX_OK);
    assert_int_equal(tmem_stats(c)->discarded, CH);
    fill(c, BASE, CH);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tmem_launch(all[i], 2, &w1, 1), GMUX_OK);
    assert_int_equal(tmem_checksum(a), tmem_checksum(b));
    assert_int_not_equal(tmem_checksum(a), tmem_checksum(c));
    /* Read back after the region is gone: only the reads count now. */
    eng_range_t r0 = {BASE, 2048, ENG_ACCESS_READ}; /* covers rw0 */
    uint64_t sums[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tmem_launch(all[i], 4, &r0, 1), GMUX_OK);
        be = tmem_backend(all[i]);
        be.ops->release(be.ctx, 0, BASE, 4 * CH);
        sums[i] = tmem_checksum(all[i]);
    }
    assert_int_equal(sums[0], sums[1]);
    assert_int_not_equal(sums[0], sums[2]); /* c's read saw the lost write */
    assert_int_equal(tmem_error(a)[0], 0);
    for (int i = 0; i < 3; i++)
        tmem_destroy(all[i]);
}

/* Daemon orders: EVICT displaces (written back), a launch then fails until
 * the chunks are restored; FILL brings back only displaced chunks. */
static void test_plan_orders(void **state)
{
    (void)state;
    tmem_t *m = mk(4 * CH, NULL, 0), *ref = mk(4 * CH, NULL, 0);
    fill(m, BASE, 2 * CH);
    fill(ref, BASE, 2 * CH);
    assert_int_equal(tmem_launch(m, 1, &rw0, 1), GMUX_OK);
    assert_int_equal(tmem_launch(ref, 1, &rw0, 1), GMUX_OK);
    dmn_range_t all = {BASE, 4 * CH};
    tmem_plan(m, DMN_PLAN_EVICT, &all, 1);
    assert_int_equal(tmem_displaced(m), 2 * CH);
    assert_int_equal(tmem_stats(m)->resident, 0);
    assert_int_equal(tmem_launch(m, 1, &rw0, 1), GMUX_ERR_STATE);
    tmem_destroy(m);

    m = mk(4 * CH, NULL, 0);
    fill(m, BASE, 2 * CH);
    assert_int_equal(tmem_launch(m, 1, &rw0, 1), GMUX_OK);
    tmem_plan(m, DMN_PLAN_EVICT, &all, 1);
    dmn_range_t first = {BASE, CH};
    tmem_plan(m, DMN_PLAN_FILL, &all, 1); /* chunks 2, 3 were never the engine's */
    assert_int_equal(tmem_stats(m)->resident, 2 * CH);
    assert_int_equal(tmem_stats(m)->plan_filled, 2 * CH);
    tmem_plan(m, DMN_PLAN_EVICT, &first, 1);
    assert_int_equal(tmem_displaced(m), CH);
    tmem_restore(m);
    assert_int_equal(tmem_displaced(m), 0);
    assert_int_equal(tmem_stats(m)->restored, CH);
    assert_int_equal(tmem_launch(m, 1, &rw0, 1), GMUX_OK);
    assert_int_equal(tmem_launch(ref, 1, &rw0, 1), GMUX_OK);
    assert_int_equal(tmem_checksum(m), tmem_checksum(ref)); /* nothing lost on the way */
    tmem_destroy(m);
    tmem_destroy(ref);
}

/* The budget and the shared device capacity are enforced at each fill. */
static void test_capacity(void **state)
{
    (void)state;
    tmem_t *m = mk(2 * CH, NULL, 0);
    eng_backend_t be = tmem_backend(m);
    eng_ticket_t t;
    fill(m, BASE, 2 * CH);
    assert_int_equal(be.ops->prefetch(be.ctx, 0, BASE + 2 * CH, CH, &t), GMUX_ERR_CAPACITY);
    assert_non_null(strstr(tmem_error(m), "capacity overrun"));
    tmem_destroy(m);

    tmem_shared_t sh;
    memset(&sh, 0, sizeof(sh));
    tmem_t *x = mk(2 * CH, &sh, 3 * CH), *y = mk(2 * CH, &sh, 3 * CH);
    fill(x, BASE, 2 * CH);
    fill(y, BASE, CH);
    assert_int_equal(atomic_load(&sh.resident), 3 * CH);
    be = tmem_backend(y);
    assert_int_equal(be.ops->prefetch(be.ctx, 0, BASE + CH, CH, &t), GMUX_ERR_CAPACITY);
    assert_non_null(strstr(tmem_error(y), "device overrun"));
    assert_int_equal(atomic_load(&sh.peak), 4 * CH);
    /* Release gives the bytes back. */
    be = tmem_backend(x);
    be.ops->release(be.ctx, 0, BASE, 4 * CH);
    assert_int_equal(atomic_load(&sh.resident), 2 * CH);
    tmem_destroy(x);
    tmem_destroy(y);
}

/* Freed data is dead: releasing a region removes its contents from the
 * checksum; live regions count; overlapping allocations are refused. */
static void test_checksum_release(void **state)
{
    (void)state;
    tmem_t *a = mk(4 * CH, NULL, 0), *b = mk(4 * CH, NULL, 0);
    assert_int_equal(tmem_alloc(a, 2, BASE + 8 * CH, CH), GMUX_OK);
    assert_int_equal(tmem_alloc(b, 3, BASE + 8 * CH, CH), GMUX_OK);
    assert_int_not_equal(tmem_checksum(a), tmem_checksum(b)); /* other initial bytes */
    eng_backend_t be = tmem_backend(a);
    be.ops->release(be.ctx, 0, BASE + 8 * CH, CH);
    be = tmem_backend(b);
    be.ops->release(be.ctx, 0, BASE + 8 * CH, CH);
    assert_int_equal(tmem_checksum(a), tmem_checksum(b));
    assert_int_equal(tmem_alloc(b, 3, BASE + 2 * CH, CH), GMUX_ERR_EXISTS);
    tmem_destroy(a);
    tmem_destroy(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_residency_checked), cmocka_unit_test(test_writeback_and_discard),
        cmocka_unit_test(test_plan_orders),       cmocka_unit_test(test_capacity),
        cmocka_unit_test(test_checksum_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
