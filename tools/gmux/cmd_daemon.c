/* gmux daemon: starts gmuxd (see src/daemon/cli_main.c for the options). */
#include "commands.h"
#include "daemon/cli_main.h"

int cmd_daemon(int argc, char **argv)
{
    return dmn_cli_main("gmux daemon", argc, argv);
}
