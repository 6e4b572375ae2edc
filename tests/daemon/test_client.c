/* Unit tests of the client library (src/daemon/client.c) against a real
 * server run in a forked child. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/settings.h"
#include "daemon/client.h"
#include "daemon/endpoint.h"
#include "daemon/report.h"
#include "daemon/server.h"
#include "msg_io.h"
#include "tsrv.h"
#include "tdir.h"
#include "tproc.h"

static char dir[] = "/tmp/gmux-cl-XXXXXX";
static char path[128];
static pid_t server_pid; /* the running server child, 0 none */
/* GMUX_DAEMON_EVICT_WAIT_MS of the next server started, in ns (0: no waits) */
static uint64_t server_evict_wait_ns;

/* capacity: GMUX_DAEMON_CAPACITY of the server (NULL: the default); with one,
 * the share mode is off (time slices whatever the footprints). */
static pid_t start_server_cap(const char *placement, const char *capacity);

/* The parent's side of a server child: waits for its byte on pipe p (it
 * listens), keeps pid for the teardown. */
static pid_t server_ready(pid_t pid, int p[2])
{
    close(p[1]);
    server_pid = pid;
    char b;
    assert_int_equal(read(p[0], &b, 1), 1);
    close(p[0]);
    return pid;
}

static pid_t start_server(const char *placement)
{
    return start_server_cap(placement, NULL);
}

static pid_t start_server_cap(const char *placement, const char *capacity)
{
    tsrv_cfg_t c = {placement, capacity};
    dmn_server_opts_t o = {path,
                           DMN_NO_GROUP,
                           20 * COM_NS_PER_MS,
                           2 * COM_NS_PER_S,
                           NULL,
                           0,
                           0,
                           server_evict_wait_ns,
                           0,
                           0,
                           NULL,
                           0};
    return tsrv_start(&o, tsrv_prep_cfg, &c, &server_pid);
}

static void stop_server(pid_t pid, int sig)
{
    kill(pid, sig);
    int st;
    if (pid == server_pid)
        server_pid = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
}

/* After a failed assertion the test never reaches stop_server: the forked
 * server would keep the test's output open until ctest's timeout. */
static int kill_leftover_server(void **state)
{
    (void)state;
    tproc_kill_reap(&server_pid);
    return 0;
}

struct plans {
    int fills, evicts, aheads;
    uint64_t bytes[3]; /* per dmn_plan_kind_t */
    dmn_range_t last;
    int n_ev; /* every range received, in order */
    struct {
        dmn_plan_kind_t kind;
        uint64_t seq;
        dmn_range_t r;
    } ev[32];
};

static void on_plan(void *arg, uint64_t seq, dmn_plan_kind_t kind, const dmn_range_t *r, uint32_t n)
{
    struct plans *p = arg;
    if (kind == DMN_PLAN_FILL)
        p->fills += (int)n;
    else if (kind == DMN_PLAN_AHEAD)
        p->aheads += (int)n;
    else
        p->evicts += (int)n;
    p->last = r[n - 1];
    for (uint32_t i = 0; i < n && kind <= DMN_PLAN_AHEAD; i++)
        p->bytes[kind] += r[i].len;
    for (uint32_t i = 0; i < n && p->n_ev < 32; i++, p->n_ev++) {
        p->ev[p->n_ev].kind = kind;
        p->ev[p->n_ev].seq = seq;
        p->ev[p->n_ev].r = r[i];
    }
}

