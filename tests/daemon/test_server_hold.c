/* A switch held for its evictions (src/daemon/server_hold.c), with the
 * helpers of thold.h. At the switch from X to A, X gets its EVICT orders and
 * the empty EVICT PLAN that asks for EVICTED; A's FILL and GRANT and B's
 * AHEAD must wait until X answers for that grant (an answer for another
 * grant does not count), until X is gone, or until the bound; a switch that
 * evicts nothing waits for nothing. In shared mode, a holder's evictions are
 * kept until it gives the turn back; the next switch with fills waits for
 * them (the test_shared_* tests). STATUS counts the waits. Holds that end
 * early or are superseded: test_server_hold_ends.c. The first six tests
 * run with the real placements too (thold_main; where their plans differ,
 * thold_rec() says); the others follow the recording placement's plans (no
 * eviction, a fill ahead, holders evicted as slices come back, a query while a
 * switch is held). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <poll.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/settings.h"
#include "daemon/server.h"
#include "msg_io.h"
#include "thold.h"
#include "tsrv.h"

/* A reporting evictee: A's GRANT and B's fill ahead follow X's EVICTED for
 * grant 2, never come before it (nor on an EVICTED for another grant). The
 * real placements leave no room for B's fill ahead. */
static void test_grant_follows_report(void **state)
{
    (void)state;
    int x, a, b;
    uint64_t g = switched_x_to_a(60000, &x, &a, &b);
    dmn_report_t rep;
    assert_true(nothing_for(a, &rep));
    /* granted, but not told: held, not running (until 2026-12-03 running) */
    assert_int_equal(state_in(&rep, "a"), DMN_STATE_HELD);
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
    if (thold_rec()) {
        read_until(b, DMN_MSG_PLAN, DMN_PLAN_AHEAD, &m, NULL);
        assert_int_equal(m.u.ranges.seq, g);
    }
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    assert_int_equal(state_in(&rep, "a"), DMN_STATE_RUNNING); /* its GRANT went */
    assert_int_equal(rep.ahead_bytes, thold_rec() ? ws_b.len : 0);
    holds_are(&rep, 1, 0);
    assert_true(rep.evict_wait_max_ns > 0);
    assert_true(rep.evict_wait_ns >= rep.evict_wait_max_ns);
    thold_end((int[]){x, a, b}, 3);
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
    holds_are(&rep, 1, 1);
    assert_true(rep.evict_wait_max_ns >= 300 * COM_NS_PER_MS);
    thold_end((int[]){x, a}, 2);
}

/* An evictee that hangs up (dies): nothing to wait for, the grant goes at
 * once (the bound is a minute, the read below gives up after 10 s). X was
 * the task expected next: its fill ahead, never sent, is handed back to
 * the placement, and STATUS does not count it (thold_end: until 2026-12-02
 * it counted 0x1000 bytes filled ahead that no task read). */
static void test_gone_evictee_no_wait(void **state)
{
    (void)state;
    int x, a;
    uint64_t g = switched_x_to_a(60000, &x, &a, NULL);
    dmn_report_t rep;
    assert_true(nothing_for(a, &rep));
    thold_gone(x);
    dmn_msg_t m;
    read_until(a, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, g);
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    holds_are(&rep, 1, 0);
    const dmn_plan_entry_t back[] = {{1, DMN_PLAN_AHEAD, ws_x}};
    handed_back(back, thold_rec()); /* the real ones: no room for it */
    thold_end((int[]){a}, 1);
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
    thold_end((int[]){x, a}, 2);
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
    thold_end((int[]){x, a}, 2);
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
    holds_are(&rep, 2, 0);
    thold_end((int[]){x, a, b}, 3);
}

/* A holder that gave the turn back and stays silent: B's GRANT goes at the
 * bound, counted as given up, and X is not asked again at the next switch. */
static void test_shared_giveback_bound(void **state)
{
    (void)state;
    int x, a, b;
    shared_x_asked(300, &x, &a, &b);
    dmn_msg_t m;
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 3);
    dmn_report_t rep;
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    holds_are(&rep, 1, 1);
    send_simple(b, DMN_MSG_IDLE);
    until_state("b", DMN_STATE_IDLE);
    b_again_unheld(x, b, 1); /* X no longer counted after the bound */
    thold_end((int[]){x, a, b}, 3);
}

