/*
 * The --help of every gmux command tells the truth: each lists its exit
 * statuses, and a few cases produce the status their help names. The list
 * of commands is read from `gmux --help`, so that a command added later is
 * held to the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_words.h"

/* out with each run of spaces and line breaks made one space: a help's
 * prose is matched whatever its line breaks. */
static void squash_out(void)
{
    char *w = out;
    for (const char *r = out; *r; r++) {
        char ch = *r == '\n' ? ' ' : *r;
        if (ch == ' ' && w > out && w[-1] == ' ')
            continue;
        *w++ = ch;
    }
    *w = '\0';
}

/* `gmux CMD --help` (and the top level, and gmux bench net's) has an exit
 * status section that names the usage error's status; gmux status, daemon
 * and run had none. */
static void test_every_help_lists_exit_status(void **state)
{
    (void)state;
    char names[32][32];
    size_t n = list_commands(names, 32);
    assert_true(n >= 11);
    for (size_t i = 0; i <= n + 1; i++) {
        const char *words[4] = {NULL};
        if (i < n) {
            words[0] = names[i];
            words[1] = "--help";
        } else if (i == n) {
            words[0] = "--help";
        } else {
            words[0] = "bench";
            words[1] = "net";
            words[2] = "--help";
        }
        int rc = run_words(words);
        if (rc != 0)
            fail_msg("gmux %s --help: exit %d", words[0], rc);
        squash_out();
        if (!strstr(out, "Exit status:"))
            fail_msg("gmux %s %s: no 'Exit status:' section", words[0], words[1] ? words[1] : "");
        if (!strstr(out, "2 for a usage error"))
            fail_msg("gmux %s %s: the usage error's status not said", words[0],
                     words[1] ? words[1] : "");
        /* -h is the same */
        for (size_t k = 0; words[k]; k++)
            if (strcmp(words[k], "--help") == 0)
                words[k] = "-h";
        static char first[sizeof(out)];
        memcpy(first, out, sizeof(out));
        assert_int_equal(run_words(words), 0);
        squash_out();
        assert_string_equal(out, first);
    }
}

/* An option no command has is a usage error (2) of every command, as its
 * help says. */
static void test_unknown_option_is_status_2(void **state)
{
    (void)state;
    char names[32][32];
    size_t n = list_commands(names, 32);
    for (size_t i = 0; i < n; i++) {
        const char *words[] = {names[i], "--no-such-option", NULL};
        int rc = run_words(words);
        if (rc != 2)
            fail_msg("gmux %s --no-such-option: exit %d, not 2: %s", names[i], rc, err);
        /* named as an option (demo, status, top, predict-report and profile
         * said "unexpected argument", bench "unknown benchmark", trace
         * "unknown subcommand") */
        if (!strstr(err, "unknown option '--no-such-option'"))
            fail_msg("gmux %s --no-such-option: %s", names[i], err);
    }
}

/* A word that is no option and that a command does not take is an
 * "unexpected argument", one that begins with '-' an "unknown option", in
 * every command (gmux sim and launch called a plain word an unknown option;
 * trace, predict-report and profile called an option an unexpected
 * argument, and gmux trace -o F WORD said WORD "needs a value"). */
