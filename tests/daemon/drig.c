/* Test rig for the daemon's integration tests; see drig.h. */
#include "drig.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "tdir.h"

drig_t *drig_current;

int drig_teardown(void **state)
{
    (void)state;
    if (drig_current)
        drig_fini(drig_current);
    return 0;
}

void drig_init(drig_t *r)
{
    memset(r, 0, sizeof(*r));
    drig_current = r;
    snprintf(r->dir, sizeof(r->dir), "/tmp/gmuxd-test-XXXXXX");
    if (!mkdtemp(r->dir))
        abort();
    snprintf(r->sock, sizeof(r->sock), "%s/run/gmuxd.sock", r->dir);
    /* a socket named with --socket must be in an existing folder */
    char run[sizeof(r->dir) + 8];
    snprintf(run, sizeof(run), "%s/run", r->dir);
    if (mkdir(run, 0700) != 0)
        abort();
    r->daemon = -1;
}

void drig_fini(drig_t *r)
{
    if (r->daemon > 0)
        drig_kill_daemon(r, SIGKILL);
    for (int i = 0; i < r->n_spawned; i++) {
        /* Only a child not reaped yet is still ours: a reaped pid may already
         * belong to someone else's process. */
        if (r->spawned[i] > 1 && waitpid(r->spawned[i], NULL, WNOHANG) == 0) {
            kill(-r->spawned[i], SIGKILL);
            kill(r->spawned[i], SIGKILL);
            while (waitpid(r->spawned[i], NULL, 0) < 0 && errno == EINTR)
                ;
        }
    }
    r->n_spawned = 0;
    /* A daemon started in the background (gmux daemon) is nobody's child here:
     * stop it by the pid in its lock file, if that is still a gmux process. */
    char lock[160], proc[64], pcmd[256] = {0};
    snprintf(lock, sizeof(lock), "%s.lock", r->sock);
    FILE *lf = fopen(lock, "r");
    int other = 0;
    if (lf) {
        if (fscanf(lf, "%d", &other) != 1)
            other = 0;
        fclose(lf);
    }
    snprintf(proc, sizeof(proc), "/proc/%d/cmdline", other);
    FILE *pf = other > 1 ? fopen(proc, "r") : NULL;
    if (pf) {
        size_t got = fread(pcmd, 1, sizeof(pcmd) - 1, pf);
        fclose(pf);
        for (size_t k = 0; k < got; k++)
            pcmd[k] = pcmd[k] ? pcmd[k] : ' ';
        /* Its command line names this rig's socket: it is this rig's daemon. */
        if (got > 0 && strstr(pcmd, r->sock))
            kill(other, SIGKILL);
    }
    if (drig_current == r)
        drig_current = NULL;
    if (tdir_remove(r->dir) != 0)
        fprintf(stderr, "drig: could not remove %s\n", r->dir);
}

static void go_path(const drig_t *r, const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/go-%s", r->dir, name);
}

void drig_wait_for_go(drig_t *r, const char *name)
{
    char path[160];
    if (!name) {
        unsetenv("GMUX_TEST_CLIENT_GO");
        return;
    }
    go_path(r, name, path, sizeof(path));
    setenv("GMUX_TEST_CLIENT_GO", path, 1);
}

int drig_go(drig_t *r, const char *name)
{
    char path[160];
    go_path(r, name, path, sizeof(path));
    FILE *f = fopen(path, "w");
    return f && fclose(f) == 0 ? 0 : -1;
}

pid_t drig_spawn(drig_t *r, char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        execv(argv[0], argv);
        _exit(127);
    }
    if (pid > 0 && r->n_spawned < (int)(sizeof(r->spawned) / sizeof(r->spawned[0])))
        r->spawned[r->n_spawned++] = pid;
    return pid;
}

int drig_wait(pid_t pid, double timeout_s)
{
    uint64_t deadline = com_deadline_after_ns((uint64_t)(timeout_s * 1e9));
    for (;;) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (w < 0 && errno != EINTR)
            return -2;
        if (com_deadline_passed(deadline)) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        com_clock_sleep_ns(5 * COM_NS_PER_MS);
    }
}

static int fetch_ok(const dmn_report_t *rep, void *arg)
{
    (void)rep, (void)arg;
    return 1;
}

