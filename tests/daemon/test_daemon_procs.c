/*
 * Integration tests of gmuxd with real processes: the daemon executable and
 * synthetic clients (gmux_test_client) on a private socket. They assert
 * behaviour (who runs when, what survives what), with loose bounds and long
 * deadlines so a loaded machine slows them down without failing them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/endpoint.h"
#include "drig.h"
#include "tproc.h"

#define CLIENT_TIMEOUT_S 120.0

static dmn_report_t rep;

/* Collects the logs of clients names[0..n) into one kernel list. */
static dkernel_t *gather(drig_t *r, const char *const *names, int n, dlog_t *logs, int *total)
{
    *total = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(drig_read_log(r, names[i], i, &logs[i]), 0);
        *total += logs[i].n;
    }
    dkernel_t *all = malloc((size_t)*total * sizeof(*all));
    int m = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < logs[i].n; k++)
            all[m++] = logs[i].k[k];
    return all;
}

static int count_tasks_running(const dmn_report_t *r, void *arg)
{
    int want = *(int *)arg, busy = 0;
    for (uint32_t i = 0; i < r->n_tasks; i++)
        busy += r->tasks[i].kernels > 0;
    return (int)r->n_tasks == want && busy == want;
}

static int by_start_k(const void *a, const void *b)
{
    const dkernel_t *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Round robin: equal tasks get roughly equal shares, never at the same time,
 * and the swap placement's orders reach both sides of each switch. */
static void test_round_robin(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "swap") > 0);
    const char *names[] = {"rr0", "rr1", "rr2"};
    pid_t pids[3];
    for (int i = 0; i < 3; i++)
        pids[i] = drig_start_client(&r, names[i], "batch", 0, 200, 2000, 0);
    /* The daemon's own accounting between two snapshots while all three run:
     * the time each held the turn, which is what the arbiter shares out. */
    int three = 3;
    static dmn_report_t s1, s2;
    assert_true(drig_until(&r, count_tasks_running, &three, 30.0, &s1));
    /* A window of many turns (one turn stretched by the OS scheduler must not
     * decide the outcome): 45 switches, 15 turns each. */
    uint64_t deadline = com_deadline_after_ns(10 * COM_NS_PER_S);
    do {
        com_clock_sleep_ns(20 * COM_NS_PER_MS);
        assert_int_equal(dmn_report_fetch(r.sock, &s2, 5000), GMUX_OK);
    } while (s2.n_tasks == 3 && s2.switches - s1.switches < 45 && !com_deadline_passed(deadline));
    printf("round robin: daemon's window of %llu switches\n",
           (unsigned long long)(s2.switches - s1.switches));
    if (s2.n_tasks == 3) { /* on a very slow machine they may be done already */
        uint64_t d[3], dsum = 0;
        for (int i = 0; i < 3; i++) {
            assert_int_equal(s2.tasks[i].id, s1.tasks[i].id);
            d[i] = s2.tasks[i].run_ns - s1.tasks[i].run_ns;
            dsum += d[i];
        }
        assert_true(dsum > 0);
        for (int i = 0; i < 3; i++) {
            double share = (double)d[i] / (double)dsum;
            printf("round robin: task id %u held the turn %.3f of the time (daemon's view)\n",
                   s2.tasks[i].id, share);
            assert_true(share > 0.12 && share < 0.6); /* 1/3 each, loosely */
        }
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(drig_wait(pids[i], CLIENT_TIMEOUT_S), 0);
    dlog_t logs[3];
    int n;
    dkernel_t *all = gather(&r, names, 3, logs, &n);
    assert_int_equal(n, 600);
    assert_true(drig_exclusive(all, n));
    /* The window in which all three were running. */
    uint64_t lo = 0, hi = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(logs[i].registrations, 1);
        assert_true(logs[i].fills > 0);  /* FILL orders before each of its turns */
        assert_true(logs[i].evicts > 0); /* EVICT orders when it was switched out */
        lo = logs[i].k[0].start > lo ? logs[i].k[0].start : lo;
        hi = logs[i].k[logs[i].n - 1].end < hi ? logs[i].k[logs[i].n - 1].end : hi;
    }
    assert_true(hi > lo);
    /* Shares of the GPU time used in that window (gaps, when a loaded machine
     * did not run anyone, do not count against anyone). */
    uint64_t busy[3] = {0}, sum = 0;
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < logs[i].n; k++) {
            uint64_t s = logs[i].k[k].start, e = logs[i].k[k].end;
            s = s < lo ? lo : s;
            e = e > hi ? hi : e;
            busy[i] += e > s ? e - s : 0;
            assert_int_equal(logs[i].k[k].local, 0);
        }
        sum += busy[i];
    }
    assert_true(sum > 0);
    for (int i = 0; i < 3; i++) {
        double share = (double)busy[i] / (double)sum;
        printf("round robin: task %d share %.3f of the GPU time of the shared window "
               "(%.3f of the window)\n",
               i, share, (double)busy[i] / (double)(hi - lo));
        /* 1/3 each, very loosely: on a loaded machine a process may lose much
         * of its turns to the OS scheduler (the daemon's view above is the
         * tight check). Starvation would give about 0. */
        assert_true(share > 0.05 && share < 0.7);
    }
    /* Interleaving: the turn passes between tasks many times. */
    qsort(all, (size_t)n, sizeof(*all), by_start_k);
    int passes = 0;
    for (int k = 1; k < n; k++)
        passes += all[k].task != all[k - 1].task;
    printf("round robin: the turn passed %d times\n", passes);
    assert_true(passes >= 9);
    free(all);
    for (int i = 0; i < 3; i++)
        drig_free_log(&logs[i]);
    drig_fini(&r);
}

