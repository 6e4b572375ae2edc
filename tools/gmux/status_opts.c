/* gmux status's words: see status_opts.h. Moved out of cmd_status.c unchanged. */
#include "status_opts.h"

#include <string.h>

#include "common/cliopt.h"

#define PROG "gmux status"

int status_opts_read(int argc, char **argv, struct status_opts *o)
{
    o->sock = NULL;
    o->json = false;
    /* --help anywhere wins, before any other option is checked */
    if (com_cli_help_asked(argc, argv, NULL))
        return -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            o->json = true;
        } else if (strcmp(argv[i], "--socket") == 0) {
            o->sock = com_cli_option_value(argc, argv, i++);
            if (!o->sock)
                return com_cli_no_value(PROG, "--socket");
        } else {
            return com_cli_bad_word(PROG, argv[i]);
        }
    }
    return 0;
}
