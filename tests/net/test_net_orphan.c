/*
 * A job whose launcher is SIGKILLed mid-job (`gmux launch` over loopback
 * runs net_rank orphan, tests/net/net_rank_orphan.c): every rank must end by
 * itself, within a bound, and no file of the job may stay in /dev/shm: the
 * launcher that used to remove them at its exit is gone. With a rank
 * SIGKILLed as well, that rank closed nothing either.
 *
 * The job's files are the ones whose name starts with gmux-<launcher pid>p
 * (boot_proto.h, NET_SHM_PREFIX and the launcher's GMUX_JOB); other files in
 * /dev/shm (other jobs running meanwhile) are never touched. This process
 * is a child subreaper, so the ranks orphaned by the launcher's death are
 * its children: it reaps them and sees how each ended.
 *
 * With the launcher alive, a rank killed at the end of its join (its own
 * region and guard page not yet unlinked; net_rank leftover) has its files
 * removed by the launcher as soon as it reaps it, not at the launcher's
 * exit: the others, told of the death after that, find none left.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS    4
#define RUN_S        60.0 /* for the ranks to start, and then to end */
#define EXIT_CODE    3    /* net_rank_orphan.c, `exit` */
#define LINE_RUNNING ": pid "

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The names in /dev/shm of the job of launcher pid: printed, and removed
 * when remove is set (this job's only). Returns how many. */
static int job_files(pid_t launcher, bool remove)
{
    char prefix[64];
    int len = snprintf(prefix, sizeof(prefix), "gmux-%dp", (int)launcher);
    DIR *d = opendir("/dev/shm");
    assert_non_null(d);
    int k = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, (size_t)len) != 0)
            continue;
        fprintf(stderr, "left in /dev/shm: %s\n", e->d_name);
        if (remove)
            unlinkat(dirfd(d), e->d_name, 0);
        k++;
    }
    closedir(d);
    return k;
}

struct job {
    pid_t launcher;
    int out; /* the read end of the job's stdout */
    pid_t ranks[MAX_RANKS];
    int status[MAX_RANKS]; /* exit code, 128 + signal, or -1 while running */
    char text[1 << 14];    /* what the job printed so far */
    size_t len;
};

/* Reads what the job printed, waiting up to wait_ms. */
static void read_out(struct job *j, int wait_ms)
{
    struct pollfd p = {.fd = j->out, .events = POLLIN};
    if (poll(&p, 1, wait_ms) <= 0)
        return;
    ssize_t got = read(j->out, j->text + j->len, sizeof(j->text) - 1 - j->len);
    if (got > 0)
        j->len += (size_t)got;
    j->text[j->len] = '\0';
}

/* Starts `gmux launch -n n -- net_rank orphan how` on provider prov (env:
 * one more NAME=VALUE for the job, or NULL) and waits until every rank said
 * its pid. */
