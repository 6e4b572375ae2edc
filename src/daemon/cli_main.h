/*
 * The daemon's command line, shared by the gmuxd executable and `gmux daemon`
 * (see cli_main.c for the options). Returns the exit status.
 */
#ifndef DMN_CLI_MAIN_H
#define DMN_CLI_MAIN_H

#include <stddef.h>

int dmn_cli_main(const char *prog, int argc, char **argv);

/*
 * gmuxd's socket path into out (cap bytes, at least 108): given (a --socket
 * value) when not NULL, else GMUX_SOCKET or the default. 0, or a usage
 * error of prog (COM_CLI_EXIT_USAGE, said) when the path is longer than a
 * Unix socket address holds: cut short it would name another socket. The
 * daemon's and every gmux command's that takes --socket.
 */
int dmn_cli_socket_path(const char *prog, const char *given, char *out, size_t cap);

/*
 * Removes from the environment each variable whose setting an option in argv
 * (the daemon's words, argv[0] its name) gives: GMUX_DAEMON_QUANTUM_MS for
 * --quantum-ms, GMUX_DAEMON_PLACEMENT for --placement. Called before
 * com_settings_init, so that the option wins and a malformed or out-of-range
 * variable it replaces is neither parsed nor an error. The option's value is
 * checked by dmn_cli_main.
 */
void dmn_cli_drop_overridden_env(int argc, char **argv);

#endif /* DMN_CLI_MAIN_H */
