/*
 * The subcommands of the gmux CLI, listed once:
 *   X(name, function, one-line summary)
 * The dispatch table and `gmux --help` are generated from this list. Each
 * function lives in cmd_<name>.c and returns the process exit status
 * (0 success, 1 failure, 2 usage error).
 */
#ifndef GMUX_CLI_COMMANDS_H
#define GMUX_CLI_COMMANDS_H

#define GMUX_COMMAND_LIST(X)                                                                       \
    X("demo", cmd_demo, "run the built-in demonstration of everything built so far")               \
    X("sim", cmd_sim, "simulate tasks sharing a GPU: demand paging vs proactive vs oracle")        \
    X("trace", cmd_trace, "record a program's trace (-- CMD), or generate, convert, show one")     \
    X("profile", cmd_profile, "learn working-set templates from a trace or a program")             \
    X("predict-report", cmd_predict_report,                                                        \
      "precision and recall of working-set prediction per kernel, beside whole regions")           \
    X("run", cmd_run, "run a CUDA program under libgmux.so, joining gmuxd (gmux run -- CMD)")      \
    X("daemon", cmd_daemon,                                                                        \
      "start gmuxd, the GPU time-slice daemon (background unless --foreground)")                   \
    X("status", cmd_status, "the daemon's tasks once (--json for machines)")                       \
    X("top", cmd_top, "the daemon's tasks live: state, memory, faults, share of GPU time")         \
    X("launch", cmd_launch, "start N ranks of a program with a rendezvous (gmux net jobs)")        \
    X("bench", cmd_bench, "run a benchmark: gmux bench net")

#define GMUX_COMMAND_DECL_(name, fn, summary) int fn(int argc, char **argv);
GMUX_COMMAND_LIST(GMUX_COMMAND_DECL_)
#undef GMUX_COMMAND_DECL_

#endif /* GMUX_CLI_COMMANDS_H */
