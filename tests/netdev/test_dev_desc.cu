/*
 * The device encoder (gmux_dev_desc_encode in net_device.cuh) against the net
 * core's descriptor format (src/net/net_proto.h): the same words for the same
 * descriptor, and what the core decodes is what the device meant, including
 * fields whose top bit is set (folded into word 7).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

#include <gmux/net_device.cuh>

#define _Static_assert static_assert /* net_proto.h is C11 */
#include "net/net_proto.h"
#include "trand.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static void test_encoders_agree(void **state)
{
    (void)state;
    for (int i = 0; i < 20000; i++) {
        gmux_dev_desc_t d = {};
        d.opcode = (uint8_t)(1 + trand_next(&rng) % 3);
        d.signal_op = (uint8_t)(trand_next(&rng) % 4);
        d.flags = (uint8_t)(trand_next(&rng) & 1);
        d.window = (uint16_t)trand_next(&rng);
        d.ctx = (uint16_t)trand_next(&rng);
        d.counter_id = (uint32_t)trand_next(&rng);
        d.peer = (uint32_t)trand_next(&rng);
        d.signal_id = (uint32_t)trand_next(&rng);
        d.offset = trand_next(&rng);
        d.src = i % 3 == 0 ? trand_next(&rng) | (1ull << 63) : trand_next(&rng);
        d.size = trand_next(&rng);
        d.signal_value = i % 2 ? ~0ull : trand_next(&rng);
        uint32_t ticket = (uint32_t)trand_next(&rng);
        uint64_t w_dev[8];
        gmux_dev_desc_encode(&d, ticket, w_dev);

        net_desc_t c = {};
        c.version = NET_PROTO_VERSION;
        c.opcode = d.opcode;
        c.signal_op = d.signal_op;
        c.flags = d.flags;
        c.window = d.window;
        c.ctx = d.ctx;
        c.ticket = ticket;
        c.counter_id = d.counter_id;
        c.peer = d.peer;
        c.signal_id = d.signal_id;
        c.offset = d.offset;
        c.src = d.src;
        c.size = d.size;
        c.signal_value = d.signal_value;
        uint64_t w_core[NET_DESC_WORDS];
        net_desc_encode(&c, w_core);
        for (int k = 0; k < 8; k++)
            assert_int_equal(w_dev[k], w_core[k]);

        net_desc_t back;
        assert_true(net_desc_decode(w_dev, &back));
        assert_int_equal(back.opcode, d.opcode);
        assert_int_equal(back.ticket, ticket);
        assert_int_equal(back.src, d.src);
        assert_int_equal(back.signal_value, d.signal_value);
        assert_int_equal(back.offset, d.offset);
    }
}

static void test_every_word_flagged(void **state)
{
    (void)state;
    gmux_dev_desc_t d = {};
    d.opcode = GMUX_DEV_OP_SIGNAL;
    uint64_t w[8];
    gmux_dev_desc_encode(&d, 0, w);
    for (int k = 0; k < 8; k++) {
        assert_true(w[k] & GMUX_DEV_DESC_VALID);
        uint64_t torn[8];
        for (int j = 0; j < 8; j++)
            torn[j] = j == k ? 0 : w[j]; /* one word not yet written */
        assert_false(net_desc_complete(torn));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encoders_agree),
        cmocka_unit_test(test_every_word_flagged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
