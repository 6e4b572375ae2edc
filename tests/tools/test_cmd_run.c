/* gmux run: environment handed to the command, exit status, errors. */
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

#include "tproc.h"

static char out[16384], err[16384];
static char *const *env_extra;

static int run(char *const argv[])
{
    return tproc_capture(argv, env_extra, 60.0, out, sizeof(out), err, sizeof(err));
}

static void test_sets_environment_and_returns_status(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH,
                    "run",
                    "--no-daemon",
                    "--policy",
                    "demand",
                    "--budget",
                    "1G",
                    "--no-managed",
                    "--",
                    "/bin/sh",
                    "-c",
                    "echo \"[$GMUX_POLICY] [$GMUX_BUDGET] [$GMUX_SHIM_MANAGED] [$LD_PRELOAD]\"; "
                    "exit 3",
                    NULL};
    assert_int_equal(run(argv), 3);
    assert_non_null(strstr(out, "[demand] [1G] [0] ["));
    assert_non_null(strstr(out, "/libgmux.so"));
}

static void test_keeps_existing_preload(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "run", "--no-daemon", "/bin/sh", "-c", "echo \"[$LD_PRELOAD]\"",
                    NULL};
    assert_int_equal(run(argv), 0);
    assert_non_null(strstr(out, "/libgmux.so:" GMUX_OTHER_PRELOAD "]"));
}

static void test_task_settings(void **state)
{
    (void)state;
    char *argv[] = {
        GMUX_CLI_PATH,
        "run",
        "--no-daemon",
        "--priority",
        "-7",
        "--class",
        "latency",
        "--name",
        "trainer",
        "--socket",
        "/tmp/gmux-test-none.sock",
        "--",
        "/bin/sh",
        "-c",
        "echo \"[$GMUX_GATE] [$GMUX_TASK_PRIORITY] [$GMUX_TASK_CLASS] [$GMUX_TASK_NAME] "
        "[$GMUX_SOCKET]\"",
        NULL};
    assert_int_equal(run(argv), 0);
    assert_non_null(strstr(out, "[0] [-7] [latency] [trainer] [/tmp/gmux-test-none.sock]"));
    char *cls[] = {GMUX_CLI_PATH, "run", "--class", "urgent", "--", "true", NULL};
    assert_int_equal(run(cls), 2);
    assert_non_null(strstr(err, "option '--class' wants latency or batch, not 'urgent'"));
    char *prio[] = {GMUX_CLI_PATH, "run", "--priority", "21", "--", "true", NULL};
    assert_int_equal(run(prio), 2);
    assert_non_null(strstr(err, "option '--priority' wants an integer from -20 to 20, not '21'"));
    char *prio2[] = {GMUX_CLI_PATH, "run", "--priority", "high", "--", "true", NULL};
    assert_int_equal(run(prio2), 2);
}

static void test_missing_command(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "run", "--no-daemon", "--", "/nonexistent/gmux-no-such-program",
                    NULL};
    assert_int_equal(run(argv), 127);
    assert_non_null(strstr(err, "cannot run '/nonexistent/gmux-no-such-program'"));
    /* checked before a daemon is started for it: no socket appears */
    char sock[] = "/tmp/gmux-test-run-XXXXXX";
    assert_non_null(mkdtemp(sock));
    char path[128];
    snprintf(path, sizeof(path), "%s/d.sock", sock);
    char *joined[] = {GMUX_CLI_PATH, "run", "--socket", path, "--", "gmux-no-such-program", NULL};
    assert_int_equal(run(joined), 127);
    assert_int_equal(access(path, F_OK), -1);
    rmdir(sock);
    char *none[] = {GMUX_CLI_PATH, "run", "--policy", "off", NULL};
    assert_int_equal(run(none), 2);
    assert_non_null(strstr(err, "no command given"));
}

static void test_bad_options(void **state)
{
    (void)state;
    char *policy[] = {GMUX_CLI_PATH, "run", "--policy", "eager", "--", "true", NULL};
    assert_int_equal(run(policy), 2);
    assert_non_null(strstr(err, "option '--policy' wants off, demand or proactive, not 'eager'"));
    char *budget[] = {GMUX_CLI_PATH, "run", "--budget", "lots", "--", "true", NULL};
    assert_int_equal(run(budget), 2);
    assert_non_null(strstr(err, "option '--budget' wants a size such as 512M or 8G, not 'lots'"));
    char *opt[] = {GMUX_CLI_PATH, "run", "--frobnicate", "--", "true", NULL};
    assert_int_equal(run(opt), 2);
    char *help[] = {GMUX_CLI_PATH, "run", "--help", NULL};
    assert_int_equal(run(help), 0);
    assert_non_null(strstr(out, "--no-daemon"));
    assert_null(strstr(out, "not built yet"));
}

