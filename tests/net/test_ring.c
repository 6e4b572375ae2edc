/* Tests of net_ring: FIFO, back-pressure, slot clearing, torn writes, and
 * several producer threads against one consumer. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/ring.h"

static net_desc_t desc(uint32_t peer, uint64_t seq)
{
    net_desc_t d = {.version = NET_PROTO_VERSION,
                    .opcode = NET_OP_PUT,
                    .peer = peer,
                    .offset = seq,
                    .size = ~seq};
    return d;
}

static void test_create_rejects_bad_sizes(void **state)
{
    (void)state;
    net_ring_t r;
    assert_int_equal(net_ring_create(0, &r), GMUX_ERR_INVALID);
    assert_int_equal(net_ring_create(3, &r), GMUX_ERR_INVALID);
    assert_int_equal(net_ring_create(8, &r), GMUX_OK);
    assert_int_equal((uintptr_t)r.slots % 4096, 0);
    net_ring_destroy(&r);
}

static void test_fifo_backpressure_and_clearing(void **state)
{
    (void)state;
    net_ring_t r;
    assert_int_equal(net_ring_create(4, &r), GMUX_OK);
    net_desc_t d, out;
    assert_int_equal(net_ring_peek(&r, &out), GMUX_ERR_BUSY);
    for (uint64_t i = 0; i < 4; i++) {
        d = desc(1, i);
        assert_int_equal(net_ring_try_push(&r, &d), GMUX_OK);
        assert_int_equal(d.ticket, i);
    }
    d = desc(1, 99);
    assert_int_equal(net_ring_try_push(&r, &d), GMUX_ERR_BUSY); /* full */
    assert_int_equal(net_ring_pending(&r), 4);
    for (uint64_t lap = 0; lap < 3; lap++) {
        for (uint64_t i = 0; i < 4; i++) {
            uint64_t want = lap * 4 + i;
            assert_int_equal(net_ring_peek(&r, &out), GMUX_OK);
            assert_true(out.offset == want && out.size == ~want);
            uint64_t h = net_ring_head(&r);
            net_ring_pop(&r);
            const net_desc_slot_t *s = &r.slots[h & 3];
            for (int w = 0; w < NET_DESC_WORDS; w++)
                assert_true(s->w[w] == 0); /* cleared for the next lap */
            d = desc(1, want + 4);
            assert_int_equal(net_ring_try_push(&r, &d), GMUX_OK);
        }
    }
    assert_int_equal(net_ring_head(&r), 12);
    assert_int_equal(net_ring_tail(&r), 16);
    net_ring_destroy(&r);
}

static void test_torn_write_is_not_consumed(void **state)
{
    (void)state;
    net_ring_t r;
    assert_int_equal(net_ring_create(8, &r), GMUX_OK);
    assert_true(net_ring_idle(&r));
    uint64_t t;
    assert_int_equal(net_ring_claim(&r, &t), GMUX_OK);
    assert_false(net_ring_idle(&r)); /* claimed, not written: the scan must look */
    net_desc_t d = desc(2, 7), out;
    d.ticket = (uint32_t)t;
    uint64_t w[NET_DESC_WORDS];
    net_desc_encode(&d, w);
    /* words land in reverse order, like a reordered PCIe write */
    for (int i = NET_DESC_WORDS - 1; i >= 0; i--) {
        assert_int_equal(net_ring_peek(&r, &out), GMUX_ERR_BUSY);
        net_ring_store_word(&r, t, i, w[i]);
    }
    assert_int_equal(net_ring_peek(&r, &out), GMUX_OK);
    assert_int_equal(out.peer, 2);
    assert_false(net_ring_idle(&r));
    net_ring_pop(&r);
    assert_true(net_ring_idle(&r)); /* consumed: nothing left to drain */
    /* a stale descriptor (ticket of another lap) is refused */
    assert_int_equal(net_ring_claim(&r, &t), GMUX_OK);
    d.ticket = (uint32_t)t + 8;
    net_desc_encode(&d, w);
    for (int i = 0; i < NET_DESC_WORDS; i++)
        net_ring_store_word(&r, t, i, w[i]);
    assert_int_equal(net_ring_peek(&r, &out), GMUX_ERR_PARSE);
    net_ring_destroy(&r);
}

