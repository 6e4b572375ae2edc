/*
 * Launch gating end to end: gmuxd (`gmux daemon --foreground`) and several
 * gate_prog processes started by `gmux run`, with the driver double as
 * libcuda.so.1. Each program records when each of its kernels ran (the
 * double runs kernels inside cuLaunchKernel, so that is when the launch held
 * the GPU) and a checksum of what its kernels computed.
 *
 * Asserted: kernels of different tasks never overlap in time; a latency task
 * that asks for the GPU gets it within a few kernel boundaries and keeps it
 * while it launches; killing the daemon mid-run lets the programs finish
 * (local mode); the checksums are the same with and without the daemon.
 * These run with GMUX_DAEMON_SHARE=0 (time slices whatever the footprints);
 * test_shared_when_fits turns it on: the programs' memory fits on the double's
 * device, so gmuxd lets both hold the GPU at once (seen in `gmux status`).
 * test_ahead_before_grant: with the chunk placement under a capacity, the
 * task expected next prefetches part of its working set while the other
 * task still runs (the daemon's fill ahead), and its own fill does not
 * repeat it (read from the driver double's record of prefetches).
 */
#include <errno.h>
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tproc.h"

#define MAX_PROGS 3
#define MAX_K     1000

typedef struct prog_out {
    char checksum[32];
    unsigned long long request;
    size_t n;
    unsigned long long t[MAX_K][2];
    unsigned long long gate_waits, gate_plans, gate_registrations, ahead_plans, ahead_bytes;
    unsigned long long evict_early, evict_deferred;
    int armed; /* CAPTURE 4: 1 if the armed capture began (and held), else 0 */
    size_t nd, nh;
    unsigned long long d[64][3]; /* prefetches to the device: ns, base, len (the first 64) */
    unsigned long long h[64][4]; /* the same to the host (evictions), and whether ordered
                                    after the queued work (gate_prog.c) */
} prog_out_t;

static char dir[128], sock[192];

static void sleep_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static pid_t start_daemon(const char *placement)
{
    unlink(sock);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(GMUX_BIN, "gmux", "daemon", "--foreground", "--socket", sock, "--placement",
              placement, (char *)NULL);
        _exit(127);
    }
    struct stat st;
    for (int i = 0; i < 400 && stat(sock, &st) != 0; i++)
        sleep_ms(50);
    assert_int_equal(stat(sock, &st), 0);
    return pid;
}

