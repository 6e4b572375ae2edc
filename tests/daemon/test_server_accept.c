/*
 * gmuxd's accept loop (dmn_conn_accept_all, src/daemon/server_conn.c) on
 * the paths no other test reached (llvm-cov, 2026-12-03): a second refusal
 * of a kind within its one-second rate limit (counted, said in one summary
 * line once the second has passed, in words of its own kind), accept4 answering ECONNABORTED (a
 * connection gone before it was taken: no pause, no warning), and the cap
 * of 64 connections taken per pass (the rest taken on the next one).
 *
 * The server runs in a forked child (tsrv.h); this binary is linked with
 * -Wl,--wrap for accept4, getsockopt, malloc, poll and com_clock_ns, and the
 * wrappers act only in that child and only while a test arms them in a page
 * shared with it (MAP_SHARED), counting what they did there. The server's
 * clock is frozen while a test needs two refusals within one second of it:
 * no timing of the machine is assumed or asserted (waits are hang guards).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/endpoint.h"
#include "daemon/server.h"
#include "dtest.h"
#include "tfault.h"
#include "tproc.h"
#include "tsrv.h"

/* The faults armed and what was done; shared with the server child. */
typedef struct ctl {
    pid_t server;        /* first (tfault.h): the wrappers act in this process only */
    int peer_fail;       /* SO_PEERCRED reads to fail (EPERM) */
    int peer_foreign;    /* SO_PEERCRED reads to say a uid other than the owner's */
    int fail_buf_allocs; /* mallocs of DMN_PROTO_MAX_MSG bytes to fail */
    int aborts;          /* accept4 calls to take a connection, close it, say ECONNABORTED */
    int freeze;          /* 1: the server's com_clock_ns stands still */
    uint64_t frozen_ns;  /* the time it stands at (0: not read yet) */
    /* what happened */
    int peers_failed, peers_foreign, bufs_failed, aborted, accepted;
    int run;     /* connections accepted since the server's last poll */
    int max_run; /* the most accepted between two polls */
} ctl_t;
_Static_assert(offsetof(ctl_t, server) == 0, "tfault.h: the page starts with the server's pid");

static ctl_t *ctl;

void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
    if (n == DMN_PROTO_MAX_MSG && tfault_take(&ctl->fail_buf_allocs)) {
        tfault_bump(&ctl->bufs_failed);
        errno = ENOMEM;
        return NULL;
    }
    return __real_malloc(n);
}

int __real_accept4(int fd, struct sockaddr *a, socklen_t *len, int flags);
int __wrap_accept4(int fd, struct sockaddr *a, socklen_t *len, int flags);
int __wrap_accept4(int fd, struct sockaddr *a, socklen_t *len, int flags)
{
    int r = __real_accept4(fd, a, len, flags);
    if (!tfault_in_server())
        return r;
    if (r >= 0 && tfault_take(&ctl->aborts)) { /* as the kernel says of one reset in the queue */
        close(r);
        tfault_bump(&ctl->aborted);
        errno = ECONNABORTED;
        return -1;
    }
    if (r < 0)
        return r;
    tfault_bump(&ctl->accepted);
    int run = __atomic_add_fetch(&ctl->run, 1, __ATOMIC_SEQ_CST);
    int max = tfault_get(&ctl->max_run);
    while (run > max && !__atomic_compare_exchange_n(&ctl->max_run, &max, run, 0, __ATOMIC_SEQ_CST,
                                                     __ATOMIC_SEQ_CST))
        ;
    return r;
}

int __real_poll(struct pollfd *fds, nfds_t n, int timeout);
int __wrap_poll(struct pollfd *fds, nfds_t n, int timeout);
int __wrap_poll(struct pollfd *fds, nfds_t n, int timeout)
{
    if (tfault_in_server())
        tfault_set(&ctl->run, 0);
    return __real_poll(fds, n, timeout);
}

int __real_getsockopt(int fd, int level, int name, void *v, socklen_t *len);
int __wrap_getsockopt(int fd, int level, int name, void *v, socklen_t *len);
int __wrap_getsockopt(int fd, int level, int name, void *v, socklen_t *len)
{
    if (level == SOL_SOCKET && name == SO_PEERCRED && tfault_take(&ctl->peer_fail)) {
        tfault_bump(&ctl->peers_failed);
        errno = EPERM;
        return -1;
    }
    int r = __real_getsockopt(fd, level, name, v, len);
    if (r == 0 && level == SOL_SOCKET && name == SO_PEERCRED && tfault_take(&ctl->peer_foreign)) {
        tfault_bump(&ctl->peers_foreign);
        ((struct ucred *)v)->uid = getuid() + 1; /* the server has no group: refused */
    }
    return r;
}

uint64_t __real_com_clock_ns(void);
uint64_t __wrap_com_clock_ns(void);
uint64_t __wrap_com_clock_ns(void)
{
    uint64_t t = __real_com_clock_ns();
    if (!tfault_in_server() || !tfault_get(&ctl->freeze))
        return t;
    uint64_t zero = 0;
    __atomic_compare_exchange_n(&ctl->frozen_ns, &zero, t, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&ctl->frozen_ns, __ATOMIC_SEQ_CST);
}

static const char *const path = tfault_fix.path; /* the server's socket */
static uint8_t buf[DMN_PROTO_MAX_MSG];

/* Waits (20 s at most, a hang guard) until the log has a line with what. */
static int log_reaches(const char *what)
{
    uint64_t until = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (tfault_log_count(what) == 0 && !com_deadline_passed(until))
        com_clock_sleep_ns(20 * COM_NS_PER_MS);
    return tfault_log_count(what) > 0;
}

