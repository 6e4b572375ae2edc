/* The task side of gmuxd; see client.h. */
#include "daemon/client.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"
#include "daemon/client_alloc.h"
#include "daemon/endpoint.h"

#define BACKOFF_MIN_NS (10 * COM_NS_PER_MS)
#define BACKOFF_MAX_NS (1000 * COM_NS_PER_MS)
/* How long a REGISTER may go unanswered. Only a test that compiles this file
 * itself sets another (test_client_quiet: 100 ms, so that its many retries
 * under a daemon that never answers take a fraction of a second). */
#ifndef DMN_CLIENT_REGISTER_WAIT_MS
#define DMN_CLIENT_REGISTER_WAIT_MS 2000
#endif
#define REGISTER_WAIT_MS DMN_CLIENT_REGISTER_WAIT_MS
/* Bytes the client keeps for a daemon that does not read, beyond what its
 * socket buffers: four of the largest messages, in a buffer allocated with
 * the client, so that sending never allocates. More, and it goes local. */
#define QUEUE_MAX (4 * DMN_PROTO_MAX_MSG)
#define STALL_NS  ((uint64_t)DMN_ENDPOINT_SEND_WAIT_MS * COM_NS_PER_MS)
/* Ranges of a PLAN handed to on_plan per call (4 KiB of stack). */
#define PLAN_BATCH 256u
/* recv calls an EINTR may repeat in one read (MSG_DONTWAIT: each returns at
 * once), so that a signal does not end a read with a batch half taken. */
#define EINTR_RETRIES 16

struct dmn_client {
    dmn_client_opts_t opts;
    char path[108];
    char name[DMN_NAME_MAX];
    int fd; /* -1: local mode */
    uint32_t task_id, registrations, seq;
    uint64_t epoch; /* one more at every connection's start and end: dmn_client_epoch */
    int holding, revoked, announced, have_stats;
    int told_ungated; /* a daemon would not register it (the task runs ungated): warned, once */
    uint64_t request; /* PENDING messages sent: the number of the last one */
    uint64_t idle_request; /* request when IDLE was last sent: a GRANT answers a later one */
    uint64_t grant_seq;
    uint32_t grant_flags; /* of that GRANT (proto.h DMN_GRANT_*) */
    /* An EVICTED asked for from inside a read (a callback): sent once the
     * read is over (pump); 0: none. */
    uint64_t evicted_due;
    uint32_t evicted_failed;
    int in_read;
    uint64_t backoff_ns, next_retry_ns;
    uint64_t retry_backoff;     /* backoff_ns when the reconnection under way began */
    uint64_t register_deadline; /* a REGISTER sent and not answered: given up then */
    uint32_t n_launches, n_ranges;
    dmn_msg_stats_t stats;
    size_t in_len;
    /* What the socket did not take yet, in order: q[q_off, q_len) (both 0
     * when nothing waits); since when nothing of it went out (a daemon that
     * reads nothing for STALL_NS while bytes wait is given up). */
    size_t q_off, q_len;
    uint64_t q_stalled_since;
    /* Fixed buffers, none allocated after dmn_client_open: a send or a
     * PENDING that failed for want of memory lost the connection or the
     * working set. The kernel gives their pages as they are first written. */
    uint8_t in[DMN_PROTO_MAX_MSG];
    uint8_t out[DMN_PROTO_MAX_MSG];
    dmn_range_t ranges[DMN_MAX_RANGES]; /* the last PENDING's: sent again at each announce */
    uint8_t q[QUEUE_MAX];
};

