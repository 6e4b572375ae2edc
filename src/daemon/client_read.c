/* The task side of gmuxd, what comes from the daemon (client_internal.h);
 * see client.h. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "daemon/client_internal.h"

/* Ranges of a PLAN handed to on_plan per call (4 KiB of stack). */
#define PLAN_BATCH 256u
/* recv calls an EINTR may repeat in one read (MSG_DONTWAIT: each returns at
 * once), so that a signal does not end a read with a batch half taken. */
#define EINTR_RETRIES 16

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
    dmn_cl_go_local(c, why);
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
    dmn_cl_go_local(c, "protocol version mismatch");
}

/* Receives and processes what has arrived, waiting up to timeout_ms for the
 * first byte, and calls on_read_end once nothing more waits (if a message
 * came; not when the connection ends: its orders are void). Returns -1 when
 * the connection ended (now in local mode) or when a REFUSED arrived
 * (*refused set). */
static int pump_read(dmn_client_t *c, int timeout_ms, int *refused);

/* pump_read, then the EVICTED a callback asked for during the read. */
int dmn_cl_pump(dmn_client_t *c, int timeout_ms, int *refused)
{
    c->in_read = 1;
    int r = pump_read(c, timeout_ms, refused);
    c->in_read = 0;
    if (c->evicted_due && dmn_cl_registered(c))
        dmn_cl_send_evicted(c);
    c->evicted_due = 0;
    return c->fd < 0 ? -1 : r;
}

static int pump_read(dmn_client_t *c, int timeout_ms, int *refused)
{
    if (dmn_cl_flush_queue(c) != 0)
        return -1;
    struct pollfd pf = {c->fd, (short)(POLLIN | (c->q_len ? POLLOUT : 0)), 0};
    int r = poll(&pf, 1, timeout_ms);
    if (r < 0 && errno != EINTR) {
        dmn_cl_go_local_errno(c, "poll failed", errno);
        return -1;
    }
    if (r <= 0)
        return 0;
    if ((pf.revents & POLLOUT) && dmn_cl_flush_queue(c) != 0)
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
                dmn_cl_go_local(c, "refused");
                return -1;
            }
            if (st != GMUX_OK || process(c, &m) != 0) {
                dmn_cl_go_local(c, "bad message from the daemon");
                return -1;
            }
            off += whole;
            got = 1;
        }
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
}
