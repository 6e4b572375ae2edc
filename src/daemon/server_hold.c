/* A switch held until its evictions are done; see server_hold.h. */
#include "daemon/server_hold.h"

#include <assert.h>

#include "common/clock.h"
#include "common/log.h"
#include "daemon/server_conn.h"

/* Whether the plan evicts memory of the task id. */
static bool plan_evicts(const dmn_plan_t *plan, uint32_t id)
{
    for (size_t i = 0; i < plan->n; i++)
        if (plan->entries[i].task_id == id && plan->entries[i].kind == DMN_PLAN_EVICT)
            return true;
    return false;
}

/* Whether the plan has orders of kind. */
static bool plan_has(const dmn_plan_t *plan, dmn_plan_kind_t kind)
{
    for (size_t i = 0; i < plan->n; i++)
        if (plan->entries[i].kind == kind)
            return true;
    return false;
}

/* Whether the plan fills memory: at the switch or ahead. */
static bool plan_fills(const dmn_plan_t *plan)
{
    return plan_has(plan, DMN_PLAN_FILL) || plan_has(plan, DMN_PLAN_AHEAD);
}

/* Whether its shim holds the turn as far as it knows: then it keeps the
 * evictions it is sent, and cannot answer for them (dmn_task_t.taken). */
static bool holds_turn(const dmn_task_t *t)
{
    return t->state == DMN_STATE_RUNNING || t->state == DMN_STATE_REVOKED || t->taken;
}

/* Whether the task in slot i (not holding the turn now, or granted it now)
 * is to be asked for EVICTED at this switch: evicted by the plan, or it kept
 * evictions of a turn it gave back since (server_hold.h). A holder evicted
 * now is remembered instead: it keeps the orders until it gives the turn back. */
static bool to_ask(dmn_hold_t *h, const dmn_task_t *t, int i, const dmn_arb_action_t *act)
{
    bool plan = act->plan && act->plan->n > 0;
    bool evicted = plan && plan_evicts(act->plan, t->id);
    if (h->kept_id[i] != t->id)
        h->kept_id[i] = 0; /* another task's, gone */
    if (i != act->grant && holds_turn(t)) {
        if (evicted) {
            h->kept_id[i] = t->id;
            h->kept_grant[i] = t->grant_seq;
            h->kept_asked[i] = 0; /* an answer to an earlier request is not for these */
        } else if (h->kept_id[i] && h->kept_grant[i] != t->grant_seq) {
            h->kept_id[i] = 0; /* granted again unasked: cannot answer now (holding) */
        }
        return false;
    }
    if (!h->kept_id[i])
        return evicted && i != act->grant;
    /* the granted task is asked whatever the plan fills: holding the turn,
     * it could not answer a later switch */
    return i == act->grant || (plan && plan_fills(act->plan)) || evicted;
}

/* Whether task id is still there to answer. */
static bool still_there(const dmn_srv_t *s, uint32_t id)
{
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++)
        if (s->arb.tasks[i].used && s->arb.tasks[i].id == id)
            return s->conn_of_slot[i] >= 0;
    return false;
}

/* Drops the requests answered, those of tasks gone (died or hung up: their
 * memory went with them) and those whose bound passed at now: a task that
 * kept evictions and stayed silent is not waited for again (it would hold
 * every switch). Sets until_ns to the next bound; returns whether a bound
 * passed. */
static bool prune(dmn_srv_t *s, uint64_t now)
{
    dmn_hold_t *h = &s->hold;
    bool expired = false;
    uint32_t n = 0;
    h->until_ns = UINT64_MAX;
    for (uint32_t k = 0; k < h->n_wait; k++) {
        uint32_t id = h->wait_id[k];
        if (id && !still_there(s, id))
            id = 0;
        if (id && now >= h->wait_until[k]) {
            for (int i = 0; i < DMN_ARB_MAX_TASKS; i++)
                if (h->kept_id[i] == id)
                    h->kept_id[i] = 0;
            expired = true;
            id = 0;
        }
        if (!id)
            continue;
        h->wait_id[n] = id;
        h->wait_grant[n] = h->wait_grant[k];
        h->wait_until[n] = h->wait_until[k];
        if (h->wait_until[n] < h->until_ns)
            h->until_ns = h->wait_until[n];
        n++;
    }
    h->n_wait = n;
    return expired;
}

/* The held switch or fill ahead is over at now. It is counted (STATUS) only
 * once what it held went (dmn_hold_sent): an evict wait is a switch whose
 * GRANT, or only its fill ahead, waited and was then sent. Not counted: a
 * held switch superseded or void, a fill ahead handed back unsent (at a
 * later grant, its task left), either one whose write failed: that grant
 * is no switch for STATUS (nor are its orders planned), and the next switch
 * that fills waits for the same requests and is counted itself. */
static void end_hold(dmn_hold_t *h, uint64_t now)
{
    h->active = false;
    h->ahead_only = false;
    h->held_ns = now - h->since_ns;
}

