/*
 * libFuzzer harness for gmux-calibrate's command line (tools/calibrate/args.c),
 * read before any CUDA call: the input is split at NUL bytes into the words
 * after the program's name. No input may crash the reader; it answers -1 (run
 * the measurements), 0 (--help or --version was asked) or 2 (a usage error);
 * when it answers -1 the size is within its bounds, the chain trace (if any)
 * is one of the words given and not empty, and no help or version was asked.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "common/cliopt.h"

#include "../fuzz/fuzz_words.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) { /* --help's text, thousands of times; errors stay on stderr */
        quiet = freopen("/dev/null", "w", stdout) != NULL;
    }
    char text[FUZZ_WORDS_TEXT], prog[] = "gmux-calibrate";
    char *argv[FUZZ_WORDS_MAX + 2];
    int argc = fuzz_words(data, size, prog, text, argv);

    cal_args_t a;
    int rc = cal_args_read(argc, argv, &a);
    if (rc != -1 && rc != 0 && rc != COM_CLI_EXIT_USAGE)
        abort();
    if (rc != -1)
        return 0;
    if (a.size_mib < CAL_SIZE_MIB_MIN || a.size_mib > CAL_SIZE_MIB_MAX)
        abort();
    bool named = a.chain_trace == NULL;
    for (int i = 1; i < argc; i++) {
        if (com_cli_is_help(argv[i]) || com_cli_is_version(argv[i]))
            abort();
        named = named || a.chain_trace == argv[i];
    }
    if (!named || (a.chain_trace && !a.chain_trace[0]))
        abort();
    return 0;
}