static dmn_client_t *open_client(const char *name, struct plans *pl)
{
    dmn_client_opts_t o = {path, name, DMN_CLASS_BATCH, 0, 0, on_plan, pl, NULL, NULL, NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    return c;
}

static void test_local_then_join(void **state)
{
    (void)state;
    struct plans pl = {0};
    dmn_client_t *c = open_client("early", &pl);
    assert_true(dmn_client_is_local(c));
    assert_int_equal(dmn_client_registrations(c), 0);
    /* No daemon: no gating, no waiting. Not timed: a wait for its 10-minute
     * bound would outlast the test's timeout. */
    assert_int_equal(dmn_client_wait_turn(c, 600 * COM_NS_PER_S), GMUX_OK);
    pid_t srv = start_server("none");
    uint64_t deadline = com_deadline_after_ns(10 * COM_NS_PER_S);
    while (dmn_client_is_local(c) && !com_deadline_passed(deadline)) {
        assert_int_equal(dmn_client_wait_turn(c, COM_NS_PER_S), GMUX_OK);
        com_clock_sleep_ns(5 * COM_NS_PER_MS);
    }
    assert_false(dmn_client_is_local(c));
    assert_int_equal(dmn_client_registrations(c), 1);
    assert_true(dmn_client_task_id(c) > 0);
    assert_int_equal(dmn_client_wait_turn(c, 5 * COM_NS_PER_S), GMUX_OK);
    assert_true(dmn_client_holds_turn(c));
    /* The daemon dies: the next wait carries on in local mode. */
    stop_server(srv, SIGKILL);
    assert_int_equal(dmn_client_idle(c), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c, 5 * COM_NS_PER_S), GMUX_OK);
    assert_true(dmn_client_is_local(c));
    dmn_client_close(c);
}

static void test_gating_and_plans(void **state)
{
    (void)state;
    pid_t srv = start_server("swap");
    struct plans p1 = {0}, p2 = {0};
    dmn_client_t *c1 = open_client("one", &p1), *c2 = open_client("two", &p2);
    assert_false(dmn_client_is_local(c1));
    assert_true(dmn_client_task_id(c2) > dmn_client_task_id(c1));
    dmn_range_t a = {0x10000, 0x1000}, b = {0x20000, 0x2000};
    assert_int_equal(dmn_client_pending(c1, 1, &a, 1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c1, 5 * COM_NS_PER_S), GMUX_OK);
    assert_true(dmn_client_holds_turn(c1));
    assert_int_equal(p1.fills, 1); /* its own working set, before the grant */
    assert_int_equal(p1.last.base, a.base);
    /* c1 holds the turn and does not let go: c2 is not granted. */
    assert_int_equal(dmn_client_pending(c2, 1, &b, 1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c2, 100 * COM_NS_PER_MS), GMUX_ERR_TIMEOUT);
    assert_false(dmn_client_holds_turn(c2));
    /* c1 goes idle: c2 gets the turn, with its fill; c1 gets the eviction. */
    assert_int_equal(dmn_client_idle(c1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c2, 5 * COM_NS_PER_S), GMUX_OK);
    assert_true(dmn_client_holds_turn(c2));
    assert_int_equal(p2.fills, 1);
    assert_int_equal(p2.last.base, b.base);
    dmn_msg_stats_t st = {1, 2, 3, 4, 5, 6, 7};
    assert_int_equal(dmn_client_report(c1, &st), GMUX_OK);
    assert_int_equal(dmn_client_pending(c1, 1, &a, 1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c1, 50 * COM_NS_PER_MS), GMUX_ERR_TIMEOUT);
    assert_int_equal(p1.evicts, 1);
    assert_int_equal(p1.last.base, a.base);
    /* c2, its quantum over, is revoked: polled until the REVOKE came (a
     * sleep of 40 ms stood here; a daemon kept off the processor for 140 ms
     * sent it late, c2's wait below found its turn still whole and returned
     * GMUX_OK). Then, at its next boundary, it releases and waits. */
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (dmn_client_poll(c2) == 1 && !com_deadline_passed(deadline))
        com_clock_sleep_ns(COM_NS_PER_MS);
    assert_int_equal(dmn_client_poll(c2), 0);
    assert_true(dmn_client_holds_turn(c2)); /* revoked, not yet released */
    assert_int_equal(dmn_client_wait_turn(c1, 50 * COM_NS_PER_MS), GMUX_ERR_TIMEOUT);
    assert_int_equal(dmn_client_wait_turn(c2, 100 * COM_NS_PER_MS), GMUX_ERR_TIMEOUT);
    assert_false(dmn_client_holds_turn(c2));
    assert_int_equal(dmn_client_wait_turn(c1, 5 * COM_NS_PER_S), GMUX_OK);
    assert_true(dmn_client_holds_turn(c1));
    dmn_client_close(c1);
    dmn_client_close(c2);
    stop_server(srv, SIGTERM);
}