dmn_hold_what_t dmn_hold_begin(dmn_srv_t *s, const dmn_arb_action_t *act, uint64_t now)
{
    dmn_hold_t *h = &s->hold;
    if (h->active) { /* a fill ahead held: this grant's decision handed it back */
        assert(h->ahead_only);
        end_hold(h, now);
    }
    if (s->opts->evict_wait_ns == 0 || act->grant < 0)
        return DMN_HOLD_NONE;
    (void)prune(s, now); /* those of a superseded switch stay */
    bool grantee_asked = false;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        const dmn_task_t *t = &s->arb.tasks[i];
        if (!t->used || s->conn_of_slot[i] < 0 || !to_ask(h, t, i, act))
            continue;
        uint32_t id = t->id;
        dmn_conn_t *c = &s->conns[s->conn_of_slot[i]];
        size_t len = dmn_proto_encode_ranges(s->out, sizeof(s->out), ++s->seq, DMN_MSG_PLAN,
                                             DMN_PLAN_EVICT, act->grant_seq, NULL, 0);
        if (dmn_conn_send(s, c, len) != 0)
            continue; /* dropped: nothing to wait for */
        /* Its answer to this request covers any earlier one it has not
         * answered (server_hold.h): that one's entry is this one's. */
        uint32_t k = 0;
        while (k < h->n_wait && h->wait_id[k] != id)
            k++;
        assert(k < DMN_HOLD_MAX_WAITS); /* one per task there */
        h->n_wait += k == h->n_wait;
        h->wait_id[k] = id;
        h->wait_grant[k] = act->grant_seq;
        h->wait_until[k] = now + s->opts->evict_wait_ns;
        if (h->kept_id[i] == id)
            h->kept_asked[i] = act->grant_seq;
        grantee_asked |= i == act->grant;
    }
    (void)prune(s, now); /* until_ns */
    /* A switch that fills nothing sends nothing that needs the room the
     * evictions asked for free: its requests, and those carried, stay for
     * the next switch that fills. But for the granted task's own request:
     * holding the turn, it could not answer a later one. */
    bool fills = act->plan && plan_fills(act->plan);
    if (h->n_wait == 0 || (!fills && !grantee_asked))
        return DMN_HOLD_NONE;
    /* The fill ahead alone needs that room: the granted task's turn does
     * not wait for it (until 2026-12-02 it did, for the bound at worst). */
    if (!grantee_asked && !plan_has(act->plan, DMN_PLAN_FILL))
        return DMN_HOLD_AHEAD;
    h->active = true;
    h->ahead_only = false;
    h->expired = false;
    h->act = *act;
    h->grant_id = s->arb.tasks[act->grant].id;
    h->since_ns = now;
    COM_DEBUG(DAEMON, "grant %llu to task %u waits for %u requests for evictions",
              (unsigned long long)act->grant_seq, h->grant_id, h->n_wait);
    return DMN_HOLD_SWITCH;
}

void dmn_hold_ahead(dmn_srv_t *s, const dmn_arb_action_t *act, uint64_t now)
{
    dmn_hold_t *h = &s->hold;
    const dmn_plan_t *p = act->plan;
    assert(!h->active && p->n > 0 && p->entries[p->n - 1].kind == DMN_PLAN_AHEAD);
    h->active = true;
    h->ahead_only = true;
    h->ahead_id = p->entries[p->n - 1].task_id; /* written last, for one task */
    h->expired = false;
    h->act = *act;
    h->grant_id = s->arb.tasks[act->grant].id;
    h->since_ns = now;
    dmn_arb_hold_ahead(&s->arb, act->grant_seq);
    COM_DEBUG(DAEMON, "grant %llu: fill ahead for task %u waits for %u requests for evictions",
              (unsigned long long)act->grant_seq, h->ahead_id, h->n_wait);
}

void dmn_hold_evicted(dmn_srv_t *s, int slot, uint64_t grant_seq, uint32_t failed)
{
    dmn_hold_t *h = &s->hold;
    uint32_t id = s->arb.tasks[slot].id;
    /* The evictions it kept are done once it answered the request it was
     * sent for them, even when the switch that asked went on already (its
     * grantee left or went idle): the next switch need not ask again. */
    if (h->kept_id[slot] == id && grant_seq && h->kept_asked[slot] == grant_seq)
        h->kept_id[slot] = 0;
    /* a late answer, for a switch that went on already, matches nothing */
    for (uint32_t k = 0; k < h->n_wait; k++) {
        if (h->wait_id[k] != id || h->wait_grant[k] != grant_seq)
            continue;
        h->wait_id[k] = 0;
        if (failed)
            COM_DEBUG(DAEMON,
                      "grant %llu: task %u could not carry out %u evictions now: not waited for",
                      (unsigned long long)grant_seq, id, failed);
    }
}

/* Whether the held grant is still the granted task's to send: it did not
 * leave, go idle or give the turn back meanwhile. */
static bool still_granted(const dmn_srv_t *s)
{
    const dmn_hold_t *h = &s->hold;
    int g = h->act.grant;
    const dmn_task_t *t = &s->arb.tasks[g];
    return t->used && t->id == h->grant_id && t->grant_seq == h->act.grant_seq &&
           t->state == DMN_STATE_RUNNING && s->conn_of_slot[g] >= 0;
}

