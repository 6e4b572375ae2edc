/*
 * Unit tests of the net extensions (gmux/net_ext.h) in a one-rank job: get
 * and every atomic op with its old and new values, argument checks, and
 * gmux_wait_cond's success and timeout. Multi-rank behaviour over shm and
 * tcp is covered by tests/shmem (test_shmem_*).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <gmux/net.h>
#include <gmux/net_ext.h>

static gmux_comm_t *comm;
static gmux_window_t win;
static uint64_t mem[64];

static int setup(void **state)
{
    (void)state;
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    if (gmux_comm_init(&p, &comm) != GMUX_OK)
        return -1;
    return gmux_window_register(comm, mem, sizeof(mem), &win) == GMUX_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    gmux_window_deregister(comm, win);
    return gmux_comm_finalize(comm) == GMUX_OK ? 0 : -1;
}

static void test_get(void **state)
{
    (void)state;
    for (int i = 0; i < 64; i++)
        mem[i] = 1000u + (uint64_t)i;
    uint64_t out[4] = {0};
    assert_int_equal(gmux_get(comm, 0, 0, win, 8 * 10, out, sizeof(out)), GMUX_OK);
    assert_int_equal(out[0], 1010);
    assert_int_equal(out[3], 1013);
    assert_int_equal(gmux_get(comm, 0, 1, win, 0, out, 8), GMUX_ERR_INVALID); /* no rank 1 */
    assert_int_equal(gmux_get(comm, 0, 0, win, sizeof(mem) - 4, out, 8), GMUX_ERR_RANGE);
    assert_int_equal(gmux_get(comm, 0, 0, win + 7, 0, out, 8), GMUX_ERR_INVALID);
    size_t size = 0;
    assert_ptr_equal(gmux_window_base(comm, win, &size), mem);
    assert_int_equal(size, sizeof(mem));
}

static void test_atomics(void **state)
{
    (void)state;
    uint64_t old = 0;
    mem[0] = 10;
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 0, GMUX_AMO_ADD, 8, 5, 0, &old), GMUX_OK);
    assert_int_equal(old, 10);
    assert_int_equal(mem[0], 15);
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 0, GMUX_AMO_SET, 8, 3, 0, &old), GMUX_OK);
    assert_int_equal(old, 15);
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 0, GMUX_AMO_CSWAP, 8, 9, 4, &old), GMUX_OK);
    assert_int_equal(old, 3);
    assert_int_equal(mem[0], 3); /* compare failed: unchanged */
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 0, GMUX_AMO_CSWAP, 8, 9, 3, &old), GMUX_OK);
    assert_int_equal(mem[0], 9);
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 0, GMUX_AMO_OR, 8, 0x30, 0, &old), GMUX_OK);
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 0, GMUX_AMO_AND, 8, 0x3c, 0, &old), GMUX_OK);
    assert_int_equal(old, 0x39);
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 0, GMUX_AMO_XOR, 8, 0xff, 0, &old), GMUX_OK);
    assert_int_equal(mem[0], 0x38 ^ 0xff);
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 0, GMUX_AMO_FETCH, 8, 0, 0, &old), GMUX_OK);
    assert_int_equal(old, 0x38 ^ 0xff);
    /* 4-byte words: only the addressed half changes */
    mem[1] = 0xaaaaaaaa00000007ull;
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 8, GMUX_AMO_ADD, 4, 0xfffffffful, 0, &old),
                     GMUX_OK);
    assert_int_equal(old, 7);
    assert_int_equal(mem[1], 0xaaaaaaaa00000006ull);
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 4, GMUX_AMO_ADD, 8, 1, 0, &old),
                     GMUX_ERR_INVALID); /* misaligned */
    assert_int_equal(gmux_atomic(comm, 0, 0, win, 0, GMUX_AMO_ADD, 2, 1, 0, &old),
                     GMUX_ERR_INVALID);
}

static bool is_true(void *arg)
{
    return *(int *)arg != 0;
}

static void test_wait_cond(void **state)
{
    (void)state;
    int yes = 1, no = 0;
    assert_int_equal(gmux_wait_cond(comm, is_true, &yes, 1.0), GMUX_OK);
    assert_int_equal(gmux_wait_cond(comm, is_true, &no, 0.05), GMUX_ERR_TIMEOUT);
    assert_true(gmux_peer_alive(comm, 0));
    assert_false(gmux_peer_alive(comm, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_atomics),
        cmocka_unit_test(test_wait_cond),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
