/* The launch-gating tests' shared harness; see gate_harness.h. */
#include "gate_harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tdir.h"
#include "tproc.h"

char gh_dir[128], gh_sock[192];
static char gh_base[64]; /* gh_init's folder; gh_dir is a test's under it */

/* The tracked children (gh_fork); slots of children the test reaped are
 * dropped at the next gh_fork. Read by the signal handler. */
static pid_t gh_children[GH_MAX_CHILDREN];
static volatile sig_atomic_t gh_nchildren;

/* Whether pid is a child of this process not reaped yet (running or a
 * zombie), without reaping it: only then does its pid, and the number of
 * its process group, still name what the test started. Async-signal-safe. */
static int gh_is_child(pid_t pid)
{
    siginfo_t si;
    return pid > 0 && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

/* SIGKILL to child pid's process group and to itself, if still ours. */
static int gh_kill_child(pid_t pid)
{
    if (!gh_is_child(pid))
        return 0;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    return 1;
}

void gh_kill_children(void)
{
    for (sig_atomic_t i = 0; i < gh_nchildren; i++)
        if (gh_kill_child(gh_children[i]))
            while (waitpid(gh_children[i], NULL, 0) < 0 && errno == EINTR) {
            }
    gh_nchildren = 0;
}

static void gh_on_signal(int sig)
{
    int saved = errno;
    for (sig_atomic_t i = 0; i < gh_nchildren; i++)
        gh_kill_child(gh_children[i]);
    errno = saved;
    raise(sig); /* SA_RESETHAND: the default action, once this returns */
}

pid_t gh_fork(void)
{
    sig_atomic_t kept = 0;
    for (sig_atomic_t i = 0; i < gh_nchildren; i++)
        if (gh_is_child(gh_children[i]))
            gh_children[kept++] = gh_children[i];
    gh_nchildren = kept;
    assert_true(gh_nchildren < GH_MAX_CHILDREN);
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        gh_nchildren = 0; /* the parent's children are not this one's */
        setpgid(0, 0);
        /* SIGKILL once the test process dies; it may have died already */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127);
        return 0;
    }
    setpgid(pid, pid); /* from the parent too: no race with kill(-pid) */
    gh_children[gh_nchildren] = pid;
    gh_nchildren = gh_nchildren + 1;
    return pid;
}

void gh_sleep_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

unsigned long long gh_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

const char *gh_path(const char *name)
{
    static char buf[8][256];
    static unsigned next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof(buf[0]), "%s/%s", gh_dir, name);
    return p;
}

void gh_touch(const char *name)
{
    FILE *f = fopen(gh_path(name), "w");
    assert_non_null(f);
    fclose(f);
}

pid_t gh_start_daemon(const char *placement)
{
    unlink(gh_sock);
    pid_t pid = gh_fork();
    if (pid == 0) {
        execl(GMUX_BIN, "gmux", "daemon", "--foreground", "--socket", gh_sock, "--placement",
              placement, (char *)NULL);
        _exit(127);
    }
    struct stat st;
    for (int i = 0; i < 1200 && stat(gh_sock, &st) != 0; i++)
        gh_sleep_ms(50);
    assert_int_equal(stat(gh_sock, &st), 0);
    return pid;
}

