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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantum_option_wins),
        cmocka_unit_test(test_placement_option_wins),
        cmocka_unit_test(test_bad_setting_without_option_named),
        cmocka_unit_test(test_unrelated_setting_starts),
        cmocka_unit_test(test_stray_word_named),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
