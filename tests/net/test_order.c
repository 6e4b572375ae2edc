/* Tests of net_order: a signal is released only after every earlier write
 * of its stream landed, and signals come out in stream order, whatever order
 * writes and messages arrive in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/order.h"

static net_msg_t sig(uint32_t seq, uint32_t index, uint64_t value)
{
    net_msg_t m = {.version = NET_PROTO_VERSION,
                   .type = NET_MSG_SIGNAL,
                   .seq = seq,
                   .nsignals = index,
                   .value = value,
                   .signal_op = 1};
    return m;
}

static void test_signal_waits_for_its_writes(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    net_msg_t m = sig(3, 0, 42), out;
    assert_int_equal(net_order_message(&o, &m), GMUX_OK);
    assert_false(net_order_next(&o, &out));
    /* writes 1 and 2 land, write 0 is still in flight: a count would say 2 of 3,
     * and a "max seq" would say 2; neither is enough */
    assert_int_equal(net_order_write(&o, 2), GMUX_OK);
    assert_int_equal(net_order_write(&o, 1), GMUX_OK);
    assert_false(net_order_next(&o, &out));
    assert_int_equal(o.landed, 0);
    assert_int_equal(net_order_write(&o, 0), GMUX_OK);
    assert_int_equal(o.landed, 3);
    assert_true(net_order_next(&o, &out));
    assert_true(out.value == 42);
    assert_false(net_order_next(&o, &out));
    net_order_fini(&o);
}

static void test_later_write_does_not_release_earlier_signal(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    /* w0, signal(after w0), w1: w1 lands first */
    net_msg_t m = sig(1, 0, 1), out;
    net_order_message(&o, &m);
    assert_int_equal(net_order_write(&o, 1), GMUX_OK);
    assert_false(net_order_next(&o, &out));
    assert_int_equal(net_order_write(&o, 0), GMUX_OK);
    assert_true(net_order_next(&o, &out));
    net_order_fini(&o);
}

static void test_signals_in_stream_order(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    net_msg_t a = sig(0, 0, 10), b = sig(0, 1, 11), c = sig(0, 2, 12), out;
    net_order_message(&o, &c);
    net_order_message(&o, &a);
    net_order_message(&o, &b);
    for (uint64_t want = 10; want <= 12; want++) {
        assert_true(net_order_next(&o, &out));
        assert_true(out.value == want);
    }
    assert_false(net_order_next(&o, &out));
    net_order_fini(&o);
}

static void test_quiet_waits_for_signals_and_writes(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    net_msg_t q = {.version = NET_PROTO_VERSION,
                   .type = NET_MSG_QUIET_REQ,
                   .seq = 1,
                   .nsignals = 1,
                   .value = 5};
    net_msg_t s = sig(1, 0, 1), out;
    net_order_message(&o, &q);
    assert_false(net_order_next(&o, &out));
    net_order_write(&o, 0);
    net_order_message(&o, &s);
    assert_true(net_order_next(&o, &out));
    assert_int_equal(out.type, NET_MSG_SIGNAL); /* the signal first, then the quiet */
    assert_true(net_order_next(&o, &out));
    assert_int_equal(out.type, NET_MSG_QUIET_REQ);
    net_order_fini(&o);
}

static void test_duplicates_and_wide_gaps(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    assert_int_equal(net_order_write(&o, 0), GMUX_OK);
    assert_int_equal(net_order_write(&o, 0), GMUX_ERR_PARSE);
    for (uint32_t s = 5000; s >= 1; s--)
        assert_int_equal(net_order_write(&o, s), GMUX_OK);
    assert_int_equal(o.landed, 5001);
    assert_int_equal(net_order_write(&o, 4000), GMUX_ERR_PARSE);
    net_order_fini(&o);
}

static void test_sequence_wraps(void **state)
{
    (void)state;
    net_order_t o;
    net_order_init(&o);
    o.landed = 0xfffffffe;
    net_msg_t m = sig(2, 0, 9), out; /* after writes 0xfffffffe, 0xffffffff, 0, 1 */
    net_order_message(&o, &m);
    net_order_write(&o, 1);
    net_order_write(&o, 0xffffffff);
    net_order_write(&o, 0xfffffffe);
    assert_false(net_order_next(&o, &out));
    net_order_write(&o, 0);
    assert_int_equal(o.landed, 2);
    assert_true(net_order_next(&o, &out));
    net_order_fini(&o);
}

/* Random arrival orders: every released signal finds all its writes landed. */
static void test_random_arrivals(void **state)
{
    (void)state;
    enum { W = 600, S = 200 };
    srand(7);
    for (int trial = 0; trial < 30; trial++) {
        net_order_t o;
        net_order_init(&o);
        uint32_t sig_seq[S];
        for (int i = 0; i < S; i++)
            sig_seq[i] = (uint32_t)(rand() % (W + 1));
        /* signals are issued in stream order, so their seqs do not decrease */
        for (int i = 1; i < S; i++)
            if (sig_seq[i] < sig_seq[i - 1])
                sig_seq[i] = sig_seq[i - 1];
        int ev[W + S];
        for (int i = 0; i < W + S; i++)
            ev[i] = i;
        for (int i = W + S - 1; i > 0; i--) {
            int j = rand() % (i + 1), t = ev[i];
            ev[i] = ev[j];
            ev[j] = t;
        }
        bool landed[W] = {false};
        int released = 0;
        for (int k = 0; k < W + S; k++) {
            if (ev[k] < W) {
                landed[ev[k]] = true;
                assert_int_equal(net_order_write(&o, (uint32_t)ev[k]), GMUX_OK);
            } else {
                int i = ev[k] - W;
                net_msg_t m = sig(sig_seq[i], (uint32_t)i, (uint64_t)i);
                net_order_message(&o, &m);
            }
            net_msg_t out;
            while (net_order_next(&o, &out)) {
                assert_true(out.value == (uint64_t)released);
                for (uint32_t w = 0; w < out.seq; w++)
                    assert_true(landed[w]);
                released++;
            }
        }
        assert_int_equal(released, S);
        net_order_fini(&o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signal_waits_for_its_writes),
        cmocka_unit_test(test_later_write_does_not_release_earlier_signal),
        cmocka_unit_test(test_signals_in_stream_order),
        cmocka_unit_test(test_quiet_waits_for_signals_and_writes),
        cmocka_unit_test(test_duplicates_and_wide_gaps),
        cmocka_unit_test(test_sequence_wraps),
        cmocka_unit_test(test_random_arrivals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
