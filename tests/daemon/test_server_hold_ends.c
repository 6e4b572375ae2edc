/* Holds that end early or are superseded (src/daemon/server_hold.c), with
 * the helpers of thold.h: the granted task leaves or goes idle while its
 * GRANT is held, a latency task supersedes the held switch, an evictee
 * answers after the switch that asked it ended, a task asked again before
 * it answered, the granted task's connection failing while its orders are
 * written, a switch whose only fill is the fill ahead (its GRANT at once,
 * the AHEAD held: sent once answered or at the bound, handed back by the
 * next grant, when its task leaves or when its write fails); and what each grant or fill ahead
 * that never went hands back to the placement. They run with the real placements too (thold_main:
 * where their plans differ, thold_rec() says), and test_no_fill_not_held only with them (the
 * recording placement fills at every switch). After each, thold_end checks the placement's model
 * and STATUS against the orders the clients read. The wait itself: test_server_hold.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sys/socket.h>
#include <unistd.h>

#include "daemon/server.h"
#include "msg_io.h"
#include "thold.h"
#include "tsrv.h"

/* The granted task hangs up (dies) while its grant is held: nothing is left
 * to send it, so the hold ends at once and B, waiting, is switched to (its
 * switch evicts nothing: A's memory went with it) without waiting for the
 * bound. X's request stays in force: B's switch fills, so B's FILL and GRANT
 * wait for X's answer for A's switch (its evictions may be in flight). The
 * hold used to wait for X until the bound (a minute here; the reads give up
 * after 10 s), and, until 2026-12-02, once it ended early, B's GRANT went at
 * once, its fills overlapping X's evictions. STATUS counts B's hold, not
 * A's void one (until 2026-12-03 both). */
/* A's void grant (2) handed back to the placement A's FILL and B's fill
 * ahead, never sent (X's eviction went); the real placements planned no
 * fill ahead (no room left). */
static void void_a_handed_back(void)
{
    const dmn_plan_entry_t back[] = {{2, DMN_PLAN_FILL, ws_a}, {3, DMN_PLAN_AHEAD, ws_b}};
    handed_back(back, thold_rec() ? 2 : 1);
}

/* X answers the request of grant asked; then fd's GRANT (seq) comes,
 * after the PLANs counted in plans[] (read_until). */
static void answered_then_granted(int x, uint64_t asked, int fd, uint64_t seq, int *plans)
{
    send_evicted(x, asked);
    dmn_msg_t m;
    read_until(fd, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, seq);
}

static void test_gone_grantee_no_wait(void **state)
{
    (void)state;
    int x, a, b;
    uint64_t g = switched_x_to_a(60000, &x, &a, &b);
    dmn_report_t rep;
    assert_true(nothing_for(b, &rep));
    thold_gone(a);
    until_state("b", DMN_STATE_HELD); /* granted, its GRANT held */
    assert_true(nothing_for(b, &rep));
    assert_int_equal(rep.reclaimed, 1);
    void_a_handed_back();
    int plans[3] = {0};
    answered_then_granted(x, g, b, g + 1, plans);
    assert_int_equal(plans[DMN_PLAN_FILL], 1);
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    holds_are(&rep, 1, 0); /* B's: not A's void grant */
    thold_end((int[]){x, b}, 2);
}

/* The granted task goes idle before its GRANT went (its queue ran dry): the
 * held grant is void, the hold ends at once, and the next switch, to B,
 * evicts A's memory and asks A; B's GRANT waits both for A's answer and for
 * X's, still unanswered, for A's switch. Until 2026-12-02 it waited for A's
 * only (X's request was dropped with the void grant), and STATUS counted A's
 * void grant as a switch and its fill as planned (3 switches, 0x6000);
 * until 2026-12-03, its hold among the holds (2). The real placements took A's fill back: B's
 * switch evicts nothing of A's and fills what fits, the two chunks X's eviction frees. */
