/*
 * The subcommands of the gmux CLI, listed once:
 *   X(name, function, settings, help_opts, one-line summary)
 * The dispatch table and `gmux --help` are generated from this list. Each
 * function lives in cmd_<name>.c and returns the process exit status
 * (0 success, 1 failure, 2 usage error). settings: the COM_SCOPE_* bits
 * (common/settings.h) of the parts the command runs, whose GMUX_* variables
 * are checked before it starts (a malformed one: exit 2); GMUX_LOG always.
 * daemon, run, trace and profile check theirs themselves, after their
 * options (which replace some variables) are applied. No setting is
 * checked when the command's words ask for its --help or --version
 * (help_opts: the option table its help scan reads, com_cli_help_asked and
 * com_cli_version_asked; NULL for all but run), nor for gmux --help and
 * --help-settings. gmux CMD --version is answered by main.c, as gmux
 * --version is, before the command runs.
 */
#ifndef GMUX_CLI_COMMANDS_H
#define GMUX_CLI_COMMANDS_H

#include "common/cliopt.h"

/* gmux run's options: what its parser and its --help scan read. */
extern const com_cli_opt_t cmd_run_opts[];

#define GMUX_COMMAND_LIST(X)                                                                       \
    X("demo", cmd_demo, COM_SCOPE_ALL, NULL,                                                       \
      "run the built-in demonstration of everything built so far")                                 \
    X("sim", cmd_sim, 0, NULL, "simulate GPU sharing: demand paging vs proactive vs oracle")       \
    X("trace", cmd_trace, 0, NULL, "record a program's trace (-- CMD); generate, convert, show")   \
    X("profile", cmd_profile, 0, NULL, "learn working-set templates from a trace or a program")    \
    X("predict-report", cmd_predict_report, 0, NULL,                                               \
      "working-set prediction per kernel: precision and recall")                                   \
    X("run", cmd_run, 0, cmd_run_opts, "run a CUDA program under libgmux.so and gmuxd (-- CMD)")   \
    X("daemon", cmd_daemon, 0, NULL, "start gmuxd, the GPU time-slice daemon (or --foreground)")   \
    X("status", cmd_status, COM_SCOPE_CLIENT, NULL,                                                \
      "the daemon's tasks once (--json for machines)")                                             \
    X("top", cmd_top, COM_SCOPE_CLIENT, NULL,                                                      \
      "the daemon's tasks live: state, memory, faults, GPU share")                                 \
    X("launch", cmd_launch, COM_SCOPE_NET | COM_SCOPE_SHMEM, NULL,                                 \
      "start N ranks of a program with a rendezvous (gmux net jobs)")                              \
    X("bench", cmd_bench, COM_SCOPE_NET, NULL, "run a benchmark: gmux bench net")

#define GMUX_COMMAND_DECL_(name, fn, scopes, help_opts, summary) int fn(int argc, char **argv);
GMUX_COMMAND_LIST(GMUX_COMMAND_DECL_)
#undef GMUX_COMMAND_DECL_

#endif /* GMUX_CLI_COMMANDS_H */