/* The settings the shim reads are checked before the program starts; an
 * option that replaces one wins over a malformed variable (it failed with
 * the variable's error), and a variable neither gmux run nor the shim reads
 * stops nothing (a malformed GMUX_NET_TIMEOUT stopped gmux run). */
static void test_settings_checked_are_the_shims(void **state)
{
    (void)state;
    static char *const bad_budget[] = {"LD_PRELOAD=" GMUX_OTHER_PRELOAD,
                                       "ASAN_OPTIONS=verify_asan_link_order=0", "GMUX_BUDGET=lots",
                                       NULL};
    static char *const bad_net[] = {"LD_PRELOAD=" GMUX_OTHER_PRELOAD,
                                    "ASAN_OPTIONS=verify_asan_link_order=0", "GMUX_NET_TIMEOUT=abc",
                                    NULL};
    char *plain[] = {GMUX_CLI_PATH, "run", "--no-daemon", "--", "sh", "-c", "echo ran", NULL};
    assert_int_equal(tproc_capture(plain, bad_budget, 60.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "GMUX_BUDGET='lots': expected a size"));
    assert_null(strstr(out, "ran"));
    char *given[] = {GMUX_CLI_PATH, "run", "--no-daemon",           "--budget", "1G", "--",
                     "sh",          "-c",  "echo ran $GMUX_BUDGET", NULL};
    assert_int_equal(tproc_capture(given, bad_budget, 60.0, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "ran 1G"));
    assert_int_equal(tproc_capture(plain, bad_net, 60.0, out, sizeof(out), err, sizeof(err)), 0);
    assert_non_null(strstr(out, "ran"));
    assert_null(strstr(err, "GMUX_NET_TIMEOUT"));
}

/* --templates: checked before the command runs, handed over as an absolute path. */
static void test_templates(void **state)
{
    (void)state;
    char *bad[] = {GMUX_CLI_PATH, "run", "--no-daemon", "--templates", GMUX_TPL_DIR "/truncated.db",
                   "--",          "sh",  "-c",          "echo ran",    NULL};
    assert_int_equal(run(bad), 1);
    assert_non_null(strstr(err, "truncated.db:4"));
    assert_null(strstr(out, "ran"));
    char *missing[] = {GMUX_CLI_PATH,       "run", "--no-daemon", "--templates",
                       "/nonexistent/x.db", "--",  "true",        NULL};
    assert_int_equal(run(missing), 1);
    assert_non_null(strstr(err, "/nonexistent/x.db"));
    char *good[] = {GMUX_CLI_PATH,
                    "run",
                    "--no-daemon",
                    "--templates",
                    GMUX_TPL_DIR "/scale.db",
                    "--",
                    "sh",
                    "-c",
                    "echo \"tpl=$GMUX_TEMPLATES\"",
                    NULL};
    assert_int_equal(run(good), 0);
    assert_non_null(strstr(out, "tpl=/"));
    assert_non_null(strstr(out, "/scale.db"));
}

/* The gmuxd that gmux run starts exits after GMUX_DAEMON_IDLE_EXIT_S
 * without a connection, but not while the program it was started for runs:
 * the shim joins at the program's first kernel launch, which may come long
 * after (a model loading); the daemon had gone by then and the program ran
 * ungated for good. Once the program has ended, the daemon still exits.
 * The program sleeps past DMN_SERVER_HELLO_MS (3 s) and the idle exit: the
 * connection gmux run holds for it must not be closed as a silent one. */
