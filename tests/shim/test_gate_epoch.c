/*
 * Launch gating end to end, orders of a daemon that died (harness:
 * gate_harness.h). A scripted daemon (a process of this test speaking the
 * protocol, not gmuxd) grants the program a turn and, while the program holds
 * it, sends it a PLAN fill and a PLAN ahead, which the shim's watcher thread
 * stores for the next turn, then revokes the turn and dies. The program
 * registers again with a real gmuxd (placement none: it orders nothing) and
 * takes its next turn there: the orders of the dead daemon must not be
 * carried out. The shim applied them at that turn, on the new daemon's
 * grant, as if the new daemon had sent them.
 */
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "daemon/endpoint.h"
#include "daemon/proto.h"
#include "gate_harness.h"
#include "tproc.h"

static char go[256];
/* 20 kernels, a pause at half of them until `go` exists; 1 MiB more of
 * working set, so the orders below fall inside a managed allocation */
static gh_spec_t spec = {"batch", "9", "20", "1000", "0", "1", go, NULL, NULL};

#define FILL_OFF  8192u  /* the dead daemon's orders, offsets in the largest range */
#define AHEAD_OFF 65536u /* of the program's PENDING, 4 KiB each */

/* Reads one whole message from a blocking socket (with a receive timeout);
 * 0 and *m decoded, or -1. */
static int read_msg(int fd, uint8_t *buf, dmn_msg_t *m)
{
    size_t len = 0, want = DMN_PROTO_HDR_SIZE;
    while (len < want) {
        ssize_t n = read(fd, buf + len, want - len);
        if (n <= 0)
            return -1;
        len += (size_t)n;
        dmn_hdr_t h;
        if (len == DMN_PROTO_HDR_SIZE && want == DMN_PROTO_HDR_SIZE) {
            if (dmn_proto_read_hdr(buf, len, &h) != GMUX_OK)
                return -1;
            want += h.length;
        }
    }
    return dmn_proto_decode(buf, len, m) == GMUX_OK ? 0 : -1;
}

/* Reads messages until one of the given type (others skipped). */
static int read_until(int fd, uint8_t *buf, dmn_msg_type_t type, dmn_msg_t *m)
{
    for (int i = 0; i < 10000; i++) {
        if (read_msg(fd, buf, m) != 0)
            return -1;
        if (m->hdr.type == type)
            return 0;
    }
    return -1;
}

