/* gmuxd's event loop; see server.h. */
#include "daemon/server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/settings.h"
#include "daemon/arbiter.h"
#include "daemon/endpoint.h"
#include "daemon/proto.h"
#include "daemon/refusals.h"
#include "daemon/server_conn.h"

gmux_status_t dmn_server_opts_from_settings(dmn_server_opts_t *opts, char *path_buf,
                                            size_t path_cap, int64_t idle_exit_s_default)
{
    *opts = (dmn_server_opts_t){0}; /* every field: quiet_when_ready was left as found */
    gmux_status_t st = dmn_endpoint_path(path_buf, path_cap);
    if (st != GMUX_OK)
        return st;
    if ((st = dmn_endpoint_group(&opts->group)) != GMUX_OK)
        return st;
    opts->path = path_buf;
    opts->make_dir = dmn_endpoint_path_default();
    int64_t q = COM_SETTING_INT(DAEMON_QUANTUM_MS), g = COM_SETTING_INT(DAEMON_GRACE_MS);
    bool q_ok = q > 0 && q<DMN_SERVER_MAX_MS, g_ok = g> 0 && g < DMN_SERVER_MAX_MS;
    if (!q_ok || !g_ok) {
        COM_ERROR(DAEMON, "GMUX_DAEMON_%s_MS: %lld is not a number of milliseconds from 1 to %d",
                  q_ok ? "GRACE" : "QUANTUM", (long long)(q_ok ? g : q), DMN_SERVER_MAX_MS - 1);
        return GMUX_ERR_RANGE;
    }
    opts->quantum_ns = (uint64_t)q * COM_NS_PER_MS;
    opts->grace_ns = (uint64_t)g * COM_NS_PER_MS;
    int64_t ew = COM_SETTING_INT(DAEMON_EVICT_WAIT_MS);
    if (ew < 0 || ew >= DMN_SERVER_MAX_MS) {
        COM_ERROR(DAEMON,
                  "GMUX_DAEMON_EVICT_WAIT_MS: %lld is not a number of milliseconds from 0 to %d",
                  (long long)ew, DMN_SERVER_MAX_MS - 1);
        return GMUX_ERR_RANGE;
    }
    opts->evict_wait_ns = (uint64_t)ew * COM_NS_PER_MS;
    int64_t mm = COM_SETTING_INT(DAEMON_MSG_MS);
    if (mm <= 0 || mm >= DMN_SERVER_MAX_MS) {
        COM_ERROR(DAEMON, "GMUX_DAEMON_MSG_MS: %lld is not a number of milliseconds from 1 to %d",
                  (long long)mm, DMN_SERVER_MAX_MS - 1);
        return GMUX_ERR_RANGE;
    }
    opts->msg_ns = (uint64_t)mm * COM_NS_PER_MS;
    int64_t idle = COM_SETTING_INT(DAEMON_IDLE_EXIT_S);
    if (idle == -1)
        idle = idle_exit_s_default;
    if (idle < 0) {
        COM_ERROR(DAEMON, "GMUX_DAEMON_IDLE_EXIT_S: %lld is not a number of seconds (0: never)",
                  (long long)idle);
        return GMUX_ERR_RANGE;
    }
    opts->idle_exit_ns = (uint64_t)idle * COM_NS_PER_S;
    dmn_share_params_t share; /* read again by dmn_server_run; checked here, before forking */
    if ((st = dmn_share_params_from_settings(&share)) != GMUX_OK)
        return st;
    opts->placement = dmn_placement_find(COM_SETTING_STRING(DAEMON_PLACEMENT));
    if (!opts->placement) {
        COM_ERROR(DAEMON, "GMUX_DAEMON_PLACEMENT: unknown policy '%s' (none, swap, opt, chunk)",
                  COM_SETTING_STRING(DAEMON_PLACEMENT));
        return GMUX_ERR_INVALID;
    }
    return GMUX_OK;
}

/* Why a REGISTER of uid would pass a cap of a uid other than the owner's (a
 * REFUSED reason, written to why), or NULL when it may register. */