/* The opt placement under a capacity smaller than the working sets: every
 * task is filled at its turns and evicted while others run, and the switch
 * still honours mutual exclusion. */
static void test_opt_placement(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    setenv("GMUX_DAEMON_CAPACITY", "128MiB", 1); /* two of the three 64 MiB sets */
    pid_t d = drig_start_daemon(&r, 5, "opt");
    unsetenv("GMUX_DAEMON_CAPACITY");
    assert_true(d > 0);
    const char *names[] = {"o0", "o1", "o2"};
    pid_t pids[3];
    for (int i = 0; i < 3; i++)
        pids[i] = drig_start_client(&r, names[i], "batch", 0, 150, 2000, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(drig_wait(pids[i], CLIENT_TIMEOUT_S), 0);
    dlog_t logs[3];
    int n;
    dkernel_t *all = gather(&r, names, 3, logs, &n);
    assert_true(drig_exclusive(all, n));
    int evicted = 0;
    for (int i = 0; i < 3; i++) {
        printf("opt: task %d got %ld fill and %ld evict orders\n", i, logs[i].fills,
               logs[i].evicts);
        assert_true(logs[i].fills > 0);
        evicted += logs[i].evicts > 0;
    }
    assert_true(evicted >= 1); /* three sets do not fit in two */
    free(all);
    for (int i = 0; i < 3; i++)
        drig_free_log(&logs[i]);
    drig_fini(&r);
}

/* Strict priority: once the high-priority task waits, the low one runs at
 * most the kernel it was in until the high one is done. */
static void test_priority(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    const char *names[] = {"low", "high"};
    pid_t low = drig_start_client(&r, "low", "batch", 0, 250, 2000, 0);
    int one = 1;
    assert_true(drig_until(&r, count_tasks_running, &one, 30.0, &rep));
    pid_t high = drig_start_client(&r, "high", "batch", 5, 40, 2000, 0);
    assert_int_equal(drig_wait(high, CLIENT_TIMEOUT_S), 0);
    assert_int_equal(drig_wait(low, CLIENT_TIMEOUT_S), 0);
    dlog_t logs[2];
    int n;
    dkernel_t *all = gather(&r, names, 2, logs, &n);
    assert_true(drig_exclusive(all, n));
    uint64_t h0 = logs[1].k[0].start, h1 = logs[1].k[logs[1].n - 1].end;
    uint64_t low_last = logs[0].k[logs[0].n - 1].end;
    assert_true(low_last > h1); /* low was still running: the test means something */
    int low_inside = 0;
    for (int k = 0; k < logs[0].n; k++)
        low_inside += logs[0].k[k].start > h0 && logs[0].k[k].start < h1;
    printf("priority: low-priority kernels started while the high one ran: %d\n", low_inside);
    assert_true(low_inside <= 1);
    free(all);
    drig_free_log(&logs[0]);
    drig_free_log(&logs[1]);
    drig_fini(&r);
}

/* The latency class takes the GPU at the next kernel boundary, without
 * waiting for the (long) quantum of the batch holder. */
static void test_latency_class(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 500, "none") > 0);
    const char *names[] = {"b0", "b1", "lat"};
    /* 10 ms batch kernels: on a loaded machine (load 15 on 2 cores) the daemon
     * could take tens of ms to be scheduled, and 2 ms kernels let 13 through. */
    pid_t b0 = drig_start_client(&r, "b0", "batch", 5, 100, 10000, 0);
    pid_t b1 = drig_start_client(&r, "b1", "batch", 5, 100, 10000, 0);
    int two = 2;
    assert_true(drig_until(&r, count_tasks_running, &two, 30.0, &rep));
    pid_t lat = drig_start_client(&r, "lat", "latency", 0, 8, 1000, 20000);
    assert_int_equal(drig_wait(lat, CLIENT_TIMEOUT_S), 0);
    assert_int_equal(drig_wait(b0, CLIENT_TIMEOUT_S), 0);
    assert_int_equal(drig_wait(b1, CLIENT_TIMEOUT_S), 0);
    dlog_t logs[3];
    int n;
    dkernel_t *all = gather(&r, names, 3, logs, &n);
    assert_true(drig_exclusive(all, n));
    uint64_t batch_end = logs[0].k[logs[0].n - 1].end;
    int worst = 0, measured = 0;
    for (int k = 0; k < logs[2].n; k++) {
        const dkernel_t *l = &logs[2].k[k];
        if (l->start > batch_end)
            continue; /* the batch tasks were done: nothing to take over */
        int batch_started = 0;
        for (int i = 0; i < logs[0].n + logs[1].n; i++) {
            const dkernel_t *b = i < logs[0].n ? &logs[0].k[i] : &logs[1].k[i - logs[0].n];
            batch_started += b->start > l->req && b->start < l->start;
        }
        worst = batch_started > worst ? batch_started : worst;
        measured++;
    }
    printf("latency class: %d kernels measured, at most %d batch kernels started while one "
           "waited (a quantum holds about 50)\n",
           measured, worst);
    assert_true(measured >= 3);
    /* At most the kernel in flight when the request reached the daemon, plus
     * one if a quantum switch between the batch tasks crossed the request;
     * waiting for the quantum would let about 50 through. */
    assert_true(worst <= 2);
    free(all);
    for (int i = 0; i < 3; i++)
        drig_free_log(&logs[i]);
    drig_fini(&r);
}

