/* gmux-calibrate's command line; see args.h. */
#include "args.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <gmux/version.h>

#include "common/cliopt.h"
#include "common/parse.h"

static const char prog[] = "gmux-calibrate";

static const com_cli_opt_t opts[] = {
    {"--size", true},
    {"--chain-trace", true},
    {NULL, false},
};

static void print_help(void)
{
    printf("Usage: gmux-calibrate [--size MiB] [--chain-trace FILE]\n"
           "       gmux-calibrate -h | --help | -V | --version\n\n"
           "Measures, on GPU 0, the paths that gmux sim models: pinned copies and\n"
           "prefetches of managed memory each way, demand paging of a cold managed buffer\n"
           "(throughput, and the GPU page faults CUPTI counts), the cost of a fault that\n"
           "moves almost nothing, and a validation chain of six kernels, warm, under\n"
           "demand paging and prefetched ahead. It prints one JSON object on stdout, for\n"
           "gmux sim --calibration FILE (its keys: docs/sim.md, calibration).\n\n"
           "--size MiB          the buffer of each measurement, a whole number of MiB from\n"
           "                    %d to %d (default %d); as much pinned host memory and\n"
           "                    GPU memory is taken\n"
           "--chain-trace FILE  also writes the validation chain as a gmux trace to FILE,\n"
           "                    to check the calibrated simulator on a program it was not\n"
           "                    fitted to; written as FILE.part~, created before\n"
           "                    anything is measured, and renamed over FILE only when\n"
           "                    the run ends with the JSON printed (keeping FILE's\n"
           "                    permission bits): a failed or interrupted run leaves an\n"
           "                    earlier FILE as it was and no FILE.part~ (a FILE that is\n"
           "                    not a regular file, such as /dev/null, is written in\n"
           "                    place); a symbolic link stays one: the file it names is\n"
           "                    replaced (a dangling link's created), its part beside it;\n"
           "                    a loop of links or a folder is refused\n\n"
           "Exit status: 0 after the JSON is printed (or after --help, --version); 1 when a\n"
           "CUDA call or kernel launch fails, or FILE cannot be written (a FILE that cannot\n"
           "be created is said at once, before the GPU is looked for); 2 for a usage error;\n"
           "77 when no GPU is present (nothing measured).\n",
           CAL_SIZE_MIB_MIN, CAL_SIZE_MIB_MAX, CAL_SIZE_MIB_DEFAULT);
}

int cal_args_read(int argc, char **argv, cal_args_t *a)
{
    a->size_mib = CAL_SIZE_MIB_DEFAULT;
    a->chain_trace = NULL;
    if (com_cli_help_asked(argc, argv, NULL)) {
        print_help();
        return 0;
    }
    if (com_cli_version_asked(argc, argv, NULL)) { /* as gmux CMD --version */
        printf("%s %s\n", prog, GMUX_VERSION_STRING);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        int k = com_cli_opt_find(opts, argv[i]);
        if (k < 0)
            return com_cli_bad_word(prog, argv[i]);
        const char *v = com_cli_option_value(argc, argv, i);
        if (!v)
            return com_cli_no_value(prog, argv[i]);
        i++;
        if (strcmp(opts[k].name, "--chain-trace") == 0) {
            a->chain_trace = v;
            continue;
        }
        uint64_t mib = 0;
        if (com_parse_u64(v, &mib) != GMUX_OK || mib < CAL_SIZE_MIB_MIN || mib > CAL_SIZE_MIB_MAX)
            return com_cli_bad_value(prog, opts[k].name, v, "a whole number of MiB from %d to %d",
                                     CAL_SIZE_MIB_MIN, CAL_SIZE_MIB_MAX);
        a->size_mib = (size_t)mib;
    }
    return -1;
}
