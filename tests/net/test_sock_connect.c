/* Tests of net_sock_connect (the bootstrap's connect to the rendezvous
 * server) when signals interrupt it. A connect that returns EINTR goes on in
 * the kernel: its handshake may still complete. net_sock_connect used to close
 * such a socket and connect again on a new one, so every signal abandoned the
 * handshake and started it over from its first SYN (one landing as the
 * handshake completed left the server a connection that closed unused).
 *
 * sock.c is compiled into this test with its connect seam
 * (NET_SOCK_TEST_CONNECT): net_sock_test_connect below counts the connects
 * and can make one return EINTR after starting it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/log.h"
#include "net/sock.h"

static atomic_int connects;     /* connect() calls made by net_sock_connect */
static atomic_int fake_eintr;   /* connects still to end in an injected EINTR */
static atomic_int signals_seen; /* SIGUSR1s handled */

int net_sock_test_connect(int fd, const struct sockaddr *sa, socklen_t len);
int net_sock_test_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    atomic_fetch_add(&connects, 1);
    if (atomic_load(&fake_eintr) == 0)
        return connect(fd, sa, len);
    atomic_fetch_sub(&fake_eintr, 1);
    /* start the handshake as a signal would leave it: under way */
    int fl = fcntl(fd, F_GETFL);
    assert_true(fl >= 0);
    assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
    int r = connect(fd, sa, len);
    assert_true(r == 0 || errno == EINPROGRESS);
    assert_int_equal(fcntl(fd, F_SETFL, fl), 0);
    errno = EINTR;
    return -1;
}

static void on_usr1(int sig)
{
    (void)sig;
    atomic_fetch_add(&signals_seen, 1);
}

/* A listening socket on loopback with the given backlog; "127.0.0.1:port"
 * in hp. */
static int listen_lo(int backlog, char *hp, size_t n)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, backlog), 0);
    socklen_t len = sizeof(sa);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(hp, n, "127.0.0.1:%d", ntohs(sa.sin_port));
    return fd;
}

/* The next connection on lfd (waiting up to 30 s for it): it must be the one
 * cfd is the other end of, which shows by carrying the byte written on cfd.
 * Then no other connection may be waiting. */
static void expect_only(int lfd, int cfd)
{
    assert_int_equal(net_sock_write_all(cfd, "x", 1, com_deadline_after_ns(30 * COM_NS_PER_S)),
                     GMUX_OK);
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 30000), 1);
    int s = accept(lfd, NULL, NULL);
    assert_true(s >= 0);
    char c = 0;
    /* a connection that closed unused reads as GMUX_ERR_CLOSED */
    assert_int_equal(net_sock_read_all(s, &c, 1, com_deadline_after_ns(30 * COM_NS_PER_S)),
                     GMUX_OK);
    assert_int_equal(c, 'x');
    assert_int_equal(poll(&p, 1, 0), 0);
    close(s);
}

/* A connect whose handshake is under way when EINTR comes: the connection
 * net_sock_connect returns is that one, and the server sees no other. */
static void test_injected_eintr(void **state)
{
    (void)state;
    char hp[64];
    int lfd = listen_lo(16, hp, sizeof(hp));
    atomic_store(&connects, 0);
    atomic_store(&fake_eintr, 1);
    int fd = -1;
    assert_int_equal(net_sock_connect(hp, com_deadline_after_ns(30 * COM_NS_PER_S), &fd), GMUX_OK);
    assert_int_equal(atomic_load(&connects), 1);
    expect_only(lfd, fd);
    close(fd);
    close(lfd);
}

static char full_hp[64];
static gmux_status_t conn_st;
static int conn_fd = -1;
static atomic_bool conn_done;

static void *connector(void *arg)
{
    (void)arg;
    conn_st = net_sock_connect(full_hp, com_deadline_after_ns(60 * COM_NS_PER_S), &conn_fd);
    atomic_store(&conn_done, true);
    return NULL;
}

/* Real signals (SIGUSR1 without SA_RESTART, every millisecond) at a connect
 * that blocks: the listener's queue of connections is full, so its SYN is
 * dropped until the queue has room and the kernel sends it again. The
 * connect is made once, however many signals interrupt it, and its
 * connection is the only one the server gets. */