#define PRODUCERS 4
#ifdef __SANITIZE_THREAD__
#define PER_PRODUCER 5000
#else
#define PER_PRODUCER 100000
#endif

static net_ring_t shared;

static void *producer(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < PER_PRODUCER; i++) {
        net_desc_t d = desc(id, i);
        while (net_ring_try_push(&shared, &d) == GMUX_ERR_BUSY)
            sched_yield();
    }
    return NULL;
}

/* The consumer's batch form: look ahead, then consume several at once. */
static void test_peek_ahead_and_pop_batch(void **state)
{
    (void)state;
    net_ring_t r;
    assert_int_equal(net_ring_create(8, &r), GMUX_OK);
    net_desc_t d, out;
    for (uint64_t i = 0; i < 3; i++) {
        d = desc(2, 10 + i);
        assert_int_equal(net_ring_try_push(&r, &d), GMUX_OK);
    }
    for (uint64_t k = 0; k < 3; k++) {
        assert_int_equal(net_ring_peek_at(&r, k, &out), GMUX_OK);
        assert_int_equal(out.offset, 10 + k);
    }
    assert_int_equal(net_ring_peek_at(&r, 3, &out), GMUX_ERR_BUSY); /* claimed by nobody */
    assert_int_equal(net_ring_peek_at(&r, 8, &out), GMUX_ERR_BUSY); /* past the ring */
    assert_int_equal(net_ring_head(&r), 0);                         /* looking consumes nothing */
    net_ring_pop_n(&r, 2);
    assert_int_equal(net_ring_head(&r), 2);
    for (int s = 0; s < 2; s++)
        for (int w = 0; w < NET_DESC_WORDS; w++)
            assert_int_equal(r.slots[s].w[w], 0);
    assert_int_not_equal(r.slots[2].w[0], 0);
    assert_int_equal(net_ring_peek(&r, &out), GMUX_OK);
    assert_int_equal(out.offset, 12);
    /* a slot ahead that is half written stops the look-ahead there */
    uint64_t t;
    assert_int_equal(net_ring_claim(&r, &t), GMUX_OK);
    net_ring_store_word(&r, t, 0, NET_DESC_VALID);
    assert_int_equal(net_ring_peek_at(&r, 1, &out), GMUX_ERR_BUSY);
    net_ring_pop_n(&r, 0);
    assert_int_equal(net_ring_head(&r), 2);
    net_ring_destroy(&r);
}

static void test_concurrent_producers(void **state)
{
    (void)state;
    assert_int_equal(net_ring_create(64, &shared), GMUX_OK);
    pthread_t th[PRODUCERS];
    for (uintptr_t p = 0; p < PRODUCERS; p++)
        assert_int_equal(pthread_create(&th[p], NULL, producer, (void *)p), 0);
    uint64_t next[PRODUCERS] = {0};
    uint64_t total = 0;
    while (total < (uint64_t)PRODUCERS * PER_PRODUCER) {
        net_desc_t d;
        gmux_status_t st = net_ring_peek(&shared, &d);
        if (st == GMUX_ERR_BUSY) {
            sched_yield();
            continue;
        }
        assert_int_equal(st, GMUX_OK);
        assert_true(d.peer < PRODUCERS);
        /* each producer's descriptors come out in the order it pushed them */
        assert_true(d.offset == next[d.peer]);
        assert_true(d.size == ~d.offset);
        next[d.peer]++;
        net_ring_pop(&shared);
        total++;
    }
    for (int p = 0; p < PRODUCERS; p++) {
        pthread_join(th[p], NULL);
        assert_true(next[p] == PER_PRODUCER);
    }
    assert_int_equal(net_ring_pending(&shared), 0);
    net_ring_destroy(&shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_rejects_bad_sizes),
        cmocka_unit_test(test_fifo_backpressure_and_clearing),
        cmocka_unit_test(test_torn_write_is_not_consumed),
        cmocka_unit_test(test_peek_ahead_and_pop_batch),
        cmocka_unit_test(test_concurrent_producers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
