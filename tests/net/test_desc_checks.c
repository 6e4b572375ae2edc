/*
 * Descriptors that must be refused, on each path that delivers one to the
 * executor (src/net/proxy.c, exec_desc):
 *   - the API: gmux_put / put_value / signal refuse bad arguments before
 *     any descriptor exists (what lets the direct path skip its own checks
 *     of the comm's fixed bounds);
 *   - the direct path (net_progress_direct): still checks the window, which
 *     a deregistration may have taken away since the API looked;
 *   - the ring path (net_ring_try_push, as a device ring or the device
 *     service delivers them): every field is checked at execution.
 * A refused descriptor writes nothing, bumps nothing, and fails its context
 * (GMUX_ERR_INVALID at the next quiet); an unknown context fails context 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gmux/net.h>

#include "net/internal.h"

enum { WSZ = 256, NSIG = 4, NCNT = 2, NCTX = 2 };

static gmux_comm_t *comm;
static uint8_t win[WSZ];
static uint8_t src[WSZ];
static gmux_window_t w;

static int setup(void **state)
{
    (void)state;
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.start_proxy = 0; /* progress only where this test drives it */
    p.num_contexts = NCTX;
    p.num_signals = NSIG;
    p.num_counters = NCNT;
    p.timeout_s = 5;
    if (gmux_comm_init(&p, &comm) != GMUX_OK)
        return -1;
    memset(src, 0xa5, sizeof(src));
    return gmux_window_register(comm, win, WSZ, &w) == GMUX_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    gmux_window_deregister(comm, w);
    return gmux_comm_finalize(comm) == GMUX_OK ? 0 : -1;
}

static net_desc_t good_put(void)
{
    net_desc_t d = {.version = NET_PROTO_VERSION,
                    .opcode = NET_OP_PUT,
                    .window = (uint16_t)w,
                    .ctx = 0,
                    .peer = 0,
                    .offset = 0,
                    .src = (uint64_t)(uintptr_t)src,
                    .size = 16,
                    .signal_op = GMUX_SIGNAL_ADD,
                    .signal_id = NET_SIG_RESERVED + 1,
                    .signal_value = 1,
                    .flags = NET_DESC_F_COUNTER,
                    .counter_id = 1};
    return d;
}

/* The bad variants of good_put: each breaks one field. */
enum { BAD_PEER, BAD_CTX, BAD_SIGNAL, BAD_COUNTER, BAD_WINDOW, BAD_RANGE, BAD_VALUE_SIZE, NBAD };

static net_desc_t bad_put(int which)
{
    net_desc_t d = good_put();
    switch (which) {
    case BAD_PEER:
        d.peer = 1;
        break;
    case BAD_CTX:
        d.ctx = NCTX;
        break;
    case BAD_SIGNAL:
        d.signal_id = comm->nsig_all;
        break;
    case BAD_COUNTER:
        d.counter_id = NCNT;
        break;
    case BAD_WINDOW:
        d.window = (uint16_t)(w + 1);
        break;
    case BAD_RANGE:
        d.offset = WSZ - 8;
        break;
    case BAD_VALUE_SIZE:
        d.opcode = NET_OP_PUT_VALUE;
        d.src = 0x1122334455667788ull;
        d.size = 9;
        break;
    }
    return d;
}

/* Nothing was written or bumped, and the descriptor's context (0 for an
 * unknown one) reports the refusal once. */
static void assert_refused(int which)
{
    uint8_t zero[WSZ] = {0};
    assert_memory_equal(win, zero, WSZ);
    assert_true(gmux_signal_read(comm, 1) == 0);
    assert_true(gmux_counter_read(comm, 1) == 0);
    uint32_t ctx = which == BAD_CTX ? 0 : good_put().ctx;
    assert_int_equal(gmux_quiet(comm, ctx), GMUX_ERR_INVALID);
    assert_int_equal(gmux_quiet(comm, ctx), GMUX_OK);
}

