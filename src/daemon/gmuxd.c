/* gmuxd: the time-slice daemon of one GPU host. Options: gmuxd --help. */
#include <stdio.h>

#include "common/cliopt.h"
#include "common/settings.h"
#include "daemon/cli_main.h"

int main(int argc, char **argv)
{
    char err[512];
    dmn_cli_drop_overridden_env(argc, argv); /* --quantum-ms N wins over GMUX_DAEMON_QUANTUM_MS */
    /* GMUX_LOG here (not for --help, which reads no setting); the daemon's
     * own settings once dmn_cli_main knows it starts one */
    if (!com_cli_help_asked(argc, argv, NULL) &&
        com_settings_init_scoped(0, err, sizeof(err)) != GMUX_OK) {
        fprintf(stderr, "gmuxd: %s (see gmux --help-settings)\n", err);
        return 2;
    }
    return dmn_cli_main("gmuxd", argc, argv);
}
