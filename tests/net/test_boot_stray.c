/* Tests of the bootstrap's rendezvous server against connections that are
 * not well-behaved ranks: strays, partial or oversized HELLOs, a dead rank
 * that tries again, frames that stall, deadlines that pass mid-frame. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "net/boot.h"
#include "net/boot_proto.h"
#include "net/rdv.h"
#include "net/rdv_frame.h"
#include "net/sock.h"
#include "tboot.h"
#include "tproc.h"

/* A connection to the rendezvous port that is not a rank (a port scanner, a
 * stale client), by a plain socket. */
static int stray_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static atomic_int solo_done;
static gmux_status_t solo_st;

/* Rank 0 of a one-rank job: joins and passes a barrier. */
static void *solo_client(void *arg)
{
    (void)arg;
    net_boot_t *b;
    uint64_t dl = com_deadline_after_ns(15 * COM_NS_PER_S);
    solo_st = net_boot_open(0, 1, hostport, dl, &b);
    if (solo_st == GMUX_OK) {
        solo_st = net_boot_barrier(b, dl);
        net_boot_close(b, true);
    }
    atomic_store(&solo_done, 1);
    return NULL;
}

static void run_solo(net_rdv_t *rdv)
{
    atomic_store(&solo_done, 0);
    pthread_t th;
    pthread_create(&th, NULL, solo_client, NULL);
    while (!atomic_load(&solo_done))
        net_rdv_step(rdv, 10);
    pthread_join(th, NULL);
}

/* Connections that never say HELLO must not keep ranks out: the server
 * takes in at most 256 connections without HELLO, and those used to stay
 * forever, so once that many were open no rank was accepted any more and
 * the job timed out. */
static void test_silent_connections_expire(void **state)
{
    (void)state;
    enum { STRAYS = 256 };
    net_rdv_t *rdv = rdv_start(1);
    int fds[STRAYS];
    for (int i = 0; i < STRAYS; i++) {
        fds[i] = stray_connect(net_rdv_port(rdv));
        net_rdv_step(rdv, 10); /* takes it in */
    }
    run_solo(rdv);
    assert_int_equal(solo_st, GMUX_OK);
    for (int i = 0; i < STRAYS; i++)
        close(fds[i]);
    net_rdv_destroy(rdv);
}

/* A connection whose first frame announces a large payload (no HELLO is
 * that long) is dropped at its header: the server used to allocate the
 * announced bytes and wait for them, its one thread stalled for 5 s. */
static void test_oversized_hello_rejected(void **state)
{
    (void)state;
    net_rdv_t *rdv = rdv_start_patient(1);
    int fd = stray_connect(net_rdv_port(rdv));
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_HELLO, 0, NET_BOOT_MAX_LEN};
    assert_int_equal(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
    net_rdv_step(rdv, 10); /* takes it in */
    run_solo(rdv);
    assert_int_equal(solo_st, GMUX_OK); /* within its 15 s: not held by the stray */
    close(fd);
    net_rdv_destroy(rdv);
}

typedef struct hello_frame {
    net_boot_hdr_t h;
    uint32_t size;
} hello_frame_t;

static hello_frame_t hello_frame(uint32_t rank, uint32_t size)
{
    return (hello_frame_t){{NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_HELLO, rank, 4}, size};
}

/* Writes bytes [from, to) of a frame on a plain socket. */
static void write_part(int fd, const void *frame, size_t from, size_t to)
{
    assert_int_equal(write(fd, (const char *)frame + from, to - from), (ssize_t)(to - from));
}

/* Says HELLO as `rank` of a `size`-rank job on a plain socket. */
static void raw_hello(int fd, uint32_t rank, uint32_t size)
{
    hello_frame_t m = hello_frame(rank, size);
    write_part(fd, &m, 0, sizeof(m));
}