static const char *task_cap(dmn_srv_t *s, uid_t uid, char *why, size_t cap)
{
    if (uid == s->policy.owner)
        return NULL;
    int mine = 0, members = 0;
    for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++) {
        const dmn_conn_t *o = &s->conns[i];
        mine += o->fd >= 0 && o->slot >= 0 && o->uid == uid;
        members += o->fd >= 0 && o->slot >= 0 && o->uid != s->policy.owner;
    }
    if (mine >= DMN_SERVER_MAX_TASKS_PER_UID)
        snprintf(why, cap, "uid %u has %d tasks, the most a group member may", (unsigned)uid, mine);
    else if (members >= DMN_ARB_MAX_TASKS - DMN_SERVER_OWNER_TASKS)
        snprintf(why, cap, "group members have %d tasks, the most they may", members);
    else
        return NULL;
    return why;
}

static void on_register(dmn_srv_t *s, dmn_conn_t *c, dmn_msg_register_t *reg)
{
    reg->pid = (uint32_t)c->pid; /* the kernel's word, not the client's */
    char why[DMN_REASON_MAX];
    const char *capped = task_cap(s, c->uid, why, sizeof(why));
    int slot = capped ? -1 : dmn_arb_add(&s->arb, reg, com_clock_ns());
    if (slot < 0) {
        if (capped && dmn_refusal_say(&s->refused[DMN_REFUSE_TASKS], com_clock_ns()))
            COM_WARN(DAEMON, "refused task '%s' of pid %d: %s (%llu refused so far)", reg->name,
                     (int)c->pid, capped, (unsigned long long)s->refused[DMN_REFUSE_TASKS].total);
        dmn_conn_refuse(s, c,
                        dmn_proto_encode_refused(s->out, sizeof(s->out), ++s->seq,
                                                 GMUX_ERR_CAPACITY,
                                                 capped ? capped : "too many tasks"));
        return;
    }
    c->slot = slot;
    s->conn_of_slot[slot] = (int)(c - s->conns);
    dmn_msg_registered_t r = {s->arb.tasks[slot].id, 0, s->arb.quantum_ns};
    COM_INFO(DAEMON, "task %u registered: pid %d '%s' class %s priority %d", r.task_id, (int)c->pid,
             reg->name, dmn_class_name(reg->cls), reg->priority);
    dmn_conn_send(s, c, dmn_proto_encode_registered(s->out, sizeof(s->out), ++s->seq, &r));
}

static void on_query(dmn_srv_t *s, dmn_conn_t *c)
{
    uint64_t now = com_clock_ns();
    uint32_t n = dmn_arb_snapshot(&s->arb, now, s->snap, DMN_ARB_MAX_TASKS);
    dmn_msg_status_t head;
    dmn_arb_status_head(&s->arb, now, &head);
    dmn_hold_status(&s->hold, &head);
    size_t len = dmn_proto_encode_status(s->out, sizeof(s->out), ++s->seq, &head, s->snap, n);
    dmn_conn_send(s, c, len);
}

/* Handles one decoded message; returns -1 when the connection was dropped. */
static int handle(dmn_srv_t *s, dmn_conn_t *c, dmn_msg_t *m)
{
    uint64_t now = com_clock_ns();
    int registered = c->slot >= 0;
    switch (m->hdr.type) {
    case DMN_MSG_REGISTER:
        if (registered)
            break;
        on_register(s, c, &m->u.reg);
        return c->fd < 0 || dmn_conn_closing(c) ? -1 : 0;
    case DMN_MSG_QUERY:
        on_query(s, c);
        return c->fd < 0 ? -1 : 0;
    case DMN_MSG_PENDING:
        if (!registered)
            break;
        if (dmn_arb_pending(&s->arb, c->slot, m->u.ranges.count, &m->u.ranges, now) != GMUX_OK)
            COM_WARN(DAEMON,
                     "task %u: no memory for its %u ranges: it waits with those it sent before",
                     s->arb.tasks[c->slot].id, m->u.ranges.n_ranges);
        c->request = m->u.ranges.seq;
        return 0;
    case DMN_MSG_RELEASE:
        if (!registered)
            break;
        dmn_arb_release(&s->arb, c->slot, now);
        return 0;
    case DMN_MSG_IDLE:
        if (!registered)
            break;
        dmn_arb_idle(&s->arb, c->slot, now);
        return 0;
    case DMN_MSG_STATS:
        if (!registered)
            break;
        dmn_arb_stats(&s->arb, c->slot, &m->u.stats);
        return 0;
    case DMN_MSG_EVICTED:
        if (!registered)
            break;
        dmn_hold_evicted(s, c->slot, m->u.evicted.grant_seq, m->u.evicted.failed);
        return 0;
    default:
        break;
    }
    COM_WARN(DAEMON, "pid %d: unexpected %s message", (int)c->pid, dmn_msg_type_name(m->hdr.type));
    dmn_conn_drop(s, c, "protocol error");
    return -1;
}

