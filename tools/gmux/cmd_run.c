/*
 * gmux run: runs an unmodified CUDA program under libgmux.so. Sets
 * LD_PRELOAD to the shim (next to this binary in the build tree, or in the
 * install prefix's library folder), sets the GMUX_* settings given as
 * options, and execs the command, whose exit status becomes ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "common/out_target.h"
#include "common/parse.h"
#include "common/settings.h"
#include "daemon/endpoint.h"
#include "daemon/proto.h"
#include "daemon/server.h"
#include "engine/predictor.h"
#include "engine/template_db.h"
#include "exe_dir.h"

#ifndef GMUX_INSTALL_LIBDIR
#define GMUX_INSTALL_LIBDIR "lib"
#endif

static void run_help(void)
{
    printf("Usage: gmux run [--policy off|demand|proactive] [--budget SIZE] [--no-managed]\n"
           "                [--priority P] [--class latency|batch] [--name NAME]\n"
           "                [--no-daemon] [--socket PATH] [--stats FILE]\n"
           "                [--templates FILE] [--] COMMAND [ARGS...]\n"
           "       gmux run -h | --help | -V | --version\n\n"
           "Runs COMMAND with libgmux.so preloaded: the CUDA driver calls of the program are\n"
           "intercepted, its allocations tracked (and moved to managed memory), and with\n"
           "--policy proactive (the default) each launch's data is prefetched ahead of it.\n\n"
           "  --policy P     off (pass-through), demand (managed memory, no prefetch) or\n"
           "                 proactive; sets GMUX_POLICY\n"
           "  --budget SIZE  device memory the task may use, e.g. 8G; 0 (the default) is no\n"
           "                 budget; cuMemGetInfo reports this view; sets GMUX_BUDGET\n"
           "  --no-managed   keep plain allocations as device memory (a program that shares\n"
           "                 device memory with other processes, CUDA IPC, needs it: managed\n"
           "                 memory cannot be shared); sets GMUX_SHIM_MANAGED=0\n"
           "  --stats FILE   write the shim's counters (JSON) to FILE at exit (%%p in it:\n"
           "                 the pid; a symbolic link stays, the file it names is\n"
           "                 written); its folder is checked before COMMAND starts\n"
           "  --templates FILE\n"
           "                 a template database (gmux profile -o FILE -- COMMAND): while\n"
           "                 the program's managed memory exceeds the device (or --budget),\n"
           "                 each launch prefetches the bytes its kernel's templates\n"
           "                 predict instead of whole allocations; checked before COMMAND\n"
           "                 starts; sets GMUX_TEMPLATES\n"
           "  --priority P   the task's priority for gmuxd, -20..20 (default 0)\n"
           "  --class C      batch (default) or latency: a latency task takes the GPU from\n"
           "                 batch tasks at their next kernel boundary\n"
           "  --name NAME    the task's name in gmux top (default: the program's)\n"
           "  --socket PATH  gmuxd's socket; sets GMUX_SOCKET\n"
           "  --no-daemon    run alone: neither start nor join gmuxd (GMUX_GATE=0)\n\n"
           "Unless --no-daemon is given, gmux run starts gmuxd in the background when none\n"
           "listens on the socket (settings GMUX_DAEMON_*), and the program joins it: its\n"
           "kernel launches wait for the task's turn, and it follows the daemon's evict/fill\n"
           "plans. If the daemon goes away the program carries on alone and joins again when\n"
           "one is back. A gmuxd started this way exits once no program has been connected\n"
           "for 60 s (GMUX_DAEMON_IDLE_EXIT_S); the program is from its start, not only from\n"
           "its first kernel launch.\n\n"
           "Exit status: COMMAND's; 127 when COMMAND is not found, 126 when it cannot be\n"
           "executed; 1 when gmux cannot run it (libgmux.so not found, the --templates\n"
           "database not usable, the --stats file's folder missing or not writable, a\n"
           "loop of links or a folder at --stats FILE,\n"
           "gmuxd neither joined nor started); 2 for a usage error\n"
           "or a malformed GMUX_* setting the program's shim or the daemon reads.\n");
}

/* The shim next to the executable (build tree) or in ../<libdir> (install); 0 if found. */
static int run_find_shim(char *out, size_t len)
{
    static const char *const rel[] = {"libgmux.so", "../" GMUX_INSTALL_LIBDIR "/libgmux.so"};
    return exe_dir_find(rel, sizeof(rel) / sizeof(rel[0]), R_OK, out, len);
}

