/*
 * Launch gating end to end, the daemon's placement plans (harness:
 * gate_harness.h). test_evict_on_arrival: evict orders reach the task that
 * just lost the turn and are carried out on arrival, never inside a graph
 * capture of the program. test_capture_in_other_thread_survives: the shim's
 * own unsafe calls run in RELAXED capture mode. test_ahead_before_grant: with
 * the chunk placement under a capacity, the task expected next prefetches part
 * of its working set while the other task still runs (the daemon's fill
 * ahead), and its own fill does not repeat it (read from the driver double's
 * record of prefetches). The watcher thread's evictions inside a context keep
 * a destruction of that context waiting until it left it; a migration stream
 * found joined to a capture of the program is not used again.
 * test_pinned_leaves_room: the chunk placement plans managed memory only into
 * the room a task's pinned memory (a CUDA array) leaves under its capacity.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gate_harness.h"
#include "tproc.h"

/* The fill-ahead test: program 0 holds the GPU, paused after its first kernel until
 * `ahead_go` exists; programs 1 and 2 (working sets of a 4 KiB buffer and 4 MiB more: 4
 * chunks of 2 MiB, or 3) start once `gmux status` shows it running, and `ahead_go` is
 * made once `gmux status` shows both waiting, so when program 0 is done the daemon
 * grants one of them and fills the other ahead however long they took to start. Their
 * 40 kernels of 20 ms give the one filled ahead 0.8 s to be scheduled and prefetch while
 * the other runs, even on a loaded machine. Until 2026-12-01 program 0 held the GPU with
 * one 3 s kernel instead: on a loaded machine (TSan) a program that had not announced
 * itself by its end was not expected next, and neither got a fill ahead. */
static char ahead_go[256];
static gh_spec_t ahead_specs[3] = {
    {"batch", "6", "2", "1000", "0", "0", ahead_go, NULL, NULL},
    {"batch", "7", "40", "20000", "0", "4", NULL, NULL, NULL},
    {"batch", "8", "40", "20000", "0", "4", NULL, NULL, NULL},
};

static int ahead_child(int index, void *arg)
{
    (void)arg;
    static char out[65536], err[4096];
    char *st[] = {GMUX_BIN, "status", "--json", "--socket", gh_sock, NULL};
    if (index == 3) { /* the two others wait: program 0 may go on */
        const char *last;
        int ok = gh_status_wait("\"state\": \"pending\"", 2, &last);
        FILE *f = fopen(ahead_go, "w");
        if (f)
            fclose(f);
        return ok && f ? 0 : 1;
    }
    for (int i = 0; index > 0 && i < 3000; i++) {
        if (tproc_capture(st, NULL, 10.0, out, sizeof(out), err, sizeof(err)) == 0 &&
            strstr(out, "\"state\": \"running\""))
            break;
        gh_sleep_ms(20);
    }
    char *const *a = gh_prog_argv(index, &ahead_specs[index], 1);
    execv(a[0], a);
    _exit(127);
}

static void run_ahead(int ahead, gh_out_t *outs)
{
    /* 7 chunks: one working set (3 or 4 chunks), part of the other, the holder's (1) */
    setenv("GMUX_DAEMON_CAPACITY", "14MiB", 1);
    /* every task runs all its kernels in one turn (GMUX_GATE_IDLE_MS below: no
     * stall between two of its launches gives it back) */
    setenv("GMUX_DAEMON_QUANTUM_MS", "200000", 1);
    setenv("GMUX_DAEMON_AHEAD", ahead ? "1" : "0", 1);
    pid_t d = gh_start_daemon("chunk");
    unsetenv("GMUX_DAEMON_CAPACITY");
    unsetenv("GMUX_DAEMON_QUANTUM_MS");
    unsetenv("GMUX_DAEMON_AHEAD");
    /* No stall gives a turn back (program 0 keeps it through its pause), and no
     * wait for a turn times out however slowly the programs start. */
    setenv("GMUX_GATE_IDLE_MS", "600000", 1);
    setenv("GMUX_DAEMON_TURN_TIMEOUT_MS", "200000", 1);
    unlink(ahead_go);
    int status[4];
    int bad = tproc_fork_all(4, ahead_child, NULL, 240.0, status);
    setenv("GMUX_GATE_IDLE_MS", "200", 1);
    unsetenv("GMUX_DAEMON_TURN_TIMEOUT_MS");
    gh_stop_daemon(d, SIGTERM);
    for (int i = 0; bad && i < 4; i++)
        print_message("child %d: exit %d\n", i, status[i]);
    assert_int_equal(bad, 0);
    assert_int_equal(status[3], 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(status[i], 0);
        gh_read_out(i, &outs[i]);
        assert_int_equal(outs[i].n, strtoul(ahead_specs[i].n, NULL, 10));
    }
}

