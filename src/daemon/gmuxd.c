/* gmuxd: the time-slice daemon of one GPU host. Options: gmuxd --help. */
#include <stdio.h>

#include <gmux/version.h>

#include "common/cliopt.h"
#include "common/settings.h"
#include "daemon/cli_main.h"

int main(int argc, char **argv)
{
    char err[512];
    int help = com_cli_help_asked(argc, argv, NULL);
    /* --version as gmux's: the only word, and like --help it reads no setting */
    if (!help && argc >= 2 && com_cli_is_version(argv[1])) {
        if (argc > 2)
            return com_cli_usage_error("gmuxd", "unexpected argument '%s' after %s", argv[2],
                                       argv[1]);
        printf("gmuxd %s\n", GMUX_VERSION_STRING);
        return 0;
    }
    dmn_cli_drop_overridden_env(argc, argv); /* --quantum-ms N wins over GMUX_DAEMON_QUANTUM_MS */
    /* GMUX_LOG here (not for --help, which reads no setting); the daemon's
     * own settings once dmn_cli_main knows it starts one */
    if (!help && com_settings_init_scoped(0, err, sizeof(err)) != GMUX_OK) {
        fprintf(stderr, "gmuxd: %s (see gmux --help-settings)\n", err);
        return 2;
    }
    return dmn_cli_main("gmuxd", argc, argv);
}
