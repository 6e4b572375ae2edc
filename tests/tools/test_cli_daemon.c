/*
 * Tests of `gmux daemon` and `gmuxd` settings as a user gives them: an option
 * on the command line wins over the environment variable of the same
 * setting, even when that variable is malformed or out of range; without the
 * option, a bad variable is a clear error that names it. Each daemon started
 * runs in the background on a private socket and is stopped with --stop.
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

#include "common/cliopt.h"
#include "tproc.h"

static char out[16384], err[16384];
static char dir[] = "/tmp/gmux-cli-daemon-XXXXXX";
static char sock[128];

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(sock, sizeof(sock), "%s/d.sock", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char lock[160];
    snprintf(lock, sizeof(lock), "%s.lock", sock);
    unlink(sock);
    unlink(lock);
    rmdir(dir);
    return 0;
}

/* Runs exe (gmuxd, or gmux with "daemon" first) with the words given (NULL
 * ends them) and one more setting var=value in the environment; the daemon
 * logs at info, so the one started says its quantum and placement on its
 * starter's stderr before it goes quiet. Returns the exit status. */
static int start(int via_gmux, const char *env, const char *a, const char *b, const char *c,
                 const char *d)
{
    char *argv[9];
    int n = 0;
    argv[n++] = via_gmux ? GMUX_CLI_PATH : GMUXD_PATH;
    if (via_gmux)
        argv[n++] = "daemon";
    argv[n++] = "--socket";
    argv[n++] = sock;
    const char *words[] = {a, b, c, d};
    for (int i = 0; i < 4 && words[i]; i++)
        argv[n++] = (char *)words[i];
    argv[n] = NULL;
    /* the daemon exits by itself should the test die before --stop */
    char *const extra[] = {(char *)env, "GMUX_LOG=info", "GMUX_DAEMON_IDLE_EXIT_S=20", NULL};
    return tproc_capture(argv, extra, 60.0, out, sizeof(out), err, sizeof(err));
}

static void stop(void)
{
    char *argv[] = {GMUX_CLI_PATH, "daemon", "--socket", sock, "--stop", NULL};
    static char o[4096], e[4096];
    assert_int_equal(tproc_capture(argv, NULL, 60.0, o, sizeof(o), e, sizeof(e)), 0);
}

/* --quantum-ms wins over GMUX_DAEMON_QUANTUM_MS, malformed (abc) or out of
 * range (0): both were refused before the option was looked at. */
static void test_quantum_option_wins(void **state)
{
    (void)state;
    static const char *const envs[] = {"GMUX_DAEMON_QUANTUM_MS=abc", "GMUX_DAEMON_QUANTUM_MS=0"};
    for (int via = 0; via < 2; via++) {
        for (size_t i = 0; i < 2; i++) {
            int rc = start(via, envs[i], "--quantum-ms", "7", NULL, NULL);
            if (rc != 0)
                fail_msg("%s with %s: exit %d: %s", via ? "gmux daemon" : "gmuxd", envs[i], rc,
                         err);
            assert_non_null(strstr(err, "quantum 7000 us"));
            stop();
        }
    }
}

/* --placement wins over GMUX_DAEMON_PLACEMENT the same way. */
static void test_placement_option_wins(void **state)
{
    (void)state;
    for (int via = 0; via < 2; via++) {
        int rc = start(via, "GMUX_DAEMON_PLACEMENT=bogus", "--placement", "swap", NULL, NULL);
        if (rc != 0)
            fail_msg("exit %d: %s", rc, err);
        assert_non_null(strstr(err, "placement swap"));
        stop();
    }
}

/* Without the option the variable is what is wrong, and the error says which
 * (a range error said only "bad GMUX_DAEMON_* settings"). */
static void test_bad_setting_without_option_named(void **state)
{
    (void)state;
    static const char *const envs[] = {"GMUX_DAEMON_QUANTUM_MS=abc", "GMUX_DAEMON_QUANTUM_MS=0",
                                       "GMUX_DAEMON_QUANTUM_MS=-5", "GMUX_DAEMON_GRACE_MS=0",
                                       "GMUX_DAEMON_PLACEMENT=bogus"};
    for (int via = 0; via < 2; via++) {
        for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
            int rc = start(via, envs[i], NULL, NULL, NULL, NULL);
            char name[64];
            snprintf(name, sizeof(name), "%.*s", (int)(strchr(envs[i], '=') - envs[i]), envs[i]);
            if (rc != 2 || !strstr(err, name))
                fail_msg("%s with %s: exit %d: %s", via ? "gmux daemon" : "gmuxd", envs[i], rc,
                         err);
            assert_int_not_equal(access(sock, F_OK), 0); /* nothing started */
        }
    }
}

/* The daemon checks the settings it reads, and only when it starts: a
 * malformed GMUX_NET_TIMEOUT (the net library's) stopped gmuxd and gmux
 * daemon, and a malformed GMUX_DAEMON_QUANTUM_MS stopped --stop, which
 * reads neither. */
