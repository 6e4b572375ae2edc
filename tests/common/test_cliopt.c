/* Tests of common/cliopt: the option tables, the --help scan, option values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/cliopt.h"

/* A command that takes a program, as gmux run does. */
static const com_cli_opt_t opts[] = {
    {"--name", true}, {"-o", true}, {"--flag", false}, {"--other", false}, {NULL, false},
};

#define ARGC(a) ((int)(sizeof(a) / sizeof(a[0])))

static void test_opt_find(void **state)
{
    (void)state;
    for (int k = 0; opts[k].name; k++)
        assert_int_equal(com_cli_opt_find(opts, opts[k].name), k);
    assert_int_equal(com_cli_opt_find(opts, "--nam"), -1);
    assert_int_equal(com_cli_opt_find(opts, "--names"), -1);
    assert_int_equal(com_cli_opt_find(opts, "name"), -1);
}

/* Every option of the table: the value of one that takes one is skipped
 * (a --help there is the value), a flag's next word is not. */
static void test_help_scan_skips_each_value(void **state)
{
    (void)state;
    for (int k = 0; opts[k].name; k++) {
        char *as_value[] = {"cmd", (char *)opts[k].name, "--help", "prog"};
        char *after_value[] = {"cmd", (char *)opts[k].name, "x", "--help", "prog"};
        if (opts[k].valued) {
            assert_false(com_cli_help_asked(ARGC(as_value), as_value, opts));
            assert_true(com_cli_help_asked(ARGC(after_value), after_value, opts));
        } else {
            assert_true(com_cli_help_asked(ARGC(as_value), as_value, opts));
            /* "x" after a flag is the program: what follows is its own */
            assert_false(com_cli_help_asked(ARGC(after_value), after_value, opts));
        }
        /* without a table every word up to "--" is looked at */
        assert_true(com_cli_help_asked(ARGC(as_value), as_value, NULL));
        assert_true(com_cli_help_asked(ARGC(after_value), after_value, NULL));
    }
}

static void test_help_scan_ends(void **state)
{
    (void)state;
    char *dashdash[] = {"cmd", "--flag", "--", "prog", "--help"};
    assert_false(com_cli_help_asked(ARGC(dashdash), dashdash, opts));
    assert_false(com_cli_help_asked(ARGC(dashdash), dashdash, NULL));
    char *prog[] = {"cmd", "prog", "-h"};
    assert_false(com_cli_help_asked(ARGC(prog), prog, opts));
    assert_true(com_cli_help_asked(ARGC(prog), prog, NULL));
    /* an option the table lacks takes no value: the word after it is looked at */
    char *unknown[] = {"cmd", "--frob", "-h"};
    assert_true(com_cli_help_asked(ARGC(unknown), unknown, opts));
    char *none[] = {"cmd"};
    assert_false(com_cli_help_asked(ARGC(none), none, opts));
}

/* --version (-V) is found as --help is: among the options, the values of
 * a program command's valued options skipped, up to "--" or the program. */
static void test_version_scan(void **state)
{
    (void)state;
    assert_true(com_cli_is_version("-V") && com_cli_is_version("--version"));
    assert_false(com_cli_is_version("-v") || com_cli_is_version("--versions"));
    char *among[] = {"cmd", "--flag", "-V"};
    assert_true(com_cli_version_asked(ARGC(among), among, opts));
    assert_false(com_cli_help_asked(ARGC(among), among, opts));
    char *dashdash[] = {"cmd", "--", "prog", "--version"};
    assert_false(com_cli_version_asked(ARGC(dashdash), dashdash, NULL));
    char *prog[] = {"cmd", "prog", "--version"};
    assert_false(com_cli_version_asked(ARGC(prog), prog, opts));
    for (int k = 0; opts[k].name; k++) {
        char *as_value[] = {"cmd", (char *)opts[k].name, "--version", "prog"};
        assert_int_equal(com_cli_version_asked(ARGC(as_value), as_value, opts), !opts[k].valued);
    }
}

static void test_option_value(void **state)
{
    (void)state;
    char *argv[] = {"cmd", "--name", "n", "--name", "", "--name", "--", "x", "--name"};
    assert_string_equal(com_cli_option_value(ARGC(argv), argv, 1), "n");
    assert_null(com_cli_option_value(ARGC(argv), argv, 3)); /* empty */
    assert_null(com_cli_option_value(ARGC(argv), argv, 5)); /* the "--" of a command */
    assert_null(com_cli_option_value(ARGC(argv), argv, 8)); /* the end */
    char *dash[] = {"cmd", "--name", "-x"};
    assert_string_equal(com_cli_option_value(ARGC(dash), dash, 1), "-x");
}

static void test_usage_errors_exit_2(void **state)
{
    (void)state;
    assert_int_equal(com_cli_bad_word("prog", "--frob"), COM_CLI_EXIT_USAGE);
    assert_int_equal(com_cli_no_value("prog", "--name"), COM_CLI_EXIT_USAGE);
    assert_int_equal(com_cli_usage_error("prog", "%s", "x"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opt_find),       cmocka_unit_test(test_help_scan_skips_each_value),
        cmocka_unit_test(test_help_scan_ends), cmocka_unit_test(test_version_scan),
        cmocka_unit_test(test_option_value),   cmocka_unit_test(test_usage_errors_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
