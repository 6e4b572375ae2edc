/*
 * libFuzzer harness for gmux status's words (tools/gmux/status_opts.c), read
 * before any connection: the input is split at NUL bytes into the words
 * after "status". The reader answers -1 (help), 0 or 2 (a usage error, said
 * on stderr), and -1 exactly when -h or --help is among the words before
 * "--". When it answers 0: --json only when it is among the words, a
 * socket that is NULL or a non-empty word of argv, and every word is
 * --json, --socket or a value of --socket.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cliopt.h"
#include "status_opts.h"

#include "../fuzz/fuzz_words.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[FUZZ_WORDS_TEXT], prog[] = "status";
    char *argv[FUZZ_WORDS_MAX + 2];
    int argc = fuzz_words(data, size, prog, text, argv);
    bool help = fuzz_words_help(argc, argv), json = false;
    for (int i = 1; i < argc; i++)
        json = json || strcmp(argv[i], "--json") == 0;
    struct status_opts o;
    int rc = status_opts_read(argc, argv, &o);
    if ((rc == -1) != help || (rc != -1 && rc != 0 && rc != COM_CLI_EXIT_USAGE))
        abort();
    if (rc == 0) {
        if (o.json && !json)
            abort();
        bool sock_word = o.sock == NULL;
        for (int i = 1; i < argc; i++) {
            if (strcmp(argv[i], "--json") == 0)
                continue;
            /* a --socket and its value, which is neither empty nor "--" */
            if (strcmp(argv[i], "--socket") != 0 || i + 1 >= argc || !argv[i + 1][0] ||
                strcmp(argv[i + 1], "--") == 0)
                abort();
            sock_word = sock_word || argv[++i] == o.sock;
        }
        if (!sock_word)
            abort();
    }
    return 0;
}
