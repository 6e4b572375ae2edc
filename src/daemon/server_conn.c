/* gmuxd's connections: admission, output queues, deadlines and their end;
 * see server_conn.h. */
#include "daemon/server_conn.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/log.h"
#include "daemon/endpoint.h"

#define HELLO_NS        ((uint64_t)DMN_SERVER_HELLO_MS * COM_NS_PER_MS)
#define PID_CHECK_NS    (200 * COM_NS_PER_MS)
#define PATH_CHECK_NS   COM_NS_PER_S
#define ACCEPT_PAUSE_MS 100
/* Bytes a peer may leave unread before it counts as not reading its socket.
 * One switch sends a task a few 64 KiB PLAN messages per kind, more than a
 * Unix socket buffers (about 200 KiB); a live client reads them within a
 * millisecond or so. 16 MiB is 256 full PLAN messages: far more than a switch
 * plans. No time limit: a stopped process (a debugger, SIGSTOP) reads its
 * orders when it runs again, and the grace period takes the turn from a
 * holder that does not answer. */
#define OUT_MAX (16u << 20)

void dmn_conn_drop(dmn_srv_t *s, dmn_conn_t *c, const char *why)
{
    if (c->slot >= 0) {
        COM_INFO(DAEMON, "task %u (pid %d) leaves: %s", s->arb.tasks[c->slot].id, (int)c->pid, why);
        dmn_arb_remove(&s->arb, c->slot, com_clock_ns());
        s->conn_of_slot[c->slot] = -1;
    }
    close(c->fd);
    free(c->buf);
    free(c->out);
    *c = (dmn_conn_t){.fd = -1, .slot = -1};
}

bool dmn_conn_has_output(const dmn_conn_t *c)
{
    return c->out_off < c->out_len;
}

/* Appends n bytes to c's output queue, or drops a connection whose queue would
 * pass OUT_MAX. Returns 0 when queued. */
static int enqueue(dmn_srv_t *s, dmn_conn_t *c, const uint8_t *data, size_t n)
{
    size_t queued = c->out_len - c->out_off;
    if (queued + n > OUT_MAX) {
        dmn_conn_drop(s, c, "not reading its socket");
        return -1;
    }
    if (c->out_len + n > c->out_cap && c->out_off > 0) { /* reuse the part already sent */
        memmove(c->out, c->out + c->out_off, queued);
        c->out_off = 0;
        c->out_len = queued;
    }
    if (com_array_grow((void **)&c->out, &c->out_cap, c->out_len + n, 1, 2 * DMN_PROTO_MAX_MSG,
                       OUT_MAX) != GMUX_OK) {
        /* said at the default level (until 2026-12-03 only at info, as the
         * task left): a task dropped for want of memory runs ungated */
        dmn_refusals_t *r = &s->refused[DMN_REFUSE_NOMEM];
        if (dmn_refusal_say(r, com_clock_ns())) {
            char who[64];
            if (c->slot >= 0)
                snprintf(who, sizeof(who), "task %u (pid %d)", s->arb.tasks[c->slot].id,
                         (int)c->pid);
            else
                snprintf(who, sizeof(who), "pid %d", (int)c->pid);
            COM_WARN(DAEMON,
                     "%s: no memory for its output queue (%zu bytes): dropped (%llu ended so far)",
                     who, c->out_len + n, (unsigned long long)r->total);
        }
        dmn_conn_drop(s, c, "out of memory");
        return -1;
    }
    memcpy(c->out + c->out_len, data, n);
    c->out_len += n;
    return 0;
}

int dmn_conn_send(dmn_srv_t *s, dmn_conn_t *c, size_t len)
{
    if (len == 0) {
        COM_ERROR(DAEMON, "internal: message did not encode");
        dmn_conn_drop(s, c, "encode failure");
        return -1;
    }
    size_t sent = 0;
    if (!dmn_conn_has_output(c)) {
        ssize_t n = send(c->fd, s->out, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            dmn_conn_drop(s, c, "send failed");
            return -1;
        }
        sent = n > 0 ? (size_t)n : 0;
        if (sent == len)
            return 0;
    }
    return enqueue(s, c, s->out + sent, len - sent);
}