static void stop_daemon(pid_t pid, int sig)
{
    kill(pid, sig);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

typedef struct spec {
    const char *cls;
    const char *seed, *n, *work_us, *delay_ms;
    const char *extra_mib; /* NULL: no extra allocation */
    const char *pause_ms;  /* NULL: no pause after half the kernels */
    const char *capture;   /* "1": a blocking stream captures a graph through the pause,
                              "2": the launch stream does; NULL or "0": none */
    const char *stream;    /* "1": kernels go on a non-blocking stream of the program */
} spec_t;

/* argv of `gmux run` for program i (strings in static storage per index). */
static char *const *prog_argv(int i, const spec_t *s, int daemon)
{
    static char out[MAX_PROGS][256], stats[MAX_PROGS][256];
    static char *argv[MAX_PROGS][24];
    snprintf(out[i], sizeof(out[i]), "%s/out%d", dir, i);
    snprintf(stats[i], sizeof(stats[i]), "%s/stats%d", dir, i);
    char **a = argv[i];
    int k = 0;
    a[k++] = GMUX_BIN;
    a[k++] = "run";
    if (!daemon)
        a[k++] = "--no-daemon";
    a[k++] = "--socket";
    a[k++] = sock;
    a[k++] = "--class";
    a[k++] = (char *)s->cls;
    a[k++] = "--stats";
    a[k++] = stats[i];
    a[k++] = "--";
    a[k++] = GATE_PROG;
    a[k++] = out[i];
    a[k++] = (char *)s->seed;
    a[k++] = (char *)s->n;
    a[k++] = (char *)s->work_us;
    a[k++] = (char *)s->delay_ms;
    if (s->extra_mib || s->pause_ms)
        a[k++] = (char *)(s->extra_mib ? s->extra_mib : "0");
    if (s->pause_ms)
        a[k++] = (char *)s->pause_ms;
    if (s->pause_ms && (s->capture || s->stream))
        a[k++] = (char *)(s->capture ? s->capture : "0");
    if (s->pause_ms && s->stream)
        a[k++] = (char *)s->stream;
    a[k] = NULL;
    return a;
}

/* Counter `name` of a stats file's JSON (asserts it is there). */
static unsigned long long stat_u64(const char *json, const char *name)
{
    char key[64];
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *p = strstr(json, key);
    assert_non_null(p);
    return strtoull(p + strlen(key), NULL, 10);
}

static void read_out(int i, prog_out_t *o)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/out%d", dir, i);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "checksum %31s request %llu", o->checksum, &o->request), 2);
    o->n = 0;
    while (o->n < MAX_K && fscanf(f, "%llu %llu", &o->t[o->n][0], &o->t[o->n][1]) == 2)
        o->n++;
    o->nd = o->nh = 0;
    o->armed = 0;
    char line[256], kind;
    unsigned long long v[4];
    while (fgets(line, sizeof(line), f)) {
        int got = sscanf(line, " %c %llu %llu %llu %llu", &kind, &v[0], &v[1], &v[2], &v[3]);
        if (kind == 'D' && got == 4 && o->nd < 64)
            memcpy(o->d[o->nd++], v, sizeof(o->d[0]));
        else if (kind == 'H' && got == 5 && o->nh < 64)
            memcpy(o->h[o->nh++], v, sizeof(o->h[0]));
        else if (kind == 'A' && got >= 2)
            o->armed = v[0] == 1;
    }
    fclose(f);
    snprintf(path, sizeof(path), "%s/stats%d", dir, i);
    f = fopen(path, "r");
    assert_non_null(f);
    char json[4096] = {0};
    assert_true(fread(json, 1, sizeof(json) - 1, f) > 0);
    fclose(f);
    o->gate_waits = stat_u64(json, "gate_waits");
    o->gate_plans = stat_u64(json, "gate_plans");
    o->gate_registrations = stat_u64(json, "gate_registrations");
    o->ahead_plans = stat_u64(json, "ahead_plans");
    o->ahead_bytes = stat_u64(json, "ahead_bytes");
    o->evict_early = stat_u64(json, "evict_plans_early");
    o->evict_deferred = stat_u64(json, "evict_deferred");
}

static size_t overlaps(const prog_out_t *a, const prog_out_t *b)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n; i++)
        for (size_t j = 0; j < b->n; j++)
            if (a->t[i][0] < b->t[j][1] && b->t[j][0] < a->t[i][1])
                n++;
    return n;
}

/* Kernels of o that started in [from, to]. */
static size_t started_in(const prog_out_t *o, unsigned long long from, unsigned long long to)
{
    size_t n = 0;
    for (size_t i = 0; i < o->n; i++)
        n += o->t[i][0] >= from && o->t[i][0] <= to;
    return n;
}

static const spec_t specs[MAX_PROGS] = {
    {"batch", "1", "150", "2000", "0", NULL, NULL, NULL, NULL},
    {"batch", "2", "150", "2000", "0", NULL, NULL, NULL, NULL},
    {"latency", "3", "40", "2000", "150", NULL, NULL, NULL, NULL},
};
/* For the daemon's death and return: long enough (2 s of kernels each) to outlive both
 * and the client's reconnect backoff, even on a loaded machine. */
static const spec_t long_specs[2] = {
    {"batch", "4", "1000", "2000", "0", NULL, NULL, NULL, NULL},
    {"batch", "5", "1000", "2000", "0", NULL, NULL, NULL, NULL},
};
static prog_out_t ref[MAX_PROGS], got[MAX_PROGS], long_ref[2];

