/* Tests of gmux launch's words as launch_opts.c reads them (moved out of
 * cmd_launch.c unchanged): the values of -n, --timeout and --grace on their
 * edge cases, and the reader's answers. -n is com_parse_i64's (decimal or
 * 0x hex), --timeout and --grace com_parse_double's (strtod's forms:
 * exponents, C99 hex floats; finite), both with blanks around them and a
 * sign, as every number a user types (src/common/parse.h). Until
 * 2026-12-04 a leading blank was taken and a trailing one refused. Seconds
 * below LAUNCH_MIN_SECONDS are refused: until 2026-12-04 --timeout 1e-300
 * was taken, and ended the job at once. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "launch_opts.h"

static void test_ranks(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int want; /* 0: refused */
    } cases[] = {
        {"1", 1},
        {"4", 4},
        {"1024", 1024},
        {" 4", 4}, /* blanks around it */
        {"4 ", 4},
        {" 4\n", 4},
        {"+4", 4}, /* and a sign */
        {"007", 7},
        {"0", 0},
        {"-0", 0},
        {"-1", 0},
        {"1025", 0},
        {"99999999999", 0},
        {"99999999999999999999999", 0}, /* past a long */
        {"", 0},
        {" ", 0},
        {"4x", 0}, /* trailing junk */
        {"4 x", 0},
        {"0x10", 16}, /* 0x hex, as com_parse_i64 */
        {"0x401", 0},
        {"1e3", 0},
        {"4.0", 0},
        {"inf", 0},
        {"nan", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = -7;
        bool ok = launch_parse_ranks(cases[i].text, &n);
        if (ok != (cases[i].want != 0) || n != (ok ? cases[i].want : -7))
            fail_msg("-n '%s': %s %d, not %d", cases[i].text, ok ? "taken" : "refused", n,
                     cases[i].want);
    }
}

static void test_seconds(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        double want; /* 0: refused */
    } cases[] = {
        {"1", 1},         {"0.2", 0.2},       {"1e3", 1000},
        {"1e6", 1e6},     {"1000000.0", 1e6}, {" 5", 5}, /* blanks around it */
        {"5 ", 5},        {" 5\n", 5},        {"+5", 5}, /* and a sign */
        {"0x10", 16},                                    /* C99 hex float */
        {"0x1p-2", 0.25}, {"0.001", 0.001},              /* LAUNCH_MIN_SECONDS */
        {"1e-3", 0.001},  {"0.0009", 0},                 /* below it */
        {"1e-300", 0},    {"4.9e-324", 0},               /* were taken: at once */
        {"0", 0},         {"-0", 0},          {"0.0", 0},
        {"-1", 0},        {"1e-400", 0}, /* underflows to 0 */
        {"1000000.1", 0}, {"1e7", 0},         {"99999999999", 0},
        {"1e999", 0}, /* overflows to inf */
        {"inf", 0},       {"infinity", 0},    {"-inf", 0},
        {"nan", 0},       {"nan(0x1)", 0},    {"-nan", 0},
        {"", 0},          {" ", 0},           {"5 s", 0}, /* trailing junk */
        {"5s", 0},        {"1e", 0},          {"1,5", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double s = -7;
        bool ok = launch_parse_seconds(cases[i].text, &s);
        if (ok != (cases[i].want != 0) || s != (ok ? cases[i].want : -7))
            fail_msg("seconds '%s': %s %g, not %g", cases[i].text, ok ? "taken" : "refused", s,
                     cases[i].want);
    }
}

/* launch_opts_read over the words after "launch". Its argv outlives the
 * call: o->cmd points into it (a local one was gone when test_read read
 * o->cmd[0]: "b" under TSan, not "prog"). */
static int read_words(char **words, struct launch_opts *o)
{
    static char *argv[16];
    argv[0] = "launch";
    int argc = 1;
    while (words[argc - 1])
        argv[argc] = words[argc - 1], argc++;
    argv[argc] = NULL;
    return launch_opts_read(argc, argv, o);
}

static void test_read(void **state)
{
    (void)state;
    struct launch_opts o;
    char *good[] = {"-n",       "3",       "--timeout", "1e3", "--grace", "0.5", "--bind",
                    "10.0.0.1", "--hosts", "a,,b",      "--",  "prog",    "x",   NULL};
    assert_int_equal(read_words(good, &o), 0);
    assert_int_equal(o.n, 3);
    assert_true(o.timeout_s == 1000 && o.grace_s == 0.5);
    assert_string_equal(o.bind, "10.0.0.1");
    assert_int_equal(o.nhosts, 2);
    assert_string_equal(o.hosts[0], "a");
    assert_string_equal(o.hosts[1], "b");
    assert_string_equal(o.cmd[0], "prog");
    launch_opts_free(&o);

    char *defaults[] = {"-n", "1", "--", "prog", NULL};
    assert_int_equal(read_words(defaults, &o), 0);
    assert_true(o.timeout_s == 0 && o.grace_s == 10 && o.nhosts == 0);
    assert_string_equal(o.bind, "127.0.0.1");
    launch_opts_free(&o);

    char *help[] = {"-n", "x", "--help", NULL};
    assert_int_equal(read_words(help, &o), -1);
    launch_opts_free(&o);

    char *bad[][6] = {
        {"-n", "0", "--", "p", NULL},
        {"-n", "2", NULL},
        {"--", "p", NULL},
        {"-n", "2", "--timeout", "nan", "--", NULL},
        {"-n", "2", "--grace", "-1", "--", NULL},
        {"-n", "2", "--bind", "::1", "--", NULL},
        {"-n", "2", "--hosts", ",", "--", NULL},
        {"-n", "2", "-x", "--", "p", NULL},
        {"-n", "2", "--timeout", "--", "p", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (read_words(bad[i], &o) != 2)
            fail_msg("words %zu taken", i);
        launch_opts_free(&o);
    }
}

/* What launch_opts_read of words says on stderr (into said) and answers. */
static int read_said(char **words, char *said, size_t cap)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *t = tmpfile();
    assert_true(saved >= 0 && t);
    assert_int_equal(dup2(fileno(t), 2), 2);
    struct launch_opts o;
    int rc = read_words(words, &o);
    launch_opts_free(&o);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(t);
    size_t n = fread(said, 1, cap - 1, t);
    said[n] = '\0';
    fclose(t);
    return rc;
}

/* A timeout or grace below the clock's sense (--timeout 1e-300 ended the
 * job at once) is a usage error naming the option and the least value. */
static void test_tiny_seconds_refused(void **state)
{
    (void)state;
    static const char *const opts[] = {"--timeout", "--grace"};
    for (size_t k = 0; k < 2; k++) {
        char said[512];
        char *words[] = {"-n", "2", (char *)opts[k], "1e-300", "--", "p", NULL};
        int rc = read_said(words, said, sizeof(said));
        if (rc != 2 || !strstr(said, opts[k]) || !strstr(said, "1e-300") || !strstr(said, "0.001"))
            fail_msg("%s 1e-300: %d, said '%s'", opts[k], rc, said);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks),
        cmocka_unit_test(test_seconds),
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_tiny_seconds_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
