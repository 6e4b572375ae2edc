/*
 * The device push (gmux_dev_push_ in net_device.cuh, compiled here as host
 * code) against a ring in plain memory: which slot each push claims, what the
 * ring's hints become, and that stale hints (CPU producers moved the tail,
 * the proxy moved the head) never make a push overwrite a slot the consumer
 * has not released, nor report a full ring that is not; and the batched put:
 * consecutive tickets, pieces of at most half a ring, the signal on the
 * last put only.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

extern "C" {
#include <cmocka.h>
}

#include <gmux/net_device.cuh>

#define NSLOTS 4u

typedef struct {
    uint64_t slots[NSLOTS * 8];
    uint64_t tail, head;
    int32_t ctx_error[1];
    gmux_dev_ring_t ring;
    gmux_dev_handle_t h;
} fake_t;

static void fake_init(fake_t *f)
{
    memset(f, 0, sizeof(*f));
    f->ring.slots = f->slots;
    f->ring.tail = &f->tail;
    f->ring.head = &f->head;
    f->h.rank = 0;
    f->h.size = 1;
    f->h.nctx = 1;
    f->h.nslots = NSLOTS;
    f->h.nsig = 1;
    f->h.timeout_ns = 2000000; /* 2 ms: how long a full ring is retried */
    f->h.rings = &f->ring;
    f->h.ctx_error = f->ctx_error;
}

/* A fake ring whose claims use `mode` and count into stats. */
static void fake_init_counted(fake_t *f, uint64_t *stats, uint32_t mode)
{
    fake_init(f);
    stats[0] = stats[1] = 0;
    f->h.claim_stats = stats;
    f->h.claim_mode = mode;
}

static gmux_status_t push(fake_t *f, uint64_t value)
{
    return gmux_dev_put_value(f->h, 0, 0, 0, 0, value, 8, NULL);
}

/* The ticket and value in slot s (the descriptor's words 1 and 4). */
static uint32_t slot_ticket(const fake_t *f, unsigned s)
{
    return (uint32_t)f->slots[s * 8 + 1];
}

static uint64_t slot_value(const fake_t *f, unsigned s)
{
    return f->slots[s * 8 + 4] & ~GMUX_DEV_DESC_VALID;
}

/* The consumer: releases every slot below new_head. */
static void consume_to(fake_t *f, uint64_t new_head)
{
    for (uint64_t t = f->head; t < new_head; t++)
        memset(&f->slots[(t % NSLOTS) * 8], 0, 8 * sizeof(uint64_t));
    f->head = new_head;
}

static void test_fills_in_order_then_full(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    for (unsigned i = 0; i < NSLOTS; i++) {
        assert_int_equal(push(&f, 100 + i), GMUX_OK);
        assert_int_equal(slot_ticket(&f, i), i);
        assert_int_equal(slot_value(&f, i), 100 + i);
        assert_int_equal(f.ring.tail_hint, i + 1);
    }
    assert_int_equal(f.tail, NSLOTS);
    /* nothing consumed: the fifth push times out and claims nothing */
    assert_int_equal(push(&f, 999), GMUX_ERR_TIMEOUT);
    assert_int_equal(f.tail, NSLOTS);
    assert_int_equal(slot_value(&f, 0), 100);
    /* the consumer frees two slots: the stale head hint (0) is re-read */
    consume_to(&f, 2);
    assert_int_equal(push(&f, 104), GMUX_OK);
    assert_int_equal(f.ring.head_hint, 2);
    assert_int_equal(slot_ticket(&f, 0), 4);
    assert_int_equal(slot_value(&f, 0), 104);
    assert_int_equal(push(&f, 105), GMUX_OK);
    assert_int_equal(slot_ticket(&f, 1), 5);
    assert_int_equal(push(&f, 106), GMUX_ERR_TIMEOUT);
    assert_int_equal(f.tail, 6);
    assert_int_equal(slot_value(&f, 2), 102); /* not overwritten */
}

