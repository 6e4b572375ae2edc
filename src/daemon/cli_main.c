/*
 * The command line of the daemon, shared by the `gmuxd` executable and
 * `gmux daemon`: [--socket PATH] [--foreground] [--quantum-ms N]
 * [--placement none|swap|opt|chunk] | [--socket PATH] --stop. Without
 * --foreground the daemon goes to the background and the command returns once
 * it accepts connections (or at once when one already serves the path), which
 * is what `gmux run` needs. --stop asks the daemon serving the path to exit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cliopt.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/settings.h"
#include "daemon/cli_main.h"
#include "daemon/endpoint.h"
#include "daemon/server.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void usage(FILE *out, const char *prog)
{
    /* gmuxd finds its own -h and -V (gmuxd.c); gmux daemon's, main.c */
    fprintf(out,
            "Usage: %s [--socket PATH] [--foreground] [--quantum-ms N]\n"
            "       [--placement none|swap|opt|chunk]\n"
            "       %s [--socket PATH] --stop\n"
            "       %s -h | --help | -V | --version\n\n"
            "Runs gmuxd, the time-slice arbiter of one GPU host, on a Unix socket\n"
            "(default from GMUX_SOCKET, see gmux --help-settings). A socket named with\n"
            "--socket or GMUX_SOCKET must be in an existing folder; only the default\n"
            "socket's folder is made (0700). Without --foreground it\n"
            "returns once the daemon (now in the background) accepts connections; if one\n"
            "already serves the socket it returns 0 at once. --socket, --quantum-ms and\n"
            "--placement win over GMUX_SOCKET, GMUX_DAEMON_QUANTUM_MS and\n"
            "GMUX_DAEMON_PLACEMENT, which are then not read. --quantum-ms is the time\n"
            "slice of a task holding the GPU, 1 to 3599999 ms (default 20). Its other\n"
            "settings (capacity, sharing, fill ahead, grace, eviction wait, message\n"
            "stall bound, group, idle exit) are the lines marked [daemon] in\n"
            "gmux --help-settings, with their defaults and ranges.\n\n"
            "--stop asks the daemon serving the socket to exit (SIGTERM to the process\n"
            "that listens there, yours unless you are root) and waits up to 10 s until it\n"
            "no longer answers; its tasks go on ungated.\n\n"
            "Exit status: 0 once the daemon serves the socket (or one already did), when\n"
            "a --foreground daemon ends on SIGTERM or SIGINT, or when --stop stopped it;\n"
            "1 when the daemon cannot start or serve (with --foreground: another daemon\n"
            "serves the socket), or --stop finds none serving it or cannot stop it;\n"
            "2 for a usage error or a malformed GMUX_* setting the daemon reads.\n",
            prog, prog, prog);
}

/* Stops the daemon serving `path`: the listener's pid comes from the
 * socket's peer credentials, so it is the process that serves the path now,
 * not one a stale lock file names. */
static int stop_daemon(const char *prog, const char *path)
{
    int fd;
    char why[256];
    if (dmn_endpoint_connect_why(path, &fd, why, sizeof(why)) != GMUX_OK) {
        fprintf(stderr, "%s: no daemon serves %s: %s\n", prog, path, why);
        return 1;
    }
    struct ucred cred;
    socklen_t len = sizeof(cred);
    int got = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
    int err = errno;
    close(fd);
    if (got != 0 || cred.pid <= 0) {
        fprintf(stderr, "%s: cannot tell which process serves %s: %s\n", prog, path,
                got != 0 ? strerror(err) : "no peer pid");
        return 1;
    }
    if (getuid() != 0 && cred.uid != getuid()) {
        fprintf(stderr, "%s: the daemon on %s (pid %d) belongs to uid %u, not you\n", prog, path,
                (int)cred.pid, (unsigned)cred.uid);
        return 1;
    }
    if (kill(cred.pid, SIGTERM) != 0) {
        fprintf(stderr, "%s: cannot stop pid %d serving %s: %s\n", prog, (int)cred.pid, path,
                strerror(errno));
        return 1;
    }
    uint64_t deadline = com_deadline_after_ns(10 * COM_NS_PER_S);
    while (!com_deadline_passed(deadline)) {
        if (dmn_endpoint_connect(path, &fd) != GMUX_OK) {
            printf("gmuxd (pid %d) on %s stopped\n", (int)cred.pid, path);
            return 0;
        }
        close(fd);
        com_clock_sleep_ns(20 * COM_NS_PER_MS);
    }
    fprintf(stderr, "%s: gmuxd (pid %d) on %s still answers 10 s after SIGTERM\n", prog,
            (int)cred.pid, path);
    return 1;
}

static const char *env_lookup(const char *name)
{
    return getenv(name);
}

/* The daemon's options, read by its parser and by dmn_cli_drop_overridden_env. */
enum { OPT_SOCKET, OPT_QUANTUM, OPT_PLACEMENT, OPT_FOREGROUND, OPT_STOP };
static const com_cli_opt_t dmn_cli_opts[] = {
    [OPT_SOCKET] = {"--socket", true},       [OPT_QUANTUM] = {"--quantum-ms", true},
    [OPT_PLACEMENT] = {"--placement", true}, [OPT_FOREGROUND] = {"--foreground", false},
    [OPT_STOP] = {"--stop", false},          {NULL, false},
};