static void go_local(dmn_client_t *c, const char *why)
{
    if (c->fd >= 0) {
        /* A try to register that failed once the task was told it runs
         * ungated (told_ungated) is no news: debug level, so a task under a
         * daemon that never answers logs no line per retry for hours. */
        int retry = c->task_id == 0 && c->told_ungated;
        size_t lost = c->q_len - c->q_off;
        if (lost) /* messages lost: never silent (the default level is warn) */
            COM_LOG(retry ? COM_LOG_DEBUG : COM_LOG_WARN, DAEMON,
                    "client '%s': local mode (%s); %zu bytes for the daemon dropped", c->name, why,
                    lost);
        else
            COM_LOG(retry ? COM_LOG_DEBUG : COM_LOG_INFO, DAEMON, "client '%s': local mode (%s)",
                    c->name, why);
        close(c->fd);
        c->epoch++; /* what that daemon ordered is void */
    }
    c->fd = -1;
    c->q_off = c->q_len = 0;
    c->holding = c->revoked = c->announced = 0;
    c->idle_request = c->request; /* a new daemon answers nothing asked of this one */
    c->task_id = 0;
    c->evicted_due = 0; /* that daemon's grant */
    c->in_len = 0;
    c->backoff_ns = BACKOFF_MIN_NS;
    c->next_retry_ns = com_clock_ns() + c->backoff_ns;
}

/* go_local with the reason "what: <errno text>". */
static void go_local_errno(dmn_client_t *c, const char *what, int err)
{
    char text[64], why[128];
    snprintf(why, sizeof(why), "%s: %s", what,
             err ? strerror_r(err, text, sizeof(text)) : "the socket took nothing");
    go_local(c, why);
}

/* Sends what waits in the queue, as much as the socket takes now. Returns 0,
 * or -1 when the client went local: the send failed, or nothing went out for
 * STALL_NS while bytes wait (the daemon does not read). */
static int flush_queue(dmn_client_t *c)
{
    while (c->fd >= 0 && c->q_off < c->q_len) {
        ssize_t n = send(c->fd, c->q + c->q_off, c->q_len - c->q_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            if (com_clock_ns() - c->q_stalled_since < STALL_NS)
                return 0;
            go_local(c, "the daemon does not read");
            return -1;
        }
        if (n <= 0) {
            go_local_errno(c, "send failed", n < 0 ? errno : 0);
            return -1;
        }
        c->q_off += (size_t)n;
        c->q_stalled_since = com_clock_ns();
    }
    if (c->fd < 0)
        return -1;
    c->q_off = c->q_len = 0; /* all sent */
    return 0;
}

/* Sends the message in c->out without ever waiting: what the socket does not
 * take now waits in the queue, behind what waits already, and goes out at the
 * next calls (flush_queue). A daemon that stopped reading is given up once
 * nothing went out for STALL_NS, or when QUEUE_MAX bytes wait. */
static gmux_status_t send_out(dmn_client_t *c, size_t len)
{
    if (c->fd < 0)
        return GMUX_OK;
    if (len == 0)
        return GMUX_ERR_INVALID;
    if (flush_queue(c) != 0)
        return GMUX_OK;
    size_t off = 0;
    while (c->q_len == 0 && off < len) {
        ssize_t n = send(c->fd, c->out + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n <= 0) {
            go_local_errno(c, "send failed", n < 0 ? errno : 0);
            return GMUX_OK;
        }
        off += (size_t)n;
    }
    if (off == len)
        return GMUX_OK;
    if (c->q_len == 0)
        c->q_stalled_since = com_clock_ns();
    size_t waiting = c->q_len - c->q_off, rest = len - off;
    if (waiting + rest > QUEUE_MAX) {
        go_local(c, "the daemon does not read");
        return GMUX_OK;
    }
    if (c->q_len + rest > QUEUE_MAX) { /* the part sent makes room */
        memmove(c->q, c->q + c->q_off, waiting);
        c->q_off = 0;
        c->q_len = waiting;
    }
    memcpy(c->q + c->q_len, c->out + off, rest);
    c->q_len += rest;
    return GMUX_OK;
}

