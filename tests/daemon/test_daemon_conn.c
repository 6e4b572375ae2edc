/*
 * Integration tests of gmuxd with real processes: the connection paths of
 * server_conn.c that no other test reached (llvm-cov, 2026-12-03): a task
 * whose process is gone while its socket lives on in another process (the
 * pid check), a peer that vanishes with answers still queued for it, a
 * queue that grows again after a part of it was sent (its sent part reused),
 * and a message trickled in past its bound.
 * They assert behaviour, with long deadlines so a loaded machine slows them
 * down without failing them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/server.h"
#include "drig.h"
#include "dtest.h"

static dmn_report_t rep;
static uint8_t buf[DMN_PROTO_MAX_MSG];

/* Sends n QUERY messages on fd, blocking as the socket makes it. */
static void send_queries(int fd, long n)
{
    static uint8_t burst[256 * DMN_PROTO_HDR_SIZE];
    for (size_t off = 0; off < sizeof(burst); off += DMN_PROTO_HDR_SIZE)
        dmn_proto_encode_empty(burst + off, DMN_PROTO_HDR_SIZE, 1, DMN_MSG_QUERY);
    while (n > 0) {
        long k = n < 256 ? n : 256;
        size_t len = (size_t)k * DMN_PROTO_HDR_SIZE, off = 0;
        while (off < len) {
            ssize_t w = send(fd, burst + off, len - off, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                fail_msg("sending QUERY messages: %s", strerror(errno));
            off += (size_t)w;
        }
        n -= k;
    }
}

/* drig_init(r), then its daemon logging info lines too (a task's leaving
 * says why) into the file whose path goes to log. */
static void start_logged_info(drig_t *r, char *log, size_t cap)
{
    drig_init(r);
    setenv("GMUX_LOG", "info", 1);
    pid_t d = dtest_start_logged(r, log, cap);
    unsetenv("GMUX_LOG");
    assert_true(d > 0);
}

/* The registering process exits, but its connection stays open: the socket
 * was made by this process before the fork, the child connected it (so the
 * daemon's SO_PEERCRED pid is the child's), registered and exited. No hang
 * up ever comes; the daemon's pid check (every 200 ms) must see the process
 * gone, drop the connection and reclaim the task. */
static void test_process_gone_socket_open(void **state)
{
    (void)state;
    static drig_t r;
    char log[256];
    start_logged_info(&r, log, sizeof(log));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) { /* no cmocka here: a failure would go on in this child */
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(r.sock) >= sizeof(a.sun_path))
            _exit(2);
        memcpy(a.sun_path, r.sock, strlen(r.sock) + 1);
        dmn_msg_register_t reg = {0, DMN_CLASS_BATCH, 0, 0, 0, "gone"};
        size_t n = dmn_proto_encode_register(buf, sizeof(buf), 1, &reg);
        dmn_msg_t m;
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
            send(fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n ||
            dtest_read(fd, buf, &m, 20.0) != DMN_MSG_REGISTERED)
            _exit(2);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child); /* reaped: kill(pid, 0) is ESRCH */
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    int none = 0;
    int gone = drig_until(&r, drig_n_tasks_is, &none, 20.0, &rep);
    if (!gone)
        fprintf(stderr, "task of the exited pid %d kept: %u tasks\n", (int)child, rep.n_tasks);
    assert_true(gone);
    assert_int_equal(rep.reclaimed, 1);
    assert_true(dtest_closed_by_peer(fd, 10.0));
    assert_non_null(strstr(dtest_log_text(log), "leaves: process gone"));
    close(fd);
    drig_fini(&r);
}

/* A registered task asks for far more than its socket holds (QUERY: each
 * STATUS answer is some 240 bytes), reads none of it and closes: the daemon
 * has answers queued for a peer that is gone. The connection is dropped, the
 * task reclaimed, and the daemon serves the next task. */
static void test_peer_gone_with_output_queued(void **state)
{
    (void)state;
    static drig_t r;
    char log[256];
    start_logged_info(&r, log, sizeof(log));
    int fd = dtest_register(r.sock, "vanishes", buf);
    /* 320 KiB of QUERY: once the send returns the daemon has read all but
     * what the socket buffers (~200 KiB), 7,000 messages or more, whose
     * answers pass what this end buffers */
    send_queries(fd, 20000);
    close(fd);
    int none = 0;
    assert_true(drig_until(&r, drig_n_tasks_is, &none, 20.0, &rep));
    assert_int_equal(rep.reclaimed, 1);
    const char *why = strstr(dtest_log_text(log), "leaves: ");
    fprintf(stderr, "the daemon said: %.40s\n", why ? why : "(nothing)"); /* which path: a note */
    int next = dtest_register(r.sock, "next", buf);
    assert_int_equal(dtest_query_answered(next), 1);
    close(next);
    drig_fini(&r);
}

