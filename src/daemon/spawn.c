/* dmn_server_spawn: gmuxd started in the background; see server.h. */
#include "daemon/server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "daemon/endpoint.h"

static volatile sig_atomic_t spawned_stop;

/* Writes why a start failed into opts->why, when the caller gave one. */
static void say_why(const dmn_server_opts_t *opts, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say_why(const dmn_server_opts_t *opts, const char *fmt, ...)
{
    if (!opts->why || !opts->why_cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(opts->why, opts->why_cap, fmt, ap);
    va_end(ap);
}

static void on_stop_signal(int sig)
{
    (void)sig;
    spawned_stop = 1;
}

/* The daemon outlives its caller and keeps none of the caller's descriptors
 * but `keep` (the pipe that says it is ready): one the caller's parent reads
 * to its end, or a lock, would otherwise stay open as long as the daemon. */
static void close_inherited(int keep)
{
    if ((keep <= 3 || close_range(3, (unsigned)keep - 1, 0) == 0) &&
        close_range((unsigned)keep + 1, ~0u, 0) == 0)
        return;
    long max = sysconf(_SC_OPEN_MAX); /* a kernel without close_range (before 5.9) */
    for (int fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
        if (fd != keep)
            close(fd);
}

/* Whether a daemon answers on path now. */
static bool serving(const char *path)
{
    int fd;
    if (dmn_endpoint_connect(path, &fd) != GMUX_OK)
        return false;
    close(fd);
    return true;
}

/* Rewrites this process's command line (/proc/PID/cmdline, what ps and
 * pgrep -f show) to "gmuxd --socket PATH", or "gmuxd" where the original
 * is too short for that: a daemon forked from `gmux run -- CMD` read as that
 * command for as long as it outlived it. The kernel shows the bytes from
 * arg_start to arg_end (fields 48 and 49 of /proc/self/stat) of the
 * process's own memory, the strings main's argv points to: they are
 * overwritten in place, NUL-padded to their old end, so the length the
 * kernel shows stays within what the process owns. The daemon reads
 * nothing of argv after this (the caller has copied what it keeps). Without
 * /proc nothing changes. */
static void name_cmdline(const char *path)
{
    char stat[2048];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, stat, sizeof(stat) - 1);
    close(fd);
    if (n <= 0)
        return;
    stat[n] = '\0';
    /* the fields after comm, which may hold blanks and parentheses */
    char *p = strrchr(stat, ')');
    unsigned long long arg_start = 0, arg_end = 0;
    for (int field = 2; p && field < 49; field++) {
        p = strchr(p + 1, ' ');
        if (p && field == 47)
            arg_start = strtoull(p + 1, NULL, 10);
        if (p && field == 48)
            arg_end = strtoull(p + 1, NULL, 10);
    }
    if (!arg_start || arg_end <= arg_start || arg_end - arg_start > (1u << 20))
        return;
    size_t room = (size_t)(arg_end - arg_start);
    static const char name[] = "gmuxd", opt[] = "--socket";
    size_t want = sizeof(name) + sizeof(opt) + strlen(path) + 1;
    if (room < sizeof(name))
        return;
    char *args = (char *)(uintptr_t)arg_start;
    memset(args, 0, room);
    memcpy(args, name, sizeof(name));
    if (want <= room) {
        memcpy(args + sizeof(name), opt, sizeof(opt));
        memcpy(args + sizeof(name) + sizeof(opt), path, strlen(path) + 1);
    }
}

/* The pipe's message from a daemon that could not start: 'e', its status,
 * and why (dmn_server_opts_t.why), up to the end of the pipe. */
typedef struct spawn_msg {
    uint8_t tag;
    int32_t code;
    char why[DMN_SPAWN_WHY_MAX];
} __attribute__((packed)) spawn_msg_t;

/* One try: starts a daemon and waits until it listens; its status, or
 * GMUX_ERR_EXISTS when another process holds the socket's lock. */
static gmux_status_t spawn_once(const dmn_server_opts_t *opts)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        int e = errno;
        say_why(opts, "cannot start gmuxd: pipe(): %s", strerror(e));
        return com_status_from_errno(e);
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        say_why(opts, "cannot start gmuxd: fork(): %s", strerror(e));
        return com_status_from_errno(e);
    }
    if (pid == 0) {
        close(p[0]);
        /* A grandchild, so the daemon is not the caller's child to reap. */
        if (setsid() < 0 || fork() != 0)
            _exit(0);
        /* what it keeps of the caller's memory, before argv is overwritten */
        static char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s", opts->path);
        /* `ps -e`, top and pkill know it as gmuxd, not as the command that
         * started it (gmux run -- CMD); ps and pgrep -f read its command line */
        (void)prctl(PR_SET_NAME, "gmuxd", 0, 0, 0);
        name_cmdline(path);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1); /* stderr once it listens (quiet_when_ready) */
            if (null > 2)
                close(null);
        }
        close_inherited(p[1]);
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_stop_signal;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        static spawn_msg_t msg;
        dmn_server_opts_t o = *opts;
        o.path = path;
        o.quiet_when_ready = 1;
        o.why = msg.why;
        o.why_cap = sizeof(msg.why);
        gmux_status_t st = dmn_server_run(&o, &spawned_stop, p[1]);
        if (st != GMUX_OK) { /* before it listened (p[1] is still open): say what failed */
            msg.tag = 'e';
            msg.code = st;
            (void)!write(p[1], &msg,
                         offsetof(spawn_msg_t, why) + strnlen(msg.why, sizeof(msg.why)));
        }
        _exit(st == GMUX_OK ? 0 : 1);
    }
    close(p[1]);
    (void)waitpid(pid, NULL, 0);
    spawn_msg_t msg;
    memset(&msg, 0, sizeof(msg));
    size_t got = 0;
    struct pollfd pf = {p[0], POLLIN, 0};
    while (got < sizeof(msg) && poll(&pf, 1, 5000) == 1) {
        ssize_t n = read(p[0], (char *)&msg + got, sizeof(msg) - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (msg.tag == 'r')
            break;
    }
    close(p[0]);
    if (got >= 1 && msg.tag == 'r')
        return GMUX_OK;
    if (got < offsetof(spawn_msg_t, why) || msg.tag != 'e') {
        say_why(opts, "gmuxd started on %s but did not say within 5 s whether it listens",
                opts->path);
        return GMUX_ERR_PEER;
    }
    size_t len = got - offsetof(spawn_msg_t, why);
    if (len >= sizeof(msg.why))
        len = sizeof(msg.why) - 1;
    msg.why[len] = '\0';
    if (msg.why[0])
        say_why(opts, "%s", msg.why);
    else
        say_why(opts, "%s", gmux_status_str((gmux_status_t)msg.code));
    return (gmux_status_t)msg.code;
}

gmux_status_t dmn_server_spawn(const dmn_server_opts_t *opts)
{
    if (serving(opts->path))
        return GMUX_OK;
    /* The socket's lock held by a process that does not answer: another
     * starter between its lock and its listen(), or a daemon just killed
     * whose exit has not yet let the lock go. Either ends soon: try again
     * (a daemon that answers meanwhile is joined). */
    uint64_t deadline = com_deadline_after_ns(DMN_SPAWN_RETRY_MS * COM_NS_PER_MS);
    for (;;) {
        gmux_status_t st = spawn_once(opts);
        if (st == GMUX_OK || serving(opts->path))
            return GMUX_OK;
        if (st != GMUX_ERR_EXISTS)
            return st;
        if (com_deadline_passed(deadline)) { /* held all along, and nobody answers */
            say_why(opts, "another process holds %s.lock and nobody answers on %s", opts->path,
                    opts->path);
            return GMUX_ERR_PEER;
        }
        com_clock_sleep_ns(20 * COM_NS_PER_MS);
    }
}
