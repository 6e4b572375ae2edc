/* A switch held for its evictions (src/daemon/server_hold.c): a real server
 * in a forked child, with a placement that evicts the previous holder's
 * ranges, fills the incoming task's and fills the task expected next ahead;
 * the tasks are raw protocol clients of this test, so each message is seen
 * as it comes. At the switch from X to A, X gets its EVICT orders and the
 * empty EVICT PLAN that asks for EVICTED; A's FILL and GRANT and B's AHEAD
 * must wait until X answers for that grant (an answer for another grant
 * does not count), until X is gone, or until the bound; a switch that evicts
 * nothing waits for nothing, nor does one whose granted task left or went
 * idle meanwhile. In shared mode, a holder's evictions are kept until it
 * gives the turn back; the next switch with fills waits for them (the
 * test_shared_* tests). STATUS counts the waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/settings.h"
#include "daemon/endpoint.h"
#include "daemon/report.h"
#include "daemon/server.h"
#include "msg_io.h"
#include "tproc.h"
#include "tsrv.h"

static char dir[] = "/tmp/gmux-sh-XXXXXX";
static char path[128];
static pid_t server_pid;
static uint8_t buf[DMN_PROTO_MAX_MSG];

/* Evicts the previous holder's ranges, fills the incoming task's, and fills
 * the task marked for it ahead (its ranges); evict_none: no evictions;
 * evict_holders: the ranges of the tasks holding the turn beside the
 * incoming one (shared mode) instead of the previous holder's. */
static int evict_none, evict_holders;
static gmux_status_t plan_on_switch(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                                    const dmn_task_view_t *from, const dmn_task_view_t *to,
                                    dmn_plan_t *plan)
{
    (void)ctx;
    gmux_status_t st = GMUX_OK;
    if (from && from->id != to->id && !evict_none && !evict_holders)
        for (uint32_t i = 0; i < from->n_ranges && st == GMUX_OK; i++)
            st = dmn_plan_add(plan, from->id, DMN_PLAN_EVICT, from->ranges[i]);
    for (size_t k = 0; evict_holders && k < n_tasks && st == GMUX_OK; k++)
        for (uint32_t i = 0;
             tasks[k].turn == 0 && tasks[k].id != to->id && i < tasks[k].n_ranges && st == GMUX_OK;
             i++)
            st = dmn_plan_add(plan, tasks[k].id, DMN_PLAN_EVICT, tasks[k].ranges[i]);
    for (uint32_t i = 0; i < to->n_ranges && st == GMUX_OK; i++)
        st = dmn_plan_add(plan, to->id, DMN_PLAN_FILL, to->ranges[i]);
    for (size_t k = 0; k < n_tasks && st == GMUX_OK; k++)
        for (uint32_t i = 0; tasks[k].ahead && i < tasks[k].n_ranges && st == GMUX_OK; i++)
            st = dmn_plan_add(plan, tasks[k].id, DMN_PLAN_AHEAD, tasks[k].ranges[i]);
    return st;
}

static const dmn_placement_t placement = {"hold", NULL, plan_on_switch};

static int share_off(dmn_server_opts_t *o, void *arg)
{
    (void)o, (void)arg;
    char err[64];
    return com_settings_set(COM_SETTING_DAEMON_SHARE, "0", err, sizeof(err)) != GMUX_OK;
}

/* Shared mode: a capacity that every footprint here fits in many times. */
static int share_on(dmn_server_opts_t *o, void *arg)
{
    (void)o, (void)arg;
    char err[64];
    return com_settings_set(COM_SETTING_DAEMON_CAPACITY, "1G", err, sizeof(err)) != GMUX_OK;
}

/* A server child waiting at most wait_ms for evictions; quantum 20 ms, grace
 * grace_ns; time slices, or shared mode with shared set (and evict_holders). */
static uint64_t grace_ns = COM_NS_PER_S * 60;
static void start_mode(int wait_ms, int shared)
{
    dmn_server_opts_t o = {path,
                           DMN_NO_GROUP,
                           20 * COM_NS_PER_MS,
                           grace_ns,
                           &placement,
                           0,
                           0,
                           (uint64_t)wait_ms * COM_NS_PER_MS,
                           0};
    evict_holders = shared;
    tsrv_start(&o, shared ? share_on : share_off, NULL, &server_pid);
    evict_holders = 0;
}

