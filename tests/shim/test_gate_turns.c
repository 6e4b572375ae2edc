/*
 * Launch gating end to end, turns (harness: gate_harness.h): kernels of
 * different tasks never overlap in time; a latency task that asks for the GPU
 * gets it within a few kernel boundaries and keeps it while it launches; the
 * checksums are the same with and without the daemon; `gmux run` starts a
 * daemon when none listens. These run with GMUX_DAEMON_SHARE=0 (time slices
 * whatever the footprints); test_shared_when_fits turns it on: the programs'
 * memory fits on the double's device, so gmuxd lets both hold the GPU at once
 * (seen in `gmux status`).
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

static const gh_spec_t specs[GH_MAX_PROGS] = {
    {"batch", "1", "150", "2000", "0", NULL, NULL, NULL, NULL},
    {"batch", "2", "150", "2000", "0", NULL, NULL, NULL, NULL},
    {"latency", "3", "40", "2000", "150", NULL, NULL, NULL, NULL},
};
/* 2 s of kernels each: both programs launch while the other does. */
static const gh_spec_t long_specs[2] = {
    {"batch", "4", "1000", "2000", "0", NULL, NULL, NULL, NULL},
    {"batch", "5", "1000", "2000", "0", NULL, NULL, NULL, NULL},
};
/* The same under the daemon, ordered on what happened: the latency task
 * asks once a batch task has launched (lat_go), and the batch tasks pause
 * half-way until the latency task has asked or is done (lat_asked). Started
 * 150 ms after them, on a loaded machine it could come after they were done
 * (one process starts much later than another), and rightly wait for
 * nobody. */
static char lat_go[256], lat_asked[256];
static const gh_spec_t gated_specs[GH_MAX_PROGS] = {
    {"batch", "1", "150", "2000", "0", "0", lat_asked, NULL, NULL},
    {"batch", "2", "150", "2000", "0", "0", lat_asked, NULL, NULL},
    {"latency", "3", "40", "2000", lat_go, NULL, NULL, NULL, NULL},
};
static gh_out_t ref[GH_MAX_PROGS], got[GH_MAX_PROGS];

/* Polls `gmux status --json` until it shows needle or the file `done`
 * exists (NULL: none), then makes the file `make`: whether it did within
 * about a minute. */
static int make_when_listed(const char *needle, const char *done, const char *make)
{
    static char out[65536], err[4096];
    char *argv[] = {GMUX_BIN, "status", "--json", "--socket", gh_sock, NULL};
    int seen = 0;
    for (int i = 0; i < 3000 && !seen; i++) {
        seen = (tproc_capture(argv, NULL, 10.0, out, sizeof(out), err, sizeof(err)) == 0 &&
                strstr(out, needle)) ||
               (done && access(done, F_OK) == 0);
        if (!seen)
            gh_sleep_ms(20);
    }
    if (!seen)
        fprintf(stderr, "never saw %s; last status:\n%s\n", needle, out);
    FILE *f = fopen(make, "w");
    return seen && f && fclose(f) == 0;
}

/* Child i < 3 of test_turns_are_exclusive: program i; child 3 makes lat_go
 * once `gmux status` lists a batch task (the shim registers at its first
 * launch), and lat_asked once it lists the latency task (or its output is
 * written: it is done). */
static int turns_child(int index, void *arg)
{
    (void)arg;
    if (index < GH_MAX_PROGS) {
        char *const *a = gh_prog_argv(index, &gated_specs[index], 1);
        execv(a[0], a);
        _exit(127);
    }
    int ok = make_when_listed("\"class\": \"batch\"", NULL, lat_go);
    return ok && make_when_listed("\"class\": \"latency\"", gh_path("out2"), lat_asked) ? 0 : 1;
}

static void test_turns_are_exclusive(void **state)
{
    (void)state;
    gh_run_progs(GH_MAX_PROGS, specs, 0, ref);
    for (int i = 0; i < GH_MAX_PROGS; i++)
        assert_int_equal(ref[i].gate_waits, 0);

    /* A latency task starved of CPU for 200 ms (the harness's idle time) would
     * give its turn back as idle, and batch kernels would rightly run between
     * its kernels: a loaded machine, not a defect. Here it keeps the turn for
     * as long as it launches within 2 s. */
    setenv("GMUX_GATE_IDLE_MS", "2000", 1);
    snprintf(lat_go, sizeof(lat_go), "%s", gh_path("lat_go"));
    snprintf(lat_asked, sizeof(lat_asked), "%s", gh_path("lat_asked"));
    unlink(lat_go);
    unlink(lat_asked);
    unlink(gh_path("out2")); /* the run without the daemon's: lat_asked at once */
    pid_t d = gh_start_daemon("swap");
    int status[GH_MAX_PROGS + 1];
    int bad = tproc_fork_all(GH_MAX_PROGS + 1, turns_child, NULL, 240.0, status);
    gh_stop_daemon(d, SIGTERM);
    setenv("GMUX_GATE_IDLE_MS", "200", 1);
    for (int i = 0; bad && i <= GH_MAX_PROGS; i++)
        print_message("child %d: exit %d\n", i, status[i]);
    assert_int_equal(bad, 0);
    for (int i = 0; i < GH_MAX_PROGS; i++) {
        gh_read_out(i, &got[i]);
        assert_int_equal(got[i].n, strtoul(gated_specs[i].n, NULL, 10));
    }
    for (int i = 0; i < GH_MAX_PROGS; i++) {
        assert_string_equal(got[i].checksum, ref[i].checksum);
        assert_true(got[i].gate_waits > 0);
        /* swap placement: plans of each switch were applied through the CUDA backend */
        assert_true(got[i].gate_plans > 0);
        assert_int_equal(ref[i].gate_plans, 0);
        for (int j = i + 1; j < GH_MAX_PROGS; j++)
            assert_int_equal(gh_overlaps(&got[i], &got[j]), 0);
    }
    /* The latency task: once its first kernel ran, no batch kernel starts until its last is
     * done, and it finishes before both batch tasks (it took the GPU from them instead of
     * waiting for them). How many batch kernels start between its request and its first
     * kernel depends on how soon the holder's watcher thread runs (printed, not asserted). */
    const gh_out_t *lat = &got[2];
    unsigned long long first = lat->t[0][0], last = lat->t[lat->n - 1][1];
    size_t during = gh_started_in(&got[0], first, last) + gh_started_in(&got[1], first, last);
    size_t before =
        gh_started_in(&got[0], lat->request, first) + gh_started_in(&got[1], lat->request, first);
    print_message("latency task: %zu batch kernels started between its request and its first "
                  "kernel, %zu while it ran\n",
                  before, during);
    assert_int_equal(during, 0);
    assert_true(last < got[0].t[got[0].n - 1][1]);
    assert_true(last < got[1].t[got[1].n - 1][1]);
}