/* Acts on one message from the daemon. Returns -1 if it makes no sense. */
static int process(dmn_client_t *c, const dmn_msg_t *m)
{
    switch (m->hdr.type) {
    case DMN_MSG_GRANT:
        /* One that answers a PENDING sent before our last IDLE: the daemon
         * decided before it read the IDLE, which ended that turn there, so it
         * is no turn here, even when we have asked again since (the daemon
         * answers that PENDING with a GRANT of its own; taking this one, the
         * task launched beside the holder). */
        if (m->u.grant.request <= c->idle_request)
            return 0;
        c->holding = 1;
        c->revoked = 0;
        c->announced = 0;
        c->grant_seq = m->u.grant.grant_seq;
        c->grant_flags = m->u.grant.flags;
        return 0;
    case DMN_MSG_REVOKE:
        if (c->holding && m->u.grant.grant_seq == c->grant_seq)
            c->revoked = 1;
        return 0;
    case DMN_MSG_PLAN: {
        if (m->u.ranges.count == DMN_PLAN_EVICT && m->u.ranges.n_ranges == 0) {
            /* the end of this grant's evictions: answered once they are done */
            if (c->opts.on_evict_end)
                c->opts.on_evict_end(c->opts.plan_arg, m->u.ranges.seq);
            else
                dmn_client_evicted(c, m->u.ranges.seq, 0);
            return 0;
        }
        /* Decoded in batches on the stack, never allocated: an EVICT lost for
         * want of memory would leave the daemon's model counting as freed
         * memory the task still holds. */
        if (!c->opts.on_plan)
            return 0;
        dmn_range_t r[PLAN_BATCH];
        uint32_t n = m->u.ranges.n_ranges;
        for (uint32_t i = 0; i < n;) {
            uint32_t k = 0;
            for (; k < PLAN_BATCH && i < n; k++, i++)
                r[k] = dmn_proto_range_at(&m->u.ranges, i);
            c->opts.on_plan(c->opts.plan_arg, m->u.ranges.seq, (dmn_plan_kind_t)m->u.ranges.count,
                            r, k);
        }
        if (c->opts.on_plan_end)
            c->opts.on_plan_end(c->opts.plan_arg, m->u.ranges.seq,
                                (dmn_plan_kind_t)m->u.ranges.count, n);
        return 0;
    }
    case DMN_MSG_REGISTERED:
        c->task_id = m->u.registered.task_id;
        return 0;
    case DMN_MSG_STATUS:
        return 0;
    default: /* REFUSED after registration, or a client-to-daemon type */
        return -1;
    }
}

/* The connection ended (err 0: end of file, else recv's errno): local mode.
 * Before REGISTERED came, the daemon stopped (killed, crashed) or would not
 * have this client (a gmuxd of another protocol version from before
 * 2026-12-02 closes without a word, one without room too):
 * the task now runs ungated, which the default level must show, once per
 * client rather than at every retry. */
static void connection_ended(dmn_client_t *c, int err)
{
    char text[64], why[96];
    if (err)
        snprintf(why, sizeof(why), "receive error: %s", strerror_r(err, text, sizeof(text)));
    else
        snprintf(why, sizeof(why), "closed by gmuxd");
    if (c->task_id == 0 && !c->told_ungated) {
        c->told_ungated = 1;
        COM_WARN(DAEMON,
                 "client '%s': gmuxd ended the connection before answering REGISTER (%s): "
                 "running ungated, retrying; gmuxd stopped, or would not have the task (another "
                 "protocol version than %u, or no room: its log says which)",
                 c->name, why, DMN_PROTO_VERSION);
    }
    go_local(c, why);
}

/* A message in another protocol version came: local mode. gmuxd answers a
 * REGISTER of another version with a REFUSED in its own, whose header still
 * says which (the magic and version fields never move). */
static void other_version(dmn_client_t *c, const uint8_t *hdr)
{
    unsigned version = (unsigned)hdr[4] | (unsigned)hdr[5] << 8;
    if (!c->told_ungated) {
        c->told_ungated = 1;
        COM_WARN(DAEMON,
                 "client '%s': gmuxd speaks protocol version %u, this client version %u: running "
                 "ungated, retrying",
                 c->name, version, DMN_PROTO_VERSION);
    }
    go_local(c, "protocol version mismatch");
}