static void start_server(int wait_ms)
{
    start_mode(wait_ms, 0);
}

static int teardown(void **state)
{
    (void)state;
    tproc_kill_reap(&server_pid);
    return 0;
}

/* A registered raw client of class cls, priority prio and budget (reads
 * time out after 10 s). */
static int raw_client_of(const char *name, uint32_t cls, int32_t prio, uint64_t budget)
{
    int fd = -1;
    assert_int_equal(dmn_endpoint_connect(path, &fd), GMUX_OK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    dmn_msg_register_t r = {(uint32_t)getpid(), cls, prio, 0, budget, {0}};
    snprintf(r.name, sizeof(r.name), "%s", name);
    assert_int_equal(tmsg_write_all(fd, buf, dmn_proto_encode_register(buf, sizeof(buf), 1, &r)),
                     0);
    dmn_msg_t m;
    assert_int_equal(tmsg_read(fd, buf, &m), 0);
    assert_int_equal(m.hdr.type, DMN_MSG_REGISTERED);
    return fd;
}

static int raw_client(const char *name)
{
    return raw_client_of(name, DMN_CLASS_BATCH, 0, 0);
}

static void send_pending(int fd, uint64_t request, dmn_range_t ws)
{
    assert_int_equal(tmsg_write_all(fd, buf,
                                    dmn_proto_encode_ranges(buf, sizeof(buf), 2, DMN_MSG_PENDING, 1,
                                                            request, &ws, 1)),
                     0);
}

static void send_simple(int fd, dmn_msg_type_t type)
{
    assert_int_equal(tmsg_write_all(fd, buf, dmn_proto_encode_empty(buf, sizeof(buf), 3, type)), 0);
}

static void send_evicted(int fd, uint64_t grant)
{
    dmn_msg_evicted_t e = {grant, 0, 0};
    assert_int_equal(tmsg_write_all(fd, buf, dmn_proto_encode_evicted(buf, sizeof(buf), 4, &e)), 0);
}

/* Reads until a message of type (a PLAN of kind `kind` when type is PLAN);
 * counts the PLAN ranges of each kind it passes in plans[]. */
static void read_until(int fd, dmn_msg_type_t type, int kind, dmn_msg_t *m, int *plans)
{
    for (;;) {
        assert_int_equal(tmsg_read(fd, buf, m), 0);
        if (m->hdr.type == DMN_MSG_PLAN && plans)
            plans[m->u.ranges.count] += (int)m->u.ranges.n_ranges;
        if (m->hdr.type == type && (type != DMN_MSG_PLAN || (int)m->u.ranges.count == kind))
            return;
    }
}

/* Whether nothing waits to be read on fd, once the daemon answered a QUERY
 * sent after (so anything it sent with that switch has been written). */
static int nothing_for(int fd, dmn_report_t *rep)
{
    assert_int_equal(dmn_report_fetch(path, rep, 10000), GMUX_OK);
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, 0) == 0)
        return 1;
    dmn_msg_t m;
    if (tmsg_read(fd, buf, &m) == 0)
        print_message("unexpected %s (count %u)\n", dmn_msg_type_name(m.hdr.type),
                      m.u.ranges.count);
    return 0;
}

/* Reads fd's EVICT PLANs up to the empty one that asks for EVICTED (into
 * *m), counting the ranges of each kind it passes in plans[] as read_until. */
static void read_evictions(int fd, dmn_msg_t *m, int *plans)
{
    do
        read_until(fd, DMN_MSG_PLAN, DMN_PLAN_EVICT, m, plans);
    while (m->u.ranges.n_ranges != 0);
}

/* The next message on x is its fill ahead (a PLAN AHEAD), and nothing comes
 * after it; no switch waited for evictions. */
static void ahead_then_nothing(int x)
{
    dmn_msg_t m;
    assert_int_equal(tmsg_read(x, buf, &m), 0);
    assert_int_equal(m.hdr.type, DMN_MSG_PLAN);
    assert_int_equal(m.u.ranges.count, DMN_PLAN_AHEAD);
    dmn_report_t rep;
    assert_true(nothing_for(x, &rep));
    assert_int_equal(rep.evict_waits, 0);
}

