/*
 * Launch gating end to end, orders of the same range that cross (harness:
 * gate_harness.h, scripted daemons: gate_script.h). A scripted daemon drives
 * the program through the cases:
 *
 * - An eviction already waiting in the socket when the launching thread
 *   applies a stored fill ahead: while the program is out of the gate, the
 *   daemon sends it a fill ahead (12 KiB at ORDER_X, grant 2), which the
 *   watcher thread stores; the program's next launch stalls in the driver
 *   double inside the gate (gate_prog CAPTURE 7), holding the gate's lock
 *   so the watcher reads nothing, and meanwhile the daemon sends an eviction
 *   of the middle 4 KiB (grant 3). That memory is another task's: the
 *   middle must never be prefetched. The shim prefetched the whole fill
 *   ahead and evicted the middle right after, reading the socket only in its
 *   wait for the turn.
 * - An eviction deferred by a graph capture, then a fill ahead of part of
 *   that range: another thread of the program captures a graph all along
 *   (gate_prog CAPTURE 3), so the evictions that reach the program without
 *   the turn wait for its grant. The daemon sends an eviction of 12 KiB at
 *   ORDER_X (grant 2) and then a fill ahead of its middle 4 KiB (grant 3):
 *   the middle is the task's again and must stay on the device. The shim
 *   prefetched it at its next wait and then, at its grant, carried out the
 *   deferred eviction of all 12 KiB, undoing the fill ahead.
 * - A fill ahead and, later in the same read, an eviction of part of it,
 *   reaching the launching thread in its wait for the turn: the program's
 *   next launch applies a fill ahead the watcher stored (the page at
 *   ORDER_X) and stalls in its prefetch (gate_prog CAPTURE 8), holding the
 *   gate's lock; meanwhile the daemon sends in one write a fill ahead of two
 *   pages at ORDER_X + 2 pages and one at ORDER_X + 5 pages, and an eviction
 *   of the 3 pages at ORDER_X + 3 pages, which the thread reads in one go
 *   once in its wait. The evicted pages are another task's: none may be
 *   prefetched. The shim applied the fill ahead as soon as its message was
 *   read, before the eviction behind it in the same read.
 * - A PLAN larger than the store (2000 fill ranges, 1024 kept) is reported
 *   once, with its size and what was kept. The warning came once per batch
 *   of 256 ranges the client hands over (four times, with the batch's size).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "daemon/proto.h"
#include "gate_harness.h"
#include "gate_script.h"

static char go[256];
/* 20 kernels, a pause at half of them until `go` exists; 1 MiB more of
 * working set, so the orders below fall inside a managed allocation */
static gh_spec_t spec = {"batch", "9", "20", "1000", "0", "1", go, NULL, NULL};

#define ORDER_X 0x10000u /* offset of the orders in the largest range of the PENDING */
#define PAGE    4096u

/* After the RELEASE of grant 1: reads the watcher's PENDING and the
 * launching thread's, grants the second (grant 4, no orders) and reads
 * until the program ends. 0, or the step that failed. */
static int grant_and_finish(int task, uint8_t *buf, int *fds, int nfd)
{
    dmn_msg_t m;
    if (gs_read_until(task, buf, DMN_MSG_PENDING, &m) != 0 ||
        gs_read_until(task, buf, DMN_MSG_PENDING, &m) != 0)
        return 30;
    dmn_msg_grant_t g4 = {4, 20 * COM_NS_PER_MS, m.u.ranges.seq};
    if (tmsg_write_all(task, buf,
                       dmn_proto_encode_grant(buf, DMN_PROTO_MAX_MSG, 9, DMN_MSG_GRANT, &g4)) != 0)
        return 31;
    while (tmsg_read(task, buf, &m) == 0) /* until the program ends */
        ;
    unlink(gh_sock);
    for (int i = 0; i < nfd; i++)
        close(fds[i]);
    return 0;
}

/* Grants turn 1 and waits until the program paused holding it: the task's
 * socket, or minus the step that failed. */
static int start_script(int ready, uint8_t *buf, int *fds, int *nfd, dmn_range_t *big)
{
    dmn_msg_t m;
    int task = gs_accept_big(ready, buf, fds, nfd, &m, big);
    if (task < 0)
        return task;
    dmn_msg_grant_t g = {1, 20 * COM_NS_PER_MS, m.u.ranges.seq};
    if (tmsg_write_all(task, buf,
                       dmn_proto_encode_grant(buf, DMN_PROTO_MAX_MSG, 2, DMN_MSG_GRANT, &g)) != 0 ||
        gs_wait_file("out0.paused") != 0)
        return -15;
    return task;
}