static void test_idle_grantee_no_wait(void **state)
{
    (void)state;
    int x, a, b;
    uint64_t g = switched_x_to_a(60000, &x, &a, &b);
    dmn_report_t rep;
    assert_true(nothing_for(b, &rep));
    send_simple(a, DMN_MSG_IDLE);
    dmn_msg_t m;
    if (thold_rec()) {
        read_evictions(a, &m, NULL); /* A's, for B's grant */
        assert_int_equal(m.u.ranges.seq, g + 1);
        send_evicted(a, g + 1);
    }
    until_state("b", DMN_STATE_HELD);  /* granted, its GRANT held */
    assert_true(nothing_for(b, &rep)); /* X's evictions may be in flight */
    send_evicted(x, g);
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, g + 1);
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    holds_are(&rep, 1, 0);             /* B's: not A's void grant */
    assert_int_equal(rep.switches, 2); /* X, B: not A's void grant, nor its fill */
    assert_int_equal(rep.fill_bytes, ws_x.len + (thold_rec() ? ws_b.len : 2 * THOLD_CHUNK));
    void_a_handed_back();
    thold_end((int[]){x, a, b}, 3);
}

/* A latency task that starts waiting while the switch to A, a batch task,
 * is held: A's grant (2) is withdrawn, never sent, and L's switch (3) made
 * at once (X, evicted again, asked for 3); L's FILL and GRANT wait for X's
 * answer to 3, which covers its evictions for 2 too (one stream, in order:
 * its shim answers only the newer request, gate_evicted.h). A gets no GRANT
 * nor REVOKE, only its fill ahead, and its turn after L. L used to wait for
 * X's answer to 2 or the bound (a minute: the read gives up after 10 s),
 * then for A to release; until 2026-12-02, for X's answer to 2 even after
 * X answered 3, until that bound.
 * STATUS counts the switches to X and L and their orders, and L's hold, not
 * A's withdrawn grant (its FILL, X's AHEAD) nor its hold: until 2026-12-02
 * it counted 3 switches, 0x7000 bytes filled and 0x3000 ahead in 2 plans;
 * until 2026-12-03, 2 holds. The real placements do
 * not evict X again (nothing of it is left): L's switch fills the two
 * chunks X's eviction frees and waits for X's answer to 2; no room is left
 * for a fill ahead, at A's switch or at L's. */
static void test_latency_supersedes_held(void **state)
{
    (void)state;
    int x, a;
    uint64_t g = switched_x_to_a(60000, &x, &a, NULL);
    int l = raw_client_of("l", DMN_CLASS_LATENCY, 0, 0);
    send_pending(l, 1, ws_l);
    dmn_msg_t m;
    int plans[3] = {0};
    uint64_t asked = g; /* the request X answers */
    if (thold_rec()) {
        read_evictions(x, &m, plans);
        assert_int_equal(plans[DMN_PLAN_EVICT], 1);
        assert_int_equal(m.u.ranges.seq, g + 1);
        asked = g + 1;
    } else {
        until_state("l", DMN_STATE_HELD); /* granted, its GRANT held */
    }
    dmn_report_t rep;
    assert_true(nothing_for(l, &rep));
    assert_true(nothing_for(a, &rep));
    send_evicted(x, asked);
    plans[DMN_PLAN_FILL] = 0;
    read_until(l, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, g + 1);
    assert_int_equal(plans[DMN_PLAN_FILL], 1);
    if (thold_rec()) {
        thold_read(a, &m); /* A: its fill ahead, for L's switch */
        assert_int_equal(m.hdr.type, DMN_MSG_PLAN);
        assert_int_equal(m.u.ranges.count, DMN_PLAN_AHEAD);
        assert_int_equal(m.u.ranges.seq, g + 1);
    }
    assert_true(nothing_for(a, &rep));
    holds_are(&rep, 1, 0);             /* L's: not A's withdrawn grant */
    assert_int_equal(rep.switches, 2); /* X, L: not A's withdrawn grant */
    assert_int_equal(rep.evict_bytes, (thold_rec() ? 2 : 1) * ws_x.len);
    assert_int_equal(rep.fill_bytes, /* not A's */
                     ws_x.len + (thold_rec() ? ws_l.len : 2 * THOLD_CHUNK));
    assert_int_equal(rep.ahead_bytes, thold_rec() ? ws_a.len : 0); /* not X's, for A's switch */
    assert_int_equal(rep.ahead_plans, thold_rec());
    const dmn_plan_entry_t back[] = {{2, DMN_PLAN_FILL, ws_a}, {1, DMN_PLAN_AHEAD, ws_x}};
    handed_back(back, thold_rec() ? 2 : 1); /* to the placement: A's fill, X's fill ahead */
    l_idle_a_granted(l, a, g);
    thold_end((int[]){x, a, l}, 3);
}