/* A peer of another protocol version is told so before it is dropped, in a
 * REFUSED of this version: its header's magic and version sit where they
 * always did, so a client that reads them names both versions (those since
 * 2026-12-02); older ones fail to decode it and go local as they did when
 * they were only closed on. c ends once it is sent (dmn_conn_refuse). */
static void refuse_version(dmn_srv_t *s, dmn_conn_t *c, const uint8_t *hdr)
{
    char why[DMN_REASON_MAX];
    snprintf(why, sizeof(why), "protocol version %u; gmuxd speaks %u",
             (unsigned)hdr[4] | (unsigned)hdr[5] << 8, DMN_PROTO_VERSION);
    dmn_conn_refuse(
        s, c, dmn_proto_encode_refused(s->out, sizeof(s->out), ++s->seq, GMUX_ERR_VERSION, why));
}

/* Logs a message that did not decode, rate-limited (refusals.h): one of
 * another protocol version at most a line a minute, for a stale client
 * library reconnects every second for as long as its task runs; any other
 * malformed message at most a line a second. Those not logged are counted
 * in the next line. */
static void log_malformed(dmn_srv_t *s, const dmn_conn_t *c, gmux_status_t st, const uint8_t *hdr)
{
    uint64_t now = com_clock_ns();
    if (st == GMUX_ERR_VERSION) {
        dmn_refusals_t *r = &s->refused[DMN_REFUSE_VERSION];
        if (dmn_refusal_say(r, now))
            COM_WARN(DAEMON,
                     "pid %d: protocol version %u, gmuxd speaks %u: refused (%llu refused so far; "
                     "more are counted, a line a minute at most)",
                     (int)c->pid, (unsigned)hdr[4] | (unsigned)hdr[5] << 8, DMN_PROTO_VERSION,
                     (unsigned long long)r->total);
        return;
    }
    dmn_refusals_t *r = &s->refused[DMN_REFUSE_MALFORMED];
    if (dmn_refusal_say(r, now))
        COM_WARN(DAEMON, "pid %d: malformed message (%s): dropped (%llu so far)", (int)c->pid,
                 gmux_status_str(st), (unsigned long long)r->total);
}

/* Handles up to DMN_SERVER_MSGS_PER_ROUND whole messages of c's input, and receives more
 * only once it holds no whole message: what is left waits for the next round
 * (c->backlog), after the arbiter and the other peers had theirs. */
static void on_readable(dmn_srv_t *s, dmn_conn_t *c)
{
    if (!c->backlog) { /* then buf holds less than a message: there is room */
        ssize_t n = recv(c->fd, c->buf + c->len, DMN_PROTO_MAX_MSG - c->len, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            dmn_conn_drop(s, c, n == 0 ? "hung up" : "receive failed");
            return;
        }
        if (n < 0)
            return;
        c->len += (size_t)n;
    }
    c->backlog = false;
    size_t off = 0;
    for (int handled = 0;; handled++) {
        dmn_hdr_t h;
        gmux_status_t st = dmn_proto_read_hdr(c->buf + off, c->len - off, &h);
        if (st == GMUX_ERR_BUSY)
            break;
        dmn_msg_t m;
        size_t whole = DMN_PROTO_HDR_SIZE + (size_t)h.length;
        if (st == GMUX_OK && c->len - off < whole)
            break;
        if (st == GMUX_OK && handled == DMN_SERVER_MSGS_PER_ROUND) {
            c->backlog = true;
            break;
        }
        if (st == GMUX_OK)
            st = dmn_proto_decode(c->buf + off, whole, &m);
        if (st != GMUX_OK) {
            log_malformed(s, c, st, c->buf + off);
            if (st == GMUX_ERR_VERSION && c->slot < 0)
                refuse_version(s, c, c->buf + off);
            else
                dmn_conn_drop(s, c, "malformed message");
            return;
        }
        c->hello_by = 0;
        if (handle(s, c, &m) != 0)
            return;
        off += whole;
    }
    memmove(c->buf, c->buf + off, c->len - off);
    c->len -= off;
    dmn_conn_note_input(s, c, off, com_clock_ns());
}

