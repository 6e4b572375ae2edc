/* Tests of net_batch: which consecutive descriptors of a ring the proxy
 * merges into one write, and what that write carries (bytes, signal,
 * counters). A wrong merge either loses or reorders data or lets a signal
 * ride on a write that comes before a payload it must follow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gmux/net.h>

#include "net/coalesce.h"

typedef struct fake_ring {
    net_desc_t d[80];
    int n;
    int busy_at; /* peek of this index answers BUSY (-1: none) */
    int calls;
} fake_ring_t;

static gmux_status_t fake_peek(void *arg, uint64_t k, net_desc_t *d)
{
    fake_ring_t *r = arg;
    r->calls++;
    if ((int)k >= r->n || (int)k == r->busy_at)
        return GMUX_ERR_BUSY;
    *d = r->d[k];
    return GMUX_OK;
}

static net_desc_t value_at(uint64_t off, uint64_t v)
{
    net_desc_t d = {.version = NET_PROTO_VERSION,
                    .opcode = NET_OP_PUT_VALUE,
                    .window = 1,
                    .ctx = 2,
                    .peer = 3,
                    .offset = off,
                    .src = v,
                    .size = 8};
    return d;
}

static net_desc_t put_at(uint64_t off, const void *src, uint64_t size)
{
    net_desc_t d = value_at(off, 0);
    d.opcode = NET_OP_PUT;
    d.src = (uint64_t)(uintptr_t)src;
    d.size = size;
    return d;
}

static net_desc_t signal_desc(uint32_t id, uint64_t v)
{
    net_desc_t d = {.version = NET_PROTO_VERSION,
                    .opcode = NET_OP_SIGNAL,
                    .signal_op = GMUX_SIGNAL_SET,
                    .ctx = 2,
                    .peer = 3,
                    .signal_id = id,
                    .signal_value = v};
    return d;
}

static void with_counter(net_desc_t *d, uint32_t c)
{
    d->flags |= NET_DESC_F_COUNTER;
    d->counter_id = c;
}

static net_batch_t b; /* 4 KiB of payload: not on the stack */

static void test_gathers_contiguous_values_and_folds_signal(void **state)
{
    (void)state;
    fake_ring_t r = {.n = 5, .busy_at = -1};
    for (int i = 0; i < 3; i++)
        r.d[i] = value_at(64 + 8 * (uint64_t)i, 0x1111111111111111ull * (uint64_t)(i + 1));
    r.d[3] = signal_desc(7, 99);
    r.d[4] = value_at(88, 4); /* after the signal: never in this batch */
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 4);
    assert_true(b.gathered);
    assert_int_equal(b.d.opcode, NET_OP_PUT);
    assert_int_equal(b.d.offset, 64);
    assert_int_equal(b.d.size, 24);
    assert_int_equal(b.d.window, 1);
    assert_int_equal(b.d.peer, 3);
    assert_int_equal(b.d.ctx, 2);
    assert_ptr_equal((void *)(uintptr_t)b.d.src, b.data);
    for (int i = 0; i < 3; i++) {
        uint64_t v;
        memcpy(&v, b.data + 8 * i, 8);
        assert_true(v == 0x1111111111111111ull * (uint64_t)(i + 1));
    }
    assert_int_equal(b.d.signal_op, GMUX_SIGNAL_SET);
    assert_int_equal(b.d.signal_id, 7);
    assert_int_equal(b.d.signal_value, 99);
}

static void test_short_values_keep_their_bytes(void **state)
{
    (void)state;
    fake_ring_t r = {.n = 2, .busy_at = -1};
    r.d[0] = value_at(0, 0xaabbccdd);
    r.d[0].size = 3; /* low three bytes: dd cc bb */
    r.d[1] = value_at(3, 0x0102);
    r.d[1].size = 2;
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 2);
    assert_int_equal(b.d.size, 5);
    const uint8_t want[5] = {0xdd, 0xcc, 0xbb, 0x02, 0x01};
    assert_memory_equal(b.data, want, 5);
}

static void test_gap_or_other_window_is_not_gathered(void **state)
{
    (void)state;
    fake_ring_t r = {.n = 2, .busy_at = -1};
    r.d[0] = value_at(0, 1);
    r.d[1] = value_at(16, 2); /* a gap of 8 bytes */
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 1);
    assert_false(b.gathered);
    assert_int_equal(b.d.opcode, NET_OP_PUT_VALUE);
    assert_int_equal(b.d.src, 1);
    r.d[1] = value_at(8, 2);
    r.d[1].window = 2;
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 1);
    r.d[1] = value_at(8, 2);
    r.d[1].peer = 4; /* not this ring's stream: left to fail alone */
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 1);
    r.d[1] = signal_desc(1, 1);
    r.d[1].ctx = 5;
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 1);
    assert_int_equal(b.d.signal_op, GMUX_SIGNAL_NONE);
}

