/*
 * Integration tests of gmuxd with real processes: the daemon executable and
 * synthetic clients (gmux_test_client) on a private socket. This file:
 * access control (other uids, the group) and the CLI's daemon
 * commands (gmux daemon, top, idle exit).
 * They assert behaviour, with loose bounds and long deadlines so a loaded
 * machine slows them down without failing them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/endpoint.h"
#include "daemon/server.h"
#include "drig.h"
#include "dtest.h"
#include "tproc.h"

static dmn_report_t rep;

/* Another uid: refused by the directory permissions, and when those are
 * opened up, refused by the SO_PEERCRED check. Needs root to switch uid. */
static int as_nobody(int index, void *arg)
{
    (void)index;
    drig_t *r = arg;
    if (setgid(65534) != 0 || setuid(65534) != 0)
        return 10;
    int fd;
    gmux_status_t st = dmn_endpoint_connect(r->sock, &fd);
    if (st != GMUX_OK)
        return st == GMUX_ERR_PERM ? 20 : 21; /* 20: refused by permissions */
    uint8_t q[16];
    size_t n = dmn_proto_encode_empty(q, sizeof(q), 1, DMN_MSG_QUERY);
    (void)!send(fd, q, n, MSG_NOSIGNAL);
    char b[64];
    ssize_t got = recv(fd, b, sizeof(b), 0); /* the daemon closes without answering */
    close(fd);
    return got <= 0 ? 30 : 31; /* 30: refused by the credential check */
}

static void test_other_uid(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        printf("not root: the credential check is tested as a unit (test_endpoint)\n");
        skip();
    }
    static drig_t r;
    drig_init(&r);
    chmod(r.dir, 0755);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int status[1];
    tproc_fork_all(1, as_nobody, &r, 30.0, status);
    assert_int_equal(status[0], 20);
    char dir[160];
    snprintf(dir, sizeof(dir), "%s/run", r.dir);
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(chmod(r.sock, 0666), 0);
    tproc_fork_all(1, as_nobody, &r, 30.0, status);
    assert_int_equal(status[0], 30);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK); /* the owner is served */
    drig_fini(&r);
}

/* With GMUX_DAEMON_GROUP, a member of the group (here: another uid whose
 * primary group it is) is served; the modes follow. Needs root. */
static int nobody_query(int index, void *arg)
{
    (void)index;
    drig_t *r = arg;
    if (setgid(65534) != 0 || setuid(65534) != 0)
        return 10;
    dmn_report_t *mine = malloc(sizeof(*mine));
    gmux_status_t st = dmn_report_fetch(r->sock, mine, 5000);
    free(mine);
    return st == GMUX_OK ? 0 : 20;
}

static void test_group_access(void **state)
{
    (void)state;
    static drig_t r;
    dtest_start_group(&r, NULL, 0);
    struct stat st;
    assert_int_equal(stat(r.sock, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0660);
    assert_int_equal(st.st_gid, 65534);
    int status[1];
    tproc_fork_all(1, nobody_query, &r, 30.0, status);
    assert_int_equal(status[0], 0);
    drig_fini(&r);
}

static void assert_logged(const char *log, const char *want)
{
    const char *text = dtest_log_text(log);
    if (!strstr(text, want))
        fail_msg("'%s' not in the daemon's log: %s", want, text);
}

/* gmuxd --foreground keeps logging to its stderr once it listens. It sent its
 * stderr to /dev/null when the stack byte under opts.quiet_when_ready (never
 * set on that path) was not zero, so its warnings were lost. */
static void test_foreground_logs(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    char log[160];
    assert_true(dtest_start_logged(&r, log, sizeof(log)) > 0);
    int fd = dtest_connect(r.sock);
    uint8_t junk[16] = "not a header";
    assert_int_equal(send(fd, junk, sizeof(junk), MSG_NOSIGNAL), (ssize_t)sizeof(junk));
    struct pollfd p = {fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 10000), 1); /* closed for it */
    close(fd);
    assert_logged(log, "malformed message");
    drig_fini(&r);
}