static void test_daemon_waits_for_its_program(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-test-idle-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/d.sock", dir);
    char *argv[] = {GMUX_CLI_PATH, "run",
                    "--socket",    path,
                    "--",          "/bin/sh",
                    "-c",          "sleep 6; test -S \"$GMUX_SOCKET\" && echo daemon-alive",
                    NULL};
    static char *const extra[] = {"LD_PRELOAD=" GMUX_OTHER_PRELOAD,
                                  "ASAN_OPTIONS=verify_asan_link_order=0",
                                  "GMUX_DAEMON_IDLE_EXIT_S=1", NULL};
    int rc = tproc_capture(argv, extra, 60.0, out, sizeof(out), err, sizeof(err));
    int gone = 0;
    for (int i = 0; i < 200 && !gone; i++) { /* it exits by itself: at most 20 s */
        gone = access(path, F_OK) != 0;
        if (!gone)
            usleep(100 * 1000);
    }
    char lock[160];
    snprintf(lock, sizeof(lock), "%s.lock", path);
    unlink(lock);
    rmdir(dir);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "daemon-alive"));
    assert_true(gone);
}

/* --stats into a folder that is not there is refused before the command
 * runs: the program ran to its end, the shim then failed to write the
 * counters (a warning among the program's output) and gmux run exited 0. */
static void test_stats_folder_checked(void **state)
{
    (void)state;
    char *missing[] = {GMUX_CLI_PATH, "run", "--no-daemon", "--stats",  "/nonexistent/gmux/s.json",
                       "--",          "sh",  "-c",          "echo ran", NULL};
    assert_int_equal(run(missing), 1);
    assert_non_null(strstr(err, "--stats '/nonexistent/gmux/s.json'"));
    assert_non_null(strstr(err, "No such file or directory"));
    assert_null(strstr(out, "ran"));
    char *here[] = {GMUX_CLI_PATH, "run", "--no-daemon", "--stats",  "s-%p.json",
                    "--",          "sh",  "-c",          "echo ran", NULL};
    assert_int_equal(run(here), 0); /* a file name alone: the current folder */
    assert_non_null(strstr(out, "ran"));
}

/* --stats given as a symbolic link is checked where the shim writes it
 * (src/common/out_target.h): a loop of links, and a dangling link into a
 * folder that is not there, are refused before the command runs. Until
 * 2026-12-03 the link's own folder was checked: the program ran, and the
 * counters were lost at its end. */
static void test_stats_link_checked(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-run-stats-XXXXXX", loop[64], dangling[64];
    assert_non_null(mkdtemp(dir));
    snprintf(loop, sizeof(loop), "%s/loop", dir);
    snprintf(dangling, sizeof(dangling), "%s/dangling", dir);
    int made = symlink("loop", loop) | symlink("/nonexistent/gmux/s.json", dangling);
    char *with_loop[] = {GMUX_CLI_PATH, "run", "--no-daemon", "--stats",  loop,
                         "--",          "sh",  "-c",          "echo ran", NULL};
    int rc_loop = run(with_loop);
    bool said_loop = strstr(err, "Too many levels of symbolic links") != NULL,
         ran_loop = strstr(out, "ran") != NULL;
    char *with_dangling[] = {GMUX_CLI_PATH, "run", "--no-daemon", "--stats",  dangling,
                             "--",          "sh",  "-c",          "echo ran", NULL};
    int rc_dangling = run(with_dangling);
    bool said_dangling = strstr(err, "/nonexistent/gmux: No such file or directory") != NULL,
         ran_dangling = strstr(out, "ran") != NULL;
    unlink(loop);
    unlink(dangling);
    rmdir(dir);
    assert_int_equal(made, 0);
    assert_int_equal(rc_loop, 1);
    assert_true(said_loop);
    assert_false(ran_loop);
    assert_int_equal(rc_dangling, 1);
    assert_true(said_dangling);
    assert_false(ran_dangling);
}

int main(void)
{
    /* An ASan build's shim needs its runtime, which sh does not load first. */
    static char *const extra[] = {"LD_PRELOAD=" GMUX_OTHER_PRELOAD,
                                  "ASAN_OPTIONS=verify_asan_link_order=0", NULL};
    env_extra = extra;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sets_environment_and_returns_status),
        cmocka_unit_test(test_keeps_existing_preload),
        cmocka_unit_test(test_task_settings),
        cmocka_unit_test(test_missing_command),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_templates),
        cmocka_unit_test(test_stats_folder_checked),
        cmocka_unit_test(test_stats_link_checked),
        cmocka_unit_test(test_settings_checked_are_the_shims),
        cmocka_unit_test(test_daemon_waits_for_its_program),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