pid_t drig_start_daemon(drig_t *r, int quantum_ms, const char *placement)
{
    char q[16];
    snprintf(q, sizeof(q), "%d", quantum_ms);
    char *argv[] = {GMUXD_PATH, "--foreground", "--socket",        r->sock, "--quantum-ms",
                    q,          "--placement",  (char *)placement, NULL};
    r->daemon = drig_spawn(r, argv);
    dmn_report_t *rep = malloc(sizeof(*rep));
    int up = drig_until(r, fetch_ok, NULL, 10.0, rep);
    free(rep);
    if (!up) {
        drig_kill_daemon(r, SIGKILL);
        return -1;
    }
    return r->daemon;
}

void drig_kill_daemon(drig_t *r, int sig)
{
    if (r->daemon <= 0)
        return;
    kill(r->daemon, sig);
    drig_wait(r->daemon, 10.0);
    r->daemon = -1;
}

pid_t drig_start_client(drig_t *r, const char *name, const char *cls, int prio, long kernels,
                        long run_us, long idle_us)
{
    char p[16], k[24], ru[24], iu[24], out[160];
    snprintf(p, sizeof(p), "%d", prio);
    snprintf(k, sizeof(k), "%ld", kernels);
    snprintf(ru, sizeof(ru), "%ld", run_us);
    snprintf(iu, sizeof(iu), "%ld", idle_us);
    snprintf(out, sizeof(out), "%s/%s.log", r->dir, name);
    char *argv[] = {TEST_CLIENT_PATH, r->sock, (char *)name, (char *)cls, p, k, ru, iu, out, NULL};
    return drig_spawn(r, argv);
}

pid_t drig_start_client_mem(drig_t *r, const char *name, const char *cls, int prio, long kernels,
                            long run_us, long idle_us, long budget_mib, long device_mib)
{
    char p[16], k[24], ru[24], iu[24], b[24], d[24], out[160];
    snprintf(p, sizeof(p), "%d", prio);
    snprintf(k, sizeof(k), "%ld", kernels);
    snprintf(ru, sizeof(ru), "%ld", run_us);
    snprintf(iu, sizeof(iu), "%ld", idle_us);
    snprintf(b, sizeof(b), "%ld", budget_mib);
    snprintf(d, sizeof(d), "%ld", device_mib);
    snprintf(out, sizeof(out), "%s/%s.log", r->dir, name);
    char *argv[] = {
        TEST_CLIENT_PATH, r->sock, (char *)name, (char *)cls, p, k, ru, iu, out, b, d, NULL};
    return drig_spawn(r, argv);
}