/* With GMUX_DAEMON_GROUP, a member of the group (another uid) took every one of
 * the DMN_SERVER_MAX_CONNS slots: one QUERY per connection meets the first-message
 * deadline, and nothing after it closes a connection, so no task or CLI of the
 * owner was served any more. A uid other than the owner's now holds at most
 * DMN_SERVER_MAX_CONNS_PER_UID; the one after that is closed unanswered (and
 * logged), its connections held keep being served, and so is the owner, who
 * has no such cap. Needs root (a second uid). */
enum { CAP = DMN_SERVER_MAX_CONNS_PER_UID };

struct cap_run {
    drig_t *r;
    int held[2]; /* the member says it holds its connections */
    int done[2]; /* the owner says it was served meanwhile */
};

static int cap_member(struct cap_run *c)
{
    static int fds[CAP + 1];
    if (setgid(65534) != 0 || setuid(65534) != 0)
        return 10;
    for (int i = 0; i <= CAP; i++) {
        if (dmn_endpoint_connect(c->r->sock, &fds[i]) != GMUX_OK)
            return 20;
        int a = dtest_query_answered(fds[i]);
        if (a != (i < CAP ? 1 : 0)) {
            fprintf(stderr, "member connection %d of at most %d: %s\n", i + 1, CAP,
                    a == 1   ? "served"
                    : a == 0 ? "closed"
                             : "no answer");
            return i < CAP ? 30 : 40;
        }
    }
    if (dtest_query_answered(fds[0]) != 1 || dtest_query_answered(fds[CAP - 1]) != 1)
        return 50; /* those it holds are still served */
    char b = 'h';
    if (write(c->held[1], &b, 1) != 1)
        return 60;
    struct pollfd p = {c->done[0], POLLIN, 0};
    return poll(&p, 1, 60000) == 1 && read(c->done[0], &b, 1) == 1 && b == 'y' ? 0 : 70;
}

static int cap_owner(struct cap_run *c)
{
    char b;
    struct pollfd p = {c->held[0], POLLIN, 0};
    if (poll(&p, 1, 60000) != 1 || read(c->held[0], &b, 1) != 1)
        return 10;
    dmn_report_t *mine = malloc(sizeof(*mine));
    gmux_status_t st = dmn_report_fetch(c->r->sock, mine, 5000);
    free(mine);
    b = st == GMUX_OK ? 'y' : 'n';
    return write(c->done[1], &b, 1) == 1 && b == 'y' ? 0 : 20;
}

static int cap_child(int index, void *arg)
{
    return index == 0 ? cap_member(arg) : cap_owner(arg);
}

static void test_member_connection_cap(void **state)
{
    (void)state;
    static drig_t r;
    char log[160];
    dtest_start_group(&r, log, sizeof(log));
    /* the owner: more than the cap, every one served */
    static int fds[CAP + 8];
    for (int i = 0; i < CAP + 8; i++) {
        fds[i] = dtest_connect(r.sock);
        assert_int_equal(dtest_query_answered(fds[i]), 1);
    }
    for (int i = 0; i < CAP + 8; i++)
        close(fds[i]);
    struct cap_run c = {.r = &r};
    assert_int_equal(pipe(c.held), 0);
    assert_int_equal(pipe(c.done), 0);
    int status[2];
    tproc_fork_all(2, cap_child, &c, 120.0, status);
    assert_int_equal(status[0], 0);
    assert_int_equal(status[1], 0);
    char want[64];
    snprintf(want, sizeof(want), "uid 65534 holds %d connections", CAP);
    assert_logged(log, want);
    drig_fini(&r);
}

/* A daemon told to exit when idle stays while a task is connected, then exits
 * by itself and removes its socket once none is: what the gmuxd that gmux run
 * starts does after 60 s (GMUX_DAEMON_IDLE_EXIT_S). */
