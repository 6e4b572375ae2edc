/* Tests of gmux bench net's words as bench_net_opts.c reads them (moved
 * out of bench_net.c unchanged): the defaults, each option's value on its
 * edge cases, the last value of an option counting, --help anywhere
 * winning, and the usage errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bench.h"
#include "bench_net_opts.h"
#include "opt_words.h"

static int read_words(char **words, struct bench_net_opts *o)
{
    char *argv[16];
    int argc = opt_words_argv("net", words, argv, 16);
    return bench_net_opts_read(argc, argv, o);
}

static void test_defaults(void **state)
{
    (void)state;
    struct bench_net_opts o;
    char *none[] = {NULL};
    assert_int_equal(read_words(none, &o), 0);
    assert_int_equal(o.nprov, 2);
    assert_string_equal(o.provs[0], "shm");
    assert_string_equal(o.provs[1], "tcp");
    assert_true(!o.json && !o.quick && !o.calls && o.same == NULL && o.plot == NULL);
    char want[16];
    snprintf(want, sizeof(want), "%d", BENCH_NET_REPS);
    assert_string_equal(o.reps, want);
}

static void test_values(void **state)
{
    (void)state;
    struct bench_net_opts o;
    char *all[] = {"--provider", "tcp",    "--reps", "0x10",   "--json",  "--quick",
                   "--calls",    "--same", "raw",    "--plot", "d/bench", NULL};
    assert_int_equal(read_words(all, &o), 0);
    assert_int_equal(o.nprov, 1);
    assert_string_equal(o.provs[0], "tcp");
    assert_string_equal(o.reps, "16");
    assert_true(o.json && o.quick && o.calls);
    assert_string_equal(o.same, "raw");
    assert_string_equal(o.plot, "d/bench");
    char *max[] = {"--reps", "100", "--provider", "both", NULL};
    assert_int_equal(read_words(max, &o), 0);
    assert_string_equal(o.reps, "100");
    assert_int_equal(o.nprov, 2);
}

/* The last --provider counts, as every option's last value: until
 * 2026-12-04 "both" after "shm" or "tcp" kept the one provider. */
static void test_last_provider_counts(void **state)
{
    (void)state;
    struct bench_net_opts o;
    char *both_last[] = {"--provider", "tcp", "--provider", "both", NULL};
    assert_int_equal(read_words(both_last, &o), 0);
    assert_int_equal(o.nprov, 2);
    assert_string_equal(o.provs[0], "shm");
    assert_string_equal(o.provs[1], "tcp");
    char *one_last[] = {"--provider", "both", "--provider", "tcp", NULL};
    assert_int_equal(read_words(one_last, &o), 0);
    assert_int_equal(o.nprov, 1);
    assert_string_equal(o.provs[0], "tcp");
}

static void test_refused(void **state)
{
    (void)state;
    struct bench_net_opts o;
    char *bad[][4] = {
        {"--reps", "0", NULL},
        {"--reps", "101", NULL},
        {"--reps", "-1", NULL},
        {"--reps", "1.5", NULL},
        {"--reps", NULL},
        {"--reps", "", NULL},
        {"--same", "both", NULL},
        {"--provider", "udp", NULL},
        {"--provider", "--", NULL},
        {"--plot", "d/", NULL},
        {"--plot", "a\tb", NULL},
        {"--bogus", NULL},
        {"stray", NULL},
        {"-", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (read_words(bad[i], &o) != 2)
            fail_msg("words %zu (%s) taken", i, bad[i][0]);
    char *help[] = {"--reps", "0", "--help", NULL};
    assert_int_equal(read_words(help, &o), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_last_provider_counts),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
