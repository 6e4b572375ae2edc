/*
 * Integration tests of gmuxd with real processes: its socket path taken from
 * under it while it runs (the directory removed by a cleaner of /tmp or
 * $XDG_RUNTIME_DIR, by hand), and a second daemon on the path then.
 * They assert behaviour, with long deadlines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/endpoint.h"
#include "drig.h"
#include "dtest.h"
#include "msg_io.h"
#include "tdir.h"

static dmn_report_t rep;

/* Connects and registers a task named name: the connection, or -1. */
static int register_task(const char *sock, const char *name)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fd;
    if (dmn_endpoint_connect(sock, &fd) != GMUX_OK)
        return -1;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    dmn_msg_register_t reg = {(uint32_t)getpid(), DMN_CLASS_BATCH, 0, 0, 0, {0}};
    snprintf(reg.name, sizeof(reg.name), "%s", name);
    size_t n = dmn_proto_encode_register(buf, sizeof(buf), 1, &reg);
    dmn_msg_t m;
    if (send(fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n || tmsg_read(fd, buf, &m) != 0 ||
        m.hdr.type != DMN_MSG_REGISTERED) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The socket's directory (the rig's run/) and all in it removed. */
static void remove_socket_dir(const drig_t *r)
{
    char dir[sizeof(r->sock)];
    snprintf(dir, sizeof(dir), "%s", r->sock);
    *strrchr(dir, '/') = '\0';
    assert_int_equal(tdir_remove(dir), 0);
    assert_int_not_equal(access(r->sock, F_OK), 0);
}

/* Fetches a report from the path until one comes (20 s): 1, or 0. */
static int reachable(const char *sock)
{
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (!com_deadline_passed(deadline)) {
        if (dmn_report_fetch(sock, &rep, 2000) == GMUX_OK)
            return 1;
        com_clock_sleep_ns(20 * COM_NS_PER_MS);
    }
    return 0;
}

/* The directory removed: gmuxd listened on a socket nobody could reach, its
 * tasks gated among themselves while every new one ran ungated beside them
 * (and a second gmuxd could start on the path). Now it notices within a
 * second or so and listens on the path again: the task it had stays, and a
 * new one joins the same daemon. */
static void test_socket_dir_removed(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int first = register_task(r.sock, "first");
    assert_true(first >= 0);
    remove_socket_dir(&r);
    if (!reachable(r.sock))
        fail_msg("nobody listens on %s after its directory was removed", r.sock);
    assert_int_equal(rep.daemon_pid, (int32_t)r.daemon);
    assert_int_equal(rep.n_tasks, 1);
    int second = register_task(r.sock, "second");
    assert_true(second >= 0);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 2000), GMUX_OK);
    assert_int_equal(rep.n_tasks, 2);
    char lock[160];
    snprintf(lock, sizeof(lock), "%s.lock", r.sock);
    assert_int_equal(access(lock, F_OK), 0); /* the lock again: one daemon per path */
    close(first);
    close(second);
    drig_fini(&r);
}

/* The socket file alone removed (the lock file stays, held by the daemon):
 * it listens again as well, its own lock no obstacle. */
static void test_socket_file_removed(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int first = register_task(r.sock, "first");
    assert_true(first >= 0);
    assert_int_equal(unlink(r.sock), 0);
    if (!reachable(r.sock))
        fail_msg("nobody listens on %s after it was removed", r.sock);
    assert_int_equal(rep.daemon_pid, (int32_t)r.daemon);
    assert_int_equal(rep.n_tasks, 1);
    close(first);
    drig_fini(&r);
}

/* How many times text holds needle. */
static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* The directory removed and a file put in its place: the daemon cannot
 * listen on the path again. It says so once (not at every retry, one a
 * second), keeps serving the task it has, and listens there again once the
 * file is gone. */
static void test_socket_dir_blocked_then_freed(void **state)
{
    (void)state;
    static drig_t r;
    char log[256], dir[sizeof(r.sock)];
    drig_init(&r);
    assert_true(dtest_start_logged(&r, log, sizeof(log)) > 0);
    int first = register_task(r.sock, "first");
    assert_true(first >= 0);
    remove_socket_dir(&r);
    snprintf(dir, sizeof(dir), "%s", r.sock);
    *strrchr(dir, '/') = '\0';
    FILE *f = fopen(dir, "w");
    assert_non_null(f);
    fclose(f);
    const char *lost = "cannot listen there again";
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (!strstr(dtest_log_text(log), lost) && !com_deadline_passed(deadline))
        com_clock_sleep_ns(20 * COM_NS_PER_MS);
    if (!strstr(dtest_log_text(log), lost))
        fail_msg("no warning that %s cannot be listened on; log:\n%s", r.sock, dtest_log_text(log));
    com_clock_sleep_ns(2500 * COM_NS_PER_MS); /* time for retries, a second apart */
    assert_int_equal(count_of(dtest_log_text(log), lost), 1);
    assert_int_equal(dtest_query_answered(first), 1);
    assert_int_equal(unlink(dir), 0);
    if (!reachable(r.sock))
        fail_msg("nobody listens on %s after the file in its way was removed", r.sock);
    assert_int_equal(rep.daemon_pid, (int32_t)r.daemon);
    assert_int_equal(rep.n_tasks, 1);
    assert_non_null(strstr(dtest_log_text(log), "listening there again"));
    close(first);
    drig_fini(&r);
}

/* The directory removed while gmuxd was stopped, and a second gmuxd took the
 * path meanwhile. The first ran on, unreachable, gating its tasks apart from
 * the second's, and when it stopped it unlinked the second's socket (the
 * path it had bound). Now it sees the path held by another daemon and stops,
 * leaving the path as it found it: its tasks go local and join the second. */
static void test_path_taken_by_another(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    pid_t one = drig_start_daemon(&r, 10, "none");
    assert_true(one > 0);
    int task = register_task(r.sock, "old");
    assert_true(task >= 0);
    assert_int_equal(kill(one, SIGSTOP), 0);
    remove_socket_dir(&r);
    char dir[sizeof(r.sock)]; /* made again by whoever starts the second */
    snprintf(dir, sizeof(dir), "%s", r.sock);
    *strrchr(dir, '/') = '\0';
    assert_int_equal(mkdir(dir, 0700), 0);
    pid_t two = drig_start_daemon(&r, 10, "none"); /* r.daemon is two from now on */
    assert_true(two > 0);
    assert_int_equal(kill(one, SIGCONT), 0);
    int code = drig_wait(one, 20.0);
    if (code < 0)
        fail_msg("the first gmuxd still runs beside the one that holds its path");
    /* its task was let go: the connection ends */
    char b;
    assert_int_equal(recv(task, &b, 1, 0), 0);
    close(task);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 2000), GMUX_OK);
    assert_int_equal(rep.daemon_pid, (int32_t)two);
    drig_fini(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_socket_dir_removed, drig_teardown),
        cmocka_unit_test_teardown(test_socket_file_removed, drig_teardown),
        cmocka_unit_test_teardown(test_socket_dir_blocked_then_freed, drig_teardown),
        cmocka_unit_test_teardown(test_path_taken_by_another, drig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