void gh_stop_daemon(pid_t pid, int sig)
{
    kill(pid, sig);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

/* The pid in the daemon's lock file; 0 without one. */
static int lock_pid(void)
{
    char path[256];
    snprintf(path, sizeof(path), "%s.lock", gh_sock);
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

static void stop_pid(int pid)
{
    if (pid > 1 && kill(pid, SIGTERM) == 0) {
        for (int i = 0; i < 200 && kill(pid, 0) == 0; i++)
            gh_sleep_ms(50);
        kill(pid, SIGKILL);
    }
}

void gh_stop_background_daemon(void)
{
    int pid = lock_pid();
    assert_true(pid > 1);
    assert_int_equal(kill(pid, 0), 0);
    stop_pid(pid);
}

int gh_stop_leftover_daemon(void **state)
{
    (void)state;
    stop_pid(lock_pid());
    return 0;
}

char *const *gh_prog_argv(int i, const gh_spec_t *s, int daemon)
{
    static char out[GH_MAX_PROGS][256], stats[GH_MAX_PROGS][256];
    static char *argv[GH_MAX_PROGS][24];
    snprintf(out[i], sizeof(out[i]), "%s/out%d", gh_dir, i);
    snprintf(stats[i], sizeof(stats[i]), "%s/stats%d", gh_dir, i);
    char **a = argv[i];
    int k = 0;
    a[k++] = GMUX_BIN;
    a[k++] = "run";
    if (!daemon)
        a[k++] = "--no-daemon";
    a[k++] = "--socket";
    a[k++] = gh_sock;
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

void gh_run_progs(size_t n, const gh_spec_t *specs, int daemon, gh_out_t *outs)
{
    char *const *argvs[GH_MAX_PROGS] = {NULL};
    int status[GH_MAX_PROGS];
    assert_true(n <= GH_MAX_PROGS);
    for (size_t i = 0; i < n; i++)
        argvs[i] = gh_prog_argv((int)i, &specs[i], daemon);
    int bad = tproc_run_all(n, (char *const *const *)argvs, 240.0, status);
    for (size_t i = 0; bad && i < n; i++)
        print_message("program %zu: exit %d\n", i, status[i]);
    assert_int_equal(bad, 0);
    for (size_t i = 0; i < n; i++) {
        gh_read_out((int)i, &outs[i]);
        assert_int_equal(outs[i].n, strtoul(specs[i].n, NULL, 10));
    }
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

void gh_read_out(int i, gh_out_t *o)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/out%d", gh_dir, i);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "checksum %31s request %llu", o->checksum, &o->request), 2);
    o->n = 0;
    while (o->n < GH_MAX_K && fscanf(f, "%llu %llu", &o->t[o->n][0], &o->t[o->n][1]) == 2)
        o->n++;
    o->nd = o->nh = o->nsync = 0;
    o->armed = 0;
    o->relaxed = 0;
    o->cap_from = o->cap_to = 0;
    char line[256], kind;
    unsigned long long v[4];
    while (fgets(line, sizeof(line), f)) {
        int got = sscanf(line, " %c %llu %llu %llu %llu", &kind, &v[0], &v[1], &v[2], &v[3]);
        if (kind == 'D' && got == 5 && o->nd < 64) {
            memcpy(o->d[o->nd], v, sizeof(o->d[0]));
            o->d_before[o->nd++] = (int)v[3];
        } else if (kind == 'H' && got == 5 && o->nh < 64)
            memcpy(o->h[o->nh++], v, sizeof(o->h[0]));
        else if (kind == 'S' && got >= 3) {
            if (o->nsync < 64)
                o->sync_ns[o->nsync] = v[0];
            o->nsync++;
        } else if (kind == 'A' && got >= 2)
            o->armed = v[0] == 1;
        else if (kind == 'R' && got >= 2)
            o->relaxed = v[0];
        else if (kind == 'C' && got >= 3) {
            o->cap_from = v[0];
            o->cap_to = v[1];
        }
    }
    fclose(f);
    snprintf(path, sizeof(path), "%s/stats%d", gh_dir, i);
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
    o->evict_cancelled = stat_u64(json, "evict_cancelled");
    o->evicted_ctx_gone = stat_u64(json, "evicted_ctx_gone");
    o->fill_dropped = stat_u64(json, "fill_dropped");
    o->fill_dropped_bytes = stat_u64(json, "fill_dropped_bytes");
    o->capture_joined = stat_u64(json, "capture_joined");
    o->evicted_reports = stat_u64(json, "evicted_reports");
    o->evicted_put_off = stat_u64(json, "evicted_put_off");
    o->evicted_unknown = stat_u64(json, "evicted_unknown");
    o->no_prefetch_ordering = stat_u64(json, "launch_no_prefetch_ordering");
    o->gate_no_turn = stat_u64(json, "gate_no_turn");
}

int gh_status_wait(const char *needle, int want, const char **last)
{
    static char out[65536], err[4096];
    char *argv[] = {GMUX_BIN, "status", "--json", "--socket", gh_sock, NULL};
    out[0] = '\0';
    if (last)
        *last = out;
    for (int i = 0; i < 3000; i++) {
        if (tproc_capture(argv, NULL, 10.0, out, sizeof(out), err, sizeof(err)) == 0) {
            int n = 0;
            for (const char *p = out; (p = strstr(p, needle)); p++)
                n++;
            if (n == want)
                return 1;
        }
        gh_sleep_ms(20);
    }
    return 0;
}

size_t gh_overlaps(const gh_out_t *a, const gh_out_t *b)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n; i++)
        for (size_t j = 0; j < b->n; j++)
            if (a->t[i][0] < b->t[j][1] && b->t[j][0] < a->t[i][1])
                n++;
    return n;
}

size_t gh_started_in(const gh_out_t *o, unsigned long long from, unsigned long long to)
{
    size_t n = 0;
    for (size_t i = 0; i < o->n; i++)
        n += o->t[i][0] >= from && o->t[i][0] <= to;
    return n;
}

int gh_test_setup(void **state)
{
    (void)state;
    snprintf(gh_dir, sizeof(gh_dir), "%s/tXXXXXX", gh_base);
    if (!mkdtemp(gh_dir)) {
        snprintf(gh_dir, sizeof(gh_dir), "%s", gh_base);
        return -1;
    }
    snprintf(gh_sock, sizeof(gh_sock), "%s/gmuxd.sock", gh_dir);
    return 0;
}

int gh_test_teardown(void **state)
{
    gh_kill_children();
    gh_stop_leftover_daemon(state);
    snprintf(gh_dir, sizeof(gh_dir), "%s", gh_base);
    snprintf(gh_sock, sizeof(gh_sock), "%s/gmuxd.sock", gh_dir);
    return 0;
}

/* Stops the daemon holding the lock file at path, if one does: SIGTERM,
 * then SIGKILL once it has not let the lock go for 10 s. Only a process
 * that holds the lock is signalled (the pid it wrote there), never a pid
 * read from a lock nobody holds: that one may name another process since. */
static void gh_stop_lock_holder(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    char text[32] = {0};
    if (fd < 0)
        return;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK &&
        read(fd, text, sizeof(text) - 1) > 0) {
        pid_t pid = (pid_t)atoi(text);
        int held = pid > 1 && kill(pid, SIGTERM) == 0;
        for (int i = 0; held && i < 500; i++) {
            gh_sleep_ms(20);
            held = flock(fd, LOCK_SH | LOCK_NB) != 0;
        }
        if (held)
            kill(pid, SIGKILL);
    }
    close(fd);
}

