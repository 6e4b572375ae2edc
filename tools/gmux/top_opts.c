/* gmux top's words: see top_opts.h. Moved out of cmd_top.c unchanged. */
#include "top_opts.h"

#include <string.h>

#include "common/cliopt.h"
#include "common/parse.h"

#define PROG "gmux top"

int top_opts_read(int argc, char **argv, struct top_opts *o)
{
    o->sock = NULL;
    o->interval = 1.0;
    o->rounds = -1; /* forever */
    o->live = true;
    int once = 0, batch = 0; /* which exclude each other */
    /* --help anywhere wins, before any other option is checked */
    if (com_cli_help_asked(argc, argv, NULL))
        return -1;
    for (int i = 1; i < argc; i++) {
        once |= strcmp(argv[i], "--once") == 0;
        batch |= strcmp(argv[i], "--batch") == 0;
        if (strcmp(argv[i], "--once") == 0) {
            o->rounds = 1;
            o->live = false;
        } else if (strcmp(argv[i], "--socket") == 0 || strcmp(argv[i], "--interval") == 0 ||
                   strcmp(argv[i], "--batch") == 0) {
            const char *a = argv[i], *v = com_cli_option_value(argc, argv, i++);
            if (!v)
                return com_cli_no_value(PROG, a);
            if (a[2] == 's') {
                o->sock = v;
            } else if (a[2] == 'i') {
                if (com_parse_double(v, &o->interval) != GMUX_OK ||
                    !(o->interval >= TOP_MIN_INTERVAL) || o->interval > TOP_MAX_INTERVAL)
                    return com_cli_bad_value(PROG, a, v, "seconds from 0.05 to 3600");
            } else {
                if (com_parse_i64(v, &o->rounds) != GMUX_OK || o->rounds <= 0)
                    return com_cli_bad_value(PROG, a, v, "a number of tables, 1 or more");
                o->live = false;
            }
        } else {
            return com_cli_bad_word(PROG, argv[i]);
        }
    }
    if (once && batch)
        return com_cli_usage_error(PROG, "give one of --once and --batch, not both");
    return 0;
}
