/*
 * Integration tests of gmuxd with real processes: peers that stop part-way
 * through a message (server.h, DMN_SERVER_MSG_MS). A registered task that
 * sent half a header or half a payload and then nothing, its process alive,
 * used to keep its slot for ever, and the turn until the grace period took
 * it. Now its connection is dropped and its task reclaimed like a killed
 * one; a slow sender whose every message completes in time is kept however
 * long it goes on. The bound is GMUX_DAEMON_MSG_MS (default 5000 ms).
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
#include <unistd.h>

#include "common/clock.h"
#include "common/settings.h"
#include "daemon/endpoint.h"
#include "daemon/server.h"
#include "drig.h"
#include "dtest.h"

static dmn_report_t rep;
static uint8_t buf[DMN_PROTO_MAX_MSG];

/* A PENDING of `n` ranges into out: its size. */
static size_t pending(uint8_t *out, size_t cap, uint32_t seq, uint32_t n)
{
    dmn_range_t ranges[8];
    for (uint32_t i = 0; i < n && i < 8; i++)
        ranges[i] = (dmn_range_t){0x100000000ull + i * (4ull << 20), 1ull << 20};
    size_t len = dmn_proto_encode_ranges(out, cap, seq, DMN_MSG_PENDING, 1, 0, ranges, n);
    assert_true(len > DMN_PROTO_HDR_SIZE);
    return len;
}

static int only_waiter(const dmn_report_t *r, void *arg)
{
    (void)arg;
    return r->n_tasks == 1 && strcmp(r->tasks[0].name, "waiter") == 0;
}

/* The turn's holder stops half-way through a header, a second task half-way
 * through a payload; both stay alive (this process holds their sockets).
 * Both connections are closed within the bound (and a margin), both tasks
 * reclaimed, and the task that waited gets the turn. */