static const dmn_range_t ws_x = {0x10000, 0x1000}, ws_a = {0x20000, 0x2000},
                         ws_b = {0x30000, 0x3000}, ws_l = {0x40000, 0x4000};

/* X holds the turn, A (and B) wait, X's quantum ends and it releases. */
static void x_released(int x, int a, int b)
{
    dmn_msg_t m;
    send_pending(x, 1, ws_x);
    read_until(x, DMN_MSG_GRANT, 0, &m, NULL);
    send_pending(a, 1, ws_a);
    if (b >= 0)
        send_pending(b, 1, ws_b);
    read_until(x, DMN_MSG_REVOKE, 0, &m, NULL);
    send_simple(x, DMN_MSG_RELEASE);
}

/* A server waiting at most wait_ms for evictions; X, A (and B when b is not
 * NULL) registered; X holds the turn, A and B wait, X's quantum ends and it
 * releases: the switch to A evicts X's working set. Returns its grant (2),
 * marked on X's empty EVICT PLAN. */
static uint64_t switched_x_to_a(int wait_ms, int *x, int *a, int *b)
{
    start_server(wait_ms);
    *x = raw_client("x"), *a = raw_client("a");
    if (b)
        *b = raw_client("b");
    dmn_msg_t m;
    x_released(*x, *a, b ? *b : -1);
    int plans[3] = {0};
    read_evictions(*x, &m, plans);
    assert_int_equal(plans[DMN_PLAN_EVICT], 1);
    assert_int_equal(m.u.ranges.seq, 2);
    return m.u.ranges.seq;
}

/* A reporting evictee: A's GRANT and B's fill ahead follow X's EVICTED for
 * grant 2, never come before it (nor on an EVICTED for another grant). */
static void test_grant_follows_report(void **state)
{
    (void)state;
    int x, a, b;
    uint64_t g = switched_x_to_a(60000, &x, &a, &b);
    dmn_report_t rep;
    assert_true(nothing_for(a, &rep));
    assert_true(nothing_for(b, &rep));
    send_evicted(x, 1); /* another grant's: does not count */
    assert_true(nothing_for(a, &rep));
    assert_int_equal(rep.evict_waits, 0);
    send_evicted(x, g);
    dmn_msg_t m;
    int plans[3] = {0};
    read_until(a, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, g);
    assert_int_equal(plans[DMN_PLAN_FILL], 1);
    plans[DMN_PLAN_AHEAD] = 0;
    read_until(b, DMN_MSG_PLAN, DMN_PLAN_AHEAD, &m, plans);
    assert_int_equal(m.u.ranges.seq, g);
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    assert_int_equal(rep.evict_waits, 1);
    assert_int_equal(rep.evict_timeouts, 0);
    assert_true(rep.evict_wait_max_ns > 0);
    assert_true(rep.evict_wait_ns >= rep.evict_wait_max_ns);
    close(x), close(a), close(b);
    tsrv_stop(&server_pid);
}

/* A silent evictee: the grant goes once the bound passed, counted as given up. */
static void test_silent_evictee_bound(void **state)
{
    (void)state;
    int x, a;
    uint64_t g = switched_x_to_a(300, &x, &a, NULL);
    dmn_msg_t m;
    read_until(a, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, g);
    dmn_report_t rep;
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    assert_int_equal(rep.evict_waits, 1);
    assert_int_equal(rep.evict_timeouts, 1);
    assert_true(rep.evict_wait_max_ns >= 300 * COM_NS_PER_MS);
    close(x), close(a);
    tsrv_stop(&server_pid);
}

/* An evictee that hangs up (dies): nothing to wait for, the grant goes at
 * once (the bound is a minute, the read below gives up after 10 s). */
static void test_gone_evictee_no_wait(void **state)
{
    (void)state;
    int x, a;
    uint64_t g = switched_x_to_a(60000, &x, &a, NULL);
    dmn_report_t rep;
    assert_true(nothing_for(a, &rep));
    close(x);
    dmn_msg_t m;
    read_until(a, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, g);
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    assert_int_equal(rep.evict_waits, 1);
    assert_int_equal(rep.evict_timeouts, 0);
    close(a);
    tsrv_stop(&server_pid);
}