void dmn_conn_flush(dmn_srv_t *s, dmn_conn_t *c)
{
    while (dmn_conn_has_output(c)) {
        ssize_t n =
            send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        /* 0 is not an answer the kernel gives a stream socket's send of 1
         * byte or more (it takes some, or says EAGAIN or an error); were
         * it given, trying again would spin, so it ends c as a failure. */
        if (n <= 0) {
            dmn_conn_drop(s, c, "send failed");
            return;
        }
        c->out_off += (size_t)n;
    }
    free(c->out); /* a burst's memory goes back once it is sent */
    c->out = NULL;
    c->out_off = c->out_len = c->out_cap = 0;
    if (dmn_conn_closing(c))
        dmn_conn_drop(s, c, "refused");
}

/* The bound on a message's arrival (server.h: GMUX_DAEMON_MSG_MS). */
static uint64_t msg_ns(const dmn_srv_t *s)
{
    return s->opts->msg_ns ? s->opts->msg_ns : (uint64_t)DMN_SERVER_MSG_MS * COM_NS_PER_MS;
}

void dmn_conn_refuse(dmn_srv_t *s, dmn_conn_t *c, size_t len)
{
    if (dmn_conn_send(s, c, len) != 0)
        return;
    if (!dmn_conn_has_output(c)) {
        dmn_conn_drop(s, c, "refused");
        return;
    }
    c->close_by = com_clock_ns() + msg_ns(s);
    c->hello_by = c->msg_by = 0; /* its input is read no more */
    c->backlog = false;
}

bool dmn_conn_closing(const dmn_conn_t *c)
{
    return c->close_by != 0;
}

/* Whether the owner's reserve and the caps of a uid other than the owner's
 * leave room for one more connection of uid, which holds `held` connections;
 * the members (all uids but the owner's) hold `members`. Logs a refusal. */
static bool conn_room(dmn_srv_t *s, uid_t uid, pid_t pid, int held, int members)
{
    uint64_t now = com_clock_ns();
    if (!dmn_cred_room(&s->policy, uid, held, DMN_SERVER_MAX_CONNS_PER_UID)) {
        if (dmn_refusal_say(&s->refused[DMN_REFUSE_UID_CONNS], now))
            COM_WARN(DAEMON,
                     "uid %u holds %d connections, the most a uid other than the daemon's may: "
                     "refused pid %d (%llu refused so far)",
                     (unsigned)uid, held, (int)pid,
                     (unsigned long long)s->refused[DMN_REFUSE_UID_CONNS].total);
        return false;
    }
    if (uid != s->policy.owner && members >= DMN_SERVER_MAX_CONNS - DMN_SERVER_OWNER_CONNS) {
        if (dmn_refusal_say(&s->refused[DMN_REFUSE_GROUP_CONNS], now))
            COM_WARN(DAEMON,
                     "uids other than the daemon's hold %d connections, the most they may "
                     "together: refused uid %u pid %d (%llu refused so far)",
                     members, (unsigned)uid, (int)pid,
                     (unsigned long long)s->refused[DMN_REFUSE_GROUP_CONNS].total);
        return false;
    }
    return true;
}

bool dmn_conn_accepting(const dmn_srv_t *s, uint64_t now, uint64_t *next)
{
    if (now >= s->accept_after)
        return true;
    if (next && s->accept_after < *next)
        *next = s->accept_after;
    return false;
}

/* accept4 failed with err: when it is not a signal or a connection gone
 * already, the connection waits in the listen queue, and the listening
 * socket is left alone for ACCEPT_PAUSE_MS (until 2026-12-03 it was polled
 * again at once, and the daemon spun on a full descriptor table, silent). */
static void accept_failed(dmn_srv_t *s, int err)
{
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED)
        return;
    uint64_t now = com_clock_ns();
    s->accept_after = now + (uint64_t)ACCEPT_PAUSE_MS * COM_NS_PER_MS;
    dmn_refusals_t *r = &s->refused[DMN_REFUSE_ACCEPT];
    if (dmn_refusal_say(r, now))
        COM_WARN(DAEMON,
                 "cannot accept a connection (%s): it waits, tried again every %d ms (%llu "
                 "failed so far)",
                 strerror(err), ACCEPT_PAUSE_MS, (unsigned long long)r->total);
}

