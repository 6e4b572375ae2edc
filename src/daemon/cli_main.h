/*
 * The daemon's command line, shared by the gmuxd executable and `gmux daemon`
 * (see cli_main.c for the options). Returns the exit status.
 */
#ifndef DMN_CLI_MAIN_H
#define DMN_CLI_MAIN_H

int dmn_cli_main(const char *prog, int argc, char **argv);

#endif /* DMN_CLI_MAIN_H */