/* Reads STATUS answers on fd until `want` have come (60 s at most per
 * message); each must be whole and decode, and their sequence numbers rise
 * (the daemon numbers all it sends, and this peer is its only one). */
static void read_statuses(int fd, long want, uint32_t *last_seq)
{
    for (long i = 0; i < want; i++) {
        dmn_msg_t m;
        int type = dtest_read(fd, buf, &m, 60.0);
        if (type != DMN_MSG_STATUS)
            fail_msg("answer %ld: type %d, not STATUS (%d)", i, type, DMN_MSG_STATUS);
        if (m.hdr.seq <= *last_seq)
            fail_msg("answer %ld: seq %u after %u", i, m.hdr.seq, *last_seq);
        *last_seq = m.hdr.seq;
    }
}

/* A peer that reads part of what is queued for it while it asks for more:
 * the daemon's queue is sent in part (what was sent is kept at its front)
 * and grows again past its capacity, which reuses the part sent. Every
 * answer comes whole and in order, none lost and none twice; then no more. */
static void test_queue_reused_after_partial_send(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int fd = dtest_register(r.sock, "reader", buf);
    uint32_t seq = 0;
    long asked = 0, read = 0;
    for (int round = 0; round < 12; round++) {
        send_queries(fd, 4000); /* ~1 MiB of answers */
        asked += 4000;
        read_statuses(fd, 3000, &seq); /* leaves ~1,000 more queued each round */
        read += 3000;
    }
    read_statuses(fd, asked - read, &seq);
    dmn_msg_t m;
    assert_int_equal(dtest_read(fd, buf, &m, 1.0), -1); /* nothing more */
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    assert_int_equal(rep.n_tasks, 1);
    close(fd);
    drig_fini(&r);
}

/* Whether the daemon closed fd (end of file or an error); reads nothing
 * otherwise (nothing is sent to a task that asked for nothing). */
static int closed_now(int fd)
{
    char b[64];
    ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

/* A peer that trickles one message a byte at a time, each byte well inside
 * the bound (GMUX_DAEMON_MSG_MS=500 here, a byte every 100 ms) and the whole
 * far longer (a STATS of 72 bytes: 7.2 s): the bound counts from the
 * message's first byte, not from the latest, so the connection is closed
 * before the message is whole and the task reclaimed. (No test had bytes of
 * one message arrive in more than two reads.) */
static void test_trickled_message_dropped(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    setenv("GMUX_DAEMON_MSG_MS", "500", 1);
    pid_t d = drig_start_daemon(&r, 10, "none");
    unsetenv("GMUX_DAEMON_MSG_MS");
    assert_true(d > 0);
    int fd = dtest_register(r.sock, "trickle", buf);
    static uint8_t stats[256];
    dmn_msg_stats_t st = {1, 2, 3, 4, 5, 6, 7};
    size_t len = dmn_proto_encode_stats(stats, sizeof(stats), 2, &st);
    assert_true(len > 32);
    size_t sent = 0;
    int closed = 0;
    while (sent + 1 < len && !(closed = closed_now(fd))) {
        if (send(fd, stats + sent, 1, MSG_NOSIGNAL) != 1) {
            closed = 1;
            break;
        }
        sent++;
        com_clock_sleep_ns(100 * COM_NS_PER_MS);
    }
    if (!closed)
        fprintf(stderr, "kept after %zu of %zu bytes, each 100 ms after the last\n", sent, len);
    assert_true(closed);
    close(fd);
    int none = 0;
    assert_true(drig_until(&r, drig_n_tasks_is, &none, 20.0, &rep));
    assert_int_equal(rep.reclaimed, 1);
    drig_fini(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_process_gone_socket_open, drig_teardown),
        cmocka_unit_test_teardown(test_peer_gone_with_output_queued, drig_teardown),
        cmocka_unit_test_teardown(test_queue_reused_after_partial_send, drig_teardown),
        cmocka_unit_test_teardown(test_trickled_message_dropped, drig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
