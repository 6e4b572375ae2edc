/*
 * Multi-process tests of net over loopback: `gmux launch` runs net_rank with
 * 2, 4 and 8 ranks on the provider this binary was built for (NET_PROVIDER).
 * Each case checks the exit status and that every rank reported success.
 * Built twice per provider: test_net_<prov> (the suite) and, with NET_AUDIT,
 * test_net_audit_<prov> (the scenarios of net_rank_audit.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tproc.h"

/* The rounds of the 2-rank ordering stresses (order, mixed): fewer under
 * TSan, where every access of the ranks' threads is a call and the suite
 * came near its timeout on a loaded 2-core host. The count is exposure to
 * interleavings, not what the mode checks (every signal after its data,
 * per thread); the plain build keeps the full count. */
#if defined(__SANITIZE_THREAD__)
#define ROUNDS_2RANK "5000"
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ROUNDS_2RANK "5000"
#endif
#endif
#ifndef ROUNDS_2RANK
#define ROUNDS_2RANK "20000"
#endif

static char out[1 << 16], err[1 << 16];
static const char *extra_env; /* one more VAR=VALUE for the ranks, or NULL */

static int count(const char *s, const char *needle)
{
    int k = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        k++;
    return k;
}

/* Runs `gmux launch -n N -- net_rank ARGS...`; returns the launcher's status. */
static int launch(int n, const char *a1, const char *a2, const char *a3)
{
    char nbuf[16];
    snprintf(nbuf, sizeof(nbuf), "%d", n);
    char *argv[] = {GMUX_CLI_PATH, "launch",      "-n",       nbuf,       "--timeout", "100",
                    "--",          NET_RANK_PATH, (char *)a1, (char *)a2, (char *)a3,  NULL};
    char *env[] = {"GMUX_NET_PROVIDER=" NET_PROVIDER, (char *)extra_env, NULL};
    int st = tproc_capture(argv, env, 120.0, out, sizeof(out), err, sizeof(err));
    if (st != 0)
        fprintf(stderr, "net_rank %s (n=%d) status %d\nstdout:\n%s\nstderr:\n%s\n", a1, n, st, out,
                err);
    return st;
}

/* A job whose last rank is killed. The launcher's status is the first
 * failure's (the victim's 128 + SIGKILL), so a survivor that then exits
 * non-zero or reports a sanitizer error shows only in the launcher's lines
 * and the ranks' stderr. */
static void expect_killed(int n, const char *a1, const char *a2, const char *a3)
{
    assert_int_equal(launch(n, a1, a2, a3), 128 + 9);
    assert_int_equal(count(err, "exited with status"), 0);
    assert_int_equal(count(err, "ERROR: AddressSanitizer") + count(err, "ERROR: LeakSanitizer") +
                         count(err, "WARNING: ThreadSanitizer") + count(err, "runtime error:"),
                     0);
}

static void expect_ok(int n, const char *a1, const char *a2, const char *a3, const char *line)
{
    assert_int_equal(launch(n, a1, a2, a3), 0);
    assert_int_equal(count(out, line), n);
}

#ifndef NET_AUDIT
static void test_data(void **state)
{
    (void)state;
    expect_ok(2, "data", "67108864", NULL, "data ok up to 67108864 bytes over " NET_PROV_NAME);
    expect_ok(4, "data", "4194304", NULL, "data ok");
    expect_ok(8, "data", "1048576", NULL, "data ok");
}

static void test_semantics(void **state)
{
    (void)state;
    expect_ok(2, "semantics", NULL, NULL, "semantics ok");
    expect_ok(4, "semantics", NULL, NULL, "semantics ok");
    expect_ok(8, "semantics", NULL, NULL, "semantics ok");
}

static void test_teams(void **state)
{
    (void)state;
    expect_ok(2, "teams", NULL, NULL, "teams ok");
    expect_ok(4, "teams", NULL, NULL, "teams ok");
    expect_ok(8, "teams", NULL, NULL, "teams ok");
}