/* Whether the server closed fd (read gives end of file) within a few steps. */
static bool closed_by_server(net_rdv_t *rdv, int fd)
{
    for (int i = 0; i < 50; i++) {
        net_rdv_step(rdv, 10);
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
        if (n == 0)
            return true;
        if (n > 0)
            fail_msg("the server sent a byte to a connection it should not talk to");
    }
    return false;
}

/* A rank joins once: after its connection closed (it died), a new HELLO with
 * its number is refused, else a stranger would take a dead rank's place in
 * the collectives that follow. */
static void test_dead_rank_cannot_rejoin(void **state)
{
    (void)state;
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", 2, &rdv, NULL, 0), GMUX_OK);
    int first = stray_connect(net_rdv_port(rdv));
    raw_hello(first, 1, 2);
    assert_false(closed_by_server(rdv, first)); /* taken in as rank 1 */
    close(first);                               /* rank 1 dies */
    for (int i = 0; i < 5; i++)
        net_rdv_step(rdv, 10);
    int second = stray_connect(net_rdv_port(rdv));
    raw_hello(second, 1, 2);
    assert_true(closed_by_server(rdv, second));
    close(second);
    net_rdv_destroy(rdv);
}

/* A rank that joins after another died hears of the death: notices went
 * only to the ranks connected at the time, so a late joiner waited for the
 * dead rank in its first collective until its own deadline. Rank 2 dies
 * twice over here: once after its HELLO (its connection closes), and, in
 * the second job, before it ever connected (the launcher sees it exit). */
static gmux_status_t late_st[2];
static bool late_dead2[2];

static void *late_client(void *arg)
{
    int rank = (int)(intptr_t)arg;
    net_boot_t *b;
    uint64_t dl = com_deadline_after_ns(3 * COM_NS_PER_S);
    late_st[rank] = net_boot_open(rank, 3, hostport, dl, &b);
    if (late_st[rank] != GMUX_OK)
        return NULL;
    late_st[rank] = net_boot_barrier(b, dl);
    /* the other may have left first, after the death: its notice (gone_counts
     * in rdv.c) can come before rank 2's and fail the barrier alone */
    while (!net_boot_dead(b, 2) && !com_deadline_passed(dl))
        net_boot_poll(b);
    late_dead2[rank] = net_boot_dead(b, 2);
    net_boot_close(b, true);
    return NULL;
}

static void run_late_pair(net_rdv_t *rdv)
{
    pthread_t th[2];
    for (intptr_t r = 0; r < 2; r++) {
        late_st[r] = GMUX_ERR_STATE;
        late_dead2[r] = false;
        pthread_create(&th[r], NULL, late_client, (void *)r);
    }
    for (int i = 0; i < 500; i++) /* 5 s at most, past the clients' 3 s */
        net_rdv_step(rdv, 10);
    for (int r = 0; r < 2; r++) {
        pthread_join(th[r], NULL);
        assert_int_equal(late_st[r], GMUX_ERR_PEER);
        assert_true(late_dead2[r]);
    }
}

static void test_late_joiner_hears_of_death(void **state)
{
    (void)state;
    net_rdv_t *rdv = rdv_start(3);
    int fd = stray_connect(net_rdv_port(rdv));
    raw_hello(fd, 2, 3);
    assert_false(closed_by_server(rdv, fd)); /* taken in as rank 2 */
    close(fd);                               /* rank 2 dies, alone in the job */
    for (int i = 0; i < 5; i++)
        net_rdv_step(rdv, 10);
    run_late_pair(rdv);
    net_rdv_destroy(rdv);

    rdv = rdv_start(3);
    net_rdv_rank_exited(rdv, 2, true); /* died before connecting */
    run_late_pair(rdv);
    net_rdv_destroy(rdv);
}

/* A connection that sends part of its HELLO and stops must not hold the
 * server: it read a frame with blocking reads on its one thread, so a rank
 * joining meanwhile waited 5 s for the stray's deadline. */
