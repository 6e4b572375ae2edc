/* Unit tests of the client library (src/daemon/client.c): the end of a
 * switch's evictions (an EVICT PLAN with no ranges, protocol v6) and the
 * EVICTED answer, against a scripted daemon (fake_daemon.h). A client
 * without on_evict_end answers at once; one with it answers only when it
 * calls dmn_client_evicted, with that grant and failed count, and may call it
 * from inside a callback; dmn_client_wait_turn calls on_wait between reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/client.h"
#include "fake_daemon.h"
#include "msg_io.h"
#include "tdir.h"

static char dir[] = "/tmp/gmux-cle-XXXXXX";
static char path[128];
static tdmn_t fake;

static int restore(void **state)
{
    (void)state;
    tdmn_kill(&fake);
    return 0;
}

#define GRANT 3

/* Writes an EVICT PLAN of one range and the empty one after it, for GRANT. */
static int send_evictions(int fd)
{
    static uint8_t buf[256];
    dmn_range_t r = {1 << 20, 4096};
    size_t a =
        dmn_proto_encode_ranges(buf, sizeof(buf), 2, DMN_MSG_PLAN, DMN_PLAN_EVICT, GRANT, &r, 1);
    size_t b = dmn_proto_encode_ranges(buf + a, sizeof(buf) - a, 3, DMN_MSG_PLAN, DMN_PLAN_EVICT,
                                       GRANT, NULL, 0);
    return a && b ? tmsg_write_all(fd, buf, a + b) : -1;
}

/* The script: on the first byte from ctl sends the evictions, then reads
 * until EVICTED (10 s at most) and says on ctl the message types it read
 * before it, one letter each ('s' STATS, 'o' other) and then 'E' with the
 * grant and failed count as bytes; on a second byte, with arg non-NULL, it
 * sends GRANT 4 (a wait for the turn ends) and stays until ctl closes. */
static int evictions_script(int fd, int ctl, void *arg)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    char b, said[64];
    size_t n = 0;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (read(ctl, &b, 1) != 1 || send_evictions(fd) != 0)
        return 20;
    dmn_msg_t m;
    for (;;) {
        if (tmsg_read(fd, buf, &m) != 0)
            return 21;
        if (m.hdr.type == DMN_MSG_EVICTED)
            break;
        if (n < sizeof(said) - 3)
            said[n++] = m.hdr.type == DMN_MSG_STATS ? 's' : 'o';
    }
    said[n++] = 'E';
    said[n++] = (char)m.u.evicted.grant_seq;
    said[n++] = (char)m.u.evicted.failed;
    if (write(ctl, said, n) != (ssize_t)n)
        return 22;
    if (!arg)
        return 0;
    if (read(ctl, &b, 1) != 1)
        return 23;
    dmn_msg_grant_t g = {4, 20 * COM_NS_PER_MS, 1, 0, 0}; /* answers the first PENDING */
    if (tmsg_write_all(fd, buf, dmn_proto_encode_grant(buf, sizeof(buf), 9, DMN_MSG_GRANT, &g)))
        return 24;
    (void)!read(ctl, &b, 1); /* connected until the test ends (closes ctl) */
    return 0;
}