static char *const *cli_argv(const char *a, const char *b, const char *c, const char *d)
{
    static char *argv[8];
    argv[0] = GMUX_CLI_PATH;
    argv[1] = (char *)a, argv[2] = (char *)b, argv[3] = (char *)c, argv[4] = (char *)d;
    argv[5] = NULL;
    return argv;
}

/* kill -9 of the client holding the GPU: its slot is reclaimed within 1 s
 * and the others finish under the daemon. Also checks gmux status and top. */
static void test_kill_client(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    const char *names[] = {"k0", "k1", "k2"};
    pid_t pids[3];
    for (int i = 0; i < 3; i++)
        pids[i] = drig_start_client(&r, names[i], "batch", 0, 250, 3000, 0);
    int three = 3;
    assert_true(drig_until(&r, count_tasks_running, &three, 30.0, &rep));

    static char out[65536], err[4096];
    int st = tproc_capture(cli_argv("status", "--json", "--socket", r.sock), NULL, 30.0, out,
                           sizeof(out), err, sizeof(err));
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "\"name\": \"k1\""));
    assert_non_null(strstr(out, "\"class\": \"batch\""));
    st = tproc_capture(cli_argv("top", "--once", "--socket", r.sock), NULL, 30.0, out, sizeof(out),
                       err, sizeof(err));
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "SHARE"));
    assert_non_null(strstr(out, "k2"));

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
    assert_true(drig_until(&r, count_tasks_running, &two, 30.0, &rep));
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

/* Raw connection helpers for hostile input. */
static int raw_connect(drig_t *r)
{
    int fd;
    assert_int_equal(dmn_endpoint_connect(r->sock, &fd), GMUX_OK);
    return fd;
}

