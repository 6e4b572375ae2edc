/*
 * The gate harness itself (gate_harness.h): gh_init makes a folder of its
 * own, never one a guessable name already names. It used to mkdir
 * /tmp/gmux_gate_PID and go on when that failed, so another user's folder
 * (or a link) planted under that name became the tests' folder: their
 * daemon's socket and logs went where someone else could read or replace
 * them.
 *
 * And every program a test starts ends with the test, however the test
 * ends: an assertion that fails, a signal (ctest's at its timeout, ^C), or
 * SIGKILL. Each case runs a group of tests in a child process (as ctest
 * runs a test file); a test there starts gate_prog under a scripted daemon
 * (gs_start_pair, as the gate tests do), lets it pause until a `go` file
 * that never comes, and reports the program's pid before it fails or is
 * signalled. Until 2026-12-02 the program outlived its test: it waited on
 * for `go`, which the next test of the same file created in the same folder
 * (waking it to run on beside that test's own, writing the same out0), and
 * outlived the test process too; so did a program of gh_run_progs
 * (tproc_run_all) whose test process was signalled.
 */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gate_harness.h"
#include "gate_script.h"
#include "tdir.h"

static void test_init_ignores_planted_folder(void **state)
{
    (void)state;
    char planted[64], marker[96];
    snprintf(planted, sizeof(planted), "/tmp/gmux_gate_%d", (int)getpid());
    snprintf(marker, sizeof(marker), "%s/planted", planted);
    assert_int_equal(mkdir(planted, 0700), 0);
    assert_int_equal(chmod(planted, 0777), 0); /* anyone's */
    FILE *f = fopen(marker, "w");
    assert_non_null(f);
    fclose(f);

    gh_init();
    int same = strcmp(gh_dir, planted) == 0;
    unlink(marker);
    rmdir(planted);
    assert_false(same);
    struct stat sb;
    assert_int_equal(lstat(gh_dir, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(sb.st_mode & 0777, 0700);
    assert_int_equal(sb.st_uid, getuid());
    assert_non_null(strstr(gh_sock, gh_dir));
    assert_int_equal(gh_finish(0), 0);
    assert_int_not_equal(access(gh_dir, F_OK), 0); /* removed */
}

/* Two harnesses of one process (or two processes) never share a folder. */
static void test_init_fresh_each_time(void **state)
{
    (void)state;
    gh_init();
    char first[sizeof(gh_dir)];
    snprintf(first, sizeof(first), "%s", gh_dir);
    gh_init();
    int same = strcmp(first, gh_dir) == 0;
    struct stat sb;
    int both = stat(first, &sb) == 0 && stat(gh_dir, &sb) == 0;
    assert_int_equal(gh_finish(0), 0);
    snprintf(gh_dir, sizeof(gh_dir), "%s", first);
    assert_int_equal(gh_finish(0), 0);
    assert_false(same);
    assert_true(both);
}

/* What the child's first test does once its program paused: fails, or
 * hangs until the parent signals it; CHILD_RUN: runs the program through
 * gh_run_progs (tproc_run_all) instead, and is signalled while it waits;
 * CHILD_DAEMON: the same, under gmux run's own gmuxd (started in the
 * background, never exiting idle). */
enum { CHILD_FAIL, CHILD_HANG, CHILD_RUN, CHILD_DAEMON };

static char go[256];
/* 20 kernels, a pause at half of them until `go` exists (it never does) */
static gh_spec_t spec = {"batch", "3", "20", "1000", "0", "1", go, NULL, NULL};
static int report_fd = -1;          /* to the parent test: "pid folder" lines */
static pid_t started_prog;          /* the program the child's first test started */
static char started_dir[128];       /* and its folder */
static int child_then = CHILD_FAIL; /* what the child's first test does then */

/* The scripted daemon: grants the program's first turn, then ends. */
static int script_grant(int ready)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int fds[8], nfd = 0;
    dmn_range_t big;
    int task = gs_grant_to_pause(ready, buf, fds, &nfd, &big);
    return task < 0 ? -task : 0;
}

/* The child's first test: starts program 0, waits for its pause, reports
 * its pid and folder, and fails (or hangs until the parent signals it). */
static void child_starts_prog(void **state)
{
    (void)state;
    snprintf(go, sizeof(go), "%s", gh_path("go"));
    snprintf(started_dir, sizeof(started_dir), "%s", gh_dir);
    if (child_then == CHILD_RUN || child_then == CHILD_DAEMON) {
        static gh_out_t out;
        dprintf(report_fd, "0 %s\n", gh_dir); /* its pid: the parent looks it up */
        if (child_then == CHILD_DAEMON)
            setenv("GMUX_DAEMON_IDLE_EXIT_S", "0", 1); /* only the harness may end it */
        gh_run_progs(1, &spec, child_then == CHILD_DAEMON, &out);
        fail_msg("the program ended");
    }
    pid_t fake;
    gs_start_pair(&spec, script_grant, &fake, &started_prog);
    assert_int_equal(gs_wait_file("out0.paused"), 0);
    dprintf(report_fd, "%d %s\n", (int)started_prog, gh_dir);
    if (child_then == CHILD_HANG)
        for (;;)
            pause();
    fail_msg("deliberately");
}

/* The child's second test: reports whether the first one's program still
 * runs (1) and its own folder. */
static void child_probes(void **state)
{
    (void)state;
    dprintf(report_fd, "%d %s\n", kill(started_prog, 0) == 0, gh_dir);
}

/* Runs the child's group in a child process, which reports to the pipe
 * *rd; returns its pid. */
static pid_t start_child(int then, int *rd)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        report_fd = p[1];
        child_then = then;
        gh_init();
        const struct CMUnitTest tests[] = {
            GH_TEST(child_starts_prog),
            GH_TEST(child_probes),
        };
        exit(gh_finish(cmocka_run_group_tests(tests, NULL, NULL)));
    }
    close(p[1]);
    *rd = p[0];
    return pid;
}

