/* Tests of gmux trace's words as trace_opts.c reads them (moved out of
 * cmd_trace.c unchanged): each subcommand's defaults and options, the
 * recording's words, --help anywhere before "--" winning, and the usage
 * errors. No file is read or written, no workload opened, nothing run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "trace_opts.h"
#include "opt_words.h"

/* A recording's o->cmd points into argv: argv outlives the call (one read
 * at a time), as a program's argv outlives its reading. */
static int read_words(char **words, struct trace_opts *o)
{
    static char *argv[16];
    int argc = opt_words_argv("trace", words, argv, 16);
    return trace_opts_read(argc, argv, o);
}

static void test_generate(void **state)
{
    (void)state;
    struct trace_opts o;
    char *w[] = {"generate", "--workload", "llm", "--set", "a=1", "-o", "f", NULL};
    assert_int_equal(read_words(w, &o), 0);
    assert_int_equal(o.sub, TRACE_SUB_GENERATE);
    assert_string_equal(o.workload, "llm");
    assert_string_equal(o.out, "f");
    assert_true(o.nsets == 1 && o.seed == 1 && o.format == SIM_TRACE_BINARY);
    assert_string_equal(o.sets[0], "a=1");
    trace_opts_free(&o);
    char *all[] = {"generate", "-o",   "f",          "--format", "text",
                   "--seed",   "0x10", "--workload", "x",        NULL};
    assert_int_equal(read_words(all, &o), 0);
    assert_true(o.format == SIM_TRACE_TEXT && o.seed == 16);
    trace_opts_free(&o);
}

static void test_convert_show(void **state)
{
    (void)state;
    struct trace_opts o;
    char *conv[] = {"convert", "a", "--format", "binary", "b", NULL};
    assert_int_equal(read_words(conv, &o), 0);
    assert_int_equal(o.sub, TRACE_SUB_CONVERT);
    assert_string_equal(o.in, "a");
    assert_string_equal(o.out, "b");
    assert_int_equal(o.format, SIM_TRACE_BINARY);
    trace_opts_free(&o);
    char *other[] = {"convert", "-", "b", NULL}; /* "-" is a name, no option */
    assert_int_equal(read_words(other, &o), 0);
    assert_int_equal(o.format, 0);
    trace_opts_free(&o);
    char *show[] = {"show", "t.bin", NULL};
    assert_int_equal(read_words(show, &o), 0);
    assert_int_equal(o.sub, TRACE_SUB_SHOW);
    assert_string_equal(o.in, "t.bin");
    trace_opts_free(&o);
}

static void test_record(void **state)
{
    (void)state;
    struct trace_opts o;
    char *w[] = {"--no-ranges", "-o", "f", "--format", "text", "--", "prog", "--help", NULL};
    assert_int_equal(read_words(w, &o), 0);
    assert_int_equal(o.sub, TRACE_SUB_RECORD);
    assert_string_equal(o.out, "f");
    assert_string_equal(o.format_word, "text");
    assert_false(o.probe);
    assert_string_equal(o.cmd[0], "prog");
    assert_string_equal(o.cmd[1], "--help"); /* the program's, past "--" */
    trace_opts_free(&o);
    char *dflt[] = {"-o", "f", "--", "prog", NULL};
    assert_int_equal(read_words(dflt, &o), 0);
    assert_string_equal(o.format_word, "binary");
    assert_true(o.probe);
    trace_opts_free(&o);
}

static void test_refused(void **state)
{
    (void)state;
    struct trace_opts o;
    char *bad[][8] = {
        {NULL},
        {"bogus", NULL},
        {"-x", NULL},
        {"generate", "--workload", "llm", NULL},
        {"generate", "-o", "f", NULL},
        {"generate", "--workload", "llm", "-o", "f", "--seed", "-1", NULL},
        {"generate", "--workload", "llm", "-o", "f", "--format", "json", NULL},
        {"generate", "--workload", "llm", "-o", NULL},
        {"generate", "--workload", "llm", "-o", "f", "x", NULL},
        {"convert", "a", NULL},
        {"convert", "a", "b", "c", NULL},
        {"convert", "a", "b", "--format", NULL},
        {"convert", "a", "b", "-o", NULL},
        {"show", NULL},
        {"show", "a", "b", NULL},
        {"show", "-x", NULL},
        {"-o", "f", NULL},
        {"-o", "f", "--", NULL},
        {"--", "prog", NULL},
        {"-o", "--", "prog", NULL},
        {"--format", "json", "-o", "f", "--", "prog", NULL},
        {"--no-ranges", "x", "--", "prog", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (read_words(bad[i], &o) != 2)
            fail_msg("words %zu (%s) taken", i, bad[i][0] ? bad[i][0] : "");
        trace_opts_free(&o);
    }
    char *help[] = {"generate", "--seed", "x", "-h", NULL};
    assert_int_equal(read_words(help, &o), -1);
    trace_opts_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_convert_show),
        cmocka_unit_test(test_record),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
