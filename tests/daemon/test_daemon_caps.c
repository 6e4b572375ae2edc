/*
 * Integration tests of gmuxd with real processes: what a peer may hold of the
 * daemon's slots (server.h, DMN_SERVER_MAX_TASKS_PER_UID and the others) and
 * how the refusals are logged. The group tests need root (other uids).
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
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/endpoint.h"
#include "daemon/proto.h"
#include "daemon/server.h"
#include "drig.h"
#include "dtest.h"
#include "msg_io.h"
#include "tproc.h"

static int count_in(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Connects and registers a task: 1 when REGISTERED came, 0 when REFUSED did
 * (its reason in why), -1 otherwise. *fd stays open on 1. */
static int register_task(const char *sock, int *fd, char *why, size_t cap)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    if (dmn_endpoint_connect(sock, fd) != GMUX_OK)
        return -1;
    struct timeval tv = {10, 0};
    setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    dmn_msg_register_t reg = {(uint32_t)getpid(), DMN_CLASS_BATCH, 0, 0, 0, "capped"};
    size_t n = dmn_proto_encode_register(buf, sizeof(buf), 1, &reg);
    if (send(*fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n)
        return -1;
    dmn_msg_t m;
    if (tmsg_read(*fd, buf, &m) != 0)
        return -1;
    if (m.hdr.type == DMN_MSG_REGISTERED)
        return 1;
    if (m.hdr.type != DMN_MSG_REFUSED || m.u.refused.status != GMUX_ERR_CAPACITY)
        return -1;
    snprintf(why, cap, "%s", m.u.refused.reason);
    close(*fd);
    return 0;
}

/* Registers tasks as uid (effective; the real uid stays root) until one is
 * refused or `most` + 1 were tried: how many were registered, the refusal's
 * reason in why ("" if none). Connections stay open. */
static int register_as(drig_t *r, uid_t uid, int most, char *why, size_t cap)
{
    static int fds[DMN_ARB_MAX_TASKS + 1];
    why[0] = 0;
    if (seteuid(uid) != 0)
        return -1;
    int n = 0;
    for (; n <= most; n++) {
        int a = register_task(r->sock, &fds[n], why, cap);
        if (a != 1) {
            if (a < 0)
                n = -1;
            break;
        }
    }
    return seteuid(0) == 0 ? n : -1;
}

/* With GMUX_DAEMON_GROUP, a member (another uid) could register all 256 tasks
 * the arbiter holds, and the members together every one of them: the owner's
 * next task was refused ("too many tasks"). A member now registers at most
 * DMN_SERVER_MAX_TASKS_PER_UID, and the members together leave
 * DMN_SERVER_OWNER_TASKS to the owner; the REFUSED a task gets beyond says
 * which cap. Four members (uids 65531..65534 in nogroup), then the owner. */
static int task_caps_child(int index, void *arg)
{
    (void)index;
    drig_t *r = arg;
    char why[DMN_REASON_MAX];
    enum { PER_UID = DMN_SERVER_MAX_TASKS_PER_UID };
    if (setegid(65534) != 0)
        return 10;
    int n = register_as(r, 65534, PER_UID, why, sizeof(why));
    if (n != PER_UID || !strstr(why, "uid 65534 has 64 tasks")) {
        fprintf(stderr, "first member: %d tasks registered, then '%s'\n", n, why);
        return 20;
    }
    int members = DMN_ARB_MAX_TASKS - DMN_SERVER_OWNER_TASKS, done = n;
    for (uid_t u = 65533; u >= 65531; u--) {
        int expect = members - done < PER_UID ? members - done : PER_UID;
        n = register_as(r, u, PER_UID, why, sizeof(why));
        if (n != expect) {
            fprintf(stderr, "member %u: %d tasks registered of %d, then '%s'\n", (unsigned)u, n,
                    expect, why);
            return 30;
        }
        done += n;
    }
    if (!strstr(why, "group members have 224 tasks")) {
        fprintf(stderr, "last member refused with '%s'\n", why);
        return 40;
    }
    if (setegid(0) != 0) /* the owner: its reserve is whole */
        return 50;
    n = register_as(r, 0, DMN_SERVER_OWNER_TASKS, why, sizeof(why));
    if (n != DMN_SERVER_OWNER_TASKS) {
        fprintf(stderr, "owner: %d tasks registered, then '%s'\n", n, why);
        return 60;
    }
    return 0;
}

/* Runs child (as tproc_fork_all's one process) against a daemon shared with
 * group nogroup (skipped without root or that group), then finds `logged`
 * in the daemon's log. */
static void group_case(int (*child)(int, void *), const char *logged)
{
    static drig_t r;
    char log[160];
    dtest_start_group(&r, log, sizeof(log));
    int status[1];
    tproc_fork_all(1, child, &r, 120.0, status);
    assert_int_equal(status[0], 0);
    const char *text = dtest_log_text(log);
    if (!strstr(text, logged))
        fail_msg("the refusal is not in the daemon's log: %s", text);
    drig_fini(&r);
}

static void test_member_task_caps(void **state)
{
    (void)state;
    group_case(task_caps_child, "uid 65534 has 64 tasks, the most a group member may");
}

/* Two members could hold every connection between them (272 each). Now four
 * members hold at most DMN_SERVER_MAX_CONNS - DMN_SERVER_OWNER_CONNS together,
 * each at most DMN_SERVER_MAX_CONNS_PER_UID, and the owner is served. */