static void test_ahead_before_grant(void **state)
{
    (void)state;
    static gh_out_t none[3], off[3], on[3];
    setenv("GMUX_POLICY", "demand", 1); /* no prefetch of its own: only the daemon's plans */
    snprintf(ahead_go, sizeof(ahead_go), "%s", gh_path("ahead_go"));
    gh_touch("ahead_go"); /* without a daemon program 0 does not wait */
    char *const *argvs[3];
    int status[3];
    for (int i = 0; i < 3; i++)
        argvs[i] = gh_prog_argv(i, &ahead_specs[i], 0);
    assert_int_equal(tproc_run_all(3, (char *const *const *)argvs, 240.0, status), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(status[i], 0);
        gh_read_out(i, &none[i]);
    }
    run_ahead(0, off);
    run_ahead(1, on);
    setenv("GMUX_POLICY", "proactive", 1);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(off[i].checksum, none[i].checksum);
        assert_string_equal(on[i].checksum, none[i].checksum);
        assert_int_equal(off[i].ahead_plans, 0); /* GMUX_DAEMON_AHEAD=0 */
        assert_true(on[i].gate_waits > 0);
    }
    /* b: the program filled ahead; a: the one granted before it. */
    int b = on[1].ahead_plans > 0 ? 1 : 2, a = 3 - b;
    const gh_out_t *pb = &on[b], *pa = &on[a];
    print_message("ahead: program %d got %llu plans, %llu bytes; %zu device prefetches seen\n", b,
                  pb->ahead_plans, pb->ahead_bytes, pb->nd);
    assert_true(pb->ahead_plans >= 1);
    assert_true(pb->ahead_bytes > 0);
    assert_true(pb->nd > 0);
    /* Its first prefetch to the device came while a still ran its kernels: a ran
     * kernels after it and before b's first (turns are exclusive: b's grant came
     * after those). Not a_last < b_first: on a loaded machine a stall between two of
     * a's launches can give its turn back before its last kernel. */
    unsigned long long b_first = pb->t[0][0];
    size_t a_between = 0, a_after = 0;
    for (size_t k = 0; k < pa->n; k++) {
        a_between += pa->t[k][0] > pb->d[0][0] && pa->t[k][1] < b_first;
        a_after += pa->t[k][0] > b_first;
    }
    print_message("ahead: %zu kernels of program %d ran between the first prefetch of "
                  "program %d and its first kernel, %zu after that\n",
                  a_between, a, b, a_after);
    assert_true(pb->d[0][0] < b_first);
    assert_true(a_between > 0);
    /* Up to b's first kernel, no range went to the device twice: the fill at its grant
     * did not repeat what was filled ahead; and there were more bytes than ahead. */
    unsigned long long before = 0;
    for (size_t i = 0; i < pb->nd && pb->d[i][0] < b_first; i++) {
        before += pb->d[i][2];
        for (size_t j = 0; j < i; j++)
            assert_false(pb->d[i][1] < pb->d[j][1] + pb->d[j][2] &&
                         pb->d[j][1] < pb->d[i][1] + pb->d[i][2]);
    }
    assert_true(before >= pb->ahead_bytes);
}

/* Evict orders reach the task that just lost the turn (they make room for
 * the task granted) and are carried out on arrival, while the other task
 * runs. They used to wait for the task's own next turn, where they freed
 * nothing in time and evicted what that grant filled again. */
/* Program 1 starts once program 0 paused (out0.paused), and program 0's pause
 * lasts until program 1 is done (out1 written): program 1's turn, and the
 * evictions it brings program 0, fall inside that pause however loaded the
 * machine is. */