static void test_stale_tail_hint(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    assert_int_equal(push(&f, 1), GMUX_OK);
    /* CPU producers claimed tickets 1..9 and the proxy consumed them all */
    f.tail = 10;
    consume_to(&f, 10);
    assert_int_equal(f.ring.tail_hint, 1);
    assert_int_equal(push(&f, 77), GMUX_OK);
    assert_int_equal(f.tail, 11);
    assert_int_equal(f.ring.tail_hint, 11);
    assert_int_equal(slot_ticket(&f, 10 % NSLOTS), 10);
    assert_int_equal(slot_value(&f, 10 % NSLOTS), 77);
}

static void test_stale_tail_hint_full_ring(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    /* the ring is full of CPU producers' descriptors (tickets 4..7) that the
     * device hints know nothing of: the push must not claim ticket 8 */
    f.head = 4;
    f.tail = 8;
    for (unsigned s = 0; s < NSLOTS; s++)
        f.slots[s * 8 + 4] = 500 + s;
    assert_int_equal(push(&f, 9), GMUX_ERR_TIMEOUT);
    assert_int_equal(f.tail, 8);
    for (unsigned s = 0; s < NSLOTS; s++)
        assert_int_equal(f.slots[s * 8 + 4], 500 + s);
    consume_to(&f, 5);
    assert_int_equal(push(&f, 9), GMUX_OK);
    assert_int_equal(f.tail, 9);
    assert_int_equal(slot_ticket(&f, 8 % NSLOTS), 8);
    assert_int_equal(f.ring.head_hint, 5);
}

/* Claim statistics: one claim per push, the stale hint's lost CAS counted. */
static void test_claim_stats(void **state)
{
    (void)state;
    fake_t f;
    uint64_t stats[2];
    fake_init_counted(&f, stats, GMUX_DEV_CLAIM_CAS);
    f.h.claim_backoff_ns = 1000000; /* a first loss is never waited for */
    assert_int_equal(push(&f, 1), GMUX_OK);
    assert_int_equal(push(&f, 2), GMUX_OK);
    assert_int_equal(stats[0], 2);
    assert_int_equal(stats[1], 0);
    f.tail = 7; /* CPU producers took tickets 2..6, the proxy consumed them */
    consume_to(&f, 7);
    assert_int_equal(push(&f, 3), GMUX_OK);
    assert_int_equal(stats[0], 3);
    assert_int_equal(stats[1], 1);
    assert_int_equal(slot_ticket(&f, 7 % NSLOTS), 7);
    /* a full ring is no lost CAS, and a push that times out claims nothing */
    for (uint64_t v = 4; v < 7; v++)
        assert_int_equal(push(&f, v), GMUX_OK);
    assert_int_equal(f.tail - f.head, NSLOTS);
    assert_int_equal(push(&f, 7), GMUX_ERR_TIMEOUT);
    assert_int_equal(stats[0], 6);
    assert_int_equal(stats[1], 1);
}

/* The backoff after lost CASes: none for the first loss or with base 0,
 * then a random time in [w/2, w] with w doubling per loss up to 256x the
 * base (and 1 ms); seeds spread it. */
static void test_backoff_window(void **state)
{
    (void)state;
    assert_int_equal(gmux_dev_backoff_ns_(0, 5, 1), 0);
    assert_int_equal(gmux_dev_backoff_ns_(100, 0, 1), 0);
    assert_int_equal(gmux_dev_backoff_ns_(100, 1, 1), 0);
    for (unsigned losses = 2; losses < 40; losses++) {
        unsigned k = losses - 2 > 8 ? 8 : losses - 2;
        uint64_t w = 100ull << k, lo = UINT64_MAX, hi = 0;
        for (uint64_t seed = 0; seed < 200; seed++) {
            uint64_t ns = gmux_dev_backoff_ns_(100, losses, seed * 7919);
            assert_true(ns >= w / 2 && ns <= w);
            lo = ns < lo ? ns : lo;
            hi = ns > hi ? ns : hi;
        }
        assert_true(hi - lo >= w / 4); /* spread over the window, not one value */
    }
    /* the cap: 1 ms whatever the base */
    assert_true(gmux_dev_backoff_ns_(100000, 12, 3) <= 1000000);
    assert_true(gmux_dev_backoff_ns_(100000, 12, 3) >= 500000);
}

