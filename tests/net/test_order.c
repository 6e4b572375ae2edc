/* Tests of net_order: a signal is released only after every write of its
 * stream up to its carrier landed, signals come out in carrier order, and
 * quiet requests wait for both, whatever order things arrive in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/order.h"
#include "trand.h"

static net_cqd_t plain(void)
{
    net_cqd_t c = {0};
    return c;
}

static net_cqd_t fused(uint32_t id, uint64_t value)
{
    net_cqd_t c = {.sig_op = 1, .sig_id = id, .sig_value = value};
    return c;
}

static void test_signal_waits_for_earlier_writes(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    net_cqd_t p = plain(), f = fused(4, 42);
    net_pend_t out;
    /* writes 0, 1 plain; write 2 carries the signal; 2 and 1 land before 0 */
    assert_int_equal(net_order_write(&o, 2, &f), GMUX_OK);
    assert_int_equal(net_order_write(&o, 1, &p), GMUX_OK);
    assert_false(net_order_next(&o, &out)); /* a count (2 of 3) or a max seq would say go */
    assert_int_equal(o.landed, 0);
    assert_int_equal(net_order_write(&o, 0, &p), GMUX_OK);
    assert_int_equal(o.landed, 3);
    assert_true(net_order_next(&o, &out));
    assert_true(out.type == NET_MSG_SIGNAL && out.id == 4 && out.value == 42 && out.op == 1);
    assert_false(net_order_next(&o, &out));
    net_order_fini(&o);
}

static void test_signals_in_carrier_order(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    net_cqd_t a = fused(1, 10), b = fused(1, 11), c = fused(1, 12);
    net_pend_t out;
    net_order_write(&o, 2, &c);
    net_order_write(&o, 0, &a);
    net_order_write(&o, 1, &b);
    for (uint64_t want = 10; want <= 12; want++) {
        assert_true(net_order_next(&o, &out));
        assert_true(out.value == want);
    }
    assert_false(net_order_next(&o, &out));
    net_order_fini(&o);
}

static void test_signal_in_message_gates_later_ones(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    net_cqd_t wide = {.sig_op = 3, .sig_in_msg = true}, later = fused(2, 5);
    net_pend_t out;
    assert_int_equal(net_order_write(&o, 0, &wide), GMUX_OK);
    assert_int_equal(net_order_write(&o, 1, &later), GMUX_OK);
    assert_false(net_order_next(&o, &out)); /* write 0's signal is not known yet */
    net_msg_t m = {.version = NET_PROTO_VERSION,
                   .type = NET_MSG_SIGNAL,
                   .signal_op = 3,
                   .seq = 0,
                   .signal_id = 5000,
                   .value = 1ull << 40};
    assert_int_equal(net_order_message(&o, &m), GMUX_OK);
    assert_true(net_order_next(&o, &out));
    assert_true(out.id == 5000 && out.value == 1ull << 40 && out.op == 3);
    assert_true(net_order_next(&o, &out));
    assert_true(out.id == 2 && out.value == 5);
    /* a message before its carrier waits for the carrier */
    m.seq = 2;
    assert_int_equal(net_order_message(&o, &m), GMUX_OK);
    assert_false(net_order_next(&o, &out));
    assert_int_equal(net_order_write(&o, 2, &wide), GMUX_OK);
    assert_true(net_order_next(&o, &out));
    net_order_fini(&o);
}

static void test_quiet_waits_for_writes_and_signals(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    net_msg_t q = {.version = NET_PROTO_VERSION, .type = NET_MSG_QUIET_REQ, .seq = 2, .value = 9};
    net_cqd_t wide = {.sig_op = 1, .sig_in_msg = true}, p = plain();
    net_pend_t out;
    net_order_message(&o, &q);
    assert_false(net_order_next(&o, &out));
    net_order_write(&o, 1, &wide);
    net_order_write(&o, 0, &p);
    assert_false(net_order_next(&o, &out)); /* landed, but the signal of write 1 is not applied */
    net_msg_t m = {.version = NET_PROTO_VERSION,
                   .type = NET_MSG_SIGNAL,
                   .signal_op = 1,
                   .seq = 1,
                   .signal_id = 3,
                   .value = 1};
    net_order_message(&o, &m);
    assert_true(net_order_next(&o, &out));
    assert_int_equal(out.type, NET_MSG_SIGNAL);
    assert_true(net_order_next(&o, &out));
    assert_int_equal(out.type, NET_MSG_QUIET_REQ);
    assert_true(out.value == 9);
    net_order_fini(&o);
}

