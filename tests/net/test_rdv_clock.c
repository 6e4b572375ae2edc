/*
 * The rendezvous server's deadlines (rdv.c) on a clock the test moves
 * (net_rdv_set_clock), the ranks played with plain sockets by the test's one
 * thread: what a rank did between two steps, not how the host scheduled the
 * server and the rank, decides whether it is dropped.
 *
 * A rank that reads its result slowly but steadily is kept: also when its
 * receive buffer is so small that the server's socket has no room for a
 * write from one step to the next (the rank's reading shows in the bytes
 * its kernel acknowledged, SIOCOUTQ), and also when the server's own loop
 * was away longer than the deadline while the rank read. A frame or a HELLO
 * that arrived whole while the server was away is taken. A rank that stops
 * reading is dropped once the deadline has passed without a byte read, not
 * before. test_slow_reader_kept used to run on the real clock, with a
 * reader that slept between reads: under load (two `yes` per core) a stall
 * of the server's thread counted against the rank, 1 run in 40.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "net/boot_proto.h"
#include "net/rdv.h"
#include "trdv.h"

#define DEADLINE  COM_NS_PER_S        /* the send and receive deadlines here */
#define REAL_WAIT (60 * COM_NS_PER_S) /* the most a test waits for a socket */

static uint64_t now_ns; /* the server's clock */
static int gone[2];     /* times announced gone, per rank */

static uint64_t test_now(void *arg)
{
    (void)arg;
    return now_ns;
}

static void count_gone(void *arg, int rank)
{
    (void)arg;
    gone[rank]++;
}

/* A rank played by the test: its socket, the server's end of it, and the
 * one frame it expects (header and payload) as it reads it. */
typedef struct reader {
    int fd, sfd;
    char *buf;
    size_t want, got;
    bool eof; /* the server closed the connection */
} reader_t;

/* A server for size ranks on the test's clock; not joined yet. */
static net_rdv_t *server(int size)
{
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", size, &rdv, NULL, 0), GMUX_OK);
    now_ns = 1000 * COM_NS_PER_S;
    net_rdv_set_clock(rdv, test_now, NULL);
    net_rdv_set_limits(rdv, DEADLINE, 0);
    net_rdv_set_recv_wait(rdv, DEADLINE);
    memset(gone, 0, sizeof(gone));
    net_rdv_on_gone(rdv, count_gone, NULL);
    return rdv;
}

/* The server, with size ranks (receive buffers of rcvbuf bytes) joined;
 * the send buffers of its ends fixed at sndbuf bytes (0: left to grow). */
static net_rdv_t *start(int size, int rcvbuf, int sndbuf, reader_t *rk)
{
    net_rdv_t *rdv = server(size);
    int port = net_rdv_port(rdv);
    for (int r = 0; r < size; r++) {
        rk[r] = (reader_t){.fd = rank_connect(port, r, size, rcvbuf)};
        uint64_t dl = com_deadline_after_ns(REAL_WAIT);
        while (!net_rdv_joined(rdv, r) && !com_deadline_passed(dl))
            net_rdv_step(rdv, 10);
        assert_true(net_rdv_joined(rdv, r));
        rk[r].sfd = server_end(port, rk[r].fd);
        assert_true(rk[r].sfd >= 0);
        if (sndbuf)
            assert_int_equal(setsockopt(rk[r].sfd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)),
                             0);
    }
    return rdv;
}

static void finish(net_rdv_t *rdv, reader_t *rk, int size)
{
    for (int r = 0; r < size; r++) {
        close(rk[r].fd);
        free(rk[r].buf);
    }
    net_rdv_destroy(rdv);
}

/* Rank r's contribution to an allgather, len bytes of `byte`, written as
 * its socket takes them, the server stepped meanwhile (its clock stands);
 * rk then awaits a result of `total` payload bytes. */
static void contribute(net_rdv_t *rdv, reader_t *rk, int r, uint32_t len, uint8_t byte,
                       size_t total)
{
    size_t n = sizeof(net_boot_hdr_t) + len;
    char *f = malloc(n);
    assert_non_null(f);
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_ALLGATHER, (uint32_t)r, len};
    memcpy(f, &h, sizeof(h));
    memset(f + sizeof(h), byte, len);
    uint64_t dl = com_deadline_after_ns(REAL_WAIT);
    for (size_t off = 0; off < n;) {
        ssize_t k = send(rk->fd, f + off, n - off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k > 0) {
            off += (size_t)k;
            continue;
        }
        assert_true(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
        assert_false(com_deadline_passed(dl));
        net_rdv_step(rdv, 1);
    }
    free(f);
    rk->want = sizeof(net_boot_hdr_t) + total;
    rk->buf = malloc(rk->want);
    assert_non_null(rk->buf);
}