void dmn_conn_accept_all(dmn_srv_t *s)
{
    for (int k = 0; k < 64; k++) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            accept_failed(s, errno);
            return;
        }
        pid_t pid = -1; /* logged below even when the peer's credentials were not read */
        uid_t uid = (uid_t)-1;
        gid_t gid = (gid_t)-1;
        gmux_status_t peer = dmn_endpoint_peer(fd, &pid, &uid, &gid);
        if (peer != GMUX_OK || !dmn_cred_allowed(&s->policy, uid, gid, NULL, 0)) {
            /* two kinds, each summed up with its own reason (until 2026-12-03
             * one, whose summary said "of a uid not allowed" of both) */
            dmn_refusals_t *r =
                &s->refused[peer != GMUX_OK ? DMN_REFUSE_PEERCRED : DMN_REFUSE_CRED];
            bool say = dmn_refusal_say(r, com_clock_ns()); /* else counted for a summary */
            if (say && peer != GMUX_OK) /* until 2026-12-03 said as "uid 4294967295 pid -1" */
                COM_WARN(DAEMON,
                         "refused a connection whose credentials could not be read (%s): its uid "
                         "cannot be checked (%llu refused so far)",
                         gmux_status_str(peer), (unsigned long long)r->total);
            else if (say)
                COM_WARN(DAEMON, "refused a connection from uid %u pid %d (%llu refused so far)",
                         (unsigned)uid, (int)pid, (unsigned long long)r->total);
            close(fd);
            continue;
        }
        dmn_conn_t *c = NULL;
        int held = 0, members = 0; /* by this uid; by all uids but the owner's */
        for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++) {
            held += s->conns[i].fd >= 0 && s->conns[i].uid == uid;
            members += s->conns[i].fd >= 0 && s->conns[i].uid != s->policy.owner;
            if (!c && s->conns[i].fd < 0)
                c = &s->conns[i];
        }
        if (!conn_room(s, uid, pid, held, members)) {
            close(fd);
            continue;
        }
        if (!c) {
            if (dmn_refusal_say(&s->refused[DMN_REFUSE_FULL], com_clock_ns()))
                COM_WARN(DAEMON, "too many connections (%d): refused pid %d (%llu refused so far)",
                         DMN_SERVER_MAX_CONNS, (int)pid,
                         (unsigned long long)s->refused[DMN_REFUSE_FULL].total);
            close(fd);
            continue;
        }
        uint8_t *buf = malloc(DMN_PROTO_MAX_MSG);
        if (!buf) { /* until 2026-12-03 said as "too many connections" */
            dmn_refusals_t *r = &s->refused[DMN_REFUSE_NOMEM];
            if (dmn_refusal_say(r, com_clock_ns()))
                COM_WARN(DAEMON,
                         "no memory for a connection's buffer (%d bytes): refused pid %d (%llu "
                         "ended so far)",
                         DMN_PROTO_MAX_MSG, (int)pid, (unsigned long long)r->total);
            close(fd);
            continue;
        }
        *c = (dmn_conn_t){.fd = fd,
                          .slot = -1,
                          .pid = pid,
                          .uid = uid,
                          .buf = buf,
                          .hello_by = com_clock_ns() + HELLO_NS};
    }
}

void dmn_conn_note_input(const dmn_srv_t *s, dmn_conn_t *c, size_t consumed, uint64_t now)
{
    if (c->len == 0 || c->backlog) /* a backlog is the daemon's delay, not the peer's */
        c->msg_by = 0;
    else if (consumed > 0 || c->msg_by == 0) /* what is left began with the last bytes */
        c->msg_by = now + msg_ns(s);
}

uint64_t dmn_conn_deadline(const dmn_conn_t *c)
{
    uint64_t by = c->hello_by ? c->hello_by : UINT64_MAX;
    if (c->close_by && c->close_by < by)
        by = c->close_by;
    return c->msg_by && c->msg_by < by ? c->msg_by : by;
}