/* Polls c until the script said something on ctl: what it said. */
static size_t poll_until_said(dmn_client_t *c, char *said, size_t cap)
{
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    struct timeval tv = {0, 1000};
    setsockopt(fake.ctl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    for (;;) {
        ssize_t n = read(fake.ctl, said, cap);
        if (n > 0)
            return (size_t)n;
        assert_false(com_deadline_passed(deadline));
        (void)dmn_client_poll(c);
    }
}

static void on_plan(void *arg, uint64_t seq, dmn_plan_kind_t kind, const dmn_range_t *r, uint32_t n)
{
    (void)arg, (void)seq, (void)kind, (void)r;
    assert_int_equal(n, 1); /* the empty PLAN never reaches on_plan */
}

/* Without on_evict_end the client answers at once, failed 0. */
static void test_answered_at_once(void **state)
{
    (void)state;
    assert_int_equal(tdmn_start(&fake, path, 7, evictions_script, NULL), 0);
    dmn_client_opts_t o = {path, "auto", DMN_CLASS_BATCH, 0, 0, on_plan, NULL, NULL, NULL,
                           NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    assert_int_equal(tdmn_go(&fake), 0);
    char said[64];
    size_t n = poll_until_said(c, said, sizeof(said));
    assert_true(n >= 3);
    assert_int_equal(said[n - 3], 'E');
    assert_int_equal(said[n - 2], GRANT);
    assert_int_equal(said[n - 1], 0);
    dmn_client_close(c);
    assert_int_equal(tdmn_end(&fake), 0);
}

static struct {
    uint64_t seq;
    int ends, waits;
    dmn_client_t *c;
    int answer_inside; /* on_evict_end answers itself */
} ev;

static void on_evict_end(void *arg, uint64_t seq)
{
    (void)arg;
    ev.seq = seq;
    ev.ends++;
    if (ev.answer_inside)
        (void)dmn_client_evicted(ev.c, seq, 2);
}

/* With on_evict_end: the callback gets the grant, and EVICTED goes only when
 * the caller answers (after a STATS sent in between), with its failed count. */
static void test_answered_by_caller(void **state)
{
    (void)state;
    memset(&ev, 0, sizeof(ev));
    assert_int_equal(tdmn_start(&fake, path, 7, evictions_script, NULL), 0);
    dmn_client_opts_t o = {path, "caller", DMN_CLASS_BATCH, 0,   0, on_plan, NULL,
                           NULL, NULL,     on_evict_end,    NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    assert_int_equal(tdmn_go(&fake), 0);
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (ev.ends == 0 && !com_deadline_passed(deadline))
        (void)dmn_client_poll(c);
    assert_int_equal(ev.ends, 1);
    assert_int_equal(ev.seq, GRANT);
    dmn_msg_stats_t st = {0};
    assert_int_equal(dmn_client_report(c, &st), GMUX_OK);
    assert_int_equal(dmn_client_evicted(c, ev.seq, 5), GMUX_OK);
    char said[64];
    size_t n = poll_until_said(c, said, sizeof(said));
    assert_int_equal(n, 4); /* the STATS, then EVICTED */
    assert_memory_equal(said, "sE\3\5", 4);
    dmn_client_close(c);
    assert_int_equal(tdmn_end(&fake), 0);
}

static int on_wait(void *arg)
{
    (void)arg;
    ev.waits++;
    return 1;
}

/* Answered from inside the callback, while the client waits for its turn:
 * sent once the read is over; on_wait is called during the wait. */
static void test_answered_inside_wait(void **state)
{
    (void)state;
    memset(&ev, 0, sizeof(ev));
    ev.answer_inside = 1;
    assert_int_equal(tdmn_start(&fake, path, 7, evictions_script, &ev), 0);
    dmn_client_opts_t o = {path, "inside", DMN_CLASS_BATCH, 0,      0, on_plan, NULL,
                           NULL, NULL,     on_evict_end,    on_wait};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    ev.c = c;
    assert_int_equal(dmn_client_pending(c, 1, NULL, 0), GMUX_OK);
    assert_int_equal(tdmn_go(&fake), 0);
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (ev.ends == 0 && !com_deadline_passed(deadline))
        assert_int_equal(dmn_client_wait_turn(c, 50 * COM_NS_PER_MS), GMUX_ERR_TIMEOUT);
    assert_int_equal(ev.ends, 1);
    assert_true(ev.waits > 0);
    char said[64];
    size_t n = poll_until_said(c, said, sizeof(said));
    assert_true(n >= 3);
    assert_memory_equal(said + n - 3, "E\3\2", 3);
    assert_int_equal(tdmn_go(&fake), 0); /* GRANT 4 */
    assert_int_equal(dmn_client_wait_turn(c, 20 * COM_NS_PER_S), GMUX_OK);
    assert_true(dmn_client_holds_turn(c));
    dmn_client_close(c);
    tdmn_go(&fake);
    assert_int_equal(tdmn_end(&fake), 0);
}

int main(void)
{
    tdir_make_for_socket(dir, path, sizeof(path));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_answered_at_once, restore),
        cmocka_unit_test_teardown(test_answered_by_caller, restore),
        cmocka_unit_test_teardown(test_answered_inside_wait, restore),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