/* A holder that gave the turn back answers after the switch that asked it
 * ended early (B, its grantee, went idle before its GRANT went): the answer
 * is for that request all the same, so when B asks again, its switch (4)
 * neither asks X nor waits for it. The late EVICTED used to be dropped: X
 * was asked again and B's GRANT waited for it (a minute here; the read
 * below gives up after 10 s). No hold is counted: B's switch (3) held went
 * void (until 2026-12-03 it counted). */
static void test_shared_late_answer_counts(void **state)
{
    (void)state;
    int x, a, b;
    shared_x_asked(60000, &x, &a, &b);
    send_simple(b, DMN_MSG_IDLE);
    until_state("b", DMN_STATE_IDLE); /* the hold ended: B's grant is void */
    send_evicted(x, 3);
    dmn_report_t rep;
    assert_true(nothing_for(b, &rep)); /* read: X's answer came before B asks */
    const dmn_plan_entry_t back[] = {{3, DMN_PLAN_FILL, b_fill_3()}}; /* A's eviction went */
    handed_back(back, 1);
    b_again_unheld(x, b, 0); /* B's switch (3), void, is not counted */
    thold_end((int[]){x, a, b}, 3);
}

/* Shared mode: B's switch (3) is held for X's answer when L, a latency task,
 * starts waiting: B's grant is withdrawn (no GRANT, no FILL, no REVOKE), A,
 * the batch task holding beside it, is revoked, and once A released L's
 * switch (4) asks A (it kept the evictions of 3 while it held the turn) and
 * X again (it has not answered for the evictions it kept), and waits for
 * both answers to 4: X's covers its request for 3 (one stream, in order; its
 * shim answers only the newer request, gate_evicted.h). STATUS counts three
 * switches (X, A, L) and one hold (L's): not the withdrawn one (2 holds
 * until 2026-12-03). When L goes idle, B, back in
 * its place, is granted first (5). Until 2026-12-02 L's GRANT waited for
 * X's answer to 3 until the bound (a minute: the read gives up after 10 s),
 * and STATUS counted 4 switches. The real placements fill B's switch (5)
 * from idle L's memory, asking L. */