/* Prepends the shim to LD_PRELOAD (keeping what was there). */
static int run_set_preload(const char *shim)
{
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(shim) + (old ? strlen(old) + 2 : 1);
    char *v = malloc(len);
    if (!v)
        return -1;
    if (old && old[0])
        snprintf(v, len, "%s:%s", shim, old);
    else
        snprintf(v, len, "%s", shim);
    int rc = setenv("LD_PRELOAD", v, 1);
    free(v);
    return rc;
}

/* Starts gmuxd for the socket in the settings unless one listens there; 0 on success. */
static int run_join_daemon(void)
{
    char path[PATH_MAX];
    dmn_server_opts_t o; /* the settings: loaded and checked by cmd_run */
    char why[DMN_SPAWN_WHY_MAX] = "";
    path[0] = '\0';
    gmux_status_t st = dmn_server_opts_from_settings(&o, path, sizeof(path), 60);
    o.why = why;
    o.why_cap = sizeof(why);
    if (st == GMUX_OK)
        st = dmn_server_spawn(&o);
    if (st != GMUX_OK && why[0]) /* it names the path */
        return cli_fail("run", "cannot start or join gmuxd: %s; --no-daemon runs alone", why), -1;
    if (st != GMUX_OK)
        return cli_fail("run", "cannot start or join gmuxd on %s (%s); --no-daemon runs alone",
                        path[0] ? path : "its socket", gmux_status_str(st)),
               -1;
    /* A connection the program inherits (not close-on-exec) and never uses:
     * while it is open the daemon does not exit for want of connections
     * (GMUX_DAEMON_IDLE_EXIT_S), however long the program takes to its first
     * kernel launch, where the shim joins; it closes when the program ends.
     * It says one QUERY (its STATUS reply is never read): the daemon closes
     * a connection that sends nothing (DMN_SERVER_HELLO_MS). */
    int hold;
    uint8_t query[DMN_PROTO_HDR_SIZE];
    size_t qlen = dmn_proto_encode_empty(query, sizeof(query), 1, DMN_MSG_QUERY);
    if (dmn_endpoint_connect(path, &hold) == GMUX_OK) {
        int fl = fcntl(hold, F_GETFD);
        if (fl < 0 || fcntl(hold, F_SETFD, fl & ~FD_CLOEXEC) != 0 ||
            send(hold, query, qlen, MSG_NOSIGNAL) != (ssize_t)qlen)
            close(hold);
    }
    return 0;
}

/* Whether the shim can write the --stats file at the program's exit where
 * it writes it (a symbolic link followed, common/out_target.h): no loop of
 * links, no folder, and the file's folder there and writable; 0, or 1 after
 * saying why. The shim writes it only at the end, and only warns. A folder
 * with %p in it (the pid) is left to the shim. */
static int run_check_stats(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash && memchr(path, '%', (size_t)(slash - path)))
        return 0;
    com_out_t o;
    int e = com_out_resolve(path, &o);
    if (e)
        return cli_fail("run", "--stats '%s': %s", path, strerror(e));
    char dir[PATH_MAX];
    if ((e = com_out_folder_check(&o, dir)) != 0)
        return cli_fail("run", "--stats '%s': %s: %s", path, dir, strerror(e));
    return 0;
}

/* Loads the database as the shim will (so a bad one is reported before the
 * program runs, not in its output) and makes its path absolute in abs. */
static int run_check_templates(const char *path, char abs[PATH_MAX])
{
    eng_predictor_t *p;
    if (eng_predictor_create(&p) != GMUX_OK)
        return cli_fail("run", "out of memory");
    char err[512];
    gmux_status_t st = eng_tpl_db_load(p, path, err, sizeof(err));
    eng_predictor_destroy(p);
    if (st != GMUX_OK)
        return cli_fail("run", "template database not usable: %s", err);
    if (!realpath(path, abs))
        return cli_fail("run", "%s: %s", path, strerror(errno));
    return 0;
}

/* The options of gmux run, read by its parser and by its --help scan (and
 * gmux's, which lets --help win over the settings): one list, so that an
 * option that takes a value is skipped by both. */
enum {
    RUN_POLICY,
    RUN_BUDGET,
    RUN_STATS,
    RUN_PRIORITY,
    RUN_CLASS,
    RUN_NAME,
    RUN_SOCKET,
    RUN_TEMPLATES,
    RUN_NO_MANAGED,
    RUN_NO_DAEMON,
    RUN_OPT_COUNT
};
const com_cli_opt_t cmd_run_opts[RUN_OPT_COUNT + 1] = {
    [RUN_POLICY] = {"--policy", true},
    [RUN_BUDGET] = {"--budget", true},
    [RUN_STATS] = {"--stats", true},
    [RUN_PRIORITY] = {"--priority", true},
    [RUN_CLASS] = {"--class", true},
    [RUN_NAME] = {"--name", true},
    [RUN_SOCKET] = {"--socket", true},
    [RUN_TEMPLATES] = {"--templates", true},
    [RUN_NO_MANAGED] = {"--no-managed", false},
    [RUN_NO_DAEMON] = {"--no-daemon", false},
    [RUN_OPT_COUNT] = {NULL, false},
};