static void unsent_failed(const dmn_srv_t *s, uint32_t id, uint64_t grant_seq, gmux_status_t st)
{
    COM_WARN(DAEMON,
             "grant %llu to task %u never sent: placement %s could not take its orders back "
             "(%s): it may count memory resident that is not",
             (unsigned long long)grant_seq, id, s->arb.placement->name, gmux_status_str(st));
}

void dmn_hold_unsent(dmn_srv_t *s, uint32_t id, uint64_t grant_seq)
{
    gmux_status_t st = dmn_arb_unsent(&s->arb, id, grant_seq);
    if (st != GMUX_OK)
        unsent_failed(s, id, grant_seq, st);
}

/* dmn_hold_poll of a held fill ahead: decisions go on. */
static bool poll_ahead(dmn_srv_t *s, uint64_t now, dmn_hold_send_t *send, dmn_arb_action_t *act)
{
    dmn_hold_t *h = &s->hold;
    /* not handed back (a void grant's hand-back takes it too) */
    bool mine = s->arb.ahead_held == h->act.grant_seq;
    bool there = mine && still_there(s, h->ahead_id);
    if (there) {
        h->expired |= prune(s, now);
        if (h->n_wait > 0)
            return true;
    }
    /* its requests not answered yet stay, as a void switch's; a fill ahead
     * whose task left is handed back unsent (send_ahead) */
    end_hold(h, now);
    if (h->expired && there) /* a task gone: handed back, not filled */
        COM_DEBUG(DAEMON, "grant %llu: evictions not reported within %llu ms: filled ahead anyway",
                  (unsigned long long)h->act.grant_seq,
                  (unsigned long long)(s->opts->evict_wait_ns / COM_NS_PER_MS));
    if (mine) { /* sent, or handed back when its task left (send_ahead) */
        dmn_arb_hold_ahead(&s->arb, 0);
        h->sending = true;
        *send = DMN_HOLD_SEND_AHEAD;
        *act = h->act;
    }
    return true;
}

bool dmn_hold_poll(dmn_srv_t *s, uint64_t now, dmn_hold_send_t *send, dmn_arb_action_t *act)
{
    dmn_hold_t *h = &s->hold;
    *send = DMN_HOLD_SEND_NONE;
    if (!h->active)
        return true;
    if (h->ahead_only)
        return poll_ahead(s, now, send, act);
    bool granted = still_granted(s);
    if (granted) {
        h->expired |= prune(s, now);
        if (h->n_wait > 0)
            return false;
    }
    /* A void grant (its task left or went idle): its requests stay, like a
     * superseded switch's: the evictions ordered may still be in flight, and
     * the next switch held waits for them, each until its own bound. */
    end_hold(h, now);
    h->sending = granted;
    *send = granted ? DMN_HOLD_SEND_SWITCH : DMN_HOLD_SEND_NONE;
    if (!granted) /* void: its orders and fill ahead never go */
        dmn_hold_unsent(s, h->grant_id, h->act.grant_seq);
    if (h->expired)
        COM_DEBUG(DAEMON, "grant %llu: evictions not reported within %llu ms: granted anyway",
                  (unsigned long long)h->act.grant_seq,
                  (unsigned long long)(s->opts->evict_wait_ns / COM_NS_PER_MS));
    if (granted) {
        *act = h->act;
        dmn_arb_restart_turn(&s->arb, h->act.grant, now);
    }
    return true;
}

bool dmn_hold_supersede(dmn_srv_t *s, uint64_t now)
{
    dmn_hold_t *h = &s->hold;
    if (!dmn_hold_blocks(h) || !still_granted(s) || !dmn_arb_preempted(&s->arb, h->act.grant))
        return false;
    gmux_status_t st = dmn_arb_withdraw(&s->arb, h->act.grant);
    end_hold(h, now);
    if (st != GMUX_OK)
        unsent_failed(s, h->grant_id, h->act.grant_seq, st);
    COM_DEBUG(DAEMON,
              "grant %llu to batch task %u withdrawn for a latency task; %u requests "
              "for evictions carried to the next switch",
              (unsigned long long)h->act.grant_seq, h->grant_id, h->n_wait);
    return true;
}

void dmn_hold_sent(dmn_hold_t *h, bool went)
{
    assert(h->sending && !h->active);
    h->sending = false;
    if (!went)
        return;
    h->waits++;
    h->timeouts += h->expired;
    h->wait_ns += h->held_ns;
    if (h->held_ns > h->max_ns)
        h->max_ns = h->held_ns;
}

uint64_t dmn_hold_deadline(const dmn_hold_t *h)
{
    return h->active ? h->until_ns : UINT64_MAX;
}

void dmn_hold_status(const dmn_hold_t *h, dmn_msg_status_t *head)
{
    head->evict_waits = h->waits;
    head->evict_timeouts = h->timeouts;
    head->evict_wait_ns = h->wait_ns;
    head->evict_wait_max_ns = h->max_ns;
}