/* Sends the plan's orders of one task of the kinds first..last, grouped by
 * kind, as PLAN messages. */
static int send_plan(dmn_srv_t *s, dmn_conn_t *c, uint32_t task_id, const dmn_plan_t *plan,
                     uint64_t grant_seq, uint32_t first, uint32_t last)
{
    static dmn_range_t ranges[DMN_MAX_RANGES];
    for (uint32_t kind = first; kind <= last; kind++) {
        uint32_t n = 0;
        for (size_t i = 0; i <= plan->n; i++) {
            int flush = i == plan->n || n == DMN_MAX_RANGES;
            if (flush && n > 0) {
                size_t len = dmn_proto_encode_ranges(s->out, sizeof(s->out), ++s->seq, DMN_MSG_PLAN,
                                                     kind, grant_seq, ranges, n);
                if (dmn_conn_send(s, c, len) != 0)
                    return -1;
                n = 0;
            }
            if (i < plan->n && plan->entries[i].task_id == task_id && plan->entries[i].kind == kind)
                ranges[n++] = plan->entries[i].range;
        }
    }
    return 0;
}

/* After the GRANT: the fill ahead, to the one task it is for (placement.h),
 * which applies it while it waits for its turn. When that task left (while
 * the switch was held) or its connection fails now, the fill ahead is
 * handed back (dmn_arb_ahead_unsent): the placement and STATUS count it no
 * longer. Until 2026-12-02 STATUS counted it planned. Returns whether a fill
 * ahead went. */
static bool send_ahead(dmn_srv_t *s, const dmn_plan_t *plan, uint64_t grant_seq)
{
    size_t i = plan->n;
    while (i > 0 && plan->entries[i - 1].kind == DMN_PLAN_AHEAD) /* written last */
        i--;
    if (i == plan->n)
        return false;
    uint32_t id = plan->entries[i].task_id;
    uint64_t bytes = 0;
    for (size_t k = i; k < plan->n; k++)
        bytes += plan->entries[k].range.len;
    for (int k = 0; k < DMN_ARB_MAX_TASKS; k++) {
        if (!s->arb.tasks[k].used || s->arb.tasks[k].id != id || s->conn_of_slot[k] < 0)
            continue;
        COM_DEBUG(DAEMON, "grant %llu: %zu ranges, %llu bytes filled ahead for task %u",
                  (unsigned long long)grant_seq, plan->n - i, (unsigned long long)bytes, id);
        if (send_plan(s, &s->conns[s->conn_of_slot[k]], id, plan, grant_seq, DMN_PLAN_AHEAD,
                      DMN_PLAN_AHEAD) == 0)
            return true;
        break;
    }
    gmux_status_t st = dmn_arb_ahead_unsent(&s->arb, grant_seq);
    if (st != GMUX_OK)
        COM_WARN(DAEMON,
                 "grant %llu: fill ahead for task %u never sent: placement %s could not take it "
                 "back (%s)",
                 (unsigned long long)grant_seq, id, s->arb.placement->name, gmux_status_str(st));
    return false;
}

/* The granted task's part of a switch: its orders, its GRANT, then, with
 * ahead, the fill ahead to the task expected next. A GRANT that did not go
 * (the task's connection failed while its orders or GRANT were written:
 * dropped, reclaimed, decided again) is void: its orders and the fill ahead
 * are handed back, as a held grant's (server_hold.h). Returns whether the
 * GRANT went. */
static bool send_granted(dmn_srv_t *s, const dmn_arb_action_t *act, bool ahead)
{
    uint32_t id = s->arb.tasks[act->grant].id; /* before a drop clears the slot */
    bool sent = false;
    if (s->arb.tasks[act->grant].used && s->conn_of_slot[act->grant] >= 0) {
        dmn_conn_t *c = &s->conns[s->conn_of_slot[act->grant]];
        /* the request it answers: a client that has gone idle since
         * knows this GRANT is not for its later requests */
        dmn_msg_grant_t g = {act->grant_seq, s->arb.quantum_ns, c->request, act->plan->grant_flags,
                             0};
        sent = (act->plan->n == 0 || send_plan(s, c, id, act->plan, act->grant_seq, DMN_PLAN_EVICT,
                                               DMN_PLAN_FILL) == 0) &&
               dmn_conn_send(s, c,
                             dmn_proto_encode_grant(s->out, sizeof(s->out), ++s->seq, DMN_MSG_GRANT,
                                                    &g)) == 0;
    }
    if (!sent) {
        dmn_hold_unsent(s, id, act->grant_seq);
        return false;
    }
    if (ahead)
        (void)send_ahead(s, act->plan, act->grant_seq);
    return true;
}

