/* Tests of gmux sim's words as sim_opts.c reads them (moved out of
 * cmd_sim.c unchanged): the defaults, each option's value on its edge
 * cases, which words are a --calibration's or a --param's, and the usage
 * errors of words that exclude each other. No file is read, no workload
 * opened: a --workload name is taken as it is (cmd_sim.c opens it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opt_words.h"
#include "sim_opts.h"

#define MAX_WORDS 160

static unsigned char role[MAX_WORDS];

/* sim_opts_read over "sim" and words (NULL-ended). */
static int read_words(char **words, struct sim_opts *o)
{
    char *argv[MAX_WORDS];
    int argc = opt_words_argv("sim", words, argv, MAX_WORDS);
    memset(role, 0, sizeof(role));
    return sim_opts_read(argc, argv, role, o);
}

static struct sim_opts o; /* large: not on the stack */

static void test_defaults(void **state)
{
    (void)state;
    char *w[] = {"--workload", "llm", NULL};
    assert_int_equal(read_words(w, &o), 0);
    assert_string_equal(o.job.workload, "llm");
    assert_null(o.job.trace);
    assert_true(o.job.seed == 1 && o.job.progress && o.job.oversub_pct == 0);
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        assert_true(o.job.policies[p]);
    assert_string_equal(o.plot, "gmux-sim-sweep");
    assert_true(!o.json && !o.sweep && !o.recorded && !o.predict_given && !o.plot_given);
    assert_true(o.nsets == 0 && o.nclass == 0 && o.templates == NULL);
}

static void test_values(void **state)
{
    (void)state;
    char *w[] = {"--trace", "t.bin",      "--policy",  "oracle,demand", "--oversub",
                 "1e6",     "--json",     "--quiet",   "--lc",          "255",
                 "--prio",  "3=-1000000", "--predict", "recorded",      "--templates",
                 "db",      "--param",    "hbm=1GiB",  "--calibration", "c.json",
                 NULL};
    assert_int_equal(read_words(w, &o), 0);
    assert_string_equal(o.job.trace, "t.bin");
    assert_true(o.job.policies[SIM_POLICY_ORACLE] && o.job.policies[SIM_POLICY_DEMAND] &&
                !o.job.policies[SIM_POLICY_PROACTIVE] && !o.job.policies[SIM_POLICY_PROACTIVE_LRU]);
    assert_true(o.job.oversub_pct == 1e6 && o.json && !o.job.progress);
    assert_true(o.lc[255] == 1 && o.prio[3] == -1000000 && o.nclass == 256);
    assert_true(o.recorded && o.predict_given);
    assert_string_equal(o.templates, "db");
    /* the words after --param and --calibration, and only they, are marked */
    for (int i = 0; i < 21; i++)
        assert_int_equal(role[i], i == 18   ? SIM_ARG_PARAM
                                  : i == 20 ? SIM_ARG_CALIB
                                            : SIM_ARG_OTHER);
    /* --param is checked, not applied: the parameters stay the defaults */
    sim_params_t def;
    sim_params_default(&def);
    assert_true(o.job.params.hbm_bytes == def.hbm_bytes);
}

static void test_seed(void **state)
{
    (void)state;
    char *given[] = {"--workload", "llm", "--seed", "0x10", NULL};
    assert_int_equal(read_words(given, &o), 0);
    assert_true(o.job.seed == 16 && o.seed_given);
    char *set_wins[] = {"--workload", "llm", "--set", "seed=7", "--seed", "3", NULL};
    assert_int_equal(read_words(set_wins, &o), 0);
    assert_true(o.job.seed == 7 && o.nsets == 1);
    char *bad_set[] = {"--workload", "llm", "--seed", "3", "--set", "seed=x", NULL};
    assert_int_equal(read_words(bad_set, &o), 0); /* the workload refuses it when opened */
    assert_true(o.job.seed == 3);
}

static void test_sweep(void **state)
{
    (void)state;
    char *w[] = {"--workload", "llm", "--sweep", "--plot", "d/p", NULL};
    assert_int_equal(read_words(w, &o), 0);
    assert_true(o.sweep && o.plot_given);
    assert_string_equal(o.plot, "d/p");
}

static void test_refused(void **state)
{
    (void)state;
    char *bad[][8] = {
        {NULL},
        {"--workload", "llm", "--trace", "t", NULL},
        {"--trace", "t", "--set", "a=1", NULL},
        {"--trace", "t", "--seed", "1", NULL},
        {"--workload", "llm", "--sweep", "--oversub", "50", NULL},
        {"--workload", "llm", "--plot", "p", NULL},
        {"--workload", "llm", "--sweep", "--plot", "d/", NULL},
        {"--workload", "llm", "--sweep", "--plot", "a\nb", NULL},
        {"--workload", "llm", "--policy", "", NULL},
        {"--workload", "llm", "--policy", ",,", NULL},
        {"--workload", "llm", "--policy", "demand,bogus", NULL},
        {"--workload", "llm", "--oversub", "0", NULL},
        {"--workload", "llm", "--oversub", "1000000.5", NULL},
        {"--workload", "llm", "--oversub", "nan", NULL},
        {"--workload", "llm", "--seed", "-1", NULL},
        {"--workload", "llm", "--lc", "256", NULL},
        {"--workload", "llm", "--lc", "-0", NULL},
        {"--workload", "llm", "--prio", "3=1000001", NULL},
        {"--workload", "llm", "--prio", "256=1", NULL},
        {"--workload", "llm", "--prio", "=1", NULL},
        {"--workload", "llm", "--prio", "3", NULL},
        {"--workload", "llm", "--prio", "3=", NULL},
        {"--workload", "llm", "--prio", "0000000000000000000000000000000003=1", NULL},
        {"--workload", "llm", "--param", "hbm", NULL},
        {"--workload", "llm", "--param", "nokey=1", NULL},
        {"--workload", "llm", "--predict", "perfect", NULL},
        {"--workload", "llm", "--bogus", NULL},
        {"--workload", "llm", "stray", NULL},
        {"--workload", NULL},
        {"--workload", "", NULL},
        {"--workload", "--", "x", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (read_words(bad[i], &o) != 2)
            fail_msg("words %zu (%s %s %s) taken", i, bad[i][0] ? bad[i][0] : "",
                     bad[i][0] ? bad[i][1] : "", bad[i][0] && bad[i][1] ? bad[i][2] : "");
}

/* 64 --set are taken, the 65th refused */
static void test_too_many_sets(void **state)
{
    (void)state;
    char *w[MAX_WORDS] = {"--workload", "llm"};
    int n = 2;
    for (int k = 0; k < SIM_OPTS_MAX_SETS; k++)
        w[n++] = "--set", w[n++] = "a=1";
    w[n] = NULL;
    assert_int_equal(read_words(w, &o), 0);
    assert_int_equal(o.nsets, SIM_OPTS_MAX_SETS);
    w[n++] = "--set", w[n++] = "a=1";
    w[n] = NULL;
    assert_int_equal(read_words(w, &o), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults), cmocka_unit_test(test_values),
        cmocka_unit_test(test_seed),     cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_refused),  cmocka_unit_test(test_too_many_sets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