/* The fetch-and-add claim: the same slots and hints as the CAS claim
 * uncontended; a ring full by the hints times out without claiming; a
 * producer whose stale hints let it take a ticket past the free slots waits
 * for its own slot, and if none frees, abandons the ticket and says so in the
 * context's error word. */
static void test_faa_claim(void **state)
{
    (void)state;
    fake_t f;
    uint64_t stats[2];
    fake_init_counted(&f, stats, GMUX_DEV_CLAIM_FAA);
    for (unsigned i = 0; i < NSLOTS; i++) {
        assert_int_equal(push(&f, 100 + i), GMUX_OK);
        assert_int_equal(slot_ticket(&f, i), i);
        assert_int_equal(f.ring.tail_hint, i + 1);
    }
    assert_int_equal(push(&f, 999), GMUX_ERR_TIMEOUT); /* full by the hints */
    assert_int_equal(f.tail, NSLOTS);
    assert_int_equal(f.ctx_error[0], 0);
    consume_to(&f, 3);
    assert_int_equal(push(&f, 104), GMUX_OK);
    assert_int_equal(slot_ticket(&f, 0), 4);
    assert_int_equal(stats[0], NSLOTS + 1);
    assert_int_equal(stats[1], 0);
    /* CPU producers filled the ring behind the device's back (tickets 5..6):
     * the hints show room, the claim takes ticket 7, whose slot still holds
     * ticket 3's descriptor; nobody consumes, so it gives up */
    f.tail = 7;
    assert_int_equal(push(&f, 105), GMUX_ERR_TIMEOUT);
    assert_int_equal(f.tail, 8); /* the ticket is gone */
    assert_int_equal(slot_ticket(&f, 7 % NSLOTS), 3);
    assert_int_equal(f.ctx_error[0], (int32_t)GMUX_ERR_TIMEOUT);
}

struct faa_consumer {
    fake_t *f;
    uint64_t to;
};

static void *faa_consume_later(void *p)
{
    struct faa_consumer *c = (struct faa_consumer *)p;
    /* Free the slots only once the producer has read the head in its wait
     * after the claim (it raises the head hint to what it read just before
     * it decides to wait): a fixed 0.2 ms pause here let a consumer run
     * first on a loaded machine, and the claim then never waited. Bounded. */
    uint64_t seen = __atomic_load_n(&c->f->head, __ATOMIC_ACQUIRE);
    for (int i = 0; i < 100000 && __atomic_load_n(&c->f->ring.head_hint, __ATOMIC_ACQUIRE) < seen;
         i++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    uint64_t t = __atomic_load_n(&c->f->head, __ATOMIC_ACQUIRE);
    for (; t < c->to; t++)
        for (int w = 0; w < 8; w++)
            __atomic_store_n(&c->f->slots[(t % NSLOTS) * 8 + w], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->f->head, c->to, __ATOMIC_RELEASE);
    return NULL;
}

/* The tail hint may lag behind the head hint (another thread's claim, then
 * the proxy's consumption of it, seen before that claim's hint): that is an
 * empty ring, not a full one (the subtraction used to wrap, and the claim
 * waited for room until its timeout). */
static void test_faa_lagging_tail_hint(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    f.h.claim_mode = GMUX_DEV_CLAIM_FAA;
    f.tail = f.head = 3;
    f.ring.tail_hint = 2;
    f.ring.head_hint = 3;
    assert_int_equal(push(&f, 42), GMUX_OK);
    assert_int_equal(f.tail, 4);
    assert_int_equal(slot_ticket(&f, 3), 3);
    assert_int_equal(f.ring.tail_hint, 4);
}

/* A claim past the free slots waits for the consumer, then writes its slot. */
static void test_faa_waits_for_its_slot(void **state)
{
    (void)state;
    fake_t f;
    uint64_t stats[2];
    fake_init_counted(&f, stats, GMUX_DEV_CLAIM_FAA);
    f.h.timeout_ns = 10ull * 1000 * 1000 * 1000; /* the consumer comes long before */
    f.head = 1;
    f.tail = 5; /* full; the device's hints (0, 0) show an empty ring */
    struct faa_consumer c = {&f, 2};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, faa_consume_later, &c), 0);
    assert_int_equal(push(&f, 55), GMUX_OK);
    pthread_join(th, NULL);
    assert_int_equal(f.tail, 6);
    assert_int_equal(slot_ticket(&f, 5 % NSLOTS), 5);
    assert_int_equal(slot_value(&f, 5 % NSLOTS), 55);
    assert_int_equal(stats[0], 1);
    assert_int_equal(stats[1], 1); /* it waited */
    assert_int_equal(f.ctx_error[0], 0);
}