/* Acts on the arbiter's decisions until it has nothing more to say (a
 * switch back to slices revokes several holders; a shared mode grants
 * several tasks). A switch held for its evictions (server_hold.h) stops it
 * until the hold ends; a fill ahead held alone does not. */
static void apply(dmn_srv_t *s)
{
    dmn_hold_send_t send;
    dmn_arb_action_t held;
    if (!dmn_hold_poll(s, com_clock_ns(), &send, &held)) {
        if (!dmn_hold_supersede(s, com_clock_ns()))
            return;
    } else if (send == DMN_HOLD_SEND_SWITCH) { /* counted once it went */
        dmn_hold_sent(&s->hold, send_granted(s, &held, true));
    } else if (send == DMN_HOLD_SEND_AHEAD) {
        dmn_hold_sent(&s->hold, send_ahead(s, held.plan, held.grant_seq));
    }
    for (int round = 0; round < 4 * DMN_ARB_MAX_TASKS; round++) {
        dmn_arb_action_t act;
        gmux_status_t st = dmn_arb_decide(&s->arb, com_clock_ns(), &act);
        if (act.ahead_back && act.ahead_back_st != GMUX_OK)
            COM_WARN(DAEMON,
                     "grant %llu: held fill ahead never sent: placement %s could not take it "
                     "back (%s)",
                     (unsigned long long)act.ahead_back, s->arb.placement->name,
                     gmux_status_str(act.ahead_back_st));
        if (st != GMUX_OK && act.grant >= 0) /* the grant stands, its plan cleared */
            COM_WARN(DAEMON,
                     "grant %llu to task %u sent without its plan: placement %s failed (%s), "
                     "the task faults in what it needs",
                     (unsigned long long)act.grant_seq, s->arb.tasks[act.grant].id,
                     s->arb.placement->name, gmux_status_str(st));
        else if (st != GMUX_OK)
            COM_WARN(DAEMON, "decision failed (%s)", gmux_status_str(st));
        if (act.forced >= 0)
            COM_WARN(DAEMON, "task %u kept the GPU past the grace period: turn taken",
                     s->arb.tasks[act.forced].id);
        if (act.revoke >= 0) {
            dmn_conn_t *c = &s->conns[s->conn_of_slot[act.revoke]];
            dmn_msg_grant_t g = {s->arb.tasks[act.revoke].grant_seq, 0, 0, 0, 0};
            (void)dmn_conn_send(s, c,
                                dmn_proto_encode_grant(s->out, sizeof(s->out), ++s->seq,
                                                       DMN_MSG_REVOKE,
                                                       &g)); /* if the holder left: decide again */
        }
        if (act.grant >= 0) {
            for (int i = 0; i < DMN_ARB_MAX_TASKS && act.plan->n > 0; i++) {
                if (i == act.grant || !s->arb.tasks[i].used || s->conn_of_slot[i] < 0)
                    continue;
                dmn_conn_t *c = &s->conns[s->conn_of_slot[i]];
                (void)send_plan(s, c, s->arb.tasks[i].id, act.plan, act.grant_seq, DMN_PLAN_EVICT,
                                DMN_PLAN_FILL);
            }
            dmn_hold_what_t what = dmn_hold_begin(s, &act, com_clock_ns());
            if (what == DMN_HOLD_SWITCH) { /* the rest once the evicted tasks reported */
                dmn_arb_hold_turn(&s->arb, act.grant);
                return;
            }
            /* the fill ahead alone waits for them: held once the GRANT went */
            if (send_granted(s, &act, what == DMN_HOLD_NONE) && what == DMN_HOLD_AHEAD)
                dmn_hold_ahead(s, &act, com_clock_ns());
        }
        if (act.forced < 0 && act.revoke < 0 && act.grant < 0)
            return; /* a connection dropped above has been reclaimed: decided again */
    }
}

