/* Unit tests of the client library (src/daemon/client.c) compiled with its
 * allocation seam (src/daemon/client_alloc.h), against a scripted daemon (a
 * forked child speaking the protocol, tests/support/fake_daemon.h). With
 * every allocation failing after dmn_client_open:
 * - the PLAN orders the daemon sends still reach the on_plan callback whole
 *   (an EVICT lost would leave the daemon's model counting memory freed that
 *   the task still holds);
 * - what the client sends still reaches the daemon, in order, whole, also
 *   when the socket is full and messages wait in the client (a failed
 *   allocation there dropped the connection: the task went on ungated and
 *   the daemon reclaimed it), and a PENDING whose ranges are new.
 * Each message's end (on_plan_end) comes after its last range, with its
 * count, and the end of a read (on_read_end) never inside a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/client.h"
#include "daemon/client_alloc.h"
#include "fake_daemon.h"
#include "msg_io.h"
#include "tdir.h"

static char dir[] = "/tmp/gmux-cla-XXXXXX";
static char path[128];
static tdmn_t fake;
static bool fail_allocs;

bool dmn_client_alloc_fails(void)
{
    return fail_allocs;
}

#define PAGE      4096u
#define EVICT_SEQ 7u
#define FILL_SEQ  8u

/* The n-th range of the orders of one kind: distinct, in a known order. */
static dmn_range_t range_of(dmn_plan_kind_t kind, uint32_t i)
{
    dmn_range_t r = {((uint64_t)kind << 40) + (uint64_t)i * 2 * PAGE, PAGE * (1 + i % 3)};
    return r;
}

/* Once a byte comes on ctl, sends an EVICT and then a FILL of DMN_MAX_RANGES
 * ranges each (the largest PLAN messages); then reads until the client hangs
 * up. */
static int sends_plans(int fd, int ctl, void *arg)
{
    (void)arg;
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    static dmn_range_t r[DMN_MAX_RANGES];
    char b;
    if (read(ctl, &b, 1) != 1)
        return 13;
    const dmn_plan_kind_t kinds[2] = {DMN_PLAN_EVICT, DMN_PLAN_FILL};
    const uint64_t seqs[2] = {EVICT_SEQ, FILL_SEQ};
    for (int k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < DMN_MAX_RANGES; i++)
            r[i] = range_of(kinds[k], i);
        size_t len = dmn_proto_encode_ranges(buf, sizeof(buf), 2 + (uint32_t)k, DMN_MSG_PLAN,
                                             (uint32_t)kinds[k], seqs[k], r, DMN_MAX_RANGES);
        if (len == 0 || tmsg_write_all(fd, buf, len) != 0)
            return 14;
    }
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    return 0;
}

/* What the counting script has read so far. */
struct tally {
    uint32_t stats;    /* STATS read, each in order: kernels 0, 1, 2, ... */
    uint32_t pendings; /* PENDING read */
    uint32_t ranges;   /* ranges of the last PENDING, each as pend_range gives it */
    uint32_t wrong;    /* messages out of order, of another type, or with other contents */
};

static dmn_range_t pend_range(uint32_t i)
{
    dmn_range_t r = {((uint64_t)i + 1) << 21, PAGE * (1 + i % 5)};
    return r;
}

/* For each count n (uint32_t) that comes on ctl, reads n messages and
 * answers with the tally; returns at the end of ctl. */
static int counts_when_told(int fd, int ctl, void *arg)
{
    (void)arg;
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    struct tally t = {0, 0, 0, 0};
    uint32_t n;
    while (read(ctl, &n, sizeof(n)) == (ssize_t)sizeof(n)) {
        for (uint32_t k = 0; k < n; k++) {
            dmn_msg_t m;
            if (tmsg_read(fd, buf, &m) != 0)
                return 15;
            if (m.hdr.type == DMN_MSG_STATS) {
                t.wrong += m.u.stats.kernels != t.stats++;
            } else if (m.hdr.type == DMN_MSG_PENDING) {
                t.pendings++;
                t.ranges = m.u.ranges.n_ranges;
                for (uint32_t i = 0; i < t.ranges; i++) {
                    dmn_range_t r = dmn_proto_range_at(&m.u.ranges, i), w = pend_range(i);
                    t.wrong += r.base != w.base || r.len != w.len;
                }
            } else {
                t.wrong++;
            }
        }
        if (write(ctl, &t, sizeof(t)) != (ssize_t)sizeof(t))
            return 16;
    }
    return 0;
}

/* Tells the counting script to read n messages and polls the client (which
 * sends what waits, as the shim's watcher thread does) until it answers. */
