/* Tests of the gmux CLI as a user runs it: exit codes and messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tproc.h"

static char out[16384], err[16384];

static int run(char *const extra_env[], const char *a1, const char *a2)
{
    char *argv[4] = {GMUX_CLI_PATH, (char *)a1, (char *)a2, NULL};
    return tproc_capture(argv, extra_env, 60.0, out, sizeof(out), err, sizeof(err));
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_help(void **state)
{
    (void)state;
    assert_int_equal(run(NULL, "--help", NULL), 0);
    assert_non_null(strstr(out, "Usage: gmux"));
    assert_non_null(strstr(out, "demo"));
    assert_non_null(strstr(out, "--help-settings"));
    /* gmux --help COMMAND is the command's help */
    assert_int_equal(run(NULL, "--help", "sim"), 0);
    assert_non_null(strstr(out, "Usage: gmux sim"));
    assert_int_equal(run(NULL, "--help", "frobnicate"), 2);
    assert_non_null(strstr(err, "'frobnicate'"));
    assert_int_equal(count_lines(err), 1);
}

static void test_no_arguments_is_usage_error(void **state)
{
    (void)state;
    assert_int_equal(run(NULL, NULL, NULL), 2);
    assert_non_null(strstr(err, "Usage: gmux"));
}

static void test_version(void **state)
{
    (void)state;
    assert_int_equal(run(NULL, "--version", NULL), 0);
    assert_true(strncmp(out, "gmux ", 5) == 0);
    /* a word after them was taken silently */
    assert_int_equal(run(NULL, "--version", "x"), 2);
    assert_non_null(strstr(err, "unexpected argument 'x'"));
    assert_int_equal(count_lines(err), 1);
    assert_int_equal(run(NULL, "--help-settings", "x"), 2);
    assert_non_null(strstr(err, "unexpected argument 'x'"));
    assert_string_equal(out, "");
}

static void test_unknown_command_one_line_exit_2(void **state)
{
    (void)state;
    assert_int_equal(run(NULL, "frobnicate", NULL), 2);
    assert_non_null(strstr(err, "'frobnicate'"));
    assert_int_equal(count_lines(err), 1);
    assert_string_equal(out, "");
}

static void test_unknown_option_one_line_exit_2(void **state)
{
    (void)state;
    assert_int_equal(run(NULL, "--frob", NULL), 2);
    assert_non_null(strstr(err, "unknown option '--frob'"));
    assert_int_equal(count_lines(err), 1);
    assert_int_equal(run(NULL, "demo", "--frob"), 2);
    assert_non_null(strstr(err, "'--frob'"));
    assert_int_equal(count_lines(err), 1);
}

/* gmux ARGS (NULL-terminated, at most 10) is a usage error: exit 2, one
 * line on stderr that says `says`. */