static int conn_caps_child(int index, void *arg)
{
    (void)index;
    drig_t *r = arg;
    static int fds[DMN_SERVER_MAX_CONNS + 1];
    enum { PER_UID = DMN_SERVER_MAX_CONNS_PER_UID };
    int members = DMN_SERVER_MAX_CONNS - DMN_SERVER_OWNER_CONNS, done = 0;
    if (setegid(65534) != 0)
        return 10;
    for (uid_t u = 65534; u >= 65531; u--) {
        if (seteuid(u) != 0)
            return 20;
        int expect = members - done < PER_UID ? members - done : PER_UID, n = 0;
        while (n <= PER_UID) { /* until one is closed, or one too many served */
            int fd, a;
            if (dmn_endpoint_connect(r->sock, &fd) != GMUX_OK)
                return 30;
            if ((a = dtest_query_answered(fd)) < 0)
                return 40;
            if (a == 0) {
                close(fd);
                break;
            }
            fds[done + n++] = fd;
        }
        if (seteuid(0) != 0)
            return 50;
        if (n != expect) {
            fprintf(stderr, "member %u: %d connections served of %d\n", (unsigned)u, n, expect);
            return 60;
        }
        done += n;
    }
    if (setegid(0) != 0)
        return 70;
    for (int i = 0; i < 8; i++) { /* the owner */
        int fd;
        if (dmn_endpoint_connect(r->sock, &fd) != GMUX_OK || dtest_query_answered(fd) != 1)
            return 80;
        close(fd);
    }
    for (int i = 0; i < done; i++)
        close(fds[i]);
    return 0;
}

static void test_members_connection_caps(void **state)
{
    (void)state;
    group_case(conn_caps_child, "the most they may together");
}

/* Every connection beyond DMN_SERVER_MAX_CONNS was logged ("too many
 * connections: refused pid P"), so a peer retrying in a loop wrote the log
 * as fast as it could connect. Now the first is logged, and the rest at
 * most a line a second, with their count. */
static void test_refusals_rate_limited(void **state)
{
    (void)state;
    enum { FLOOD = 300 };
    static drig_t r;
    drig_init(&r);
    char log[160];
    assert_true(dtest_start_logged(&r, log, sizeof(log)) > 0);
    static int fds[DMN_SERVER_MAX_CONNS];
    for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++) {
        fds[i] = dtest_connect(r.sock);
        assert_int_equal(dtest_query_answered(fds[i]), 1);
    }
    uint64_t t0 = com_clock_ns();
    for (int i = 0; i < FLOOD; i++) {
        int fd = dtest_connect(r.sock);
        assert_int_equal(dtest_query_answered(fd), 0); /* closed unanswered */
        close(fd);
    }
    uint64_t secs = (com_clock_ns() - t0) / COM_NS_PER_S;
    char want[64];
    snprintf(want, sizeof(want), "(%d refused so far)", FLOOD);
    const char *text = dtest_log_text(log);
    for (int i = 0; i < 500 && !strstr(text, want); i++) { /* the summary, within ~2 s */
        com_clock_sleep_ns(20 * COM_NS_PER_MS);
        text = dtest_log_text(log);
    }
    int lines = count_in(text, "too many connections");
    print_message("%d refusals in %llu s: %d lines\n", FLOOD, (unsigned long long)secs, lines);
    if (!strstr(text, want))
        fail_msg("no line counts all %d refusals: %s", FLOOD, text);
    assert_true(strstr(text, "too many connections (544): refused pid") != NULL);
    /* the first, then at most one a second, and the last summary */
    assert_true(lines <= 2 + (int)secs + 1);
    for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++)
        close(fds[i]);
    drig_fini(&r);
}

/* A client library of another protocol version, reconnecting every second
 * for as long as its task runs, had each connection logged ("pid P:
 * malformed message (version mismatch)"), with no limit. Now the first is
 * logged, naming both versions, and the rest are counted into a line at
 * most a minute (refusals.h; the summary itself: test_refusals). Each still
 * hears the REFUSED that names the versions. */
static void test_other_version_rate_limited(void **state)
{
    (void)state;
    enum { TRIES = 30 };
    static drig_t r;
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    drig_init(&r);
    char log[160];
    assert_true(dtest_start_logged(&r, log, sizeof(log)) > 0);
    uint8_t m[256];
    dmn_msg_register_t reg = {1, DMN_CLASS_BATCH, 0, 0, 0, "stale"};
    size_t n = dmn_proto_encode_register(m, sizeof(m), 1, &reg);
    m[4] = 10; /* little-endian version field */
    for (int i = 0; i < TRIES; i++) {
        dmn_msg_t got;
        close(dtest_refused(r.sock, m, n, GMUX_ERR_VERSION, buf, &got));
    }
    char mine[32];
    snprintf(mine, sizeof(mine), "pid %d:", (int)getpid());
    const char *text = dtest_log_text(log); /* each line was written before its REFUSED */
    int lines = count_in(text, mine);
    print_message("%d connections of version 10: %d lines\n", TRIES, lines);
    if (lines != 1)
        fail_msg("%d lines for pid %d, not 1: %s", lines, (int)getpid(), text);
    assert_non_null(strstr(text, "protocol version 10"));
    drig_fini(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_member_task_caps, drig_teardown),
        cmocka_unit_test_teardown(test_members_connection_caps, drig_teardown),
        cmocka_unit_test_teardown(test_refusals_rate_limited, drig_teardown),
        cmocka_unit_test_teardown(test_other_version_rate_limited, drig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