static void test_idle_exit(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    setenv("GMUX_DAEMON_IDLE_EXIT_S", "3", 1);
    pid_t d = drig_start_daemon(&r, 10, "none");
    unsetenv("GMUX_DAEMON_IDLE_EXIT_S");
    assert_true(d > 0);
    uint64_t t0 = com_clock_ns();
    /* busy for about 6 s: 120 kernels of 50 ms */
    pid_t c = drig_start_client(&r, "busy", "batch", 0, 120, 50000, 0);
    assert_true(c > 0);
    com_clock_sleep_ns(4500 * COM_NS_PER_MS);
    if (waitpid(c, NULL, WNOHANG) == 0) /* the client still runs: so must the daemon */
        assert_int_equal(waitpid(d, NULL, WNOHANG), 0);
    assert_int_equal(drig_wait(c, 120.0), 0);
    assert_int_equal(drig_wait(d, 60.0), 0); /* gone by itself, cleanly */
    r.daemon = -1;
    assert_true(com_clock_ns() - t0 > 3 * COM_NS_PER_S);
    struct stat st;
    assert_int_equal(stat(r.sock, &st), -1);
    drig_fini(&r);
}

/* gmux top (live, every 50 ms) on r's daemon, its stdin a pipe whose write
 * end goes to *keys, its stdout the file out. */
static pid_t start_top(const drig_t *r, const char *out, int *keys)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t top = fork();
    if (top == 0) {
        dup2(p[0], 0);
        close(p[1]);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        execl(GMUX_CLI_PATH, GMUX_CLI_PATH, "top", "--socket", r->sock, "--interval", "0.05",
              (char *)NULL);
        _exit(127);
    }
    assert_true(top > 0);
    close(p[0]);
    *keys = p[1];
    return top;
}

/* gmux top without --once quits on q (here from a pipe, not a terminal). */
static void test_top_quits_on_q(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    int keys;
    pid_t top = start_top(&r, "/dev/null", &keys);
    com_clock_sleep_ns(300 * COM_NS_PER_MS);
    assert_int_equal(waitpid(top, NULL, WNOHANG), 0); /* still refreshing */
    assert_int_equal(write(keys, "q", 1), 1);
    assert_int_equal(drig_wait(top, 30.0), 0);
    close(keys);
    drig_fini(&r);
}

/* gmux top into a pipe or a file (gmux top | tee log): tables one after
 * another as with --batch, still quitting on q. It wrote the terminal's
 * clear-screen escapes and the "q or Ctrl-C quits" line into the file at
 * every round. */
static void test_top_not_a_terminal_plain(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    char path[200];
    snprintf(path, sizeof(path), "%s/top.out", r.dir);
    int keys;
    pid_t top = start_top(&r, path, &keys);
    static char text[65536];
    int tables = 0;
    uint64_t deadline = com_deadline_after_ns(30 * COM_NS_PER_S);
    while (tables < 2 && !com_deadline_passed(deadline)) { /* two rounds written */
        com_clock_sleep_ns(20 * COM_NS_PER_MS);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
        if (f)
            fclose(f);
        text[n] = '\0';
        tables = 0;
        for (const char *t = text; (t = strstr(t, "gmuxd ")); t++)
            tables++;
    }
    assert_true(tables >= 2);
    assert_int_equal(write(keys, "q", 1), 1);
    assert_int_equal(drig_wait(top, 30.0), 0);
    close(keys);
    assert_null(strchr(text, '\033'));
    assert_null(strstr(text, "q or Ctrl-C quits"));
    assert_non_null(strstr(text, r.sock));
    unlink(path);
    drig_fini(&r);
}

/* gmux daemon (background) starts one, a second call joins it. The daemon
 * keeps none of its caller's descriptors: a pipe the caller left open (not
 * close-on-exec) reaches end of file once the caller's own copy is closed. */
