/*
 * gmux top: the daemon's tasks, live. Refreshes every --interval seconds on
 * one connection; q or Ctrl-C quits (the terminal is restored). The screen
 * is cleared for each table only when stdout is a terminal; into a pipe or
 * a file the tables follow one another. --once prints one table; --batch N
 * prints N tables one after another without clearing the screen (for logs
 * and tests).
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "daemon/endpoint.h"
#include "daemon/report.h"
#include "top_opts.h"

static volatile sig_atomic_t top_stop;

static void on_sigint(int sig)
{
    (void)sig;
    top_stop = 1;
}

/* Waits up to ms for 'q' on a terminal (or a line starting with q elsewhere). */
static int wait_quit(int ms)
{
    struct pollfd pf = {STDIN_FILENO, POLLIN, 0};
    if (poll(&pf, 1, ms) != 1 || !(pf.revents & POLLIN))
        return 0;
    char ch;
    ssize_t n = read(STDIN_FILENO, &ch, 1);
    if (n == 0) /* stdin at its end (not a terminal): just wait */
        usleep((useconds_t)ms * 1000u);
    return n == 1 && (ch == 'q' || ch == 'Q');
}

static int print_help(void)
{
    printf("Usage: gmux top [--socket PATH] [--interval SECONDS] [--once | --batch N]\n"
           "       gmux top -h | --help | -V | --version\n\n"
           "Live view of the daemon's tasks: state, resident bytes and of them the\n"
           "pinned ones (PINNED: no plan moves them; shown from the first table\n"
           "where a task pins any until top ends, so the layout stays), total\n"
           "bytes, faults, bytes migrated, kernels and share of GPU time.\n"
           "q or Ctrl-C quits. On a terminal the screen is redrawn; into a pipe or a\n"
           "file the tables follow one another, as with --batch. The table fits\n"
           "COLUMNS, else the terminal, else 80 columns (rounded sizes and counts,\n"
           "RES, PIN and MIGR headers, names cut where the wide form does not fit:\n"
           "see gmux status --help).\n\n"
           "  --socket PATH       gmuxd's socket (default: GMUX_SOCKET, see\n"
           "                      gmux --help-settings)\n"
           "  --interval SECONDS  between two tables, 0.05 to 3600 (default 1)\n"
           "  --once              one table, then exit\n"
           "  --batch N           N tables one after another, without clearing the\n"
           "                      screen (for logs); not with --once\n\n");
    cli_print_task_states(stdout);
    printf("\nExit status: 0 after q, Ctrl-C, SIGTERM or the last round of --once or\n"
           "--batch; 1 when no daemon answers on the socket or it stops answering;\n"
           "2 for a usage error.\n");
    return 0;
}

int cmd_top(int argc, char **argv)
{
    char path[108];
    struct top_opts o;
    int bad = top_opts_read(argc, argv, &o);
    if (bad < 0)
        return print_help();
    if (bad)
        return bad;
    double interval = o.interval;
    int64_t rounds = o.rounds;
    int live = o.live;
    bad = cli_socket_path("top", o.sock, path, sizeof(path));
    if (bad)
        return bad;
    int fd;
    char why[256];
    gmux_status_t st = dmn_endpoint_connect_why(path, &fd, why, sizeof(why));
    if (st != GMUX_OK)
        return cli_fail("top", "no daemon answers on %s: %s", path, why);
    dmn_report_t *r = calloc(1, sizeof(*r));
    if (!r) {
        close(fd);
        return cli_fail("top", "out of memory");
    }
    /* before the terminal is made raw: a Ctrl-C from here on restores it */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* escapes that clear a screen only for a terminal, not into a log */
    int clear = live && isatty(STDOUT_FILENO);
    struct termios saved;
    int raw = live && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
    if (raw) {
        struct termios t = saved;
        t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        tcsetattr(STDIN_FILENO, TCSANOW, &t);
    }
    int rc = 0;
    dmn_table_keep_t keep = {0}; /* the PIN column stays once it appeared */
    for (int64_t k = 0; !top_stop && (rounds < 0 || k < rounds); k++) {
        if (k > 0 &&
            (live ? wait_quit((int)(interval * 1000)) : (usleep((useconds_t)(interval * 1e6)), 0)))
            break;
        if (top_stop)
            break;
        st = dmn_report_query_why(fd, r, 3000, why, sizeof(why));
        if (st != GMUX_OK) {
            rc = cli_fail("top", "daemon on %s stopped answering: %s", path, why);
            break;
        }
        if (clear)
            fputs("\033[H\033[2J", stdout);
        dmn_report_table_keep(stdout, path, r, cli_columns(), &keep);
        if (clear)
            fputs("\nq or Ctrl-C quits\n", stdout);
        else if (rounds != 1)
            fputc('\n', stdout);
        fflush(stdout);
    }
    if (raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    free(r);
    close(fd);
    return rc;
}
