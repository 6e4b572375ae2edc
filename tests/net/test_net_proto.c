/* Tests of net_proto.h: descriptor encoding, torn-write detection, CQ data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/net_proto.h"

static net_desc_t sample(void)
{
    net_desc_t d = {.version = NET_PROTO_VERSION,
                    .opcode = NET_OP_PUT,
                    .signal_op = 3,
                    .flags = NET_DESC_F_COUNTER,
                    .window = 0xfedc,
                    .ctx = 0x8001,
                    .ticket = 0x89abcdef,
                    .counter_id = 0xf0000001,
                    .peer = 0x80000002,
                    .signal_id = 0xffffffff,
                    .offset = 0xffffffffffffffffull,
                    .src = 0x8000000000000001ull,
                    .size = 0x7fffffffffffffffull,
                    .signal_value = 0x8000000000000000ull};
    return d;
}

static void test_round_trip_keeps_every_bit(void **state)
{
    (void)state;
    net_desc_t d = sample(), e = {0};
    uint64_t w[NET_DESC_WORDS];
    net_desc_encode(&d, w);
    for (int i = 0; i < NET_DESC_WORDS; i++)
        assert_true(w[i] & NET_DESC_VALID);
    assert_true(net_desc_decode(w, &e));
    assert_int_equal(e.window, d.window);
    assert_int_equal(e.ctx, d.ctx);
    assert_int_equal(e.ticket, d.ticket);
    assert_int_equal(e.counter_id, d.counter_id);
    assert_int_equal(e.peer, d.peer);
    assert_int_equal(e.signal_id, d.signal_id);
    assert_true(e.offset == d.offset && e.src == d.src && e.size == d.size);
    assert_true(e.signal_value == d.signal_value);
    assert_int_equal(e.opcode, NET_OP_PUT);
    assert_int_equal(e.signal_op, 3);
    assert_int_equal(e.flags, NET_DESC_F_COUNTER);
    /* zero top bits too */
    d.offset = 1;
    d.src = 0;
    net_desc_encode(&d, w);
    assert_true(net_desc_decode(w, &e));
    assert_true(e.offset == 1 && e.src == 0);
}

static void test_any_missing_word_is_incomplete(void **state)
{
    (void)state;
    net_desc_t d = sample(), e = {0};
    uint64_t w[NET_DESC_WORDS];
    net_desc_encode(&d, w);
    for (int i = 0; i < NET_DESC_WORDS; i++) {
        uint64_t torn[NET_DESC_WORDS];
        memcpy(torn, w, sizeof(torn));
        torn[i] = 0; /* this word has not landed yet */
        assert_false(net_desc_complete(torn));
        assert_false(net_desc_decode(torn, &e));
        torn[i] = w[i] & ~NET_DESC_VALID; /* payload landed, flag not */
        assert_false(net_desc_complete(torn));
    }
    assert_true(net_desc_complete(w));
}

static void test_rejects_foreign_words(void **state)
{
    (void)state;
    net_desc_t d = sample(), e = {0};
    uint64_t w[NET_DESC_WORDS];
    net_desc_encode(&d, w);
    w[7] ^= 0x100; /* magic */
    assert_false(net_desc_decode(w, &e));
    w[7] ^= 0x100;
    assert_true(net_desc_decode(w, &e));
    w[7] |= 1ull << 30; /* a reserved bit */
    assert_false(net_desc_decode(w, &e));
    d.version = 2;
    net_desc_encode(&d, w);
    assert_false(net_desc_decode(w, &e));
    d = sample();
    d.opcode = NET_OP_COUNT_;
    net_desc_encode(&d, w);
    assert_false(net_desc_decode(w, &e));
    d = sample();
    d.signal_op = 4;
    net_desc_encode(&d, w);
    assert_false(net_desc_decode(w, &e));
}

static void test_cq_data(void **state)
{
    (void)state;
    net_cqd_t c = {.seq = 0xfffffe,
                   .src = 4095,
                   .ctx = 15,
                   .sig_op = 1,
                   .sig_id = 1023,
                   .sig_value = 2047},
              e;
    assert_true(net_cqd_fits(1, 1023, 2047));
    net_cqd_parse(net_cqd_make(&c), &e);
    assert_true(e.seq == c.seq && e.src == 4095 && e.ctx == 15 && e.sig_op == 1);
    assert_true(!e.sig_in_msg && e.sig_id == 1023 && e.sig_value == 2047);
    /* the sequence number keeps its low 24 bits only */
    c.seq = 0x12345678;
    net_cqd_parse(net_cqd_make(&c), &e);
    assert_int_equal(e.seq, 0x345678);
    /* too wide for the CQ data: carried in a message, only the op travels here */
    assert_false(net_cqd_fits(1, 1024, 1));
    assert_false(net_cqd_fits(3, 0, 2048));
    assert_true(net_cqd_fits(2, 5, UINT64_MAX)); /* INC has no operand */
    c.sig_in_msg = true;
    c.sig_op = 3;
    net_cqd_parse(net_cqd_make(&c), &e);
    assert_true(e.sig_in_msg && e.sig_op == 3 && e.sig_id == 0 && e.sig_value == 0);
    /* no signal */
    c.sig_op = 0;
    net_cqd_parse(net_cqd_make(&c), &e);
    assert_true(e.sig_op == 0 && !e.sig_in_msg);
    assert_int_equal(sizeof(net_msg_t), 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_keeps_every_bit),
        cmocka_unit_test(test_any_missing_word_is_incomplete),
        cmocka_unit_test(test_rejects_foreign_words),
        cmocka_unit_test(test_cq_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
