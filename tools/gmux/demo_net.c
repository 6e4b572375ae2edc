/*
 * The net part of `gmux demo`: short loopback jobs under `gmux launch`, their
 * ranks gmux-net-rank demo-net (demo_net_rank.c), on shm and on tcp.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"
#include "commands.h"
#include "net_rank.h"

int demo_net(void)
{
    char exe[PATH_MAX];
    if (net_rank_exe("demo", exe, sizeof(exe)) != 0)
        return 1;
    static const struct {
        const char *prov, *n;
    } runs[] = {{"shm", "4"}, {"tcp", "2"}};
    int worst = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 0 && cores < 4) /* the shm run's ranks outnumber the cores */
        printf("   (%ld core%s here: ranks wait by polling, so with more ranks than cores a hop\n"
               "   mostly waits for the scheduler; on the H200's 16-core host a 64 KiB\n"
               "   put+signal round trip took 15 us, docs/gpu-results.md)\n",
               cores, cores == 1 ? "" : "s");
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        setenv("GMUX_NET_PROVIDER", runs[i].prov, 1);
        char *args[] = {"launch", "-n", (char *)runs[i].n, "--timeout", "60",
                        "--",     exe,  "demo-net",        NULL};
        fflush(stdout);
        int rc = cmd_launch(8, args);
        worst = rc > worst ? rc : worst;
    }
    unsetenv("GMUX_NET_PROVIDER");
    return worst;
}