static void test_unrelated_setting_starts(void **state)
{
    (void)state;
    for (int via = 0; via < 2; via++) {
        int rc = start(via, "GMUX_NET_TIMEOUT=abc", NULL, NULL, NULL, NULL);
        if (rc != 0)
            fail_msg("%s with GMUX_NET_TIMEOUT=abc: exit %d: %s", via ? "gmux daemon" : "gmuxd", rc,
                     err);
        assert_null(strstr(err, "GMUX_NET_TIMEOUT"));
        stop();
        rc = start(via, "GMUX_DAEMON_QUANTUM_MS=abc", "--stop", NULL, NULL, NULL);
        assert_int_equal(rc, 1);
        assert_non_null(strstr(err, "no daemon serves"));
        assert_null(strstr(err, "GMUX_DAEMON_QUANTUM_MS"));
    }
}

/* A word that is not an option is said to be an unexpected argument, not an
 * unknown option; an unknown option stays one. Nothing starts. */
static void test_stray_word_named(void **state)
{
    (void)state;
    for (int via = 0; via < 2; via++) {
        assert_int_equal(start(via, "GMUX_LOG=info", "extra", NULL, NULL, NULL), 2);
        assert_non_null(strstr(err, "unexpected argument 'extra'"));
        assert_int_equal(start(via, "GMUX_LOG=info", "--extra", NULL, NULL, NULL), 2);
        assert_non_null(strstr(err, "unknown option '--extra'"));
        assert_int_not_equal(access(sock, F_OK), 0);
    }
}

/* argv[0] and then the words (NULL ends them), env added; the exit status. */
static int run_plain(const char *exe, const char *sub, const char *const words[], char *const env[])
{
    char *argv[12];
    int n = 0;
    argv[n++] = (char *)exe;
    if (sub)
        argv[n++] = (char *)sub;
    for (int k = 0; words[k] && n < 11; k++)
        argv[n++] = (char *)words[k];
    argv[n] = NULL;
    /* a daemon started by mistake exits by itself */
    char *const idle[] = {"GMUX_DAEMON_IDLE_EXIT_S=20", env ? env[0] : NULL, NULL};
    return tproc_capture(argv, idle, 60.0, out, sizeof(out), err, sizeof(err));
}

/* text with each "gmux status" in it made prog, into dst. */
static void reword(const char *text, const char *prog, char *dst, size_t cap)
{
    size_t n = 0;
    for (const char *p = text; *p && n + 1 < cap;) {
        if (strncmp(p, "gmux status", 11) == 0) {
            n += (size_t)snprintf(dst + n, cap - n, "%s", prog);
            p += 11;
        } else {
            dst[n++] = *p++;
        }
    }
    dst[n < cap ? n : cap - 1] = '\0';
}

/* The daemon's options are worded as the other commands' are, with their
 * exit status 2: gmux daemon and gmuxd said "needs a value, not ''" of an
 * empty value, "unknown option '-'" of "-", named a too-long path in full
 * instead of its length, and took "--" for a socket path (and started a
 * daemon there); gmux status, which takes --socket too, is the reference. */
static void test_errors_worded_as_status(void **state)
{
    (void)state;
    char longp[201];
    memset(longp, 'p', sizeof(longp) - 1);
    memcpy(longp, "/tmp/", 5);
    longp[sizeof(longp) - 1] = '\0';
    const char *const cases[][3] = {
        {"--socket", NULL}, {"--socket", ""}, {"--socket", "--"}, {"--socket", longp},
        {"-", NULL},        {"--frob", NULL}, {"extra", NULL},
    };
    assert_int_equal(chdir(dir), 0); /* where a daemon on "--" would have gone */
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        static char want[sizeof(err)], daemon_says[sizeof(err)], gmuxd_says[sizeof(err)];
        assert_int_equal(run_plain(GMUX_CLI_PATH, "status", cases[c], NULL), 2);
        snprintf(want, sizeof(want), "%s", err);
        reword(want, "gmux daemon", daemon_says, sizeof(daemon_says));
        reword(want, "gmuxd", gmuxd_says, sizeof(gmuxd_says));
        int rc = run_plain(GMUX_CLI_PATH, "daemon", cases[c], NULL);
        if (rc != 2 || strcmp(err, daemon_says) != 0)
            fail_msg("gmux daemon %s: exit %d, said\n%swhere gmux status says\n%s", cases[c][0], rc,
                     err, want);
        rc = run_plain(GMUXD_PATH, NULL, cases[c], NULL);
        if (rc != 2 || strcmp(err, gmuxd_says) != 0)
            fail_msg("gmuxd %s: exit %d, said\n%swhere gmux status says\n%s", cases[c][0], rc, err,
                     want);
    }
    assert_int_not_equal(access("--", F_OK), 0);
    unlink("--");
    unlink("--.lock");
}

/* --help wins there as in every command: over an unknown option, a bad
 * value, a malformed setting, and as the word after --socket (gmux daemon
 * --socket --help started a daemon on a socket named "--help"). */