/* Filling ahead (chunk placement, capacity 4 chunks of 2 MiB): while c2 runs,
 * c3 (waiting, next) receives an AHEAD plan for the first chunk of its working
 * set in use order (the one free chunk), before its own GRANT; at its grant
 * its FILL carries only the chunk still missing. */
static void test_ahead_before_grant(void **state)
{
    (void)state;
    pid_t srv = start_server_cap("chunk", "8MiB");
    struct plans p1 = {0}, p2 = {0}, p3 = {0};
    dmn_client_t *c1 = open_client("one", &p1), *c2 = open_client("two", &p2),
                 *c3 = open_client("three", &p3);
    const uint64_t MB2 = 2ull << 20;
    dmn_range_t a = {0x10000000, MB2}, b = {0x20000000, 2 * MB2};
    dmn_range_t c[2] = {{0x30000000 + MB2, MB2}, {0x30000000, MB2}}; /* used top chunk first */
    assert_int_equal(dmn_client_pending(c1, 1, &a, 1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c1, 5 * COM_NS_PER_S), GMUX_OK);
    assert_true(dmn_client_holds_turn(c1));
    assert_int_equal(dmn_client_pending(c2, 1, &b, 1), GMUX_OK);
    assert_int_equal(dmn_client_pending(c3, 1, c, 2), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c2, 100 * COM_NS_PER_MS), GMUX_ERR_TIMEOUT);
    assert_int_equal(dmn_client_wait_turn(c3, 100 * COM_NS_PER_MS), GMUX_ERR_TIMEOUT);
    assert_int_equal(p3.n_ev, 0);
    /* c1 idle: c2 (waiting longest, first slot) is granted 2 chunks, 3 of 4 are used. */
    assert_int_equal(dmn_client_idle(c1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c2, 5 * COM_NS_PER_S), GMUX_OK);
    assert_true(dmn_client_holds_turn(c2));
    assert_int_equal(p2.fills, 1);
    assert_int_equal(p2.aheads, 0);
    /* c3 waits (c2 holds the turn past the grace of this wait): it gets the fill ahead. */
    uint64_t deadline = com_deadline_after_ns(5 * COM_NS_PER_S);
    while (p3.aheads == 0 && !com_deadline_passed(deadline))
        assert_int_equal(dmn_client_wait_turn(c3, 50 * COM_NS_PER_MS), GMUX_ERR_TIMEOUT);
    assert_false(dmn_client_holds_turn(c3)); /* before its own grant */
    assert_int_equal(p3.n_ev, 1);
    assert_int_equal(p3.ev[0].kind, DMN_PLAN_AHEAD);
    assert_int_equal(p3.ev[0].r.base, c[0].base); /* its first chunk in use order */
    assert_int_equal(p3.ev[0].r.len, MB2);
    assert_true(p3.ev[0].seq > 0); /* c2's grant */
    /* c2 idle: c3 is granted; its fill is the other chunk only (c1's goes for it). */
    assert_int_equal(dmn_client_idle(c2), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c3, 5 * COM_NS_PER_S), GMUX_OK);
    assert_true(dmn_client_holds_turn(c3));
    assert_int_equal(p3.fills, 1);
    assert_int_equal(p3.aheads, 1);
    assert_int_equal(p3.ev[1].kind, DMN_PLAN_FILL);
    assert_int_equal(p3.ev[1].r.base, c[1].base);
    assert_int_equal(p3.ev[1].r.len, MB2);
    assert_true(p3.ev[1].seq > p3.ev[0].seq);
    /* STATUS counts what was planned: the fills and the fill ahead the clients
     * received, and c1's chunk evicted for c3 (c1, idle, has not read that
     * order yet: this client library only hands plans to its on_plan callback as it reads
     * them; libgmux.so's carries evictions out on arrival) */
    dmn_report_t rep;
    assert_int_equal(dmn_report_fetch(path, &rep, 5000), GMUX_OK);
    assert_int_equal(rep.ahead_plans, 1);
    assert_int_equal(rep.ahead_bytes, MB2);
    assert_int_equal(rep.fill_bytes,
                     p1.bytes[DMN_PLAN_FILL] + p2.bytes[DMN_PLAN_FILL] + p3.bytes[DMN_PLAN_FILL]);
    assert_int_equal(rep.fill_bytes, 4 * MB2); /* a, b's two chunks, c's second chunk */
    assert_int_equal(rep.evict_bytes, MB2);
    dmn_client_close(c1);
    dmn_client_close(c2);
    dmn_client_close(c3);
    stop_server(srv, SIGTERM);
}