static char p0_paused[256], p1_done[256];
static const gh_spec_t evict_specs[10][2] = {
    /* both launch all along (0.75 s of kernels each: they overlap even when one
     * starts late on a loaded machine), turns of 20 ms: the waiting launching
     * thread evicts */
    {{"batch", "9", "150", "5000", "0", NULL, NULL, NULL, NULL},
     {"batch", "10", "150", "5000", "0", NULL, NULL, NULL, NULL}},
    /* program 0 pauses after 10 kernels and goes idle; program 1 gets the turn
     * then, its chunk evicting program 0's (one chunk of room), and program 0's
     * watcher thread evicts (no launch waits). Program 0 launches on a
     * non-blocking stream, which the legacy stream does not wait for: the
     * evictions must also wait on it */
    {{"batch", "11", "20", "5000", "0", NULL, p1_done, NULL, "1"},
     {"batch", "12", "40", "5000", p0_paused, NULL, NULL, NULL, NULL}},
    /* the same while program 0 captures a graph on a blocking stream through
     * its pause: using the legacy stream then would invalidate the capture
     * (program 0 exits 16), so its evictions wait for the capture's end */
    {{"batch", "11", "20", "5000", "0", NULL, p1_done, "1", NULL},
     {"batch", "12", "40", "5000", p0_paused, NULL, NULL, NULL, NULL}},
    /* program 0's own non-blocking stream captures through its pause: an
     * event recorded there would join the migration stream to the capture
     * (exit 16), so its evictions wait for the capture's end too */
    {{"batch", "11", "20", "5000", "0", NULL, p1_done, "2", "1"},
     {"batch", "12", "40", "5000", p0_paused, NULL, NULL, NULL, NULL}},
    /* another thread of program 0 begins capturing its non-blocking stream
     * right after the shim's query of it (the double begins it through the
     * shim's cuStreamBeginCapture hook): the shim's event record there, and
     * the migration stream's wait, would join the capture (exit 16); the
     * capture's beginning waits for the shim's ordering to be done instead */
    {{"batch", "11", "20", "5000", "0", NULL, p1_done, "4", "1"},
     {"batch", "12", "40", "5000", p0_paused, NULL, NULL, NULL, NULL}},
    /* program 0 runs in a context of its own, which another of its threads
     * destroys (and creates again at the same handle) just as the watcher
     * thread pushes it to evict: the destruction must wait until the
     * watcher left the context, or the watcher works in a destroyed one, or
     * in the new context at its handle (program 0 exits 19) */
    {{"batch", "11", "20", "5000", "0", NULL, p1_done, "5", NULL},
     {"batch", "12", "40", "5000", p0_paused, NULL, NULL, NULL, NULL}},
    /* as 4, but the capture begins where the shim does not see it (the
     * double's own entry point), so the shim's record on that stream joins
     * its migration stream to the capture: found, the stream must be left to
     * the capture, or the next launch's migrations are captured instead of
     * run (program 0 exits 20) */
    {{"batch", "11", "20", "5000", "0", NULL, p1_done, "6", "1"},
     {"batch", "12", "40", "5000", p0_paused, NULL, NULL, NULL, NULL}},
    /* as 2, the capture begun by program 0 on its per-thread default stream
     * (cuStreamBeginCapture_v2_ptsz, mode GLOBAL), a blocking stream: the
     * legacy stream is unusable through it (exit 16 if the evictions'
     * order invalidated it), so its evictions wait for the capture's end */
    {{"batch", "11", "20", "5000", "0", NULL, p1_done, "15", NULL},
     {"batch", "12", "40", "5000", p0_paused, NULL, NULL, NULL, NULL}},
    /* as 1, program 0 launching on a blocking stream of its own, which the
     * shim does not track: the legacy stream waits for it, so the evictions,
     * ordered after the legacy stream's queued work, are after its kernels
     * too (the double's model of stream order) */
    {{"batch", "11", "20", "5000", "0", NULL, p1_done, NULL, "2"},
     {"batch", "12", "40", "5000", p0_paused, NULL, NULL, NULL, NULL}},
    /* as 1, program 0 launching in a green context, on a stream of it
     * (cuGreenCtxStreamCreate: always non-blocking): the evictions must wait
     * on it too */
    {{"batch", "11", "20", "5000", "0", NULL, p1_done, NULL, "3"},
     {"batch", "12", "40", "5000", p0_paused, NULL, NULL, NULL, NULL}},
};

/* How many of p's evictions were followed by a kernel of q before p's next
 * kernel: none when evictions wait for p's own turn. */
