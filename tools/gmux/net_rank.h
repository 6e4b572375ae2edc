/*
 * gmux-net-rank: the ranks of the CLI's net commands (gmux bench net, the
 * net part of gmux demo) run in their own executable, the only one of the
 * CLI that links libfabric. The gmux binary itself never loads it: on
 * Debian, libfabric brings libpsm_infinipath, whose constructor spends
 * about 200 ms calibrating a clock, and every command paid it at start,
 * `gmux --help` included. gmux launch needs none of it either: its
 * rendezvous server is plain TCP (net/rdv.h, library gmux_net_rdv).
 *
 * Where it lives: beside gmux in the build tree, in
 * <prefix>/<libexecdir>/gmux/ once installed (../libexec/gmux from gmux's
 * own directory). Users do not run it; `gmux-net-rank --help` says so. It
 * links neither the CLI's helpers (cli.c needs the daemon library) nor the
 * daemon's or simulator's libraries: only net and common.
 */
#ifndef GMUX_CLI_NET_RANK_H
#define GMUX_CLI_NET_RANK_H

#include <stddef.h>

#define NET_RANK_EXE        "gmux-net-rank"
#define NET_RANK_EXIT_USAGE 2 /* as gmux's usage errors */

/* The gmux side: the path of gmux-net-rank into out (cap bytes), looked for
 * beside this executable, then in ../<libexecdir>/gmux. 0; or 1 after one
 * line on stderr, "gmux CMD: gmux-net-rank not found beside DIR/gmux nor in
 * DIR/../libexec/gmux ...", naming where it looked. */
int net_rank_exe(const char *cmd, char *out, size_t cap);

/* The gmux-net-rank side, one entry point per subcommand; each returns the
 * rank's exit status. argv[0] is the subcommand's name. */
int net_rank_bench(int argc, char **argv); /* bench-net: one rank of gmux bench net */
int net_rank_demo(int argc, char **argv);  /* demo-net: one rank of the net demo */

#endif /* GMUX_CLI_NET_RANK_H */