static void run_progs(size_t n, int daemon, prog_out_t *outs)
{
    char *const *argvs[MAX_PROGS];
    int status[MAX_PROGS];
    for (size_t i = 0; i < n; i++)
        argvs[i] = prog_argv((int)i, &specs[i], daemon);
    assert_int_equal(tproc_run_all(n, (char *const *const *)argvs, 240.0, status), 0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(status[i], 0);
        read_out((int)i, &outs[i]);
        assert_int_equal(outs[i].n, strtoul(specs[i].n, NULL, 10));
    }
}

static void test_turns_are_exclusive(void **state)
{
    (void)state;
    run_progs(MAX_PROGS, 0, ref);
    for (int i = 0; i < MAX_PROGS; i++)
        assert_int_equal(ref[i].gate_waits, 0);

    pid_t d = start_daemon("swap");
    run_progs(MAX_PROGS, 1, got);
    stop_daemon(d, SIGTERM);
    for (int i = 0; i < MAX_PROGS; i++) {
        assert_string_equal(got[i].checksum, ref[i].checksum);
        assert_true(got[i].gate_waits > 0);
        /* swap placement: plans of each switch were applied through the CUDA backend */
        assert_true(got[i].gate_plans > 0);
        assert_int_equal(ref[i].gate_plans, 0);
        for (int j = i + 1; j < MAX_PROGS; j++)
            assert_int_equal(overlaps(&got[i], &got[j]), 0);
    }
    /* The latency task: once its first kernel ran, no batch kernel starts until its last is
     * done, and it finishes before both batch tasks (it took the GPU from them instead of
     * waiting for them). How many batch kernels start between its request and its first
     * kernel depends on how soon the holder's watcher thread runs (printed, not asserted). */
    const prog_out_t *lat = &got[2];
    unsigned long long first = lat->t[0][0], last = lat->t[lat->n - 1][1];
    size_t during = started_in(&got[0], first, last) + started_in(&got[1], first, last);
    size_t before =
        started_in(&got[0], lat->request, first) + started_in(&got[1], lat->request, first);
    print_message("latency task: %zu batch kernels started between its request and its first "
                  "kernel, %zu while it ran\n",
                  before, during);
    assert_int_equal(during, 0);
    assert_true(last < got[0].t[got[0].n - 1][1]);
    assert_true(last < got[1].t[got[1].n - 1][1]);
}

/* Runs the two long programs; the daemon d (if any) is killed 100 ms after both joined it
 * and a new one started 150 ms later. */
static void run_long(pid_t d, prog_out_t *outs)
{
    char *const *argvs[2] = {prog_argv(0, &long_specs[0], d > 0),
                             prog_argv(1, &long_specs[1], d > 0)};
    pid_t killer = -1;
    if (d > 0) {
        killer = fork();
        assert_true(killer >= 0);
        if (killer == 0) {
            /* kill it only once both programs have joined it (a loaded machine or a
             * sanitizer can take longer than any fixed delay to start them) */
            static char out[65536], err[4096];
            char *st[] = {GMUX_BIN, "status", "--json", "--socket", sock, NULL};
            for (int i = 0; i < 1500; i++) {
                int n = 0;
                if (tproc_capture(st, NULL, 10.0, out, sizeof(out), err, sizeof(err)) == 0)
                    for (const char *p = out; (p = strstr(p, "\"pid\"")); p++)
                        n++;
                if (n == 2)
                    break;
                sleep_ms(20);
            }
            sleep_ms(100);
            unsigned long long t = now_ns();
            kill(d, SIGKILL);
            char path[256];
            snprintf(path, sizeof(path), "%s/killed", dir);
            FILE *f = fopen(path, "w");
            if (f) {
                fprintf(f, "%llu\n", t);
                fclose(f);
            }
            sleep_ms(150);
            unlink(sock);
            execl(GMUX_BIN, "gmux", "daemon", "--socket", sock, (char *)NULL); /* background */
            _exit(127);
        }
    }
    int status[2];
    assert_int_equal(tproc_run_all(2, (char *const *const *)argvs, 240.0, status), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(status[i], 0);
        read_out(i, &outs[i]);
        assert_int_equal(outs[i].n, 1000);
    }
    if (killer > 0) {
        int ks;
        waitpid(killer, &ks, 0);
        assert_true(WIFEXITED(ks) && WEXITSTATUS(ks) == 0);
    }
}

