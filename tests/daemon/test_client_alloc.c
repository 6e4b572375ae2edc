/* Unit tests of the client library (src/daemon/client.c) compiled with its
 * allocation seam (src/daemon/client_alloc.h): with every allocation failing,
 * the PLAN orders a scripted daemon (a forked child speaking the protocol)
 * sends must still reach the on_plan callback whole. An EVICT lost would
 * leave the daemon's model counting memory freed that the task still holds.
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
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/client.h"
#include "daemon/client_alloc.h"
#include "daemon/endpoint.h"
#include "msg_io.h"
#include "tproc.h"

static char dir[] = "/tmp/gmux-cla-XXXXXX";
static char path[128];
static pid_t fake_pid;
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

/* The scripted daemon: registers the client; once a byte comes on `go`, sends
 * an EVICT and then a FILL of DMN_MAX_RANGES ranges each (the largest PLAN
 * messages); then reads until the client hangs up. */
static int fake_daemon(int ready, int go)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    static dmn_range_t r[DMN_MAX_RANGES];
    int lfd, lk;
    if (dmn_endpoint_listen(path, DMN_NO_GROUP, &lfd, &lk) != GMUX_OK)
        return 10;
    (void)!write(ready, "r", 1);
    struct pollfd pf = {lfd, POLLIN, 0};
    int fd = poll(&pf, 1, 20000) == 1 ? accept(lfd, NULL, NULL) : -1;
    dmn_msg_t m;
    if (fd < 0 || tmsg_read(fd, buf, &m) != 0 || m.hdr.type != DMN_MSG_REGISTER)
        return 11;
    dmn_msg_registered_t reg = {5, 0, 20 * COM_NS_PER_MS};
    size_t len = dmn_proto_encode_registered(buf, sizeof(buf), 1, &reg);
    if (tmsg_write_all(fd, buf, len) != 0)
        return 12;
    char b;
    if (read(go, &b, 1) != 1)
        return 13;
    const dmn_plan_kind_t kinds[2] = {DMN_PLAN_EVICT, DMN_PLAN_FILL};
    const uint64_t seqs[2] = {EVICT_SEQ, FILL_SEQ};
    for (int k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < DMN_MAX_RANGES; i++)
            r[i] = range_of(kinds[k], i);
        len = dmn_proto_encode_ranges(buf, sizeof(buf), 2 + (uint32_t)k, DMN_MSG_PLAN,
                                      (uint32_t)kinds[k], seqs[k], r, DMN_MAX_RANGES);
        if (len == 0 || tmsg_write_all(fd, buf, len) != 0)
            return 14;
    }
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    return 0;
}

static void start_fake(int go[2])
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    fake_pid = fork();
    assert_true(fake_pid >= 0);
    if (fake_pid == 0) {
        close(ready[0]);
        close(go[1]);
        _exit(fake_daemon(ready[1], go[0]));
    }
    close(ready[1]);
    close(go[0]);
    char b;
    assert_int_equal(read(ready[0], &b, 1), 1);
    close(ready[0]);
}

static int fake_status(void)
{
    int code = tproc_reap(&fake_pid);
    unlink(path);
    char lock[160];
    snprintf(lock, sizeof(lock), "%s.lock", path);
    unlink(lock);
    return code;
}

static int kill_leftover_fake(void **state)
{
    (void)state;
    fail_allocs = false;
    tproc_kill_reap(&fake_pid);
    return 0;
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
    int go[2];
    start_fake(go);
    struct got g = {{0}, {0}, 0, {0}, 0, 0};
    dmn_client_opts_t o = {path,    "nomem", DMN_CLASS_BATCH, 0,          0,
                           on_plan, &g,      on_plan_end,     on_read_end};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    assert_false(dmn_client_is_local(c));
    fail_allocs = true; /* from now on, every allocation of the client fails */
    assert_int_equal(write(go[1], "g", 1), 1);
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
    close(go[1]);
    assert_int_equal(fake_status(), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/d.sock", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_plan_whole_without_memory, kill_leftover_fake),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
