/*
 * net_devsvc: host handles, the memory a device must reach, and the service
 * thread (progress for pending descriptors, flush/quiet requests), on a
 * one-rank communicator without a proxy thread, so only the service thread
 * can make progress.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include <gmux/net.h>
#include <gmux/net_device.h>

#include "net/devsvc.h"

static gmux_comm_t *comm;

static int setup(void **state)
{
    (void)state;
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.start_proxy = 0;
    p.num_contexts = 3;
    p.num_signals = 16;
    return gmux_comm_init(&p, &comm) == GMUX_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return gmux_comm_finalize(comm) == GMUX_OK ? 0 : -1;
}

/* Polls a word for up to 10 s (the service thread sleeps at most 50 us). */
static bool eventually(_Atomic uint64_t *w, uint64_t value)
{
    for (int i = 0; i < 200000; i++) {
        if (atomic_load(w) >= value)
            return true;
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static bool inside(const net_devsvc_range_t *r, size_t n, const void *p, size_t size)
{
    for (size_t i = 0; i < n; i++)
        if ((const char *)p >= (const char *)r[i].base &&
            (const char *)p + size <= (const char *)r[i].base + r[i].size)
            return true;
    return false;
}

static void test_host_handle_fields(void **state)
{
    (void)state;
    gmux_dev_handle_t h;
    assert_int_equal(gmux_dev_handle_create_host(comm, &h), GMUX_OK);
    assert_int_equal(h.rank, 0);
    assert_int_equal(h.size, 1);
    assert_int_equal(h.nctx, 3);
    assert_int_equal(h.nsig, 16);
    assert_true(h.nslots >= 2 && (h.nslots & (h.nslots - 1)) == 0);
    assert_true(h.timeout_ns > 0);
    assert_non_null(h.rings);
    assert_non_null(h.signals);
    assert_non_null(h.svc);
    for (uint32_t c = 0; c < h.nctx; c++) {
        assert_non_null(h.rings[c].slots);
        assert_true(h.rings[c].tail != h.rings[c].head);
    }
    gmux_dev_handle_destroy(&h);
    assert_null(h.host);
}

static void test_ranges_cover_handle(void **state)
{
    (void)state;
    gmux_dev_handle_t h;
    net_devsvc_t *svc = NULL;
    assert_int_equal(net_devsvc_start(comm, &h, &svc), GMUX_OK);
    net_devsvc_range_t r[64];
    size_t n = net_devsvc_ranges(svc, r, 64);
    assert_true(n >= 1);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal((uintptr_t)r[i].base % 4096, 0);
        assert_int_equal(r[i].size % 4096, 0);
        if (i > 0) /* sorted, and no page shared between two ranges */
            assert_true((char *)r[i - 1].base + r[i - 1].size < (char *)r[i].base);
    }
    for (uint32_t c = 0; c < h.nctx; c++) {
        assert_true(inside(r, n, h.rings[c].slots, (size_t)h.nslots * 64));
        assert_true(inside(r, n, h.rings[c].tail, 8));
        assert_true(inside(r, n, h.rings[c].head, 8));
    }
    assert_true(inside(r, n, h.signals, h.nsig * 8));
    assert_true(inside(r, n, h.counters, 8));
    assert_true(inside(r, n, h.ctx_error, h.nctx * 4));
    assert_true(inside(r, n, h.svc, (GMUX_DEV_SVC_CTX0 + GMUX_DEV_SVC_CTX_WORDS * h.nctx) * 8));
    net_devsvc_stop(svc);
}

static void test_service_drains_rings(void **state)
{
    (void)state;
    gmux_dev_handle_t h;
    assert_int_equal(gmux_dev_handle_create_host(comm, &h), GMUX_OK);
    gmux_signal_reset(comm, 5);
    /* no proxy runs: only the service thread can execute these */
    for (int i = 0; i < 3; i++)
        assert_int_equal(gmux_signal(comm, (uint32_t)i, 0, 5, GMUX_SIGNAL_ADD, 2), GMUX_OK);
    assert_true(eventually((_Atomic uint64_t *)&h.signals[5], 6));
    assert_int_equal(gmux_signal_read(comm, 5), 6);
    gmux_dev_handle_destroy(&h);
}

static void test_service_flush_and_quiet(void **state)
{
    (void)state;
    gmux_dev_handle_t h;
    assert_int_equal(gmux_dev_handle_create_host(comm, &h), GMUX_OK);
    _Atomic uint64_t *ctx2 =
        (_Atomic uint64_t *)&h.svc[GMUX_DEV_SVC_CTX0 + GMUX_DEV_SVC_CTX_WORDS * 2];
    ctx2[GMUX_DEV_SVC_FLUSH_STATUS] = 12345; /* must be overwritten by the answer */
    atomic_fetch_add(&ctx2[GMUX_DEV_SVC_FLUSH_REQ], 2);
    assert_true(eventually(&ctx2[GMUX_DEV_SVC_FLUSH_DONE], 2));
    assert_int_equal(atomic_load(&ctx2[GMUX_DEV_SVC_FLUSH_DONE]), 2);
    assert_int_equal((int64_t)atomic_load(&ctx2[GMUX_DEV_SVC_FLUSH_STATUS]), GMUX_OK);
    atomic_fetch_add(&ctx2[GMUX_DEV_SVC_QUIET_REQ], 1);
    assert_true(eventually(&ctx2[GMUX_DEV_SVC_QUIET_DONE], 1));
    /* requests of one context answer nothing of another */
    _Atomic uint64_t *ctx0 = (_Atomic uint64_t *)&h.svc[GMUX_DEV_SVC_CTX0];
    assert_int_equal(atomic_load(&ctx0[GMUX_DEV_SVC_FLUSH_DONE]), 0);
    assert_int_equal(atomic_load(&ctx0[GMUX_DEV_SVC_QUIET_DONE]), 0);
    gmux_dev_handle_destroy(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_handle_fields),
        cmocka_unit_test(test_ranges_cover_handle),
        cmocka_unit_test(test_service_drains_rings),
        cmocka_unit_test(test_service_flush_and_quiet),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