static void test_api_refuses(void **state)
{
    (void)state;
    gmux_op_opts_t sig = {GMUX_SIGNAL_ADD, 1, 1, 1};
    assert_int_equal(gmux_put(comm, 0, 1, w, 0, src, 16, &sig), GMUX_ERR_INVALID);
    assert_int_equal(gmux_put(comm, NCTX, 0, w, 0, src, 16, &sig), GMUX_ERR_INVALID);
    gmux_op_opts_t badsig = {GMUX_SIGNAL_ADD, NSIG, 1, GMUX_NO_COUNTER};
    assert_int_equal(gmux_put(comm, 0, 0, w, 0, src, 16, &badsig), GMUX_ERR_INVALID);
    gmux_op_opts_t badop = {(gmux_signal_op_t)(GMUX_SIGNAL_SET + 1), 1, 1, GMUX_NO_COUNTER};
    assert_int_equal(gmux_put(comm, 0, 0, w, 0, src, 16, &badop), GMUX_ERR_INVALID);
    gmux_op_opts_t badcnt = {GMUX_SIGNAL_NONE, 0, 0, NCNT};
    assert_int_equal(gmux_put(comm, 0, 0, w, 0, src, 16, &badcnt), GMUX_ERR_INVALID);
    assert_int_equal(gmux_put(comm, 0, 0, w + 1, 0, src, 16, NULL), GMUX_ERR_INVALID);
    assert_int_equal(gmux_put(comm, 0, 0, w, WSZ - 8, src, 16, NULL), GMUX_ERR_RANGE);
    assert_int_equal(gmux_put_value(comm, 0, 0, w, 0, 1, 9, NULL), GMUX_ERR_INVALID);
    assert_int_equal(gmux_signal(comm, 0, 0, NSIG, GMUX_SIGNAL_ADD, 1), GMUX_ERR_INVALID);
    assert_int_equal(gmux_signal(comm, 0, 1, 0, GMUX_SIGNAL_ADD, 1), GMUX_ERR_INVALID);
    assert_int_equal(gmux_signal(comm, NCTX, 0, 0, GMUX_SIGNAL_ADD, 1), GMUX_ERR_INVALID);
    uint8_t zero[WSZ] = {0};
    assert_memory_equal(win, zero, WSZ);
    assert_true(gmux_signal_read(comm, 1) == 0);
    assert_true(gmux_counter_read(comm, 1) == 0);
    for (uint32_t c = 0; c < NCTX; c++)
        assert_int_equal(gmux_quiet(comm, c), GMUX_OK);
}

/* A good descriptor goes through each path: the checks refuse only what
 * they must. */
static void run_good(bool direct)
{
    net_desc_t d = good_put();
    if (direct) {
        assert_true(net_progress_direct(comm, 0, &d));
    } else {
        assert_int_equal(net_ring_try_push(&comm->rings[0], &d), GMUX_OK);
        while (net_ring_pending(&comm->rings[0]))
            net_progress_try(comm);
    }
    assert_memory_equal(win, src, 16);
    assert_true(gmux_signal_read(comm, 1) == 1);
    assert_true(gmux_counter_read(comm, 1) == 1);
    assert_int_equal(gmux_quiet(comm, 0), GMUX_OK);
    memset(win, 0, sizeof(win));
    gmux_signal_reset(comm, 1);
    gmux_counter_reset(comm, 1);
}

static void test_direct_refuses_a_window_gone(void **state)
{
    (void)state;
    run_good(true);
    /* what the API could not have seen: the window deregistered (or another
     * one in its place) after its check */
    net_desc_t d = bad_put(BAD_WINDOW);
    assert_true(net_progress_direct(comm, 0, &d));
    assert_refused(BAD_WINDOW);
    d = bad_put(BAD_RANGE);
    assert_true(net_progress_direct(comm, 0, &d));
    assert_refused(BAD_RANGE);
    run_good(true);
}

static void test_ring_refuses_every_bad_field(void **state)
{
    (void)state;
    run_good(false);
    for (int which = 0; which < NBAD; which++) {
        net_desc_t d = bad_put(which);
        net_ring_t *ring = &comm->rings[0];
        assert_int_equal(net_ring_try_push(ring, &d), GMUX_OK);
        while (net_ring_pending(ring))
            net_progress_try(comm);
        assert_refused(which);
    }
    run_good(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_refuses),
        cmocka_unit_test(test_direct_refuses_a_window_gone),
        cmocka_unit_test(test_ring_refuses_every_bad_field),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
