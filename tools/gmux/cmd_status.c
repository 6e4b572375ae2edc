/* gmux status [--json] [--socket PATH]: the daemon's tasks, once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "daemon/endpoint.h"
#include "daemon/report.h"
#include "status_opts.h"

static int print_help(void)
{
    printf("Usage: gmux status [--json] [--socket PATH]\n"
           "       gmux status -h | --help | -V | --version\n\n"
           "Shows once what gmux top shows live: the daemon's pid, and each of its\n"
           "tasks with its state, resident bytes, of them the pinned ones (device\n"
           "memory no plan can move, so gmuxd cannot evict it: the PINNED column,\n"
           "shown while a task pins any), total bytes, faults, bytes migrated and\n"
           "share of GPU time; above them the mode (sliced or shared) and, once\n"
           "the placement has planned anything, the bytes it ordered evicted, filled\n"
           "and filled ahead of a turn.\n\n"
           "The table fits COLUMNS, else the terminal, else 80 columns. Where its\n"
           "wide form does not fit, sizes are rounded to 3 digits (1.5G: 1.5 GiB),\n"
           "counts too from 100000 on (100k), RES is resident, PIN pinned, MIGR\n"
           "migrated, and long names end in \"...\"; --json keeps every value whole\n"
           "(\"pinned\" for each task, also when it is 0).\n\n"
           "  --json         one JSON object instead of the table\n"
           "  --socket PATH  gmuxd's socket (default: GMUX_SOCKET, see\n"
           "                 gmux --help-settings)\n\n");
    cli_print_task_states(stdout);
    printf("\nExit status: 0 when the daemon answered; 1 when no daemon answers on the\n"
           "socket (within 3 s); 2 for a usage error.\n");
    return 0;
}

int cmd_status(int argc, char **argv)
{
    char path[108];
    struct status_opts o;
    int rc = status_opts_read(argc, argv, &o);
    if (rc < 0)
        return print_help();
    if (rc)
        return rc;
    rc = cli_socket_path("status", o.sock, path, sizeof(path));
    if (rc != 0)
        return rc;
    dmn_report_t *r = calloc(1, sizeof(*r));
    if (!r)
        return cli_fail("status", "out of memory");
    int fd;
    char why[256];
    gmux_status_t st = dmn_endpoint_connect_why(path, &fd, why, sizeof(why));
    if (st != GMUX_OK) {
        free(r);
        return cli_fail("status", "no daemon answers on %s: %s", path, why);
    }
    st = dmn_report_query_why(fd, r, 3000, why, sizeof(why));
    close(fd);
    if (st != GMUX_OK) { /* connected: a daemon is there, its answer failed */
        free(r);
        return cli_fail("status", "the daemon on %s did not answer: %s", path, why);
    }
    if (o.json)
        dmn_report_json(stdout, path, r);
    else
        dmn_report_table(stdout, path, r, cli_columns());
    free(r);
    return 0;
}