static size_t evictions_before_other(const gh_out_t *p, const gh_out_t *q)
{
    size_t n = 0;
    for (size_t e = 0; e < p->nh; e++) {
        unsigned long long t = p->h[e][0], next = ~0ull;
        for (size_t k = 0; k < p->n; k++)
            if (p->t[k][0] > t && p->t[k][0] < next)
                next = p->t[k][0];
        if (gh_started_in(q, t, next) > 0) {
            n++;
            /* on the migration stream after the work p queued before */
            assert_int_equal(p->h[e][3], 1);
        }
    }
    return n;
}

static void test_evict_on_arrival(void **state)
{
    (void)state;
    snprintf(p0_paused, sizeof(p0_paused), "%s", gh_path("out0.paused"));
    snprintf(p1_done, sizeof(p1_done), "%s", gh_path("out1"));
    for (int sc = 0; sc < 10; sc++) {
        static gh_out_t alone[2], out[2];
        unlink(p0_paused);
        unlink(p1_done);
        char *const *argvs[2];
        int status[2];
        for (int i = 0; i < 2; i++)
            argvs[i] = gh_prog_argv(i, &evict_specs[sc][i], 0);
        assert_int_equal(tproc_run_all(2, (char *const *const *)argvs, 240.0, status), 0);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(status[i], 0);
            gh_read_out(i, &alone[i]);
        }
        /* 0: swap placement evicts the task whose turn was taken; 1: an idle
         * task keeps its memory until a grant needs the room */
        setenv("GMUX_DAEMON_QUANTUM_MS", sc == 0 ? "20" : "5000", 1);
        setenv("GMUX_DAEMON_CAPACITY", "2MiB", 1);
        setenv("GMUX_DAEMON_AHEAD", "0", 1);
        unlink(p0_paused);
        unlink(p1_done);
        pid_t d = gh_start_daemon(sc == 0 ? "swap" : "chunk");
        unsetenv("GMUX_DAEMON_QUANTUM_MS");
        unsetenv("GMUX_DAEMON_CAPACITY");
        unsetenv("GMUX_DAEMON_AHEAD");
        for (int i = 0; i < 2; i++)
            argvs[i] = gh_prog_argv(i, &evict_specs[sc][i], 1);
        int bad = tproc_run_all(2, (char *const *const *)argvs, 240.0, status);
        gh_stop_daemon(d, SIGTERM);
        if (bad)
            print_message("scenario %d: exit %d and %d\n", sc, status[0], status[1]);
        assert_int_equal(bad, 0);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(status[i], 0);
            gh_read_out(i, &out[i]);
            assert_string_equal(out[i].checksum, alone[i].checksum);
        }
        size_t early =
            evictions_before_other(&out[0], &out[1]) + evictions_before_other(&out[1], &out[0]);
        print_message("scenario %d: %zu + %zu evictions, %zu followed by the other's kernels; "
                      "early plans %llu + %llu, deferred %llu\n",
                      sc, out[0].nh, out[1].nh, early, out[0].evict_early, out[1].evict_early,
                      out[0].evict_deferred);
        if (sc < 2) {
            assert_true(early > 0);
            assert_true(out[0].evict_early + out[1].evict_early > 0);
        }
        if (sc >= 1) {
            /* program 0's buffer left while it paused (between its two halves),
             * before program 1, granted then, was done; not while it captured */
            const gh_out_t *p = &out[0], *q = &out[1];
            assert_true(p->cap_from > 0 && p->cap_to > p->cap_from);
            size_t in_pause = 0;
            for (size_t e = 0; e < p->nh; e++)
                in_pause += p->h[e][0] > p->cap_from && p->h[e][0] < p->cap_to &&
                            p->h[e][0] < q->t[q->n - 1][1];
            if (sc == 4) /* the capture began after the shim's query, and held */
                assert_int_equal(p->armed, 1);
            else if (sc == 5) /* the watcher entered the context during the pause */
                assert_int_equal(p->armed, 1);
            else if (sc == 6) { /* the capture began, and the shim found its stream in it */
                assert_int_equal(p->armed, 1);
                assert_true(p->capture_joined > 0);
            } else if (sc == 1 || sc >= 8) {
                assert_true(in_pause > 0);
                for (size_t e = 0; e < p->nh; e++) /* each after program 0's kernels */
                    assert_int_equal(p->h[e][3], 1);
            } else {
                assert_int_equal(in_pause, 0);
                assert_true(p->evict_deferred > 0);
                /* done once the capture ended, unless program 0's next grant
                 * gave that memory back first (the daemon keeps it queued
                 * through its pause, so that grant may come before the
                 * capture's end): its fill then cancels the eviction */
                assert_true(p->nh > 0 || p->evict_cancelled > 0);
            }
        }
    }
}

