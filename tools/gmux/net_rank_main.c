/*
 * gmux-net-rank: one rank of a net command of the CLI, started by gmux
 * through its launcher (net_rank.h says why it is a program of its own).
 *
 *   gmux-net-rank bench-net [ARGS]   a rank of gmux bench net
 *   gmux-net-rank demo-net           a rank of the net part of gmux demo
 */
#include <stdio.h>
#include <string.h>

#include "common/settings.h"
#include "net_rank.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subs[] = {
    {"bench-net", net_rank_bench, "one rank of gmux bench net"},
    {"demo-net", net_rank_demo, "one rank of the net part of gmux demo"},
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: " NET_RANK_EXE " COMMAND [ARGS...]\n\n"
               "The ranks of gmux's net commands, started by gmux launch for them;\n"
               "not meant to be run by hand (run gmux bench net, gmux demo).\n\nCommands:\n");
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        fprintf(f, "  %-10s %s\n", subs[i].name, subs[i].summary);
}

int main(int argc, char **argv)
{
    /* gmux checked the net settings before starting the ranks; a rank
     * still loads them (GMUX_LOG among them) the same way */
    char err[1024];
    if (com_settings_init_scoped(COM_SCOPE_NET, err, sizeof(err)) != GMUX_OK) {
        fprintf(stderr, NET_RANK_EXE ": %s (see gmux --help-settings)\n", err);
        return NET_RANK_EXIT_USAGE;
    }
    if (argc < 2) {
        usage(stderr);
        return NET_RANK_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        if (strcmp(argv[1], subs[i].name) == 0)
            return subs[i].run(argc - 1, argv + 1);
    fprintf(stderr, NET_RANK_EXE ": unknown command '%s' (see " NET_RANK_EXE " --help)\n", argv[1]);
    return NET_RANK_EXIT_USAGE;
}