/* Stops every daemon whose lock file lies in dir or in a folder right
 * under it (the tests' folders, GH_TEST). */
static void gh_stop_daemons_in(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        char path[512];
        size_t len = strlen(e->d_name);
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".lock") == 0)
            gh_stop_lock_holder(path);
        else if (depth > 0 && e->d_type == DT_DIR)
            gh_stop_daemons_in(path, depth - 1);
    }
    closedir(d);
}

/* The guardian of gh_base: a process outside the test's process tree (it
 * runs in a session of its own, reparented away from the test process, so
 * that ctest's kill of that tree at its timeout spares it) that waits until
 * the test process has gone, however it went, and then stops the daemons
 * left in gh_base and, unless gh_finish removed it, removes gh_base (until
 * 2026-12-02 a test process ended by a signal left it in /tmp:
 * test_gate_harness). A gmuxd started in the background (by `gmux run`, or
 * `gmux daemon`) is in a session of its own too, out of reach of the
 * harness's process groups and of a parent-death signal; until 2026-12-02
 * one outlived a test process ended by a signal (test_gate_harness). It
 * learns that the test process has gone from the end of a pipe whose
 * writing end only that process holds (close-on-exec; its forked children
 * die with it). */
static int gh_guard_fd = -1;
static char gh_guard_base[sizeof(gh_base)];

