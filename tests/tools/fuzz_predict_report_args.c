/*
 * libFuzzer harness for gmux predict-report's words
 * (tools/gmux/predict_report_opts.c, with predict_drive.c's
 * pdrive_parse_arg), read before any file or workload: the input is split
 * at NUL bytes into the words after "predict-report". No input may crash or
 * leak (predict_report_opts_free gives back what it took, whatever the
 * answer); the reader answers -1 (help), 0 or 2 (a usage error, said on
 * stderr), and -1 exactly when -h or --help is among the words before
 * "--". When it answers 0: a TRACE that is a non-empty word not starting
 * with '-' (an empty one is a usage error: a name no file has); each --set a non-empty word;
 * --json, --seed and --templates set only when among the words.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cliopt.h"
#include "predict_report_opts.h"

#include "../fuzz/fuzz_words.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool has_word(char **argv, int argc, const char *w)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], w) == 0)
            return true;
    return false;
}

static void check(int argc, char **argv, const struct predict_report_opts *o)
{
    /* never an empty TRACE: a usage error */
    if (o->in.trace && (!fuzz_words_at(argc, argv, o->in.trace, false) || o->in.trace[0] == '-'))
        abort();
    if (o->in.workload && !fuzz_words_at(argc, argv, o->in.workload, false))
        abort();
    if (o->in.nsets > (size_t)argc)
        abort();
    for (size_t k = 0; k < o->in.nsets; k++)
        if (!fuzz_words_at(argc, argv, o->in.sets[k], false))
            abort();
    if ((o->json && !has_word(argv, argc, "--json")) ||
        (o->in.seed_given && !has_word(argv, argc, "--seed")) ||
        (o->templates && !fuzz_words_at(argc, argv, o->templates, false)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[FUZZ_WORDS_TEXT], prog[] = "predict-report";
    char *argv[FUZZ_WORDS_MAX + 2];
    int argc = fuzz_words(data, size, prog, text, argv);
    bool help = fuzz_words_help(argc, argv);
    struct predict_report_opts o;
    int rc = predict_report_opts_read(argc, argv, &o);
    if ((rc == -1) != help || (rc != -1 && rc != 0 && rc != COM_CLI_EXIT_USAGE))
        abort();
    if (rc == 0)
        check(argc, argv, &o);
    predict_report_opts_free(&o);
    return 0;
}