/* A holder that hangs up after giving the turn back is not waited for. */
static void test_shared_giveback_gone(void **state)
{
    (void)state;
    int x, a, b;
    shared_x_gave_back(60000, &x, &a, &b);
    thold_gone(x);
    dmn_msg_t m;
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 3);
    dmn_report_t rep;
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    assert_int_equal(rep.evict_timeouts, 0);
    thold_end((int[]){a, b}, 2);
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
    thold_end((int[]){x, a, b, o}, 4);
}

static void send_stats(int fd, uint64_t total)
{
    dmn_msg_stats_t st = {0, total, 0, 0, 0, 0, 0};
    assert_int_equal(tmsg_write_all(fd, buf, dmn_proto_encode_stats(buf, sizeof(buf), 5, &st)), 0);
}

/* Queries STATUS until its footprint is at least (over) or below (!over)
 * bytes; *rep the last. */
static void until_footprint(int over, uint64_t bytes, dmn_report_t *rep)
{
    for (int k = 0; k < 1000; k++) {
        assert_int_equal(dmn_report_fetch(path, rep, 10000), GMUX_OK);
        if ((rep->footprint >= bytes) == over)
            return;
        usleep(1000);
    }
    fail_msg("footprint never %s %llu", over ? "reached" : "below", (unsigned long long)bytes);
}

/* A STATUS query changes nothing of the scheduling. Shared mode (capacity
 * 1 GiB: left above 90%, entered at or below 85%), B's switch (3) held for
 * X's answer, so no decision is taken meanwhile; A, holding, reports 1 GiB
 * allocated, queries read the footprints over the line, then A reports
 * 900 MiB (between the lines, where a mode stays as it is). No decision saw
 * the footprints over the line: once X answered, B's GRANT goes, the mode
 * is still shared and neither A nor B is revoked. Until 2026-12-03 a query
 * brought the mode up to date itself: the first that read 1 GiB switched
 * the daemon to slices (a mode change), which 900 MiB did not undo, so B
 * was revoked as soon as granted. */
static void test_query_keeps_mode(void **state)
{
    (void)state;
    int x, a, b;
    shared_x_asked(60000, &x, &a, &b);
    dmn_report_t rep;
    send_stats(a, 1ull << 30);
    until_footprint(1, 1ull << 30, &rep);
    assert_int_equal(rep.mode, DMN_MODE_SHARED); /* the mode in force: not decided yet */
    assert_int_equal(rep.mode_changes, 1);
    send_stats(a, 900ull << 20);
    until_footprint(0, 1ull << 30, &rep);
    assert_int_equal(rep.mode, DMN_MODE_SHARED);
    assert_int_equal(rep.mode_changes, 1);
    assert_int_equal(state_in(&rep, "b"), DMN_STATE_HELD);
    send_evicted(x, 3);
    dmn_msg_t m;
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 3);
    read_until(a, DMN_MSG_PLAN, DMN_PLAN_EVICT, &m, NULL); /* A holds: kept */
    assert_true(nothing_for(b, &rep));                     /* no REVOKE */
    assert_true(nothing_for(a, &rep));
    assert_int_equal(rep.mode, DMN_MODE_SHARED);
    assert_int_equal(rep.mode_changes, 1);
    assert_int_equal(state_in(&rep, "a"), DMN_STATE_RUNNING);
    assert_int_equal(state_in(&rep, "b"), DMN_STATE_RUNNING);
    thold_end((int[]){x, a, b}, 3);
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
    const struct CMUnitTest tests[] = {
        /* with the real placements too */
        cmocka_unit_test_teardown(test_grant_follows_report, teardown),
        cmocka_unit_test_teardown(test_silent_evictee_bound, teardown),
        cmocka_unit_test_teardown(test_gone_evictee_no_wait, teardown),
        cmocka_unit_test_teardown(test_shared_giveback_held, teardown),
        cmocka_unit_test_teardown(test_shared_giveback_bound, teardown),
        cmocka_unit_test_teardown(test_shared_giveback_gone, teardown),
        /* the recording placement's plans only */
        cmocka_unit_test_teardown(test_no_eviction_no_wait, teardown),
        cmocka_unit_test_teardown(test_wait_off, teardown),
        cmocka_unit_test_teardown(test_taken_not_asked, teardown),
        cmocka_unit_test_teardown(test_query_keeps_mode, teardown),
        cmocka_unit_test(test_setting),
    };
    return thold_main(tests, sizeof(tests) / sizeof(tests[0]), tests, 6);
}
