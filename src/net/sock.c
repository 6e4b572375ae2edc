/* net_sock: see sock.h. */
#include "net/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "net/jobenv.h"

static int remaining_ms(uint64_t deadline_ns)
{
    if (deadline_ns == UINT64_MAX)
        return 1000;
    uint64_t now = com_clock_ns();
    if (now >= deadline_ns)
        return 0;
    uint64_t ms = (deadline_ns - now) / COM_NS_PER_MS + 1;
    return ms > 1000 ? 1000 : (int)ms;
}

gmux_status_t net_sock_listen(const char *addr, int *fd_p, int *port_p, char *why, size_t why_cap)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        if (why && why_cap)
            snprintf(why, why_cap, "'%s' is not a numeric IPv4 address (a.b.c.d)", addr);
        return GMUX_ERR_INVALID;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const char *call = "socket()";
    if (fd >= 0) {
        socklen_t len = sizeof(sa);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
            call = "bind()";
        else if (listen(fd, 1024) != 0)
            call = "listen()";
        else if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
            call = "getsockname()";
        else
            call = NULL;
    }
    if (call) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (why && why_cap)
            snprintf(why, why_cap, "cannot listen on %s: %s: %s", addr, call, strerror(e));
        return com_status_from_errno(e);
    }
    *fd_p = fd;
    *port_p = ntohs(sa.sin_port);
    return GMUX_OK;
}

/* Frames go out as header and payload, two sends: with Nagle's algorithm
 * the payload would wait for the ACK of the header, which the receiver
 * delays (some 40 ms on Linux), once per collective. */
static void set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int net_sock_accept(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0)
        set_nodelay(fd);
    return fd;
}

#ifdef NET_SOCK_TEST_CONNECT
/* the seam tests/net/test_sock_connect.c stands in for connect() with;
 * other builds have none */
int net_sock_test_connect(int fd, const struct sockaddr *sa, socklen_t len);
#else
#define net_sock_test_connect connect
#endif

/* A connect that returned EINTR (or EINPROGRESS) goes on in the kernel: the
 * handshake is under way and may still succeed. Closing the socket would
 * abandon it (and start the handshake over, from its first SYN, at every
 * signal); instead wait for the socket to become writable and read its
 * outcome. 0 once connected, else the connect's errno, or -1 at the
 * deadline. */
static int wait_connected(int fd, uint64_t deadline_ns)
{
    for (;;) {
        int ms = remaining_ms(deadline_ns);
        if (ms == 0)
            return -1;
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int n = poll(&pfd, 1, ms);
        if (n < 0 && errno != EINTR)
            return errno;
        if (n <= 0)
            continue;
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            return errno;
        return err;
    }
}

gmux_status_t net_sock_connect(const char *hostport, uint64_t deadline_ns, int *fd_p)
{
    struct sockaddr_in sa;
    if (net_jobenv_hostport(hostport, &sa) != GMUX_OK)
        goto malformed;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return com_status_from_errno(errno);
        int err = 0;
        if (net_sock_test_connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
            err = errno;
        if (err == EINTR || err == EINPROGRESS)
            err = wait_connected(fd, deadline_ns);
        if (err == 0) {
            set_nodelay(fd);
            *fd_p = fd;
            return GMUX_OK;
        }
        close(fd);
        if (err == -1)
            return GMUX_ERR_TIMEOUT;
        /* refused: the server is not listening yet */
        if (err != ECONNREFUSED && err != EAGAIN) {
            COM_ERROR(NET, "cannot reach the rendezvous at %s: %s", hostport, strerror(err));
            return com_status_from_errno(err);
        }
        if (com_deadline_passed(deadline_ns))
            return GMUX_ERR_TIMEOUT;
        com_clock_sleep_ns(10 * COM_NS_PER_MS);
    }
malformed: /* the caller's status says only "invalid argument" */
    COM_ERROR(NET,
              "rendezvous address '%s' (GMUX_BOOTSTRAP) is not IPV4:PORT, a numeric IPv4 address "
              "and a port from 1 to 65535",
              hostport);
    return GMUX_ERR_INVALID;
}

gmux_status_t net_sock_write_all(int fd, const void *buf, size_t len, uint64_t deadline_ns)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return errno == EPIPE || errno == ECONNRESET ? GMUX_ERR_CLOSED
                                                         : com_status_from_errno(errno);
        int ms = remaining_ms(deadline_ns);
        if (ms == 0)
            return GMUX_ERR_TIMEOUT;
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        poll(&pfd, 1, ms);
    }
    return GMUX_OK;
}

gmux_status_t net_sock_read_all(int fd, void *buf, size_t len, uint64_t deadline_ns)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return GMUX_ERR_CLOSED;
        if (errno != EAGAIN && errno != EINTR)
            return errno == ECONNRESET ? GMUX_ERR_CLOSED : com_status_from_errno(errno);
        int ms = remaining_ms(deadline_ns);
        if (ms == 0)
            return GMUX_ERR_TIMEOUT;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        poll(&pfd, 1, ms);
    }
    return GMUX_OK;
}