static void test_duplicates_and_wide_gaps(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    assert_int_equal(net_order_write(&o, 0, NULL), GMUX_OK);
    assert_int_equal(net_order_write(&o, 0, NULL), GMUX_ERR_PARSE);
    for (uint32_t s = 5000; s >= 1; s--)
        assert_int_equal(net_order_write(&o, s, NULL), GMUX_OK);
    assert_int_equal(o.landed, 5001);
    assert_int_equal(net_order_write(&o, 4000, NULL), GMUX_ERR_PARSE);
    net_order_fini(&o);
}

static void test_sequence_wraps_and_expands(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    o.landed = 0xfffffffe;
    net_cqd_t f = fused(0, 9);
    net_pend_t out;
    assert_int_equal(net_order_expand(&o, 0xfffffe & NET_CQD_SEQ_MASK), 0xfffffffe);
    assert_int_equal(net_order_expand(&o, 1), 1);                 /* past the 32-bit wrap */
    assert_int_equal(net_order_expand(&o, 0xfffff0), 0xfffffff0); /* a little behind */
    net_order_write(&o, 1, &f);
    net_order_write(&o, 0xffffffff, NULL);
    net_order_write(&o, 0xfffffffe, NULL);
    assert_false(net_order_next(&o, &out));
    net_order_write(&o, 0, NULL);
    assert_int_equal(o.landed, 2);
    assert_true(net_order_next(&o, &out));
    net_order_fini(&o);
}

/* Random arrival orders: every released signal finds all writes up to its
 * carrier landed, and signals come out in carrier order. */
static void test_random_arrivals(void **state)
{
    (void)state;
    enum { W = 800 };
    uint64_t rng = trand_from_env("test_random_arrivals", 7);
    for (int trial = 0; trial < 30; trial++) {
        net_order_t o;
        net_order_init(&o);
        net_cqd_t c[W];
        bool wide[W];
        int nsig = 0;
        for (int i = 0; i < W; i++) {
            c[i] = plain();
            wide[i] = false;
            if (trand_below(&rng, 3) == 0) {
                c[i] = fused((uint32_t)i, (uint64_t)i);
                wide[i] = trand_below(&rng, 4) == 0;
                c[i].sig_in_msg = wide[i];
                nsig++;
            }
        }
        /* events: W writes, then one message per wide signal */
        int ev[2 * W], nev = 0;
        for (int i = 0; i < W; i++) {
            ev[nev++] = i;
            if (wide[i])
                ev[nev++] = W + i;
        }
        for (int i = nev - 1; i > 0; i--) {
            int j = (int)trand_below(&rng, (uint64_t)i + 1), t = ev[i];
            ev[i] = ev[j];
            ev[j] = t;
        }
        bool landed[W] = {false};
        int released = 0;
        int64_t last = -1;
        for (int k = 0; k < nev; k++) {
            if (ev[k] < W) {
                landed[ev[k]] = true;
                assert_int_equal(net_order_write(&o, (uint32_t)ev[k], &c[ev[k]]), GMUX_OK);
            } else {
                int i = ev[k] - W;
                net_msg_t m = {.version = NET_PROTO_VERSION,
                               .type = NET_MSG_SIGNAL,
                               .signal_op = 1,
                               .seq = (uint32_t)i,
                               .signal_id = (uint32_t)i,
                               .value = (uint64_t)i};
                assert_int_equal(net_order_message(&o, &m), GMUX_OK);
            }
            net_pend_t out;
            while (net_order_next(&o, &out)) {
                assert_true((int64_t)out.seq > last);
                last = out.seq;
                assert_true(out.id == out.seq && out.value == out.seq);
                for (uint32_t w = 0; w <= out.seq; w++)
                    assert_true(landed[w]);
                released++;
            }
        }
        assert_int_equal(released, nsig);
        net_order_fini(&o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signal_waits_for_earlier_writes),
        cmocka_unit_test(test_signals_in_carrier_order),
        cmocka_unit_test(test_signal_in_message_gates_later_ones),
        cmocka_unit_test(test_quiet_waits_for_writes_and_signals),
        cmocka_unit_test(test_duplicates_and_wide_gaps),
        cmocka_unit_test(test_sequence_wraps_and_expands),
        cmocka_unit_test(test_random_arrivals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