void dmn_conn_check_deadlines(dmn_srv_t *s, uint64_t now)
{
    for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++) {
        dmn_conn_t *c = &s->conns[i];
        if (c->fd < 0)
            continue;
        if (c->close_by && now >= c->close_by) {
            dmn_refusals_t *r = &s->refused[DMN_REFUSE_UNREAD];
            if (dmn_refusal_say(r, now))
                COM_WARN(DAEMON,
                         "pid %d did not read its REFUSED within %llu ms (%zu bytes unsent): "
                         "closed (%llu closed so far; more are counted, a line a minute at most)",
                         (int)c->pid, (unsigned long long)(msg_ns(s) / COM_NS_PER_MS),
                         c->out_len - c->out_off, (unsigned long long)r->total);
            dmn_conn_drop(s, c, "refused, its answer unread");
        } else if (c->hello_by && now >= c->hello_by) {
            dmn_refusals_t *r = &s->refused[DMN_REFUSE_SILENT];
            if (dmn_refusal_say(r, now))
                COM_WARN(DAEMON,
                         "pid %d sent no whole message within %d ms: closed (%llu closed so far; "
                         "more are counted, a line a minute at most)",
                         (int)c->pid, DMN_SERVER_HELLO_MS, (unsigned long long)r->total);
            dmn_conn_drop(s, c, "silent");
        } else if (c->msg_by && now >= c->msg_by) {
            dmn_refusals_t *r = &s->refused[DMN_REFUSE_STALLED];
            if (dmn_refusal_say(r, now))
                COM_WARN(DAEMON,
                         "pid %d (task %u) sent %zu bytes of a message and not the rest within "
                         "%llu ms: dropped (%llu dropped so far; more are counted, a line a minute "
                         "at most)",
                         (int)c->pid, c->slot >= 0 ? s->arb.tasks[c->slot].id : 0, c->len,
                         (unsigned long long)(msg_ns(s) / COM_NS_PER_MS),
                         (unsigned long long)r->total);
            dmn_conn_drop(s, c, "stalled part-way through a message");
        }
    }
}

void dmn_conn_check_pids(dmn_srv_t *s, uint64_t now)
{
    if (now < s->next_pid_check)
        return;
    s->next_pid_check = now + PID_CHECK_NS;
    for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++) {
        dmn_conn_t *c = &s->conns[i];
        if (c->fd >= 0 && c->slot >= 0 && c->pid > 0 && kill(c->pid, 0) != 0 && errno == ESRCH)
            dmn_conn_drop(s, c, "process gone");
    }
}

gmux_status_t dmn_conn_listen(dmn_srv_t *s, unsigned flags, char *why, size_t why_cap)
{
    int fd, lk;
    gmux_status_t st =
        dmn_endpoint_listen(s->opts->path, s->opts->group, flags, &fd, &lk, why, why_cap);
    if (st != GMUX_OK)
        return st;
    struct stat sb;
    if (stat(s->opts->path, &sb) != 0) { /* bound a moment ago: removed already */
        sb.st_dev = 0;
        sb.st_ino = 0;
    }
    s->listen_fd = fd;
    s->lock_fd = lk;
    s->sock_dev = sb.st_dev;
    s->sock_ino = sb.st_ino;
    s->path_lost_said = false;
    return GMUX_OK;
}

bool dmn_conn_path_ours(const dmn_srv_t *s)
{
    struct stat sb;
    return s->sock_ino != 0 && stat(s->opts->path, &sb) == 0 && sb.st_dev == s->sock_dev &&
           sb.st_ino == s->sock_ino;
}

int dmn_conn_check_path(dmn_srv_t *s, uint64_t now)
{
    if (now < s->next_path_check)
        return 0;
    s->next_path_check = now + PATH_CHECK_NS;
    if (dmn_conn_path_ours(s))
        return 0;
    /* The lock goes first: when its file is still there it is ours, and a
     * second lock of it from this process would fail as if another daemon
     * held it; when it was removed, ours locks nothing any more. */
    int old_fd = s->listen_fd;
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    s->lock_fd = -1;
    /* its directory too: it was there when this daemon started */
    char why[512];
    gmux_status_t st = dmn_conn_listen(s, DMN_LISTEN_MAKE_DIR, why, sizeof(why));
    if (st == GMUX_ERR_EXISTS) {
        COM_WARN(DAEMON, "%s: another gmuxd holds it now (this one's socket was removed): stopping",
                 s->opts->path);
        return -1;
    }
    if (st != GMUX_OK) {
        if (!s->path_lost_said)
            COM_WARN(DAEMON,
                     "%s no longer names this daemon's socket and it cannot listen there again "
                     "(%s): new tasks cannot reach it; trying again every second",
                     s->opts->path, why);
        s->path_lost_said = true;
        return 0;
    }
    close(old_fd);
    COM_WARN(DAEMON, "%s no longer named this daemon's socket (removed): listening there again",
             s->opts->path);
    return 0;
}