static void test_order(void **state)
{
    (void)state;
    expect_ok(2, "order", ROUNDS_2RANK, "4", "order ok");
    expect_ok(4, "order", "5000", "4", "order ok");
    expect_ok(8, "order", "2000", "2", "order ok");
}

/* With inline progress off the proxy thread alone drains the rings (as for a
 * GPU producer), so it finds runs of descriptors and merges them
 * (src/net/coalesce.h): the ordering stress and the runs of contiguous puts
 * must hold there too; GMUX_NET_COALESCE=0 runs the same without merging. */
static void test_order_proxy_only(void **state)
{
    (void)state;
    extra_env = "GMUX_NET_INLINE_PROGRESS=0";
    expect_ok(2, "order", ROUNDS_2RANK, "4", "order ok");
    expect_ok(2, "coalesce", "3000", NULL, "coalesce ok");
    expect_ok(4, "coalesce", "1000", NULL, "coalesce ok");
    extra_env = "GMUX_NET_COALESCE=0";
    expect_ok(2, "coalesce", "1000", NULL, "coalesce ok");
    extra_env = NULL;
    expect_ok(2, "coalesce", "1000", NULL, "coalesce ok");
}

/* Several threads on one stream, their operations executed directly or
 * queued in the ring (src/net/proxy.c, net_progress_direct); the ordering
 * stress with the direct path off as well. */
static void test_mixed(void **state)
{
    (void)state;
    expect_ok(2, "mixed", ROUNDS_2RANK, "4", "mixed ok");
    expect_ok(4, "mixed", "5000", "3", "mixed ok");
    extra_env = "GMUX_NET_DIRECT=0";
    expect_ok(2, "mixed", "5000", "4", "mixed ok");
    expect_ok(2, "order", ROUNDS_2RANK, "4", "order ok");
    extra_env = NULL;
}

/* Device memory through FI_HMEM (net_rank_hmem.c, host memory standing in
 * for the GPU's): off must stage; shm with GMUX_NET_HMEM=rma must go direct
 * (libfabric 1.17's shm offers FI_HMEM only without remote atomics); auto
 * takes what the provider offers with everything else. */
static void test_hmem(void **state)
{
    (void)state;
    extra_env = "GMUX_NET_HMEM=off";
    expect_ok(2, "hmem", "staged", NULL, "hmem ok (staged");
    extra_env = "GMUX_NET_HMEM=rma";
    if (strcmp(NET_PROVIDER, "shm") == 0) {
        expect_ok(2, "hmem", "direct", NULL, "hmem ok (direct, atomics no)");
        expect_ok(4, "hmem", "direct", NULL, "hmem ok (direct");
    } else {
        expect_ok(2, "hmem", "any", NULL, "hmem ok");
    }
    extra_env = NULL;
    expect_ok(2, "hmem", "any", NULL, "hmem ok");
    expect_ok(3, "hmem", "any", NULL, "atomics yes"); /* auto keeps them */
}

/* Ranks that join with different shapes are all refused at once (net_rank
 * shape: the last rank differs), rank 0 saying what differs. The ranks'
 * timeout is an hour: a refusal that waited for it would be stopped by the
 * launcher's --timeout (status 124), so the job ending 0 with every rank
 * refused is the proof, with no time measured. */
static void test_shape(void **state)
{
    (void)state;
    const char *what[] = {"ctx", "sig", "provider", "hmem"};
    for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
        /* hmem: only shm gives up its remote atomics for FI_HMEM */
        if (strcmp(what[i], "hmem") == 0 && strcmp(NET_PROVIDER, "shm") != 0)
            continue;
        int n = i % 2 ? 3 : 2;
        expect_ok(n, "shape", what[i], NULL, "refused");
        assert_int_equal(count(err, "ranks of one job differ"), 1);
    }
}

/* The survivors call gmux_comm_finalize (which returns GMUX_ERR_PEER) and
 * exit 0: the launcher must take that as an orderly end, not name them as
 * ranks that exited "without gmux_comm_finalize" (before, finalize said its
 * BYE only when it returned GMUX_OK, so every survivor of a death was
 * counted as a failure of its own). */
