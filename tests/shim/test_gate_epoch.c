/*
 * Launch gating end to end, orders that are over (harness: gate_harness.h).
 * A scripted daemon (a process of this test speaking the protocol, not gmuxd)
 * drives the program through the cases:
 *
 * - Orders of a daemon that died: it grants the program a turn and, while
 *   the program holds it, sends it a PLAN fill and a PLAN ahead, which the
 *   shim's watcher thread stores for the next turn, then revokes the turn and
 *   dies. The program registers again with a real gmuxd (placement none: it
 *   orders nothing) and takes its next turn there: the orders of the dead
 *   daemon must not be carried out. The shim applied them at that turn, on
 *   the new daemon's grant, as if the new daemon had sent them.
 * - A fill of a grant the program never used: the daemon sends a fill for
 *   grant 2 with that grant and revokes it before a launch asks for it, then
 *   grants turn 3 with a fill of its own. Only grant 3's fill may be carried
 *   out: the shim applied grant 2's at grant 3 too.
 * - A fill ahead that a later switch took back: while the program is out of
 *   the gate (paused), the daemon sends it a fill ahead (grant 2, another
 *   task's) and then, at a later switch (grant 3), an eviction of part of
 *   it; the watcher thread stores the first and carries out the second at
 *   once. The part evicted is memory the daemon has given to the task of
 *   grant 3: the program's next wait may prefetch the rest of the fill
 *   ahead, never that part. The shim prefetched all of it (after the
 *   eviction) when its launching thread next waited.
 * - A fill that a later switch took back before the task carried it out:
 *   the daemon answers the program's first PENDING with a fill of grant 1,
 *   GRANT 1 and an eviction of grant 2 of part of that fill (gmuxd's shared
 *   mode grants another task beside a holder and may evict the holder's
 *   memory for it). The part evicted must not be prefetched after its
 *   eviction: the shim did, at grant 1.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "daemon/proto.h"
#include "gate_harness.h"
#include "gate_script.h"
#include "tproc.h"

static char go[256];
/* 20 kernels, a pause at half of them until `go` exists; 1 MiB more of
 * working set, so the orders below fall inside a managed allocation */
static gh_spec_t spec = {"batch", "9", "20", "1000", "0", "1", go, NULL, NULL};

#define FILL_OFF  8192u  /* the dead daemon's orders, offsets in the largest range */
#define AHEAD_OFF 65536u /* of the program's PENDING, 4 KiB each */

/* The scripted daemon: answers the program's REGISTER, grants its PENDING,
 * and once the program paused holding the turn sends it a fill and a fill
 * ahead, then a REVOKE; after the RELEASE (the client read the orders before
 * it) it exits, which closes every connection. Exit status: 0, or the step
 * that failed. */
static int scripted_daemon(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    dmn_msg_t m;
    dmn_range_t big;
    int task = gs_grant_to_pause(ready, buf, fds, &nfd, &big);
    if (task < 0)
        return -task;
    dmn_range_t fill = {big.base + FILL_OFF, 4096}, ahead = {big.base + AHEAD_OFF, 4096};
    dmn_msg_grant_t rv = {1, 0, 0, 0, 0};
    if (tmsg_write_all(task, buf,
                       dmn_proto_encode_ranges(buf, sizeof(buf), 3, DMN_MSG_PLAN, DMN_PLAN_FILL, 1,
                                               &fill, 1)) != 0 ||
        tmsg_write_all(task, buf,
                       dmn_proto_encode_ranges(buf, sizeof(buf), 4, DMN_MSG_PLAN, DMN_PLAN_AHEAD, 1,
                                               &ahead, 1)) != 0 ||
        tmsg_write_all(task, buf,
                       dmn_proto_encode_grant(buf, sizeof(buf), 5, DMN_MSG_REVOKE, &rv)) != 0)
        return 17;
    if (gs_read_until(task, buf, DMN_MSG_RELEASE, &m) != 0)
        return 18;
    gs_close(fds, nfd); /* dies: every connection closes */
    return 0;
}

/* The scripted daemon of the unused grant: grants turn 1; once the program
 * paused holding it revokes it; then sends, in one write (so no launch can
 * take grant 2 before its REVOKE is read), a fill of STALE_LEN bytes for
 * grant 2, GRANT 2 and REVOKE 2, and lets the program go on; at its next
 * PENDING after the RELEASE of grant 2 it sends a fill of GOOD_LEN bytes for
 * grant 3 and GRANT 3, then waits for the program to end. Exit status: 0, or
 * the step that failed. */
