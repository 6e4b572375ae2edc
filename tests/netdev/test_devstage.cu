/*
 * net_devstage's bounce arena (compiled as host code, on a one-rank
 * communicator without a proxy thread, host memory standing in for the
 * device's): recycling the arena waits for every context's earlier puts, but
 * the errors those contexts hold stay theirs. Before 2026-12-01 the recycle
 * flushed each context with gmux_flush, which takes the context's first
 * error away: another context's error was lost to its owner, and the staged
 * put that needed the room was dropped with that error, stored on its own
 * context.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include <cmocka.h>
}

#include <gmux/net.h>
#include <gmux/net_device.cuh>

#include "net/devstage.h"

enum { PUT = 64, ARENA = 2 * PUT, TARGET = 4096 };

static int host_copy(void *arg, void *dst, const void *src, size_t n)
{
    (void)arg;
    memcpy(dst, src, n);
    return 0;
}

static void *host_alloc(void *arg, size_t n)
{
    (void)arg;
    void *p = NULL;
    return posix_memalign(&p, 4096, n) == 0 ? p : NULL;
}

static void host_free(void *arg, void *p)
{
    (void)arg;
    free(p);
}

static gmux_comm_t *one_rank(void)
{
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.start_proxy = 0;
    p.num_contexts = 2;
    p.timeout_s = 20;
    gmux_comm_t *comm = NULL;
    assert_int_equal(gmux_comm_init(&p, &comm), GMUX_OK);
    return comm;
}

static void test_recycle_keeps_other_errors(void **state)
{
    (void)state;
    gmux_comm_t *comm = one_rank();
    static uint8_t target[TARGET] __attribute__((aligned(64)));
    gmux_window_t win;
    assert_int_equal(gmux_window_register(comm, target, sizeof(target), &win), GMUX_OK);

    /* context 1: a put to a window that does not exist, failing when run */
    gmux_dev_handle_t hh;
    assert_int_equal(gmux_dev_handle_create_host(comm, &hh), GMUX_OK);
    assert_int_equal(gmux_dev_put_value(hh, 1, 0, (gmux_window_t)(win + 7), 0, 1, 8, NULL),
                     GMUX_OK);

    /* context 0, staged: three puts from a device source, the third finding
     * the arena full */
    net_devstage_copy_t copy = {host_copy, host_copy,          host_alloc, host_free,
                                NULL,      {GMUX_MEM_HOST, 0}, NULL};
    net_devstage_t *stage = NULL;
    assert_int_equal(net_devstage_create(comm, &copy, ARENA, &stage), GMUX_OK);
    gmux_dev_handle_t sh = hh;
    net_devstage_fill(stage, &sh);
    static uint8_t src[3 * PUT] __attribute__((aligned(64)));
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 7 + 1);
    assert_int_equal(net_devstage_source_register(stage, src, sizeof(src)), GMUX_OK);
    for (int k = 0; k < 3; k++)
        assert_int_equal(gmux_dev_put(sh, 0, 0, win, (uint64_t)k * PUT, src + k * PUT, PUT, NULL),
                         GMUX_OK);
    assert_int_equal(net_devstage_forward(stage, true), 3);

    /* the third put was forwarded and arrives; context 0 has no error */
    assert_int_equal(gmux_flush(comm, 0), GMUX_OK);
    assert_memory_equal(target, src, sizeof(src));
    /* context 1 still holds its own error, once */
    gmux_status_t e = gmux_flush(comm, 1);
    assert_int_not_equal(e, GMUX_OK);
    assert_int_not_equal(e, GMUX_ERR_TIMEOUT);
    assert_int_equal(gmux_flush(comm, 1), GMUX_OK);

    assert_int_equal(net_devstage_source_deregister(stage, src), GMUX_OK);
    net_devstage_destroy(stage);
    gmux_dev_handle_destroy(&hh);
    assert_int_equal(gmux_window_deregister(comm, win), GMUX_OK);
    assert_int_equal(gmux_comm_finalize(comm), GMUX_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recycle_keeps_other_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