/* The granted task hangs up (dies) while its grant is held: nothing is left
 * to send it, so the switch is over at once and B, waiting, gets the turn
 * (its switch evicts nothing: A's memory went with it), though X never
 * answered. The hold used to wait for X until the bound (a minute here; the
 * read below gives up after 10 s): a dead task's turn was reclaimed only
 * then. */
static void test_gone_grantee_no_wait(void **state)
{
    (void)state;
    int x, a, b;
    uint64_t g = switched_x_to_a(60000, &x, &a, &b);
    dmn_report_t rep;
    assert_true(nothing_for(b, &rep));
    close(a);
    dmn_msg_t m;
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, g + 1);
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    assert_int_equal(rep.evict_waits, 1);
    assert_int_equal(rep.evict_timeouts, 0);
    assert_int_equal(rep.reclaimed, 1);
    close(x), close(b);
    tsrv_stop(&server_pid);
}

/* The granted task goes idle before its GRANT went (its queue ran dry): the
 * held grant is void, the switch is over at once, and the next one, to B,
 * evicts A's memory and waits for A's EVICTED only (X never answered). */
static void test_idle_grantee_no_wait(void **state)
{
    (void)state;
    int x, a, b;
    uint64_t g = switched_x_to_a(60000, &x, &a, &b);
    dmn_report_t rep;
    assert_true(nothing_for(b, &rep));
    send_simple(a, DMN_MSG_IDLE);
    dmn_msg_t m;
    read_evictions(a, &m, NULL); /* A's, for B's grant */
    assert_int_equal(m.u.ranges.seq, g + 1);
    send_evicted(a, g + 1);
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, g + 1);
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    assert_int_equal(rep.evict_waits, 2);
    assert_int_equal(rep.evict_timeouts, 0);
    close(x), close(a), close(b);
    tsrv_stop(&server_pid);
}

/* A latency task that starts waiting while the switch to A, a batch task,
 * is held: A's grant (2) is withdrawn, never sent, and L's switch (3) made
 * at once (X, evicted again, asked for 3); L's FILL and GRANT wait for X's
 * answers for both switches. A gets no GRANT nor REVOKE, only its fill
 * ahead, and its turn after L. L used to wait for X's answer to 2 or the
 * bound (a minute: the read gives up after 10 s), then for A to release. */
static void test_latency_supersedes_held(void **state)
{
    (void)state;
    int x, a;
    uint64_t g = switched_x_to_a(60000, &x, &a, NULL);
    int l = raw_client_of("l", DMN_CLASS_LATENCY, 0, 0);
    send_pending(l, 1, ws_l);
    dmn_msg_t m;
    int plans[3] = {0};
    read_evictions(x, &m, plans);
    assert_int_equal(plans[DMN_PLAN_EVICT], 1);
    assert_int_equal(m.u.ranges.seq, g + 1);
    dmn_report_t rep;
    assert_true(nothing_for(l, &rep));
    send_evicted(x, g + 1);
    assert_true(nothing_for(l, &rep)); /* X's evictions for A's switch may be in flight */
    assert_true(nothing_for(a, &rep));
    send_evicted(x, g);
    plans[DMN_PLAN_FILL] = 0;
    read_until(l, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, g + 1);
    assert_int_equal(plans[DMN_PLAN_FILL], 1);
    assert_int_equal(tmsg_read(a, buf, &m), 0); /* A: its fill ahead, for L's switch */
    assert_int_equal(m.hdr.type, DMN_MSG_PLAN);
    assert_int_equal(m.u.ranges.count, DMN_PLAN_AHEAD);
    assert_int_equal(m.u.ranges.seq, g + 1);
    assert_true(nothing_for(a, &rep));
    assert_int_equal(rep.evict_waits, 2);
    assert_int_equal(rep.evict_timeouts, 0);
    send_simple(l, DMN_MSG_IDLE);
    read_evictions(l, &m, NULL);
    send_evicted(l, g + 2);
    read_until(a, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, g + 2);
    close(x), close(a), close(l);
    tsrv_stop(&server_pid);
}