/* The pid in the daemon's lock file. */
static int daemon_pid(void)
{
    char path[256];
    snprintf(path, sizeof(path), "%s.lock", sock);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int pid = 0;
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    assert_true(pid > 1);
    return pid;
}

static void stop_background_daemon(void)
{
    int pid = daemon_pid();
    assert_int_equal(kill(pid, SIGTERM), 0);
    for (int i = 0; i < 200 && kill(pid, 0) == 0; i++)
        sleep_ms(50);
}

/* Teardown: stops a background daemon a test left (it failed half-way), so
 * none outlives the test; without one, does nothing. */
static int stop_leftover_daemon(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof(path), "%s.lock", sock);
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    if (pid > 1 && kill(pid, SIGTERM) == 0) {
        for (int i = 0; i < 200 && kill(pid, 0) == 0; i++)
            sleep_ms(50);
        kill(pid, SIGKILL);
    }
    return 0;
}

static void test_daemon_killed_mid_run(void **state)
{
    (void)state;
    run_long(0, long_ref);
    pid_t d = start_daemon("none");
    run_long(d, got);
    stop_daemon(d, SIGKILL);  /* reaps it */
    stop_background_daemon(); /* the one started after */
    char path[256];
    snprintf(path, sizeof(path), "%s/killed", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    unsigned long long killed = 0;
    assert_int_equal(fscanf(f, "%llu", &killed), 1);
    fclose(f);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(got[i].checksum, long_ref[i].checksum);
        assert_true(got[i].gate_waits > 0); /* it had joined the daemon */
        /* mid-run: it still had kernels to launch when the daemon died */
        assert_true(got[i].t[got[i].n - 1][1] > killed);
        print_message("program %d: registered %llu times\n", i, got[i].gate_registrations);
        /* it registered again with the new daemon */
        assert_true(got[i].gate_registrations >= 2);
    }
}

/* Without a daemon on the socket, `gmux run` starts one and the program joins it. */
static void test_run_starts_daemon(void **state)
{
    (void)state;
    unlink(sock);
    char *const *argvs[1] = {prog_argv(0, &specs[0], 1)};
    int status[1];
    assert_int_equal(tproc_run_all(1, (char *const *const *)argvs, 240.0, status), 0);
    read_out(0, &got[0]);
    assert_string_equal(got[0].checksum, ref[0].checksum);
    assert_true(got[0].gate_waits > 0);
    /* the daemon it started is still there: stop it by the pid in its lock file */
    stop_background_daemon();
}

/* Child 2 of test_shared_when_fits: polls `gmux status --json` until it shows the mode
 * shared with both programs running at once; exits 0 once seen, 1 after about a minute. */
static int shared_child(int index, void *arg)
{
    (void)arg;
    if (index < 2) {
        char *const *a = prog_argv(index, &long_specs[index], 1);
        execv(a[0], a);
        _exit(127);
    }
    static char out[65536], err[4096];
    char *argv[] = {GMUX_BIN, "status", "--json", "--socket", sock, NULL};
    for (int i = 0; i < 3000; i++) {
        if (tproc_capture(argv, NULL, 10.0, out, sizeof(out), err, sizeof(err)) == 0 &&
            strstr(out, "\"mode\": \"shared\"")) {
            int running = 0;
            for (const char *p = out; (p = strstr(p, "\"state\": \"running\"")); p++)
                running++;
            if (running == 2)
                return 0;
        }
        sleep_ms(20);
    }
    fprintf(stderr, "never saw both programs running in shared mode; last status:\n%s\n", out);
    return 1;
}