/* One "number folder" line of the child (dir: 128 bytes). */
static void read_report(FILE *f, int *num, char *dir)
{
    char line[256];
    assert_non_null(fgets(line, sizeof(line), f));
    assert_int_equal(sscanf(line, "%d %127s", num, dir), 2);
}

/* Whether pid runs, not a zombie, with what /proc/pid/<file> says first
 * (its command's name: comm, or argv[0]: cmdline) containing name: not a
 * pid recycled since. */
static int proc_running(pid_t pid, const char *file, const char *name)
{
    char path[64], cmd[4096] = {0}, stat[512] = {0};
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t got = fread(cmd, 1, sizeof(cmd) - 1, f);
    fclose(f);
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(stat, sizeof(stat), f))
        stat[0] = '\0';
    fclose(f);
    const char *st = strrchr(stat, ')');
    if (got == 0 || !strstr(cmd, name) || !st || st[2] == 'Z')
        return 0;
    return 1;
}

/* Whether pid is a running gate_prog. */
static int prog_alive(pid_t pid)
{
    return proc_running(pid, "cmdline", "gate_prog");
}

/* The pid of the running gate_prog whose output goes to dir/out0, once it
 * paused (a minute at most); 0 if none. */
static pid_t find_prog(const char *dir)
{
    char paused[192], out[192];
    snprintf(paused, sizeof(paused), "%s/out0.paused", dir);
    snprintf(out, sizeof(out), "%s/out0", dir);
    for (int i = 0; i < 6000 && access(paused, F_OK) != 0; i++)
        gh_sleep_ms(10);
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    pid_t found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        char path[300], cmd[4096];
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        FILE *f = e->d_name[0] >= '1' && e->d_name[0] <= '9' ? fopen(path, "r") : NULL;
        if (!f)
            continue;
        size_t got = fread(cmd, 1, sizeof(cmd) - 1, f);
        fclose(f);
        for (size_t at = 0; at < got; at += strlen(cmd + at) + 1) {
            cmd[got] = '\0';
            if (strcmp(cmd + at, out) == 0 && prog_alive((pid_t)atoi(e->d_name)))
                found = (pid_t)atoi(e->d_name);
        }
    }
    closedir(d);
    return found;
}

