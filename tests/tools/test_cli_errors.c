/*
 * What the daemon's and the launcher's commands say when the system refuses
 * them, as a user sees it: the built gmux run as a process, with a timeout,
 * on sockets in a private temporary folder. Each failure names what failed
 * (the path, the address) and why, in the system's words (strerror of the
 * errno the kernel gave), not a gmux status word ("not found", "invalid
 * argument", "peer failed or unreachable") that hid both.
 *
 * Also what the daemon leaves on disk: an explicit socket path (--socket)
 * whose folder is missing is an error naming the folder, which is not made;
 * only the default socket's folder is created; neither a failed start nor a
 * clean stop leaves PATH.lock behind. And the gmuxd that `gmux run` forks
 * reads as gmuxd in its command line too (/proc/PID/cmdline), not as the
 * gmux run ... CMD that started it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/proto.h"
#include "tdir.h"
#include "tproc.h"

static char out[16384], err[16384];
static char dir[] = "/tmp/gmux-cli-errors-XXXXXX";

/* Runs gmux with the words given (NULL ends them) and extra environment
 * (NULL ends it, may be NULL); its exit status. The daemon exits by itself
 * should the test die before it stops it. */
static int gmux(char *const extra[], const char *a, const char *b, const char *c, const char *d,
                const char *e, const char *f, const char *g)
{
    char *argv[10];
    int n = 0;
    argv[n++] = GMUX_CLI_PATH;
    const char *words[] = {a, b, c, d, e, f, g};
    for (int i = 0; i < 7 && words[i]; i++)
        argv[n++] = (char *)words[i];
    argv[n] = NULL;
    static char *const idle[] = {"GMUX_DAEMON_IDLE_EXIT_S=20", NULL};
    return tproc_capture(argv, extra ? extra : idle, 60.0, out, sizeof(out), err, sizeof(err));
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* The errno a bind of a Unix socket to path gets: the reason a daemon
 * cannot listen there, as the kernel gives it to this process. */
static int unix_bind_errno(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int e = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
    close(fd);
    if (e == 0)
        unlink(path);
    return e;
}

/* A daemon that cannot make its socket says where and why, with the
 * system's reason: "gmux daemon --socket /proc/x.sock" said only "not
 * found", and so did gmux run and gmuxd's foreground start. */
static void test_daemon_cannot_listen_says_why(void **state)
{
    (void)state;
    const char *path = "/proc/x.sock";
    int e = unix_bind_errno(path);
    assert_int_not_equal(e, 0);
    const char *why = strerror(e);
    struct {
        const char *what, *a, *b, *c, *d, *e;
    } cmds[] = {
        {"gmux daemon", "daemon", "--socket", path, NULL, NULL},
        {"gmux daemon --foreground", "daemon", "--socket", path, "--foreground", NULL},
#ifdef GMUX_HAVE_SHIM
        {"gmux run", "run", "--socket", path, "--", "true"},
#endif
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        int rc = gmux(NULL, cmds[i].a, cmds[i].b, cmds[i].c, cmds[i].d, cmds[i].e, NULL, NULL);
        if (rc != 1 || !strstr(err, path) || !strstr(err, why) || strstr(err, "not found"))
            fail_msg("%s --socket %s: exit %d, wanted 1 naming the path and '%s': %s", cmds[i].what,
                     path, rc, why, err);
    }
    assert_false(exists("/proc/x.sock.lock"));
}

/* No daemon at a socket: status, top and --stop name the path and the
 * system's reason (no such file; nobody listening on a stale socket).
 * They said "(peer failed or unreachable)". */
static void test_no_daemon_says_why(void **state)
{
    (void)state;
    char stale[100];
    snprintf(stale, sizeof(stale), "%s/stale.sock", dir);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, stale, strlen(stale) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd); /* a socket file nobody listens on: a dead daemon's */
    const char *paths[] = {"/missing/dir/gmux.sock", stale};
    const char *whys[] = {strerror(ENOENT), strerror(ECONNREFUSED)};
    for (int k = 0; k < 2; k++) {
        struct {
            const char *a, *b, *c, *d;
            int rc;
        } cmds[] = {
            {"status", "--socket", paths[k], NULL, 1},
            {"top", "--once", "--socket", paths[k], 1},
            {"daemon", "--stop", "--socket", paths[k], 1},
        };
        for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
            int rc = gmux(NULL, cmds[i].a, cmds[i].b, cmds[i].c, cmds[i].d, NULL, NULL, NULL);
            if (rc != cmds[i].rc || !strstr(err, paths[k]) || !strstr(err, whys[k]) ||
                strstr(err, "peer failed"))
                fail_msg("gmux %s on %s: exit %d, wanted %d naming it and '%s': %s", cmds[i].a,
                         paths[k], rc, cmds[i].rc, whys[k], err);
        }
    }
    unlink(stale);
}