/* A switch that evicts nothing: no empty EVICT PLAN, the grant at once. */
static void test_no_eviction_no_wait(void **state)
{
    (void)state;
    evict_none = 1;
    start_server(60000);
    evict_none = 0;
    int x = raw_client("x"), a = raw_client("a");
    dmn_msg_t m;
    x_released(x, a, -1);
    read_until(a, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 2);
    ahead_then_nothing(x); /* X, expected next: its fill ahead only */
    close(x), close(a);
    tsrv_stop(&server_pid);
}

/* A bound of 0: evictions are sent, nothing is asked for, nothing waits. */
static void test_wait_off(void **state)
{
    (void)state;
    start_server(0);
    int x = raw_client("x"), a = raw_client("a");
    dmn_msg_t m;
    x_released(x, a, -1);
    read_until(a, DMN_MSG_GRANT, 0, &m, NULL);
    read_until(x, DMN_MSG_PLAN, DMN_PLAN_EVICT, &m, NULL);
    assert_int_equal(m.u.ranges.n_ranges, 1);
    ahead_then_nothing(x); /* no empty EVICT PLAN after it */
    close(x), close(a);
    tsrv_stop(&server_pid);
}

/* Waits (at most 1,000 STATUS queries) until the daemon shows the task
 * named name in state. */
static void until_state(const char *name, uint32_t state)
{
    dmn_report_t rep;
    for (int k = 0; k < 1000; k++) {
        assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
        for (uint32_t i = 0; i < rep.n_tasks; i++)
            if (strcmp(rep.tasks[i].name, name) == 0 && rep.tasks[i].state == state)
                return;
        usleep(1000);
    }
    fail_msg("task %s never in state %u", name, state);
}

/* Shared mode, evicting the holders beside the incoming task: X is granted
 * (1), A beside it (2: X, holding, gets its EVICT orders and is not asked
 * for EVICTED: it keeps them), then X gives the turn back (IDLE), and B asks
 * for it: the switch to B (3) fills B's working set and evicts A, holding. */
static void shared_x_gave_back(int wait_ms, int *x, int *a, int *b)
{
    start_mode(wait_ms, 1);
    *x = raw_client("x"), *a = raw_client("a"), *b = raw_client("b");
    dmn_msg_t m;
    send_pending(*x, 1, ws_x);
    read_until(*x, DMN_MSG_GRANT, 0, &m, NULL);
    send_pending(*a, 1, ws_a);
    read_until(*a, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 2);
    read_until(*x, DMN_MSG_PLAN, DMN_PLAN_EVICT, &m, NULL);
    assert_int_equal(m.u.ranges.n_ranges, 1);
    assert_int_equal(m.u.ranges.seq, 2);
    dmn_report_t rep;
    assert_true(nothing_for(*x, &rep)); /* a holder is not asked */
    assert_int_equal(rep.mode, DMN_MODE_SHARED);
    assert_int_equal(rep.evict_waits, 0);
    send_simple(*x, DMN_MSG_IDLE);
    until_state("x", DMN_STATE_IDLE);
    send_pending(*b, 1, ws_b);
}

/* A holder that gave the turn back with its evictions kept: the next switch
 * that fills (B's) asks it for EVICTED and holds B's FILL and GRANT until it
 * answered for that grant (an answer for another does not count). Until
 * 2026-12-02 B's GRANT went at once, X was asked nothing, and B's fills could
 * overlap the evictions X carried out as it gave the turn back. Once X
 * answered, a later switch does not ask it again; A, evicted as a holder at
 * B's switch and granted again after it went idle, is asked before its own
 * GRANT (it might hold the turn at the next switch, and could not answer). */
