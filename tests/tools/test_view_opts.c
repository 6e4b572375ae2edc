/* Tests of gmux top's and gmux status's words as top_opts.c and
 * status_opts.c read them (moved out of cmd_top.c and cmd_status.c
 * unchanged): the defaults, each option's value on its edge cases, --help
 * anywhere winning, and the usage errors. --interval is com_parse_double's
 * (a finite double, so exponents too), --batch com_parse_i64's (decimal or
 * 0x-hex, a sign). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "opt_words.h"
#include "status_opts.h"
#include "top_opts.h"

static int top_words(char **words, struct top_opts *o)
{
    char *argv[16];
    int argc = opt_words_argv("top", words, argv, 16);
    return top_opts_read(argc, argv, o);
}

static int status_words(char **words, struct status_opts *o)
{
    char *argv[16];
    int argc = opt_words_argv("status", words, argv, 16);
    return status_opts_read(argc, argv, o);
}

static void test_top_defaults(void **state)
{
    (void)state;
    struct top_opts o;
    char *none[] = {NULL};
    assert_int_equal(top_words(none, &o), 0);
    assert_null(o.sock);
    assert_true(o.interval == 1.0 && o.rounds == -1 && o.live);
}

static void test_top_values(void **state)
{
    (void)state;
    struct top_opts o;
    char *all[] = {"--socket", "/s", "--interval", "0.05", "--batch", "3", NULL};
    assert_int_equal(top_words(all, &o), 0);
    assert_string_equal(o.sock, "/s");
    assert_true(o.interval == 0.05 && o.rounds == 3 && !o.live);
    char *once[] = {"--once", "--interval", "3600", NULL};
    assert_int_equal(top_words(once, &o), 0);
    assert_true(o.interval == 3600 && o.rounds == 1 && !o.live);
    char *exp[] = {"--interval", "2e1", "--batch", "0x10", NULL};
    assert_int_equal(top_words(exp, &o), 0);
    assert_true(o.interval == 20 && o.rounds == 16);
    /* the last value counts */
    char *twice[] = {"--socket", "/a", "--socket", "/b", "--batch", "2", "--batch", "5", NULL};
    assert_int_equal(top_words(twice, &o), 0);
    assert_string_equal(o.sock, "/b");
    assert_true(o.rounds == 5);
}

static void test_top_refused(void **state)
{
    (void)state;
    struct top_opts o;
    char *bad[][5] = {
        {"--interval", "0.049", NULL},
        {"--interval", "3600.5", NULL},
        {"--interval", "nan", NULL},
        {"--interval", "inf", NULL},
        {"--interval", "1s", NULL},
        {"--interval", "", NULL},
        {"--interval", NULL},
        {"--batch", "0", NULL},
        {"--batch", "-1", NULL},
        {"--batch", "1.5", NULL},
        {"--batch", "99999999999999999999", NULL},
        {"--socket", NULL},
        {"--socket", "", NULL},
        {"--socket", "--", NULL},
        {"--once", "--batch", "2", NULL},
        {"--batch", "2", "--once", NULL},
        {"--json", NULL},
        {"x", NULL},
        {"-", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (top_words(bad[i], &o) != 2)
            fail_msg("top words %zu (%s %s) taken", i, bad[i][0], bad[i][1] ? bad[i][1] : "");
}

static void test_top_help_wins(void **state)
{
    (void)state;
    struct top_opts o;
    char *after[] = {"--interval", "0", "--once", "--batch", "1", "-h", NULL};
    assert_int_equal(top_words(after, &o), -1);
    char *as_value[] = {"--socket", "--help", NULL}; /* the scan looks at every word */
    assert_int_equal(top_words(as_value, &o), -1);
    char *past[] = {"--", "--help", NULL}; /* not past "--" */
    assert_int_equal(top_words(past, &o), 2);
}

static void test_status(void **state)
{
    (void)state;
    struct status_opts o;
    char *none[] = {NULL};
    assert_int_equal(status_words(none, &o), 0);
    assert_true(o.sock == NULL && !o.json);
    char *all[] = {"--socket", "/s", "--json", "--socket", "/t", NULL};
    assert_int_equal(status_words(all, &o), 0);
    assert_true(o.json);
    assert_string_equal(o.sock, "/t");
    char *help[] = {"--bad", "--help", NULL};
    assert_int_equal(status_words(help, &o), -1);
    char *bad[][4] = {
        {"--socket", NULL}, {"--socket", "", NULL}, {"--socket", "--", "x", NULL},
        {"--once", NULL},   {"json", NULL},         {"--json", "x", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (status_words(bad[i], &o) != 2)
            fail_msg("status words %zu (%s) taken", i, bad[i][0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_defaults), cmocka_unit_test(test_top_values),
        cmocka_unit_test(test_top_refused),  cmocka_unit_test(test_top_help_wins),
        cmocka_unit_test(test_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