static void test_cli_daemon(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    static char out[4096], err[4096];
    int inherited[2];
    assert_int_equal(pipe(inherited), 0);
    for (int round = 0; round < 2; round++) {
        int st = tproc_capture(drig_cli_argv("daemon", "--socket", r.sock, NULL), NULL, 30.0, out,
                               sizeof(out), err, sizeof(err));
        assert_int_equal(st, 0);
        assert_non_null(strstr(out, "serving"));
    }
    close(inherited[1]);
    struct pollfd pfd = {inherited[0], POLLIN, 0};
    char byte;
    if (poll(&pfd, 1, 5000) != 1 || read(inherited[0], &byte, 1) != 0)
        fail_msg("the daemon holds the write end of its caller's pipe");
    close(inherited[0]);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    char lock[160];
    snprintf(lock, sizeof(lock), "%s.lock", r.sock);
    FILE *f = fopen(lock, "r");
    assert_non_null(f);
    int pid = 0;
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    assert_true(pid > 1);
    assert_int_equal(kill(pid, SIGTERM), 0);
    uint64_t deadline = com_deadline_after_ns(10 * COM_NS_PER_S);
    while (access(r.sock, F_OK) == 0 && !com_deadline_passed(deadline))
        com_clock_sleep_ns(10 * COM_NS_PER_MS);
    assert_int_not_equal(access(r.sock, F_OK), 0); /* it stopped and removed its socket */
    assert_int_not_equal(dmn_report_fetch(r.sock, &rep, 1000), GMUX_OK);
    drig_fini(&r);
}

/* gmux daemon --stop: the daemon serving the socket exits and removes it;
 * with none serving, exit 1 and a one-line message; another uid may not
 * stop it (checked as root only). */
static int nobody_stops(int index, void *arg)
{
    (void)index;
    drig_t *r = arg;
    char errpath[200];
    snprintf(errpath, sizeof(errpath), "%s/stop.err", r->dir);
    int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0 || setgid(65534) != 0 || setuid(65534) != 0)
        return 10;
    dup2(fd, 2);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execv(GMUX_CLI_PATH, (char *const *)drig_cli_argv("daemon", "--socket", r->sock, "--stop"));
    return 11;
}

static void test_cli_daemon_stop(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    static char out[4096], err[4096];
    assert_int_equal(tproc_capture(drig_cli_argv("daemon", "--socket", r.sock, NULL), NULL, 30.0,
                                   out, sizeof(out), err, sizeof(err)),
                     0);
    assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK);
    /* named gmuxd for ps and pkill, not after the command that started it */
    char lock[160], comm[64], name[32] = {0};
    snprintf(lock, sizeof(lock), "%s.lock", r.sock);
    FILE *lf = fopen(lock, "r");
    assert_non_null(lf);
    int pid = 0;
    assert_int_equal(fscanf(lf, "%d", &pid), 1);
    fclose(lf);
    snprintf(comm, sizeof(comm), "/proc/%d/comm", pid);
    FILE *cf = fopen(comm, "r");
    assert_non_null(cf);
    assert_non_null(fgets(name, sizeof(name), cf));
    fclose(cf);
    assert_string_equal(name, "gmuxd\n");
    if (geteuid() == 0) {
        char dir[160];
        snprintf(dir, sizeof(dir), "%s/run", r.dir);
        assert_int_equal(chmod(r.dir, 0755), 0);
        assert_int_equal(chmod(dir, 0755), 0);
        assert_int_equal(chmod(r.sock, 0666), 0);
        int status[1];
        tproc_fork_all(1, nobody_stops, &r, 30.0, status);
        assert_int_equal(status[0], 1);
        char errpath[200], msg[512] = {0};
        snprintf(errpath, sizeof(errpath), "%s/stop.err", r.dir);
        FILE *f = fopen(errpath, "r");
        assert_non_null(f);
        (void)!fread(msg, 1, sizeof(msg) - 1, f);
        fclose(f);
        assert_non_null(strstr(msg, "belongs to uid 0"));
        assert_int_equal(dmn_report_fetch(r.sock, &rep, 5000), GMUX_OK); /* still serving */
    }
    assert_int_equal(tproc_capture(drig_cli_argv("daemon", "--socket", r.sock, "--stop"), NULL,
                                   30.0, out, sizeof(out), err, sizeof(err)),
                     0);
    assert_non_null(strstr(out, "stopped"));
    assert_int_not_equal(access(r.sock, F_OK), 0); /* it removed its socket */
    assert_int_not_equal(dmn_report_fetch(r.sock, &rep, 1000), GMUX_OK);
    assert_int_equal(tproc_capture(drig_cli_argv("daemon", "--socket", r.sock, "--stop"), NULL,
                                   30.0, out, sizeof(out), err, sizeof(err)),
                     1);
    assert_non_null(strstr(err, "no daemon serves"));
    assert_int_equal(tproc_capture(drig_cli_argv("daemon", "--stop", "--foreground", NULL), NULL,
                                   30.0, out, sizeof(out), err, sizeof(err)),
                     2);
    drig_fini(&r);
}