#define STALE_LEN 4096u
#define GOOD_LEN  8192u
static int scripted_unused_grant(int ready)
{
    static gs_conn_t c;
    int rc = gs_conn_paused(ready, &c);
    if (rc != 0)
        return rc;
    gs_batch_revoke(&c.w, 3, 1);
    if (gs_batch_send(c.task, &c.w) != 0 ||
        gs_read_after(c.task, c.buf, DMN_MSG_RELEASE, DMN_MSG_PENDING, &c.m) != 0)
        return 16;
    dmn_range_t stale = {c.big.base + FILL_OFF, STALE_LEN},
                good = {c.big.base + AHEAD_OFF, GOOD_LEN};
    gs_batch_plan(&c.w, 4, DMN_PLAN_FILL, 2, &stale, 1);
    gs_batch_grant(&c.w, 5, 2, c.m.u.ranges.seq);
    gs_batch_revoke(&c.w, 6, 2);
    if (gs_batch_send(c.task, &c.w) != 0)
        return 17;
    gh_touch("go");
    if (gs_read_after(c.task, c.buf, DMN_MSG_RELEASE, DMN_MSG_PENDING, &c.m) != 0)
        return 18;
    gs_batch_plan(&c.w, 7, DMN_PLAN_FILL, 3, &good, 1);
    gs_batch_grant(&c.w, 8, 3, c.m.u.ranges.seq);
    if (gs_batch_send(c.task, &c.w) != 0)
        return 19;
    return gs_finish(c.task, c.buf, c.fds, c.nfd);
}

/* The scripted daemon of the fill ahead taken back: grants turn 1; once the
 * program paused holding it sends, in one write, a fill ahead of grant 2
 * (STALE_X: 12 KiB, and STALE_Y: 4 KiB), an eviction of grant 3 of the
 * middle 4 KiB of STALE_X, and REVOKE 1 (so the RELEASE shows the watcher
 * read all three: gmuxd would send the two plans after the RELEASE, which
 * the gate handles the same way, stored by the watcher); after the RELEASE
 * it lets the program go on and grants its next PENDING (grant 4, no
 * orders), then waits for the program to end. Exit status: 0, or the step
 * that failed. */
#define STALE_X 0x10000u
#define STALE_Y 0x20000u
static int scripted_ahead_taken_back(int ready)
{
    static gs_conn_t c;
    int rc = gs_conn_paused(ready, &c);
    if (rc != 0)
        return rc;
    dmn_range_t ahead[2] = {{c.big.base + STALE_X, 3 * 4096}, {c.big.base + STALE_Y, 4096}};
    dmn_range_t evict = {c.big.base + STALE_X + 4096, 4096};
    gs_batch_plan(&c.w, 3, DMN_PLAN_AHEAD, 2, ahead, 2);
    gs_batch_plan(&c.w, 4, DMN_PLAN_EVICT, 3, &evict, 1);
    gs_batch_revoke(&c.w, 5, 1);
    if (gs_conn_released(&c) != 0)
        return 16;
    gh_touch("go");
    /* the watcher's PENDING after its RELEASE, then the launching thread's */
    if (gs_grant_next(c.task, c.buf, 6, 4) != 0)
        return 17;
    return gs_finish(c.task, c.buf, c.fds, c.nfd);
}

/* The scripted daemon of the fill taken back: answers the program's first
 * PENDING, in one write, with a fill of grant 1 (12 KiB at STALE_X), GRANT 1
 * and an eviction of grant 2 of its middle 4 KiB, lets the program go on
 * (it keeps the turn to its end), and waits for it to end. Exit status: 0,
 * or the step that failed. */
static int scripted_fill_taken_back(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    static gs_batch_t w;
    int fds[8], nfd = 0;
    dmn_msg_t m;
    dmn_range_t big;
    int task = gs_accept_big(ready, buf, fds, &nfd, &m, &big);
    if (task < 0)
        return -task;
    dmn_range_t fill = {big.base + STALE_X, 3 * 4096}, evict = {big.base + STALE_X + 4096, 4096};
    gs_batch_plan(&w, 2, DMN_PLAN_FILL, 1, &fill, 1);
    gs_batch_grant(&w, 3, 1, m.u.ranges.seq);
    gs_batch_plan(&w, 4, DMN_PLAN_EVICT, 2, &evict, 1);
    if (gs_batch_send(task, &w) != 0)
        return 15;
    gh_touch("go");
    return gs_finish(task, buf, fds, nfd);
}

/* Polls `gmux status --json` until it lists a task that reported kernels (a
 * client sends STATS only once it took the daemon's REGISTERED): whether it
 * did within about a minute. */
static int program_registered(void)
{
    static char out[65536], err[4096];
    char *argv[] = {GMUX_BIN, "status", "--json", "--socket", gh_sock, NULL};
    for (int i = 0; i < 3000; i++) {
        const char *k;
        if (tproc_capture(argv, NULL, 10.0, out, sizeof(out), err, sizeof(err)) == 0 &&
            (k = strstr(out, "\"kernels\": ")) && strtoull(k + 11, NULL, 10) > 0)
            return 1;
        gh_sleep_ms(20);
    }
    fprintf(stderr, "last status: %s\n", out);
    return 0;
}

