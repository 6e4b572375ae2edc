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
    X("launch", cmd_launch, "start N ranks of a program with a rendezvous (gmux net jobs)")        \
    X("bench", cmd_bench, "run a benchmark: gmux bench net")

#define GMUX_COMMAND_DECL_(name, fn, summary) int fn(int argc, char **argv);
GMUX_COMMAND_LIST(GMUX_COMMAND_DECL_)
#undef GMUX_COMMAND_DECL_

#endif /* GMUX_CLI_COMMANDS_H */