static void test_partial_hello_does_not_stall(void **state)
{
    (void)state;
    net_rdv_t *rdv = rdv_start_patient(1);
    int fd = stray_connect(net_rdv_port(rdv));
    hello_frame_t m = hello_frame(0, 1);
    write_part(fd, &m, 0, 8);
    net_rdv_step(rdv, 10); /* takes it in */
    net_rdv_step(rdv, 10); /* sees its 8 bytes */
    run_solo(rdv);
    assert_int_equal(solo_st, GMUX_OK); /* within its 15 s: not held by the stray */
    /* the rest arrives: a HELLO for a rank that has come and gone */
    write_part(fd, &m, 8, sizeof(m));
    assert_true(closed_by_server(rdv, fd));
    close(fd);
    net_rdv_destroy(rdv);
}

static atomic_int stall_opened, stall_done;
static gmux_status_t stall_st;
static bool stall_dead[3];

/* Rank 1 of a 3-rank job: joins and enters a barrier that rank 2's death ends. */
static void *stall_client(void *arg)
{
    (void)arg;
    net_boot_t *b;
    uint64_t dl = com_deadline_after_ns(15 * COM_NS_PER_S);
    stall_st = net_boot_open(1, 3, hostport, dl, &b);
    atomic_store(&stall_opened, 1);
    if (stall_st == GMUX_OK) {
        stall_st = net_boot_barrier(b, dl);
        for (int r = 0; r < 3; r++)
            stall_dead[r] = net_boot_dead(b, r);
        net_boot_close(b, true);
    }
    atomic_store(&stall_done, 1);
    return NULL;
}

static void step_n(net_rdv_t *rdv, int n)
{
    for (int i = 0; i < n; i++)
        net_rdv_step(rdv, 10);
}

/* A rank that stops halfway through a frame (stopped, slow) is not dead, and
 * the others' traffic goes on around it: a HELLO that arrives in two parts,
 * a death announced at once, and its own frame taken when the rest comes.
 * Before, the server waited for the rest on its one thread, 5 s, then
 * declared the stalled rank dead. */
static void test_stalled_frame_holds_nobody(void **state)
{
    (void)state;
    net_rdv_t *rdv = rdv_start_patient(3);
    int r0 = stray_connect(net_rdv_port(rdv));
    raw_hello(r0, 0, 3);
    step_n(rdv, 5);
    net_boot_hdr_t bye = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_BYE, 0, 0};
    write_part(r0, &bye, 0, 8);
    step_n(rdv, 5);
    /* rank 2 says HELLO in two parts */
    int r2 = stray_connect(net_rdv_port(rdv));
    hello_frame_t m = hello_frame(2, 3);
    write_part(r2, &m, 0, 10);
    step_n(rdv, 5);
    write_part(r2, &m, 10, sizeof(m));
    step_n(rdv, 5);
    /* rank 1 joins and waits in a barrier; rank 2 dies */
    atomic_store(&stall_opened, 0);
    atomic_store(&stall_done, 0);
    pthread_t th;
    pthread_create(&th, NULL, stall_client, NULL);
    uint64_t dl = com_deadline_after_ns(10 * COM_NS_PER_S);
    while (!atomic_load(&stall_opened) && !com_deadline_passed(dl))
        net_rdv_step(rdv, 10);
    step_n(rdv, 20); /* its HELLO taken in */
    close(r2);
    while (!atomic_load(&stall_done) && !com_deadline_passed(dl))
        net_rdv_step(rdv, 10);
    pthread_join(th, NULL);
    assert_int_equal(stall_st, GMUX_ERR_PEER);
    assert_true(stall_dead[2]);
    assert_false(stall_dead[0]); /* stalled, not dead; heard within 10 s, not held */
    /* the stalled rank heard of the death too, then finishes its BYE */
    net_boot_hdr_t h;
    assert_int_equal(recv(r0, &h, sizeof(h), MSG_DONTWAIT), (ssize_t)sizeof(h));
    assert_true(h.type == NET_BOOT_DEAD && h.rank == 2);
    assert_false(net_rdv_said_bye(rdv, 0));
    write_part(r0, &bye, 8, sizeof(bye));
    for (int i = 0; i < 50 && !net_rdv_said_bye(rdv, 0); i++)
        net_rdv_step(rdv, 10);
    assert_true(net_rdv_said_bye(rdv, 0));
    close(r0);
    net_rdv_destroy(rdv);
}