static void test_help_wins(void **state)
{
    (void)state;
    const char *const cases[][4] = {
        {"--frob", "--help"},
        {"--quantum-ms", "0", "-h"},
        {"--placement", "bogus", "--help"},
        {"--socket", "--help"},
        {"--stop", "--foreground", "--help"},
    };
    assert_int_equal(chdir(dir), 0);
    char *const env[] = {"GMUX_LOG=chatty", NULL};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (int via = 0; via < 2; via++) {
            for (int bad_env = 0; bad_env < 2; bad_env++) {
                int rc = run_plain(via ? GMUX_CLI_PATH : GMUXD_PATH, via ? "daemon" : NULL,
                                   cases[c], bad_env ? env : NULL);
                if (rc != 0 || !strstr(out, "Usage:"))
                    fail_msg("%s%s %s %s: exit %d, no help: %s%s",
                             bad_env ? "GMUX_LOG=chatty " : "", via ? "gmux daemon" : "gmuxd",
                             cases[c][0], cases[c][1], rc, err, out);
            }
        }
    }
    int left = access("--help", F_OK) == 0;
    unlink("--help");
    unlink("--help.lock");
    assert_false(left);
}

/* gmuxd --version and -V print the version gmux --version prints, with
 * gmuxd's name, and read no setting (a malformed GMUX_LOG does not stop
 * them); gmuxd --help lists it. gmuxd took --version for an unknown option
 * (exit 2). A word after it is a usage error, as with gmux. */
static void test_gmuxd_version(void **state)
{
    (void)state;
    const char *const gmux_v[] = {"--version", NULL};
    assert_int_equal(run_plain(GMUX_CLI_PATH, NULL, gmux_v, NULL), 0);
    assert_true(strncmp(out, "gmux ", 5) == 0);
    static char want[sizeof(out) + 8];
    snprintf(want, sizeof(want), "gmuxd %s", out + 5); /* "gmux X.Y.Z\n" */
    char *const env[] = {"GMUX_LOG=chatty", NULL};
    const char *const words[][2] = {{"--version", NULL}, {"-V", NULL}};
    for (size_t w = 0; w < 2; w++) {
        for (int bad_env = 0; bad_env < 2; bad_env++) {
            int rc = run_plain(GMUXD_PATH, NULL, words[w], bad_env ? env : NULL);
            if (rc != 0 || strcmp(out, want) != 0 || err[0])
                fail_msg("%sgmuxd %s: exit %d, said '%s' (wanted '%s'): %s",
                         bad_env ? "GMUX_LOG=chatty " : "", words[w][0], rc, out, want, err);
        }
    }
    const char *const extra[] = {"--version", "--frob", NULL};
    assert_int_equal(run_plain(GMUXD_PATH, NULL, extra, NULL), 2);
    assert_non_null(strstr(err, "--frob"));
    const char *const help[] = {"--help", NULL};
    assert_int_equal(run_plain(GMUXD_PATH, NULL, help, NULL), 0);
    assert_non_null(strstr(out, "--version"));
}

/* gmuxd takes for --version exactly the words every gmux program takes
 * (com_cli_is_version): each of them prints the version, and a word like
 * them that the common reader refuses is a usage error, not a version. */
static void test_gmuxd_version_words_as_common(void **state)
{
    (void)state;
    const char *const gmux_v[] = {"--version", NULL};
    assert_int_equal(run_plain(GMUX_CLI_PATH, NULL, gmux_v, NULL), 0);
    static char want[sizeof(out) + 8];
    snprintf(want, sizeof(want), "gmuxd %s", out + 5);
    static const char *const words[] = {"--version", "-V",        "-v",  "--versions",
                                        "-version",  "--Version", "-VV", "--version=1"};
    int taken = 0;
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
        const char *const argv[] = {words[w], "--socket", sock, NULL};
        int rc = run_plain(GMUXD_PATH, NULL, argv, NULL);
        if (com_cli_is_version(words[w])) {
            taken++;
            /* a word after --version is refused as gmux refuses it */
            if (rc != 2 || !strstr(err, "unexpected argument '--socket'"))
                fail_msg("gmuxd %s --socket: exit %d: %s", words[w], rc, err);
            const char *const alone[] = {words[w], NULL};
            rc = run_plain(GMUXD_PATH, NULL, alone, NULL);
            if (rc != 0 || strcmp(out, want) != 0)
                fail_msg("gmuxd %s: exit %d, said '%s' (wanted '%s'): %s", words[w], rc, out, want,
                         err);
        } else if (rc != 2 || !strstr(err, "unknown option") || strstr(out, "gmuxd ")) {
            fail_msg("gmuxd %s: exit %d, said '%s': %s", words[w], rc, out, err);
        }
    }
    assert_int_equal(taken, 2); /* -V and --version, as cliopt.h says */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantum_option_wins),
        cmocka_unit_test(test_placement_option_wins),
        cmocka_unit_test(test_bad_setting_without_option_named),
        cmocka_unit_test(test_unrelated_setting_starts),
        cmocka_unit_test(test_stray_word_named),
        cmocka_unit_test(test_errors_worded_as_status),
        cmocka_unit_test(test_help_wins),
        cmocka_unit_test(test_gmuxd_version),
        cmocka_unit_test(test_gmuxd_version_words_as_common),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
