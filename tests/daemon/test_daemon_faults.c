/*
 * Integration tests of gmuxd with real processes: the daemon executable and
 * synthetic clients (gmux_test_client) on a private socket. This file:
 * faults (a killed client or daemon, malformed messages, slow, silent
 * and flooding peers).
 * They assert behaviour, with loose bounds and long deadlines so a loaded
 * machine slows them down without failing them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/endpoint.h"
#include "daemon/server.h"
#include "drig.h"
#include "dtest.h"
#include "msg_io.h"
#include "tproc.h"

#define CLIENT_TIMEOUT_S 120.0

static dmn_report_t rep;

/* kill -9 of the client holding the GPU: its slot is reclaimed (counted as
 * such; how soon is printed, not asserted) and the others finish under the
 * daemon. Also checks gmux status and top, while the three are registered
 * and wait to run (the go file): run while they ran, those three commands
 * could outlast their work on a loaded machine, and no holder was left. */
static void test_kill_client(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    const char *names[] = {"k0", "k1", "k2"};
    pid_t pids[3];
    drig_wait_for_go(&r, "run");
    for (int i = 0; i < 3; i++)
        pids[i] = drig_start_client(&r, names[i], "batch", 0, 250, 3000, 0);
    drig_wait_for_go(&r, NULL);
    int three = 3;
    assert_true(drig_until(&r, drig_n_tasks_is, &three, 60.0, &rep));

    static char out[65536], err[4096];
    int st = tproc_capture(drig_cli_argv("status", "--json", "--socket", r.sock), NULL, 30.0, out,
                           sizeof(out), err, sizeof(err));
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "\"name\": \"k1\""));
    assert_non_null(strstr(out, "\"class\": \"batch\""));
    /* the daemon's pid, in JSON and in the table (they did not show it) */
    char want[64];
    snprintf(want, sizeof(want), "\"daemon_pid\": %d,", (int)r.daemon);
    assert_non_null(strstr(out, want));
    st = tproc_capture(drig_cli_argv("status", "--socket", r.sock, NULL), NULL, 30.0, out,
                       sizeof(out), err, sizeof(err));
    assert_int_equal(st, 0);
    snprintf(want, sizeof(want), "  pid %d  ", (int)r.daemon);
    assert_non_null(strstr(out, want));
    st = tproc_capture(drig_cli_argv("top", "--once", "--socket", r.sock), NULL, 30.0, out,
                       sizeof(out), err, sizeof(err));
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "SHARE"));
    assert_non_null(strstr(out, "k2"));
    assert_int_equal(drig_go(&r, "run"), 0);
    assert_true(drig_until(&r, drig_n_running_is, &three, 30.0, &rep));

    /* The victim: whoever holds the turn now (else any). */
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 2000), GMUX_OK);
    pid_t victim = drig_kill_holder(&r, &rep, pids[0], 2);
    assert_true(victim > 0);
    int done = 0;
    for (int i = 0; i < 3; i++) {
        int code = drig_wait(pids[i], CLIENT_TIMEOUT_S);
        if (pids[i] == victim) {
            assert_int_equal(code, 128 + SIGKILL);
            continue;
        }
        assert_int_equal(code, 0);
        dlog_t log;
        assert_int_equal(drig_read_log(&r, names[i], i, &log), 0);
        assert_int_equal(log.n, 250);
        for (int k = 0; k < log.n; k++)
            assert_int_equal(log.k[k].local, 0); /* gated by the daemon throughout */
        drig_free_log(&log);
        done++;
    }
    assert_int_equal(done, 2);
    drig_fini(&r);
}

/* kill -9 of the daemon: clients go on in local mode and register again with
 * a restarted daemon. */