/* A frame that never completes still ends: 5 s after its first byte the
 * rank is dropped and announced dead, however slowly the bytes trickle in
 * (a deadline renewed by each byte would let a peer hold its place, and the
 * others' collectives, for good). */
static void test_stalled_frame_expires(void **state)
{
    (void)state;
    net_rdv_t *rdv = rdv_start(2);
    int r0 = stray_connect(net_rdv_port(rdv));
    raw_hello(r0, 0, 2);
    step_n(rdv, 5);
    net_boot_t *b;
    assert_int_equal(net_boot_open(1, 2, hostport, com_deadline_after_ns(5 * COM_NS_PER_S), &b),
                     GMUX_OK);
    step_n(rdv, 5);
    struct {
        net_boot_hdr_t h;
        char blob[64];
    } m = {{NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_ALLGATHER, 0, 64}, {0}};
    uint64_t t0 = com_clock_ns();
    size_t sent = 0;
    bool dropped = false;
    while (!dropped && com_clock_ns() - t0 < 10 * COM_NS_PER_S) {
        if (sent < sizeof(m) && send(r0, (char *)&m + sent, 1, MSG_NOSIGNAL) == 1)
            sent++;
        for (int i = 0; i < 25 && !dropped; i++) {
            net_rdv_step(rdv, 10);
            char c;
            dropped = recv(r0, &c, 1, MSG_DONTWAIT) == 0;
        }
    }
    uint64_t ns = com_clock_ns() - t0;
    assert_true(dropped);
    assert_true(sent < sizeof(m));
    /* not before its deadline; after it, within the loop's 10 s (a deadline
     * renewed by each byte, one every 250 ms at most, would never expire
     * there); no tighter upper bound: a loaded host stretches the steps */
    assert_true(ns >= 4 * COM_NS_PER_S);
    /* and rank 1 hears of it */
    assert_int_equal(net_boot_barrier(b, com_deadline_after_ns(2 * COM_NS_PER_S)), GMUX_ERR_PEER);
    assert_true(net_boot_dead(b, 0));
    net_boot_close(b, true);
    close(r0);
    net_rdv_destroy(rdv);
}

/* A fake server on a plain listening socket, for the client side: rank 0 of
 * a one-rank job joins; *sfd_p is the server's end, its HELLO read. */
static net_boot_t *fake_join(int lfd, int port, int *sfd_p)
{
    char hp[64];
    snprintf(hp, sizeof(hp), "127.0.0.1:%d", port);
    net_boot_t *b;
    assert_int_equal(net_boot_open(0, 1, hp, com_deadline_after_ns(10 * COM_NS_PER_S), &b),
                     GMUX_OK);
    int sfd = accept(lfd, NULL, NULL); /* the connection waits in the backlog */
    assert_true(sfd >= 0);
    hello_frame_t m;
    assert_int_equal(recv(sfd, &m, sizeof(m), MSG_WAITALL), (ssize_t)sizeof(m));
    assert_int_equal(m.h.type, NET_BOOT_HELLO);
    *sfd_p = sfd;
    return b;
}

/* An allgather result of a one-rank job whose blob is the u64 v. */
typedef struct __attribute__((packed)) result_frame {
    net_boot_hdr_t h;
    uint32_t len;
    uint64_t v;
} result_frame_t;

static result_frame_t result_frame(uint64_t v)
{
    return (result_frame_t){{NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_ALLGATHER, 0, 12}, 8, v};
}

/* The server's end holds nothing more from the client (it sent no frame
 * after its first allgather), and after net_boot_close it reads end of file
 * (or a reset: the client closed with bytes unread): no BYE either, as the
 * connection was out of step. */