static struct tally read_n(dmn_client_t *c, uint32_t n)
{
    struct tally t = {0, 0, 0, ~0u};
    assert_int_equal(write(fake.ctl, &n, sizeof(n)), (ssize_t)sizeof(n));
    struct pollfd pf = {fake.ctl, POLLIN, 0};
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (poll(&pf, 1, 1) == 0 && !dmn_client_is_local(c) && !com_deadline_passed(deadline))
        (void)dmn_client_poll(c);
    assert_false(dmn_client_is_local(c));
    assert_int_equal(read(fake.ctl, &t, sizeof(t)), (ssize_t)sizeof(t));
    return t;
}

static int kill_leftover_fake(void **state)
{
    (void)state;
    fail_allocs = false;
    tdmn_kill(&fake);
    return 0;
}

static dmn_client_t *open_registered(dmn_client_opts_t *o)
{
    o->path = path;
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(o, &c), GMUX_OK);
    assert_false(dmn_client_is_local(c));
    return c;
}

/* What on_plan received: per kind, how many ranges, whether each came in
 * order with the right grant sequence, and how many calls; the messages'
 * ends (on_plan_end) and the reads' (on_read_end), and whether each came
 * where it should. */
struct got {
    uint32_t n[3], calls[3];
    int wrong;
    uint32_t ends[3], reads, ends_at_read;
};

static void on_plan(void *arg, uint64_t seq, dmn_plan_kind_t kind, const dmn_range_t *r, uint32_t n)
{
    struct got *g = arg;
    if ((kind != DMN_PLAN_EVICT && kind != DMN_PLAN_FILL) || n == 0 ||
        seq != (kind == DMN_PLAN_EVICT ? EVICT_SEQ : FILL_SEQ)) {
        g->wrong++;
        return;
    }
    g->calls[kind]++;
    for (uint32_t i = 0; i < n; i++, g->n[kind]++) {
        dmn_range_t want = range_of(kind, g->n[kind]);
        if (r[i].base != want.base || r[i].len != want.len)
            g->wrong++;
    }
}

/* Comes once per message, after all of its ranges, with its count. */
static void on_plan_end(void *arg, uint64_t seq, dmn_plan_kind_t kind, uint32_t n)
{
    struct got *g = arg;
    if ((kind != DMN_PLAN_EVICT && kind != DMN_PLAN_FILL) || n != DMN_MAX_RANGES ||
        g->n[kind] != n || seq != (kind == DMN_PLAN_EVICT ? EVICT_SEQ : FILL_SEQ)) {
        g->wrong++;
        return;
    }
    g->ends[kind]++;
}

/* Comes once what arrived was handed over: never inside a message. */
static void on_read_end(void *arg)
{
    struct got *g = arg;
    for (int k = DMN_PLAN_EVICT; k <= DMN_PLAN_FILL; k++)
        if (g->n[k] != 0 && g->n[k] != DMN_MAX_RANGES)
            g->wrong++;
    g->reads++;
    g->ends_at_read = g->ends[DMN_PLAN_EVICT] + g->ends[DMN_PLAN_FILL];
}

static void test_plan_whole_without_memory(void **state)
{
    (void)state;
    assert_int_equal(tdmn_start(&fake, path, 5, sends_plans, NULL), 0);
    struct got g = {{0}, {0}, 0, {0}, 0, 0};
    dmn_client_opts_t o = {path, "nomem",     DMN_CLASS_BATCH, 0,    0,   on_plan,
                           &g,   on_plan_end, on_read_end,     NULL, NULL};
    dmn_client_t *c = open_registered(&o);
    fail_allocs = true; /* from now on, every allocation of the client fails */
    assert_int_equal(tdmn_go(&fake), 0);
    uint64_t deadline = com_deadline_after_ns(10 * COM_NS_PER_S);
    while (g.n[DMN_PLAN_FILL] < DMN_MAX_RANGES && !dmn_client_is_local(c) &&
           !com_deadline_passed(deadline)) {
        struct pollfd pf = {dmn_client_fd(c), POLLIN, 0};
        (void)poll(&pf, 1, 20);
        (void)dmn_client_poll(c);
    }
    assert_false(dmn_client_is_local(c));
    assert_int_equal(g.wrong, 0);
    assert_int_equal(g.n[DMN_PLAN_EVICT], DMN_MAX_RANGES); /* every range of the eviction */
    assert_int_equal(g.n[DMN_PLAN_FILL], DMN_MAX_RANGES);
    assert_true(g.calls[DMN_PLAN_EVICT] >= 1);
    /* each message's end once; the last read's end after both */
    assert_int_equal(g.ends[DMN_PLAN_EVICT], 1);
    assert_int_equal(g.ends[DMN_PLAN_FILL], 1);
    assert_true(g.reads >= 1);
    assert_int_equal(g.ends_at_read, 2);
    fail_allocs = false;
    dmn_client_close(c);
    assert_int_equal(tdmn_end(&fake), 0);
}