/* Whether the daemon closes fd within timeout (EOF or reset). */
static int closed_by_peer(int fd, double timeout_s)
{
    uint64_t deadline = com_deadline_after_ns((uint64_t)(timeout_s * 1e9));
    char b[4096];
    while (!com_deadline_passed(deadline)) {
        ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return 1;
        com_clock_sleep_ns(5 * COM_NS_PER_MS);
    }
    return 0;
}

static void send_and_expect_drop(drig_t *r, const uint8_t *msg, size_t len, const char *what)
{
    int fd = raw_connect(r);
    assert_int_equal(send(fd, msg, len, MSG_NOSIGNAL), (ssize_t)len);
    int dropped = closed_by_peer(fd, 10.0);
    if (!dropped)
        fprintf(stderr, "daemon kept a connection after: %s\n", what);
    assert_true(dropped);
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
    assert_true(drig_until(&r, count_tasks_running, &two, 30.0, &rep));

    uint8_t m[256];
    dmn_msg_register_t reg = {1, DMN_CLASS_BATCH, 0, 0, 0, "evil"};
    size_t n = dmn_proto_encode_empty(m, sizeof(m), 1, DMN_MSG_QUERY);
    m[0] ^= 0xff;
    send_and_expect_drop(&r, m, n, "bad magic");
    n = dmn_proto_encode_empty(m, sizeof(m), 1, DMN_MSG_QUERY);
    m[4] = 9;
    send_and_expect_drop(&r, m, n, "bad version");
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
    int fd = raw_connect(&r);
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

/* Reads and decodes one whole message into buf (DMN_PROTO_MAX_MSG bytes) and
 * *m within timeout_s. Returns its type, or -1 on end of file, an error, an
 * undecodable message or the timeout. */
static int raw_read(int fd, uint8_t *buf, dmn_msg_t *m, double timeout_s)
{
    uint64_t deadline = com_deadline_after_ns((uint64_t)(timeout_s * 1e9));
    size_t len = 0, want = DMN_PROTO_HDR_SIZE;
    dmn_hdr_t h = {0};
    while (len < want) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (com_deadline_passed(deadline) || poll(&pf, 1, 10) < 0)
            return -1;
        ssize_t n = recv(fd, buf + len, want - len, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return -1;
        len += n > 0 ? (size_t)n : 0;
        if (len == DMN_PROTO_HDR_SIZE && want == DMN_PROTO_HDR_SIZE) {
            if (dmn_proto_read_hdr(buf, len, &h) != GMUX_OK)
                return -1;
            want += h.length;
        }
    }
    return dmn_proto_decode(buf, len, m) == GMUX_OK ? (int)h.type : -1;
}

/* A raw connection registered as a batch task. */
static int raw_register(drig_t *r, const char *name, uint8_t *buf)
{
    int fd = raw_connect(r);
    dmn_msg_register_t reg = {0, DMN_CLASS_BATCH, 0, 0, 0, {0}};
    snprintf(reg.name, sizeof(reg.name), "%s", name);
    size_t n = dmn_proto_encode_register(buf, DMN_PROTO_MAX_MSG, 1, &reg);
    assert_int_equal(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    dmn_msg_t m;
    assert_int_equal(raw_read(fd, buf, &m, 10.0), DMN_MSG_REGISTERED);
    return fd;
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
    int fd = raw_register(&r, "slow", buf);
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
        int type = raw_read(fd, buf, &m, 10.0);
        if (type < 0)
            fail_msg("turn %d: the daemon closed the connection before its PLAN", turn);
        assert_int_equal(type, DMN_MSG_PLAN);
        assert_int_equal(m.u.ranges.count, DMN_PLAN_FILL);
        assert_int_equal(m.u.ranges.n_ranges, DMN_MAX_RANGES);
        for (uint32_t i = 0; i < DMN_MAX_RANGES; i += 1000)
            assert_int_equal(dmn_proto_range_at(&m.u.ranges, i).base, ranges[i].base);
        assert_true(m.u.ranges.seq > last_grant);
        uint64_t plan_seq = m.u.ranges.seq;
        assert_int_equal(raw_read(fd, buf, &m, 10.0), DMN_MSG_GRANT);
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
    int task = raw_register(&r, "t", buf);
    for (size_t off = 0; off < sizeof(burst); off += DMN_PROTO_HDR_SIZE)
        dmn_proto_encode_empty(burst + off, DMN_PROTO_HDR_SIZE, 1, DMN_MSG_QUERY);
    int fd = raw_connect(&r);
    long sent = 0;
    while (sent < 200 && send(fd, burst, sizeof(burst), MSG_NOSIGNAL) == (ssize_t)sizeof(burst))
        sent++; /* fails once the daemon has closed the connection */
    assert_true(closed_by_peer(fd, 10.0));
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
    int fd = raw_register(r, "flood", burst);
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
    int fd = raw_register(&r, "victim", buf);
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
        assert_int_equal(raw_read(fd, buf, &m, 5.0), DMN_MSG_GRANT);
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

/* Another uid: refused by the directory permissions, and when those are
 * opened up, refused by the SO_PEERCRED check. Needs root to switch uid. */
static int as_nobody(int index, void *arg)
{
    (void)index;
    drig_t *r = arg;
    if (setgid(65534) != 0 || setuid(65534) != 0)
        return 10;
    int fd;
    gmux_status_t st = dmn_endpoint_connect(r->sock, &fd);
    if (st != GMUX_OK)
        return st == GMUX_ERR_PERM ? 20 : 21; /* 20: refused by permissions */
    uint8_t q[16];
    size_t n = dmn_proto_encode_empty(q, sizeof(q), 1, DMN_MSG_QUERY);
    (void)!send(fd, q, n, MSG_NOSIGNAL);
    char b[64];
    ssize_t got = recv(fd, b, sizeof(b), 0); /* the daemon closes without answering */
    close(fd);
    return got <= 0 ? 30 : 31; /* 30: refused by the credential check */
}

static void test_other_uid(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        printf("not root: the credential check is tested as a unit (test_endpoint)\n");
        skip();
    }
    static drig_t r;
    drig_init(&r);
    chmod(r.dir, 0755);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int status[1];
    tproc_fork_all(1, as_nobody, &r, 30.0, status);
    assert_int_equal(status[0], 20);
    char dir[160];
    snprintf(dir, sizeof(dir), "%s/run", r.dir);
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(chmod(r.sock, 0666), 0);
    tproc_fork_all(1, as_nobody, &r, 30.0, status);
    assert_int_equal(status[0], 30);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK); /* the owner is served */
    drig_fini(&r);
}

/* With GMUX_DAEMON_GROUP, a member of the group (here: another uid whose
 * primary group it is) is served; the modes follow. Needs root. */
static int nobody_query(int index, void *arg)
{
    (void)index;
    drig_t *r = arg;
    if (setgid(65534) != 0 || setuid(65534) != 0)
        return 10;
    dmn_report_t *mine = malloc(sizeof(*mine));
    gmux_status_t st = dmn_report_fetch(r->sock, mine, 5000);
    free(mine);
    return st == GMUX_OK ? 0 : 20;
}

static void test_group_access(void **state)
{
    (void)state;
    if (geteuid() != 0 || !getgrnam("nogroup")) {
        printf("needs root and a group 'nogroup'\n");
        skip();
    }
    static drig_t r;
    drig_init(&r);
    chmod(r.dir, 0755);
    setenv("GMUX_DAEMON_GROUP", "nogroup", 1);
    pid_t d = drig_start_daemon(&r, 10, "none");
    unsetenv("GMUX_DAEMON_GROUP");
    assert_true(d > 0);
    struct stat st;
    assert_int_equal(stat(r.sock, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0660);
    assert_int_equal(st.st_gid, 65534);
    int status[1];
    tproc_fork_all(1, nobody_query, &r, 30.0, status);
    assert_int_equal(status[0], 0);
    drig_fini(&r);
}

/* A daemon told to exit when idle stays while a task is connected, then exits
 * by itself and removes its socket once none is: what the gmuxd that gmux run
 * starts does after 60 s (GMUX_DAEMON_IDLE_EXIT_S). */
static void test_idle_exit(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    setenv("GMUX_DAEMON_IDLE_EXIT_S", "3", 1);
    pid_t d = drig_start_daemon(&r, 10, "none");
    unsetenv("GMUX_DAEMON_IDLE_EXIT_S");
    assert_true(d > 0);
    uint64_t t0 = com_clock_ns();
    /* busy for about 6 s: 120 kernels of 50 ms */
    pid_t c = drig_start_client(&r, "busy", "batch", 0, 120, 50000, 0);
    assert_true(c > 0);
    com_clock_sleep_ns(4500 * COM_NS_PER_MS);
    if (waitpid(c, NULL, WNOHANG) == 0) /* the client still runs: so must the daemon */
        assert_int_equal(waitpid(d, NULL, WNOHANG), 0);
    assert_int_equal(drig_wait(c, 120.0), 0);
    assert_int_equal(drig_wait(d, 60.0), 0); /* gone by itself, cleanly */
    r.daemon = -1;
    assert_true(com_clock_ns() - t0 > 3 * COM_NS_PER_S);
    struct stat st;
    assert_int_equal(stat(r.sock, &st), -1);
    drig_fini(&r);
}

/* gmux top without --once quits on q (here from a pipe, not a terminal). */
static void test_top_quits_on_q(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t top = fork();
    if (top == 0) {
        dup2(p[0], 0);
        close(p[1]);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execl(GMUX_CLI_PATH, GMUX_CLI_PATH, "top", "--socket", r.sock, "--interval", "0.05",
              (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    com_clock_sleep_ns(300 * COM_NS_PER_MS);
    assert_int_equal(waitpid(top, NULL, WNOHANG), 0); /* still refreshing */
    assert_int_equal(write(p[1], "q", 1), 1);
    assert_int_equal(drig_wait(top, 30.0), 0);
    close(p[1]);
    drig_fini(&r);
}

/* gmux daemon (background) starts one, a second call joins it. The daemon
 * keeps none of its caller's descriptors: a pipe the caller left open (not
 * close-on-exec) reaches end of file once the caller's own copy is closed. */
static void test_cli_daemon(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    static char out[4096], err[4096];
    int inherited[2];
    assert_int_equal(pipe(inherited), 0);
    for (int round = 0; round < 2; round++) {
        int st = tproc_capture(cli_argv("daemon", "--socket", r.sock, NULL), NULL, 30.0, out,
                               sizeof(out), err, sizeof(err));
        assert_int_equal(st, 0);
        assert_non_null(strstr(out, "serving"));
    }
    close(inherited[1]);
    struct pollfd pfd = {inherited[0], POLLIN, 0};
    char byte;
    if (poll(&pfd, 1, 5000) != 1 || read(inherited[0], &byte, 1) != 0)
        fail_msg("the daemon holds the write end of its caller's pipe");
    close(inherited[0]);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    char lock[160];
    snprintf(lock, sizeof(lock), "%s.lock", r.sock);
    FILE *f = fopen(lock, "r");
    assert_non_null(f);
    int pid = 0;
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    assert_true(pid > 1);
    assert_int_equal(kill(pid, SIGTERM), 0);
    uint64_t deadline = com_deadline_after_ns(10 * COM_NS_PER_S);
    while (access(r.sock, F_OK) == 0 && !com_deadline_passed(deadline))
        com_clock_sleep_ns(10 * COM_NS_PER_MS);
    assert_int_not_equal(access(r.sock, F_OK), 0); /* it stopped and removed its socket */
    assert_int_not_equal(dmn_report_fetch(r.sock, &rep, 1000), GMUX_OK);
    drig_fini(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_round_robin, drig_teardown),
        cmocka_unit_test_teardown(test_opt_placement, drig_teardown),
        cmocka_unit_test_teardown(test_priority, drig_teardown),
        cmocka_unit_test_teardown(test_latency_class, drig_teardown),
        cmocka_unit_test_teardown(test_kill_client, drig_teardown),
        cmocka_unit_test_teardown(test_kill_daemon, drig_teardown),
        cmocka_unit_test_teardown(test_malformed, drig_teardown),
        cmocka_unit_test_teardown(test_slow_reader_gets_every_plan, drig_teardown),
        cmocka_unit_test_teardown(test_non_reader_dropped, drig_teardown),
        cmocka_unit_test_teardown(test_flood_does_not_starve, drig_teardown),
        cmocka_unit_test_teardown(test_other_uid, drig_teardown),
        cmocka_unit_test_teardown(test_cli_daemon, drig_teardown),
        cmocka_unit_test_teardown(test_group_access, drig_teardown),
        cmocka_unit_test_teardown(test_top_quits_on_q, drig_teardown),
        cmocka_unit_test_teardown(test_idle_exit, drig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