static void test_gather_stops_at_the_size_limit(void **state)
{
    (void)state;
    static uint8_t src[3][512];
    for (int i = 0; i < 3; i++)
        memset(src[i], 'a' + i, sizeof(src[i]));
    fake_ring_t r = {.n = 3, .busy_at = -1};
    for (int i = 0; i < 3; i++)
        r.d[i] = put_at(512 * (uint64_t)i, src[i], 512);
    net_batch_build(&b, &r.d[0], 1024, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 2);
    assert_int_equal(b.d.size, 1024);
    assert_memory_equal(b.data, src[0], 512);
    assert_memory_equal(b.data + 512, src[1], 512);
    /* the next batch starts where this one ended */
    net_batch_build(&b, &r.d[2], 1024, true, fake_peek, &r);
    assert_false(b.gathered);
    /* a put larger than the limit is never copied, but a signal may follow it */
    fake_ring_t big = {.n = 2, .busy_at = -1};
    big.d[0] = put_at(0, src, 1536);
    big.d[1] = signal_desc(2, 5);
    net_batch_build(&b, &big.d[0], 1024, true, fake_peek, &big);
    assert_false(b.gathered);
    assert_int_equal(b.ndesc, 2);
    assert_int_equal(b.d.src, (uint64_t)(uintptr_t)src);
    assert_int_equal(b.d.size, 1536);
    assert_int_equal(b.d.signal_id, 2);
}

static void test_signal_inside_a_run_ends_it(void **state)
{
    (void)state;
    fake_ring_t r = {.n = 4, .busy_at = -1};
    r.d[0] = value_at(0, 1);
    r.d[1] = value_at(8, 2);
    r.d[1].signal_op = GMUX_SIGNAL_ADD;
    r.d[1].signal_id = 4;
    r.d[1].signal_value = 1;
    r.d[2] = value_at(16, 3);
    r.d[3] = signal_desc(9, 9);
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 2);
    assert_int_equal(b.d.size, 16);
    assert_int_equal(b.d.signal_op, GMUX_SIGNAL_ADD);
    assert_int_equal(b.d.signal_id, 4);
    /* a put that carries its own signal takes nothing after it */
    net_batch_build(&b, &r.d[1], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 1);
}

static void test_counters_are_collected(void **state)
{
    (void)state;
    static uint8_t src[16];
    fake_ring_t r = {.n = 3, .busy_at = -1};
    r.d[0] = put_at(0, src, 16);
    with_counter(&r.d[0], 5);
    r.d[1] = value_at(16, 1);
    r.d[2] = put_at(24, src, 16);
    with_counter(&r.d[2], 6);
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 3);
    assert_int_equal(b.ncounter, 2);
    assert_int_equal(b.counters[0], 5);
    assert_int_equal(b.counters[1], 6);
    assert_false(b.d.flags & NET_DESC_F_COUNTER); /* bumped from the list, not twice */
    /* not gathered: the put keeps its own counter */
    r.d[1].offset = 99;
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 1);
    assert_int_equal(b.ncounter, 0);
    assert_true(b.d.flags & NET_DESC_F_COUNTER);
    assert_int_equal(b.d.counter_id, 5);
}

static void test_incomplete_next_slot_ends_the_batch(void **state)
{
    (void)state;
    fake_ring_t r = {.n = 4, .busy_at = 2};
    for (int i = 0; i < 4; i++)
        r.d[i] = value_at(8 * (uint64_t)i, (uint64_t)i);
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 2); /* never waits for, or skips, slot 2 */
}

static void test_no_gather_without_inject_and_fold_switch(void **state)
{
    (void)state;
    fake_ring_t r = {.n = 3, .busy_at = -1};
    r.d[0] = value_at(0, 1);
    r.d[1] = value_at(8, 2);
    r.d[2] = signal_desc(3, 3);
    net_batch_build(&b, &r.d[0], 0, true, fake_peek, &r); /* tcp: no inject */
    assert_int_equal(b.ndesc, 1);
    assert_false(b.gathered);
    r.d[1] = signal_desc(3, 3);
    net_batch_build(&b, &r.d[0], 0, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 2);
    assert_int_equal(b.d.opcode, NET_OP_PUT_VALUE);
    assert_int_equal(b.d.signal_id, 3);
    net_batch_build(&b, &r.d[0], 0, false, fake_peek, &r);
    assert_int_equal(b.ndesc, 1);
    assert_int_equal(b.d.signal_op, GMUX_SIGNAL_NONE);
    /* a lone signal or an empty put starts nothing */
    net_batch_build(&b, &r.d[1], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 1);
    r.d[0] = put_at(0, NULL, 0);
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, 1);
    assert_int_equal(b.d.signal_op, GMUX_SIGNAL_NONE);
}

static void test_batch_is_bounded(void **state)
{
    (void)state;
    fake_ring_t r = {.n = 80, .busy_at = -1};
    for (int i = 0; i < 80; i++)
        r.d[i] = value_at(8 * (uint64_t)i, (uint64_t)i);
    net_batch_build(&b, &r.d[0], 4096, true, fake_peek, &r);
    assert_int_equal(b.ndesc, NET_BATCH_MAX);
    assert_int_equal(b.d.size, 8 * NET_BATCH_MAX);
    uint64_t last;
    memcpy(&last, b.data + 8 * (NET_BATCH_MAX - 1), 8);
    assert_int_equal(last, NET_BATCH_MAX - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gathers_contiguous_values_and_folds_signal),
        cmocka_unit_test(test_short_values_keep_their_bytes),
        cmocka_unit_test(test_gap_or_other_window_is_not_gathered),
        cmocka_unit_test(test_gather_stops_at_the_size_limit),
        cmocka_unit_test(test_signal_inside_a_run_ends_it),
        cmocka_unit_test(test_counters_are_collected),
        cmocka_unit_test(test_incomplete_next_slot_ends_the_batch),
        cmocka_unit_test(test_no_gather_without_inject_and_fold_switch),
        cmocka_unit_test(test_batch_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