static void test_shared_giveback_held(void **state)
{
    (void)state;
    int x, a, b;
    shared_x_gave_back(60000, &x, &a, &b);
    /* X is asked first; B gets nothing (its FILL and GRANT came at once) */
    struct pollfd pf[2] = {{x, POLLIN, 0}, {b, POLLIN, 0}};
    assert_int_equal(poll(pf, 2, 10000), 1);
    assert_true(pf[0].revents & POLLIN);
    dmn_msg_t m;
    read_evictions(x, &m, NULL);
    assert_int_equal(m.u.ranges.seq, 3);
    dmn_report_t rep;
    assert_true(nothing_for(b, &rep));
    send_evicted(x, 2); /* another grant's: does not count */
    assert_true(nothing_for(b, &rep));
    send_evicted(x, 3);
    int plans[3] = {0};
    read_until(b, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, 3);
    assert_int_equal(plans[DMN_PLAN_FILL], 1);
    read_until(a, DMN_MSG_PLAN, DMN_PLAN_EVICT, &m, NULL); /* A holds: kept */
    assert_int_equal(m.u.ranges.n_ranges, 1);
    assert_true(nothing_for(a, &rep));
    assert_int_equal(rep.evict_waits, 1);
    send_simple(a, DMN_MSG_IDLE);
    until_state("a", DMN_STATE_IDLE);
    send_pending(a, 2, ws_a);
    read_evictions(a, &m, NULL); /* asked as it is granted (4) */
    assert_int_equal(m.u.ranges.seq, 4);
    assert_true(nothing_for(a, &rep));
    send_evicted(a, 4);
    read_until(a, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 4);
    assert_true(nothing_for(x, &rep)); /* answered already: not asked again */
    assert_int_equal(rep.evict_waits, 2);
    assert_int_equal(rep.evict_timeouts, 0);
    close(x), close(a), close(b);
    tsrv_stop(&server_pid);
}

/* B, idle after the switch that asked X (3), asks again: its switch (4)
 * neither asks X nor holds (one hold in all, the first). */
static void b_again_unheld(int x, int b)
{
    dmn_msg_t m;
    dmn_report_t rep;
    send_pending(b, 2, ws_b);
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 4);
    assert_true(nothing_for(x, &rep));
    assert_int_equal(rep.evict_waits, 1);
}

/* A holder that gave the turn back and stays silent: B's GRANT goes at the
 * bound, counted as given up, and X is not asked again at the next switch. */
static void test_shared_giveback_bound(void **state)
{
    (void)state;
    int x, a, b;
    shared_x_gave_back(300, &x, &a, &b);
    dmn_msg_t m;
    read_evictions(x, &m, NULL);
    assert_int_equal(m.u.ranges.seq, 3);
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 3);
    dmn_report_t rep;
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    assert_int_equal(rep.evict_waits, 1);
    assert_int_equal(rep.evict_timeouts, 1);
    send_simple(b, DMN_MSG_IDLE);
    until_state("b", DMN_STATE_IDLE);
    b_again_unheld(x, b); /* X no longer counted after the bound */
    close(x), close(a), close(b);
    tsrv_stop(&server_pid);
}

/* A holder that hangs up after giving the turn back is not waited for. */
static void test_shared_giveback_gone(void **state)
{
    (void)state;
    int x, a, b;
    shared_x_gave_back(60000, &x, &a, &b);
    close(x);
    dmn_msg_t m;
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 3);
    dmn_report_t rep;
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    assert_int_equal(rep.evict_timeouts, 0);
    close(a), close(b);
    tsrv_stop(&server_pid);
}

/* A holder that gave the turn back answers after the switch that asked it
 * ended early (B, its grantee, went idle before its GRANT went): the answer
 * is for that request all the same, so when B asks again, its switch (4)
 * neither asks X nor waits for it. The late EVICTED used to be dropped: X
 * was asked again and B's GRANT waited for it (a minute here; the read
 * below gives up after 10 s). */
static void test_shared_late_answer_counts(void **state)
{
    (void)state;
    int x, a, b;
    shared_x_gave_back(60000, &x, &a, &b);
    dmn_msg_t m;
    read_evictions(x, &m, NULL);
    assert_int_equal(m.u.ranges.seq, 3);
    send_simple(b, DMN_MSG_IDLE);
    until_state("b", DMN_STATE_IDLE); /* the hold ended: B's grant is void */
    send_evicted(x, 3);
    dmn_report_t rep;
    assert_true(nothing_for(b, &rep)); /* read: X's answer came before B asks */
    b_again_unheld(x, b);
    close(x), close(a), close(b);
    tsrv_stop(&server_pid);
}

/* Shared mode: X holds (1), A (priority 1) beside it (2), X keeps its
 * evictions; O's budget brings slices back: A keeps the turn, X, stuck, loses
 * it after the grace. B (priority 2) is granted (3) once A went idle: X, its
 * shim still holding the turn, is not asked (it was: B waited for the bound,
 * the read gives up after 10 s); released, its next grant (4) waits for it. */