/* How the peer of top_peer treats the one connection it takes. */
enum peer_mode {
    PEER_CLOSE,   /* reads the query, closes */
    PEER_RESET,   /* closes with the query unread: the client's recv fails */
    PEER_SILENT,  /* reads the query, answers nothing */
    PEER_GARBAGE, /* answers the query with bytes that are no message */
    PEER_ONCE,    /* answers the first query with a STATUS, then closes */
};

/* Waits (up to 20 s) until fd has something to read: 1, or 0. */
static int readable(int fd)
{
    struct pollfd pf = {fd, POLLIN, 0};
    return poll(&pf, 1, 20000) == 1;
}

/* A forked stand-in for a daemon on path that takes one connection and
 * treats it as mode says; it ends when the client closes (at most 20 s).
 * The socket listens before this returns. Its pid. */
static pid_t top_peer(const char *path, enum peer_mode mode)
{
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    unlink(path);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid > 0) {
        close(lfd);
        return pid;
    }
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    if (!readable(lfd))
        _exit(3);
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0 || !readable(fd))
        _exit(4);
    if (mode == PEER_RESET)
        _exit(0); /* the query unread: the kernel resets the connection */
    if (read(fd, buf, sizeof(buf)) <= 0)
        _exit(5);
    if (mode == PEER_CLOSE)
        _exit(0);
    size_t n = 0;
    if (mode == PEER_GARBAGE) {
        memset(buf, 0xa5, 64);
        n = 64;
    } else if (mode == PEER_ONCE) {
        dmn_msg_status_t head = {0};
        n = dmn_proto_encode_status(buf, sizeof(buf), 1, &head, NULL, 0);
    }
    if (n && write(fd, buf, n) != (ssize_t)n)
        _exit(6);
    if (mode == PEER_ONCE)
        _exit(0);
    while (readable(fd) && read(fd, buf, sizeof(buf)) > 0) {
    }
    _exit(0);
}

/* A daemon that connects and then fails status or top: the reason is said,
 * in the words of what happened (the peer closed, it reset the connection:
 * the system's words, no answer in time, an answer that is no status
 * report). top said "stopped answering (connection closed)" or "(timed
 * out)" for all of them, and status "no daemon answers on PATH: connection
 * closed" (now "the daemon on PATH did not answer: REASON"). */