static void test_shared_supersede(void **state)
{
    (void)state;
    int x, a, b;
    shared_x_asked(60000, &x, &a, &b);
    dmn_msg_t m;
    int l = raw_client_of("l", DMN_CLASS_LATENCY, 0, 0);
    send_pending(l, 1, ws_l);
    int plans[3] = {0};
    read_until(a, DMN_MSG_REVOKE, 0, &m, plans);
    assert_int_equal(plans[DMN_PLAN_EVICT], 1); /* B's switch's, kept as it held */
    dmn_report_t rep;
    assert_true(nothing_for(b, &rep));
    send_simple(a, DMN_MSG_RELEASE);
    read_evictions(a, &m, NULL);
    assert_int_equal(m.u.ranges.seq, 4);
    read_evictions(x, &m, NULL);
    assert_int_equal(m.u.ranges.seq, 4);
    assert_true(nothing_for(l, &rep));
    send_evicted(a, 4);
    assert_true(nothing_for(l, &rep)); /* X's evictions may be in flight */
    send_evicted(x, 4);
    plans[DMN_PLAN_FILL] = 0;
    read_until(l, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, 4);
    assert_int_equal(plans[DMN_PLAN_FILL], 1);
    assert_true(nothing_for(b, &rep));
    assert_int_equal(rep.mode, DMN_MODE_SHARED);
    assert_int_equal(rep.switches, 3);
    const dmn_plan_entry_t back[] = {{3, DMN_PLAN_FILL, b_fill_3()}}; /* A's eviction went */
    handed_back(back, 1);  /* no fill ahead: shared mode */
    holds_are(&rep, 1, 0); /* L's: not B's withdrawn grant */
    send_simple(l, DMN_MSG_IDLE);
    if (!thold_rec()) { /* they make room for B from idle L */
        read_evictions(l, &m, NULL);
        assert_int_equal(m.u.ranges.seq, 5);
        send_evicted(l, 5);
    }
    plans[DMN_PLAN_FILL] = 0;
    read_until(b, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, 5);
    assert_int_equal(plans[DMN_PLAN_FILL], 1);
    thold_end((int[]){x, a, b, l}, 4);
}

/* The granted task's connection fails while its orders are written (B
 * reads no more: the daemon's write fails): B is dropped, and its grant
 * (2), whose GRANT never went, is void like a held one: B's FILL and C's
 * fill ahead are handed back to the placement, STATUS counts neither, and
 * C is granted (3). Until 2026-12-02 the placement was not told (it
 * counted B's fill and C's fill ahead, never sent, resident) and STATUS
 * counted B's switch. The real placements' switch to B must evict X (so
 * it is held for X's answer: not counted among the holds, its GRANT never
 * went; until 2026-12-03 it was, counted before the write), fills two of
 * B's three chunks and leaves no room to fill C ahead. */
static void test_grantee_write_fails(void **state)
{
    (void)state;
    evict_none = 1;
    start_server(60000);
    evict_none = 0;
    int x = raw_client("x"), c = raw_client("c");
    int b = raw_client_of("b", DMN_CLASS_BATCH, 1, 0); /* goes before C */
    assert_int_equal(shutdown(b, SHUT_RD), 0);
    dmn_msg_t m;
    send_pending(x, 1, ws_x);
    read_until(x, DMN_MSG_GRANT, 0, &m, NULL);
    send_pending(c, 1, ws_a);
    send_pending(b, 1, ws_b);
    read_until(x, DMN_MSG_REVOKE, 0, &m, NULL);
    send_simple(x, DMN_MSG_RELEASE);
    if (!thold_rec()) {
        read_evictions(x, &m, NULL);
        send_evicted(x, 2);
    }
    int plans[3] = {0};
    read_until(c, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, 3);
    assert_int_equal(plans[DMN_PLAN_FILL], 1);
    assert_int_equal(plans[DMN_PLAN_AHEAD], 0);
    dmn_report_t rep;
    assert_true(nothing_for(c, &rep));
    assert_int_equal(rep.reclaimed, 1);
    assert_int_equal(rep.switches, 2); /* X, C */
    holds_are(&rep, 0, 0);             /* B's switch, held with the real ones, never went */
    assert_int_equal(rep.fill_bytes, ws_x.len + ws_a.len);
    assert_int_equal(rep.ahead_bytes, thold_rec() ? ws_x.len : 0); /* X's, for C's switch */
    assert_int_equal(rep.ahead_plans, thold_rec());
    const dmn_plan_entry_t back[] = {
        {3, DMN_PLAN_FILL, {ws_b.base, thold_rec() ? ws_b.len : 2 * THOLD_CHUNK}},
        {2, DMN_PLAN_AHEAD, ws_a}};
    handed_back(back, thold_rec() ? 2 : 1);
    close(b); /* read nothing since it registered */
    thold_end((int[]){x, c}, 2);
}