static int send_all(int fd, const uint8_t *buf, size_t len)
{
    return len > 0 && write(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

/* The scripted daemon: answers the program's REGISTER, grants its PENDING,
 * and once the program paused holding the turn sends it a fill and a fill
 * ahead, then a REVOKE; after the RELEASE (the client read the orders before
 * it) it exits, which closes every connection. Exit status: 0, or the step
 * that failed. */
static int scripted_daemon(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int lfd, lk, fds[8], nfd = 0, task = -1;
    if (dmn_endpoint_listen(gh_sock, DMN_NO_GROUP, &lfd, &lk) != GMUX_OK)
        return 10;
    (void)!write(ready, "r", 1);
    close(ready);
    dmn_msg_t m;
    /* gmux run's connections come first (the probe for a daemon, closed at
     * once; the one it holds, which sends QUERY); then the shim's REGISTER */
    while (task < 0 && nfd < 8) {
        struct pollfd pf = {lfd, POLLIN, 0}; /* the listening socket does not block */
        int fd = poll(&pf, 1, 60000) == 1 ? accept(lfd, NULL, NULL) : -1;
        if (fd < 0)
            return 11;
        struct timeval tv = {60, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        fds[nfd++] = fd;
        if (read_msg(fd, buf, &m) == 0 && m.hdr.type == DMN_MSG_REGISTER)
            task = fd;
    }
    if (task < 0)
        return 12;
    dmn_msg_registered_t r = {1, 0, 20 * COM_NS_PER_MS};
    if (send_all(task, buf, dmn_proto_encode_registered(buf, sizeof(buf), 1, &r)) != 0 ||
        read_until(task, buf, DMN_MSG_PENDING, &m) != 0)
        return 13;
    dmn_range_t big = {0, 0};
    for (uint32_t i = 0; i < m.u.ranges.n_ranges; i++) {
        dmn_range_t x = dmn_proto_range_at(&m.u.ranges, i);
        if (x.len > big.len)
            big = x;
    }
    if (big.len < 1u << 20)
        return 14;
    dmn_msg_grant_t g = {1, 20 * COM_NS_PER_MS, m.u.ranges.seq};
    if (send_all(task, buf, dmn_proto_encode_grant(buf, sizeof(buf), 2, DMN_MSG_GRANT, &g)) != 0)
        return 15;
    /* the program holds the turn and paused: its launching thread is out of
     * the gate, so what comes now is read by the watcher thread */
    char paused[256];
    snprintf(paused, sizeof(paused), "%s.paused", gh_path("out0"));
    struct stat st;
    for (int i = 0; i < 6000 && stat(paused, &st) != 0; i++)
        gh_sleep_ms(10);
    if (stat(paused, &st) != 0)
        return 16;
    dmn_range_t fill = {big.base + FILL_OFF, 4096}, ahead = {big.base + AHEAD_OFF, 4096};
    dmn_msg_grant_t rv = {1, 0, 0};
    if (send_all(task, buf,
                 dmn_proto_encode_ranges(buf, sizeof(buf), 3, DMN_MSG_PLAN, DMN_PLAN_FILL, 1, &fill,
                                         1)) != 0 ||
        send_all(task, buf,
                 dmn_proto_encode_ranges(buf, sizeof(buf), 4, DMN_MSG_PLAN, DMN_PLAN_AHEAD, 1,
                                         &ahead, 1)) != 0 ||
        send_all(task, buf, dmn_proto_encode_grant(buf, sizeof(buf), 5, DMN_MSG_REVOKE, &rv)) != 0)
        return 17;
    if (read_until(task, buf, DMN_MSG_RELEASE, &m) != 0)
        return 18;
    unlink(gh_sock); /* dies: every connection closes */
    for (int i = 0; i < nfd; i++)
        close(fds[i]);
    return 0;
}

/* Polls `gmux status --json` until it lists a task that reported kernels (a
 * client sends STATS only once it took the daemon's REGISTERED): whether it
 * did within about a minute. */
static int program_registered(void)
{
    static char out[65536], err[4096];
    char *argv[] = {GMUX_BIN, "status", "--json", "--socket", gh_sock, NULL};
    for (int i = 0; i < 3000; i++) {
        const char *k;
        if (tproc_capture(argv, NULL, 10.0, out, sizeof(out), err, sizeof(err)) == 0 &&
            (k = strstr(out, "\"kernels\": ")) && strtoull(k + 11, NULL, 10) > 0)
            return 1;
        gh_sleep_ms(20);
    }
    fprintf(stderr, "last status: %s\n", out);
    return 0;
}

static void test_dead_daemon_orders_void(void **state)
{
    (void)state;
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    unlink(go);
    setenv("GMUX_POLICY", "demand", 1); /* no prefetch of its own: only orders */
    /* no IDLE while paused: the turn stays held until the REVOKE */
    setenv("GMUX_GATE_IDLE_MS", "600000", 1);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t fake = fork();
    assert_true(fake >= 0);
    if (fake == 0) {
        close(p[0]);
        _exit(scripted_daemon(p[1]));
    }
    close(p[1]);
    char b;
    assert_int_equal(read(p[0], &b, 1), 1);
    close(p[0]);
    char *const *argv = gh_prog_argv(0, &spec, 1);
    pid_t prog = fork();
    assert_true(prog >= 0);
    if (prog == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    setenv("GMUX_POLICY", "proactive", 1);
    setenv("GMUX_GATE_IDLE_MS", "200", 1);
    int fs = -1;
    for (int i = 0; i < 12000 && waitpid(fake, &fs, WNOHANG) == 0; i++)
        gh_sleep_ms(10);
    if (!WIFEXITED(fs) || WEXITSTATUS(fs) != 0) {
        kill(fake, SIGKILL);
        kill(prog, SIGKILL);
        waitpid(prog, NULL, 0);
        fail_msg("scripted daemon: status %d", fs);
    }
    pid_t d = gh_start_daemon("none");
    int joined = program_registered();
    gh_touch("go");
    int ps = -1;
    assert_int_equal(waitpid(prog, &ps, 0), prog);
    gh_stop_daemon(d, SIGTERM);
    assert_true(joined);
    assert_true(WIFEXITED(ps) && WEXITSTATUS(ps) == 0);
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    gh_read_out(0, o);
    print_message("registered %llu times, %llu waits, %zu prefetches to the device\n",
                  o->gate_registrations, o->gate_waits, o->nd);
    for (size_t i = 0; i < o->nd; i++)
        print_message("  prefetch %#llx + %llu\n", o->d[i][1], o->d[i][2]);
    assert_int_equal(o->n, 20);
    assert_true(o->gate_registrations >= 2);
    /* the dead daemon's fill and fill ahead, carried out under the new one */
    assert_int_equal(o->nd, 0);
    assert_int_equal(o->ahead_plans, 0);
    free(o);
}

int main(void)
{
    gh_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_dead_daemon_orders_void, gh_stop_leftover_daemon),
    };
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
