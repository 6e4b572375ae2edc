/* A switch held until its evictions are done; see server_hold.h. */
#include "daemon/server_hold.h"

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

bool dmn_hold_begin(dmn_srv_t *s, const dmn_arb_action_t *act, uint64_t now)
{
    dmn_hold_t *h = &s->hold;
    if (s->opts->evict_wait_ns == 0 || act->grant < 0 || !act->plan || act->plan->n == 0)
        return false;
    h->n_wait = 0;
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++) {
        const dmn_task_t *t = &s->arb.tasks[i];
        /* a holder (shared mode) carries its evictions out at its next grant only */
        if (i == act->grant || !t->used || s->conn_of_slot[i] < 0 ||
            t->state == DMN_STATE_RUNNING || t->state == DMN_STATE_REVOKED ||
            !plan_evicts(act->plan, t->id))
            continue;
        uint32_t id = t->id;
        dmn_conn_t *c = &s->conns[s->conn_of_slot[i]];
        size_t len = dmn_proto_encode_ranges(s->out, sizeof(s->out), ++s->seq, DMN_MSG_PLAN,
                                             DMN_PLAN_EVICT, act->grant_seq, NULL, 0);
        if (dmn_conn_send(s, c, len) == 0) /* else dropped: nothing to wait for */
            h->wait_id[h->n_wait++] = id;
    }
    if (h->n_wait == 0)
        return false;
    h->active = true;
    h->act = *act;
    h->grant_id = s->arb.tasks[act->grant].id;
    h->since_ns = now;
    h->until_ns = now + s->opts->evict_wait_ns;
    COM_DEBUG(DAEMON, "grant %llu to task %u waits for %u tasks' evictions",
              (unsigned long long)act->grant_seq, h->grant_id, h->n_wait);
    return true;
}

void dmn_hold_evicted(dmn_srv_t *s, int slot, uint64_t grant_seq, uint32_t failed)
{
    dmn_hold_t *h = &s->hold;
    if (!h->active || grant_seq != h->act.grant_seq) /* late: a switch that went on already */
        return;
    if (failed)
        COM_DEBUG(DAEMON,
                  "grant %llu: task %u could not carry out %u evictions now: not waited for",
                  (unsigned long long)grant_seq, s->arb.tasks[slot].id, failed);
    for (uint32_t k = 0; k < h->n_wait; k++)
        if (h->wait_id[k] == s->arb.tasks[slot].id)
            h->wait_id[k] = 0;
}

/* Whether task id is still there to answer. */
static bool still_there(const dmn_srv_t *s, uint32_t id)
{
    for (int i = 0; i < DMN_ARB_MAX_TASKS; i++)
        if (s->arb.tasks[i].used && s->arb.tasks[i].id == id)
            return s->conn_of_slot[i] >= 0;
    return false;
}

bool dmn_hold_poll(dmn_srv_t *s, uint64_t now, bool *send, dmn_arb_action_t *act)
{
    dmn_hold_t *h = &s->hold;
    *send = false;
    if (!h->active)
        return true;
    /* the grant is still the granted task's to send: it did not leave, go
     * idle or give the turn back meanwhile */
    int g = h->act.grant;
    const dmn_task_t *t = &s->arb.tasks[g];
    bool granted = t->used && t->id == h->grant_id && t->grant_seq == h->act.grant_seq &&
                   t->state == DMN_STATE_RUNNING && s->conn_of_slot[g] >= 0;
    bool waiting = false;
    for (uint32_t k = 0; granted && k < h->n_wait; k++) {
        if (h->wait_id[k] && !still_there(s, h->wait_id[k]))
            h->wait_id[k] = 0; /* died or hung up: its memory went with it */
        waiting |= h->wait_id[k] != 0;
    }
    bool timed_out = waiting && now >= h->until_ns;
    if (waiting && !timed_out)
        return false;
    h->active = false;
    uint64_t held = now - h->since_ns;
    h->waits++;
    h->timeouts += timed_out;
    h->wait_ns += held;
    if (held > h->max_ns)
        h->max_ns = held;
    *send = granted;
    if (timed_out)
        COM_DEBUG(DAEMON, "grant %llu: evictions not reported within %llu ms: granted anyway",
                  (unsigned long long)h->act.grant_seq,
                  (unsigned long long)(s->opts->evict_wait_ns / COM_NS_PER_MS));
    if (*send) {
        *act = h->act;
        dmn_arb_restart_turn(&s->arb, g, now);
    }
    return true;
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