/* The eviction waiting in the socket: once the program paused holding turn
 * 1, sends in one write the fill ahead (grant 2) and REVOKE 1; after the
 * RELEASE (the watcher stored the fill) lets the program go on, waits until
 * its launching thread stalled inside the gate, sends the eviction of the
 * middle (grant 3), and lets it go on. */
static int scripted_evict_waiting(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG], out[4096];
    int fds[8], nfd = 0;
    dmn_msg_t m;
    dmn_range_t big;
    int task = start_script(ready, buf, fds, &nfd, &big);
    if (task < 0)
        return -task;
    dmn_range_t ahead = {big.base + ORDER_X, 3 * PAGE}, evict = {big.base + ORDER_X + PAGE, PAGE};
    dmn_msg_grant_t r1 = {1, 0, 0};
    size_t at = 0;
    at += dmn_proto_encode_ranges(out + at, sizeof(out) - at, 3, DMN_MSG_PLAN, DMN_PLAN_AHEAD, 2,
                                  &ahead, 1);
    at += dmn_proto_encode_grant(out + at, sizeof(out) - at, 4, DMN_MSG_REVOKE, &r1);
    if (tmsg_write_all(task, out, at) != 0 || gs_read_until(task, buf, DMN_MSG_RELEASE, &m) != 0)
        return 16;
    gh_touch("go");
    if (gs_wait_file("out0.stalled") != 0)
        return 17;
    if (tmsg_write_all(task, buf,
                       dmn_proto_encode_ranges(buf, sizeof(buf), 5, DMN_MSG_PLAN, DMN_PLAN_EVICT, 3,
                                               &evict, 1)) != 0)
        return 18;
    gh_touch("out0.resume");
    return grant_and_finish(task, buf, fds, nfd);
}

/* The eviction deferred: once the program paused holding turn 1, sends in
 * one write the eviction of 12 KiB (grant 2), the fill ahead of its middle
 * (grant 3) and REVOKE 1; after the RELEASE lets the program go on. */
static int scripted_evict_deferred(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG], out[4096];
    int fds[8], nfd = 0;
    dmn_msg_t m;
    dmn_range_t big;
    int task = start_script(ready, buf, fds, &nfd, &big);
    if (task < 0)
        return -task;
    dmn_range_t evict = {big.base + ORDER_X, 3 * PAGE}, ahead = {big.base + ORDER_X + PAGE, PAGE};
    dmn_msg_grant_t r1 = {1, 0, 0};
    size_t at = 0;
    at += dmn_proto_encode_ranges(out + at, sizeof(out) - at, 3, DMN_MSG_PLAN, DMN_PLAN_EVICT, 2,
                                  &evict, 1);
    at += dmn_proto_encode_ranges(out + at, sizeof(out) - at, 4, DMN_MSG_PLAN, DMN_PLAN_AHEAD, 3,
                                  &ahead, 1);
    at += dmn_proto_encode_grant(out + at, sizeof(out) - at, 5, DMN_MSG_REVOKE, &r1);
    if (tmsg_write_all(task, out, at) != 0 || gs_read_until(task, buf, DMN_MSG_RELEASE, &m) != 0)
        return 16;
    gh_touch("go");
    return grant_and_finish(task, buf, fds, nfd);
}

/* The fill ahead and the eviction in one read: once the program paused
 * holding turn 1, sends in one write a fill ahead of the page at ORDER_X
 * (grant 2) and REVOKE 1; after the RELEASE (the watcher stored the fill)
 * lets the program go on, waits until its launching thread stalled in that
 * fill's prefetch, sends in one write the fill ahead and the eviction that
 * cross (grant 3), and lets it go on. */