static int poll_timeout_ms(const dmn_srv_t *s, uint64_t now)
{
    for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++)
        if (s->conns[i].fd >= 0 && s->conns[i].backlog)
            return 0;
    uint64_t next = dmn_arb_next_deadline(&s->arb);
    if (dmn_hold_blocks(&s->hold)) /* no decision meanwhile: only the hold's end counts */
        next = dmn_hold_deadline(&s->hold);
    else if (dmn_hold_deadline(&s->hold) < next) /* a fill ahead held */
        next = dmn_hold_deadline(&s->hold);
    if (next > s->next_pid_check)
        next = s->next_pid_check;
    (void)dmn_conn_accepting(s, now, &next);
    for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++)
        if (s->conns[i].fd >= 0 && dmn_conn_deadline(&s->conns[i]) < next)
            next = dmn_conn_deadline(&s->conns[i]);
    if (next <= now)
        return 0;
    uint64_t ms = (next - now + COM_NS_PER_MS - 1) / COM_NS_PER_MS;
    return ms > 1000 ? 1000 : (int)ms;
}

gmux_status_t dmn_server_run(const dmn_server_opts_t *opts, volatile sig_atomic_t *stop,
                             int ready_fd)
{
    dmn_srv_t *s = calloc(1, sizeof(*s));
    if (!s)
        return GMUX_ERR_NOMEM;
    s->opts = opts;
    gmux_status_t st =
        dmn_conn_listen(s, opts->make_dir ? DMN_LISTEN_MAKE_DIR : 0, opts->why, opts->why_cap);
    if (st != GMUX_OK)
        goto free_server;
    s->policy = (dmn_cred_policy_t){getuid(), opts->group};
    static const char *const what[DMN_REFUSE_KINDS] = {
        [DMN_REFUSE_PEERCRED] = "connections whose credentials could not be read",
        [DMN_REFUSE_CRED] = "connections of a uid not allowed",
        [DMN_REFUSE_FULL] = "too many connections",
        [DMN_REFUSE_UID_CONNS] = "connections over a uid's cap",
        [DMN_REFUSE_GROUP_CONNS] = "connections over the group members' cap",
        [DMN_REFUSE_TASKS] = "tasks over a group member's cap",
        [DMN_REFUSE_VERSION] = "peers of another protocol version",
        [DMN_REFUSE_MALFORMED] = "malformed messages",
        [DMN_REFUSE_SILENT] = "connections silent past the first message's deadline",
        [DMN_REFUSE_STALLED] = "peers stalled part-way through a message",
        [DMN_REFUSE_NOMEM] = "connections ended for want of memory",
        [DMN_REFUSE_ACCEPT] = "accepts",
        [DMN_REFUSE_UNREAD] = "peers refused that did not read the REFUSED"};
    for (int k = 0; k < DMN_REFUSE_KINDS; k++)
        s->refused[k].what = what[k];
    s->refused[DMN_REFUSE_VERSION].every_ns = 60 * COM_NS_PER_S;
    /* a peer that reconnects and stalls again costs a line only a minute */
    s->refused[DMN_REFUSE_SILENT].every_ns = 60 * COM_NS_PER_S;
    s->refused[DMN_REFUSE_SILENT].verb = "closed";
    s->refused[DMN_REFUSE_STALLED].every_ns = 60 * COM_NS_PER_S;
    s->refused[DMN_REFUSE_STALLED].verb = "dropped";
    s->refused[DMN_REFUSE_NOMEM].verb = "ended";
    s->refused[DMN_REFUSE_ACCEPT].verb = "failed";
    s->refused[DMN_REFUSE_UNREAD].every_ns = 60 * COM_NS_PER_S; /* a stale client's retries */
    s->refused[DMN_REFUSE_UNREAD].verb = "closed";
    for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++)
        s->conns[i] = (dmn_conn_t){.fd = -1, .slot = -1};
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++)
        s->conn_of_slot[i] = -1;
    dmn_arb_init(&s->arb, opts->quantum_ns, opts->grace_ns, opts->placement, com_clock_ns());
    dmn_share_params_t share;
    if (dmn_share_params_from_settings(&share) == GMUX_OK)
        dmn_arb_set_share(&s->arb, &share);
    dmn_arb_set_ahead(&s->arb, COM_SETTING_BOOL(DAEMON_AHEAD));
    COM_INFO(DAEMON, "listening on %s (quantum %llu us, placement %s, share %s, ahead %s)",
             opts->path, (unsigned long long)(opts->quantum_ns / COM_NS_PER_US),
             s->arb.placement->name, s->arb.share.p.enabled ? "on" : "off",
             s->arb.ahead ? "on" : "off");
    if (opts->quiet_when_ready) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, STDERR_FILENO);
            close(null);
        }
    }
    if (ready_fd >= 0) {
        (void)!write(ready_fd, "r", 1);
        close(ready_fd);
    }
    static struct pollfd fds[DMN_SERVER_MAX_CONNS + 1];
    static int idx[DMN_SERVER_MAX_CONNS + 1];
    uint64_t idle_since = com_clock_ns(); /* no connection since; 0: one is open */
    while (!*stop) {
        uint64_t now = com_clock_ns();
        if (opts->idle_exit_ns && idle_since && now - idle_since >= opts->idle_exit_ns) {
            COM_INFO(DAEMON, "no connection for %llu s: exiting",
                     (unsigned long long)(opts->idle_exit_ns / COM_NS_PER_S));
            break;
        }
        int nf = 0;
        short listen_ev = (short)(dmn_conn_accepting(s, now, NULL) ? POLLIN : 0);
        fds[nf++] = (struct pollfd){s->listen_fd, listen_ev, 0};
        for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++)
            if (s->conns[i].fd >= 0) {
                idx[nf] = i;
                const dmn_conn_t *c = &s->conns[i];
                short ev = (short)((dmn_conn_closing(c) ? 0 : POLLIN) |
                                   (dmn_conn_has_output(c) ? POLLOUT : 0));
                fds[nf++] = (struct pollfd){s->conns[i].fd, ev, 0};
            }
        int r = poll(fds, (nfds_t)nf, poll_timeout_ms(s, now));
        if (r < 0 && errno != EINTR) {
            st = com_status_from_errno(errno);
            break;
        }
        if (r > 0 && (fds[0].revents & (POLLERR | POLLNVAL))) {
            st = GMUX_ERR_IO;
            break;
        }
        /* revents stay 0 without events; a backlog is handled anyway */
        for (int k = 1; k < nf; k++) {
            dmn_conn_t *c = &s->conns[idx[k]];
            if (c->fd == fds[k].fd && (fds[k].revents & POLLOUT))
                dmn_conn_flush(s, c);
            if (c->fd == fds[k].fd && dmn_conn_closing(c)) { /* its input is not read */
                if (fds[k].revents & (POLLERR | POLLHUP | POLLNVAL))
                    dmn_conn_drop(s, c, "hung up before reading its REFUSED");
                continue;
            }
            if (c->fd == fds[k].fd && ((fds[k].revents & ~POLLOUT) || c->backlog))
                on_readable(s, c); /* POLLHUP: recv sees EOF after the last bytes */
        }
        if (fds[0].revents & POLLIN)
            dmn_conn_accept_all(s);
        dmn_conn_check_deadlines(s, com_clock_ns());
        dmn_conn_check_pids(s, com_clock_ns());
        if (dmn_conn_check_path(s, com_clock_ns()) != 0) {
            st = GMUX_ERR_EXISTS;
            break;
        }
        dmn_refusals_flush(s->refused, DMN_REFUSE_KINDS, com_clock_ns());
        apply(s);
        bool open_conn = false;
        for (int i = 0; i < DMN_SERVER_MAX_CONNS && !open_conn; i++)
            open_conn = s->conns[i].fd >= 0;
        if (open_conn)
            idle_since = 0;
        else if (!idle_since)
            idle_since = com_clock_ns();
    }
    for (int i = 0; i < DMN_SERVER_MAX_CONNS; i++)
        if (s->conns[i].fd >= 0)
            dmn_conn_drop(s, &s->conns[i], "daemon stopping");
    dmn_arb_fini(&s->arb);
    /* the socket only while the path names it: else another daemon's, or nobody's */
    dmn_endpoint_unlisten(opts->path, s->listen_fd, s->lock_fd, dmn_conn_path_ours(s));
free_server:
    free(s);
    return st;
}