void dmn_cli_drop_overridden_env(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++) {
        int k = com_cli_opt_find(dmn_cli_opts, argv[i]);
        if (k == OPT_QUANTUM)
            unsetenv("GMUX_DAEMON_QUANTUM_MS");
        else if (k == OPT_PLACEMENT)
            unsetenv("GMUX_DAEMON_PLACEMENT");
        if (k >= 0 && dmn_cli_opts[k].valued)
            i++; /* the value: never an option name */
    }
}

int dmn_cli_socket_path(const char *prog, const char *given, char *out, size_t cap)
{
    size_t most = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
    if (given) {
        if (strlen(given) > most || strlen(given) >= cap)
            return com_cli_usage_error(prog,
                                       "option '--socket' names a socket path that is too long "
                                       "(%zu bytes, at most %zu)",
                                       strlen(given), most);
        memcpy(out, given, strlen(given) + 1);
        return 0;
    }
    if (dmn_endpoint_path(out, cap) != GMUX_OK)
        return com_cli_usage_error(prog,
                                   "the socket path of GMUX_SOCKET (or XDG_RUNTIME_DIR) is too "
                                   "long (at most %zu bytes); --socket PATH gives another",
                                   most);
    return 0;
}

int dmn_cli_main(const char *prog, int argc, char **argv)
{
    static char path[108];
    dmn_server_opts_t opts;
    int foreground = 0, stop = 0, starting = 0; /* starting: an option only a start takes */
    const char *sock = NULL;
    const dmn_placement_t *placement = NULL;
    uint64_t quantum_ns = 0;
    /* --help wins over every other word, and the options come before the
     * settings, so that a --socket that replaces a bad GMUX_SOCKET works */
    if (com_cli_help_asked(argc, argv, NULL)) {
        usage(stdout, prog);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int k = com_cli_opt_find(dmn_cli_opts, a);
        if (k < 0)
            return com_cli_bad_word(prog, a);
        starting |= k != OPT_SOCKET && k != OPT_STOP;
        if (k == OPT_FOREGROUND || k == OPT_STOP) {
            *(k == OPT_STOP ? &stop : &foreground) = 1;
            continue;
        }
        const char *v = com_cli_option_value(argc, argv, i++);
        int64_t ms;
        if (!v)
            return com_cli_no_value(prog, a);
        if (k == OPT_SOCKET) {
            sock = v;
        } else if (k == OPT_QUANTUM) {
            if (com_parse_i64(v, &ms) != GMUX_OK || ms <= 0 || ms >= DMN_SERVER_MAX_MS)
                return com_cli_bad_value(prog, a, v, "milliseconds from 1 to 3599999");
            quantum_ns = (uint64_t)ms * 1000000u;
        } else if (!(placement = dmn_placement_find(v))) {
            return com_cli_bad_value(prog, a, v, "none, swap, opt or chunk");
        }
    }
    /* the path now: a --socket too long is said before anything is set */
    int bad = dmn_cli_socket_path(prog, sock, path, sizeof(path));
    if (bad)
        return bad;
    char err[512];
    if (sock && com_settings_set(COM_SETTING_SOCKET, sock, err, sizeof(err)) != GMUX_OK) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return COM_CLI_EXIT_USAGE;
    }
    if (stop && starting)
        return com_cli_usage_error(prog, "--stop takes no option but --socket");
    if (stop)
        return stop_daemon(prog, path);
    /* a malformed setting the daemon reads (its options have replaced theirs) */
    if (com_settings_check(COM_SCOPE_DAEMON, env_lookup, err, sizeof(err)) != GMUX_OK) {
        fprintf(stderr, "%s: %s (see gmux --help-settings)\n", prog, err);
        return 2;
    }
    if (dmn_server_opts_from_settings(&opts, path, sizeof(path), 0) != GMUX_OK) {
        fprintf(stderr, "%s: bad GMUX_DAEMON_* settings (see gmux --help-settings)\n", prog);
        return 2;
    }
    char why[DMN_SPAWN_WHY_MAX] = "";
    opts.why = why;
    opts.why_cap = sizeof(why);
    if (quantum_ns)
        opts.quantum_ns = quantum_ns;
    if (placement)
        opts.placement = placement;
    if (!foreground) {
        gmux_status_t st = dmn_server_spawn(&opts);
        if (st != GMUX_OK) {
            if (why[0]) /* it names the path */
                fprintf(stderr, "%s: could not start the daemon: %s\n", prog, why);
            else
                fprintf(stderr, "%s: could not start the daemon on %s: %s\n", prog, path,
                        gmux_status_str(st));
            return 1;
        }
        printf("gmuxd serving %s\n", path);
        return 0;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    gmux_status_t st = dmn_server_run(&opts, &stop_flag, -1);
    if (st != GMUX_OK) {
        if (st != GMUX_ERR_EXISTS && why[0]) /* it names the path */
            fprintf(stderr, "%s: %s\n", prog, why);
        else
            fprintf(stderr, "%s: %s: %s\n", prog, path,
                    st == GMUX_ERR_EXISTS ? "another daemon serves this socket"
                                          : gmux_status_str(st));
        return 1;
    }
    return 0;
}
