/*
 * The words of a command line made from a fuzzer's input, for the harnesses
 * of argv readers (fuzz_calibrate_args, fuzz_launch_args, and the
 * fuzz_*_args of the gmux commands): the input, cut to FUZZ_WORDS_TEXT - 1
 * bytes, is copied into text and split at its NUL bytes into at most
 * FUZZ_WORDS_MAX words after prog (argv[0]); argv ends with NULL. Returns
 * argc.
 */
#ifndef GMUX_FUZZ_WORDS_H
#define GMUX_FUZZ_WORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FUZZ_WORDS_MAX  16
#define FUZZ_WORDS_TEXT 1024

static inline int fuzz_words(const uint8_t *data, size_t size, char *prog,
                             char text[FUZZ_WORDS_TEXT], char *argv[FUZZ_WORDS_MAX + 2])
{
    size_t n = size < FUZZ_WORDS_TEXT - 1 ? size : FUZZ_WORDS_TEXT - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    int argc = 0;
    argv[argc++] = prog;
    for (size_t at = 0; at <= n && argc <= FUZZ_WORDS_MAX; at += strlen(text + at) + 1)
        argv[argc++] = text + at;
    argv[argc] = NULL;
    return argc;
}

/* Whether -h or --help is among argv[1..] before a "--": where an argv
 * reader that finds its help with com_cli_help_asked answers -1. */
static inline bool fuzz_words_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    return false;
}

/* The index of s among argv[1..] (the pointer, not a copy of the word), or
 * 0 when it is none of them, or is empty and !empty_ok. */
static inline int fuzz_words_at(int argc, char **argv, const char *s, bool empty_ok)
{
    for (int i = 1; s && i < argc; i++)
        if (argv[i] == s)
            return s[0] || empty_ok ? i : 0;
    return 0;
}

#endif /* GMUX_FUZZ_WORDS_H */
