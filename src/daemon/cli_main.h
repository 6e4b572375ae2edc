/*
 * The daemon's command line, shared by the gmuxd executable and `gmux daemon`
 * (see cli_main.c for the options). Returns the exit status.
 */
#ifndef DMN_CLI_MAIN_H
#define DMN_CLI_MAIN_H

int dmn_cli_main(const char *prog, int argc, char **argv);

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
