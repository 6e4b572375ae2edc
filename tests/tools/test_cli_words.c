/*
 * What gmux's words tell a user beyond each command's options (the helps'
 * exit statuses and option checks are test_cli_help's): the task states
 * gmux status and top show, --version asked of a command, the wording of a
 * --set the workload refuses, input options that do not apply, and an
 * empty file name.
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
#include "cli_words.h"

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

/* A --set the workload refuses is said in one sentence: the option, the
 * setting quoted, then why, with no message nested in parentheses: until
 * 2026-12-03 "option '--set' wants KEY=VALUE, a setting of dl-train
 * (setting steps: 'abc' is not a whole number in [1, 1048576]), not
 * 'steps=abc'". */
static void test_set_refused_in_one_sentence(void **state)
{
    (void)state;
    static const struct {
        const char *words[10];
        const char *says;
    } cases[] = {
        {{"sim", "--workload", "dl-train", "--set", "steps=abc"},
         "gmux sim: option '--set' wants KEY=VALUE, a setting of dl-train, not 'steps=abc': "
         "setting steps wants a whole number in [1, 1048576], not 'abc' (see gmux sim --help)\n"},
        {{"trace", "generate", "--workload", "llm-decode", "--set", "model=gpt5", "-o", "x"},
         "gmux trace: option '--set' wants KEY=VALUE, a setting of llm-decode, not 'model=gpt5': "
         "setting model wants llama2-7b, llama2-13b or llama2-70b, not 'gpt5' (see gmux trace "
         "--help)\n"},
        {{"predict-report", "--workload", "dl-train", "--set", "tasks"},
         "gmux predict-report: option '--set' wants KEY=VALUE, a setting of dl-train, not "
         "'tasks': setting 'tasks' is not key=value (see gmux predict-report --help)\n"},
        {{"sim", "--workload", "sci-stencil", "--set", "slab=4096"},
         "gmux sim: option '--set' wants KEY=VALUE, a setting of sci-stencil, not 'slab=4096': "
         "slab (4096) larger than nz (3584), in workload sci-stencil (see gmux sim --help)\n"},
        {{"sim", "--workload", "dl-train", "--set", "seed=x"},
         "gmux sim: option '--set' wants KEY=VALUE, a setting of dl-train, not 'seed=x': "
         "setting seed wants a whole number, not 'x' (see gmux sim --help)\n"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int rc = run_words(cases[c].words);
        if (rc != 2 || strcmp(err, cases[c].says) != 0)
            fail_msg("gmux %s --set %s: exit %d, not 2 with\n%s: %s", cases[c].words[0],
                     cases[c].words[4], rc, cases[c].says, err);
    }
    /* an unknown one lists what the workload has, after the same words */
    const char *const words[] = {"sim", "--workload", "dl-train", "--set", "nope=1", NULL};
    assert_int_equal(run_words(words), 2);
    assert_non_null(strstr(err, "a setting of dl-train, not 'nope=1': unknown setting 'nope' "
                                "for workload dl-train (known: tasks, "));
}

/* `gmux CMD --version` (or -V) prints what `gmux --version` prints, exit 0,
 * reading no setting, as gmux and gmuxd do: until 2026-12-03 each command
 * called it an unknown option (exit 2). Among a command's options it wins
 * as --help does, and --help wins over it; after "--" it is the program's. */
static void test_every_command_has_version(void **state)
{
    (void)state;
    const char *const top[] = {"--version", NULL};
    assert_int_equal(run_words(top), 0);
    static char version[sizeof(out)];
    memcpy(version, out, sizeof(out));
    assert_true(strncmp(version, "gmux ", 5) == 0);
    char names[32][32];
    size_t n = list_commands(names, 32);
    assert_true(n >= 11);
    char *const bad_env[] = {"GMUX_LOG=chatty", "GMUX_NET_TIMEOUT=abc", NULL};
    for (size_t i = 0; i < n; i++) {
        for (int form = 0; form < 4; form++) {
            const char *opt = form % 2 ? "-V" : "--version";
            const char *const words[] = {names[i], opt, NULL};
            int rc = run_words_env(words, form < 2 ? NULL : bad_env);
            if (rc != 0 || strcmp(out, version) != 0)
                fail_msg("gmux %s %s%s: exit %d, '%s', not '%s': %s", names[i], opt,
                         form < 2 ? "" : " (malformed settings)", rc, out, version, err);
        }
    }
    /* among options, under a subcommand, and after a value-taking option of run */
    static const char *const among[][8] = {
        {"sim", "--workload", "dl-train", "--version"},
        {"trace", "generate", "--version"},
        {"bench", "net", "-V"},
        {"run", "--budget", "8G", "--version", "--", "/bin/true"},
        {"top", "--interval", "bad", "--version"},
    };
    for (size_t c = 0; c < sizeof(among) / sizeof(among[0]); c++) {
        int rc = run_words(among[c]);
        if (rc != 0 || strcmp(out, version) != 0)
            fail_msg("gmux %s %s ...: exit %d, '%s': %s", among[c][0], among[c][1], rc, out, err);
    }
    /* --help wins */
    const char *const both[] = {"status", "--version", "--help", NULL};
    assert_int_equal(run_words(both), 0);
    assert_non_null(strstr(out, "Usage: gmux status"));
    /* after "--", and as run's program's word, it is the program's */
    const char *const prog[] = {"launch", "-n",       "1",         "--", "sh",
                                "-c",     "echo ran", "--version", NULL};
    assert_int_equal(run_words(prog), 0);
    assert_string_equal(out, "ran\n");
    /* gmux --help says so */
    assert_int_equal(run_words((const char *const[]){"--help", NULL}), 0);
    assert_non_null(strstr(out, "Every command also takes --version (-V)"));
}

/* --seed and --set are the workload's: given with a trace or a program
 * (gmux profile -o F -- CMD), each is a usage error said before anything
 * runs, as their help's usage lines have them only with --workload. Until
 * 2026-12-03 --seed with a trace was taken and did nothing (gmux sim even
 * printed "seed 3" for the trace), and gmux profile ran CMD with --seed or
 * --set given and ignored them (--set was refused after CMD had run). */
static void test_workload_options_only_with_workload(void **state)
{
    (void)state;
    char trace[64];
    snprintf(trace, sizeof(trace), "/tmp/gmux-words-%d.trace", (int)getpid());
    const char *const gen[] = {"trace", "generate", "--workload", "dl-train", "--set", "tasks=1",
                               "--set", "steps=1",  "-o",         trace,      NULL};
    assert_int_equal(run_words(gen), 0);
    char marker[64];
    snprintf(marker, sizeof(marker), "/tmp/gmux-words-%d.ran", (int)getpid());
    char touch[96];
    snprintf(touch, sizeof(touch), "touch %s", marker);
    static const struct {
        const char *words[12];
        const char *says;
    } cases[] = {
        {{"sim", "--trace", "T", "--seed", "3", "--quiet"},
         "gmux sim: --seed applies to --workload, not to 'T'"},
        {{"profile", "T", "--seed", "3", "-o", "/tmp/gmux-words-never.db"},
         "gmux profile: --seed applies to --workload only"},
        {{"predict-report", "T", "--seed", "3"},
         "gmux predict-report: --seed applies to --workload only"},
        {{"profile", "--seed", "3", "-o", "/tmp/gmux-words-never.db", "--", "sh", "-c", "C"},
         "gmux profile: --seed applies to --workload only"},
        {{"profile", "--set", "tasks=1", "-o", "/tmp/gmux-words-never.db", "--", "sh", "-c", "C"},
         "gmux profile: --set applies to --workload only"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *words[13] = {NULL};
        for (size_t k = 0; cases[c].words[k]; k++) {
            const char *w = cases[c].words[k];
            words[k] = strcmp(w, "T") == 0 ? trace : strcmp(w, "C") == 0 ? touch : w;
        }
        char says[160];
        snprintf(says, sizeof(says), "%s", cases[c].says);
        char *t = strstr(says, "'T'");
        if (t) /* the trace's path in place of T */
            snprintf(t, sizeof(says) - (size_t)(t - says), "'%s'", trace);
        int rc = run_words(words);
        if (rc != 2 || !strstr(err, says))
            fail_msg("gmux %s %s %s: exit %d, not 2 with \"%s\": %s", words[0], words[1], words[2],
                     rc, says, err);
        if (access(marker, F_OK) == 0)
            fail_msg("gmux %s ... ran the program before refusing its words", words[0]);
    }
    assert_int_equal(access("/tmp/gmux-words-never.db", F_OK), -1);
    remove(trace);
}

/* An empty word where a file is named is a usage error, exit 2 with one
 * sentence, as an empty option value is (`-o ''`): no file has that name.
 * Until 2026-12-04 each was tried as a file and failed, exit 1 naming it
 * ("gmux trace: : No such file or directory"). */
static void test_empty_file_name_is_usage_error(void **state)
{
    (void)state;
    static const struct {
        const char *words[6];
        const char *says;
    } cases[] = {
        {{"predict-report", ""}, "gmux predict-report: empty file name"},
        {{"profile", "", "-o", "/tmp/gmux-words-never.db"}, "gmux profile: empty file name"},
        {{"trace", "convert", "", "/tmp/gmux-words-never.db"}, "gmux trace: empty file name"},
        {{"trace", "convert", "/dev/null", ""}, "gmux trace: empty file name"},
        {{"trace", "show", ""}, "gmux trace: empty file name"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int rc = run_words(cases[c].words);
        if (rc != 2 || !strstr(err, cases[c].says))
            fail_msg("gmux %s '%s' ...: exit %d, not 2 with \"%s\": %s", cases[c].words[0],
                     cases[c].words[1], rc, cases[c].says, err);
    }
    assert_int_equal(access("/tmp/gmux-words-never.db", F_OK), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helps_explain_every_state),
        cmocka_unit_test(test_set_refused_in_one_sentence),
        cmocka_unit_test(test_every_command_has_version),
        cmocka_unit_test(test_workload_options_only_with_workload),
        cmocka_unit_test(test_empty_file_name_is_usage_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
