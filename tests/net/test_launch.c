/* Tests of `gmux launch` as a user runs it: environment of the ranks, exit
 * status (the first failure's), a rank that cannot be started, timeout,
 * usage errors. */
#include <setjmp.h>
#include <signal.h>
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

static int count(const char *s, const char *needle)
{
    int k = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        k++;
    return k;
}

/* Runs `gmux launch -n n --grace 60 -- sh -c 'd=DIR; body'` with DIR a
 * fresh folder the ranks meet in, then removes DIR/left and DIR. */
static int run_in_dir(const char *n, const char *body, const char *left)
{
    char dir[] = "/tmp/gmux-test-launch-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char script[1024];
    snprintf(script, sizeof(script), "d=%s; %s", dir, body);
    char *argv[] = {GMUX_CLI_PATH, "launch", "-n", (char *)n, "--grace", "60",
                    "--",          "sh",     "-c", script,    NULL};
    int rc = run(argv);
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, left);
    unlink(path);
    rmdir(dir);
    return rc;
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

static void test_exit_status_of_a_rank(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "launch", "-n", "1", "--", "sh", "-c", "exit 6", NULL};
    assert_int_equal(run(argv), 6);
    assert_non_null(strstr(err, "rank 0 exited with status 6"));
    char *killed[] = {
        GMUX_CLI_PATH, "launch", "-n", "2",  "--grace",
        "0.2",         "--",     "sh", "-c", "[ $GMUX_RANK = 1 ] && kill -USR1 $$; exec sleep 30",
        NULL};
    assert_int_equal(run(killed), 128 + 10); /* rank 0 killed by gmux does not count */
    assert_non_null(strstr(err, "rank 1 killed by signal 10"));
    /* the SIGKILL after --grace is gmux's own, said as such (it said "rank 0
     * killed by signal 9", as if something else had killed it) */
    assert_non_null(strstr(err, "rank 0 stopped by gmux (signal 9) after rank 1 failed"));
    assert_int_equal(count(err, "killed by signal"), 1);
}

/* The survivors of a failure killed after --grace do not hide its status
 * (gmux exited 137, its own SIGKILL). */
static void test_grace_kill_keeps_the_failure(void **state)
{
    (void)state;
    char *argv[] = {
        GMUX_CLI_PATH, "launch", "-n", "2",  "--grace",
        "0.2",         "--",     "sh", "-c", "[ $GMUX_RANK = 0 ] && exit 5; exec sleep 100",
        NULL};
    assert_int_equal(run(argv), 5);
    assert_non_null(strstr(err, "rank 0 exited with status 5"));
    assert_non_null(strstr(err, "killing the ranks left after a failure"));
    assert_non_null(strstr(err, "rank 1 stopped by gmux (signal 9) after rank 0 failed"));
    /* with two ranks killed, the second reaped still names rank 0: the
     * first one reaped had taken its place as "the rank that failed" */
    char *three[] = {
        GMUX_CLI_PATH, "launch", "-n", "3",  "--grace",
        "0.2",         "--",     "sh", "-c", "[ $GMUX_RANK = 0 ] && exit 5; exec sleep 100",
        NULL};
    assert_int_equal(run(three), 5);
    assert_int_equal(count(err, "stopped by gmux (signal 9) after rank 0 failed"), 2);
}

/* The first failure gives the status, not a worse one after it: rank 1
 * exits 9 only once rank 0 (exit 5) has been reaped by gmux (its pid gone). */
static void test_first_failure_wins(void **state)
{
    (void)state;
    int rc =
        run_in_dir("2",
                   "if [ $GMUX_RANK = 0 ]; then echo $$ >$d/p.tmp && mv $d/p.tmp $d/p; exit 5; fi;"
                   "while [ ! -s $d/p ]; do sleep 0.05; done; p=$(cat $d/p);"
                   "while kill -0 $p 2>/dev/null; do sleep 0.05; done; exit 9",
                   "p");
    assert_int_equal(rc, 5);
    assert_non_null(strstr(err, "rank 1 exited with status 9"));
}

/* A rank that exits 0 without the BYE of gmux_comm_finalize counts as a
 * death (the others may wait for it): the ranks killed for it must not be
 * the only thing said, the rank and why must be named. With no non-zero
 * status of a rank's own, the kill's is the job's. */
static void test_exit_without_finalize_is_named(void **state)
{
    (void)state;
    char *argv[] = {
        GMUX_CLI_PATH, "launch", "-n", "2",  "--grace",
        "0.2",         "--",     "sh", "-c", "[ $GMUX_RANK = 1 ] && exec sleep 30; exit 0",
        NULL};
    assert_int_equal(run(argv), 128 + 9);
    assert_non_null(strstr(err, "rank 0 exited with status 0 without gmux_comm_finalize"));
    assert_non_null(strstr(err, "a death to the others"));
    /* a job of one rank has no others: nothing to say of its exit 0 */
    char *one[] = {GMUX_CLI_PATH, "launch", "-n", "1", "--", "true", NULL};
    assert_int_equal(run(one), 0);
    assert_string_equal(err, "");
}

/* A rank that cannot be forked (here the N-th fork fails, through an
 * LD_PRELOAD shim) is said, naming it and the error; the ranks started are
 * stopped and reaped, and gmux exits 1 (it waited for ever: the others
 * waited in the rendezvous, and the failed rank counted as not running). */