static void test_wrong_word_named(void **state)
{
    (void)state;
    static const struct {
        const char *argv[8];
        const char *says;
    } cases[] = {
        {{"sim", "extra"}, "gmux sim: unexpected argument 'extra'"},
        {{"demo", "extra"}, "gmux demo: unexpected argument 'extra'"},
        {{"status", "extra"}, "gmux status: unexpected argument 'extra'"},
        {{"top", "extra"}, "gmux top: unexpected argument 'extra'"},
        {{"bench", "net", "extra"}, "gmux bench net: unexpected argument 'extra'"},
        {{"launch", "-n", "1", "extra", "--", "true"}, "gmux launch: unexpected argument 'extra'"},
        {{"predict-report", "a", "b"}, "gmux predict-report: unexpected argument 'b'"},
        {{"trace", "convert", "a", "b", "c"}, "gmux trace: unexpected argument 'c'"},
        {{"trace", "generate", "extra"}, "gmux trace: unexpected argument 'extra'"},
        {{"trace", "-o", "x", "extra", "--", "true"}, "gmux trace: unexpected argument 'extra'"},
        {{"daemon", "extra"}, "gmux daemon: unexpected argument 'extra'"},
        {{"bench", "net", "--frob"}, "gmux bench net: unknown option '--frob'"},
        {{"trace", "generate", "--frob", "1"}, "gmux trace: unknown option '--frob'"},
        {{"trace", "convert", "--frob", "a", "b"}, "gmux trace: unknown option '--frob'"},
        {{"trace", "show", "--frob", "a"}, "gmux trace: unknown option '--frob'"},
        {{"trace", "-o", "x", "--frob", "1", "--", "true"}, "gmux trace: unknown option '--frob'"},
        {{"predict-report", "--frob"}, "gmux predict-report: unknown option '--frob'"},
        {{"profile", "--frob", "-o", "x"}, "gmux profile: unknown option '--frob'"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int rc = run_words(cases[c].argv);
        if (rc != 2 || !strstr(err, cases[c].says))
            fail_msg("gmux %s %s ...: exit %d, not 2 with \"%s\": %s", cases[c].argv[0],
                     cases[c].argv[1], rc, cases[c].says, err);
    }
}

/* Cases that produce a status a help names: the help's words, then the
 * command and the status it exits with. */
static void test_documented_statuses(void **state)
{
    (void)state;
    static const struct {
        const char *help[3];  /* the command whose --help is read */
        const char *says;     /* what that help says */
        const char *argv[10]; /* a case of it */
        int status;
    } cases[] = {
        {{"status"},
         "1 when no daemon answers",
         {"status", "--socket", "/nonexistent/gmux-help.sock"},
         1},
        {{"daemon"},
         "--stop finds none serving it",
         {"daemon", "--socket", "/nonexistent/gmux-help.sock", "--stop"},
         1},
        {{"daemon"}, "2 for a usage error", {"daemon", "--stop", "--foreground"}, 2},
        {{"run"}, "127 when COMMAND is not found", {"run", "--", "/nonexistent/prog"}, 127},
        {{"run"}, "126 when it cannot be executed", {"run", "--", "/tmp"}, 126},
        {{"top"},
         "1 when no daemon answers",
         {"top", "--socket", "/nonexistent/gmux-help.sock"},
         1},
        {{"launch"},
         "124 on timeout",
         {"launch", "-n", "1", "--timeout", "0.2", "--", "sleep", "30"},
         124},
        {{"launch"},
         "127/126 when CMD is not found",
         {"launch", "-n", "1", "--", "/nonexistent/prog"},
         127},
        {{"trace"}, "1 when a trace cannot be read", {"trace", "show", "/nonexistent/t.trace"}, 1},
        {{"profile"},
         "1 when the trace cannot be read",
         {"profile", "/nonexistent/t.trace", "-o", "/tmp/gmux-help-never-written.db"},
         1},
        {{"predict-report"},
         "1 when the trace cannot be read",
         {"predict-report", "/nonexistent/t.trace"},
         1},
        {{"sim"}, "1 when the trace", {"sim", "--trace", "/nonexistent/t.trace", "--quiet"}, 1},
        {{"sim"}, "a bad workload name", {"sim", "--workload", "no-such-workload"}, 2},
        {{"sim"}, "only with --sweep", {"sim", "--workload", "llm-decode", "--plot", "/tmp/x"}, 2},
        {{"top"}, "not with --once", {"top", "--once", "--batch", "2"}, 2},
        {{"daemon"}, "1 to 3599999 ms (default 20)", {"daemon", "--quantum-ms", "0"}, 2},
        {{"demo"}, "--plot-dir not a", {"demo", "--plot-dir", "/nonexistent/dir"}, 2},
        {{"bench"}, "an unknown one", {"bench", "no-such-bench"}, 2},
        {{"bench", "net"},
         "a --plot data file or the plot script cannot be written",
         {"bench", "net", "--provider", "shm", "--plot", "/nonexistent/dir/x"},
         1},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *words[5] = {cases[c].help[0], cases[c].help[1], cases[c].help[2]};
        size_t k = 0;
        while (words[k])
            k++;
        words[k] = "--help";
        assert_int_equal(run_words(words), 0);
        squash_out();
        if (!strstr(out, cases[c].says))
            fail_msg("gmux %s --help does not say '%s'", cases[c].argv[0], cases[c].says);
        int rc = run_words(cases[c].argv);
        if (rc != cases[c].status)
            fail_msg("gmux %s %s ...: exit %d, its help says %d: %s", cases[c].argv[0],
                     cases[c].argv[1], rc, cases[c].status, err);
    }
    assert_int_equal(access("/tmp/gmux-help-never-written.db", F_OK), -1);
}

/* --help among a command's options prints the help and exits 0 before any
 * option is checked or any file is read: gmux sim read each --calibration
 * file first and exited 1 when one was missing. */
static void test_help_wins_over_other_options(void **state)
{
    (void)state;
    static const char *const cases[][8] = {
        {"sim", "--calibration", "/nonexistent/c.json", "--help"},
        {"sim", "--workload", "llm-decode", "--oversub", "bad", "-h"},
        {"demo", "--plot-dir", "/nonexistent/dir", "--help"},
        {"top", "--interval", "bad", "--help"},
        {"status", "--no-such-option", "--help"},
        {"launch", "-n", "0", "--help", "--", "true"},
        {"bench", "net", "--reps", "0", "--help"},
        {"predict-report", "--seed", "bad", "--help"},
        {"profile", "--seed", "bad", "--help"},
        {"run", "--no-such-option", "--help"},
        {"trace", "show", "/nonexistent/t.trace", "--help"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int rc = run_words(cases[c]);
        if (rc != 0 || !strstr(out, "Usage:"))
            fail_msg("gmux %s %s ... --help: exit %d, no help: %s", cases[c][0], cases[c][1], rc,
                     err);
    }
    /* after "--" it is the program's: gmux launch runs it */
    const char *const prog[] = {"launch", "-n", "1", "--", "sh", "-c", "echo ran", "--help", NULL};
    assert_int_equal(run_words(prog), 0);
    assert_non_null(strstr(out, "ran"));
    assert_null(strstr(out, "Usage:"));
}

/* --help wins over a malformed GMUX_* setting too: each command reads some
 * (GMUX_LOG all of them), and one it reads malformed stopped `gmux CMD
 * --help` with exit 2 before the command saw its words (gmux --help,
 * --help COMMAND and --help-settings, the page that error points to, too). */
static void test_help_wins_over_malformed_settings(void **state)
{
    (void)state;
    char names[32][32];
    size_t n = list_commands(names, 32);
    /* one a part of each scope reads: every process, shim, daemon, net, shmem */
    static char *const settings[] = {
        "GMUX_LOG=chatty",      "GMUX_POLICY=bogus",        "GMUX_BUDGET=abc",
        "GMUX_NET_TIMEOUT=abc", "GMUX_DAEMON_QUANTUM_MS=0", "GMUX_SHMEM_HEAP=lots",
        "GMUX_GATE=maybe",      "GMUX_TASK_PRIORITY=high",
    };
    /* and the helps that are not gmux CMD --help */
    static const char *const extra[][6] = {
        {"--help"},
        {"--help", "launch"},
        {"bench", "net", "--reps", "0", "-h"},
        {"run", "--budget", "8G", "--help"},
        {"--help-settings"},
    };
    size_t nextra = sizeof(extra) / sizeof(extra[0]);
    for (size_t s = 0; s < sizeof(settings) / sizeof(settings[0]); s++) {
        char *const env[] = {settings[s], NULL};
        for (size_t i = 0; i < n + nextra; i++) {
            const char *const cmd_help[] = {names[i < n ? i : 0], "--help", NULL};
            const char *const *words = i < n ? cmd_help : extra[i - n];
            int rc = run_words_env(words, env);
            const char *shows = strcmp(words[0], "--help-settings") == 0 ? "GMUX_LOG" : "Usage:";
            if (rc != 0 || !strstr(out, shows))
                fail_msg("%s gmux %s %s: exit %d, no help: %s", settings[s], words[0],
                         words[1] ? words[1] : "", rc, err);
        }
    }
    /* as gmux --help says */
    const char *const top[] = {"--help", NULL};
    assert_int_equal(run_words(top), 0);
    squash_out();
    assert_non_null(
        strstr(out, "A help (--help, COMMAND --help, --help-settings) and a --version read none."));
    /* without --help the setting still stops what reads it */
    char *const env[] = {"GMUX_NET_TIMEOUT=abc", NULL};
    const char *const words[] = {"launch", "-n", "1", "--", "true", NULL};
    assert_int_equal(run_words_env(words, env), 2);
    assert_non_null(strstr(err, "GMUX_NET_TIMEOUT"));
}

/* gmux run's help scan skips the value of each option that takes one, and
 * only of those, as its parser does: the options are read from the usage
 * lines of `gmux run --help` ("[--budget SIZE]", "[--no-managed]"). An
 * option the parser took a value for and the scan did not would make
 * `gmux run --OPT X --help` take X for the program and '--help' for an
 * unknown option; a flag the scan took a value for would hide the --help
 * after it. */
static void test_run_help_scan_matches_parser(void **state)
{
    (void)state;
    const char *const help[] = {"run", "--help", NULL};
    assert_int_equal(run_words(help), 0);
    static char usage[4096];
    const char *end = strstr(out, "\n\n");
    assert_non_null(end);
    snprintf(usage, sizeof(usage), "%.*s", (int)(end - out), out);
    size_t valued = 0, flags = 0;
    for (const char *p = strchr(usage, '['); p; p = strchr(p + 1, '[')) {
        char opt[64], value[64] = "";
        if (sscanf(p, "[%63[^] ] %63[^]]", opt, value) < 1 || strcmp(opt, "--") == 0 ||
            opt[0] != '-') /* [ARGS...] */
            continue;
        assert_true(strncmp(opt, "--", 2) == 0);
        if (value[0]) {
            valued++;
            const char *words[] = {"run", opt, "x", "--help", NULL};
            int rc = run_words(words);
            if (rc != 0 || !strstr(out, "Usage: gmux run"))
                fail_msg("gmux run %s x --help: exit %d, no help: %s", opt, rc, err);
            const char *bare[] = {"run", opt, NULL};
            char says[96];
            snprintf(says, sizeof(says), "option '%s' needs a value", opt);
            rc = run_words(bare);
            if (rc != 2 || !strstr(err, says))
                fail_msg("gmux run %s: exit %d: %s", opt, rc, err);
        } else {
            flags++;
            const char *words[] = {"run", opt, "--help", NULL};
            int rc = run_words(words);
            if (rc != 0 || !strstr(out, "Usage: gmux run"))
                fail_msg("gmux run %s --help: exit %d, no help: %s", opt, rc, err);
        }
    }
    /* --policy and the others, --no-managed and --no-daemon */
    assert_true(valued >= 8);
    assert_true(flags >= 2);
}

/* Whether a usage word is an option's value: an uppercase name (FILE, N),
 * KEY=VALUE, or the words it takes (text|binary). */
static bool usage_value(const char *w)
{
    if (!w || w[0] == '-' || strcmp(w, "gmux") == 0)
        return false;
    for (const char *p = w; *p; p++)
        if ((*p >= 'A' && *p <= 'Z') || *p == '|' || *p == '=')
            return true;
    return false;
}

/* Every option the usage lines of every command's --help list is one the
 * command takes, with a value exactly when the help shows one: `gmux CMD
 * --OPT` alone says "option '--OPT' needs a value", and a flag followed by
 * an unknown option is refused for that one, not for the flag. The forms of
 * a command with several ("gmux trace generate ...", "gmux trace convert")
 * are run with their leading words. */
static void test_every_usage_option_is_taken(void **state)
{
    (void)state;
    char names[34][32];
    size_t n = list_commands(names, 32);
    snprintf(names[n++], sizeof(names[0]), "bench net");
    size_t checked = 0;
    for (size_t i = 0; i < n; i++) {
        const char *help[4] = {names[i], "--help", NULL};
        if (strcmp(names[i], "bench net") == 0)
            help[0] = "bench", help[1] = "net", help[2] = "--help";
        assert_int_equal(run_words(help), 0);
        static char usage[8192];
        const char *end = strstr(out, "\n\n");
        assert_non_null(end);
        snprintf(usage, sizeof(usage), "%.*s", (int)(end - out), out);
        for (char *p = usage; *p; p++)
            if (*p == '[' || *p == ']' || *p == '(' || *p == ')')
                *p = ' ';
        char *words[512];
        size_t nw = 0;
        for (char *w = strtok(usage, " \n"); w && nw < 512; w = strtok(NULL, " \n"))
            if (strcmp(w, "|") != 0 && strcmp(w, "...") != 0)
                words[nw++] = w;
        const char *prefix[4] = {NULL};
        size_t np = 0;
        bool in_prefix = false;
        for (size_t k = 0; k < nw; k++) {
            const char *w = words[k];
            if (strcmp(w, "gmux") == 0) { /* a form starts: its leading words */
                np = 0;
                in_prefix = true;
                continue;
            }
            if (in_prefix && w[0] != '-' && !usage_value(w) && np < 3) {
                prefix[np++] = w;
                continue;
            }
            in_prefix = false;
            /* not an option; or a help or version word (every page lists
             * them), whose scans the tests above and test_cli_words check */
            if (w[0] != '-' || strcmp(w, "--") == 0 || strcmp(w, "-") == 0 ||
                strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0 || strcmp(w, "-V") == 0 ||
                strcmp(w, "--version") == 0)
                continue;
            const char *words_run[8] = {NULL};
            size_t m = 0;
            for (; m < np; m++)
                words_run[m] = prefix[m];
            words_run[m++] = w;
            bool valued = usage_value(k + 1 < nw ? words[k + 1] : NULL);
            char says[128];
            if (valued) {
                snprintf(says, sizeof(says), "option '%s' needs a value", w);
            } else {
                words_run[m++] = "--no-such-option";
                snprintf(says, sizeof(says), "unknown option '--no-such-option'");
            }
            int rc = run_words(words_run);
            if (rc != 2 || !strstr(err, says))
                fail_msg("gmux %s %s%s: exit %d, not 2 with \"%s\": %s", names[i], w,
                         valued ? "" : " --no-such-option", rc, says, err);
            checked++;
        }
    }
    assert_true(checked >= 60); /* about 70 options in all */
}

/* An option given without its value, or with an empty one ("$UNSET"), is
 * said alike in every command: "option 'X' needs a value", exit 2. Until
 * 2026-12-03 demo said "--plot-dir needs a directory", bench net "--reps
 * wants 1 to 100 runs, not ''" (and the like for --same and --plot), trace,
 * profile and predict-report "'X' needs a value", and an empty value went
 * on to be read as a file name, a number or a workload. */
static void test_missing_value_worded_alike(void **state)
{
    (void)state;
    static const char *const cases[][6] = {
        {"demo", "--plot-dir"},
        {"bench", "net", "--reps"},
        {"bench", "net", "--same"},
        {"bench", "net", "--plot"},
        {"bench", "net", "--provider"},
        {"predict-report", "--templates"},
        {"predict-report", "--workload"},
        {"predict-report", "--seed"},
        {"profile", "--workload"},
        {"profile", "--set"},
        {"profile", "-o"},
        {"trace", "-o"},
        {"trace", "--format"},
        {"trace", "generate", "--workload"},
        {"trace", "generate", "-o"},
        {"trace", "convert", "--format"},
        {"sim", "--workload"},
        {"sim", "--trace"},
        {"sim", "--calibration"},
        {"top", "--interval"},
        {"status", "--socket"},
        {"launch", "--bind"},
        {"run", "--stats"},
        {"daemon", "--placement"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *words[8] = {NULL};
        size_t k = 0;
        for (; cases[c][k]; k++)
            words[k] = cases[c][k];
        const char *opt = words[k - 1];
        char says[128];
        snprintf(says, sizeof(says), "option '%s' needs a value (see gmux %s", opt, words[0]);
        for (int empty = 0; empty < 2; empty++) {
            words[k] = empty ? "" : NULL;
            int rc = run_words(words);
            if (rc != 2 || !strstr(err, says) || strchr(err, '\n') != strrchr(err, '\n'))
                fail_msg("gmux %s ... %s%s: exit %d, not 2 with \"%s\": %s", words[0], opt,
                         empty ? " ''" : "", rc, says, err);
        }
    }
}

/* A value an option does not take is said alike in every command, for
 * numbers, sizes, durations and words out of a list: "option 'X' wants
 * WHAT, not 'V'", one line, exit 2. Until 2026-12-03 only launch and
 * daemon said it so; top said "bad interval 'x' (0.05 to 3600 seconds)",
 * run "bad budget 'x' (...)", sim "bad oversubscription 'x' (...)", trace
 * "unknown format 'x' (text or binary)", bench net "--reps wants ..." and
 * the like; later that day sim --param still said "bad value 'x'
 * for parameter 'hbm'", --set "dl-train: setting ..." (profile,
 * predict-report and trace generate alike), and sim and bench net --plot
 * "--plot PREFIX must be a path without control characters" and "--plot
 * 'DIR/' names a folder", none of them naming the option's value so. */
static void test_bad_value_worded_alike(void **state)
{
    (void)state;
    static const struct {
        const char *words[9];
        int opt; /* the option's index in words; its bad value follows it */
    } cases[] = {
        {{"top", "--interval", "0.01"}, 1},
        {{"top", "--interval", "x"}, 1},
        {{"top", "--batch", "0"}, 1},
        {{"run", "--policy", "eager", "/bin/true"}, 1},
        {{"run", "--budget", "lots", "/bin/true"}, 1},
        {{"run", "--priority", "21", "/bin/true"}, 1},
        {{"run", "--class", "urgent", "/bin/true"}, 1},
        {{"sim", "--policy", "bogus"}, 1},
        {{"sim", "--oversub", "0"}, 1},
        {{"sim", "--seed", "x"}, 1},
        {{"sim", "--predict", "x"}, 1},
        {{"sim", "--lc", "x"}, 1},
        {{"sim", "--prio", "x"}, 1},
        {{"trace", "generate", "--seed", "x"}, 2},
        {{"trace", "generate", "--format", "x"}, 2},
        {{"trace", "convert", "--format", "x"}, 2},
        {{"trace", "-o", "t.bin", "--format", "x", "--", "/bin/true"}, 3},
        {{"profile", "--seed", "x"}, 1},
        {{"predict-report", "--seed", "x"}, 1},
        {{"launch", "-n", "0", "--", "/bin/true"}, 1},
        {{"launch", "-n", "2", "--timeout", "0", "--", "/bin/true"}, 3},
        {{"launch", "-n", "2", "--grace", "x", "--", "/bin/true"}, 3},
        {{"launch", "-n", "2", "--hosts", ",", "--", "/bin/true"}, 3},
        {{"launch", "-n", "2", "--bind", "999.1.1.1", "--", "/bin/true"}, 3},
        {{"daemon", "--quantum-ms", "0"}, 1},
        {{"daemon", "--placement", "bogus"}, 1},
        {{"bench", "net", "--reps", "0"}, 2},
        {{"bench", "net", "--same", "both"}, 2},
        {{"bench", "net", "--provider", "ib"}, 2},
        {{"bench", "net", "--plot", "a\tb"}, 2},
        {{"bench", "net", "--plot", "dir/"}, 2},
        {{"sim", "--param", "hbm=lots"}, 1},
        {{"sim", "--param", "nope=1"}, 1},
        {{"sim", "--param", "hbm"}, 1},
        {{"sim", "--workload", "dl-train", "--set", "steps=abc"}, 3},
        {{"sim", "--workload", "dl-train", "--set", "tasks=2", "--set", "nope=1"}, 5},
        {{"sim", "--workload", "dl-train", "--set", "nope=1", "--set", "tasks=2"}, 3},
        {{"sim", "--workload", "dl-train", "--sweep", "--plot", "a\tb"}, 4},
        {{"sim", "--workload", "dl-train", "--sweep", "--plot", "dir/.."}, 4},
        {{"trace", "generate", "--workload", "dl-train", "--set", "nope=1", "-o", "x"}, 4},
        {{"profile", "--workload", "dl-train", "--set", "tasks", "-o", "x"}, 3},
        {{"predict-report", "--workload", "dl-train", "--set", "steps=0"}, 3},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *const *words = cases[c].words;
        const char *opt = words[cases[c].opt], *val = words[cases[c].opt + 1];
        char names[64], quotes[64];
        snprintf(names, sizeof(names), "option '%s' wants ", opt);
        /* a --set goes on with the workload's why: ", not 'V': WHY (see" */
        if (strcmp(opt, "--set") == 0)
            snprintf(quotes, sizeof(quotes), ", not '%s': ", val);
        else
            snprintf(quotes, sizeof(quotes), ", not '%s' (see gmux %s", val, words[0]);
        int rc = run_words(words);
        const char *at = strstr(err, names);
        if (rc != 2 || !at || !strstr(at, quotes) || strchr(err, '\n') != strrchr(err, '\n'))
            fail_msg("gmux %s ... %s '%s': exit %d, not 2 with \"%s...%s\": %s", words[0], opt, val,
                     rc, names, quotes, err);
    }
}

/* A list option (words separated by commas) given a word it does not take
 * quotes the whole value, as every bad value is quoted, and names the word:
 * until 2026-12-03 `gmux sim --policy demand,bogus` quoted only 'bogus'. */
static void test_bad_list_word_named(void **state)
{
    (void)state;
    static const char *const lists[][2] = {
        {"demand,bogus", "bogus"},
        {"nope,oracle", "nope"},
        {"oracle,,x", "x"},
    };
    for (size_t c = 0; c < sizeof(lists) / sizeof(lists[0]); c++) {
        const char *const words[] = {"sim",      "--workload", "dl-train",
                                     "--policy", lists[c][0],  NULL};
        char says[256];
        snprintf(says, sizeof(says),
                 "gmux sim: option '--policy' wants policies separated by commas (demand, "
                 "proactive, proactive-lru or oracle), not '%s' (the word '%s' is none of them) "
                 "(see gmux sim --help)\n",
                 lists[c][0], lists[c][1]);
        int rc = run_words(words);
        if (rc != 2 || strcmp(err, says) != 0)
            fail_msg("gmux sim --policy %s: exit %d, not 2 with \"%s\": %s", lists[c][0], rc, says,
                     err);
    }
}

/* gmux run --help says what --budget 0 means (only --help-settings said
 * GMUX_BUDGET's 0 is no budget). */
static void test_run_help_says_zero_budget(void **state)
{
    (void)state;
    const char *const words[] = {"run", "--help", NULL};
    assert_int_equal(run_words(words), 0);
    squash_out();
    assert_non_null(strstr(out, "--budget SIZE"));
    assert_non_null(strstr(out, "0 (the default) is no budget"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_help_lists_exit_status),
        cmocka_unit_test(test_unknown_option_is_status_2),
        cmocka_unit_test(test_documented_statuses),
        cmocka_unit_test(test_help_wins_over_other_options),
        cmocka_unit_test(test_run_help_says_zero_budget),
        cmocka_unit_test(test_wrong_word_named),
        cmocka_unit_test(test_help_wins_over_malformed_settings),
        cmocka_unit_test(test_run_help_scan_matches_parser),
        cmocka_unit_test(test_every_usage_option_is_taken),
        cmocka_unit_test(test_missing_value_worded_alike),
        cmocka_unit_test(test_bad_value_worded_alike),
        cmocka_unit_test(test_bad_list_word_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
