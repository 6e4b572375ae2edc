/*
 * The subcommands of the gmux CLI, listed once:
 *   X(name, function, settings, one-line summary)
 * The dispatch table and `gmux --help` are generated from this list. Each
 * function lives in cmd_<name>.c and returns the process exit status
 * (0 success, 1 failure, 2 usage error). settings: the COM_SCOPE_* bits
 * (common/settings.h) of the parts the command runs, whose GMUX_* variables
 * are checked before it starts (a malformed one: exit 2); GMUX_LOG always.
 * daemon, run, trace and profile check theirs themselves, after their
 * options (which replace some variables) are applied.
 */
#ifndef GMUX_CLI_COMMANDS_H
#define GMUX_CLI_COMMANDS_H

#define GMUX_COMMAND_LIST(X)                                                                       \
    X("demo", cmd_demo, COM_SCOPE_ALL,                                                             \
      "run the built-in demonstration of everything built so far")                                 \
    X("sim", cmd_sim, 0, "simulate GPU sharing: demand paging vs proactive vs oracle")             \
    X("trace", cmd_trace, 0, "record a program's trace (-- CMD); generate, convert, show")         \
    X("profile", cmd_profile, 0, "learn working-set templates from a trace or a program")          \
    X("predict-report", cmd_predict_report, 0,                                                     \
      "working-set prediction per kernel: precision and recall")                                   \
    X("run", cmd_run, 0, "run a CUDA program under libgmux.so and gmuxd (-- CMD)")                 \
    X("daemon", cmd_daemon, 0, "start gmuxd, the GPU time-slice daemon (or --foreground)")         \
    X("status", cmd_status, COM_SCOPE_CLIENT, "the daemon's tasks once (--json for machines)")     \
    X("top", cmd_top, COM_SCOPE_CLIENT,                                                            \
      "the daemon's tasks live: state, memory, faults, GPU share")                                 \
    X("launch", cmd_launch, COM_SCOPE_NET | COM_SCOPE_SHMEM,                                       \
      "start N ranks of a program with a rendezvous (gmux net jobs)")                              \
    X("bench", cmd_bench, COM_SCOPE_NET, "run a benchmark: gmux bench net")

#define GMUX_COMMAND_DECL_(name, fn, scopes, summary) int fn(int argc, char **argv);
GMUX_COMMAND_LIST(GMUX_COMMAND_DECL_)
#undef GMUX_COMMAND_DECL_

#endif /* GMUX_CLI_COMMANDS_H */