static int scripted_ahead_then_evict(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG], out[4096];
    int fds[8], nfd = 0;
    dmn_msg_t m;
    dmn_range_t big;
    int task = start_script(ready, buf, fds, &nfd, &big);
    if (task < 0)
        return -task;
    uint64_t x = big.base + ORDER_X;
    dmn_range_t first = {x, PAGE}, ahead[2] = {{x + 2 * PAGE, 2 * PAGE}, {x + 5 * PAGE, PAGE}},
                evict = {x + 3 * PAGE, 3 * PAGE};
    dmn_msg_grant_t r1 = {1, 0, 0};
    size_t at = 0;
    at += dmn_proto_encode_ranges(out + at, sizeof(out) - at, 3, DMN_MSG_PLAN, DMN_PLAN_AHEAD, 2,
                                  &first, 1);
    at += dmn_proto_encode_grant(out + at, sizeof(out) - at, 4, DMN_MSG_REVOKE, &r1);
    if (tmsg_write_all(task, out, at) != 0 || gs_read_until(task, buf, DMN_MSG_RELEASE, &m) != 0)
        return 16;
    gh_touch("go");
    if (gs_wait_file("out0.stalled") != 0)
        return 17;
    at = 0;
    at += dmn_proto_encode_ranges(out + at, sizeof(out) - at, 5, DMN_MSG_PLAN, DMN_PLAN_AHEAD, 3,
                                  ahead, 2);
    at += dmn_proto_encode_ranges(out + at, sizeof(out) - at, 6, DMN_MSG_PLAN, DMN_PLAN_EVICT, 3,
                                  &evict, 1);
    if (tmsg_write_all(task, out, at) != 0)
        return 18;
    gh_touch("out0.resume");
    return grant_and_finish(task, buf, fds, nfd);
}

#define BIG_PLAN 2000u /* fill ranges in one PLAN: more than the shim's store (1024) */

/* A PLAN that overflows the store: once the program paused holding turn 1,
 * sends in one write a FILL of BIG_PLAN ranges (grant 2, never used) and
 * REVOKE 1; after the RELEASE lets the program go on. */
static int scripted_big_plan(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG], out[DMN_PROTO_MAX_MSG];
    static dmn_range_t fills[BIG_PLAN];
    int fds[8], nfd = 0;
    dmn_msg_t m;
    dmn_range_t big;
    int task = start_script(ready, buf, fds, &nfd, &big);
    if (task < 0)
        return -task;
    for (uint32_t i = 0; i < BIG_PLAN; i++)
        fills[i] = (dmn_range_t){big.base + i * 512u, 256};
    dmn_msg_grant_t r1 = {1, 0, 0};
    size_t at = dmn_proto_encode_ranges(out, sizeof(out), 3, DMN_MSG_PLAN, DMN_PLAN_FILL, 2, fills,
                                        BIG_PLAN);
    if (at == 0 || tmsg_write_all(task, out, at) != 0)
        return 16;
    if (tmsg_write_all(task, out,
                       dmn_proto_encode_grant(out, sizeof(out), 4, DMN_MSG_REVOKE, &r1)) != 0 ||
        gs_read_until(task, buf, DMN_MSG_RELEASE, &m) != 0)
        return 17;
    gh_touch("go");
    return grant_and_finish(task, buf, fds, nfd);
}

/* Runs script against program 0 with the given CAPTURE and reads its output;
 * the program's log goes to gh_dir/log0. */
static gh_out_t *run_script(int (*script)(int), const char *capture)
{
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    const char *marks[] = {"go", "out0.paused", "out0.stalled", "out0.resume"};
    for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
        unlink(gh_path(marks[i]));
    spec.capture = capture;
    setenv("GMUX_POLICY", "demand", 1);       /* no prefetch of its own: only orders */
    setenv("GMUX_GATE_IDLE_MS", "600000", 1); /* no IDLE while paused */
    pid_t fake, prog;
    gs_start_pair_log(&spec, script, gh_path("log0"), &fake, &prog);
    gs_wait_script(fake, prog);
    int ps = -1;
    assert_int_equal(waitpid(prog, &ps, 0), prog);
    assert_true(WIFEXITED(ps) && WEXITSTATUS(ps) == 0);
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    gh_read_out(0, o);
    for (size_t i = 0; i < o->nd; i++)
        print_message("  prefetch %#llx + %llu at %llu\n", o->d[i][1], o->d[i][2], o->d[i][0]);
    for (size_t i = 0; i < o->nh; i++)
        print_message("  evict %#llx + %llu at %llu\n", o->h[i][1], o->h[i][2], o->h[i][0]);
    assert_int_equal(o->n, 20);
    return o;
}