/* L's switch fills nothing (its PENDING names no ranges, no fill ahead):
 * nothing it sends needs the room X's eviction for A's switch (2) frees, so
 * L's GRANT goes without waiting for X; X's request stays in force, and
 * A's switch (4), which fills into that room, waits for X's answer. L's
 * GRANT used to wait for X's answer too (or the bound: a minute here, the
 * read gives up after 10 s). STATUS counts A's switch (4) among the holds,
 * not A's switch (2), superseded (until 2026-12-03 it did). */
static void test_no_fill_not_held(void **state)
{
    (void)state;
    int x, a;
    thold_ahead_off = 1;
    uint64_t g = switched_x_to_a(60000, &x, &a, NULL);
    thold_ahead_off = 0;
    int l = raw_client_of("l", DMN_CLASS_LATENCY, 0, 0);
    send_pending_none(l, 1);
    dmn_msg_t m;
    int plans[3] = {0};
    read_until(l, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, g + 1);
    assert_int_equal(plans[DMN_PLAN_FILL] + plans[DMN_PLAN_EVICT], 0);
    dmn_report_t rep;
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    holds_are(&rep, 0, 0); /* not A's, superseded: its GRANT never went */
    thold_agree((int[]){x, a, l}, 3);
    send_simple(l, DMN_MSG_IDLE);
    until_state("a", DMN_STATE_HELD);
    assert_true(nothing_for(a, &rep)); /* A's fills need X's room */
    send_evicted(x, g);
    read_until(a, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, g + 2);
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    holds_are(&rep, 1, 0); /* A's second */
    thold_end((int[]){x, a, l}, 3);
}

/* A's switch (g) held for X's answer is superseded by L, a latency task
 * whose PENDING names no ranges: L's switch (g + 1) fills only ahead, A,
 * expected next, into the room X's eviction frees (the recording placement
 * evicts X again and asks it for g + 1; the real ones fill A's two chunks
 * into the two that X's eviction for g frees). L's own turn needs none of
 * that room: its GRANT goes at once, and only A's AHEAD waits for X's
 * answer. Until 2026-12-02 L's GRANT waited with it (for the bound: a minute
 * here, the read gives up after 10 s). A server waiting at most wait_ms for
 * evictions; returns g; *asked: the grant whose request X answers. */
static uint64_t ahead_held_l_granted(int wait_ms, int *x, int *a, int *l, uint64_t *asked)
{
    uint64_t g = switched_x_to_a(wait_ms, x, a, NULL);
    *l = raw_client_of("l", DMN_CLASS_LATENCY, 0, 0);
    send_pending_none(*l, 1);
    dmn_msg_t m;
    *asked = g;
    if (thold_rec()) {
        read_evictions(*x, &m, NULL);
        assert_int_equal(m.u.ranges.seq, g + 1);
        *asked = g + 1;
    }
    int plans[3] = {0};
    read_until(*l, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, g + 1);
    assert_int_equal(plans[DMN_PLAN_FILL] + plans[DMN_PLAN_EVICT], 0);
    dmn_report_t rep;
    assert_true(nothing_for(*a, &rep));          /* its fill ahead waits for X */
    assert_int_equal(rep.ahead_bytes, ws_a.len); /* planned, not handed back */
    assert_int_equal(rep.ahead_plans, 1);
    holds_are(&rep, 0, 0); /* not A's switch, superseded; L's fill ahead still held */
    return g;
}

/* Once X answered, A's AHEAD (of L's grant) comes; then, L idle, A's
 * switch (g + 2) is granted at once, filling nothing with the real
 * placements (A's working set was filled ahead). */