static void test_kill_daemon(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    const char *names[] = {"d0", "d1"};
    pid_t pids[2];
    for (int i = 0; i < 2; i++)
        pids[i] = drig_start_client(&r, names[i], "batch", 0, 500, 3000, 0);
    int two = 2;
    assert_true(drig_until(&r, drig_n_running_is, &two, 30.0, &rep));
    drig_kill_daemon(&r, SIGKILL);
    com_clock_sleep_ns(200 * COM_NS_PER_MS);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    assert_true(drig_until(&r, drig_n_tasks_is, &two, 20.0, &rep)); /* both re-registered */
    for (int i = 0; i < 2; i++)
        assert_int_equal(drig_wait(pids[i], CLIENT_TIMEOUT_S), 0);
    for (int i = 0; i < 2; i++) {
        dlog_t log;
        assert_int_equal(drig_read_log(&r, names[i], i, &log), 0);
        assert_int_equal(log.n, 500);
        assert_int_equal(log.registrations, 2);
        int local = 0;
        for (int k = 0; k < log.n; k++)
            local += log.k[k].local;
        printf("daemon killed: client %d ran %d of %d kernels in local mode\n", i, local, log.n);
        assert_true(local > 0 && local < log.n);
        drig_free_log(&log);
    }
    drig_fini(&r);
}

static void send_and_expect_drop(drig_t *r, const uint8_t *msg, size_t len, const char *what)
{
    int fd = dtest_connect(r->sock);
    assert_int_equal(send(fd, msg, len, MSG_NOSIGNAL), (ssize_t)len);
    int dropped = dtest_closed_by_peer(fd, 10.0);
    if (!dropped)
        fprintf(stderr, "daemon kept a connection after: %s\n", what);
    assert_true(dropped);
    close(fd);
}

/* A peer of another protocol version hears why before the drop: a REFUSED
 * (in the daemon's version) naming both versions. */
static void expect_version_refused(drig_t *r, const uint8_t *msg, size_t len)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    dmn_msg_t m;
    int fd = dtest_refused(r->sock, msg, len, GMUX_ERR_VERSION, buf, &m);
    char want[DMN_REASON_MAX];
    snprintf(want, sizeof(want), "protocol version 9; gmuxd speaks %u", DMN_PROTO_VERSION);
    assert_string_equal(m.u.refused.reason, want);
    assert_true(dtest_closed_by_peer(fd, 10.0));
    close(fd);
}

static void test_malformed(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    const char *names[] = {"g0", "g1"};
    pid_t pids[2];
    for (int i = 0; i < 2; i++)
        pids[i] = drig_start_client(&r, names[i], "batch", 0, 150, 3000, 0);
    int two = 2;
    assert_true(drig_until(&r, drig_n_running_is, &two, 30.0, &rep));

    uint8_t m[256];
    dmn_msg_register_t reg = {1, DMN_CLASS_BATCH, 0, 0, 0, "evil"};
    size_t n = dmn_proto_encode_empty(m, sizeof(m), 1, DMN_MSG_QUERY);
    m[0] ^= 0xff;
    send_and_expect_drop(&r, m, n, "bad magic");
    n = dmn_proto_encode_empty(m, sizeof(m), 1, DMN_MSG_QUERY);
    m[4] = 9;
    send_and_expect_drop(&r, m, n, "bad version");
    dmn_msg_register_t other = {1, DMN_CLASS_BATCH, 0, 0, 0, "other"};
    n = dmn_proto_encode_register(m, sizeof(m), 1, &other);
    m[4] = 9;
    expect_version_refused(&r, m, n);
    n = dmn_proto_encode_empty(m, sizeof(m), 1, DMN_MSG_QUERY);
    m[10] = 0x7f; /* length far above the limit */
    send_and_expect_drop(&r, m, n, "huge length");
    n = dmn_proto_encode_empty(m, sizeof(m), 1, DMN_MSG_QUERY);
    m[6] = 99;
    send_and_expect_drop(&r, m, n, "unknown type");
    n = dmn_proto_encode_register(m, sizeof(m), 1, &reg);
    m[8] = 8; /* REGISTER with a length that does not match */
    send_and_expect_drop(&r, m, 16 + 8, "short REGISTER");
    dmn_msg_grant_t g = {1, 1, 1};
    n = dmn_proto_encode_grant(m, sizeof(m), 1, DMN_MSG_GRANT, &g);
    send_and_expect_drop(&r, m, n, "daemon-to-client type");
    n = dmn_proto_encode_ranges(m, sizeof(m), 1, DMN_MSG_PENDING, 1, 0, NULL, 0);
    send_and_expect_drop(&r, m, n, "PENDING before REGISTER");
    n = dmn_proto_encode_register(m, sizeof(m), 1, &reg);
    m[16 + 4] = 7; /* class 7 */
    send_and_expect_drop(&r, m, n, "bad class");
    n = dmn_proto_encode_register(m, sizeof(m), 1, &reg);
    memcpy(m + n, m, n);
    send_and_expect_drop(&r, m, 2 * n, "REGISTER twice");
    for (size_t i = 0; i < sizeof(m); i++)
        m[i] = (uint8_t)(i * 37 + 11);
    send_and_expect_drop(&r, m, sizeof(m), "garbage");
    /* Truncated: half a header, then hang up. */
    int fd = dtest_connect(r.sock);
    n = dmn_proto_encode_empty(m, sizeof(m), 1, DMN_MSG_QUERY);
    assert_int_equal(send(fd, m, 7, MSG_NOSIGNAL), 7);
    close(fd);

    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK); /* still serving */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(drig_wait(pids[i], CLIENT_TIMEOUT_S), 0);
        dlog_t log;
        assert_int_equal(drig_read_log(&r, names[i], i, &log), 0);
        assert_int_equal(log.n, 150);
        assert_int_equal(log.registrations, 1);
        for (int k = 0; k < log.n; k++)
            assert_int_equal(log.k[k].local, 0);
        drig_free_log(&log);
    }
    drig_fini(&r);
}