/* Receives and processes what has arrived, waiting up to timeout_ms for the
 * first byte, and calls on_read_end once nothing more waits (if a message
 * came; not when the connection ends: its orders are void). Returns -1 when
 * the connection ended (now in local mode) or when a REFUSED arrived
 * (*refused set). */
static int pump_read(dmn_client_t *c, int timeout_ms, int *refused);
static int registered(const dmn_client_t *c);

static gmux_status_t send_evicted(dmn_client_t *c)
{
    dmn_msg_evicted_t e = {c->evicted_due, c->evicted_failed, 0};
    c->evicted_due = 0;
    return send_out(c, dmn_proto_encode_evicted(c->out, sizeof(c->out), ++c->seq, &e));
}

/* pump_read, then the EVICTED a callback asked for during the read. */
static int pump(dmn_client_t *c, int timeout_ms, int *refused)
{
    c->in_read = 1;
    int r = pump_read(c, timeout_ms, refused);
    c->in_read = 0;
    if (c->evicted_due && registered(c))
        send_evicted(c);
    c->evicted_due = 0;
    return c->fd < 0 ? -1 : r;
}

static int pump_read(dmn_client_t *c, int timeout_ms, int *refused)
{
    if (flush_queue(c) != 0)
        return -1;
    struct pollfd pf = {c->fd, (short)(POLLIN | (c->q_len ? POLLOUT : 0)), 0};
    int r = poll(&pf, 1, timeout_ms);
    if (r < 0 && errno != EINTR) {
        go_local_errno(c, "poll failed", errno);
        return -1;
    }
    if (r <= 0)
        return 0;
    if ((pf.revents & POLLOUT) && flush_queue(c) != 0)
        return -1;
    if (!(pf.revents & ~POLLOUT))
        return 0;
    int got = 0, interrupted = 0; /* messages processed; EINTRs in this read */
    for (;;) {
        ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR && ++interrupted <= EINTR_RETRIES)
            continue; /* the rest of a batch may wait behind the signal */
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            connection_ended(c, n < 0 ? errno : 0);
            return -1;
        }
        if (n < 0) {
            if (got && c->opts.on_read_end)
                c->opts.on_read_end(c->opts.plan_arg);
            return 0;
        }
        c->in_len += (size_t)n;
        size_t off = 0;
        for (;;) {
            dmn_hdr_t h;
            dmn_msg_t m;
            gmux_status_t st = dmn_proto_read_hdr(c->in + off, c->in_len - off, &h);
            if (st == GMUX_ERR_VERSION) {
                other_version(c, c->in + off);
                return -1;
            }
            if (st == GMUX_ERR_BUSY ||
                (st == GMUX_OK && c->in_len - off < DMN_PROTO_HDR_SIZE + (size_t)h.length))
                break;
            size_t whole = DMN_PROTO_HDR_SIZE + (size_t)h.length;
            if (st == GMUX_OK)
                st = dmn_proto_decode(c->in + off, whole, &m);
            if (st == GMUX_OK && m.hdr.type == DMN_MSG_REFUSED && refused) {
                if (!c->told_ungated) /* once, not at every retry */
                    COM_WARN(DAEMON, "daemon refused '%s': %s", c->name, m.u.refused.reason);
                c->told_ungated = 1;
                *refused = 1;
                go_local(c, "refused");
                return -1;
            }
            if (st != GMUX_OK || process(c, &m) != 0) {
                go_local(c, "bad message from the daemon");
                return -1;
            }
            off += whole;
            got = 1;
        }
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
}

/* Connected and registered: launches are gated. Connected with task_id 0,
 * a REGISTER waits for its answer and the client acts as in local mode. */
static int registered(const dmn_client_t *c)
{
    return c->fd >= 0 && c->task_id != 0;
}

static int registering(const dmn_client_t *c)
{
    return c->fd >= 0 && c->task_id == 0;
}

/* Connects without waiting and sends REGISTER: GMUX_OK when it is on its
 * way (registering), else the client stays local (why, when not NULL, says
 * why the connection failed: the path and the system's reason). */