/* Memory that fits: both programs hold the GPU at once, with the same results. */
static void test_shared_when_fits(void **state)
{
    (void)state;
    if (long_ref[0].n == 0)
        run_long(0, long_ref);
    setenv("GMUX_DAEMON_SHARE", "1", 1);
    pid_t d = start_daemon("none");
    setenv("GMUX_DAEMON_SHARE", "0", 1);
    int status[3];
    int bad = tproc_fork_all(3, shared_child, NULL, 240.0, status);
    stop_daemon(d, SIGTERM);
    assert_int_equal(status[2], 0); /* the daemon showed both running, mode shared */
    assert_int_equal(bad, 0);
    for (int i = 0; i < 2; i++) {
        read_out(i, &got[i]);
        assert_int_equal(got[i].n, 1000);
        assert_string_equal(got[i].checksum, long_ref[i].checksum);
        assert_true(got[i].gate_waits > 0); /* it joined the daemon */
    }
    print_message("shared: %zu kernel pairs of the two programs overlapped in time\n",
                  overlaps(&got[0], &got[1]));
}

/* The fill-ahead test: program 0 holds the GPU with one 3 s kernel; programs 1 and 2
 * (working sets of a 4 KiB buffer and 4 MiB more: 4 chunks of 2 MiB, or 3) start once
 * `gmux status` shows it running, so both wait when it is done and the daemon grants one
 * of them and fills the other ahead. Their 40 kernels of 20 ms give the one filled ahead
 * 0.8 s to be scheduled and prefetch while the other runs, even on a loaded machine. */
static const spec_t ahead_specs[3] = {
    {"batch", "6", "1", "3000000", "0", NULL, NULL, NULL, NULL},
    {"batch", "7", "40", "20000", "0", "4", NULL, NULL, NULL},
    {"batch", "8", "40", "20000", "0", "4", NULL, NULL, NULL},
};

static int ahead_child(int index, void *arg)
{
    (void)arg;
    static char out[65536], err[4096];
    char *st[] = {GMUX_BIN, "status", "--json", "--socket", sock, NULL};
    for (int i = 0; index > 0 && i < 3000; i++) {
        if (tproc_capture(st, NULL, 10.0, out, sizeof(out), err, sizeof(err)) == 0 &&
            strstr(out, "\"state\": \"running\""))
            break;
        sleep_ms(20);
    }
    char *const *a = prog_argv(index, &ahead_specs[index], 1);
    execv(a[0], a);
    _exit(127);
}

static void run_ahead(int ahead, prog_out_t *outs)
{
    /* 7 chunks: one working set (3 or 4 chunks), part of the other, the holder's (1) */
    setenv("GMUX_DAEMON_CAPACITY", "14MiB", 1);
    setenv("GMUX_DAEMON_QUANTUM_MS", "2000",
           1); /* the first task runs all its kernels in one turn */
    setenv("GMUX_DAEMON_AHEAD", ahead ? "1" : "0", 1);
    pid_t d = start_daemon("chunk");
    unsetenv("GMUX_DAEMON_CAPACITY");
    unsetenv("GMUX_DAEMON_QUANTUM_MS");
    unsetenv("GMUX_DAEMON_AHEAD");
    int status[3];
    int bad = tproc_fork_all(3, ahead_child, NULL, 240.0, status);
    stop_daemon(d, SIGTERM);
    assert_int_equal(bad, 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(status[i], 0);
        read_out(i, &outs[i]);
        assert_int_equal(outs[i].n, strtoul(ahead_specs[i].n, NULL, 10));
    }
}