static void assert_client_silent(int sfd, net_boot_t *b)
{
    net_boot_hdr_t h;
    assert_int_equal(recv(sfd, &h, sizeof(h), MSG_WAITALL), (ssize_t)sizeof(h)); /* round 1 */
    assert_int_equal(h.type, NET_BOOT_ALLGATHER);
    uint64_t v;
    assert_int_equal(recv(sfd, &v, sizeof(v), MSG_WAITALL), (ssize_t)sizeof(v));
    net_boot_close(b, true);
    char c;
    assert_true(recv(sfd, &c, 1, MSG_WAITALL) <= 0);
}

/* A timeout in the middle of an allgather's result left the socket out of
 * step: the next collective read the rest of the old frame as a header and
 * failed with GMUX_ERR_PEER (the connection taken for lost, every peer for
 * dead). Now the connection is marked broken: later collectives fail at
 * once with GMUX_ERR_STATE and send nothing, and no peer is taken for dead. */
static void test_timeout_mid_frame_breaks(void **state)
{
    (void)state;
    int lfd, port, sfd;
    assert_int_equal(net_sock_listen("127.0.0.1", &lfd, &port, NULL, 0), GMUX_OK);
    net_boot_t *b = fake_join(lfd, port, &sfd);
    result_frame_t f1 = result_frame(11), f2 = result_frame(22);
    write_part(sfd, &f1, 0, 20); /* the header and half the payload */
    uint64_t mine = 5, *all = NULL;
    assert_int_equal(
        net_boot_allgather(b, &mine, 8, (void **)&all, com_deadline_after_ns(300 * COM_NS_PER_MS)),
        GMUX_ERR_TIMEOUT);
    write_part(sfd, &f1, 20, sizeof(f1)); /* the rest comes, then a whole frame */
    write_part(sfd, &f2, 0, sizeof(f2));
    uint64_t dl = com_deadline_after_ns(2 * COM_NS_PER_S);
    assert_int_equal(net_boot_allgather(b, &mine, 8, (void **)&all, dl), GMUX_ERR_STATE);
    assert_int_equal(net_boot_barrier(b, dl), GMUX_ERR_STATE);
    assert_null(all);
    assert_false(net_boot_any_dead(b));
    net_boot_poll(b); /* reads nothing from a broken connection */
    assert_false(net_boot_any_dead(b));
    assert_client_silent(sfd, b);
    close(sfd);
    close(lfd);
}

/* A timeout before any byte of the result breaks the connection too: the
 * round's result arrives later, and the next collective took it for its
 * own (GMUX_OK with the old round's data). */
static void test_timeout_between_frames_breaks(void **state)
{
    (void)state;
    int lfd, port, sfd;
    assert_int_equal(net_sock_listen("127.0.0.1", &lfd, &port, NULL, 0), GMUX_OK);
    net_boot_t *b = fake_join(lfd, port, &sfd);
    uint64_t mine = 5, *all = NULL;
    assert_int_equal(
        net_boot_allgather(b, &mine, 8, (void **)&all, com_deadline_after_ns(300 * COM_NS_PER_MS)),
        GMUX_ERR_TIMEOUT);
    result_frame_t f1 = result_frame(11), f2 = result_frame(22);
    write_part(sfd, &f1, 0, sizeof(f1));
    write_part(sfd, &f2, 0, sizeof(f2));
    gmux_status_t st =
        net_boot_allgather(b, &mine, 8, (void **)&all, com_deadline_after_ns(2 * COM_NS_PER_S));
    if (all)
        fail_msg("the second allgather returned %s with the value %llu", gmux_status_name(st),
                 (unsigned long long)*all);
    assert_int_equal(st, GMUX_ERR_STATE);
    assert_client_silent(sfd, b);
    close(sfd);
    close(lfd);
}

/* A frame header that is not ours (bad magic), announcing `len` payload
 * bytes, then `extra` bytes, written into fd. */