/* Steps the server (its clock standing) until rk's result begins to arrive. */
static void await_result(net_rdv_t *rdv, const reader_t *rk)
{
    uint64_t dl = com_deadline_after_ns(REAL_WAIT);
    for (;;) {
        net_rdv_step(rdv, 1);
        struct pollfd p = {.fd = rk->fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0)
            return;
        assert_false(com_deadline_passed(dl));
    }
}

/* Reads what rk's socket holds now, max bytes at most, never waiting;
 * returns the bytes read. */
static size_t read_now(reader_t *rk, size_t max)
{
    size_t took = 0;
    while (rk->got < rk->want && took < max && !rk->eof) {
        size_t w = rk->want - rk->got < max - took ? rk->want - rk->got : max - took;
        ssize_t n = recv(rk->fd, rk->buf + rk->got, w, MSG_DONTWAIT);
        rk->eof = n == 0;
        if (n <= 0) {
            assert_true(n == 0 || errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
        rk->got += (size_t)n;
        took += (size_t)n;
    }
    return took;
}

/* the bytes the server's end of rk holds unacknowledged by rk's kernel */
static int unacked(const reader_t *rk)
{
    int v = -1;
    assert_int_equal(ioctl(rk->sfd, SIOCOUTQ, &v), 0);
    return v;
}

/* rk reads, the server not stepped, SEEN_STEP bytes at a time, until the
 * server's end of it shows it (fewer than `before` bytes unacknowledged:
 * the rank's kernel took more, which it does only as the rank reads), or
 * until its frame is whole. */
#define SEEN_STEP (4u << 10)
static void read_until_seen(reader_t *rk, int before)
{
    uint64_t dl = com_deadline_after_ns(REAL_WAIT);
    for (;;) {
        read_now(rk, SEEN_STEP);
        if (rk->got == rk->want || rk->eof || before == 0 || unacked(rk) < before)
            return;
        assert_false(com_deadline_passed(dl));
        struct pollfd p = {.fd = rk->fd, .events = POLLIN};
        poll(&p, 1, 10);
    }
}

/* rk's result: an allgather of size blobs of len bytes, blob r made of
 * byte[r] */
static void check_result(const reader_t *rk, int size, uint32_t len, const uint8_t *byte)
{
    assert_false(rk->eof);
    assert_int_equal(rk->got, rk->want);
    net_boot_hdr_t h;
    memcpy(&h, rk->buf, sizeof(h));
    assert_int_equal(h.type, NET_BOOT_ALLGATHER);
    assert_int_equal(h.len, (uint32_t)size * (4 + len));
    const uint8_t *q = (const uint8_t *)rk->buf + sizeof(h);
    for (int r = 0; r < size; r++, q += 4 + len) {
        uint32_t l;
        memcpy(&l, q, 4);
        assert_int_equal(l, len);
        assert_int_equal(q[4], byte[r]);
        assert_int_equal(q[4 + len / 2], byte[r]);
        assert_int_equal(q[4 + len - 1], byte[r]);
    }
}

/* A one-rank job whose result (ONE_BLOB bytes of `byte`) has begun to
 * reach the rank; its receive buffer is 16 KiB and the server's send buffer
 * fixed at 512 KiB, so that most of the result waits in the server's queue. */
#define ONE_BLOB (4u << 20)
static net_rdv_t *start_one(reader_t *rk, uint8_t byte)
{
    net_rdv_t *rdv = start(1, 16 << 10, 512 << 10, rk);
    contribute(rdv, rk, 0, ONE_BLOB, byte, 4 + (size_t)ONE_BLOB);
    await_result(rdv, rk);
    return rdv;
}

/* rk reads the rest of its frame, the server stepped meanwhile (its clock
 * standing). */
static void read_rest(net_rdv_t *rdv, reader_t *rk)
{
    uint64_t dl = com_deadline_after_ns(REAL_WAIT);
    while (rk->got < rk->want && !rk->eof) {
        assert_false(com_deadline_passed(dl));
        net_rdv_step(rdv, 1);
        read_now(rk, SIZE_MAX);
    }
}

/* Rank 0 reads its 16 MiB result SLOW_STEP bytes per 100 ms of the
 * server's clock (3.2 s in all), the server stepped while it does; rank 1
 * reads its own as fast as it comes. The send deadline (1 s) bounds a rank
 * that takes nothing, not one whose result takes longer than it to read:
 * rank 0 is kept, gets all of it, and rank 1 hears of no death. The
 * deadline used to run from when the frame was queued, so such a rank was
 * dropped half-way through. */
#define SLOW_STEP (512u << 10)
static void test_slow_reader_kept(void **state)
{
    (void)state;
    reader_t rk[2];
    net_rdv_t *rdv = start(2, 256 << 10, 0, rk);
    const uint32_t blob = 8u << 20;
    const size_t total = 2 * (4 + (size_t)blob);
    const uint8_t byte[2] = {0x00, 0x11};
    contribute(rdv, &rk[1], 1, blob, byte[1], total);
    contribute(rdv, &rk[0], 0, blob, byte[0], total);
    await_result(rdv, &rk[0]);
    uint64_t dl = com_deadline_after_ns(REAL_WAIT);
    while ((rk[0].got < rk[0].want || rk[1].got < rk[1].want) && !rk[0].eof && !rk[1].eof) {
        assert_false(com_deadline_passed(dl));
        now_ns += 100 * COM_NS_PER_MS;
        for (size_t took = 0; took < SLOW_STEP && rk[0].got < rk[0].want && !rk[0].eof;) {
            assert_false(com_deadline_passed(dl));
            net_rdv_step(rdv, 1);
            read_now(&rk[1], SIZE_MAX);
            took += read_now(&rk[0], SLOW_STEP - took);
        }
        net_rdv_step(rdv, 1);
        read_now(&rk[1], SIZE_MAX);
    }
    check_result(&rk[0], 2, blob, byte);
    check_result(&rk[1], 2, blob, byte);
    for (int i = 0; i < 5; i++)
        net_rdv_step(rdv, 1);
    char extra;
    assert_int_equal(recv(rk[1].fd, &extra, 1, MSG_DONTWAIT), -1); /* no DEAD frame */
    assert_int_equal(gone[0] + gone[1], 0);
    finish(rdv, rk, 2);
}

/* A rank with a 16 KiB receive buffer (it takes a few KiB of its 4 MiB
 * result at a time) reads what it holds once per 300 ms of the server's
 * clock, while the server's socket, its send buffer fixed at 512 KiB, has
 * no room for a write from one step to the next (it is writable again only
 * once a third of it is free). Its reading shows in the bytes its kernel
 * acknowledged (SIOCOUTQ): it is kept and gets all of it. The server counted
 * only the bytes its socket took, so the rank was dropped at the deadline
 * while it was reading. */
static void test_small_buffer_reader_kept(void **state)
{
    (void)state;
    reader_t rk[1];
    const uint8_t byte[1] = {0x5a};
    net_rdv_t *rdv = start_one(rk, byte[0]);
    uint64_t dl = com_deadline_after_ns(REAL_WAIT);
    while (rk[0].got < rk[0].want && !rk[0].eof) {
        assert_false(com_deadline_passed(dl));
        now_ns += 300 * COM_NS_PER_MS;
        net_rdv_step(rdv, 0);
        read_until_seen(&rk[0], unacked(&rk[0]));
    }
    check_result(&rk[0], 1, ONE_BLOB, byte);
    assert_int_equal(gone[0], 0);
    finish(rdv, rk, 1);
}

/* The server's own loop is away for three deadlines while the rank reads
 * its result: at its next step it sees that the rank read meanwhile, and
 * keeps it. It used to drop the rank at the top of that step, before
 * looking, its own absence blamed on the rank. */
static void test_server_stall_not_blamed(void **state)
{
    (void)state;
    reader_t rk[1];
    const uint8_t byte[1] = {0x33};
    net_rdv_t *rdv = start_one(rk, byte[0]);
    now_ns += 3 * DEADLINE; /* the server is away */
    read_until_seen(&rk[0], unacked(&rk[0]));
    net_rdv_step(rdv, 0);
    assert_int_equal(gone[0], 0);
    read_rest(rdv, &rk[0]);
    check_result(&rk[0], 1, ONE_BLOB, byte);
    assert_int_equal(gone[0], 0);
    finish(rdv, rk, 1);
}

/* A rank that read (seen by the server at time T) and then stops reading,
 * as a stopped process does, is kept at T + 0.5 s and dropped, announced
 * gone, once a deadline (1 s) has passed on the server's clock without it
 * reading; its connection is then closed. */
static void test_stopped_reader_dropped(void **state)
{
    (void)state;
    reader_t rk[1];
    net_rdv_t *rdv = start_one(rk, 0x44);
    read_until_seen(&rk[0], unacked(&rk[0]));
    net_rdv_step(rdv, 0); /* T: the server sees it read */
    now_ns += DEADLINE / 2;
    net_rdv_step(rdv, 0);
    assert_int_equal(gone[0], 0);
    int steps = 1;
    for (; steps < 20 && gone[0] == 0; steps++) {
        now_ns += DEADLINE / 2;
        net_rdv_step(rdv, 0);
    }
    assert_int_equal(gone[0], 1);
    assert_true(steps >= 2); /* not before T + 1 s */
    uint64_t dl = com_deadline_after_ns(REAL_WAIT);
    while (!rk[0].eof && rk[0].got < rk[0].want) {
        assert_false(com_deadline_passed(dl));
        struct pollfd p = {.fd = rk[0].fd, .events = POLLIN};
        poll(&p, 1, 10);
        read_now(&rk[0], SIZE_MAX);
    }
    assert_true(rk[0].eof);
    finish(rdv, rk, 1);
}

/* Waits until the server's end sfd holds n bytes unread. */
static void await_arrived(int sfd, int n)
{
    uint64_t dl = com_deadline_after_ns(REAL_WAIT);
    for (int have = 0; have < n;) {
        assert_false(com_deadline_passed(dl));
        struct pollfd p = {.fd = sfd, .events = POLLIN};
        poll(&p, 1, 10);
        assert_int_equal(ioctl(sfd, FIONREAD, &have), 0);
    }
}

/* Steps the server (its clock standing) until it has read all that its
 * end sfd holds. */
static void await_taken(net_rdv_t *rdv, int sfd)
{
    uint64_t dl = com_deadline_after_ns(REAL_WAIT);
    for (int have = 1; have > 0;) {
        assert_false(com_deadline_passed(dl));
        net_rdv_step(rdv, 1);
        assert_int_equal(ioctl(sfd, FIONREAD, &have), 0);
    }
}

/* A frame begun (half of it taken by the server) whose rest arrives while
 * the server's loop is away past the receive deadline is read at its next
 * step: the rank is kept and its allgather completes. It used to be
 * dropped at the top of that step, the rest unread. */
static void test_frame_rest_during_stall_taken(void **state)
{
    (void)state;
    reader_t rk[1];
    net_rdv_t *rdv = start(1, 64 << 10, 0, rk);
    struct {
        net_boot_hdr_t h;
        uint32_t v;
    } f = {{NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_ALLGATHER, 0, 4}, 0xabcd};
    const size_t half = sizeof(f) / 2;
    assert_int_equal(write(rk[0].fd, &f, half), (ssize_t)half);
    await_arrived(rk[0].sfd, (int)half);
    await_taken(rdv, rk[0].sfd);
    now_ns += 3 * DEADLINE; /* the server is away */
    assert_int_equal(write(rk[0].fd, (char *)&f + half, sizeof(f) - half),
                     (ssize_t)(sizeof(f) - half));
    await_arrived(rk[0].sfd, (int)(sizeof(f) - half));
    net_rdv_step(rdv, 0);
    assert_int_equal(gone[0], 0);
    rk[0].want = sizeof(net_boot_hdr_t) + 8;
    rk[0].buf = malloc(rk[0].want);
    assert_non_null(rk[0].buf);
    read_rest(rdv, &rk[0]);
    uint32_t v;
    memcpy(&v, rk[0].buf + sizeof(net_boot_hdr_t) + 4, 4);
    assert_int_equal(v, 0xabcd);
    finish(rdv, rk, 1);
}

/* A connection accepted by the server whose HELLO arrives while the
 * server's loop is away past the HELLO deadline joins at the next step. It
 * used to be closed at the top of that step, the HELLO unread. */
static void test_hello_during_stall_taken(void **state)
{
    (void)state;
    net_rdv_t *rdv = server(1);
    int port = net_rdv_port(rdv);
    int fd = plain_connect(port, 64 << 10);
    uint64_t dl = com_deadline_after_ns(REAL_WAIT);
    int sfd;
    while ((sfd = server_end(port, fd)) < 0) {
        assert_false(com_deadline_passed(dl));
        net_rdv_step(rdv, 1); /* until accepted */
    }
    now_ns += 3 * DEADLINE; /* the server is away */
    say_hello(fd, 0, 1);
    await_arrived(sfd, (int)(sizeof(net_boot_hdr_t) + 4));
    net_rdv_step(rdv, 0);
    assert_true(net_rdv_joined(rdv, 0));
    close(fd);
    net_rdv_destroy(rdv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_reader_kept),
        cmocka_unit_test(test_small_buffer_reader_kept),
        cmocka_unit_test(test_server_stall_not_blamed),
        cmocka_unit_test(test_stopped_reader_dropped),
        cmocka_unit_test(test_frame_rest_during_stall_taken),
        cmocka_unit_test(test_hello_during_stall_taken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