static void assert_usage_error(const char *const *args, const char *says)
{
    char *argv[12] = {GMUX_CLI_PATH};
    for (size_t k = 0; k < 10 && args[k]; k++)
        argv[k + 1] = (char *)args[k];
    assert_int_equal(tproc_capture(argv, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    if (!strstr(err, says))
        fail_msg("gmux %s ...: '%s' not in: %s", args[0], says, err);
    assert_int_equal(count_lines(err), 1);
}

/* An option without its value is named, also where the "--" of a command
 * follows it (which is not taken for the value); a word that is not an
 * option is not reported as one missing a value; a bad value is quoted
 * with what the option wants. */
static void test_option_without_value(void **state)
{
    (void)state;
    static const struct {
        const char *argv[8];
        const char *says;
    } cases[] = {
        {{"launch", "-n", "2", "--hosts", "--", "/bin/true"}, "option '--hosts' needs a value"},
        {{"launch", "-n", "--", "/bin/true"}, "option '-n' needs a value"},
        {{"launch", "-n", "2", "/bin/true", "--", "/bin/true"}, "unexpected argument '/bin/true'"},
        {{"launch", "-n", "0", "--", "/bin/true"}, "option '-n' wants 1 to 1024 ranks, not '0'"},
        {{"launch", "-n", "2", "--grace", "-1", "--", "/bin/true"},
         "option '--grace' wants seconds from 0.001 to 1000000, not '-1'"},
        {{"run", "--policy", "--", "/bin/true"}, "option '--policy' needs a value"},
        {{"profile", "-o", "--", "/bin/true"}, "'-o' needs a value"},
        {{"trace", "-o", "--", "/bin/true"}, "'-o' needs a value"},
        {{"daemon", "--socket"}, "option '--socket' needs a value"},
        {{"daemon", "--placement", "bogus"}, "wants none, swap, opt or chunk, not 'bogus'"},
        {{"daemon", "--frob"}, "unknown option '--frob'"},
        {{"status", "--socket"}, "option '--socket' needs a value"},
        {{"top", "--interval", "0.01"},
         "option '--interval' wants seconds from 0.05 to 3600, not '0.01'"},
        {{"top", "--once", "--batch"}, "option '--batch' needs a value"},
        {{"bench", "net", "--provider"}, "option '--provider' needs a value"},
        /* a word out of a list names the list (the provider's did not) */
        {{"bench", "net", "--provider", "ib"},
         "option '--provider' wants shm, tcp or both, not 'ib'"},
        {{"sim", "--workload", "llm-decode", "--set", "model=x"},
         "setting model wants llama2-7b, llama2-13b or llama2-70b, not 'x'"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        assert_usage_error(cases[c].argv, cases[c].says);
    }
}

/* An empty value ("$UNSET") is no value: gmux run --socket '' joined (or
 * started) the daemon of the default socket, --stats '' wrote no counters
 * and --name '' named the task nothing, each with the program run and exit
 * 0; -o '' was said as ": No such file or directory". Refused before the
 * program runs, naming the option, exit 2. */
static void test_option_empty_value(void **state)
{
    (void)state;
    static const struct {
        const char *argv[10];
        const char *says;
    } cases[] = {
        {{"run", "--no-daemon", "--socket", "", "--", "sh", "-c", "echo ran"},
         "option '--socket' needs a value"},
        {{"run", "--no-daemon", "--stats", "", "--", "sh", "-c", "echo ran"},
         "option '--stats' needs a value"},
        {{"run", "--no-daemon", "--name", "", "--", "sh", "-c", "echo ran"},
         "option '--name' needs a value"},
        {{"run", "--no-daemon", "--templates", "", "--", "sh", "-c", "echo ran"},
         "option '--templates' needs a value"},
        {{"profile", "-o", "", "--", "sh", "-c", "echo ran"}, "'-o' needs a value"},
        {{"trace", "-o", "", "--", "sh", "-c", "echo ran"}, "'-o' needs a value"},
        {{"launch", "-n", "1", "--bind", "", "--", "sh", "-c", "echo ran"},
         "option '--bind' needs a value"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        assert_usage_error(cases[c].argv, cases[c].says);
        assert_null(strstr(out, "ran"));
    }
}

/* A socket path longer than a Unix socket address holds (107 bytes) is a
 * usage error naming the option, for every command that takes --socket (gmux
 * status and top cut it to 107 bytes and asked whatever daemon served that
 * path, gmux run said "value out of range" with exit 1). A bad GMUX_SOCKET
 * does not stop --help, nor a --socket that replaces it (both failed with
 * "bad GMUX_SOCKET"). */
static void test_socket_path_too_long(void **state)
{
    (void)state;
    char longp[201];
    memset(longp, 'p', sizeof(longp) - 1);
    memcpy(longp, "/tmp/", 5);
    longp[sizeof(longp) - 1] = '\0';
    static const char *const cmds[][3] = {{"status", "--socket", NULL},
                                          {"top", "--once", "--socket"},
                                          {"daemon", "--socket", NULL},
                                          {"run", "--socket", NULL}};
    for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
        char *argv[8] = {GMUX_CLI_PATH};
        size_t n = 1;
        for (size_t k = 0; k < 3 && cmds[c][k]; k++)
            argv[n++] = (char *)cmds[c][k];
        argv[n++] = longp;
        if (strcmp(cmds[c][0], "run") == 0) {
            argv[n++] = "--";
            argv[n++] = "true";
        }
        argv[n] = NULL;
        assert_int_equal(tproc_capture(argv, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
        if (!strstr(err, "'--socket'") || !strstr(err, "too long"))
            fail_msg("gmux %s --socket LONG: %s", cmds[c][0], err);
        assert_int_equal(count_lines(err), 1);
    }
    char env[260];
    snprintf(env, sizeof(env), "GMUX_SOCKET=%s", longp);
    char *const extra[] = {env, NULL};
    static const char *const helps[] = {"status", "top", "daemon"};
    for (size_t c = 0; c < sizeof(helps) / sizeof(helps[0]); c++) {
        assert_int_equal(run(extra, helps[c], "--help"), 0);
        assert_non_null(strstr(out, "Usage:"));
    }
    /* --socket replaces the setting: no daemon there, said as such (exit 1) */
    char *argv[] = {GMUX_CLI_PATH, "status", "--socket", "/nonexistent/gmux.sock", NULL};
    assert_int_equal(tproc_capture(argv, extra, 60.0, out, sizeof(out), err, sizeof(err)), 1);
    assert_non_null(strstr(err, "no daemon answers on /nonexistent/gmux.sock"));
    /* without --socket the setting is what is wrong */
    assert_int_equal(run(extra, "status", NULL), 2);
    assert_non_null(strstr(err, "GMUX_SOCKET"));
    assert_non_null(strstr(err, "too long"));
}

/* gmux top --help says what its exit statuses mean. */
static void test_top_help_exit_status(void **state)
{
    (void)state;
    assert_int_equal(run(NULL, "top", "--help"), 0);
    assert_non_null(strstr(out, "Exit status: 0"));
    assert_non_null(strstr(out, "1 when no daemon answers"));
    assert_non_null(strstr(out, "2 for a usage error"));
}

/* The end of a table entry that starts at `entry` (its leading newline):
 * the next line not indented (descriptions wrap under their column), or
 * the text's end. */
static const char *entry_end(const char *entry)
{
    const char *p = strchr(entry + 1, '\n');
    while (p && p[1] == ' ')
        p = strchr(p + 1, '\n');
    return p ? p : entry + strlen(entry);
}

/* Whether every line of text fits 80 columns. */
static void test_help_settings_lists_table(void **state)
{
    (void)state;
    char env[] = "GMUX_LOG=info";
    char *const extra[] = {env, NULL};
    assert_int_equal(run(extra, "--help-settings", NULL), 0);
    assert_non_null(strstr(out, "GMUX_LOG"));
    assert_non_null(strstr(out, "now set to 'info'"));
    /* each setting says which parts of gmux read it, in its own entry */
    const char *sock = strstr(out, "\nGMUX_SOCKET ");
    assert_non_null(sock);
    const char *parts = strstr(sock, "[shim, daemon, client]");
    assert_true(parts && parts < entry_end(sock));
    const char *timeout = strstr(out, "\nGMUX_NET_TIMEOUT ");
    assert_non_null(timeout);
    parts = strstr(timeout, "[net]");
    assert_true(parts && parts < entry_end(timeout));
    /* the descriptions wrap under their column, within 80 columns */
    assert_true(tproc_fits_cols(out, 80));
    assert_int_equal(run(NULL, "--help", NULL), 0);
    assert_true(tproc_fits_cols(out, 80));
    /* and the simulator's parameter and workload tables */
    assert_int_equal(run(NULL, "sim", "--help"), 0);
    assert_non_null(strstr(out, "uvm_prefetch_pct"));
    assert_non_null(strstr(out, "nnz-per-row=12"));
    assert_true(tproc_fits_cols(out, 80));
}

/* gmux daemon --help sends the reader to --help-settings for the settings it
 * has no option for; they are there, marked [daemon]. */
static void test_daemon_help_names_its_settings(void **state)
{
    (void)state;
    assert_int_equal(run(NULL, "daemon", "--help"), 0);
    assert_non_null(strstr(out, "marked [daemon]"));
    assert_non_null(strstr(out, "gmux --help-settings"));
    assert_int_equal(run(NULL, "--help-settings", NULL), 0);
    static const char *const names[] = {"\nGMUX_DAEMON_EVICT_WAIT_MS ", "\nGMUX_DAEMON_MSG_MS ",
                                        "\nGMUX_DAEMON_GRACE_MS ", "\nGMUX_DAEMON_CAPACITY "};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *line = strstr(out, names[i]);
        if (!line)
            fail_msg("--help-settings lacks%s", names[i]);
        const char *tag = strstr(line, "[daemon]");
        if (!tag || tag > entry_end(line))
            fail_msg("%s is not marked [daemon]", names[i] + 1);
    }
}

/* A malformed setting is a usage error naming it, for what reads it:
 * GMUX_LOG every command. --version reads none, as a help reads none:
 * until 2026-12-03 GMUX_LOG=chatty made `gmux --version` exit 2. */
static void test_malformed_setting_is_clear_error(void **state)
{
    (void)state;
    char env[] = "GMUX_LOG=chatty";
    char *const extra[] = {env, NULL};
    assert_int_equal(run(extra, "status", "--socket"), 2);
    assert_non_null(strstr(err, "GMUX_LOG"));
    assert_non_null(strstr(err, "'chatty'"));
    static const char *const versions[] = {"--version", "-V"};
    for (size_t i = 0; i < 2; i++) {
        int rc = run(extra, versions[i], NULL);
        if (rc != 0 || strncmp(out, "gmux ", 5) != 0 || err[0])
            fail_msg("GMUX_LOG=chatty gmux %s: exit %d, out '%s', err '%s'", versions[i], rc, out,
                     err);
    }
}

/* A misspelt setting would be ignored without a word: the CLI names the
 * setting meant, once, and goes on. */
static void test_misspelt_setting_warned(void **state)
{
    (void)state;
    char env[] = "GMUX_POLCY=demand";
    char other[] = "GMUX_GPU_OUT=/tmp/elsewhere";
    char *const extra[] = {env, other, NULL};
    assert_int_equal(run(extra, "--version", NULL), 0);
    assert_non_null(strstr(out, "gmux "));
    assert_string_equal(
        err, "gmux: warning: GMUX_POLCY is not a gmux setting (did you mean GMUX_POLICY?)\n");
}

/* Each command checks the settings it (or what it starts) reads, and only
 * those: a malformed GMUX_NET_TIMEOUT stopped gmux status and gmux sim,
 * which never read it. One they do read is still a usage error naming the
 * variable and the form it wants, before anything starts. */
static void test_unrelated_malformed_setting_ignored(void **state)
{
    (void)state;
    char net[] = "GMUX_NET_TIMEOUT=abc", daemon[] = "GMUX_DAEMON_QUANTUM_MS=soon";
    char shim[] = "GMUX_BUDGET=lots";
    char *const extra[] = {net, daemon, shim, NULL};
    char *status[] = {GMUX_CLI_PATH, "status", "--socket", "/nonexistent/gmux.sock", NULL};
    assert_int_equal(tproc_capture(status, extra, 60.0, out, sizeof(out), err, sizeof(err)), 1);
    assert_non_null(strstr(err, "no daemon answers on /nonexistent/gmux.sock"));
    assert_null(strstr(err, "GMUX_"));
    assert_int_equal(run(extra, "sim", "--help"), 0);
    assert_non_null(strstr(out, "Usage: gmux sim"));
    assert_string_equal(err, "");
    /* read by the ranks of gmux bench net: said before any starts */
    char *const net_only[] = {net, NULL};
    char *bench[] = {GMUX_CLI_PATH, "bench",  "net", "--provider", "shm",
                     "--quick",     "--reps", "1",   NULL};
    assert_int_equal(tproc_capture(bench, net_only, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "GMUX_NET_TIMEOUT='abc': expected a finite number"));
    assert_int_equal(count_lines(err), 1);
    assert_string_equal(out, "");
    /* read by gmuxd */
    char *const daemon_only[] = {daemon, NULL};
    char *start[] = {GMUX_CLI_PATH, "daemon", "--socket", "/nonexistent/gmux.sock", NULL};
    assert_int_equal(tproc_capture(start, daemon_only, 60.0, out, sizeof(out), err, sizeof(err)),
                     2);
    assert_non_null(strstr(err, "GMUX_DAEMON_QUANTUM_MS='soon': expected an integer"));
}

/* A setting of a fixed list of words with another word is a usage error
 * naming it and the words, before anything runs: GMUX_POLICY=eager ran the
 * program (the shim fell back to off) and exited 0. */
static void test_setting_word_checked(void **state)
{
    (void)state;
    char policy[] = "GMUX_POLICY=eager";
    char *const extra[] = {policy, NULL};
    char *argv[] = {GMUX_CLI_PATH, "run", "--no-daemon", "--", "sh", "-c", "echo ran", NULL};
    assert_int_equal(tproc_capture(argv, extra, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "GMUX_POLICY='eager': expected off, demand or proactive"));
    assert_int_equal(count_lines(err), 1);
    assert_string_equal(out, "");
    /* the commands whose settings gmux checks before dispatch: the ranks of
     * gmux launch would read GMUX_NET_PROVIDER (the word was let through) */
    char provider[] = "GMUX_NET_PROVIDER=ib";
    char *const net[] = {provider, NULL};
    char *launch[] = {GMUX_CLI_PATH, "launch", "-n", "1", "--", "sh", "-c", "echo ran", NULL};
    assert_int_equal(tproc_capture(launch, net, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "GMUX_NET_PROVIDER='ib': expected auto, shm"));
    assert_int_equal(count_lines(err), 1);
    assert_string_equal(out, "");
}

/* --hosts given twice keeps the last list, as every option keeps its last
 * value: until 2026-12-03 the lists added up, so a remote host given first
 * still took ranks (here: the usage error asking for --bind), and
 * `--hosts a --hosts ,` was taken though `--hosts ,` alone is refused. */
static void test_launch_last_hosts_kept(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "launch",    "-n", "1",  "--hosts", "remote.invalid",
                    "--hosts",     "localhost", "--", "sh", "-c",      "echo ran",
                    NULL};
    assert_int_equal(tproc_capture(argv, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "ran\n");
    char *none[] = {GMUX_CLI_PATH, "launch", "-n", "1",  "--hosts",  "localhost", "--hosts",
                    ",",           "--",     "sh", "-c", "echo ran", NULL};
    assert_int_equal(tproc_capture(none, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "option '--hosts' wants host names separated by commas, not ','"));
    assert_null(strstr(out, "ran"));
}

static void test_demo_help(void **state)
{
    (void)state;
    /* The demo itself runs as its own CTest test (test_demo), with a longer timeout. */
    assert_int_equal(run(NULL, "demo", "--help"), 0);
    assert_non_null(strstr(out, "Usage: gmux demo"));
    /* it lists the parts it runs, each built */
    assert_non_null(strstr(out, "mem: simulator report"));
    assert_non_null(strstr(out, "net: MoE dispatch/combine"));
    assert_null(strstr(out, "not built"));
}

/* gmux bench net's own options: a bad run count is a one-line usage error
 * before any rank starts; --help states the default and the bound. */
/* --plot-dir is checked before any part runs: a missing or unwritable
 * directory is a one-line usage error, not a FAILED part after minutes. */
static void test_demo_plot_dir_checked(void **state)
{
    (void)state;
    char *missing[] = {GMUX_CLI_PATH, "demo", "--plot-dir", "/nonexistent/gmux-plots", NULL};
    assert_int_equal(tproc_capture(missing, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "/nonexistent/gmux-plots"));
    assert_int_equal(count_lines(err), 1);
    assert_null(strstr(out, "=="));
    char *file[] = {GMUX_CLI_PATH, "demo", "--plot-dir", "/dev/null", NULL};
    assert_int_equal(tproc_capture(file, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "not a directory"));
    assert_int_equal(run(NULL, "demo", "--plot-dir"), 2);
    assert_non_null(strstr(err, "option '--plot-dir' needs a value"));
    assert_int_equal(run(NULL, "demo", "--help"), 0);
    assert_non_null(strstr(out, "--plot-dir DIR"));
}

static void test_bench_net_reps(void **state)
{
    (void)state;
    char *bad[][6] = {{GMUX_CLI_PATH, "bench", "net", "--reps", "0", NULL},
                      {GMUX_CLI_PATH, "bench", "net", "--reps", "101", NULL},
                      {GMUX_CLI_PATH, "bench", "net", "--reps", "x", NULL}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(tproc_capture(bad[i], NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
        assert_non_null(strstr(err, "option '--reps' wants 1 to 100 runs, not '"));
        assert_int_equal(count_lines(err), 1);
        assert_string_equal(out, "");
    }
    char *same[] = {GMUX_CLI_PATH, "bench", "net", "--same", "both", NULL};
    assert_int_equal(tproc_capture(same, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "option '--same' wants gmux or raw, not 'both'"));
    assert_int_equal(count_lines(err), 1);
    /* without a value: said as in every command (test_cli_help) */
    char *none[] = {GMUX_CLI_PATH, "bench", "net", "--same", NULL};
    assert_int_equal(tproc_capture(none, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "option '--same' needs a value"));
    char *help[] = {GMUX_CLI_PATH, "bench", "net", "--help", NULL};
    assert_int_equal(tproc_capture(help, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "N alternating gmux and raw runs (default 6, at most 100)"));
    assert_non_null(strstr(out, "median of the N per-run ratios"));
}

/* gmux bench net --json as a user runs it (two ranks over shm, shortened):
 * one record per figure, each column's median no better than its best run,
 * the median of the per-run ratios inside their range. */
static void test_bench_net_json(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "bench",  "net", "--provider", "shm",
                    "--quick",     "--reps", "3",   "--json",     NULL};
    assert_int_equal(tproc_capture(argv, NULL, 120.0, out, sizeof(out), err, sizeof(err)), 0);
    int records = 0, bw_1mib = 0, rtt = 0, proxy = 0;
    for (char *line = out; *line; records++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        char op[32], unit[16];
        unsigned long long bytes;
        double g, r, q, qlo, qhi, gb, rb;
        int reps;
        assert_int_equal(sscanf(line,
                                "{\"provider\":\"shm\",\"op\":\"%31[a-z_]\",\"bytes\":%llu,"
                                "\"gmux\":%lf,\"raw\":%lf,\"unit\":\"%15[^\"]\",\"ratio\":%lf,"
                                "\"ratio_min\":%lf,\"ratio_max\":%lf,\"gmux_best\":%lf,"
                                "\"raw_best\":%lf,\"reps\":%d}",
                                op, &bytes, &g, &r, unit, &q, &qlo, &qhi, &gb, &rb, &reps),
                         11);
        assert_int_equal(reps, 3);
        assert_true(g > 0 && r > 0 && qlo > 0);
        assert_true(qlo <= q * 1.001 && q <= qhi * 1.001); /* %.4g rounding */
        bool lower = strcmp(unit, "us") == 0;
        assert_true(lower ? gb <= g * 1.001 : gb >= g * 0.999);
        assert_true(lower ? rb <= r * 1.001 : rb >= r * 0.999);
        bw_1mib += strcmp(op, "put_bw") == 0 && bytes == 1048576;
        rtt += strcmp(op, "put_signal_rtt") == 0 && lower;
        proxy += strcmp(op, "put_rate_proxy") == 0 && strcmp(unit, "Mop/s") == 0;
        line = nl + 1;
    }
    assert_int_equal(records, 12); /* round trip, 8 sizes, 3 rates */
    assert_int_equal(bw_1mib + rtt + proxy, 3);
    /* the A/A control says so in every record */
    char *aa[] = {GMUX_CLI_PATH, "bench", "net",    "--provider", "shm", "--quick",
                  "--reps",      "2",     "--json", "--same",     "raw", NULL};
    assert_int_equal(tproc_capture(aa, NULL, 120.0, out, sizeof(out), err, sizeof(err)), 0);
    int marked = 0;
    for (const char *p = out; (p = strstr(p, ",\"same\":\"raw\"}\n")); p++)
        marked++;
    assert_int_equal(marked, 12);
    assert_int_equal(count_lines(out), 12);
}

/* --plot PREFIX: per provider a data file with one row per size, the script,
 * and the plot line (on stderr with --json, so stdout stays JSON lines). */
static void test_bench_net_plot(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-bench-plot-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char prefix[256], path[300];
    /* quotes and gnuplot's special characters reach the script quoted */
    snprintf(prefix, sizeof(prefix), "%s/b'n `x` @y", dir);
    char *argv[] = {GMUX_CLI_PATH, "bench", "net",    "--provider", "shm",  "--quick",
                    "--reps",      "1",     "--json", "--plot",     prefix, NULL};
    assert_int_equal(tproc_capture(argv, NULL, 120.0, out, sizeof(out), err, sizeof(err)), 0);
    assert_int_equal(count_lines(out), 12);
    assert_non_null(strstr(err, "plot: "));
    snprintf(path, sizeof(path), "%s.shm.dat", prefix);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    int rows = 0;
    unsigned long long last = 0;
    while (fgets(line, sizeof(line), f)) {
        if (line[0] == '#')
            continue;
        unsigned long long bytes;
        double g, r, q, lo, hi;
        assert_int_equal(sscanf(line, "%llu %lf %lf %lf %lf %lf", &bytes, &g, &r, &q, &lo, &hi), 6);
        assert_true(bytes > last && g > 0 && r > 0 && lo <= q * 1.0001 && q <= hi * 1.0001);
        last = bytes;
        rows++;
    }
    fclose(f);
    assert_int_equal(rows, 8); /* 8 B .. 4 MiB */
    unlink(path);
    const char *ext[] = {".gp", ".png"};
    char *gnuplot[] = {"gnuplot", "--version", NULL};
    char gout[256], gerr[256];
    bool drawn = tproc_capture(gnuplot, NULL, 30.0, gout, sizeof(gout), gerr, sizeof(gerr)) == 0;
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s%s", prefix, ext[i]);
        assert_true((i == 1 && !drawn) || access(path, R_OK) == 0);
        unlink(path);
    }
    rmdir(dir);
    /* a prefix that cannot be written: said before any rank starts */
    char *bad[] = {GMUX_CLI_PATH,        "bench", "net", "--provider", "shm", "--plot",
                   "/nonexistent-dir/x", NULL};
    assert_int_equal(tproc_capture(bad, NULL, 30.0, out, sizeof(out), err, sizeof(err)), 1);
    assert_non_null(strstr(err, "cannot write /nonexistent-dir/x.shm.dat"));
    char *noprefix[] = {GMUX_CLI_PATH, "bench", "net", "--plot", NULL};
    assert_int_equal(tproc_capture(noprefix, NULL, 30.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "option '--plot' needs a value"));
    /* a folder is no prefix: "DIR/" wrote DIR/.gp and DIR/.png (hidden),
     * refused before any rank starts */
    char fdir[] = "/tmp/gmux-bench-folder-XXXXXX";
    assert_non_null(mkdtemp(fdir));
    snprintf(prefix, sizeof(prefix), "%s/", fdir);
    char *folder[] = {GMUX_CLI_PATH, "bench", "net", "--provider", "shm", "--plot", prefix, NULL};
    assert_int_equal(tproc_capture(folder, NULL, 30.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "wants the files' stem, not a folder"));
    assert_int_equal(rmdir(fdir), 0); /* nothing written in it */
}

/* A plot script that cannot be written whole (a full disk; here a link to
 * /dev/full) fails the bench, naming it and why: the bench exited 0 and
 * said "plot: PREFIX.png" over an empty script. */
static void test_bench_net_plot_script_unwritable(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-bench-full-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char prefix[256], gp[300], dat[300];
    snprintf(prefix, sizeof(prefix), "%s/b", dir);
    snprintf(gp, sizeof(gp), "%s.gp", prefix);
    snprintf(dat, sizeof(dat), "%s.shm.dat", prefix);
    assert_int_equal(symlink("/dev/full", gp), 0);
    char *argv[] = {GMUX_CLI_PATH, "bench", "net",    "--provider", "shm",  "--quick",
                    "--reps",      "1",     "--json", "--plot",     prefix, NULL};
    assert_int_equal(tproc_capture(argv, NULL, 120.0, out, sizeof(out), err, sizeof(err)), 1);
    assert_non_null(strstr(err, gp));
    assert_non_null(strstr(err, "No space left on device"));
    assert_null(strstr(err, "plot: "));
    unlink(gp);
    unlink(dat);
    rmdir(dir);
}

/* A bench whose run fails part way (a gmux-net-rank beside a copy of gmux
 * whose rank 0 writes one row, then both ranks exit 3) leaves no data file
 * that looks whole: the earlier PREFIX.shm.dat stays as it was, no part file
 * stays, no plot, and it says so. It left the header and the row over the
 * earlier file, silently. */
static void test_bench_net_plot_failed_run(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-bench-fail-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char gmux[300], rank[300], prefix[300], dat[320], part[330], gp[320];
    snprintf(gmux, sizeof(gmux), "%s/gmux", dir);
    snprintf(rank, sizeof(rank), "%s/gmux-net-rank", dir);
    snprintf(prefix, sizeof(prefix), "%s/b", dir);
    snprintf(dat, sizeof(dat), "%s.shm.dat", prefix);
    snprintf(part, sizeof(part), "%s.part~", dat);
    snprintf(gp, sizeof(gp), "%s.gp", prefix);
    char *cp[] = {"cp", GMUX_CLI_PATH, gmux, NULL};
    assert_int_equal(tproc_capture(cp, NULL, 30.0, out, sizeof(out), err, sizeof(err)), 0);
    FILE *f = fopen(rank, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --plot-data ] && d=$2; shift; done\n"
               "[ \"$GMUX_RANK\" = 0 ] && echo '8 1 1 1 1 1' >>\"$d\"\nexit 3\n");
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(rank, 0755), 0);
    f = fopen(dat, "w");
    assert_non_null(f);
    fputs("earlier\n", f);
    assert_int_equal(fclose(f), 0);
    char *argv[] = {gmux, "bench", "net", "--provider", "shm", "--quick", "--plot", prefix, NULL};
    int rc = tproc_capture(argv, NULL, 60.0, out, sizeof(out), err, sizeof(err));
    char line[64] = "";
    f = fopen(dat, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    bool part_left = access(part, F_OK) == 0, gp_left = access(gp, F_OK) == 0;
    unlink(part);
    unlink(gp);
    unlink(dat);
    unlink(rank);
    unlink(gmux);
    rmdir(dir);
    assert_int_equal(rc, 3);
    assert_string_equal(line, "earlier\n");
    assert_false(part_left);
    assert_false(gp_left);
    char want[400];
    snprintf(want, sizeof(want), "the shm run failed: no %s written", dat);
    assert_non_null(strstr(err, want));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_no_arguments_is_usage_error),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_unknown_command_one_line_exit_2),
        cmocka_unit_test(test_unknown_option_one_line_exit_2),
        cmocka_unit_test(test_option_without_value),
        cmocka_unit_test(test_option_empty_value),
        cmocka_unit_test(test_socket_path_too_long),
        cmocka_unit_test(test_top_help_exit_status),
        cmocka_unit_test(test_help_settings_lists_table),
        cmocka_unit_test(test_daemon_help_names_its_settings),
        cmocka_unit_test(test_malformed_setting_is_clear_error),
        cmocka_unit_test(test_misspelt_setting_warned),
        cmocka_unit_test(test_unrelated_malformed_setting_ignored),
        cmocka_unit_test(test_setting_word_checked),
        cmocka_unit_test(test_launch_last_hosts_kept),
        cmocka_unit_test(test_demo_help),
        cmocka_unit_test(test_demo_plot_dir_checked),
        cmocka_unit_test(test_bench_net_reps),
        cmocka_unit_test(test_bench_net_json),
        cmocka_unit_test(test_bench_net_plot),
        cmocka_unit_test(test_bench_net_plot_script_unwritable),
        cmocka_unit_test(test_bench_net_plot_failed_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