/* Connections that never send a message (no REGISTER, no QUERY) used to keep
 * their slot for ever, so a peer of the same uid could take every slot and
 * no client was served again. Now each is closed DMN_SERVER_HELLO_MS after
 * it was accepted; a registered task that stays silent longer keeps its
 * connection, and a client is served once the silent ones are gone. */
static void test_silent_connections_closed(void **state)
{
    (void)state;
    static drig_t r;
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    enum { SILENT = DMN_SERVER_MAX_CONNS + 8 }; /* every slot, and some refused at once */
    static int fds[SILENT];
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int task = dtest_register(r.sock, "quiet", buf);
    for (int i = 0; i < SILENT; i++)
        fds[i] = dtest_connect(r.sock); /* connect() succeeds while the backlog has room */
    int open_left = 0;
    for (int i = 0; i < SILENT; i++) {
        /* the first waits out the deadline; once one stayed open, no more waiting */
        if (!dtest_closed_by_peer(fds[i], open_left ? 0.05 : 10.0 + DMN_SERVER_HELLO_MS / 1000.0))
            open_left++;
        close(fds[i]);
    }
    if (open_left)
        fprintf(stderr, "%d silent connections still open\n", open_left);
    assert_int_equal(open_left, 0);
    /* A client is served again, and the task registered before is still
     * there: its connection answers a QUERY with a STATUS listing it. */
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    assert_int_equal(rep.n_tasks, 1);
    assert_string_equal(rep.tasks[0].name, "quiet");
    size_t n = dmn_proto_encode_empty(buf, DMN_PROTO_MAX_MSG, 2, DMN_MSG_QUERY);
    assert_int_equal(send(task, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    dmn_msg_t m;
    assert_int_equal(dtest_read(task, buf, &m, 10.0), DMN_MSG_STATUS);
    close(task);
    drig_fini(&r);
}

/* Half a message, then nothing: the daemon waits for no peer. Before its
 * first whole message a connection that stalls part-way is closed at the
 * first-message deadline like a silent one; a registered task that stalls
 * part-way keeps its connection for a while (DMN_SERVER_MSG_MS: past it,
 * test_daemon_stall), the others are served meanwhile, and the rest of its
 * message, when it comes, completes it. */
static void test_partial_message_stalls(void **state)
{
    (void)state;
    static drig_t r;
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int task = dtest_register(r.sock, "halting", buf);
    uint8_t q[DMN_PROTO_HDR_SIZE];
    size_t n = dmn_proto_encode_empty(q, sizeof(q), 2, DMN_MSG_QUERY);
    int stranger = dtest_connect(r.sock);
    assert_int_equal(send(stranger, q, 7, MSG_NOSIGNAL), 7);
    assert_int_equal(send(task, q, 10, MSG_NOSIGNAL), 10);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK); /* served meanwhile */
    assert_int_equal(rep.n_tasks, 1);
    assert_true(dtest_closed_by_peer(stranger, 10.0 + DMN_SERVER_HELLO_MS / 1000.0));
    close(stranger);
    assert_int_equal(send(task, q + 10, n - 10, MSG_NOSIGNAL), (ssize_t)(n - 10));
    dmn_msg_t m;
    assert_int_equal(dtest_read(task, buf, &m, 10.0), DMN_MSG_STATUS);
    assert_int_equal(m.u.status.n_tasks, 1);
    close(task);
    drig_fini(&r);
}

/* drig_until predicate: *(uint64_t *)arg bytes of fills planned so far, or no
 * task left. */
static int filled_or_empty(const dmn_report_t *rep, void *arg)
{
    return rep->fill_bytes >= *(uint64_t *)arg || rep->n_tasks == 0;
}

/* A task whose turns come faster than it reads its socket: each turn of the
 * swap placement sends it a full PLAN (4,095 ranges, 64 KiB) and a GRANT, and
 * it reads only after eight of them (512 KiB, more than a Unix socket buffers).
 * It keeps its connection and gets every order, in order. The daemon dropped
 * it ("not reading its socket") at the first send the socket did not take
 * whole, about the fourth PLAN. */
static void test_slow_reader_gets_every_plan(void **state)
{
    (void)state;
    static drig_t r;
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    static dmn_range_t ranges[DMN_MAX_RANGES];
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "swap") > 0);
    int fd = dtest_register(r.sock, "slow", buf);
    for (uint32_t i = 0; i < DMN_MAX_RANGES; i++)
        ranges[i] = (dmn_range_t){0x100000000ull + i * 0x20000ull, 0x10000};
    enum { TURNS = 8 };
    for (uint64_t turn = 1; turn <= TURNS; turn++) {
        size_t n = dmn_proto_encode_ranges(buf, sizeof(buf), 2, DMN_MSG_PENDING, 1, 0, ranges,
                                           DMN_MAX_RANGES);
        assert_int_equal(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
        uint64_t filled = turn * DMN_MAX_RANGES * ranges[0].len; /* once granted */
        assert_true(drig_until(&r, filled_or_empty, &filled, 10.0, &rep));
        if (rep.n_tasks != 1)
            fail_msg("turn %d: the daemon dropped the task", (int)turn);
        n = dmn_proto_encode_empty(buf, sizeof(buf), 3, DMN_MSG_IDLE);
        assert_int_equal(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    }
    uint64_t last_grant = 0;
    for (int turn = 0; turn < TURNS; turn++) {
        dmn_msg_t m;
        int type = dtest_read(fd, buf, &m, 10.0);
        if (type < 0)
            fail_msg("turn %d: the daemon closed the connection before its PLAN", turn);
        assert_int_equal(type, DMN_MSG_PLAN);
        assert_int_equal(m.u.ranges.count, DMN_PLAN_FILL);
        assert_int_equal(m.u.ranges.n_ranges, DMN_MAX_RANGES);
        for (uint32_t i = 0; i < DMN_MAX_RANGES; i += 1000)
            assert_int_equal(dmn_proto_range_at(&m.u.ranges, i).base, ranges[i].base);
        assert_true(m.u.ranges.seq > last_grant);
        uint64_t plan_seq = m.u.ranges.seq;
        assert_int_equal(dtest_read(fd, buf, &m, 10.0), DMN_MSG_GRANT);
        assert_int_equal(m.u.grant.grant_seq, plan_seq); /* the GRANT its PLAN belongs to */
        last_grant = plan_seq;
    }
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    assert_int_equal(rep.n_tasks, 1); /* still registered */
    assert_int_equal(rep.reclaimed, 0);
    close(fd);
    drig_fini(&r);
}

/* A peer that asks and never reads is still dropped, once its unread answers
 * pass the daemon's bound (16 MiB: about 70,000 STATUS replies here), and the
 * daemon serves the others meanwhile. */
static void test_non_reader_dropped(void **state)
{
    (void)state;
    static drig_t r;
    static uint8_t burst[1024 * DMN_PROTO_HDR_SIZE];
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int task = dtest_register(r.sock, "t", buf);
    for (size_t off = 0; off < sizeof(burst); off += DMN_PROTO_HDR_SIZE)
        dmn_proto_encode_empty(burst + off, DMN_PROTO_HDR_SIZE, 1, DMN_MSG_QUERY);
    int fd = dtest_connect(r.sock);
    long sent = 0;
    while (sent < 200 && send(fd, burst, sizeof(burst), MSG_NOSIGNAL) == (ssize_t)sizeof(burst))
        sent++; /* fails once the daemon has closed the connection */
    assert_true(dtest_closed_by_peer(fd, 10.0));
    close(fd);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    assert_int_equal(rep.n_tasks, 1);
    close(task);
    drig_fini(&r);
}

/* A task that says IDLE as fast as its socket takes it, for up to 30 s; one
 * byte on ready once the flood runs. Each 16-byte message costs the daemon a
 * decode and an arbiter call, more than it costs the task to write it. */
static void flood(drig_t *r, int ready)
{
    static uint8_t burst[1 << 20];
    int fd = dtest_register(r->sock, "flood", burst);
    int big = 4 << 20; /* as much in flight as the system allows */
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    for (size_t off = 0; off < sizeof(burst); off += DMN_PROTO_HDR_SIZE)
        dmn_proto_encode_empty(burst + off, DMN_PROTO_HDR_SIZE, 2, DMN_MSG_IDLE);
    uint64_t deadline = com_deadline_after_ns(30 * COM_NS_PER_S);
    int told = 0;
    while (!com_deadline_passed(deadline) &&
           send(fd, burst, sizeof(burst), MSG_NOSIGNAL) == (ssize_t)sizeof(burst))
        if (!told++)
            (void)!write(ready, "f", 1);
    _exit(0);
}

/* Two tasks flooding the daemon with valid messages do not hold off the
 * others: a task that asks for the turn 20 times in a row gets each within a
 * second, 2 s for all, and a query is answered meanwhile. The daemon read a
 * flooder's socket until it was empty, which it seldom was: each of the task's
 * turns waited until the machine's scheduler happened to pause both flooders
 * (seconds in all, at times several per turn). */
static void test_flood_does_not_starve(void **state)
{
    (void)state;
    static drig_t r;
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    enum { FLOODERS = 2, TURNS = 20 };
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int fd = dtest_register(r.sock, "victim", buf);
    pid_t flooders[FLOODERS];
    for (int i = 0; i < FLOODERS; i++) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        flooders[i] = fork();
        if (flooders[i] == 0) {
            close(p[0]);
            flood(&r, p[1]);
        }
        close(p[1]);
        r.spawned[r.n_spawned++] = flooders[i]; /* killed by drig_fini */
        char b;
        assert_int_equal(read(p[0], &b, 1), 1);
        close(p[0]);
    }
    com_clock_sleep_ns(100 * COM_NS_PER_MS); /* the daemon is in the flood now */
    double worst = 0, total = 0;
    for (int turn = 0; turn < TURNS; turn++) {
        uint64_t t0 = com_clock_ns();
        size_t n = dmn_proto_encode_ranges(buf, sizeof(buf), 2, DMN_MSG_PENDING, 1, 0, NULL, 0);
        assert_int_equal(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
        dmn_msg_t m;
        assert_int_equal(dtest_read(fd, buf, &m, 5.0), DMN_MSG_GRANT);
        double waited = (double)(com_clock_ns() - t0) / 1e9;
        worst = waited > worst ? waited : worst;
        total += waited;
        n = dmn_proto_encode_empty(buf, sizeof(buf), 3, DMN_MSG_IDLE);
        assert_int_equal(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    }
    printf("flood: %d turns granted in %.3f s, the longest wait %.3f s\n", TURNS, total, worst);
    assert_true(worst < 1.0 && total < 2.0);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 1000), GMUX_OK);
    for (int i = 0; i < FLOODERS; i++)
        assert_int_equal(waitpid(flooders[i], NULL, WNOHANG), 0); /* still flooding */
    close(fd);
    drig_fini(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_kill_client, drig_teardown),
        cmocka_unit_test_teardown(test_kill_daemon, drig_teardown),
        cmocka_unit_test_teardown(test_malformed, drig_teardown),
        cmocka_unit_test_teardown(test_slow_reader_gets_every_plan, drig_teardown),
        cmocka_unit_test_teardown(test_non_reader_dropped, drig_teardown),
        cmocka_unit_test_teardown(test_silent_connections_closed, drig_teardown),
        cmocka_unit_test_teardown(test_partial_message_stalls, drig_teardown),
        cmocka_unit_test_teardown(test_flood_does_not_starve, drig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