/* Without a daemon on the socket, `gmux run` starts one and the program joins it. */
static void test_run_starts_daemon(void **state)
{
    (void)state;
    gh_out_t alone;
    gh_run_progs(1, specs, 0, &alone);
    unlink(gh_sock);
    gh_run_progs(1, specs, 1, &got[0]);
    assert_string_equal(got[0].checksum, alone.checksum);
    assert_true(got[0].gate_waits > 0);
    /* the daemon it started is still there: stop it by the pid in its lock file */
    gh_stop_background_daemon();
}

/* The same under the daemon: each pauses half-way until `gmux status` has
 * listed both (both_listed), so their second halves run together however far
 * apart they started (on a loaded machine, one could be done before the
 * other began, and no status could show both running). */
static char both_listed[256];
static const gh_spec_t shared_specs[2] = {
    {"batch", "4", "1000", "2000", "0", "0", both_listed, NULL, NULL},
    {"batch", "5", "1000", "2000", "0", "0", both_listed, NULL, NULL},
};

/* Child 2 of test_shared_when_fits: makes both_listed once `gmux status --json` lists both
 * programs, then polls it until it shows the mode shared with both running at once; exits
 * 0 once seen, 1 after about a minute. */
static int shared_child(int index, void *arg)
{
    (void)arg;
    if (index < 2) {
        char *const *a = gh_prog_argv(index, &shared_specs[index], 1);
        execv(a[0], a);
        _exit(127);
    }
    const char *last;
    int listed = gh_status_wait("\"class\": \"batch\"", 2, &last);
    FILE *f = fopen(both_listed, "w");
    if (!listed || !f || fclose(f) != 0) {
        fprintf(stderr, "never saw both programs listed; last status:\n%s\n", last);
        return 1;
    }
    static char out[65536], err[4096];
    char *argv[] = {GMUX_BIN, "status", "--json", "--socket", gh_sock, NULL};
    for (int i = 0; i < 3000; i++) {
        if (tproc_capture(argv, NULL, 10.0, out, sizeof(out), err, sizeof(err)) == 0 &&
            strstr(out, "\"mode\": \"shared\"")) {
            int running = 0;
            for (const char *p = out; (p = strstr(p, "\"state\": \"running\"")); p++)
                running++;
            if (running == 2)
                return 0;
        }
        gh_sleep_ms(20);
    }
    fprintf(stderr, "never saw both programs running in shared mode; last status:\n%s\n", out);
    return 1;
}

/* Memory that fits: both programs hold the GPU at once, with the same results. */
static void test_shared_when_fits(void **state)
{
    (void)state;
    gh_out_t long_ref[2];
    gh_run_progs(2, long_specs, 0, long_ref);
    snprintf(both_listed, sizeof(both_listed), "%s", gh_path("both_listed"));
    unlink(both_listed);
    setenv("GMUX_DAEMON_SHARE", "1", 1);
    pid_t d = gh_start_daemon("none");
    setenv("GMUX_DAEMON_SHARE", "0", 1);
    int status[3];
    int bad = tproc_fork_all(3, shared_child, NULL, 240.0, status);
    gh_stop_daemon(d, SIGTERM);
    assert_int_equal(status[2], 0); /* the daemon showed both running, mode shared */
    assert_int_equal(bad, 0);
    for (int i = 0; i < 2; i++) {
        gh_read_out(i, &got[i]);
        assert_int_equal(got[i].n, 1000);
        assert_string_equal(got[i].checksum, long_ref[i].checksum);
        assert_true(got[i].gate_waits > 0); /* it joined the daemon */
    }
    print_message("shared: %zu kernel pairs of the two programs overlapped in time\n",
                  gh_overlaps(&got[0], &got[1]));
}

int main(void)
{
    gh_init();
    const struct CMUnitTest tests[] = {
        GH_TEST(test_turns_are_exclusive),
        GH_TEST(test_run_starts_daemon),
        GH_TEST(test_shared_when_fits),
    };
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