static void test_ahead_only_grant_first(void **state)
{
    (void)state;
    int x, a, l;
    uint64_t asked, g = ahead_held_l_granted(60000, &x, &a, &l, &asked);
    send_evicted(x, asked);
    dmn_msg_t m;
    thold_read(a, &m);
    assert_int_equal(m.hdr.type, DMN_MSG_PLAN);
    assert_int_equal(m.u.ranges.count, DMN_PLAN_AHEAD);
    assert_int_equal(m.u.ranges.seq, g + 1);
    assert_int_equal(m.u.ranges.n_ranges, 1);
    dmn_range_t r = dmn_proto_range_at(&m.u.ranges, 0);
    assert_int_equal(r.base, ws_a.base);
    assert_int_equal(r.len, ws_a.len);
    dmn_report_t rep;
    assert_true(nothing_for(a, &rep));
    holds_are(&rep, 1, 0); /* L's fill ahead */
    thold_agree((int[]){x, a, l}, 3);
    send_simple(l, DMN_MSG_IDLE);
    int plans[3] = {0};
    read_until(a, DMN_MSG_GRANT, 0, &m, plans);
    assert_int_equal(m.u.grant.grant_seq, g + 2);
    assert_int_equal(plans[DMN_PLAN_FILL], thold_rec());
    thold_end((int[]){x, a, l}, 3);
}

/* One more hand-back since the placement had calls: A's fill ahead (of L's
 * grant), its whole working set. */
static void a_ahead_handed_back(uint32_t calls)
{
    assert_int_equal(unsent_log->calls, calls + 1);
    dmn_plan_entry_t back = unsent_log->e[unsent_log->n - 1];
    assert_int_equal(back.task_id, 2);
    assert_int_equal(back.kind, DMN_PLAN_AHEAD);
    assert_int_equal(back.range.base, ws_a.base);
    assert_int_equal(back.range.len, ws_a.len);
}

/* L goes idle while A's AHEAD is held: the switch to A (g + 2) hands that
 * fill ahead back to the placement before it plans (never sent: A's FILL
 * orders its working set instead), and A's FILL and GRANT wait for X's
 * answer, as any switch that fills while a request is in force. STATUS
 * counts one hold, A's switch answered: neither A's switch superseded nor
 * the fill ahead held alone went (until 2026-12-02 3 holds, until
 * 2026-12-03 2, the superseded one counted). */
static void test_ahead_held_next_switch(void **state)
{
    (void)state;
    int x, a, l;
    uint64_t asked, g = ahead_held_l_granted(60000, &x, &a, &l, &asked);
    uint32_t calls = unsent_log->calls; /* A's withdrawn grant (g) */
    send_simple(l, DMN_MSG_IDLE);
    until_state("a", DMN_STATE_HELD); /* granted (g + 2), its GRANT held */
    dmn_report_t rep;
    assert_true(nothing_for(a, &rep));
    a_ahead_handed_back(calls);
    int plans[3] = {0};
    answered_then_granted(x, asked, a, g + 2, plans);
    assert_int_equal(plans[DMN_PLAN_FILL], 1);
    assert_int_equal(plans[DMN_PLAN_AHEAD], 0);
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    holds_are(&rep, 1, 0); /* A's second switch */
    thold_end((int[]){x, a, l}, 3);
}

/* A, whose AHEAD is held, dropped: waits (at most 1,000 STATUS queries)
 * until the daemon reclaimed it, the one task it drops, then reads a STATUS
 * answered after that round's decisions (a QUERY read in the round that
 * dropped A was answered before them): A's fill ahead was handed back
 * to the placement (one more call since it had calls), and STATUS counts it
 * neither planned nor among the holds, nor A's switch, superseded. */
