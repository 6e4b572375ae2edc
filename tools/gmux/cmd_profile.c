/*
 * gmux profile: learns working-set templates from a trace (or a built-in
 * workload, or a live program recorded through libgmux.so with its touched
 * ranges: gmux profile -o FILE -- CMD) and writes the template database
 * (docs/templates.md).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "engine/template_db.h"
#include "out_file.h"
#include "predict_drive.h"
#include "shim_record.h"

#include <unistd.h>

#define CMD "profile"

static void print_help(void)
{
    printf("Usage: gmux profile TRACE -o FILE\n"
           "       gmux profile --workload NAME [--set KEY=VALUE ...] [--seed S] -o FILE\n"
           "       gmux profile -o FILE -- CMD [ARGS...]\n"
           "       gmux profile -h | --help | -V | --version\n\n"
           "Replays every launch of the trace, learns per kernel and pointer argument the\n"
           "simplest template (T1 fixed, T2 linear in launch values, T3 strided) that\n"
           "explains the recorded ranges and predicts a held-out launch, and writes the\n"
           "template database to FILE (format: docs/templates.md). Kernels whose access\n"
           "is data-dependent are written as whole-region fallbacks, with the reason.\n"
           "Prints one line per kernel: what was learned.\n"
           "With -- CMD, CMD runs under libgmux.so (policy demand unless GMUX_POLICY is set)\n"
           "recording its launches and, after each (synchronized), the ranges it touched;\n"
           "those are learned from. See docs/shim.md, Recording. SIGINT, SIGTERM or\n"
           "SIGHUP N goes on to CMD; gmux waits for it, writes nothing and exits 128+N.\n\n"
           "Exit status: 0 once FILE is written; 1 when the trace cannot be read, FILE\n"
           "cannot be written (an earlier FILE stays as it was), or CMD exits with a\n"
           "non-zero status or makes no CUDA call (nothing is written); 127/126 when\n"
           "CMD is not found/not executable; 128+N after SIGINT, SIGTERM or SIGHUP N;\n"
           "2 for a usage error (a bad workload name or --set included) or a malformed\n"
           "GMUX_* setting the shim reads.\n");
}

int cmd_profile(int argc, char **argv)
{
    const char *out = NULL;
    pdrive_input_t in = {.seed = 1};
    if (com_cli_help_asked(argc, argv, NULL)) {
        print_help();
        return 0;
    }
    int rc = CLI_EXIT_USAGE;
    in.sets = calloc((size_t)argc + 1, sizeof(char *));
    if (!in.sets)
        return cli_fail(CMD, "out of memory");
    char **command = NULL;
    char trace_tmp[PATH_MAX];
    bool have_tmp = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            command = i + 1 < argc ? &argv[i + 1] : NULL;
            if (!command) {
                cli_usage_error(CMD, "no command given after '--'");
                goto free_sets;
            }
            break;
        }
        if (strcmp(argv[i], "-o") == 0) {
            if (!(out = com_cli_option_value(argc, argv, i))) {
                cli_no_value(CMD, "-o");
                goto free_sets;
            }
            i++;
            continue;
        }
        int took = pdrive_parse_arg(CMD, &in, argc, argv, i);
        if (took < 0)
            goto free_sets;
        if (took == 0) {
            rc = cli_bad_word(CMD, argv[i]);
            goto free_sets;
        }
        i += took - 1;
    }
    if (!out) {
        rc = cli_usage_error(CMD, "name the output database with -o FILE");
        goto free_sets;
    }
    /* a program has no settings or seed: said before it runs */
    if (command && (rc = pdrive_check_workload_options(CMD, &in)) != 0)
        goto free_sets;
    /* The database is written once learned, to a part file renamed over
     * it (out_file.h); whether that can be created is tried before a program
     * runs or a trace is replayed for it. Nothing opens a FIFO or a device
     * before then: opening one blocks until someone reads it. */
    if (in.trace && cli_same_file(in.trace, out)) {
        rc = cli_usage_error(CMD, "-o '%s' is the same file as the trace '%s'", out, in.trace);
        goto free_sets;
    }
    cli_out_t o;
    if (cli_out_begin(&o, CMD, out) != 0 || cli_out_probe(&o) != 0) {
        rc = 1;
        goto free_sets;
    }
    if (command) {
        if (in.trace || in.workload) {
            rc = cli_usage_error(CMD, "give a TRACE, a --workload or -- CMD, not several");
            goto free_sets;
        }
        if ((rc = cli_check_command(CMD, command[0])) != 0)
            goto free_sets;
        const char *tmp = getenv("TMPDIR"), *from = " (TMPDIR)";
        if (!tmp || !*tmp || strlen(tmp) >= sizeof(trace_tmp) - 32) {
            tmp = "/tmp";
            from = "";
        }
        snprintf(trace_tmp, sizeof(trace_tmp), "%s/gmux-profile-XXXXXX", tmp);
        int fd = mkstemp(trace_tmp);
        if (fd < 0) { /* the folder named, and why: a TMPDIR that is not there */
            rc = cli_fail(CMD, "cannot create a temporary trace file in '%s'%s: %s", tmp, from,
                          strerror(errno));
            goto free_sets;
        }
        close(fd);
        have_tmp = true;
        int crc = gmux_shim_record(CMD, trace_tmp, "binary", true, "demand", NULL, command);
        if (crc != 0) {
            rc = crc < 0 ? -crc : cli_fail(CMD, "'%s' exited with status %d", command[0], crc);
            goto free_sets;
        }
        struct stat sb; /* the recorder writes its file from the first CUDA call on */
        if (stat(trace_tmp, &sb) == 0 && sb.st_size == 0) {
            rc = cli_fail(CMD,
                          "nothing learned, nothing written: no CUDA driver call of %s reached "
                          "libgmux.so",
                          command[0]);
            goto free_sets;
        }
        in.trace = trace_tmp;
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
        cli_out_guard(&o);
        if (eng_tpl_db_save(p, o.dst, err, sizeof(err)) != GMUX_OK) {
            cli_out_finish(&o, false);
            rc = cli_out_kept(&o) ? cli_fail(CMD, "%s (%s left as it was)", err, out)
                                  : cli_fail(CMD, "%s", err);
        } else if ((rc = cli_out_finish(&o, true)) == 0) {
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
    if (have_tmp)
        unlink(trace_tmp);
    free(in.sets);
    return rc;
}
