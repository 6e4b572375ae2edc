/* A real server in a forked child of a cmocka test; see tsrv.h. */
#include "tsrv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/settings.h"

static volatile sig_atomic_t child_stop;

static void on_term(int sig)
{
    (void)sig;
    child_stop = 1;
}

pid_t tsrv_start_at(const char *file, int line, const dmn_server_opts_t *o,
                    int (*prep)(dmn_server_opts_t *, void *), void *arg, pid_t *slot)
{
    int p[2];
    if (pipe(p) != 0)
        fail_msg("%s:%d: pipe for the server child: %s", file, line, strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        fail_msg("%s:%d: fork of the server child: %s", file, line, strerror(errno));
    if (pid == 0) {
        close(p[0]);
        signal(SIGTERM, on_term);
        dmn_server_opts_t mine = *o;
        if (prep && prep(&mine, arg) != 0)
            _exit(2);
        _exit(dmn_server_run(&mine, &child_stop, p[1]) == GMUX_OK ? 0 : 1);
    }
    close(p[1]);
    *slot = pid;
    char b;
    ssize_t n = read(p[0], &b, 1);
    close(p[0]);
    if (n != 1)
        fail_msg("%s:%d: the server child %d never listened (read %zd)", file, line, (int)pid, n);
    return pid;
}

static void to_file(com_log_level_t level, com_log_subsys_t subsys, const char *line, void *arg)
{
    (void)level, (void)subsys;
    FILE *f = arg;
    fprintf(f, "%s\n", line);
    fflush(f);
    fprintf(stderr, "%s\n", line);
}

int tsrv_log_to(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    com_log_set_sink(to_file, f);
    return 0;
}

int tsrv_prep_cfg(dmn_server_opts_t *o, void *arg)
{
    const tsrv_cfg_t *c = arg;
    char err[64];
    if (c->capacity &&
        (com_settings_set(COM_SETTING_DAEMON_CAPACITY, c->capacity, err, sizeof(err)) != GMUX_OK ||
         com_settings_set(COM_SETTING_DAEMON_SHARE, "0", err, sizeof(err)) != GMUX_OK))
        return 1;
    o->placement = dmn_placement_find(c->placement);
    return 0;
}

void tsrv_wait_exit0_at(const char *file, int line, pid_t *slot)
{
    pid_t pid = *slot;
    int st = 0;
    pid_t got = waitpid(pid, &st, 0);
    if (got != pid)
        fail_msg("%s:%d: waitpid of the server child %d: %d (%s)", file, line, (int)pid, (int)got,
                 strerror(errno));
    *slot = 0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("%s:%d: the server child %d did not exit 0 (wait status 0x%x)", file, line,
                 (int)pid, (unsigned)st);
}

void tsrv_stop_at(const char *file, int line, pid_t *slot)
{
    kill(*slot, SIGTERM);
    tsrv_wait_exit0_at(file, line, slot);
}