static void start(struct job *j, const char *prov, int n, const char *how, const char *env)
{
    memset(j, 0, sizeof(*j));
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    char nbuf[16];
    snprintf(nbuf, sizeof(nbuf), "%d", n);
    j->launcher = fork();
    assert_true(j->launcher >= 0);
    if (j->launcher == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        setenv("GMUX_NET_PROVIDER", prov, 1);
        if (env)
            putenv((char *)env);
        execl(GMUX_CLI_PATH, GMUX_CLI_PATH, "launch", "-n", nbuf, "--timeout", "100", "--",
              NET_RANK_PATH, "orphan", how, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    j->out = fds[0];
    for (int r = 0; r < n; r++)
        j->status[r] = -1;
    double deadline = now_s() + RUN_S;
    int seen = 0;
    while (seen < n && now_s() < deadline) {
        read_out(j, 100);
        seen = 0;
        for (int r = 0; r < n; r++) {
            char key[32];
            snprintf(key, sizeof(key), "rank %d" LINE_RUNNING, r);
            const char *p = strstr(j->text, key);
            j->ranks[r] = p ? (pid_t)atoi(p + strlen(key)) : 0;
            seen += j->ranks[r] > 0;
        }
    }
    if (seen < n) {
        fprintf(stderr, "the ranks did not all start; the job printed:\n%s\n", j->text);
        kill(-j->launcher, SIGKILL);
        kill(j->launcher, SIGKILL);
    }
    assert_int_equal(seen, n);
}

/* Reaps the orphaned ranks (this process is their subreaper) until all n
 * ended or RUN_S passed; the late ones are killed. Returns how many ended
 * by themselves. */
static int reap_ranks(struct job *j, int n)
{
    double deadline = now_s() + RUN_S;
    int left = n;
    for (int r = 0; r < n; r++)
        left -= j->status[r] >= 0;
    while (left > 0 && now_s() < deadline) {
        int ws;
        pid_t pid = waitpid(-1, &ws, WNOHANG);
        if (pid <= 0) {
            read_out(j, 10); /* keeps their stdout flowing */
            continue;
        }
        for (int r = 0; r < n; r++) {
            if (j->ranks[r] == pid && j->status[r] < 0) {
                j->status[r] = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
                left--;
            }
        }
    }
    int ended = n - left;
    for (int r = 0; r < n; r++) {
        if (j->status[r] < 0) {
            fprintf(stderr, "rank %d (pid %d) still running after %.0f s: killed\n", r,
                    (int)j->ranks[r], RUN_S);
            kill(j->ranks[r], SIGKILL);
            waitpid(j->ranks[r], NULL, 0);
        }
    }
    read_out(j, 0);
    close(j->out);
    return ended;
}

/* Kills the launcher (and first rank `victim`, when >= 0) of an n-rank job
 * (env: as start's) mid-job; the other ranks must end by themselves as `how`
 * says, and no file of the job may remain. */
static void orphan_job_env(const char *prov, int n, const char *how, int victim, const char *env)
{
    struct job j;
    start(&j, prov, n, how, env);
    /* once the job runs, its names are gone already (each rank unlinked its
     * own after every rank mapped them): nothing is left to leave behind */
    int running_files = job_files(j.launcher, false);
    if (victim >= 0) {
        assert_int_equal(kill(j.ranks[victim], SIGKILL), 0);
        j.status[victim] = 128 + SIGKILL; /* reaped by the launcher, or by us below */
    }
    assert_int_equal(kill(j.launcher, SIGKILL), 0);
    int ws;
    assert_int_equal(waitpid(j.launcher, &ws, 0), j.launcher);
    int ended = reap_ranks(&j, n);
    while (waitpid(-1, NULL, WNOHANG) > 0) /* the victim, if the launcher had not */
        ;
    int files = job_files(j.launcher, true);
    if (ended != n || files != 0)
        fprintf(stderr, "%s, %d ranks, %s, victim %d; the job printed:\n%s\n", prov, n, how, victim,
                j.text);
    assert_int_equal(running_files, 0);
    assert_int_equal(ended, n);
    int want = strcmp(how, "exit") == 0 ? EXIT_CODE : 0;
    for (int r = 0; r < n; r++)
        if (r != victim)
            assert_int_equal(j.status[r], want);
    assert_int_equal(files, 0);
}

static void orphan_job(const char *prov, int n, const char *how, int victim)
{
    orphan_job_env(prov, n, how, victim, NULL);
}

/* The ranks end by an error path that never finalizes: nothing of theirs
 * closes the guard pages (src/net/shmguard.c). */
static void test_launcher_killed_ranks_exit(void **state)
{
    (void)state;
    orphan_job("shm", 2, "exit", -1);
    orphan_job("shm", 4, "exit", -1);
    orphan_job("tcp", 2, "exit", -1);
}

/* The ranks finalize: each closes what is its own. */
static void test_launcher_killed_ranks_finalize(void **state)
{
    (void)state;
    orphan_job("shm", 2, "finalize", -1);
    orphan_job("shm", 4, "finalize", -1);
    orphan_job("tcp", 2, "finalize", -1);
}

/* A rank killed with the launcher closes nothing, and nobody is left to
 * remove its region and guard page. */
static void test_launcher_and_rank_killed(void **state)
{
    (void)state;
    orphan_job("shm", 3, "finalize", 2);
    orphan_job("shm", 2, "exit", 0);
}

/* The same with the shm guard off (GMUX_NET_SHM_GUARD=0): a rank's region
 * is still unlinked once every rank mapped it. Until 2026-12-02 only the
 * guard unlinked it, so without it each rank's region stayed named while the
 * job ran, and after it when the launcher was SIGKILLed and the ranks left
 * without finalizing (exit, or killed). */
static void test_launcher_killed_no_guard(void **state)
{
    (void)state;
    orphan_job_env("shm", 2, "exit", -1, "GMUX_NET_SHM_GUARD=0");
    orphan_job_env("shm", 3, "finalize", 2, "GMUX_NET_SHM_GUARD=0");
}

/* Runs `gmux launch -n n -- net_rank leftover` on shm with rank `victim`
 * killed at its first unlink in /dev/shm (the end of its join); every
 * other rank must report none of its files left once it knows of the
 * death, and the launcher must end with the victim's status. */
static void leftover_job(int n, int victim)
{
    struct job j;
    memset(&j, 0, sizeof(j));
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    char nbuf[16], vbuf[16];
    snprintf(nbuf, sizeof(nbuf), "%d", n);
    snprintf(vbuf, sizeof(vbuf), "%d", victim);
    j.launcher = fork();
    assert_true(j.launcher >= 0);
    if (j.launcher == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        setenv("GMUX_NET_PROVIDER", "shm", 1);
        setenv("NET_RANK_DIE_UNLINKING", vbuf, 1);
        execl(GMUX_CLI_PATH, GMUX_CLI_PATH, "launch", "-n", nbuf, "--timeout", "100", "--",
              NET_RANK_PATH, "leftover", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    j.out = fds[0];
    int ws = 0;
    pid_t got = 0;
    double deadline = now_s() + RUN_S;
    while ((got = waitpid(j.launcher, &ws, WNOHANG)) == 0 && now_s() < deadline)
        read_out(&j, 10);
    if (got == 0) {
        kill(j.launcher, SIGKILL);
        waitpid(j.launcher, &ws, 0);
    }
    while (j.len < sizeof(j.text) - 1) {
        size_t before = j.len;
        read_out(&j, 0);
        if (j.len == before)
            break;
    }
    close(j.out);
    int files = job_files(j.launcher, true);
    int ok = 0;
    for (int r = 0; r < n; r++) {
        char want[96];
        snprintf(want, sizeof(want), "rank %d: rank %d dead, 0 of its files in /dev/shm\n", r,
                 victim);
        ok += r != victim && strstr(j.text, want) != NULL;
    }
    if (ok != n - 1 || got == 0)
        fprintf(stderr, "%d ranks, victim %d; the job printed:\n%s\n", n, victim, j.text);
    assert_true(got == j.launcher);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 128 + SIGKILL);
    assert_int_equal(ok, n - 1);
    assert_int_equal(files, 0);
}

/* A rank killed at the end of its join, the launcher alive: its files go
 * when the launcher learns of its death. */
static void test_rank_killed_joining_files_removed(void **state)
{
    (void)state;
    leftover_job(2, 1);
    leftover_job(3, 0);
}

int main(void)
{
    /* the ranks orphaned by the launcher's death become ours to reap */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        perror("prctl(PR_SET_CHILD_SUBREAPER)");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launcher_killed_ranks_exit),
        cmocka_unit_test(test_launcher_killed_ranks_finalize),
        cmocka_unit_test(test_launcher_and_rank_killed),
        cmocka_unit_test(test_launcher_killed_no_guard),
        cmocka_unit_test(test_rank_killed_joining_files_removed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