/* Another thread of program 0 captures a graph in mode GLOBAL all through
 * its launches, under swap placement with turns of 20 ms: at each grant the
 * launching thread applies a plan and waits for its migration stream
 * (cuStreamSynchronize), a potentially unsafe call that, made in the
 * thread's default GLOBAL mode, invalidates that capture in the real driver
 * and in the double (program 0 exits 16). The shim makes its own such calls
 * in RELAXED mode. */
static const gh_spec_t capture_specs[2] = {
    {"batch", "13", "100", "2000", "0", NULL, "0", "3", NULL},
    {"batch", "14", "100", "2000", "0", NULL, NULL, NULL, NULL},
};

static void test_capture_in_other_thread_survives(void **state)
{
    (void)state;
    char *const *argvs[2];
    int status[2];
    setenv("GMUX_DAEMON_QUANTUM_MS", "20", 1);
    pid_t d = gh_start_daemon("swap");
    unsetenv("GMUX_DAEMON_QUANTUM_MS");
    for (int i = 0; i < 2; i++)
        argvs[i] = gh_prog_argv(i, &capture_specs[i], 1);
    status[0] = status[1] = -1;
    (void)tproc_run_all(2, (char *const *const *)argvs, 240.0, status);
    gh_stop_daemon(d, SIGTERM);
    gh_out_t out;
    gh_read_out(0, &out);
    print_message("capturing program: %llu plans applied, exit %d\n", out.gate_plans, status[0]);
    assert_true(out.gate_plans > 0); /* the shim waited for its stream during the capture */
    assert_true(out.relaxed > 0);    /* and did so in mode RELAXED (the double's count) */
    assert_int_equal(status[0], 0);
    assert_int_equal(status[1], 0);
}

/* One program with a CUDA array of 6 MiB (pinned: no plan moves it) and 8
 * MiB of managed working set (and its 4 KiB buffer), under the chunk
 * placement with 10 MiB of capacity: the daemon's fills, which the shim
 * prefetches (demand policy: nothing of its own), take at most the 4 MiB the
 * array leaves. The shim reports the array's bytes in its STATS before its
 * first wait. Until 2026-12-04 the placement planned the whole capacity for
 * managed memory: the program prefetched 6 MiB (the 5 chunks, clipped to its
 * allocations). */
static void test_pinned_leaves_room(void **state)
{
    (void)state;
    static gh_spec_t spec = {"batch", "10", "4", "1000", "0", "8", NULL, NULL, NULL};
    static gh_out_t out;
    setenv("GMUX_DAEMON_CAPACITY", "10MiB", 1);
    pid_t d = gh_start_daemon("chunk");
    unsetenv("GMUX_DAEMON_CAPACITY");
    setenv("GMUX_POLICY", "demand", 1);
    setenv("GATE_PROG_ARRAY_MIB", "6", 1);
    gh_run_progs(1, &spec, 1, &out);
    unsetenv("GATE_PROG_ARRAY_MIB");
    setenv("GMUX_POLICY", "proactive", 1);
    gh_stop_daemon(d, SIGTERM);
    unsigned long long filled = 0;
    for (size_t i = 0; i < out.nd; i++)
        filled += out.d[i][2];
    print_message("pinned: %zu prefetches to the device, %llu bytes, %llu plans\n", out.nd, filled,
                  out.gate_plans);
    assert_true(out.nd < 64); /* all of them seen */
    assert_true(filled > 0);
    assert_true(filled <= 4ull << 20);
}

int main(void)
{
    gh_init();
    const struct CMUnitTest tests[] = {
        GH_TEST(test_evict_on_arrival),
        GH_TEST(test_capture_in_other_thread_survives),
        GH_TEST(test_ahead_before_grant),
        GH_TEST(test_pinned_leaves_room),
    };
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