static void test_signals_during_blocked_connect(void **state)
{
    (void)state;
    struct sigaction sa = {.sa_handler = on_usr1}; /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    struct sigaction old;
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    int lfd = listen_lo(0, full_hp, sizeof(full_hp)); /* room for one */
    /* the filler takes the one place in the queue */
    int filler = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(filler >= 0);
    struct sockaddr_in fa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &fa.sin_addr);
    fa.sin_port = htons((uint16_t)atoi(strrchr(full_hp, ':') + 1));
    int r = connect(filler, (struct sockaddr *)&fa, sizeof(fa));
    assert_true(r == 0 || errno == EINPROGRESS);
    struct pollfd fp = {.fd = filler, .events = POLLOUT};
    assert_int_equal(poll(&fp, 1, 30000), 1);

    atomic_store(&connects, 0);
    atomic_store(&fake_eintr, 0);
    atomic_store(&signals_seen, 0);
    atomic_store(&conn_done, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, connector, NULL), 0);
    uint64_t dl = com_deadline_after_ns(60 * COM_NS_PER_S);
    while (atomic_load(&connects) == 0 && !com_deadline_passed(dl))
        com_clock_sleep_ns(COM_NS_PER_MS);
    /* signals while the SYN is dropped, then room in the queue, signals
     * until the connect is through */
    while (atomic_load(&signals_seen) < 100 && !atomic_load(&conn_done) &&
           !com_deadline_passed(dl)) {
        pthread_kill(t, SIGUSR1);
        com_clock_sleep_ns(COM_NS_PER_MS);
    }
    int s = accept(lfd, NULL, NULL); /* the filler */
    assert_true(s >= 0);
    close(s);
    while (!atomic_load(&conn_done) && !com_deadline_passed(dl)) {
        pthread_kill(t, SIGUSR1);
        com_clock_sleep_ns(COM_NS_PER_MS);
    }
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(conn_st, GMUX_OK);
    assert_int_equal(atomic_load(&connects), 1);
    expect_only(lfd, conn_fd);
    close(conn_fd);
    close(filler);
    close(lfd);
    assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
}

static char said[1024]; /* the error lines logged, one after the other */

static void keep_errors(com_log_level_t level, com_log_subsys_t subsys, const char *line, void *arg)
{
    (void)subsys, (void)arg;
    size_t used = strlen(said), len = strlen(line);
    if (level == COM_LOG_ERROR && used + len < sizeof(said))
        memcpy(said + used, line, len + 1);
}

/* What a user reads when an address is wrong: a listen says why in its why
 * (not an IPv4 address, naming it; the system's reason for one this host
 * does not have), and a rank's connect to a malformed GMUX_BOOTSTRAP logs
 * the address. All three said only "invalid argument" / "input/output
 * error", the status word, with nothing logged. */
static void test_bad_addresses_say_why(void **state)
{
    (void)state;
    int fd, port;
    char why[256] = "";
    assert_int_equal(net_sock_listen("999.1.1.1", &fd, &port, why, sizeof(why)), GMUX_ERR_INVALID);
    assert_non_null(strstr(why, "'999.1.1.1'"));
    assert_non_null(strstr(why, "IPv4"));
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in in = {.sin_family = AF_INET};
    inet_pton(AF_INET, "192.0.2.1", &in.sin_addr); /* TEST-NET-1: normally no address here */
    int e = bind(probe, (struct sockaddr *)&in, sizeof(in)) == 0 ? 0 : errno;
    close(probe);
    if (e != 0) {
        assert_int_not_equal(net_sock_listen("192.0.2.1", &fd, &port, why, sizeof(why)), GMUX_OK);
        assert_non_null(strstr(why, "192.0.2.1"));
        assert_non_null(strstr(why, strerror(e)));
    }
    said[0] = '\0';
    com_log_set_sink(keep_errors, NULL);
    gmux_status_t st = net_sock_connect("999.1.1.1:5", com_deadline_after_ns(COM_NS_PER_S), &fd);
    gmux_status_t st2 = net_sock_connect("127.0.0.1:0", com_deadline_after_ns(COM_NS_PER_S), &fd);
    com_log_set_sink(NULL, NULL);
    assert_int_equal(st, GMUX_ERR_INVALID);
    assert_int_equal(st2, GMUX_ERR_INVALID);
    assert_non_null(strstr(said, "'999.1.1.1:5'"));
    assert_non_null(strstr(said, "'127.0.0.1:0'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_addresses_say_why),
        cmocka_unit_test(test_injected_eintr),
        cmocka_unit_test(test_signals_during_blocked_connect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