static gmux_status_t start_register(dmn_client_t *c, char *why, size_t why_cap)
{
    int fd;
    char sys[160] = "";
    gmux_status_t st = dmn_endpoint_connect_nowait_why(c->path, &fd, sys, sizeof(sys));
    if (st != GMUX_OK) {
        if (why && why_cap)
            snprintf(why, why_cap, "cannot connect to %s: %s", c->path, sys);
        return st;
    }
    c->fd = fd;
    c->epoch++;
    c->in_len = 0;
    c->task_id = 0;
    dmn_msg_register_t reg = {
        (uint32_t)getpid(), (uint32_t)c->opts.cls, c->opts.priority, 0, c->opts.budget, {0}};
    memcpy(reg.name, c->name, DMN_NAME_MAX);
    send_out(c, dmn_proto_encode_register(c->out, sizeof(c->out), ++c->seq, &reg));
    if (c->fd < 0)
        return GMUX_ERR_PEER;
    c->register_deadline = com_deadline_after_ns(REGISTER_WAIT_MS * COM_NS_PER_MS);
    return GMUX_OK;
}

/* Moves a registration on, waiting up to wait_ms for the daemon's answer.
 * GMUX_OK: registered now; GMUX_ERR_BUSY: no answer yet, REGISTER_WAIT_MS
 * not over; else the client went local (GMUX_ERR_PERM: refused). */
static gmux_status_t progress_register(dmn_client_t *c, int wait_ms)
{
    int refused = 0;
    (void)pump(c, wait_ms, &refused);
    if (refused)
        return GMUX_ERR_PERM;
    if (c->fd < 0)
        return GMUX_ERR_PEER;
    if (c->task_id == 0) {
        if (!com_deadline_passed(c->register_deadline))
            return GMUX_ERR_BUSY;
        if (!c->told_ungated) { /* once per outage, as for a daemon that closes */
            c->told_ungated = 1;
            COM_WARN(DAEMON,
                     "client '%s': gmuxd accepted the connection and did not answer REGISTER "
                     "within %d ms: running ungated, retrying (said again only after a "
                     "registration)",
                     c->name, REGISTER_WAIT_MS);
        }
        go_local(c, "no answer to REGISTER");
        return GMUX_ERR_PEER;
    }
    c->registrations++;
    c->backoff_ns = BACKOFF_MIN_NS;
    c->told_ungated = 0; /* a later daemon that will not have it is worth a word again */
    if (c->have_stats)
        send_out(c, dmn_proto_encode_stats(c->out, sizeof(c->out), ++c->seq, &c->stats));
    COM_INFO(DAEMON, "client '%s': registered as task %u", c->name, c->task_id);
    return GMUX_OK;
}

/* Never waits: a reconnection is begun, or moved on, by whichever calls
 * come; the backoff doubles at each that fails. */
static void maybe_reconnect(dmn_client_t *c)
{
    gmux_status_t st;
    if (registering(c)) {
        st = progress_register(c, 0);
    } else {
        if (c->fd >= 0 || com_clock_ns() < c->next_retry_ns)
            return;
        c->retry_backoff = c->backoff_ns;
        st = start_register(c, NULL, 0);
        if (st == GMUX_OK)
            st = progress_register(c, 0);
    }
    if (st == GMUX_OK || st == GMUX_ERR_BUSY)
        return;
    c->backoff_ns = c->retry_backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : c->retry_backoff * 2;
    c->next_retry_ns = com_clock_ns() + c->backoff_ns;
}