/* Reads one whole message of the given type from a blocking socket and
 * decodes it into *m. */
static int fake_read(int fd, uint8_t *buf, dmn_msg_type_t type, dmn_msg_t *m)
{
    return tmsg_read(fd, buf, m) == 0 && m->hdr.type == type ? 0 : -1;
}

/* A daemon of one connection whose GRANT crosses the client's IDLE: it
 * answers REGISTER, reads PENDING and IDLE, and only then sends the GRANT it
 * decided before it read the IDLE (which, at gmuxd, ends that turn again).
 * again: the client asks once more after its IDLE; the fake reads that PENDING
 * before the stale GRANT, then a STATS (the test's word that it has looked at
 * that GRANT), and then grants the new request, as gmuxd would. */
static pid_t start_fake_crossing_grant(int again)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        int lfd, lk, fd = -1;
        static uint8_t buf[DMN_PROTO_MAX_MSG];
        if (dmn_endpoint_listen(path, DMN_NO_GROUP, 0, &lfd, &lk, NULL, 0) != GMUX_OK)
            _exit(1);
        (void)!write(p[1], "r", 1);
        struct pollfd pf = {lfd, POLLIN, 0};
        if (poll(&pf, 1, 10000) != 1 || (fd = accept(lfd, NULL, NULL)) < 0)
            _exit(1);
        dmn_msg_t m;
        dmn_msg_registered_t r = {7, 0, 20 * COM_NS_PER_MS};
        if (fake_read(fd, buf, DMN_MSG_REGISTER, &m) != 0 ||
            write(fd, buf, dmn_proto_encode_registered(buf, sizeof(buf), 1, &r)) <= 0 ||
            fake_read(fd, buf, DMN_MSG_PENDING, &m) != 0)
            _exit(1);
        dmn_msg_grant_t g = {1, 20 * COM_NS_PER_MS, m.u.ranges.seq, 0, 0}; /* decided now */
        if (fake_read(fd, buf, DMN_MSG_IDLE, &m) != 0 ||
            (again && fake_read(fd, buf, DMN_MSG_PENDING, &m) != 0))
            _exit(1);
        dmn_msg_grant_t fresh = {2, 20 * COM_NS_PER_MS, again ? m.u.ranges.seq : 0, 0, 0};
        if (write(fd, buf, dmn_proto_encode_grant(buf, sizeof(buf), 2, DMN_MSG_GRANT, &g)) <= 0 ||
            (again &&
             (fake_read(fd, buf, DMN_MSG_STATS, &m) != 0 ||
              write(fd, buf, dmn_proto_encode_grant(buf, sizeof(buf), 3, DMN_MSG_GRANT, &fresh)) <=
                  0)))
            _exit(1);
        while (read(fd, buf, sizeof(buf)) > 0) /* until the client closes */
            ;
        unlink(path);
        _exit(0);
    }
    return server_ready(pid, p);
}

/* The client asks, goes idle and, again: asks once more, while the fake
 * daemon's GRANT for the first request crosses the IDLE (see
 * start_fake_crossing_grant). That GRANT must not give the turn; with again,
 * the GRANT for the new request that follows does. */