static void a_dropped_ahead_back(uint32_t calls)
{
    dmn_report_t rep;
    for (int k = 0; k < 1000; k++) {
        assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
        if (rep.reclaimed == 1)
            break;
        usleep(1000);
    }
    assert_int_equal(rep.reclaimed, 1);
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    a_ahead_handed_back(calls);
    assert_int_equal(rep.ahead_bytes, 0);
    assert_int_equal(rep.ahead_plans, 0);
    holds_are(&rep, 0, 0);
}

/* A, whose AHEAD is held, hangs up: its fill ahead is handed back at once,
 * without waiting for X's answer (STATUS counts it planned no longer, nor
 * among the holds: it never went; until 2026-12-02 a hold ended in time;
 * until 2026-12-03 A's switch superseded counted, 1 hold). */
static void test_ahead_task_gone(void **state)
{
    (void)state;
    int x, a, l;
    uint64_t asked;
    (void)ahead_held_l_granted(60000, &x, &a, &l, &asked);
    uint32_t calls = unsent_log->calls;
    thold_gone(a);
    a_dropped_ahead_back(calls);
    send_evicted(x, asked);
    thold_end((int[]){x, l}, 2);
}

/* A stops reading (its socket's read side shut) while its AHEAD is held:
 * once X answered, the daemon's write of that AHEAD fails, A is dropped
 * and its fill ahead handed back to the placement. STATUS counts it
 * neither planned nor among the holds: nothing that waited went. Until
 * 2026-12-03 the hold was counted as ended in time before the write, its
 * failure unseen (2 holds, with A's switch superseded). */
static void test_ahead_write_fails(void **state)
{
    (void)state;
    int x, a, l;
    uint64_t asked;
    (void)ahead_held_l_granted(60000, &x, &a, &l, &asked);
    uint32_t calls = unsent_log->calls;
    assert_int_equal(shutdown(a, SHUT_RD), 0);
    send_evicted(x, asked);
    a_dropped_ahead_back(calls);
    close(a); /* read no orders */
    thold_end((int[]){x, l}, 2);
}

/* X never answers: A's AHEAD goes once the bound of X's request passed
 * (5 s here: L supersedes A's switch well within it), and the hold counts
 * as given up; L's GRANT went at once all the same. */
static void test_ahead_held_bound(void **state)
{
    (void)state;
    int x, a, l;
    uint64_t asked, g = ahead_held_l_granted(5000, &x, &a, &l, &asked);
    dmn_msg_t m;
    thold_read(a, &m);
    assert_int_equal(m.hdr.type, DMN_MSG_PLAN);
    assert_int_equal(m.u.ranges.count, DMN_PLAN_AHEAD);
    assert_int_equal(m.u.ranges.seq, g + 1);
    dmn_report_t rep;
    assert_true(nothing_for(a, &rep));
    holds_are(&rep, 1, 1); /* L's fill ahead, at the bound */
    thold_end((int[]){x, a, l}, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_gone_grantee_no_wait, teardown),
        cmocka_unit_test_teardown(test_idle_grantee_no_wait, teardown),
        cmocka_unit_test_teardown(test_latency_supersedes_held, teardown),
        cmocka_unit_test_teardown(test_shared_late_answer_counts, teardown),
        cmocka_unit_test_teardown(test_shared_supersede, teardown),
        cmocka_unit_test_teardown(test_grantee_write_fails, teardown),
        cmocka_unit_test_teardown(test_ahead_only_grant_first, teardown),
        cmocka_unit_test_teardown(test_ahead_held_next_switch, teardown),
        cmocka_unit_test_teardown(test_ahead_task_gone, teardown),
        cmocka_unit_test_teardown(test_ahead_write_fails, teardown),
        cmocka_unit_test_teardown(test_ahead_held_bound, teardown),
        cmocka_unit_test_teardown(test_no_fill_not_held, teardown), /* the real ones only */
    };
    size_t n = sizeof(tests) / sizeof(tests[0]);
    return thold_main(tests, n - 1, tests, n);
}