static void test_taken_not_asked(void **state)
{
    (void)state;
    grace_ns = 50 * COM_NS_PER_MS;
    start_mode(60000, 1);
    grace_ns = COM_NS_PER_S * 60;
    int x = raw_client("x"), a = raw_client_of("a", DMN_CLASS_BATCH, 1, 0);
    int b = raw_client_of("b", DMN_CLASS_BATCH, 2, 0);
    dmn_msg_t m;
    send_pending(x, 1, ws_x);
    read_until(x, DMN_MSG_GRANT, 0, &m, NULL);
    send_pending(a, 1, ws_a);
    read_until(a, DMN_MSG_GRANT, 0, &m, NULL);
    int o = raw_client_of("o", DMN_CLASS_BATCH, 0, 1ull << 40);
    read_until(x, DMN_MSG_REVOKE, 0, &m, NULL);
    until_state("x", DMN_STATE_PENDING); /* taken */
    send_pending(b, 1, ws_b);
    read_until(a, DMN_MSG_REVOKE, 0, &m, NULL);
    send_simple(a, DMN_MSG_IDLE);
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 3);
    read_until(x, DMN_MSG_PLAN, DMN_PLAN_EVICT, &m, NULL);
    assert_int_equal(m.u.ranges.n_ranges, 1); /* its orders, no request */
    dmn_report_t rep;
    assert_true(nothing_for(x, &rep));
    send_simple(x, DMN_MSG_RELEASE);
    send_simple(b, DMN_MSG_IDLE);
    read_evictions(x, &m, NULL);
    assert_int_equal(m.u.ranges.seq, 4);
    send_evicted(x, 4);
    read_until(x, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 4);
    close(x), close(a), close(b), close(o);
    tsrv_stop(&server_pid);
}

/* GMUX_DAEMON_EVICT_WAIT_MS: the default, a value, 0, and out of range. */
static void test_setting(void **state)
{
    (void)state;
    char err[64], pbuf[128];
    dmn_server_opts_t o;
    assert_int_equal(dmn_server_opts_from_settings(&o, pbuf, sizeof(pbuf), 0), GMUX_OK);
    assert_int_equal(o.evict_wait_ns, 500 * COM_NS_PER_MS);
    const char *vals[] = {"250", "0", "-1", "3600000"};
    const gmux_status_t want[] = {GMUX_OK, GMUX_OK, GMUX_ERR_RANGE, GMUX_ERR_RANGE};
    const uint64_t ns[] = {250 * COM_NS_PER_MS, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(
            com_settings_set(COM_SETTING_DAEMON_EVICT_WAIT_MS, vals[i], err, sizeof(err)), GMUX_OK);
        assert_int_equal(dmn_server_opts_from_settings(&o, pbuf, sizeof(pbuf), 0), want[i]);
        if (want[i] == GMUX_OK)
            assert_int_equal(o.evict_wait_ns, ns[i]);
    }
    assert_int_equal(com_settings_set(COM_SETTING_DAEMON_EVICT_WAIT_MS, "500", err, sizeof(err)),
                     GMUX_OK);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof(path), "%s/gmuxd.sock", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_grant_follows_report, teardown),
        cmocka_unit_test_teardown(test_silent_evictee_bound, teardown),
        cmocka_unit_test_teardown(test_gone_evictee_no_wait, teardown),
        cmocka_unit_test_teardown(test_gone_grantee_no_wait, teardown),
        cmocka_unit_test_teardown(test_idle_grantee_no_wait, teardown),
        cmocka_unit_test_teardown(test_latency_supersedes_held, teardown),
        cmocka_unit_test_teardown(test_no_eviction_no_wait, teardown),
        cmocka_unit_test_teardown(test_wait_off, teardown),
        cmocka_unit_test_teardown(test_shared_giveback_held, teardown),
        cmocka_unit_test_teardown(test_shared_giveback_bound, teardown),
        cmocka_unit_test_teardown(test_shared_giveback_gone, teardown),
        cmocka_unit_test_teardown(test_shared_late_answer_counts, teardown),
        cmocka_unit_test_teardown(test_taken_not_asked, teardown),
        cmocka_unit_test(test_setting),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char lock[160];
    snprintf(lock, sizeof(lock), "%s.lock", path);
    unlink(path);
    unlink(lock);
    rmdir(dir);
    return rc;
}
