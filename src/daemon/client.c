/* The task side of gmuxd, its connection (client_internal.h); see client.h. */
#include "daemon/client.h"

#include <errno.h>
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
#include "daemon/client_internal.h"
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
#define STALL_NS         ((uint64_t)DMN_ENDPOINT_SEND_WAIT_MS * COM_NS_PER_MS)

void dmn_cl_go_local(dmn_client_t *c, const char *why)
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
void dmn_cl_go_local_errno(dmn_client_t *c, const char *what, int err)
{
    char text[64], why[128];
    snprintf(why, sizeof(why), "%s: %s", what,
             err ? strerror_r(err, text, sizeof(text)) : "the socket took nothing");
    dmn_cl_go_local(c, why);
}

/* Sends what waits in the queue, as much as the socket takes now. Returns 0,
 * or -1 when the client went local: the send failed, or nothing went out for
 * STALL_NS while bytes wait (the daemon does not read). */
int dmn_cl_flush_queue(dmn_client_t *c)
{
    while (c->fd >= 0 && c->q_off < c->q_len) {
        ssize_t n = send(c->fd, c->q + c->q_off, c->q_len - c->q_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            if (com_clock_ns() - c->q_stalled_since < STALL_NS)
                return 0;
            dmn_cl_go_local(c, "the daemon does not read");
            return -1;
        }
        if (n <= 0) {
            dmn_cl_go_local_errno(c, "send failed", n < 0 ? errno : 0);
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
gmux_status_t dmn_cl_send_out(dmn_client_t *c, size_t len)
{
    if (c->fd < 0)
        return GMUX_OK;
    if (len == 0)
        return GMUX_ERR_INVALID;
    if (dmn_cl_flush_queue(c) != 0)
        return GMUX_OK;
    size_t off = 0;
    while (c->q_len == 0 && off < len) {
        ssize_t n = send(c->fd, c->out + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n <= 0) {
            dmn_cl_go_local_errno(c, "send failed", n < 0 ? errno : 0);
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
        dmn_cl_go_local(c, "the daemon does not read");
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

gmux_status_t dmn_cl_send_evicted(dmn_client_t *c)
{
    dmn_msg_evicted_t e = {c->evicted_due, c->evicted_failed, 0};
    c->evicted_due = 0;
    return dmn_cl_send_out(c, dmn_proto_encode_evicted(c->out, sizeof(c->out), ++c->seq, &e));
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
    dmn_cl_send_out(c, dmn_proto_encode_register(c->out, sizeof(c->out), ++c->seq, &reg));
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
    (void)dmn_cl_pump(c, wait_ms, &refused);
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
        dmn_cl_go_local(c, "no answer to REGISTER");
        return GMUX_ERR_PEER;
    }
    c->registrations++;
    c->backoff_ns = BACKOFF_MIN_NS;
    c->told_ungated = 0; /* a later daemon that will not have it is worth a word again */
    if (c->have_stats)
        dmn_cl_send_out(c, dmn_proto_encode_stats(c->out, sizeof(c->out), ++c->seq, &c->stats));
    COM_INFO(DAEMON, "client '%s': registered as task %u", c->name, c->task_id);
    return GMUX_OK;
}

/* Never waits: a reconnection is begun, or moved on, by whichever calls
 * come; the backoff doubles at each that fails. */
static void maybe_reconnect(dmn_client_t *c)
{
    gmux_status_t st;
    if (dmn_cl_registering(c)) {
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
    while (st == GMUX_OK && dmn_cl_registering(c))
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
        if (dmn_cl_registered(c))
            dmn_cl_send_out(c,
                            dmn_proto_encode_empty(c->out, sizeof(c->out), ++c->seq, DMN_MSG_IDLE));
        if (c->fd >= 0)
            close(c->fd); /* what still waits is lost with the task: the daemon reclaims it */
    }
    free(c);
}

static gmux_status_t announce(dmn_client_t *c)
{
    uint32_t n = c->n_launches ? c->n_launches : 1;
    c->request++; /* before sending: a failed send goes local, which sets idle_request */
    gmux_status_t st = dmn_cl_send_out(c, dmn_proto_encode_ranges(c->out, sizeof(c->out), ++c->seq,
                                                                  DMN_MSG_PENDING, n, c->request,
                                                                  c->ranges, c->n_ranges));
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
    return dmn_cl_registered(c) ? announce(c) : GMUX_OK;
}

gmux_status_t dmn_client_wait_turn(dmn_client_t *c, uint64_t timeout_ns)
{
    maybe_reconnect(c);
    if (!dmn_cl_registered(c) || dmn_cl_pump(c, 0, NULL) < 0)
        return GMUX_OK;
    if (c->holding && !c->revoked)
        return GMUX_OK;
    if (c->holding) {
        c->holding = c->revoked = 0;
        dmn_cl_send_out(c,
                        dmn_proto_encode_empty(c->out, sizeof(c->out), ++c->seq, DMN_MSG_RELEASE));
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
        if (c->fd < 0 || dmn_cl_pump(c, ms > 100 ? 100 : (int)ms, NULL) < 0)
            return GMUX_OK;
    }
    return GMUX_OK;
}

gmux_status_t dmn_client_idle(dmn_client_t *c)
{
    c->n_launches = 0;
    maybe_reconnect(c);
    if (!dmn_cl_registered(c) || dmn_cl_pump(c, 0, NULL) < 0)
        return GMUX_OK;
    c->holding = c->revoked = c->announced = 0;
    c->idle_request = c->request;
    return dmn_cl_send_out(c,
                           dmn_proto_encode_empty(c->out, sizeof(c->out), ++c->seq, DMN_MSG_IDLE));
}

gmux_status_t dmn_client_evicted(dmn_client_t *c, uint64_t grant_seq, uint32_t failed)
{
    if (!dmn_cl_registered(c) || grant_seq == 0)
        return GMUX_OK;
    c->evicted_due = grant_seq;
    c->evicted_failed = failed;
    return c->in_read ? GMUX_OK : dmn_cl_send_evicted(c);
}

gmux_status_t dmn_client_report(dmn_client_t *c, const dmn_msg_stats_t *stats)
{
    c->stats = *stats;
    c->have_stats = 1;
    maybe_reconnect(c);
    if (!dmn_cl_registered(c))
        return GMUX_OK;
    return dmn_cl_send_out(c, dmn_proto_encode_stats(c->out, sizeof(c->out), ++c->seq, stats));
}

int dmn_client_poll(dmn_client_t *c)
{
    maybe_reconnect(c);
    if (!dmn_cl_registered(c) || dmn_cl_pump(c, 0, NULL) < 0)
        return 1;
    return c->holding && !c->revoked;
}

int dmn_client_fd(const dmn_client_t *c)
{
    return c->fd;
}

int dmn_client_is_local(const dmn_client_t *c)
{
    return !dmn_cl_registered(c);
}

int dmn_client_holds_turn(const dmn_client_t *c)
{
    return dmn_cl_registered(c) && c->holding;
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