/* Removes the folder dir once its daemons are stopped: a daemon stopping
 * (its socket and lock going) or a program killed with the test (the
 * kernel's parent-death signal, which the guardian does not wait for) may
 * still change it, so a walk that fails is tried again, 10 s at most. */
static void gh_remove_base(const char *dir)
{
    for (int i = 0; i < 200 && access(dir, F_OK) == 0 && tdir_remove(dir) != 0; i++)
        gh_sleep_ms(50);
}

/* Tells the guardian at fd to leave its folder alone (the test process
 * removed it, or started another harness) and lets it go. */
static void gh_guard_release(int fd)
{
    char keep = 'k';
    (void)!write(fd, &keep, 1);
    close(fd);
}

static void gh_guard(void)
{
    if (gh_guard_fd >= 0) /* a guardian of an earlier gh_init: done once this goes */
        gh_guard_release(gh_guard_fd);
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        perror("gh_init: pipe2");
        abort();
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("gh_init: fork");
        abort();
    }
    if (pid == 0) {
        if (setsid() < 0 || fork() != 0) /* a grandchild: not the test's to reap */
            _exit(0);
        gh_nchildren = 0; /* the test's children are not this one's to kill */
        const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
            signal(sigs[i], SIG_DFL);
        int null = open("/dev/null", O_RDWR);
        for (int fd = 0; fd < 3; fd++)
            dup2(null, fd); /* ctest reads the test's output to its end */
        for (int fd = 3; fd < 1024; fd++)
            if (fd != p[0])
                close(fd);
        char b;
        int keep = 0;
        for (;;) { /* until the end of the pipe: the test process has gone */
            ssize_t n = read(p[0], &b, 1);
            keep |= n == 1;
            if (n == 0 || (n < 0 && errno != EINTR))
                break;
        }
        gh_stop_daemons_in(gh_base, 1);
        if (!keep) /* gone without gh_finish: a signal */
            gh_remove_base(gh_base);
        _exit(0);
    }
    close(p[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    gh_guard_fd = p[1];
    memcpy(gh_guard_base, gh_base, sizeof(gh_base));
}

/* Once per process: gh_kill_children at exit and at the signals that end a
 * test run (the kernel's parent-death signal covers SIGKILL). */
static void gh_arm_cleanup(void)
{
    static int armed;
    if (armed)
        return;
    armed = 1;
    atexit(gh_kill_children);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = gh_on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
}

void gh_init(void)
{
    /* mkdtemp: a folder of our own (0700), never one planted under a name
     * guessed from the pid, which mkdir failing on EEXIST used to accept */
    snprintf(gh_dir, sizeof(gh_dir), "/tmp/gmux_gate_XXXXXX");
    if (!mkdtemp(gh_dir)) {
        perror("gh_init: mkdtemp");
        abort();
    }
    memcpy(gh_base, gh_dir, strlen(gh_dir) + 1); /* "/tmp/gmux_gate_XXXXXX" */
    snprintf(gh_sock, sizeof(gh_sock), "%s/gmuxd.sock", gh_dir);
    gh_arm_cleanup();
    gh_guard();
    setenv("GMUX_GATE_IDLE_MS", "200", 1);
    setenv("GMUX_POLICY", "proactive", 1);
    setenv("GMUX_DAEMON_SHARE", "0", 1);
}

int gh_finish(int rc)
{
    gh_kill_children();
    rc = tdir_finish(gh_dir, rc);
    if (gh_guard_fd >= 0 && strcmp(gh_dir, gh_guard_base) == 0) {
        gh_guard_release(gh_guard_fd); /* its folder is gone: nothing left to do */
        gh_guard_fd = -1;
    }
    return rc;
}