/* why (when given) says st, which failed a dmn_client_open, in words. */
static void say_open(char *why, size_t cap, gmux_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say_open(char *why, size_t cap, gmux_status_t st, const char *fmt, ...)
{
    if (!why || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < cap)
        snprintf(why + n, cap - (size_t)n, " (%s)", gmux_status_name(st));
}

gmux_status_t dmn_client_open(const dmn_client_opts_t *opts, dmn_client_t **out)
{
    return dmn_client_open_why(opts, out, NULL, 0);
}

gmux_status_t dmn_client_open_why(const dmn_client_opts_t *opts, dmn_client_t **out, char *why,
                                  size_t why_cap)
{
    gmux_status_t st = GMUX_ERR_INVALID;
    if (!opts || opts->cls > DMN_CLASS_LATENCY || opts->priority < DMN_PRIORITY_MIN ||
        opts->priority > DMN_PRIORITY_MAX) {
        say_open(why, why_cap, st, "invalid task options for the daemon client");
        return st;
    }
    dmn_client_t *c = dmn_client_alloc_fails() ? NULL : calloc(1, sizeof(*c));
    if (!c) {
        st = GMUX_ERR_NOMEM;
        say_open(why, why_cap, st, "no memory for the daemon client: %s", strerror(ENOMEM));
        return st;
    }
    c->opts = *opts;
    c->fd = -1;
    if (opts->path) /* cut short it would name another socket */
        st = snprintf(c->path, sizeof(c->path), "%s", opts->path) < (int)sizeof(c->path)
                 ? GMUX_OK
                 : GMUX_ERR_RANGE;
    else
        st = dmn_endpoint_path(c->path, sizeof(c->path));
    if (st != GMUX_OK) {
        say_open(why, why_cap, st,
                 "the daemon's socket path (%s) is too long for a socket address (at most %zu "
                 "bytes)",
                 opts->path ? "given" : "GMUX_SOCKET, or the default one", sizeof(c->path) - 1);
        goto free_client;
    }
    snprintf(c->name, sizeof(c->name), "%s", opts->name ? opts->name : "task");
    c->opts.name = c->name;
    c->backoff_ns = BACKOFF_MIN_NS;
    char connect_why[DMN_CLIENT_WHY_MAX] = "";
    st = start_register(c, connect_why, sizeof(connect_why));
    while (st == GMUX_OK && registering(c))
        if ((st = progress_register(c, 50)) == GMUX_ERR_BUSY)
            st = GMUX_OK;
    if (st == GMUX_ERR_PERM) { /* the connection not permitted, or the daemon's refusal */
        if (connect_why[0])
            say_open(why, why_cap, st, "%s", connect_why);
        else
            say_open(why, why_cap, st, "gmuxd refused the task");
        goto free_client;
    }
    if (st != GMUX_OK)
        c->next_retry_ns = com_clock_ns() + c->backoff_ns;
    *out = c;
    return GMUX_OK;
free_client:
    free(c);
    return st;
}

void dmn_client_close(dmn_client_t *c)
{
    if (!c)
        return;
    if (c->fd >= 0) {
        if (registered(c))
            send_out(c, dmn_proto_encode_empty(c->out, sizeof(c->out), ++c->seq, DMN_MSG_IDLE));
        if (c->fd >= 0)
            close(c->fd); /* what still waits is lost with the task: the daemon reclaims it */
    }
    free(c);
}

static gmux_status_t announce(dmn_client_t *c)
{
    uint32_t n = c->n_launches ? c->n_launches : 1;
    c->request++; /* before sending: a failed send goes local, which sets idle_request */
    gmux_status_t st =
        send_out(c, dmn_proto_encode_ranges(c->out, sizeof(c->out), ++c->seq, DMN_MSG_PENDING, n,
                                            c->request, c->ranges, c->n_ranges));
    if (!c->holding)
        c->announced = 1;
    return st;
}

gmux_status_t dmn_client_pending(dmn_client_t *c, uint32_t n_launches, const dmn_range_t *ranges,
                                 uint32_t n_ranges)
{
    if (n_ranges > DMN_MAX_RANGES || (n_ranges && !ranges))
        return GMUX_ERR_INVALID;
    for (uint32_t i = 0; i < n_ranges; i++)
        if (ranges[i].len == 0 || ranges[i].base + ranges[i].len < ranges[i].base)
            return GMUX_ERR_INVALID;
    if (n_ranges)
        memcpy(c->ranges, ranges, n_ranges * sizeof(*ranges));
    c->n_ranges = n_ranges;
    c->n_launches = n_launches;
    maybe_reconnect(c);
    return registered(c) ? announce(c) : GMUX_OK;
}

gmux_status_t dmn_client_wait_turn(dmn_client_t *c, uint64_t timeout_ns)
{
    maybe_reconnect(c);
    if (!registered(c) || pump(c, 0, NULL) < 0)
        return GMUX_OK;
    if (c->holding && !c->revoked)
        return GMUX_OK;
    if (c->holding) {
        c->holding = c->revoked = 0;
        send_out(c, dmn_proto_encode_empty(c->out, sizeof(c->out), ++c->seq, DMN_MSG_RELEASE));
    }
    if (!c->announced && c->fd >= 0)
        announce(c);
    uint64_t deadline = com_deadline_after_ns(timeout_ns);
    while (c->fd >= 0 && !c->holding) {
        uint64_t now = com_clock_ns();
        if (now >= deadline)
            return GMUX_ERR_TIMEOUT;
        uint64_t ms = (deadline - now) / COM_NS_PER_MS + 1;
        if (c->opts.on_wait && c->opts.on_wait(c->opts.plan_arg))
            ms = 1; /* it polls an event: look again soon */
        if (c->fd < 0 || pump(c, ms > 100 ? 100 : (int)ms, NULL) < 0)
            return GMUX_OK;
    }
    return GMUX_OK;
}

gmux_status_t dmn_client_idle(dmn_client_t *c)
{
    c->n_launches = 0;
    maybe_reconnect(c);
    if (!registered(c) || pump(c, 0, NULL) < 0)
        return GMUX_OK;
    c->holding = c->revoked = c->announced = 0;
    c->idle_request = c->request;
    return send_out(c, dmn_proto_encode_empty(c->out, sizeof(c->out), ++c->seq, DMN_MSG_IDLE));
}

gmux_status_t dmn_client_evicted(dmn_client_t *c, uint64_t grant_seq, uint32_t failed)
{
    if (!registered(c) || grant_seq == 0)
        return GMUX_OK;
    c->evicted_due = grant_seq;
    c->evicted_failed = failed;
    return c->in_read ? GMUX_OK : send_evicted(c);
}

gmux_status_t dmn_client_report(dmn_client_t *c, const dmn_msg_stats_t *stats)
{
    c->stats = *stats;
    c->have_stats = 1;
    maybe_reconnect(c);
    if (!registered(c))
        return GMUX_OK;
    return send_out(c, dmn_proto_encode_stats(c->out, sizeof(c->out), ++c->seq, stats));
}

int dmn_client_poll(dmn_client_t *c)
{
    maybe_reconnect(c);
    if (!registered(c) || pump(c, 0, NULL) < 0)
        return 1;
    return c->holding && !c->revoked;
}

int dmn_client_fd(const dmn_client_t *c)
{
    return c->fd;
}

int dmn_client_is_local(const dmn_client_t *c)
{
    return !registered(c);
}

int dmn_client_holds_turn(const dmn_client_t *c)
{
    return registered(c) && c->holding;
}

uint64_t dmn_client_grant_seq(const dmn_client_t *c)
{
    return dmn_client_holds_turn(c) ? c->grant_seq : 0;
}

uint32_t dmn_client_grant_flags(const dmn_client_t *c)
{
    return dmn_client_holds_turn(c) ? c->grant_flags : 0;
}

uint32_t dmn_client_task_id(const dmn_client_t *c)
{
    return c->task_id;
}

uint32_t dmn_client_registrations(const dmn_client_t *c)
{
    return c->registrations;
}

uint64_t dmn_client_epoch(const dmn_client_t *c)
{
    return c->epoch;
}

uint64_t dmn_client_turn_timeout_ns(void)
{
    int64_t ms = COM_SETTING_INT(DAEMON_TURN_TIMEOUT_MS);
    return ms > 0 ? (uint64_t)ms * COM_NS_PER_MS : 0;
}