static void test_peer_killed(void **state)
{
    (void)state;
    for (int n = 2; n <= 4; n += 2) {
        expect_killed(n, "kill", NULL, NULL);
        assert_int_equal(count(out, "peer failure detected (GMUX_ERR_PEER)"), n - 1);
        assert_int_equal(count(err, "rank "
                                    "1 killed") +
                             count(err, "rank 3 killed"),
                         1);
        if (count(err, "without gmux_comm_finalize") != 0)
            fprintf(stderr, "survivors named as not finalised (n=%d):\n%s\n", n, err);
        assert_int_equal(count(err, "without gmux_comm_finalize"), 0);
        assert_int_equal(count(err, "stopped by gmux"), 0); /* all ended by themselves */
    }
}

/* A survivor still inside the barrier of rank_kill_start when the victim
 * leaves it (a loaded machine; here rank 0, held there by NET_RANK_KILL_STALL,
 * net_rank_stall.c) must still leave it: the victim dies only once every
 * survivor did (before, it died 200 ms after its own exit and rank 0 failed
 * `rank_kill.h: check failed ... GMUX_ERR_PEER`). */
static void test_peer_killed_stalled(void **state)
{
    (void)state;
    extra_env = "NET_RANK_KILL_STALL=1";
    for (int n = 2; n <= 4; n += 2) {
        expect_killed(n, "kill", NULL, NULL);
        assert_int_equal(count(out, "peer failure detected (GMUX_ERR_PEER)"), n - 1);
    }
}

static int no_extra_env(void **state)
{
    (void)state;
    extra_env = NULL; /* also when an assertion ended the test */
    return 0;
}

/* How a survivor names the others: the victim died; a survivor that
 * finalized after the death left (the rendezvous announces it to those
 * still running, and said "left after a death" while the ranks said "died").
 * Rank 0 lingers until it has heard of every other rank (net_rank kill
 * linger). */
static void test_peer_killed_names_who_left(void **state)
{
    (void)state;
    for (int n = 3; n <= 4; n++) {
        expect_killed(n, "kill", "linger", NULL);
        char line[64];
        snprintf(line, sizeof(line), "rank 0: rank %d died", n - 1);
        assert_int_equal(count(err, line), 1);
        for (int r = 1; r < n - 1; r++) {
            snprintf(line, sizeof(line), "rank 0: rank %d left after a death", r);
            if (count(err, line) != 1)
                fprintf(stderr, "rank %d not named as left (n=%d):\n%s\n", r, n, err);
            assert_int_equal(count(err, line), 1);
            snprintf(line, sizeof(line), "rank 0: rank %d died", r);
            assert_int_equal(count(err, line), 0);
        }
    }
}

/* shm: the victim dies holding its own region lock and rank 0's (as if
 * killed inside libfabric); the survivors must still fail cleanly, well
 * before the launcher's grace would kill them (src/net/shmguard.h). */
static void test_peer_killed_holding_lock(void **state)
{
    (void)state;
    if (strcmp(NET_PROVIDER, "shm") != 0)
        skip();
    for (int n = 2; n <= 4; n += 2) {
        expect_killed(n, "killlock", NULL, NULL);
        assert_int_equal(count(out, "peer failure detected (GMUX_ERR_PEER)"), n - 1);
        assert_int_equal(count(err, "killed by signal"), 1); /* nobody needed the grace */
        assert_int_equal(count(err, "without gmux_comm_finalize"), 0);
    }
}

/* shm: after a death, a live rank that stays inside its own critical
 * section for longer than the guard's period keeps its lock (before, the
 * guard took any lock held that long for a dead rank's and released it). */
static void test_guard_leaves_live_holder(void **state)
{
    (void)state;
    if (strcmp(NET_PROVIDER, "shm") != 0)
        skip();
    for (int n = 2; n <= 3; n++) {
        expect_killed(n, "guardlive", NULL, NULL);
        assert_int_equal(count(out, "guardlive ok"), n - 1);
    }
}