static void test_ahead_before_grant(void **state)
{
    (void)state;
    static prog_out_t none[3], off[3], on[3];
    setenv("GMUX_POLICY", "demand", 1); /* no prefetch of its own: only the daemon's plans */
    char *const *argvs[3];
    int status[3];
    for (int i = 0; i < 3; i++)
        argvs[i] = prog_argv(i, &ahead_specs[i], 0);
    assert_int_equal(tproc_run_all(3, (char *const *const *)argvs, 240.0, status), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(status[i], 0);
        read_out(i, &none[i]);
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
    const prog_out_t *pb = &on[b], *pa = &on[a];
    print_message("ahead: program %d got %llu plans, %llu bytes; %zu device prefetches seen\n", b,
                  pb->ahead_plans, pb->ahead_bytes, pb->nd);
    assert_true(pb->ahead_plans >= 1);
    assert_true(pb->ahead_bytes > 0);
    assert_true(pb->nd > 0);
    /* Its first prefetch to the device came while a still ran its kernels: before b's
     * own grant (turns are exclusive, and b launched only after a's last kernel). */
    unsigned long long b_first = pb->t[0][0], a_last = pa->t[pa->n - 1][1];
    assert_true(a_last < b_first);
    assert_true(pb->d[0][0] < a_last);
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
static const spec_t evict_specs[5][2] = {
    /* both launch all along (0.75 s of kernels each: they overlap even when one
     * starts late on a loaded machine), turns of 20 ms: the waiting launching
     * thread evicts */
    {{"batch", "9", "150", "5000", "0", NULL, NULL, NULL, NULL},
     {"batch", "10", "150", "5000", "0", NULL, NULL, NULL, NULL}},
    /* program 0 pauses 2 s after 10 kernels and goes idle; program 1, started
     * 500 ms later, gets the turn then, its chunk evicting program 0's (one
     * chunk of room), and program 0's watcher thread evicts (no launch waits).
     * Program 0 launches on a non-blocking stream, which the legacy stream
     * does not wait for: the evictions must also wait on it */
    {{"batch", "11", "20", "5000", "0", NULL, "2000", NULL, "1"},
     {"batch", "12", "40", "5000", "500", NULL, NULL, NULL, NULL}},
    /* the same while program 0 captures a graph on a blocking stream through
     * its pause: using the legacy stream then would invalidate the capture
     * (program 0 exits 16), so its evictions wait for the capture's end */
    {{"batch", "11", "20", "5000", "0", NULL, "2000", "1", NULL},
     {"batch", "12", "40", "5000", "500", NULL, NULL, NULL, NULL}},
    /* program 0's own non-blocking stream captures through its pause: an
     * event recorded there would join the migration stream to the capture
     * (exit 16), so its evictions wait for the capture's end too */
    {{"batch", "11", "20", "5000", "0", NULL, "2000", "2", "1"},
     {"batch", "12", "40", "5000", "500", NULL, NULL, NULL, NULL}},
    /* another thread of program 0 begins capturing its non-blocking stream
     * right after the shim's query of it (the double begins it through the
     * shim's cuStreamBeginCapture hook): the shim's event record there, and
     * the migration stream's wait, would join the capture (exit 16); the
     * capture's beginning waits for the shim's ordering to be done instead */
    {{"batch", "11", "20", "5000", "0", NULL, "2000", "4", "1"},
     {"batch", "12", "40", "5000", "500", NULL, NULL, NULL, NULL}},
};

/* How many of p's evictions were followed by a kernel of q before p's next
 * kernel: none when evictions wait for p's own turn. */
static size_t evictions_before_other(const prog_out_t *p, const prog_out_t *q)
{
    size_t n = 0;
    for (size_t e = 0; e < p->nh; e++) {
        unsigned long long t = p->h[e][0], next = ~0ull;
        for (size_t k = 0; k < p->n; k++)
            if (p->t[k][0] > t && p->t[k][0] < next)
                next = p->t[k][0];
        if (started_in(q, t, next) > 0) {
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
    for (int sc = 0; sc < 5; sc++) {
        prog_out_t alone[2], out[2];
        char *const *argvs[2];
        int status[2];
        for (int i = 0; i < 2; i++)
            argvs[i] = prog_argv(i, &evict_specs[sc][i], 0);
        assert_int_equal(tproc_run_all(2, (char *const *const *)argvs, 240.0, status), 0);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(status[i], 0);
            read_out(i, &alone[i]);
        }
        /* 0: swap placement evicts the task whose turn was taken; 1: an idle
         * task keeps its memory until a grant needs the room */
        setenv("GMUX_DAEMON_QUANTUM_MS", sc == 0 ? "20" : "5000", 1);
        setenv("GMUX_DAEMON_CAPACITY", "2MiB", 1);
        setenv("GMUX_DAEMON_AHEAD", "0", 1);
        pid_t d = start_daemon(sc == 0 ? "swap" : "chunk");
        unsetenv("GMUX_DAEMON_QUANTUM_MS");
        unsetenv("GMUX_DAEMON_CAPACITY");
        unsetenv("GMUX_DAEMON_AHEAD");
        for (int i = 0; i < 2; i++)
            argvs[i] = prog_argv(i, &evict_specs[sc][i], 1);
        int bad = tproc_run_all(2, (char *const *const *)argvs, 240.0, status);
        stop_daemon(d, SIGTERM);
        if (bad)
            print_message("scenario %d: exit %d and %d\n", sc, status[0], status[1]);
        assert_int_equal(bad, 0);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(status[i], 0);
            read_out(i, &out[i]);
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
            const prog_out_t *p = &out[0], *q = &out[1];
            unsigned long long from = p->t[p->n / 2 - 1][1], to = p->t[p->n / 2][0];
            size_t in_pause = 0;
            for (size_t e = 0; e < p->nh; e++)
                in_pause += p->h[e][0] > from && p->h[e][0] < to && p->h[e][0] < q->t[q->n - 1][1];
            if (sc == 4) /* the capture began after the shim's query, and held */
                assert_int_equal(p->armed, 1);
            else if (sc == 1)
                assert_true(in_pause > 0);
            else {
                assert_int_equal(in_pause, 0);
                assert_true(p->evict_deferred > 0);
                assert_true(p->nh > 0); /* done once the capture ended */
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
static const spec_t capture_specs[2] = {
    {"batch", "13", "100", "2000", "0", NULL, "0", "3", NULL},
    {"batch", "14", "100", "2000", "0", NULL, NULL, NULL, NULL},
};

static void test_capture_in_other_thread_survives(void **state)
{
    (void)state;
    char *const *argvs[2];
    int status[2];
    setenv("GMUX_DAEMON_QUANTUM_MS", "20", 1);
    pid_t d = start_daemon("swap");
    unsetenv("GMUX_DAEMON_QUANTUM_MS");
    for (int i = 0; i < 2; i++)
        argvs[i] = prog_argv(i, &capture_specs[i], 1);
    status[0] = status[1] = -1;
    (void)tproc_run_all(2, (char *const *const *)argvs, 240.0, status);
    stop_daemon(d, SIGTERM);
    prog_out_t out;
    read_out(0, &out);
    print_message("capturing program: %llu plans applied, exit %d\n", out.gate_plans, status[0]);
    assert_true(out.gate_plans > 0); /* the shim waited for its stream during the capture */
    assert_int_equal(status[0], 0);
    assert_int_equal(status[1], 0);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gmux_gate_%d", (int)getpid());
    mkdir(dir, 0700);
    snprintf(sock, sizeof(sock), "%s/gmuxd.sock", dir);
    setenv("GMUX_GATE_IDLE_MS", "200", 1);
    setenv("GMUX_POLICY", "proactive", 1);
    setenv("GMUX_DAEMON_SHARE", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_turns_are_exclusive),
        cmocka_unit_test(test_evict_on_arrival),
        cmocka_unit_test(test_capture_in_other_thread_survives),
        cmocka_unit_test_teardown(test_daemon_killed_mid_run, stop_leftover_daemon),
        cmocka_unit_test_teardown(test_run_starts_daemon, stop_leftover_daemon),
        cmocka_unit_test(test_shared_when_fits),
        cmocka_unit_test(test_ahead_before_grant),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
