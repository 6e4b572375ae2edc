/* cmocka helpers for the daemon's integration tests; see dtest.h. */
#include "dtest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/endpoint.h"
#include "msg_io.h"

int dtest_connect_at(const char *file, int line, const char *sock)
{
    int fd = -1;
    gmux_status_t st = dmn_endpoint_connect(sock, &fd);
    if (st != GMUX_OK)
        fail_msg("%s:%d: connecting to %s: status %d", file, line, sock, (int)st);
    return fd;
}

int dtest_register_at(const char *file, int line, const char *sock, const char *name, uint8_t *buf)
{
    int fd = dtest_connect_at(file, line, sock);
    dmn_msg_register_t reg = {0, DMN_CLASS_BATCH, 0, 0, 0, {0}};
    snprintf(reg.name, sizeof(reg.name), "%s", name);
    size_t n = dmn_proto_encode_register(buf, DMN_PROTO_MAX_MSG, 1, &reg);
    ssize_t sent = send(fd, buf, n, MSG_NOSIGNAL);
    if (sent != (ssize_t)n)
        fail_msg("%s:%d: sending REGISTER of %s: %zd of %zu bytes (%s)", file, line, name, sent, n,
                 strerror(errno));
    dmn_msg_t m;
    int type = dtest_read(fd, buf, &m, 10.0);
    if (type != DMN_MSG_REGISTERED)
        fail_msg("%s:%d: %s's answer to REGISTER: type %d, not REGISTERED (%d)", file, line, name,
                 type, DMN_MSG_REGISTERED);
    return fd;
}

int dtest_refused_at(const char *file, int line, const char *sock, const void *msg, size_t len,
                     gmux_status_t want, uint8_t *buf, dmn_msg_t *m)
{
    int fd = dtest_connect_at(file, line, sock);
    struct timeval tv = {10, 0};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0)
        fail_msg("%s:%d: SO_RCVTIMEO: %s", file, line, strerror(errno));
    ssize_t sent = send(fd, msg, len, MSG_NOSIGNAL);
    if (sent != (ssize_t)len)
        fail_msg("%s:%d: sending %zu bytes: %zd (%s)", file, line, len, sent, strerror(errno));
    if (tmsg_read(fd, buf, m) != 0)
        fail_msg("%s:%d: no whole answer within 10 s", file, line);
    if (m->hdr.type != DMN_MSG_REFUSED)
        fail_msg("%s:%d: the answer is %s, not REFUSED", file, line,
                 dmn_msg_type_name(m->hdr.type));
    if (m->u.refused.status != want)
        fail_msg("%s:%d: REFUSED with status %d, not %d", file, line, (int)m->u.refused.status,
                 (int)want);
    return fd;
}

int dtest_read(int fd, uint8_t *buf, dmn_msg_t *m, double timeout_s)
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

int dtest_read_until(int fd, uint8_t *buf, int want, double timeout_s)
{
    uint64_t deadline = com_deadline_after_ns((uint64_t)(timeout_s * 1e9));
    dmn_msg_t m;
    while (!com_deadline_passed(deadline))
        if (dtest_read(fd, buf, &m, 1.0) == want)
            return 1;
    return 0;
}

int dtest_query_answered(int fd)
{
    uint8_t q[16];
    size_t n = dmn_proto_encode_empty(q, sizeof(q), 1, DMN_MSG_QUERY);
    (void)!send(fd, q, n, MSG_NOSIGNAL);
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1)
        return -1;
    char b[512];
    return recv(fd, b, sizeof(b), 0) > 0 ? 1 : 0;
}

int dtest_closed_by_peer(int fd, double timeout_s)
{
    uint64_t deadline = com_deadline_after_ns((uint64_t)(timeout_s * 1e9));
    char b[4096];
    while (!com_deadline_passed(deadline)) {
        ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return 1;
        if (n < 0)
            com_clock_sleep_ns(5 * COM_NS_PER_MS);
    }
    return 0;
}

pid_t dtest_start_logged_at(const char *file, int line, drig_t *r, char *log, size_t cap)
{
    snprintf(log, cap, "%s/daemon.err", r->dir);
    int saved = dup(2), lf = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (saved < 0 || lf < 0)
        fail_msg("%s:%d: opening the daemon's log %s: %s", file, line, log, strerror(errno));
    dup2(lf, 2);
    pid_t d = drig_start_daemon(r, 10, "none");
    dup2(saved, 2);
    close(saved);
    close(lf);
    return d;
}

void dtest_start_group_at(const char *file, int line, drig_t *r, char *log, size_t cap)
{
    if (geteuid() != 0 || !getgrnam("nogroup")) {
        printf("needs root and a group 'nogroup'\n");
        skip();
    }
    drig_init(r);
    chmod(r->dir, 0755);
    /* the socket's folder, which gmuxd makes only for the default path, as
     * it makes it for a group: 0750, the group's */
    char run[sizeof(r->dir) + 8];
    snprintf(run, sizeof(run), "%s/run", r->dir);
    if (chown(run, (uid_t)-1, getgrnam("nogroup")->gr_gid) != 0 || chmod(run, 0750) != 0)
        fail_msg("%s:%d: %s: %s", file, line, run, strerror(errno));
    setenv("GMUX_DAEMON_GROUP", "nogroup", 1);
    pid_t d =
        log ? dtest_start_logged_at(file, line, r, log, cap) : drig_start_daemon(r, 10, "none");
    unsetenv("GMUX_DAEMON_GROUP");
    if (d <= 0)
        fail_msg("%s:%d: the daemon shared with group nogroup did not start", file, line);
}

const char *dtest_log_text_at(const char *file, int line, const char *log)
{
    static char text[1 << 20];
    FILE *f = fopen(log, "r");
    if (!f)
        fail_msg("%s:%d: reading the log %s: %s", file, line, log, strerror(errno));
    text[fread(text, 1, sizeof(text) - 1, f)] = 0;
    fclose(f);
    return text;
}
