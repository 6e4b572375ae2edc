/*
 * libFuzzer harness for gmux trace's words (tools/gmux/trace_opts.c), read
 * before any file, workload or program: the input is split at NUL bytes
 * into the words after "trace". No input may crash or leak
 * (trace_opts_free gives back what it took, whatever the answer); the
 * reader answers -1 (help), 0 or 2 (a usage error, said on stderr), and -1
 * exactly when there is a word and -h or --help is among the words before
 * "--". When it answers 0: the subcommand its first word names; generate
 * with a workload and -o, non-empty words, and a form; convert with IN and
 * OUT, two non-empty words (an empty one is a usage error), neither an
 * option; show with exactly one FILE, not empty; a recording with -o, a form of "text" or "binary",
 * and a program that is the words after
 * "--".
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cliopt.h"
#include "trace_opts.h"

#include "../fuzz/fuzz_words.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_form(sim_trace_format_t f)
{
    return f == SIM_TRACE_TEXT || f == SIM_TRACE_BINARY;
}

static void check(int argc, char **argv, const struct trace_opts *o)
{
    const char *sub = argv[1];
    switch (o->sub) {
    case TRACE_SUB_GENERATE:
        if (strcmp(sub, "generate") != 0 || !fuzz_words_at(argc, argv, o->workload, false) ||
            !fuzz_words_at(argc, argv, o->out, false) || !is_form(o->format) ||
            o->nsets >= (size_t)argc)
            abort();
        for (size_t k = 0; k < o->nsets; k++)
            if (!fuzz_words_at(argc, argv, o->sets[k], false))
                abort();
        break;
    case TRACE_SUB_CONVERT: {
        int in = fuzz_words_at(argc, argv, o->in, false),
            out = fuzz_words_at(argc, argv, o->out, false);
        if (strcmp(sub, "convert") != 0 || !in || !out || in >= out ||
            (o->format && !is_form(o->format)))
            abort();
        if ((o->in[0] == '-' && o->in[1]) || (o->out[0] == '-' && o->out[1]))
            abort();
        break;
    }
    case TRACE_SUB_SHOW:
        if (strcmp(sub, "show") != 0 || argc != 3 || o->in != argv[2] || !o->in[0])
            abort();
        break;
    case TRACE_SUB_RECORD: {
        int dashdash = 1;
        while (dashdash < argc && strcmp(argv[dashdash], "--") != 0)
            dashdash++;
        if (!fuzz_words_at(argc, argv, o->out, false) ||
            fuzz_words_at(argc, argv, o->out, false) > dashdash || o->cmd != argv + dashdash + 1 ||
            !o->cmd[0])
            abort();
        if (strcmp(o->format_word, "text") != 0 && strcmp(o->format_word, "binary") != 0)
            abort();
        break;
    }
    default:
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[FUZZ_WORDS_TEXT], prog[] = "trace";
    char *argv[FUZZ_WORDS_MAX + 2];
    int argc = fuzz_words(data, size, prog, text, argv);
    bool help = fuzz_words_help(argc, argv);
    struct trace_opts o;
    int rc = trace_opts_read(argc, argv, &o);
    if ((rc == -1) != help || (rc != -1 && rc != 0 && rc != COM_CLI_EXIT_USAGE))
        abort();
    if (rc == 0)
        check(argc, argv, &o);
    trace_opts_free(&o);
    return 0;
}
