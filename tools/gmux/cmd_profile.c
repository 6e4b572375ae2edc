/*
 * gmux profile: learns working-set templates from a trace (or a built-in
 * workload) and writes the template database (docs/templates.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "engine/template_db.h"
#include "predict_drive.h"

#define CMD "profile"

static void print_help(void)
{
    printf("Usage: gmux profile TRACE -o FILE\n"
           "       gmux profile --workload NAME [--set KEY=VALUE ...] [--seed S] -o FILE\n\n"
           "Replays every launch of the trace, learns per kernel and pointer argument the\n"
           "simplest template (T1 fixed, T2 linear in launch values, T3 strided) that\n"
           "explains the recorded ranges and predicts a held-out launch, and writes the\n"
           "template database to FILE (format: docs/templates.md). Kernels whose access\n"
           "is data-dependent are written as whole-region fallbacks, with the reason.\n"
           "Prints one line per kernel: what was learned.\n");
}

int cmd_profile(int argc, char **argv)
{
    const char *out = NULL;
    pdrive_input_t in = {.seed = 1};
    int rc = CLI_EXIT_USAGE;
    in.sets = calloc((size_t)argc + 1, sizeof(char *));
    if (!in.sets)
        return cli_fail(CMD, "out of memory");
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            print_help();
            rc = 0;
            goto free_sets;
        }
        if (strcmp(argv[i], "-o") == 0) {
            if (i + 1 >= argc) {
                cli_usage_error(CMD, "'-o' needs a value");
                goto free_sets;
            }
            out = argv[++i];
            continue;
        }
        int took = pdrive_parse_arg(CMD, &in, argc, argv, i);
        if (took < 0)
            goto free_sets;
        if (took == 0) {
            rc = cli_usage_error(CMD, "unexpected argument '%s'", argv[i]);
            goto free_sets;
        }
        i += took - 1;
    }
    if (!out) {
        rc = cli_usage_error(CMD, "name the output database with -o FILE");
        goto free_sets;
    }
    sim_source_t *src;
    rc = pdrive_open(CMD, &in, &src);
    if (rc != 0)
        goto free_sets;
    eng_predictor_t *p;
    if (eng_predictor_create(&p) != GMUX_OK) {
        rc = cli_fail(CMD, "out of memory");
        goto close_source;
    }
    rc = pdrive_run(CMD, src, p, false, true, NULL);
    if (rc == 0) {
        char err[512];
        if (eng_tpl_db_save(p, out, err, sizeof(err)) != GMUX_OK) {
            rc = cli_fail(CMD, "%s", err);
        } else {
            for (uint32_t k = 0; k < src->nkernels; k++) {
                eng_pred_kernel_info_t ki;
                char desc[2048];
                if (eng_predictor_kernel_info(p, k, &ki) != GMUX_OK || ki.samples == 0)
                    continue;
                printf("%-28s %8llu launches  %s\n", src->kernel_names[k],
                       (unsigned long long)ki.samples,
                       eng_predictor_describe(p, k, desc, sizeof(desc)));
            }
            printf("templates written to %s\n", out);
        }
    }
    eng_predictor_destroy(p);

close_source:
    sim_source_close(src);
free_sets:
    free(in.sets);
    return rc;
}
