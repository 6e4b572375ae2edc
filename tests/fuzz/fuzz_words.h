/*
 * The words of a command line made from a fuzzer's input, for the harnesses
 * of argv readers (fuzz_calibrate_args, fuzz_launch_args): the input, cut
 * to FUZZ_WORDS_TEXT - 1 bytes, is copied into text and split at its NUL
 * bytes into at most FUZZ_WORDS_MAX words after prog (argv[0]); argv ends
 * with NULL. Returns argc.
 */
#ifndef GMUX_FUZZ_WORDS_H
#define GMUX_FUZZ_WORDS_H

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

#endif /* GMUX_FUZZ_WORDS_H */