#else /* NET_AUDIT */

/* Defects an audit found (net_rank_audit.c). */
static void test_quiet_two_threads(void **state)
{
    (void)state;
    expect_ok(2, "quiet2", NULL, NULL, "quiet2 ok");
}

/* A get and an atomic that timed out must not write their caller's memory
 * when they complete later. */
static void test_fetch_after_timeout(void **state)
{
    (void)state;
    expect_ok(2, "fetchlate", NULL, NULL, "fetchlate ok");
}

/* tcp: a truncated receive breaks the connection (rxm), so shm only */
static void test_receive_errors(void **state)
{
    (void)state;
    if (strcmp(NET_PROVIDER, "shm") != 0)
        skip();
    expect_ok(2, "rxerr", NULL, NULL, "rxerr ok");
}

/* The last rank dies with writes to it outstanding: the first pass after
 * the death gives every op back, some taken back by the reclaim, on each
 * survivor. */
static void test_dead_peer_ops(void **state)
{
    (void)state;
    expect_killed(2, "deadops", NULL, NULL);
    assert_int_equal(count(out, "deadops ok"), 1);
    expect_killed(3, "deadops", NULL, NULL);
    assert_int_equal(count(out, "deadops ok"), 2);
}

/* A get whose own progress pass learns of its target's death (after the
 * reclaim ran) posts nothing that would stay held for good. */
static void test_dead_peer_fetch(void **state)
{
    (void)state;
    expect_killed(2, "deadfetch", NULL, NULL);
    assert_int_equal(count(out, "deadfetch ok"), 1);
}

/* Puts queued to a rank whose death the next pass reads: that pass reclaims
 * first, then drains them, and posts none that would stay held. */
static void test_dead_peer_ring(void **state)
{
    (void)state;
    expect_killed(2, "deadring", NULL, NULL);
    assert_int_equal(count(out, "deadring ok"), 1);
}

/* A device window registration refused by one rank's handle fails on all. */
static void test_dev_window_fails_together(void **state)
{
    (void)state;
    expect_ok(2, "devwinbad", NULL, NULL, "devwinbad ok");
    expect_ok(3, "devwinbad", NULL, NULL, "devwinbad ok");
}

/* A late completion of an op taken back is ignored, not given to the next op. */
static void test_stale_completion(void **state)
{
    (void)state;
    expect_ok(2, "staleop", NULL, NULL, "staleop ok");
}

/* A staged window that fails on one rank before the exchange fails on all,
 * and the next registration pairs with the next everywhere. */
static void test_stage_window_fails_together(void **state)
{
    (void)state;
    expect_ok(2, "stagefull", NULL, NULL, "stagefull ok");
    expect_ok(3, "stagefull", NULL, NULL, "stagefull ok");
}

#endif /* NET_AUDIT */

int main(void)
{
#ifndef NET_AUDIT
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data),
        cmocka_unit_test(test_semantics),
        cmocka_unit_test(test_teams),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_order_proxy_only),
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_hmem),
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_peer_killed),
        cmocka_unit_test_teardown(test_peer_killed_stalled, no_extra_env),
        cmocka_unit_test(test_peer_killed_names_who_left),
        cmocka_unit_test(test_peer_killed_holding_lock),
        cmocka_unit_test(test_guard_leaves_live_holder),
    };
#else /* test_net_audit_*: the audit's scenarios, apart from the long suite */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quiet_two_threads),
        cmocka_unit_test(test_receive_errors),
        cmocka_unit_test(test_fetch_after_timeout),
        cmocka_unit_test(test_dead_peer_ops),
        cmocka_unit_test(test_dead_peer_fetch),
        cmocka_unit_test(test_dead_peer_ring),
        cmocka_unit_test(test_stage_window_fails_together),
        cmocka_unit_test(test_stale_completion),
        cmocka_unit_test(test_dev_window_fails_together),
    };
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}
