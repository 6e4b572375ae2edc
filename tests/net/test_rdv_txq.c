/*
 * The rendezvous server's queue of frames for one rank (rdv_frame.c, compiled
 * into this test with its allocation seam, NET_RDV_TEST_ALLOC) past the slots
 * it starts with: it grows, it reuses the slots of frames already sent, and a
 * growth without memory marks it failed without losing what it held. Each
 * frame must reach the socket whole and in the order it was queued. Until
 * 2026-12-03 no test queued more than the first slots (llvm-cov: the growth
 * and the reuse were never run).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "net/boot_proto.h"
#include "net/rdv_frame.h"

#define SLOTS 8u /* what net_rdv_create gives each queue */
#define SEND  (5 * COM_NS_PER_S)

/* The seam rdv_frame.c calls before each allocation: those of at least
 * fail_min bytes fail. */
static size_t fail_min = SIZE_MAX;

bool net_rdv_test_alloc_fails(size_t n);
bool net_rdv_test_alloc_fails(size_t n)
{
    return n >= fail_min;
}

static void tx_init(rdv_tx_t *tx)
{
    memset(tx, 0, sizeof(*tx));
    tx->q = malloc(SLOTS * sizeof(rdv_out_t));
    assert_non_null(tx->q);
    tx->cap = SLOTS;
}

static uint8_t byte_of(uint32_t frame, uint32_t at)
{
    return (uint8_t)(frame * 7u + at);
}

/* Frame i: an ALLGATHER of len bytes (none when len is 0) numbered i in its
 * rank field, queued; the caller keeps its own reference to the payload. */
static rdv_buf_t *push(rdv_tx_t *tx, uint32_t i, uint32_t len)
{
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_ALLGATHER, i, len};
    rdv_buf_t *b = NULL;
    if (len) {
        b = malloc(sizeof(*b) + len);
        assert_non_null(b);
        b->refs = 1;
        for (uint32_t k = 0; k < len; k++)
            b->bytes[k] = (char)byte_of(i, k);
    }
    net_rdv_tx_push(tx, 0, &h, b, NET_BOOT_MAX_LEN, SEND, NULL);
    return b;
}