/* The bytes the client keeps for a daemon that does not read (client.c,
 * QUEUE_MAX: four of the largest messages), and a STATS message's size. */
#define CLIENT_QUEUE (4u * DMN_PROTO_MAX_MSG)
#define STATS_MSG    (DMN_PROTO_HDR_SIZE + 56u)

static void send_reports(dmn_client_t *c, uint32_t from, uint32_t n)
{
    dmn_msg_stats_t st = {0};
    for (uint32_t i = from; i < from + n; i++) {
        st.kernels = i;
        assert_int_equal(dmn_client_report(c, &st), GMUX_OK);
    }
}

/* A daemon that reads slowly: what the socket does not take waits in the
 * client. That queue was allocated when the socket first refused bytes, and
 * a failed allocation dropped the connection ("out of memory"). Now no
 * allocation is made: 90% of the queue waits, the daemon reads half, as much
 * again is queued behind what is left (more than the room after it: what
 * waits moves to the front of the buffer), and every message arrives once,
 * in order, whole (a wrong move fails the order check). */
static void test_queue_without_memory(void **state)
{
    (void)state;
    assert_int_equal(tdmn_start(&fake, path, 5, counts_when_told, NULL), 0);
    dmn_client_opts_t o = {path, "nomem-q", DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL,
                           NULL, NULL};
    dmn_client_t *c = open_registered(&o);
    int small = 1; /* the least the kernel allows: the queue, not the socket, holds them */
    assert_int_equal(setsockopt(dmn_client_fd(c), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    fail_allocs = true;
    const uint32_t n1 = CLIENT_QUEUE / 10 * 9 / STATS_MSG;
    send_reports(c, 0, n1);
    assert_false(dmn_client_is_local(c)); /* it went local here: "out of memory" */
    struct tally t = read_n(c, n1 / 2);
    assert_int_equal(t.stats, n1 / 2);
    assert_int_equal(t.wrong, 0);
    send_reports(c, n1, n1 / 2);
    dmn_range_t r[3] = {pend_range(0), pend_range(1), pend_range(2)};
    assert_int_equal(dmn_client_pending(c, 1, r, 3), GMUX_OK);
    assert_false(dmn_client_is_local(c));
    t = read_n(c, n1 + 1); /* the rest of the reports and the PENDING */
    assert_int_equal(t.stats, n1 + n1 / 2);
    assert_int_equal(t.pendings, 1);
    assert_int_equal(t.ranges, 3);
    assert_int_equal(t.wrong, 0);
    fail_allocs = false;
    dmn_client_close(c);
    assert_int_equal(tdmn_end(&fake), 0);
}

/* A PENDING whose ranges are more than the last one's: the client copied
 * them into memory it allocated, and without it sent nothing (GMUX_ERR_NOMEM,
 * which the shim ignores: the daemon kept the old working set). */
static void test_pending_without_memory(void **state)
{
    (void)state;
    static dmn_range_t r[DMN_MAX_RANGES];
    for (uint32_t i = 0; i < DMN_MAX_RANGES; i++)
        r[i] = pend_range(i);
    assert_int_equal(tdmn_start(&fake, path, 5, counts_when_told, NULL), 0);
    dmn_client_opts_t o = {path, "nomem-p", DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL,
                           NULL, NULL};
    dmn_client_t *c = open_registered(&o);
    fail_allocs = true;
    const uint32_t sizes[3] = {3, DMN_MAX_RANGES, 1};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(dmn_client_pending(c, 1, r, sizes[k]), GMUX_OK);
        struct tally t = read_n(c, 1);
        assert_int_equal(t.pendings, (uint32_t)k + 1);
        assert_int_equal(t.ranges, sizes[k]);
        assert_int_equal(t.wrong, 0);
    }
    fail_allocs = false;
    dmn_client_close(c);
    assert_int_equal(tdmn_end(&fake), 0);
}

int main(void)
{
    tdir_make_for_socket(dir, path, sizeof(path));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_plan_whole_without_memory, kill_leftover_fake),
        cmocka_unit_test_teardown(test_queue_without_memory, kill_leftover_fake),
        cmocka_unit_test_teardown(test_pending_without_memory, kill_leftover_fake),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