static void run_crossing_grant(int again)
{
    pid_t srv = start_fake_crossing_grant(again);
    struct plans pl = {0};
    dmn_client_t *c = open_client("crossed", &pl);
    assert_false(dmn_client_is_local(c));
    assert_int_equal(dmn_client_pending(c, 1, NULL, 0), GMUX_OK);
    assert_int_equal(dmn_client_idle(c), GMUX_OK);
    if (again)
        assert_int_equal(dmn_client_pending(c, 1, NULL, 0), GMUX_OK);
    struct pollfd pf = {dmn_client_fd(c), POLLIN, 0};
    assert_int_equal(poll(&pf, 1, 5000), 1); /* the crossing GRANT is there */
    assert_int_equal(dmn_client_poll(c), 0);
    assert_false(dmn_client_holds_turn(c));
    assert_false(dmn_client_is_local(c)); /* a stale GRANT is no protocol error */
    if (again) {
        dmn_msg_stats_t st = {0};
        assert_int_equal(dmn_client_report(c, &st), GMUX_OK); /* the fake grants request 2 */
        assert_int_equal(dmn_client_wait_turn(c, 5 * COM_NS_PER_S), GMUX_OK);
        assert_true(dmn_client_holds_turn(c));
        assert_false(dmn_client_is_local(c));
    }
    dmn_client_close(c);
    assert_int_equal(srv, server_pid);
    tsrv_wait_exit0(&server_pid);
}

/* A GRANT that arrives after the client sent IDLE (and asked for nothing
 * since) answers a request the daemon has already ended: it is no turn. The
 * client took it as one, and launched beside the task the daemon granted
 * next. */
static void test_grant_after_idle_is_stale(void **state)
{
    (void)state;
    run_crossing_grant(0);
}

/* The same crossing GRANT when the client has asked again since its IDLE: it
 * still answers the first request, which the IDLE ended at the daemon, not
 * the new one (the daemon grants that one by itself, next). The client took
 * it as the answer to its new PENDING and launched beside whichever task the
 * daemon had granted meanwhile. */
static void test_grant_crossing_idle_and_pending_is_stale(void **state)
{
    (void)state;
    run_crossing_grant(1);
}

/* A socket path longer than a Unix socket address holds is refused, not cut:
 * cut to its first 107 bytes it named another socket, and the client
 * registered with whichever daemon served that one. */
static void test_path_too_long(void **state)
{
    (void)state;
    char saved[sizeof(path)], longer[160];
    snprintf(saved, sizeof(saved), "%s", path);
    int n = snprintf(path, sizeof(path), "%s/", dir);
    memset(path + n, 'p', 107 - (size_t)n); /* the longest path a socket takes */
    path[107] = '\0';
    pid_t srv = start_server("none");
    snprintf(longer, sizeof(longer), "%s.other", path);
    dmn_client_opts_t o = {longer, "long", DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL,
                           NULL,   NULL};
    dmn_client_t *c = NULL;
    char why[DMN_CLIENT_WHY_MAX];
    gmux_status_t st = dmn_client_open_why(&o, &c, why, sizeof(why));
    if (c)
        dmn_client_close(c);
    stop_server(srv, SIGTERM);
    snprintf(path, sizeof(path), "%s", saved);
    assert_int_equal(st, GMUX_ERR_RANGE);
    assert_null(c);
    /* the shim's warning says what failed: no refusal by gmuxd */
    assert_non_null(strstr(why, "socket path"));
    assert_non_null(strstr(why, "at most 107 bytes"));
    assert_null(strstr(why, "refused"));
}

/* In a child: announces full PENDINGs (64 KiB each, far more than a socket
 * buffers) to a daemon that does not read, then waits for a turn. 0 when
 * every call returned and the client is in local mode. */
static int flood_stopped_daemon(int index, void *arg)
{
    (void)index;
    dmn_client_t *c = arg;
    static dmn_range_t r[DMN_MAX_RANGES];
    for (uint32_t i = 0; i < DMN_MAX_RANGES; i++)
        r[i] = (dmn_range_t){(uint64_t)(i + 1) << 21, 4096};
    for (int k = 0; k < 20; k++)
        if (dmn_client_pending(c, 1, r, DMN_MAX_RANGES) != GMUX_OK)
            return 2;
    (void)dmn_client_wait_turn(c, COM_NS_PER_S);
    return dmn_client_is_local(c) ? 0 : 3;
}

/* In a child: a new client and a status query while the daemon's queue of
 * connections is full. 0 when both returned, the client in local mode and
 * the query failed. */