static void test_query_failure_says_why(void **state)
{
    (void)state;
    char sock[100];
    snprintf(sock, sizeof(sock), "%s/peer.sock", dir);
    struct {
        enum peer_mode mode;
        const char *why;
    } cases[] = {
        {PEER_CLOSE, "closed the connection"},
        {PEER_RESET, strerror(ECONNRESET)},
        {PEER_SILENT, "no answer within 3 s"},
        {PEER_GARBAGE, "no status report"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (int top = 0; top < 2; top++) {
            pid_t pid = top_peer(sock, cases[c].mode);
            int rc = top ? gmux(NULL, "top", "--once", "--socket", sock, NULL, NULL, NULL)
                         : gmux(NULL, "status", "--socket", sock, NULL, NULL, NULL, NULL);
            int peer = tproc_reap(&pid);
            /* a daemon was there: status does not say there was none */
            const char *said = top ? "stopped answering" : "did not answer";
            if (rc != 1 || !strstr(err, sock) || !strstr(err, cases[c].why) || !strstr(err, said) ||
                strstr(err, "no daemon answers"))
                fail_msg("gmux %s on a peer of mode %d: exit %d, wanted 1 naming %s and '%s': %s",
                         top ? "top" : "status", (int)cases[c].mode, rc, sock, cases[c].why, err);
            assert_int_equal(peer, 0);
        }
    }
    /* a daemon that answers once and then goes: top's next round says so */
    pid_t pid = top_peer(sock, PEER_ONCE);
    int rc = gmux(NULL, "top", "--batch", "2", "--interval", "0.05", "--socket", sock);
    assert_int_equal(tproc_reap(&pid), 0);
    if (rc != 1 || !strstr(out, sock) || !strstr(err, "stopped answering") ||
        !strstr(err, "closed the connection"))
        fail_msg("gmux top on a daemon that went after one answer: exit %d: %s%s", rc, out, err);
    unlink(sock);
}

/* --bind names an address that is not IPv4: said as such, naming it (it
 * said "invalid argument"); one this host does not have: the system's
 * reason (it said "input/output error"). */
static void test_launch_bind_says_why(void **state)
{
    (void)state;
    int rc = gmux(NULL, "launch", "-n", "1", "--bind", "999.1.1.1", "--", "true");
    if (rc == 0 || !strstr(err, "999.1.1.1") || !strstr(err, "IPv4") ||
        strstr(err, "invalid argument"))
        fail_msg("--bind 999.1.1.1: exit %d: %s", rc, err);
    /* 192.0.2.1 (TEST-NET-1) is normally no address of this host */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in in = {.sin_family = AF_INET};
    inet_pton(AF_INET, "192.0.2.1", &in.sin_addr);
    int e = bind(fd, (struct sockaddr *)&in, sizeof(in)) == 0 ? 0 : errno;
    close(fd);
    if (e == 0)
        return; /* this host has it: nothing to refuse */
    rc = gmux(NULL, "launch", "-n", "1", "--bind", "192.0.2.1", "--", "true");
    if (rc != 1 || !strstr(err, "192.0.2.1") || !strstr(err, strerror(e)))
        fail_msg("--bind 192.0.2.1: exit %d, wanted 1 and '%s': %s", rc, strerror(e), err);
}

/* An explicit socket whose folder is missing (a typo) is an error naming
 * the folder; the folder is not made and nothing is left. gmux daemon made
 * it (0700) and left d.sock.lock in it. */
static void test_explicit_socket_folder_not_made(void **state)
{
    (void)state;
    char sub[160], sock[192], lock[200];
    snprintf(sub, sizeof(sub), "%s/nonexist", dir);
    snprintf(sock, sizeof(sock), "%s/d.sock", sub);
    snprintf(lock, sizeof(lock), "%s.lock", sock);
    const char *starts[][4] = {
        {"daemon", "--socket", sock, NULL},
        {"daemon", "--socket", sock, "--foreground"},
    };
    for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
        int rc =
            gmux(NULL, starts[i][0], starts[i][1], starts[i][2], starts[i][3], NULL, NULL, NULL);
        if (rc != 1 || !strstr(err, sub) || !strstr(err, strerror(ENOENT)))
            fail_msg("gmux daemon --socket %s: exit %d, wanted 1 naming %s: %s", sock, rc, sub,
                     err);
        if (exists(sub)) {
            gmux(NULL, "daemon", "--socket", sock, "--stop", NULL, NULL, NULL);
            unlink(sock);
            unlink(lock);
            rmdir(sub);
            fail_msg("gmux daemon --socket %s made %s", sock, sub);
        }
    }
#ifdef GMUX_HAVE_SHIM
    int rc = gmux(NULL, "run", "--socket", sock, "--", "true", NULL, NULL);
    if (rc != 1 || !strstr(err, sub))
        fail_msg("gmux run --socket %s: exit %d: %s", sock, rc, err);
    assert_false(exists(sub));
#endif
}

/* The default socket's folder is made (0700); a clean stop leaves neither
 * the socket nor its lock file. */