/* A daemon started in the background that cannot listen says why on its
 * caller's stderr (gmux daemon, gmux run): a file that is not a socket at
 * the path, a socket directory open to everyone. Both said only "peer failed
 * or unreachable": the daemon's message went to /dev/null. Neither leaves a
 * daemon behind, and the file stays. */
static void test_spawn_failure_says_why(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    static char out[4096], err[4096];
    char file[200], pub[200], psock[220];
    snprintf(file, sizeof(file), "%s/notes.txt", r.dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    assert_int_equal(fclose(f), 0);
    snprintf(pub, sizeof(pub), "%s/pub", r.dir);
    assert_int_equal(mkdir(pub, 0700), 0);
    assert_int_equal(chmod(pub, 0777), 0);
    snprintf(psock, sizeof(psock), "%s/d.sock", pub);
    const char *const paths[] = {file, psock};
    const char *const why[] = {"exists and is not a socket", "not a private directory"};
    for (int k = 0; k < 2; k++) {
        int st = tproc_capture(drig_cli_argv("daemon", "--socket", paths[k], NULL), NULL, 30.0, out,
                               sizeof(out), err, sizeof(err));
        assert_int_equal(st, 1);
        if (!strstr(err, why[k]))
            fail_msg("gmux daemon --socket %s: '%s' not in: %s", paths[k], why[k], err);
        char *const run[] = {GMUX_CLI_PATH, "run",  "--socket", (char *)paths[k],
                             "--",          "true", NULL};
        st = tproc_capture(run, NULL, 30.0, out, sizeof(out), err, sizeof(err));
        assert_int_equal(st, 1);
        if (!strstr(err, why[k]))
            fail_msg("gmux run --socket %s: '%s' not in: %s", paths[k], why[k], err);
    }
    f = fopen(file, "r");
    assert_non_null(f);
    char line[32] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_string_equal(line, "precious\n");
    drig_fini(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_other_uid, drig_teardown),
        cmocka_unit_test_teardown(test_group_access, drig_teardown),
        cmocka_unit_test_teardown(test_foreground_logs, drig_teardown),
        cmocka_unit_test_teardown(test_member_connection_cap, drig_teardown),
        cmocka_unit_test_teardown(test_idle_exit, drig_teardown),
        cmocka_unit_test_teardown(test_top_quits_on_q, drig_teardown),
        cmocka_unit_test_teardown(test_top_not_a_terminal_plain, drig_teardown),
        cmocka_unit_test_teardown(test_cli_daemon, drig_teardown),
        cmocka_unit_test_teardown(test_cli_daemon_stop, drig_teardown),
        cmocka_unit_test_teardown(test_spawn_failure_says_why, drig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