static int join_stopped_daemon(int index, void *arg)
{
    (void)index;
    (void)arg;
    dmn_client_opts_t o = {path, "late", DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};
    dmn_client_t *c = NULL;
    if (dmn_client_open(&o, &c) != GMUX_OK)
        return 2;
    int local = dmn_client_is_local(c);
    dmn_client_close(c);
    if (!local)
        return 3;
    static dmn_report_t rep;
    return dmn_report_fetch(path, &rep, 1000) != GMUX_OK ? 0 : 4;
}

/* A daemon that is alive but does not read (stopped: SIGSTOP, a debugger, a
 * machine swapping) holds nobody for ever: a client whose socket is full
 * gives up sending and goes local, and a client or a gmux status that
 * connects while the daemon's queue of connections is full is refused in
 * bounded time. Both hung: send and connect blocked without a limit. */
static void test_stopped_daemon_blocks_nobody(void **state)
{
    (void)state;
    pid_t srv = start_server("none");
    struct plans pl = {0};
    dmn_client_t *c = open_client("flood", &pl);
    assert_false(dmn_client_is_local(c));
    assert_int_equal(kill(srv, SIGSTOP), 0);
    int status = 0;
    tproc_fork_all(1, flood_stopped_daemon, c, 60.0, &status);
    assert_int_not_equal(status, TPROC_TIMED_OUT);
    assert_int_equal(status, 0);
    /* fill the queue of connections not yet accepted (listen backlog) */
    int raw[80], n = 0;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof(a.sun_path));
    memcpy(a.sun_path, path, strlen(path) + 1);
    for (; n < 80; n++) {
        raw[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        assert_true(raw[n] >= 0);
        if (connect(raw[n], (struct sockaddr *)&a, sizeof(a)) != 0) {
            assert_int_equal(errno, EAGAIN);
            close(raw[n]);
            break;
        }
    }
    assert_true(n < 80); /* the queue is full */
    tproc_fork_all(1, join_stopped_daemon, NULL, 60.0, &status);
    for (int i = 0; i < n; i++)
        close(raw[i]);
    kill(srv, SIGCONT);
    assert_int_not_equal(status, TPROC_TIMED_OUT);
    assert_int_equal(status, 0);
    dmn_client_close(c);
    stop_server(srv, SIGTERM);
}

/* Polls c until done(c) or 20 s; the shim's watcher thread calls it so. */
static void poll_until(dmn_client_t *c, int (*done)(const dmn_client_t *c))
{
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (!done(c) && !com_deadline_passed(deadline)) {
        (void)dmn_client_poll(c);
        com_clock_sleep_ns(COM_NS_PER_MS);
    }
}

static int has_socket(const dmn_client_t *c)
{
    return dmn_client_fd(c) >= 0;
}

static int has_no_socket(const dmn_client_t *c)
{
    return dmn_client_fd(c) < 0;
}

static int joined(const dmn_client_t *c)
{
    return !dmn_client_is_local(c);
}

/* A reconnection never waits for the daemon's answer: the call that makes
 * it (the shim's watcher thread, holding the gate's lock) sends REGISTER and
 * returns with the registration pending, still in local mode; a later call
 * completes it once the daemon answers, and one past the 2 s bound, with no
 * answer, gives up and goes local again. Each reconnection to a daemon that
 * accepts and does not answer (stopped, swamped) blocked its caller: 2 s
 * for the answer, after up to 2 s in connect. */
