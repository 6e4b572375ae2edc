/* Tests of `gmux launch` as a user runs it: environment of the ranks, exit
 * status (the worst rank's), timeout, usage errors. */
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

static int run(char *const argv[])
{
    return tproc_capture(argv, NULL, 60.0, out, sizeof(out), err, sizeof(err));
}

static void test_environment_of_ranks(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH,
                    "launch",
                    "-n",
                    "3",
                    "--",
                    "sh",
                    "-c",
                    "echo rank=$GMUX_RANK size=$GMUX_SIZE nodes=$GMUX_NNODES boot=$GMUX_BOOTSTRAP",
                    NULL};
    assert_int_equal(run(argv), 0);
    for (int r = 0; r < 3; r++) {
        char want[64];
        snprintf(want, sizeof(want), "rank=%d size=3 nodes=1 boot=127.0.0.1:", r);
        assert_non_null(strstr(out, want));
    }
}

static void test_exit_status_is_the_worst(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "launch", "-n", "3", "--", "sh", "-c", "exit $((GMUX_RANK * 3))",
                    NULL};
    assert_int_equal(run(argv), 6);
    assert_non_null(strstr(err, "rank 2 exited with status 6"));
    char *killed[] = {GMUX_CLI_PATH, "launch", "-n", "2",
                      "--",          "sh",     "-c", "[ $GMUX_RANK = 1 ] && kill -9 $$; exit 0",
                      NULL};
    assert_int_equal(run(killed), 128 + 9);
}

/* A rank that exits 0 without the BYE of gmux_comm_finalize counts as a
 * death (the others may wait for it): the ranks killed for it must not be
 * the only thing said, the rank and why must be named. */
static void test_exit_without_finalize_is_named(void **state)
{
    (void)state;
    char *argv[] = {
        GMUX_CLI_PATH, "launch", "-n", "2",  "--grace",
        "0.2",         "--",     "sh", "-c", "[ $GMUX_RANK = 1 ] && exec sleep 30; exit 0",
        NULL};
    assert_int_equal(run(argv), 128 + 9);
    assert_non_null(strstr(err, "rank 0 exited with status 0 without gmux_comm_finalize"));
}

static void test_timeout_kills_the_job(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "launch", "-n",    "2",  "--timeout",
                    "0.5",         "--",     "sleep", "30", NULL};
    assert_int_equal(run(argv), 124);
    assert_non_null(strstr(err, "timed out"));
}

static void test_usage_errors(void **state)
{
    (void)state;
    char *no_n[] = {GMUX_CLI_PATH, "launch", "--", "true", NULL};
    assert_int_equal(run(no_n), 2);
    assert_non_null(strstr(err, "missing -n"));
    char *bad_n[] = {GMUX_CLI_PATH, "launch", "-n", "zero", "--", "true", NULL};
    assert_int_equal(run(bad_n), 2);
    assert_non_null(strstr(err, "'zero'"));
    char *no_cmd[] = {GMUX_CLI_PATH, "launch", "-n", "2", NULL};
    assert_int_equal(run(no_cmd), 2);
    char *remote[] = {GMUX_CLI_PATH, "launch", "-n", "2", "--hosts", "a,b", "--", "true", NULL};
    assert_int_equal(run(remote), 2); /* remote hosts need --bind: no address is guessed */
    assert_non_null(strstr(err, "--bind"));
    char *help[] = {GMUX_CLI_PATH, "launch", "--help", NULL};
    assert_int_equal(run(help), 0);
    assert_non_null(strstr(out, "Usage: gmux launch"));
    char *missing[] = {GMUX_CLI_PATH, "launch", "-n", "1", "--", "/nonexistent/prog", NULL};
    assert_int_equal(run(missing), 127);
}

static int count(const char *s, const char *needle)
{
    int k = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        k++;
    return k;
}

/* A program that cannot run is said once, before any rank starts, with the
 * shell's status: 127 not found (a path, or a name along PATH), 126 not
 * executable. */
static void test_command_checked_once(void **state)
{
    (void)state;
    char *missing[] = {GMUX_CLI_PATH, "launch", "-n", "3", "--", "/nonexistent/prog", NULL};
    assert_int_equal(run(missing), 127);
    assert_int_equal(count(err, "cannot run '/nonexistent/prog': No such file or directory"), 1);
    assert_int_equal(count(err, "exited with status"), 0); /* no rank was started */
    char *unnamed[] = {GMUX_CLI_PATH, "launch", "-n", "2", "--", "gmux-no-such-program", NULL};
    assert_int_equal(run(unnamed), 127);
    assert_int_equal(count(err, "cannot run"), 1);
    char plain[] = "/tmp/gmux-test-launch-XXXXXX"; /* a file, not executable */
    int fd = mkstemp(plain);
    assert_true(fd >= 0);
    close(fd);
    char *notexec[] = {GMUX_CLI_PATH, "launch", "-n", "2", "--", plain, NULL};
    int rc = run(notexec);
    unlink(plain);
    assert_int_equal(rc, 126);
    assert_int_equal(count(err, "Permission denied"), 1);
    char *dir[] = {GMUX_CLI_PATH, "launch", "-n", "2", "--", "/tmp", NULL};
    assert_int_equal(run(dir), 126);
    char *path[] = {GMUX_CLI_PATH, "launch", "-n", "2", "--", "true", NULL}; /* found along PATH */
    assert_int_equal(run(path), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_environment_of_ranks),
        cmocka_unit_test(test_exit_status_is_the_worst),
        cmocka_unit_test(test_exit_without_finalize_is_named),
        cmocka_unit_test(test_timeout_kills_the_job),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_command_checked_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