static void test_dead_daemon_orders_void(void **state)
{
    (void)state;
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    unlink(go);
    setenv("GMUX_POLICY", "demand", 1); /* no prefetch of its own: only orders */
    /* no IDLE while paused: the turn stays held until the REVOKE */
    setenv("GMUX_GATE_IDLE_MS", "600000", 1);
    pid_t fake, prog;
    gs_start_pair(&spec, scripted_daemon, &fake, &prog);
    gs_wait_script(fake, prog);
    pid_t d = gh_start_daemon("none");
    int joined = program_registered();
    gh_touch("go");
    int ps = -1;
    assert_int_equal(waitpid(prog, &ps, 0), prog);
    gh_stop_daemon(d, SIGTERM);
    assert_true(joined);
    assert_true(WIFEXITED(ps) && WEXITSTATUS(ps) == 0);
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    gh_read_out(0, o);
    print_message("registered %llu times, %llu waits, %zu prefetches to the device\n",
                  o->gate_registrations, o->gate_waits, o->nd);
    for (size_t i = 0; i < o->nd; i++)
        print_message("  prefetch %#llx + %llu\n", o->d[i][1], o->d[i][2]);
    assert_int_equal(o->n, 20);
    assert_true(o->gate_registrations >= 2);
    /* the dead daemon's fill and fill ahead, carried out under the new one */
    assert_int_equal(o->nd, 0);
    assert_int_equal(o->ahead_plans, 0);
    free(o);
}

static void test_unused_grant_fill_void(void **state)
{
    (void)state;
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    unlink(go);
    unlink(gh_path("out0.paused"));           /* the first case's: wait_paused */
    setenv("GMUX_POLICY", "demand", 1);       /* no prefetch of its own: only orders */
    setenv("GMUX_GATE_IDLE_MS", "600000", 1); /* no IDLE while paused */
    pid_t fake, prog;
    gs_start_pair(&spec, scripted_unused_grant, &fake, &prog);
    gs_wait_pair(fake, prog);
    gh_out_t *o = gs_out0();
    assert_int_equal(o->n, 20);
    /* grant 3's fill only: grant 2's was over when grant 3 came */
    assert_int_equal(o->nd, 1);
    assert_int_equal(o->d[0][2], GOOD_LEN);
    free(o);
}

/* Whether the prefetches to the device of o cover [lo, hi) (4 KiB pages). */
static int prefetched(const gh_out_t *o, unsigned long long lo, unsigned long long hi)
{
    for (unsigned long long p = lo; p < hi; p += 4096) {
        size_t i = 0;
        while (i < o->nd && !(o->d[i][1] <= p && p < o->d[i][1] + o->d[i][2]))
            i++;
        if (i == o->nd)
            return 0;
    }
    return 1;
}

/* Runs script against program 0 and checks that, of the fill at STALE_X
 * (12 KiB), the part evicted (its middle 4 KiB: the one eviction) was not
 * prefetched after its eviction and the rest was prefetched; with_y: the
 * 4 KiB at STALE_Y too. */
static void check_taken_back(int (*script)(int), int with_y)
{
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    unlink(go);
    unlink(gh_path("out0.paused"));           /* an earlier case's: wait_paused */
    setenv("GMUX_POLICY", "demand", 1);       /* no prefetch of its own: only orders */
    setenv("GMUX_GATE_IDLE_MS", "600000", 1); /* no IDLE while paused */
    pid_t fake, prog;
    gs_start_pair(&spec, script, &fake, &prog);
    gs_wait_pair(fake, prog);
    gh_out_t *o = gs_out0();
    assert_int_equal(o->n, 20);
    /* the eviction, carried out on arrival (the task held no turn) */
    assert_int_equal(o->nh, 1);
    unsigned long long ev = o->h[0][1], at = o->h[0][0];
    assert_int_equal(o->h[0][2], 4096);
    unsigned long long x = ev - 4096; /* STALE_X's base in the program */
    /* nothing of it prefetched again after: that memory is another task's */
    for (size_t i = 0; i < o->nd; i++)
        if (o->d[i][0] >= at)
            assert_false(o->d[i][1] < ev + 4096 && ev < o->d[i][1] + o->d[i][2]);
    /* the rest of the fill still goes */
    assert_true(prefetched(o, x, ev));
    assert_true(prefetched(o, ev + 4096, x + 3 * 4096));
    if (with_y)
        assert_true(prefetched(o, x - STALE_X + STALE_Y, x - STALE_X + STALE_Y + 4096));
    free(o);
}

static void test_ahead_taken_back_void(void **state)
{
    (void)state;
    check_taken_back(scripted_ahead_taken_back, 1);
}

static void test_fill_taken_back_void(void **state)
{
    (void)state;
    check_taken_back(scripted_fill_taken_back, 0);
}

int main(void)
{
    gh_init();
    const struct CMUnitTest tests[] = {
        GH_TEST(test_dead_daemon_orders_void),
        GH_TEST(test_unused_grant_fill_void),
        GH_TEST(test_ahead_taken_back_void),
        GH_TEST(test_fill_taken_back_void),
    };
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
