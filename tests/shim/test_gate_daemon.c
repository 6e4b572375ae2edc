/*
 * Launch gating end to end, the daemon's death and return (harness:
 * gate_harness.h): killing gmuxd mid-run lets the programs go on (local
 * mode, same checksums), and they register again with the daemon started
 * after it.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gate_harness.h"
#include "tproc.h"

static char go[256]; /* the programs pause at half their kernels until this file exists */
static gh_spec_t kill_specs[2] = {
    {"batch", "4", "1000", "2000", "0", NULL, go, NULL, NULL},
    {"batch", "5", "1000", "2000", "0", NULL, go, NULL, NULL},
};
static gh_out_t ref[2], got[2];

/* How many distinct programs the `gmux status --json` output json lists
 * with kernels counted: a task's kernels come from the STATS its client
 * sends, which a client does only once it took the daemon's answer to its
 * REGISTER and counted the registration (daemon/client.c). A listing alone
 * proves less: the daemon lists a task from the REGISTER on, and a client
 * that has not read the answer when the daemon dies never counts it
 * (gate_registrations stays 1 after the restart). */
static int programs_reporting(const char *json)
{
    long pids[8];
    int n = 0;
    for (const char *p = json; (p = strstr(p, "{\"id\": ")); p++) {
        const char *pid = strstr(p, "\"pid\": "), *k = strstr(p, "\"kernels\": ");
        const char *end = strchr(p, '}');
        if (!pid || !k || !end || k > end || strtoull(k + 11, NULL, 10) == 0)
            continue;
        long v = strtol(pid + 7, NULL, 10);
        int seen = 0;
        for (int i = 0; i < n; i++)
            seen |= pids[i] == v;
        if (!seen && n < 8)
            pids[n++] = v;
    }
    return n;
}

/* Waits until both programs are registered with the daemon serving now, as
 * they see it (programs_reporting); whether they were within about a minute.
 * The last output stays in *last (static). */
static int registered_both(const char **last)
{
    static char out[65536], err[4096];
    char *argv[] = {GMUX_BIN, "status", "--json", "--socket", gh_sock, NULL};
    out[0] = '\0';
    *last = out;
    for (int i = 0; i < 3000; i++) {
        if (tproc_capture(argv, NULL, 10.0, out, sizeof(out), err, sizeof(err)) == 0 &&
            programs_reporting(out) == 2)
            return 1;
        gh_sleep_ms(20);
    }
    return 0;
}

/* The killer: once both programs joined daemon d (registered_both), kills d,
 * notes when, starts another daemon (in the background) on the same socket,
 * waits until both programs registered with it, then lets them finish. Exits
 * 0, or 1 if a wait failed. */
static int killer(pid_t d)
{
    const char *last;
    int ok = registered_both(&last);
    unsigned long long t = gh_now_ns();
    kill(d, SIGKILL);
    FILE *f = fopen(gh_path("killed"), "w");
    if (f) {
        fprintf(f, "%llu\n", t);
        fclose(f);
    }
    unlink(gh_sock);
    pid_t bg = fork();
    if (bg == 0) {
        execl(GMUX_BIN, "gmux", "daemon", "--socket", gh_sock, (char *)NULL); /* background */
        _exit(127);
    }
    int st;
    ok = ok && bg > 0 && waitpid(bg, &st, 0) == bg && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    ok = ok && registered_both(&last);
    if (!ok)
        fprintf(stderr, "killer: a wait failed; last status:\n%s\n", last);
    f = fopen(go, "w");
    if (f)
        fclose(f);
    return ok ? 0 : 1;
}

static void test_daemon_killed_mid_run(void **state)
{
    (void)state;
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    gh_touch("go");
    gh_run_progs(2, kill_specs, 0, ref);
    unlink(go);
    pid_t d = gh_start_daemon("none");
    pid_t k = gh_fork();
    if (k == 0)
        _exit(killer(d));
    gh_run_progs(2, kill_specs, 1, got);
    int ks;
    assert_int_equal(waitpid(k, &ks, 0), k);
    gh_stop_daemon(d, SIGKILL); /* reaps it */
    assert_true(WIFEXITED(ks) && WEXITSTATUS(ks) == 0);
    gh_stop_background_daemon(); /* the one started after */
    FILE *f = fopen(gh_path("killed"), "r");
    assert_non_null(f);
    unsigned long long killed = 0;
    assert_int_equal(fscanf(f, "%llu", &killed), 1);
    fclose(f);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(got[i].checksum, ref[i].checksum);
        assert_true(got[i].gate_waits > 0); /* it had joined the daemon */
        /* mid-run: it still had kernels to launch when the daemon died */
        assert_true(got[i].t[got[i].n - 1][1] > killed);
        print_message("program %d: registered %llu times\n", i, got[i].gate_registrations);
        /* it registered again with the new daemon */
        assert_true(got[i].gate_registrations >= 2);
    }
}

int main(void)
{
    gh_init();
    const struct CMUnitTest tests[] = {
        GH_TEST(test_daemon_killed_mid_run),
    };
    return gh_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