static void send_bad_header(int fd, uint32_t len, size_t extra)
{
    net_boot_hdr_t h = {NET_BOOT_MAGIC ^ 1u, NET_BOOT_VERSION, NET_BOOT_HELLO, 0, len};
    uint8_t buf[sizeof(h) + 256] = {0};
    assert_true(extra <= 256);
    memcpy(buf, &h, sizeof(h));
    memset(buf + sizeof(h), 0xee, extra);
    assert_int_equal(write(fd, buf, sizeof(h) + extra), (ssize_t)(sizeof(h) + extra));
}

/* net_rdv_rx_feed on a header it judged bad stays RDV_RX_BAD and reads
 * nothing more: the server's drop feeds a rank's connection once more after
 * a bad frame (drop_rank). It used to go on reading the payload the bad
 * header announced: into rx->small past its 4 bytes for a HELLO's max_len
 * (64 bytes over what follows it: a FRAME), into a NULL rx->p for a rank's
 * (UBSan: "applying zero offset to null pointer", in the fuzz_rdv campaign
 * of 2026-12-03, from the committed corpus), and it answered RDV_RX_MORE,
 * as if a frame were under way, when nothing more had come. */
static void test_feed_after_bad_header_reads_nothing(void **state)
{
    (void)state;
    struct {
        rdv_rx_t rx;
        uint8_t guard[128];
    } g;
    uint8_t zero[sizeof(g.guard)] = {0};
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    uint64_t wait = COM_NS_PER_S;

    /* a HELLO's limit (4 bytes, in rx.small): 64 bytes announced and sent */
    memset(&g, 0, sizeof(g));
    send_bad_header(sv[1], 64, 64);
    assert_int_equal(net_rdv_rx_feed(sv[0], &g.rx, sizeof(uint32_t), wait, NULL), RDV_RX_BAD);
    assert_int_equal(net_rdv_rx_feed(sv[0], &g.rx, sizeof(uint32_t), wait, NULL), RDV_RX_BAD);
    assert_memory_equal(g.guard, zero, sizeof(zero));
    int avail = -1;
    assert_int_equal(ioctl(sv[0], FIONREAD, &avail), 0);
    assert_int_equal(avail, 64); /* the payload was left in the socket */
    net_rdv_rx_clear(&g.rx);
    uint8_t sink[64];
    assert_int_equal(read(sv[0], sink, sizeof(sink)), 64);

    /* a rank's limit: a header longer than a frame can be, nothing after */
    memset(&g, 0, sizeof(g));
    send_bad_header(sv[1], NET_BOOT_MAX_LEN + 1, 0);
    assert_int_equal(net_rdv_rx_feed(sv[0], &g.rx, NET_BOOT_MAX_LEN, wait, NULL), RDV_RX_BAD);
    assert_int_equal(net_rdv_rx_feed(sv[0], &g.rx, NET_BOOT_MAX_LEN, wait, NULL), RDV_RX_BAD);
    /* and with bytes after it: nothing of them is taken */
    send_bad_header(sv[1], 8, 0);
    assert_int_equal(net_rdv_rx_feed(sv[0], &g.rx, NET_BOOT_MAX_LEN, wait, NULL), RDV_RX_BAD);
    assert_int_equal(ioctl(sv[0], FIONREAD, &avail), 0);
    assert_int_equal(avail, (int)sizeof(net_boot_hdr_t));
    net_rdv_rx_clear(&g.rx);
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silent_connections_expire),
        cmocka_unit_test(test_oversized_hello_rejected),
        cmocka_unit_test(test_dead_rank_cannot_rejoin),
        cmocka_unit_test(test_late_joiner_hears_of_death),
        cmocka_unit_test(test_partial_hello_does_not_stall),
        cmocka_unit_test(test_stalled_frame_holds_nobody),
        cmocka_unit_test(test_stalled_frame_expires),
        cmocka_unit_test(test_timeout_mid_frame_breaks),
        cmocka_unit_test(test_timeout_between_frames_breaks),
        cmocka_unit_test(test_feed_after_bad_header_reads_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