static gmux_status_t batch(fake_t *f, uint32_t n, uint64_t first_off, uint32_t *issued,
                           const gmux_op_opts_t *o)
{
    static uint64_t off[16], size[16];
    static const void *src[16];
    for (uint32_t i = 0; i < n; i++) {
        off[i] = first_off + 100 * i;
        size[i] = 8 + i;
        src[i] = (const void *)(uintptr_t)(0x1000 + i);
    }
    return gmux_dev_put_batch(f->h, 0, 0, 3, n, off, src, size, o, issued);
}

/* Word 3 of a slot is the put's offset, word 6 the signal value. */
static uint64_t slot_word(const fake_t *f, unsigned s, int w)
{
    return f->slots[s * 8 + w] & ~GMUX_DEV_DESC_VALID;
}

/* The batch, with either way of claiming: the same tickets, pieces and
 * timeouts (a fetch-and-add batch also claims only what the hints and the
 * head show room for). */
static void batch_checks(uint32_t mode)
{
    fake_t f;
    fake_init(&f);
    f.h.claim_mode = mode;
    gmux_op_opts_t o = {GMUX_SIGNAL_SET, 0, 42, GMUX_NO_COUNTER};
    uint32_t issued = 99;
    assert_int_equal(batch(&f, 2, 1000, &issued, &o), GMUX_OK);
    assert_int_equal(issued, 2);
    assert_int_equal(f.tail, 2);
    assert_int_equal(f.ring.tail_hint, 2);
    for (unsigned s = 0; s < 2; s++) {
        assert_int_equal(slot_ticket(&f, s), s);
        assert_int_equal(slot_word(&f, s, 3), 1000 + 100 * s);
    }
    assert_int_equal(slot_word(&f, 0, 6), 0);  /* no signal on the first */
    assert_int_equal(slot_word(&f, 1, 6), 42); /* the last carries it */
    /* three more: pieces of at most 2 (half the ring); the first piece fits,
     * the second finds the ring full and times out, having issued 2 */
    assert_int_equal(batch(&f, 3, 2000, &issued, NULL), GMUX_ERR_TIMEOUT);
    assert_int_equal(issued, 2);
    assert_int_equal(f.tail, 4);
    assert_int_equal(slot_word(&f, 3, 3), 2100);
    /* drained: the next batch goes on from ticket 4 */
    consume_to(&f, 4);
    assert_int_equal(batch(&f, 2, 3000, &issued, NULL), GMUX_OK);
    assert_int_equal(slot_ticket(&f, 5 % NSLOTS), 5);
    assert_int_equal(slot_word(&f, 5 % NSLOTS, 3), 3100);
    consume_to(&f, 6);
    /* bad arguments claim nothing */
    assert_int_equal(gmux_dev_put_batch(f.h, 1, 0, 3, 1, NULL, NULL, NULL, NULL, &issued),
                     GMUX_ERR_INVALID);
    assert_int_equal(batch(&f, 0, 0, &issued, NULL), GMUX_OK);
    assert_int_equal(issued, 0);
    assert_int_equal(f.tail, 6);
}

static void test_batch(void **state)
{
    (void)state;
    batch_checks(GMUX_DEV_CLAIM_CAS);
}

static void test_batch_faa(void **state)
{
    (void)state;
    batch_checks(GMUX_DEV_CLAIM_FAA);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fills_in_order_then_full),
        cmocka_unit_test(test_stale_tail_hint),
        cmocka_unit_test(test_stale_tail_hint_full_ring),
        cmocka_unit_test(test_batch),
        cmocka_unit_test(test_batch_faa),
        cmocka_unit_test(test_claim_stats),
        cmocka_unit_test(test_backoff_window),
        cmocka_unit_test(test_faa_claim),
        cmocka_unit_test(test_faa_waits_for_its_slot),
        cmocka_unit_test(test_faa_lagging_tail_hint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