/* Reads what fd holds now (non-blocking) onto the end of *got. */
static void read_some(int fd, uint8_t *got, size_t cap, size_t *have)
{
    for (;;) {
        ssize_t n = recv(fd, got + *have, cap - *have, MSG_DONTWAIT);
        if (n <= 0) {
            assert_true(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
            return;
        }
        *have += (size_t)n;
    }
}

/* got holds frames 0..count-1 of lens[], each whole, in order, and nothing more. */
static void check_stream(const uint8_t *got, size_t have, uint32_t count, const uint32_t *lens)
{
    size_t at = 0;
    for (uint32_t i = 0; i < count; i++) {
        net_boot_hdr_t h;
        assert_true(at + sizeof(h) <= have);
        memcpy(&h, got + at, sizeof(h));
        at += sizeof(h);
        assert_int_equal(h.magic, NET_BOOT_MAGIC);
        assert_int_equal(h.type, NET_BOOT_ALLGATHER);
        assert_int_equal(h.rank, i);
        assert_int_equal(h.len, lens[i]);
        assert_true(at + h.len <= have);
        for (uint32_t k = 0; k < h.len; k++)
            assert_int_equal(got[at + k], byte_of(i, k));
        at += h.len;
    }
    assert_int_equal(at, have);
}

/* 20 frames into a queue of 8 slots: it doubles (twice), keeps a reference to
 * each payload, counts their bytes, and they leave whole and in order. */
static void test_queue_grows_past_its_slots(void **state)
{
    (void)state;
    enum { COUNT = 20 };
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    rdv_tx_t tx;
    tx_init(&tx);
    rdv_buf_t *b[COUNT];
    uint32_t lens[COUNT];
    size_t bytes = 0;
    for (uint32_t i = 0; i < COUNT; i++) {
        lens[i] = i % 3 == 0 ? 0 : 100 + i;
        b[i] = push(&tx, i, lens[i]);
        bytes += sizeof(net_boot_hdr_t) + lens[i];
    }
    assert_false(tx.failed);
    assert_int_equal(tx.n, COUNT);
    assert_int_equal(tx.cap, 4 * SLOTS);
    assert_int_equal(tx.bytes, bytes);
    for (uint32_t i = 0; i < COUNT; i++)
        if (b[i])
            assert_int_equal(b[i]->refs, 2);
    static uint8_t got[1 << 16];
    size_t have = 0;
    assert_true(net_rdv_tx_flush(&tx, sv[0], SEND, NULL)); /* a few KiB: the socket takes all */
    assert_int_equal(tx.n, 0);
    assert_int_equal(tx.bytes, 0);
    read_some(sv[1], got, sizeof(got), &have);
    check_stream(got, have, COUNT, lens);
    for (uint32_t i = 0; i < COUNT; i++) {
        if (b[i]) {
            assert_int_equal(b[i]->refs, 1); /* the queue's went with the frame */
            net_rdv_buf_put(b[i]);
        }
    }
    free(tx.q);
    close(sv[0]);
    close(sv[1]);
}

/* A full queue whose first frames have left (the socket took some, then
 * nothing more) moves the rest to the front for the next frame rather than
 * growing; draining it then gives every frame, whole and in order. */
static void test_queue_reuses_sent_slots(void **state)
{
    (void)state;
    enum { COUNT = 16, LEN = 8192 };
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int small = 16384; /* the kernel doubles it: a few frames fit, not eight */
    assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    rdv_tx_t tx;
    tx_init(&tx);
    uint32_t lens[COUNT];
    for (uint32_t i = 0; i < SLOTS; i++)
        net_rdv_buf_put(push(&tx, i, lens[i] = LEN + i)); /* the queue's ref only */
    assert_true(net_rdv_tx_flush(&tx, sv[0], SEND, NULL));
    uint32_t sent = tx.head;
    /* the case under test: some frames gone, the others fill the slots */
    assert_true(sent > 0 && tx.n > 0 && tx.head + tx.n == tx.cap);
    net_rdv_buf_put(push(&tx, SLOTS, lens[SLOTS] = LEN + SLOTS));
    assert_false(tx.failed);
    assert_int_equal(tx.cap, SLOTS); /* reused, not grown */
    assert_int_equal(tx.head, 0);
    assert_int_equal(tx.n, SLOTS - sent + 1);
    for (uint32_t i = SLOTS + 1; i < COUNT; i++)
        net_rdv_buf_put(push(&tx, i, lens[i] = LEN + i));
    static uint8_t got[COUNT * (LEN + COUNT + 16)];
    size_t have = 0;
    for (int round = 0; round < 10000 && tx.n > 0; round++) {
        read_some(sv[1], got, sizeof(got), &have);
        assert_true(net_rdv_tx_flush(&tx, sv[0], SEND, NULL));
    }
    assert_int_equal(tx.n, 0);
    read_some(sv[1], got, sizeof(got), &have);
    check_stream(got, have, COUNT, lens);
    free(tx.q);
    close(sv[0]);
    close(sv[1]);
}

/* The queue cannot grow: the frame is refused and the queue marked failed
 * (the server then drops the rank); what it held is kept, the refused
 * payload is not referenced, and later frames are refused too. Clearing it
 * gives every reference back and readies it again. */
static void test_queue_growth_without_memory(void **state)
{
    (void)state;
    rdv_tx_t tx;
    tx_init(&tx);
    rdv_buf_t *b[SLOTS + 2];
    for (uint32_t i = 0; i < SLOTS; i++)
        b[i] = push(&tx, i, 32);
    fail_min = 2 * SLOTS * sizeof(rdv_out_t);
    b[SLOTS] = push(&tx, SLOTS, 32);
    fail_min = SIZE_MAX;
    assert_true(tx.failed);
    assert_int_equal(tx.n, SLOTS);
    assert_int_equal(tx.cap, SLOTS);
    assert_int_equal(tx.bytes, SLOTS * (sizeof(net_boot_hdr_t) + 32));
    assert_int_equal(b[SLOTS]->refs, 1);
    b[SLOTS + 1] = push(&tx, SLOTS + 1, 32); /* memory back, the queue still failed */
    assert_int_equal(tx.n, SLOTS);
    assert_int_equal(b[SLOTS + 1]->refs, 1);
    for (uint32_t i = 0; i < SLOTS; i++)
        assert_int_equal(b[i]->refs, 2);
    net_rdv_tx_clear(&tx);
    assert_false(tx.failed);
    assert_int_equal(tx.n, 0);
    assert_int_equal(tx.bytes, 0);
    for (uint32_t i = 0; i < SLOTS + 2; i++) {
        assert_int_equal(b[i]->refs, 1);
        net_rdv_buf_put(b[i]);
    }
    free(tx.q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_grows_past_its_slots),
        cmocka_unit_test(test_queue_reuses_sent_slots),
        cmocka_unit_test(test_queue_growth_without_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