static void test_default_folder_made_stop_leaves_nothing(void **state)
{
    (void)state;
    char xdg[160], env[200], sub[192], sock[220], lock[230];
    snprintf(xdg, sizeof(xdg), "%s/xdg", dir);
    assert_int_equal(mkdir(xdg, 0700), 0);
    snprintf(env, sizeof(env), "XDG_RUNTIME_DIR=%s", xdg);
    snprintf(sub, sizeof(sub), "%s/gmux", xdg);
    snprintf(sock, sizeof(sock), "%s/gmuxd.sock", sub);
    snprintf(lock, sizeof(lock), "%s.lock", sock);
    char *const extra[] = {env, "GMUX_DAEMON_IDLE_EXIT_S=20", NULL};
    int rc = gmux(extra, "daemon", NULL, NULL, NULL, NULL, NULL, NULL);
    if (rc != 0)
        fail_msg("gmux daemon on the default socket: exit %d: %s", rc, err);
    struct stat sb;
    assert_int_equal(stat(sub, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    assert_true(exists(sock));
    assert_true(exists(lock)); /* held while it serves */
    rc = gmux(extra, "daemon", "--stop", NULL, NULL, NULL, NULL, NULL);
    if (rc != 0)
        fail_msg("gmux daemon --stop: exit %d: %s", rc, err);
    assert_false(exists(sock));
    if (exists(lock))
        fail_msg("%s left behind by a clean stop", lock);
    rmdir(sub);
    rmdir(xdg);
}

/* A start that fails after taking the lock (a file that is not a socket at
 * the path) leaves no lock file; neither does a foreground daemon stopped
 * by SIGTERM (through --stop). */
static void test_failed_start_leaves_no_lock(void **state)
{
    (void)state;
    char file[160], lock[170];
    snprintf(file, sizeof(file), "%s/notes.txt", dir);
    snprintf(lock, sizeof(lock), "%s.lock", file);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    assert_int_equal(fclose(f), 0);
    int rc = gmux(NULL, "daemon", "--socket", file, NULL, NULL, NULL, NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "not a socket"));
    if (exists(lock))
        fail_msg("%s left behind by a failed start", lock);
    assert_true(exists(file));
    unlink(file);
}

#ifdef GMUX_HAVE_SHIM
/* The daemon gmux run forks reads as gmuxd in /proc/PID/cmdline, naming its
 * socket, and nothing of the command that started it: it read
 * "gmux run --socket S -- /bin/echo marker-word" for the 60 s it outlives
 * the run. */
static void test_run_daemon_cmdline(void **state)
{
    (void)state;
    char sock[160], lock[170];
    snprintf(sock, sizeof(sock), "%s/r.sock", dir);
    snprintf(lock, sizeof(lock), "%s.lock", sock);
    static char *const extra[] = {"GMUX_DAEMON_IDLE_EXIT_S=20",
                                  "ASAN_OPTIONS=verify_asan_link_order=0", NULL};
    int rc = gmux(extra, "run", "--socket", sock, "--", "/bin/echo", "marker-word", NULL);
    if (rc != 0)
        fail_msg("gmux run: exit %d: %s", rc, err);
    FILE *lf = fopen(lock, "r");
    assert_non_null(lf);
    int pid = 0;
    assert_int_equal(fscanf(lf, "%d", &pid), 1);
    fclose(lf);
    assert_true(pid > 1);
    char path[64], cmd[4096] = {0};
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    FILE *cf = fopen(path, "r");
    assert_non_null(cf);
    size_t got = fread(cmd, 1, sizeof(cmd) - 1, cf);
    fclose(cf);
    /* the first word (cmd up to its first NUL), then the rest with NULs as
     * blanks */
    int first_is_gmuxd = strcmp(cmd, "gmuxd") == 0;
    for (size_t k = 0; k < got; k++)
        cmd[k] = cmd[k] ? cmd[k] : ' ';
    rc = gmux(NULL, "daemon", "--socket", sock, "--stop", NULL, NULL, NULL);
    if (!first_is_gmuxd || strstr(cmd, "marker-word") || strstr(cmd, " run ") || !strstr(cmd, sock))
        fail_msg("the daemon gmux run started reads '%s' in %s", cmd, path);
    assert_int_equal(rc, 0);
}
#endif

/* An output file that cannot be written is said as "cannot write PATH:"
 * and the system's reason, as a data file that cannot be opened is: one
 * that is a folder said only "PATH: Is a directory" (out_file.c). */
static void test_output_is_folder_says_cannot_write(void **state)
{
    (void)state;
    char prefix[128], dat[160], says[256];
    snprintf(prefix, sizeof(prefix), "%s/sweep", dir);
    snprintf(dat, sizeof(dat), "%s.dat", prefix);
    assert_int_equal(mkdir(dat, 0755), 0);
    int rc = gmux(NULL, "sim", "--workload", "dl-train", "--sweep", "--quiet", "--plot", prefix);
    snprintf(says, sizeof(says), "gmux sim: cannot write %s: %s\n", dat, strerror(EISDIR));
    assert_int_equal(rc, 1);
    assert_string_equal(err, says);
    char trace[128];
    snprintf(trace, sizeof(trace), "%s/t.bin", dir);
    assert_int_equal(mkdir(trace, 0755), 0);
    rc = gmux(NULL, "trace", "generate", "--workload", "dl-train", "-o", trace, NULL);
    snprintf(says, sizeof(says), "gmux trace: cannot write %s: %s\n", trace, strerror(EISDIR));
    assert_int_equal(rc, 1);
    assert_string_equal(err, says);
    assert_int_equal(rmdir(dat), 0);
    assert_int_equal(rmdir(trace), 0);
}

int main(void)
{
    unsetenv("GMUX_SOCKET");
    unsetenv("GMUX_LOG");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_daemon_cannot_listen_says_why),
        cmocka_unit_test(test_no_daemon_says_why),
        cmocka_unit_test(test_query_failure_says_why),
        cmocka_unit_test(test_launch_bind_says_why),
        cmocka_unit_test(test_explicit_socket_folder_not_made),
        cmocka_unit_test(test_default_folder_made_stop_leaves_nothing),
        cmocka_unit_test(test_failed_start_leaves_no_lock),
        cmocka_unit_test(test_output_is_folder_says_cannot_write),
#ifdef GMUX_HAVE_SHIM
        cmocka_unit_test(test_run_daemon_cmdline),
#endif
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