int cmd_run(int argc, char **argv)
{
    const char *opt[RUN_OPT_COUNT] = {NULL}; /* each option's value, or its name for a flag */
    int i;
    if (com_cli_help_asked(argc, argv, cmd_run_opts)) {
        run_help();
        return 0;
    }
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        int k = com_cli_opt_find(cmd_run_opts, a);
        if (k < 0)
            return cli_bad_word("run", a);
        if (!cmd_run_opts[k].valued)
            opt[k] = a;
        else if (!(opt[k] = com_cli_option_value(argc, argv, i++)))
            return cli_no_value("run", a);
    }
    const char *policy = opt[RUN_POLICY], *budget = opt[RUN_BUDGET], *stats = opt[RUN_STATS];
    const char *prio = opt[RUN_PRIORITY], *cls = opt[RUN_CLASS], *name = opt[RUN_NAME];
    const char *sock = opt[RUN_SOCKET], *tpl = opt[RUN_TEMPLATES];
    int no_managed = opt[RUN_NO_MANAGED] != NULL, no_daemon = opt[RUN_NO_DAEMON] != NULL;
    if (i >= argc)
        return cli_usage_error("run", "no command given");
    if (policy && strcmp(policy, "off") != 0 && strcmp(policy, "demand") != 0 &&
        strcmp(policy, "proactive") != 0)
        return cli_bad_value("run", "--policy", policy, "off, demand or proactive");
    uint64_t bytes;
    if (budget && com_parse_size(budget, &bytes) != GMUX_OK)
        return cli_bad_value("run", "--budget", budget, "a size such as 512M or 8G");

    int64_t p;
    if (prio && (com_parse_i64(prio, &p) != GMUX_OK || p < -20 || p > 20))
        return cli_bad_value("run", "--priority", prio, "an integer from -20 to 20");
    if (cls && strcmp(cls, "batch") != 0 && strcmp(cls, "latency") != 0)
        return cli_bad_value("run", "--class", cls, "latency or batch");

    char sock_path[108];
    int bad_sock = sock || !no_daemon ? cli_socket_path("run", sock, sock_path, sizeof(sock_path))
                                      : 0; /* the daemon's path, before one starts for it */
    if (bad_sock)
        return bad_sock;

    char tpl_abs[PATH_MAX];
    if ((tpl && run_check_templates(tpl, tpl_abs) != 0) || (stats && run_check_stats(stats) != 0))
        return 1;
    int bad = cli_check_command("run", argv[i]); /* before a daemon starts for it */
    if (bad)
        return bad;

    char shim[PATH_MAX];
    if (run_find_shim(shim, sizeof(shim)) != 0)
        return cli_fail("run", "libgmux.so not found next to gmux or in ../%s",
                        GMUX_INSTALL_LIBDIR);
    if (run_set_preload(shim) != 0 || (policy && setenv("GMUX_POLICY", policy, 1) != 0) ||
        (budget && setenv("GMUX_BUDGET", budget, 1) != 0) ||
        (no_managed && setenv("GMUX_SHIM_MANAGED", "0", 1) != 0) ||
        (stats && setenv("GMUX_SHIM_STATS", stats, 1) != 0) ||
        (prio && setenv("GMUX_TASK_PRIORITY", prio, 1) != 0) ||
        (cls && setenv("GMUX_TASK_CLASS", cls, 1) != 0) ||
        (name && setenv("GMUX_TASK_NAME", name, 1) != 0) ||
        (sock && setenv("GMUX_SOCKET", sock, 1) != 0) ||
        (tpl && setenv("GMUX_TEMPLATES", tpl_abs, 1) != 0) ||
        setenv("GMUX_GATE", no_daemon ? "0" : "1", 1) != 0)
        return cli_fail("run", "cannot set the environment: %s", strerror(errno));
    /* what the shim in the program and the daemon read, the options applied */
    bad = cli_settings_check("run", COM_SCOPE_SHIM | (no_daemon ? 0 : COM_SCOPE_DAEMON), NULL);
    if (bad)
        return bad;
    if (!no_daemon && run_join_daemon() != 0)
        return 1;
    execvp(argv[i], &argv[i]);
    int err = errno;
    cli_fail("run", "cannot run '%s': %s", argv[i], strerror(err));
    return err == ENOENT ? 127 : 126;
}