static void test_stalled_peers_dropped(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int holder = dtest_register(r.sock, "holder", buf);
    size_t n = pending(buf, sizeof(buf), 2, 1);
    assert_int_equal(send(holder, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    assert_true(dtest_read_until(holder, buf, DMN_MSG_GRANT, 10.0));
    int waiter = dtest_register(r.sock, "waiter", buf);
    int payload = dtest_register(r.sock, "payload", buf);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    uint64_t reclaimed_before = rep.reclaimed;

    uint8_t half[DMN_PROTO_MAX_MSG];
    n = dmn_proto_encode_empty(half, sizeof(half), 3, DMN_MSG_IDLE);
    assert_int_equal(send(holder, half, DMN_PROTO_HDR_SIZE / 2, MSG_NOSIGNAL),
                     DMN_PROTO_HDR_SIZE / 2);
    n = pending(half, sizeof(half), 2, 8);
    size_t part = DMN_PROTO_HDR_SIZE + (n - DMN_PROTO_HDR_SIZE) / 2;
    assert_int_equal(send(payload, half, part, MSG_NOSIGNAL), (ssize_t)part);
    n = pending(buf, sizeof(buf), 2, 1);
    assert_int_equal(send(waiter, buf, n, MSG_NOSIGNAL), (ssize_t)n);

    double bound_s = 20.0 + DMN_SERVER_MSG_MS / 1000.0;
    int holder_closed = dtest_closed_by_peer(holder, bound_s);
    int payload_closed = dtest_closed_by_peer(payload, bound_s);
    if (!holder_closed || !payload_closed)
        fprintf(stderr, "stalled connections kept: holder %s, payload %s\n",
                holder_closed ? "closed" : "open", payload_closed ? "closed" : "open");
    assert_true(holder_closed);
    assert_true(payload_closed);
    assert_true(drig_until(&r, only_waiter, NULL, 10.0, &rep));
    assert_int_equal(rep.reclaimed, reclaimed_before + 2);
    assert_true(dtest_read_until(waiter, buf, DMN_MSG_GRANT, 10.0));
    close(holder);
    close(payload);
    close(waiter);
    drig_fini(&r);
}

/* A slow sender: SLOW_MSGS messages written in SLOW_MSGS + 1 pieces, each
 * piece the end of one message and the start of the next, 1/SLOW_SLICES of
 * the bound apart. The whole takes longer than the bound (SLOW_MSGS /
 * SLOW_SLICES of it), each message 1/SLOW_SLICES of it: the task keeps its
 * connection (the bound is per message, counted from its first byte), and its
 * last message, a QUERY, is answered. It fails only if this process is kept
 * from running for 19/20 of the bound between the halves of one message (3/4
 * until 2026-12-04, with five messages a quarter of the bound apart). */
enum { SLOW_MSGS = 25, SLOW_SLICES = 20 };

static void test_slow_complete_sender_kept(void **state)
{
    (void)state;
    static drig_t r;
    static uint8_t stream[SLOW_MSGS * 512];
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int fd = dtest_register(r.sock, "slow", buf);
    size_t at[SLOW_MSGS + 1] = {0}, len = 0; /* at[i]: where message i starts */
    dmn_msg_stats_t st = {1, 2, 3, 4, 5, 6, 7};
    for (uint32_t i = 0; i < SLOW_MSGS; i++) {
        uint8_t *out = stream + len;
        size_t cap = sizeof(stream) - len;
        uint32_t seq = 2 + i;
        if (i == SLOW_MSGS - 1)
            len += dmn_proto_encode_empty(out, cap, seq, DMN_MSG_QUERY);
        else if (i % 3 == 0)
            len += pending(out, cap, seq, 1 + i % 4);
        else if (i % 3 == 1)
            len += dmn_proto_encode_stats(out, cap, seq, &st);
        else
            len += dmn_proto_encode_empty(out, cap, seq, DMN_MSG_IDLE);
        assert_true(len > at[i] && len <= sizeof(stream));
        at[i + 1] = len;
    }
    size_t from = 0;
    uint64_t t0 = com_clock_ns();
    for (int i = 0; i <= SLOW_MSGS; i++) {
        /* the middle of message i, or the end */
        size_t to = i < SLOW_MSGS ? at[i] + (at[i + 1] - at[i]) / 2 : len;
        assert_int_equal(send(fd, stream + from, to - from, MSG_NOSIGNAL), (ssize_t)(to - from));
        from = to;
        if (i < SLOW_MSGS)
            com_clock_sleep_ns((uint64_t)DMN_SERVER_MSG_MS * COM_NS_PER_MS / SLOW_SLICES);
    }
    assert_true(com_clock_ns() - t0 > (uint64_t)DMN_SERVER_MSG_MS * COM_NS_PER_MS);
    assert_true(dtest_read_until(fd, buf, DMN_MSG_STATUS, 10.0));
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    assert_int_equal(rep.n_tasks, 1);
    assert_string_equal(rep.tasks[0].name, "slow");
    assert_int_equal(rep.reclaimed, 0);
    close(fd);
    drig_fini(&r);
}

static int lines_with(const char *log, const char *needle)
{
    const char *text = dtest_log_text(log);
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Each connection gmuxd closed for silence, and each peer it dropped for a
 * stall, was a warning, so a peer that kept reconnecting and stalling wrote
 * a line a time. Now the first of each kind is said and the others counted
 * (a summary a minute at most, refusals.h): PEERS of each, one line each. */
static void test_drops_logged_once_a_minute(void **state)
{
    (void)state;
    enum { PEERS = 4 };
    static drig_t r;
    drig_init(&r);
    char log[160];
    assert_true(dtest_start_logged(&r, log, sizeof(log)) > 0);
    int silent[PEERS], stalled[PEERS];
    for (int i = 0; i < PEERS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "stall%d", i);
        stalled[i] = dtest_register(r.sock, name, buf);
        silent[i] = dtest_connect(r.sock);
    }
    uint8_t half[DMN_PROTO_MAX_MSG];
    dmn_proto_encode_empty(half, sizeof(half), 2, DMN_MSG_IDLE);
    for (int i = 0; i < PEERS; i++)
        assert_int_equal(send(stalled[i], half, DMN_PROTO_HDR_SIZE / 2, MSG_NOSIGNAL),
                         DMN_PROTO_HDR_SIZE / 2);
    double bound_s = 20.0 + DMN_SERVER_MSG_MS / 1000.0;
    for (int i = 0; i < PEERS; i++) {
        assert_true(dtest_closed_by_peer(silent[i], bound_s));
        assert_true(dtest_closed_by_peer(stalled[i], bound_s));
        close(silent[i]);
        close(stalled[i]);
    }
    /* the daemon still serves: its log is written up to the drops */
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    int silent_lines = lines_with(log, "sent no whole message");
    int stalled_lines = lines_with(log, "of a message and not the rest");
    if (silent_lines != 1 || stalled_lines != 1)
        fprintf(stderr, "%d lines for %d silent peers, %d for %d stalled\n", silent_lines, PEERS,
                stalled_lines, PEERS);
    assert_int_equal(silent_lines, 1);
    assert_int_equal(stalled_lines, 1);
    assert_int_equal(lines_with(log, "(1 closed so far;"), 1);
    assert_int_equal(lines_with(log, "(1 dropped so far;"), 1);
    drig_fini(&r);
}

/* GMUX_DAEMON_MSG_MS: the default, a value, and out of range (0 would drop
 * every message that came in two reads). */
static void test_msg_setting(void **state)
{
    (void)state;
    char err[64], pbuf[128];
    dmn_server_opts_t o;
    assert_int_equal(dmn_server_opts_from_settings(&o, pbuf, sizeof(pbuf), 0), GMUX_OK);
    assert_int_equal(o.msg_ns, (uint64_t)DMN_SERVER_MSG_MS * COM_NS_PER_MS);
    const char *vals[] = {"250", "1", "3599999", "0", "-1", "3600000"};
    const gmux_status_t want[] = {GMUX_OK,        GMUX_OK,        GMUX_OK,
                                  GMUX_ERR_RANGE, GMUX_ERR_RANGE, GMUX_ERR_RANGE};
    const uint64_t ms[] = {250, 1, 3599999, 0, 0, 0};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(com_settings_set(COM_SETTING_DAEMON_MSG_MS, vals[i], err, sizeof(err)),
                         GMUX_OK);
        assert_int_equal(dmn_server_opts_from_settings(&o, pbuf, sizeof(pbuf), 0), want[i]);
        if (want[i] == GMUX_OK)
            assert_int_equal(o.msg_ns, ms[i] * COM_NS_PER_MS);
    }
    assert_int_equal(com_settings_set(COM_SETTING_DAEMON_MSG_MS, "5000", err, sizeof(err)),
                     GMUX_OK);
}

/* The daemon reads GMUX_DAEMON_MSG_MS: with 300 ms, a task that writes half
 * a STATS, waits a second and a half (well inside the default bound), then
 * the rest and a QUERY, is dropped and its task reclaimed; the QUERY is never
 * answered. With the default it was kept and answered (the slow sender
 * above). A bad value keeps the daemon from starting (exit status 2). */
static void test_msg_setting_read(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    setenv("GMUX_DAEMON_MSG_MS", "300", 1);
    pid_t d = drig_start_daemon(&r, 10, "none");
    unsetenv("GMUX_DAEMON_MSG_MS");
    assert_true(d > 0);
    int fd = dtest_register(r.sock, "slow", buf);
    static uint8_t stream[512];
    dmn_msg_stats_t st = {1, 2, 3, 4, 5, 6, 7};
    size_t one = dmn_proto_encode_stats(stream, sizeof(stream), 2, &st);
    size_t len = one + dmn_proto_encode_empty(stream + one, sizeof(stream) - one, 3, DMN_MSG_QUERY);
    assert_int_equal(send(fd, stream, one / 2, MSG_NOSIGNAL), (ssize_t)(one / 2));
    com_clock_sleep_ns(1500 * COM_NS_PER_MS);
    (void)send(fd, stream + one / 2, len - one / 2, MSG_NOSIGNAL); /* may find it closed */
    dmn_msg_t m;
    assert_int_equal(dtest_read(fd, buf, &m, 20.0), -1); /* closed, the QUERY unanswered */
    assert_true(dtest_closed_by_peer(fd, 20.0));
    close(fd);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    assert_int_equal(rep.n_tasks, 0);
    assert_int_equal(rep.reclaimed, 1);
    drig_fini(&r);

    drig_init(&r);
    setenv("GMUX_DAEMON_MSG_MS", "0", 1);
    char *argv[] = {GMUXD_PATH, "--foreground", "--socket", r.sock, NULL};
    pid_t bad = drig_spawn(&r, argv);
    unsetenv("GMUX_DAEMON_MSG_MS");
    assert_true(bad > 0);
    assert_int_equal(drig_wait(bad, 10.0), 2);
    drig_fini(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_stalled_peers_dropped, drig_teardown),
        cmocka_unit_test_teardown(test_slow_complete_sender_kept, drig_teardown),
        cmocka_unit_test_teardown(test_drops_logged_once_a_minute, drig_teardown),
        cmocka_unit_test(test_msg_setting),
        cmocka_unit_test_teardown(test_msg_setting_read, drig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