static void test_fork_failure(void **state)
{
    (void)state;
    static const char *const nth[] = {"1", "3", "4"};
    for (size_t i = 0; i < sizeof(nth) / sizeof(nth[0]); i++) {
        char dir[] = "/tmp/gmux-test-launch-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char script[400], path[64];
        snprintf(path, sizeof(path), "%s/pids", dir);
        snprintf(script, sizeof(script), "echo $$ >>%s; exec sleep 100", path);
        char fail[64];
        snprintf(fail, sizeof(fail), "GMUX_TEST_FORK_FAIL=%s", nth[i]);
        char *env[] = {"LD_PRELOAD=" FORK_FAIL_PATH, fail, "ASAN_OPTIONS=verify_asan_link_order=0",
                       NULL};
        char *argv[] = {GMUX_CLI_PATH, "launch", "-n", "4", "--", "sh", "-c", script, NULL};
        int rc = tproc_capture(argv, env, 30.0, out, sizeof(out), err, sizeof(err));
        int alive = 0, seen = 0;
        FILE *f = fopen(path, "r");
        for (int pid; f && fscanf(f, "%d", &pid) == 1; seen++)
            alive += kill(pid, 0) == 0; /* reaped by gmux: gone, not even a zombie */
        if (f)
            fclose(f);
        unlink(path);
        rmdir(dir);
        /* under ASan and TSan too: their fork() interceptor calls on to the
         * next definition after the program, the shim (fork_fail.c) */
        if (!strstr(err, "fork_fail: fork call"))
            fail_msg("the fork_fail shim was not in effect: %s", err);
        char want[64];
        snprintf(want, sizeof(want), "cannot start rank %d: ", atoi(nth[i]) - 1);
        if (rc != 1 || !strstr(err, want) || !strstr(err, "Resource temporarily unavailable"))
            fail_msg("fork %s failing: status %d, stderr: %s", nth[i], rc, err);
        assert_int_equal(alive, 0);
        assert_true(seen <= atoi(nth[i]) - 1);
        assert_int_equal(count(err, "exited with status"), 0);
        /* the ranks started die of gmux's SIGTERM and are said stopped by gmux;
         * a rank it reached between fork and exec ignored it (the handler
         * gmux's child inherited took it) and lived until the SIGKILL after
         * --grace, 10 s later */
        char stopped[96];
        snprintf(stopped, sizeof(stopped),
                 "stopped by gmux (signal 15) after rank %d could not be started",
                 atoi(nth[i]) - 1);
        assert_int_equal(count(err, stopped), atoi(nth[i]) - 1);
        assert_int_equal(count(err, "killed by signal"), 0);
    }
}

static void test_timeout_kills_the_job(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "launch", "-n",    "2",  "--timeout",
                    "0.5",         "--",     "sleep", "30", NULL};
    assert_int_equal(run(argv), 124);
    assert_non_null(strstr(err, "timed out"));
    assert_non_null(strstr(err, "rank 0 stopped by gmux (signal 9) after the timeout"));
    assert_non_null(strstr(err, "rank 1 stopped by gmux (signal 9) after the timeout"));
    assert_int_equal(count(err, "killed by signal"), 0);
    /* ranks that hang before gmux_comm_init are named as such */
    assert_non_null(strstr(err, "ranks 0-1 never joined the rendezvous"));
}

/* A failed job names the ranks that never joined the rendezvous (here rank
 * 1 exits at once, rank 2 only once rank 0 is done), not those that did:
 * the user sees which rank to look at. Ranks 0 and 3 join (net_rank), hear
 * of rank 1's death and fail by themselves. */
static void test_never_joined_named(void **state)
{
    (void)state;
    char body[512];
    snprintf(body, sizeof(body),
             "case $GMUX_RANK in 1) exit 3;;"
             " 2) while [ ! -e $d/done ]; do sleep 0.05; done; exit 0;;"
             " 0) %s teams; s=$?; touch $d/done; exit $s;; esac; exec %s teams",
             NET_RANK_PATH, NET_RANK_PATH);
    int rc = run_in_dir("4", body, "done");
    assert_int_equal(rc, 3);
    assert_non_null(strstr(err, "gmux launch: ranks 1-2 never joined the rendezvous"));
    assert_int_equal(count(err, "never joined"), 1);
    /* a job that ends well says nothing of it */
    char *ok[] = {GMUX_CLI_PATH, "launch", "-n", "1", "--", "true", NULL};
    assert_int_equal(run(ok), 0);
    assert_null(strstr(err, "never joined"));
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
    /* more hosts than launch holds: said, not the ones past 64 dropped */
    char hosts[65 * 8] = "";
    for (int h = 0; h < 65; h++)
        snprintf(hosts + strlen(hosts), sizeof(hosts) - strlen(hosts), "%sh%d", h ? "," : "", h);
    char *many[] = {GMUX_CLI_PATH, "launch",   "-n", "2",    "--hosts", hosts,
                    "--bind",      "10.0.0.1", "--", "true", NULL};
    assert_int_equal(run(many), 2);
    assert_non_null(
        strstr(err, "option '--hosts' wants at most 64 hosts separated by commas, not 'h0,h1,"));
    char *help[] = {GMUX_CLI_PATH, "launch", "--help", NULL};
    assert_int_equal(run(help), 0);
    assert_non_null(strstr(out, "Usage: gmux launch"));
    char *missing[] = {GMUX_CLI_PATH, "launch", "-n", "1", "--", "/nonexistent/prog", NULL};
    assert_int_equal(run(missing), 127);
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
        cmocka_unit_test(test_exit_status_of_a_rank),
        cmocka_unit_test(test_grace_kill_keeps_the_failure),
        cmocka_unit_test(test_first_failure_wins),
        cmocka_unit_test(test_exit_without_finalize_is_named),
        cmocka_unit_test(test_fork_failure),
        cmocka_unit_test(test_timeout_kills_the_job),
        cmocka_unit_test(test_never_joined_named),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_command_checked_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
