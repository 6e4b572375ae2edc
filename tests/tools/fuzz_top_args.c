/*
 * libFuzzer harness for gmux top's words (tools/gmux/top_opts.c), read
 * before any connection: the input is split at NUL bytes into the words
 * after "top". The reader answers -1 (help), 0 or 2 (a usage error, said on
 * stderr), and -1 exactly when -h or --help is among the words before
 * "--". When it answers 0: --interval from 0.05 to 3600 (never NaN), and
 * either live (no --once nor --batch: tables until q) with rounds -1, or
 * not live with rounds 1 or more; --once and --batch not both among the
 * words; a socket that is NULL or a non-empty word of argv.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cliopt.h"
#include "top_opts.h"

#include "../fuzz/fuzz_words.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[FUZZ_WORDS_TEXT], prog[] = "top";
    char *argv[FUZZ_WORDS_MAX + 2];
    int argc = fuzz_words(data, size, prog, text, argv);
    bool help = fuzz_words_help(argc, argv), once = false, batch = false;
    for (int i = 1; i < argc; i++) {
        once = once || strcmp(argv[i], "--once") == 0;
        batch = batch || strcmp(argv[i], "--batch") == 0;
    }
    struct top_opts o;
    int rc = top_opts_read(argc, argv, &o);
    if ((rc == -1) != help || (rc != -1 && rc != 0 && rc != COM_CLI_EXIT_USAGE))
        abort();
    if (rc == 0) {
        if (!(o.interval >= TOP_MIN_INTERVAL) || o.interval > TOP_MAX_INTERVAL)
            abort();
        if (o.live ? o.rounds != -1 : o.rounds < 1)
            abort();
        if (!o.live && !once && !batch)
            abort();
        if (o.sock && !fuzz_words_at(argc, argv, o.sock, false))
            abort();
    }
    return 0;
}
