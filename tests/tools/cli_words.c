/* Running the gmux CLI from a test: see cli_words.h. */
#include "cli_words.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tproc.h"

char out[65536], err[16384];

int run_words_env(const char *const words[], char *const env[])
{
    char *argv[MAX_WORDS + 2] = {GMUX_CLI_PATH};
    size_t n = 1;
    for (size_t k = 0; words[k] && n < MAX_WORDS + 1; k++)
        argv[n++] = (char *)words[k];
    argv[n] = NULL;
    return tproc_capture(argv, env, 60.0, out, sizeof(out), err, sizeof(err));
}

int run_words(const char *const words[])
{
    return run_words_env(words, NULL);
}

size_t list_commands(char names[][32], size_t cap)
{
    const char *const help[] = {"--help", NULL};
    assert_int_equal(run_words(help), 0);
    const char *p = strstr(out, "Commands:\n");
    assert_non_null(p);
    p += strlen("Commands:\n");
    size_t n = 0;
    while (n < cap && strncmp(p, "  ", 2) == 0) {
        assert_int_equal(sscanf(p, " %31s", names[n]), 1);
        n++;
        p = strchr(p, '\n');
        assert_non_null(p);
        p++;
    }
    return n;
}
