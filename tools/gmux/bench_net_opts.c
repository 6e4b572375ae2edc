/* gmux bench net's words: see bench_net_opts.h. Moved out of bench_net.c unchanged. */
#include "bench_net_opts.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "common/parse.h"
#include "plot.h"

#define PROG_CMD "bench net"

int bench_net_opts_read(int argc, char **argv, struct bench_net_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->provs[0] = "shm";
    o->provs[1] = "tcp";
    o->nprov = 2;
    snprintf(o->reps, sizeof(o->reps), "%d", BENCH_NET_REPS);
    /* --help anywhere wins, before any other option is checked */
    if (com_cli_help_asked(argc, argv, NULL))
        return -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL; /* v: the value of an option that takes one */
        if ((strcmp(a, "--reps") == 0 || strcmp(a, "--same") == 0 || strcmp(a, "--plot") == 0 ||
             strcmp(a, "--provider") == 0) &&
            !(v = com_cli_option_value(argc, argv, i++)))
            return cli_no_value(PROG_CMD, a);
        if (strcmp(a, "--reps") == 0) {
            uint64_t n = 0;
            if (com_parse_u64(v, &n) != GMUX_OK || n < 1 || n > BENCH_NET_REPS_MAX)
                return cli_bad_value(PROG_CMD, a, v, "1 to %d runs", BENCH_NET_REPS_MAX);
            snprintf(o->reps, sizeof(o->reps), "%d", (int)n);
        } else if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--quick") == 0) {
            o->quick = true;
        } else if (strcmp(a, "--calls") == 0) {
            o->calls = true;
        } else if (strcmp(a, "--same") == 0) {
            if (strcmp(v, "gmux") != 0 && strcmp(v, "raw") != 0)
                return cli_bad_value(PROG_CMD, a, v, "gmux or raw");
            o->same = v;
        } else if (strcmp(a, "--plot") == 0) {
            int bad = plot_prefix_check(PROG_CMD, a, v, "bench-net");
            if (bad)
                return bad;
            o->plot = v;
        } else if (strcmp(a, "--provider") == 0) {
            if (strcmp(v, "shm") == 0 || strcmp(v, "tcp") == 0) {
                o->provs[0] = v;
                o->nprov = 1;
            } else if (strcmp(v, "both") == 0) { /* the last --provider counts */
                o->provs[0] = "shm";
                o->nprov = 2;
            } else {
                return cli_bad_value(PROG_CMD, a, v, "shm, tcp or both");
            }
        } else {
            return cli_bad_word(PROG_CMD, a);
        }
    }
    return 0;
}