static void test_reconnect_never_waits_for_answer(void **state)
{
    (void)state;
    struct plans pl = {0};
    dmn_client_t *c = open_client("patient", &pl); /* no daemon yet */
    assert_true(dmn_client_is_local(c));
    int lfd, lk;
    assert_int_equal(dmn_endpoint_listen(path, DMN_NO_GROUP, 0, &lfd, &lk, NULL, 0), GMUX_OK);
    poll_until(c, has_socket);
    /* connected, REGISTER sent, no answer: the call has returned all the same */
    assert_true(dmn_client_fd(c) >= 0);
    assert_true(dmn_client_is_local(c));
    assert_int_equal(dmn_client_registrations(c), 0);
    assert_int_equal(dmn_client_wait_turn(c, 60 * COM_NS_PER_S), GMUX_OK); /* ungated */
    assert_false(dmn_client_holds_turn(c));
    /* the daemon answers; should the client have given a try up meanwhile
     * (a loaded machine), that answer is in vain and the next try's counts */
    struct pollfd pf = {lfd, POLLIN, 0};
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    dmn_msg_t m;
    int fd = -1;
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (dmn_client_is_local(c) && !com_deadline_passed(deadline)) {
        int next = poll(&pf, 1, 1) == 1 ? accept(lfd, NULL, NULL) : -1;
        if (next >= 0) {
            if (fd >= 0)
                close(fd);
            fd = next;
            assert_int_equal(fake_read(fd, buf, DMN_MSG_REGISTER, &m), 0);
            assert_string_equal(m.u.reg.name, "patient");
            dmn_msg_registered_t r = {9, 0, 20 * COM_NS_PER_MS};
            size_t len = dmn_proto_encode_registered(buf, sizeof(buf), 1, &r);
            (void)!write(fd, buf, len);
        }
        (void)dmn_client_poll(c);
    }
    poll_until(c, joined);
    assert_false(dmn_client_is_local(c));
    assert_int_equal(dmn_client_task_id(c), 9);
    assert_int_equal(dmn_client_registrations(c), 1);
    /* the daemon goes; the next one accepts and never answers */
    close(fd);
    poll_until(c, has_no_socket);
    assert_true(dmn_client_is_local(c));
    poll_until(c, has_socket);
    assert_true(dmn_client_is_local(c));
    assert_int_equal(poll(&pf, 1, 10000), 1);
    fd = accept(lfd, NULL, NULL);
    assert_true(fd >= 0);
    assert_int_equal(fake_read(fd, buf, DMN_MSG_REGISTER, &m), 0);
    poll_until(c, has_no_socket); /* gave up waiting for REGISTERED */
    assert_true(dmn_client_fd(c) < 0);
    assert_true(dmn_client_is_local(c));
    assert_int_equal(dmn_client_registrations(c), 1);
    dmn_client_close(c);
    close(fd);
    close(lfd);
    close(lk);
    unlink(path);
    char lock[160];
    snprintf(lock, sizeof(lock), "%s.lock", path);
    unlink(lock);
}

static void test_bad_options(void **state)
{
    (void)state;
    dmn_client_opts_t o = {path, "x", (dmn_class_t)5, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_ERR_INVALID);
    o.cls = DMN_CLASS_BATCH;
    o.priority = 21;
    char why[DMN_CLIENT_WHY_MAX];
    assert_int_equal(dmn_client_open_why(&o, &c, why, sizeof(why)), GMUX_ERR_INVALID);
    assert_null(c);
    /* only a refusal is worded as one */
    assert_string_equal(why, "invalid task options for the daemon client (GMUX_ERR_INVALID)");
    char err[64];
    assert_int_equal(com_settings_set(COM_SETTING_DAEMON_TURN_TIMEOUT_MS, "250", err, sizeof(err)),
                     GMUX_OK);
    assert_int_equal(dmn_client_turn_timeout_ns(), 250 * COM_NS_PER_MS);
}

int main(void)
{
    tdir_make_for_socket(dir, path, sizeof(path));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_local_then_join, kill_leftover_server),
        cmocka_unit_test_teardown(test_gating_and_plans, kill_leftover_server),
        cmocka_unit_test_teardown(test_ahead_before_grant, kill_leftover_server),
        cmocka_unit_test_teardown(test_grant_after_idle_is_stale, kill_leftover_server),
        cmocka_unit_test_teardown(test_grant_crossing_idle_and_pending_is_stale,
                                  kill_leftover_server),
        cmocka_unit_test_teardown(test_path_too_long, kill_leftover_server),
        cmocka_unit_test_teardown(test_stopped_daemon_blocks_nobody, kill_leftover_server),
        cmocka_unit_test_teardown(test_reconnect_never_waits_for_answer, kill_leftover_server),
        cmocka_unit_test_teardown(test_bad_options, kill_leftover_server),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
