/* Tests of gmux predict-report's words as predict_report_opts.c reads them
 * (moved out of cmd_predict_report.c unchanged, on predict_drive.c's
 * pdrive_parse_arg): the defaults, each option's value, --help anywhere
 * winning, and the usage errors. No file is read, no workload opened. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "predict_report_opts.h"
#include "opt_words.h"

static int read_words(char **words, struct predict_report_opts *o)
{
    char *argv[16];
    int argc = opt_words_argv("predict-report", words, argv, 16);
    return predict_report_opts_read(argc, argv, o);
}

static void test_trace(void **state)
{
    (void)state;
    struct predict_report_opts o;
    char *w[] = {"t.bin", "--json", "--templates", "db", NULL};
    assert_int_equal(read_words(w, &o), 0);
    assert_string_equal(o.in.trace, "t.bin");
    assert_null(o.in.workload);
    assert_true(o.json && o.in.nsets == 0 && o.in.seed == 1 && !o.in.seed_given);
    assert_string_equal(o.templates, "db");
    predict_report_opts_free(&o);
}

static void test_workload(void **state)
{
    (void)state;
    struct predict_report_opts o;
    char *w[] = {"--workload", "llm", "--set", "a=1", "--seed", "0x10", "--set", "b=2", NULL};
    assert_int_equal(read_words(w, &o), 0);
    assert_string_equal(o.in.workload, "llm");
    assert_int_equal(o.in.nsets, 2);
    assert_string_equal(o.in.sets[0], "a=1");
    assert_string_equal(o.in.sets[1], "b=2");
    assert_true(o.in.seed == 16 && o.in.seed_given && !o.json && o.templates == NULL);
    predict_report_opts_free(&o);
}

static void test_refused(void **state)
{
    (void)state;
    struct predict_report_opts o;
    char *bad[][5] = {
        {"a", "b", NULL},
        {"--templates", NULL},
        {"--templates", "--", "t", NULL},
        {"--seed", "-1", "t", NULL},
        {"--seed", NULL},
        {"--workload", "", NULL},
        {"--set", NULL},
        {"-x", "t", NULL},
        {"-", NULL},
        {"--", "t", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (read_words(bad[i], &o) != 2)
            fail_msg("words %zu (%s) taken", i, bad[i][0]);
        predict_report_opts_free(&o);
    }
    char *help[] = {"a", "b", "--seed", "x", "-h", NULL};
    assert_int_equal(read_words(help, &o), -1);
    predict_report_opts_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_workload),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
