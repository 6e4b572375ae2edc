/* gmux predict-report's words: see predict_report_opts.h. Moved out of
 * cmd_predict_report.c unchanged. */
#include "predict_report_opts.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CMD "predict-report"

int predict_report_opts_read(int argc, char **argv, struct predict_report_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->in.seed = 1;
    if (com_cli_help_asked(argc, argv, NULL))
        return -1;
    o->in.sets = calloc((size_t)argc + 1, sizeof(char *));
    if (!o->in.sets)
        return cli_fail(CMD, "out of memory");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            o->json = true;
            continue;
        }
        if (strcmp(argv[i], "--templates") == 0) {
            if (!(o->templates = com_cli_option_value(argc, argv, i++)))
                return cli_no_value(CMD, "--templates");
            continue;
        }
        int took = pdrive_parse_arg(CMD, &o->in, argc, argv, i);
        if (took < 0)
            return CLI_EXIT_USAGE;
        if (took == 0)
            return cli_bad_word(CMD, argv[i]);
        i += took - 1;
    }
    return 0;
}

void predict_report_opts_free(struct predict_report_opts *o)
{
    free(o->in.sets);
    o->in.sets = NULL;
}