/* The pid of the gmuxd that holds the lock of dir's socket; 0 if none does. */
static pid_t daemon_of(const char *dir)
{
    char path[192], text[32] = {0};
    snprintf(path, sizeof(path), "%s/gmuxd.sock.lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    pid_t pid = 0;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0 && read(fd, text, sizeof(text) - 1) > 0)
        pid = (pid_t)atoi(text); /* held: the pid its holder wrote */
    close(fd);
    return pid;
}

/* Whether pid is a running gmuxd (gmux run's names itself so). */
static int daemon_alive(pid_t pid)
{
    return proc_running(pid, "comm", "gmuxd");
}

/* Waits (two minutes at most) for the child; its status. Kills it after. */
static int reap_child(pid_t pid)
{
    int st = -1;
    for (int i = 0; i < 12000 && waitpid(pid, &st, WNOHANG) == 0; i++)
        gh_sleep_ms(10);
    if (kill(pid, 0) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    return st;
}

/* A program left running by a case of this test is killed here, so that it
 * fails without leaving one behind either. */
static void kill_stray(pid_t prog, int alive)
{
    if (alive)
        kill(prog, SIGKILL);
}

static void test_failed_test_ends_its_programs(void **state)
{
    (void)state;
    int rd;
    pid_t child = start_child(CHILD_FAIL, &rd);
    FILE *f = fdopen(rd, "r");
    assert_non_null(f);
    int prog, alive_at_next;
    char dir1[128], dir2[128];
    read_report(f, &prog, dir1);
    read_report(f, &alive_at_next, dir2);
    fclose(f);
    int st = reap_child(child);
    int alive = prog_alive(prog);
    kill_stray(prog, alive);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0); /* the failure counted */
    assert_int_equal(alive_at_next, 0);                 /* gone before the next test began */
    assert_int_equal(alive, 0);
    assert_string_not_equal(dir1, dir2); /* a `go` of its own for each test */
}

/* The child, its program started, is sent sig (as ctest at its timeout, or
 * ^C): the program goes with it. */
static void signalled_case(int sig, int then)
{
    int rd;
    pid_t child = start_child(then, &rd);
    FILE *f = fdopen(rd, "r");
    assert_non_null(f);
    int prog;
    char dir[128];
    read_report(f, &prog, dir);
    fclose(f);
    if (then == CHILD_RUN || then == CHILD_DAEMON)
        prog = find_prog(dir);
    pid_t daemon = then == CHILD_DAEMON ? daemon_of(dir) : 0;
    if (prog <= 0 || (then == CHILD_DAEMON && !daemon_alive(daemon)))
        kill(child, SIGKILL);
    assert_true(prog > 0);
    if (then == CHILD_DAEMON)
        assert_true(daemon_alive(daemon));
    kill(child, sig);
    int st = reap_child(child);
    int alive = 0, daemon_left = 0;
    for (int i = 0; i < 500 && (alive = prog_alive(prog)); i++) /* SIGKILL: the kernel's */
        gh_sleep_ms(10);
    kill_stray(prog, alive);
    for (int i = 0; i < 3000 && daemon && (daemon_left = daemon_alive(daemon)); i++)
        gh_sleep_ms(10);
    if (daemon_left)
        kill(daemon, SIGKILL);
    /* the child's folder (gh_init's, the test's folder is under it) goes
     * too: its guardian removes it once the daemons are stopped */
    char base[128];
    snprintf(base, sizeof(base), "%s", dir);
    char *slash = strrchr(base, '/');
    if (slash)
        *slash = '\0';
    int left = 1;
    for (int i = 0; i < 3000 && (left = access(base, F_OK) == 0); i++)
        gh_sleep_ms(10);
    if (left)
        (void)tdir_remove(base);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == sig);
    assert_int_equal(alive, 0);
    assert_int_equal(daemon_left, 0);
    assert_non_null(strstr(base, "/tmp/gmux_gate_"));
    assert_int_equal(left, 0);
}

static void test_terminated_test_ends_its_programs(void **state)
{
    (void)state;
    signalled_case(SIGTERM, CHILD_HANG);
}

static void test_killed_test_ends_its_programs(void **state)
{
    (void)state;
    signalled_case(SIGKILL, CHILD_HANG);
}

/* The same for a program of gh_run_progs (tproc_run_all, which puts each in
 * a process group of its own and waits for it): until 2026-12-02 it ran on
 * once the test process was gone. */
static void test_signalled_run_ends_its_programs(void **state)
{
    (void)state;
    signalled_case(SIGTERM, CHILD_RUN);
    signalled_case(SIGKILL, CHILD_RUN);
}

/* The same for the gmuxd that `gmux run` starts (in the background, a
 * session of its own: no process group of the harness's holds it, and no
 * parent-death signal reaches it), idle exit off: until 2026-12-02 it ran on
 * once the test process was gone (until its idle exit, 60 s by default
 * after its last connection closed). */
static void test_signalled_test_ends_its_daemon(void **state)
{
    (void)state;
    signalled_case(SIGTERM, CHILD_DAEMON);
    signalled_case(SIGKILL, CHILD_DAEMON);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_ignores_planted_folder),
        cmocka_unit_test(test_init_fresh_each_time),
        cmocka_unit_test(test_failed_test_ends_its_programs),
        cmocka_unit_test(test_terminated_test_ends_its_programs),
        cmocka_unit_test(test_killed_test_ends_its_programs),
        cmocka_unit_test(test_signalled_run_ends_its_programs),
        cmocka_unit_test(test_signalled_test_ends_its_daemon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