int drig_read_log(drig_t *r, const char *name, int task, dlog_t *log)
{
    char path[160], line[256];
    snprintf(path, sizeof(path), "%s/%s.log", r->dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    memset(log, 0, sizeof(*log));
    int cap = 0;
    while (fgets(line, sizeof(line), f)) {
        dkernel_t k = {task, 0, 0, 0, 0, 0, 0, 0};
        unsigned long long a, b, c, g = 0, d = 0;
        int got = sscanf(line, "K %ld %llu %llu %llu %d %llu %llu", &k.index, &a, &b, &c, &k.local,
                         &g, &d);
        if (got >= 5) { /* gmux_trace_client writes no grant nor asked_ns */
            k.req = a, k.start = b, k.end = c;
            k.grant = g, k.asked = got == 7 ? d : a;
            if (log->n == cap) {
                cap = cap ? cap * 2 : 64;
                log->k = realloc(log->k, (size_t)cap * sizeof(*log->k));
            }
            log->k[log->n++] = k;
        } else if (sscanf(line, "R %d", &log->registrations) == 1) {
        } else if (sscanf(line, "P %ld %ld %ld", &log->fills, &log->evicts, &log->aheads) >= 2) {
        }
    }
    fclose(f);
    return 0;
}

void drig_free_log(dlog_t *log)
{
    free(log->k);
    memset(log, 0, sizeof(*log));
}

int drig_until(drig_t *r, int (*pred)(const dmn_report_t *, void *), void *arg, double timeout_s,
               dmn_report_t *last)
{
    uint64_t deadline = com_deadline_after_ns((uint64_t)(timeout_s * 1e9));
    do {
        if (dmn_report_fetch(r->sock, last, 2000) == GMUX_OK && pred(last, arg))
            return 1;
        com_clock_sleep_ns(10 * COM_NS_PER_MS);
    } while (!com_deadline_passed(deadline));
    return 0;
}

int drig_low_then_high(drig_t *r, pid_t low, pid_t high, int (*ran)(const dmn_report_t *, void *),
                       double exit_s, dmn_report_t *rep)
{
    int two = 2;
    if (!drig_until(r, drig_n_tasks_is, &two, 60.0, rep)) {
        fprintf(stderr, "drig: low and high not both registered within 60 s\n");
        return -1;
    }
    if (drig_go(r, "low") != 0) {
        fprintf(stderr, "drig: cannot make the go file low\n");
        return -1;
    }
    if (!drig_until(r, ran, NULL, 30.0, rep)) {
        fprintf(stderr, "drig: low let go, the report not as awaited within 30 s\n");
        return -1;
    }
    if (drig_go(r, "high") != 0) {
        fprintf(stderr, "drig: cannot make the go file high\n");
        return -1;
    }
    int high_st = drig_wait(high, exit_s), low_st = drig_wait(low, exit_s);
    if (high_st != 0 || low_st != 0) {
        fprintf(stderr, "drig: high exited with %d, low with %d (-1: not within %.0f s)\n", high_st,
                low_st, exit_s);
        return -1;
    }
    return 0;
}

static int by_start(const void *a, const void *b)
{
    const dkernel_t *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

int drig_exclusive(const dkernel_t *k, int n)
{
    dkernel_t *s = malloc((size_t)n * sizeof(*s));
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!k[i].local)
            s[m++] = k[i];
    qsort(s, (size_t)m, sizeof(*s), by_start);
    /* A task's own kernels never overlap, so any start before the latest end
     * so far overlaps another task's kernel. */
    int ok = 1, last = -1;
    for (int i = 0; i < m; i++) {
        if (last >= 0 && s[i].start < s[last].end) {
            fprintf(stderr, "overlap: task %d kernel %ld [%llu,%llu) and task %d kernel %ld\n",
                    s[last].task, s[last].index, (unsigned long long)s[last].start,
                    (unsigned long long)s[last].end, s[i].task, s[i].index);
            ok = 0;
        }
        if (last < 0 || s[i].end > s[last].end)
            last = i;
    }
    free(s);
    return ok;
}

int drig_n_tasks_is(const dmn_report_t *rep, void *arg)
{
    return (int)rep->n_tasks == *(int *)arg;
}

int drig_n_running_is(const dmn_report_t *rep, void *arg)
{
    int want = *(int *)arg, busy = 0;
    for (uint32_t i = 0; i < rep->n_tasks; i++)
        busy += rep->tasks[i].kernels > 0;
    return (int)rep->n_tasks == want && busy == want;
}

/* drig_until predicate: *(int *)arg tasks left, one slot reclaimed as dead. */
static int reclaimed_leaving(const dmn_report_t *rep, void *arg)
{
    return (int)rep->n_tasks == *(int *)arg && rep->reclaimed == 1;
}

pid_t drig_kill_holder(drig_t *r, dmn_report_t *rep, pid_t fallback, int remaining)
{
    pid_t victim = fallback;
    for (uint32_t i = 0; i < rep->n_tasks; i++)
        if (rep->tasks[i].state == DMN_STATE_RUNNING || rep->tasks[i].state == DMN_STATE_HELD)
            victim = (pid_t)rep->tasks[i].pid;
    uint64_t t0 = com_clock_ns();
    kill(victim, SIGKILL);
    /* How soon is not asserted: a daemon held up by a loaded machine takes
     * longer. A daemon that missed the death would keep the slot (or count
     * no reclaim) past the deadline. */
    if (!drig_until(r, reclaimed_leaving, &remaining, 30.0, rep)) {
        fprintf(stderr,
                "kill -9 of the holder: not reclaimed within 30 s: %u tasks (want %d), %llu "
                "reclaimed (want 1)\n",
                rep->n_tasks, remaining, (unsigned long long)rep->reclaimed);
        return -1;
    }
    printf("kill -9 of the holder: slot reclaimed after %.3f s\n",
           (double)(com_clock_ns() - t0) / 1e9);
    return victim;
}