/* Two connections refused for one reason while the server's clock stands
 * still (within one second of it): the first said at once, the second
 * counted only; once the clock runs again the second is said in one
 * summary line, and the next connection is served. */
static void second_refusal_summed(int *armed, const int *injected, const char *said,
                                  const char *summary)
{
    __atomic_store_n(&ctl->frozen_ns, 0, __ATOMIC_SEQ_CST);
    tfault_set(&ctl->freeze, 1);
    tfault_set(armed, 2);
    for (int k = 0; k < 2; k++) {
        int fd = dtest_connect(path);
        assert_true(dtest_closed_by_peer(fd, 20.0));
        close(fd);
    }
    assert_int_equal(tfault_get(injected), 2);
    assert_int_equal(tfault_log_count(said), 1);
    assert_int_equal(tfault_log_count(summary), 0);
    tfault_set(&ctl->freeze, 0);
    int b = dtest_register(path, "next", buf); /* wakes it; the summary follows */
    if (!log_reaches(summary))
        fail_msg("no summary '%s' in the log:\n%s", summary, dtest_log_text(tfault_fix.log));
    assert_int_equal(tfault_log_count(summary), 1);
    assert_int_equal(tfault_log_count(said), 1);
    assert_int_equal(dtest_query_answered(b), 1);
    close(b);
    tfault_stop();
}

/* Each kind's summary names its own reason: until 2026-12-03 those whose
 * credentials could not be read were summed up as "connections of a uid not
 * allowed". */
static void test_second_unread_cred_refusal_summed(void **state)
{
    (void)state;
    second_refusal_summed(&ctl->peer_fail, &ctl->peers_failed,
                          "refused a connection whose credentials could not be read",
                          "connections whose credentials could not be read: 1 more refused in "
                          "the last");
}

static void test_second_foreign_uid_refusal_summed(void **state)
{
    (void)state;
    second_refusal_summed(&ctl->peer_foreign, &ctl->peers_foreign, "refused a connection from uid",
                          "connections of a uid not allowed: 1 more refused in the last");
}

static void test_second_nomem_refusal_summed(void **state)
{
    (void)state;
    second_refusal_summed(&ctl->fail_buf_allocs, &ctl->bufs_failed,
                          "no memory for a connection's buffer",
                          "connections ended for want of memory: 1 more ended in the last");
}

/* A non-blocking connection to the server; -1 when the listen queue is full. */
static int connect_queued(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(fd >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        assert_true(errno == EAGAIN);
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    assert_int_equal(fcntl(fd, F_SETFL, fl & ~O_NONBLOCK), 0);
    return fd;
}

/* Puts up to max connections in the stopped server's listen queue: how many. */
static int queue_while_stopped(int *fds, int max)
{
    assert_int_equal(kill(tfault_fix.child, SIGSTOP), 0);
    int n = 0;
    while (n < max && (fds[n] = connect_queued()) >= 0)
        n++;
    return n;
}

/* accept4 says ECONNABORTED of a connection reset in the listen queue (the
 * wrapper takes it and closes it, as the kernel drops it): the daemon goes
 * on without a warning or a pause, and the connection queued behind it is
 * served. */
static void test_accept_aborted_goes_on(void **state)
{
    (void)state;
    int fds[2];
    tfault_set(&ctl->aborts, 1);
    assert_int_equal(queue_while_stopped(fds, 2), 2);
    assert_int_equal(kill(tfault_fix.child, SIGCONT), 0);
    assert_true(dtest_closed_by_peer(fds[0], 20.0));
    assert_int_equal(dtest_query_answered(fds[1]), 1);
    assert_int_equal(tfault_get(&ctl->aborted), 1);
    assert_int_equal(tfault_log_count("cannot accept"), 0);
    int b = dtest_register(path, "next", buf);
    assert_int_equal(dtest_query_answered(b), 1);
    close(fds[0]);
    close(fds[1]);
    close(b);
    tfault_stop();
}

/* More connections wait than one pass takes (64): the pass takes 64, the
 * next poll the rest, and every one is served. */
static void test_accept_pass_capped(void **state)
{
    (void)state;
    enum { MAX = 80 };
    int fds[MAX];
    int n = queue_while_stopped(fds, MAX);
    if (n <= 64) /* the listen queue (64) holds 65 on Linux */
        fail_msg("only %d connections queued: the cap of 64 cannot be reached", n);
    tfault_set(&ctl->accepted, 0); /* the server is stopped: none of these taken yet */
    tfault_set(&ctl->run, 0);
    tfault_set(&ctl->max_run, 0);
    assert_int_equal(kill(tfault_fix.child, SIGCONT), 0);
    for (int k = 0; k < n; k++)
        if (dtest_query_answered(fds[k]) != 1)
            fail_msg("connection %d of %d not served", k, n);
    assert_int_equal(tfault_get(&ctl->accepted), n);
    assert_int_equal(tfault_get(&ctl->max_run), 64);
    for (int k = 0; k < n; k++)
        close(fds[k]);
    tfault_stop();
}

int main(void)
{
    ctl = tfault_init(sizeof(*ctl), "/tmp/gmux-sa-XXXXXX");
    if (!ctl)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_second_unread_cred_refusal_summed, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_second_foreign_uid_refusal_summed, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_second_nomem_refusal_summed, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_accept_aborted_goes_on, tfault_setup, tfault_teardown),
        cmocka_unit_test_setup_teardown(test_accept_pass_capped, tfault_setup, tfault_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tfault_fini();
    return rc;
}
