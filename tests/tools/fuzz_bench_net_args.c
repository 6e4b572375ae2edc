/*
 * libFuzzer harness for gmux bench net's words (tools/gmux/bench_net_opts.c),
 * read before any rank starts: the input is split at NUL bytes into the
 * words after "net". The reader answers -1 (help), 0 or 2 (a usage error,
 * said on stderr), and -1 exactly when -h or --help is among the words
 * before "--". When it answers 0: the providers are shm and tcp, or the one
 * the last --provider names (both when that is "both"); --reps is a decimal
 * from 1 to BENCH_NET_REPS_MAX; --same NULL, gmux or raw.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_net_opts.h"
#include "common/cliopt.h"

#include "../fuzz/fuzz_words.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool valued(const char *a)
{
    return strcmp(a, "--reps") == 0 || strcmp(a, "--same") == 0 || strcmp(a, "--plot") == 0 ||
           strcmp(a, "--provider") == 0;
}

static void check(int argc, char **argv, const struct bench_net_opts *o)
{
    const char *last = "both"; /* the last --provider's value, as the words were taken */
    for (int i = 1; i < argc; i++)
        if (valued(argv[i]) && i + 1 < argc && strcmp(argv[i++], "--provider") == 0)
            last = argv[i];
    if (strcmp(last, "both") == 0) {
        if (o->nprov != 2 || strcmp(o->provs[0], "shm") != 0 || strcmp(o->provs[1], "tcp") != 0)
            abort();
    } else if (o->nprov != 1 || strcmp(o->provs[0], last) != 0) {
        abort();
    }
    char *end;
    long reps = strtol(o->reps, &end, 10);
    if (*end || reps < 1 || reps > BENCH_NET_REPS_MAX)
        abort();
    if (o->same && strcmp(o->same, "gmux") != 0 && strcmp(o->same, "raw") != 0)
        abort();
    if (o->plot && !o->plot[0])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[FUZZ_WORDS_TEXT], prog[] = "net";
    char *argv[FUZZ_WORDS_MAX + 2];
    int argc = fuzz_words(data, size, prog, text, argv);
    bool help = fuzz_words_help(argc, argv);
    struct bench_net_opts o;
    int rc = bench_net_opts_read(argc, argv, &o);
    if ((rc == -1) != help || (rc != -1 && rc != 0 && rc != COM_CLI_EXIT_USAGE))
        abort();
    if (rc == 0)
        check(argc, argv, &o);
    return 0;
}