/* Whether a move of rows (ns, base, len, ...; `stride` values each) at or
 * after `from` covers every page of [lo, hi); any: whether one touches it. */
static int moved(const unsigned long long *rows, size_t n, size_t stride, unsigned long long from,
                 unsigned long long lo, unsigned long long hi, int any)
{
    for (unsigned long long p = lo; p < hi; p += PAGE) {
        size_t i = 0;
        while (i < n && !(rows[i * stride] >= from && rows[i * stride + 1] <= p &&
                          p < rows[i * stride + 1] + rows[i * stride + 2]))
            i++;
        if (any && i < n)
            return 1;
        if (!any && i == n)
            return 0;
    }
    return !any;
}

static void test_evict_waiting_cuts_ahead(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_evict_waiting, "7");
    /* the eviction, carried out on arrival (the task held no turn) */
    assert_int_equal(o->nh, 1);
    assert_int_equal(o->h[0][2], PAGE);
    unsigned long long mid = o->h[0][1], x = mid - PAGE;
    /* the middle never went to the device: it was another task's before
     * the fill ahead was applied */
    assert_false(moved(&o->d[0][0], o->nd, 3, 0, mid, mid + PAGE, 1));
    /* the rest of the fill ahead went */
    assert_true(moved(&o->d[0][0], o->nd, 3, 0, x, mid, 0));
    assert_true(moved(&o->d[0][0], o->nd, 3, 0, mid + PAGE, x + 3 * PAGE, 0));
    free(o);
}

static void test_fill_cancels_deferred_evict(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_evict_deferred, "3");
    /* the capture kept the eviction from being carried out on arrival, and
     * the fill ahead took its middle out */
    assert_true(o->evict_deferred > 0);
    assert_int_equal(o->evict_cancelled, 1);
    /* the middle went to the device (the fill ahead) and stayed there */
    assert_int_equal(o->nd, 1);
    assert_int_equal(o->d[0][2], PAGE);
    unsigned long long mid = o->d[0][1], x = mid - PAGE, t = o->d[0][0];
    assert_false(moved(&o->h[0][0], o->nh, 4, t, mid, mid + PAGE, 1));
    /* the rest of the eviction went */
    assert_true(moved(&o->h[0][0], o->nh, 4, 0, x, mid, 0));
    assert_true(moved(&o->h[0][0], o->nh, 4, 0, mid + PAGE, x + 3 * PAGE, 0));
    free(o);
}

static void test_evict_in_same_read_cuts_ahead(void **state)
{
    (void)state;
    gh_out_t *o = run_script(scripted_ahead_then_evict, "8");
    /* the eviction, carried out in the wait (the task held no turn) */
    assert_int_equal(o->nh, 1);
    assert_int_equal(o->h[0][2], 3 * PAGE);
    unsigned long long e = o->h[0][1], x = e - 3 * PAGE;
    /* the evicted pages never went to the device */
    assert_false(moved(&o->d[0][0], o->nd, 3, 0, e, e + 3 * PAGE, 1));
    /* the fill ahead the watcher stored, and what the eviction left of the other */
    assert_true(moved(&o->d[0][0], o->nd, 3, 0, x, x + PAGE, 0));
    assert_true(moved(&o->d[0][0], o->nd, 3, 0, x + 2 * PAGE, x + 3 * PAGE, 0));
    free(o);
}

static void test_big_plan_warned_once(void **state)
{
    (void)state;
    free(run_script(scripted_big_plan, "0"));
    FILE *f = fopen(gh_path("log0"), "r");
    assert_non_null(f);
    char line[512], want[128];
    snprintf(want, sizeof(want), "daemon plan of %u ranges: only 1024 kept", BIG_PLAN);
    int warned = 0, whole = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strstr(line, "daemon plan of")) {
            print_message("  log: %s", line);
            warned++;
            whole += strstr(line, want) != NULL;
        }
    }
    fclose(f);
    assert_int_equal(warned, 1);
    assert_int_equal(whole, 1);
}

int main(void)
{
    gh_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_evict_waiting_cuts_ahead),
        cmocka_unit_test(test_fill_cancels_deferred_evict),
        cmocka_unit_test(test_evict_in_same_read_cuts_ahead),
        cmocka_unit_test(test_big_plan_warned_once),
    };
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
