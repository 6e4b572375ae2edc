/* Tests of the multi-process helper itself: exit codes, signals, timeouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <signal.h>
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tproc.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_exit_codes_collected(void **state)
{
    (void)state;
    char *const a[] = {"true", NULL};
    char *const b[] = {"sh", "-c", "exit 3", NULL};
    char *const c[] = {"sh", "-c", "kill -TERM $$", NULL};
    char *const d[] = {"/nonexistent/program", NULL};
    char *const *const argvs[] = {a, b, c, d};
    int st[4];
    int bad = tproc_run_all(4, argvs, 10.0, st);
    assert_int_equal(st[0], 0);
    assert_int_equal(st[1], 3);
    assert_int_equal(st[2], 128 + SIGTERM);
    assert_int_equal(st[3], 127);
    assert_int_equal(bad, 3);
}

/* The timeout of the tests whose one child hangs: long enough for the others
 * (`true`, a return, an echo) to finish on a loaded machine (0.3 s failed
 * there once), short against the hanging child's 30 s. */
#define TIMEOUT_S 2.0

static void test_timeout_kills_whole_group(void **state)
{
    (void)state;
    /* The child starts a grandchild that would outlive it; both must die. */
    char *const a[] = {"sh", "-c", "sleep 30 & sleep 30", NULL};
    char *const b[] = {"true", NULL};
    char *const *const argvs[] = {a, b};
    int st[2];
    double t0 = now_s();
    int bad = tproc_run_all(2, argvs, TIMEOUT_S, st);
    double dt = now_s() - t0;
    assert_int_equal(st[0], TPROC_TIMED_OUT);
    assert_int_equal(st[1], 0);
    assert_int_equal(bad, 1);
    assert_true(dt < 20.0); /* not the sleeps' 30 s */
}

static int child_fn(int index, void *arg)
{
    int *codes = arg;
    if (codes[index] < 0)
        pause(); /* hangs until killed */
    return codes[index];
}

static void test_fork_all(void **state)
{
    (void)state;
    int codes[3] = {0, 9, -1};
    int st[3];
    int bad = tproc_fork_all(3, child_fn, codes, TIMEOUT_S, st);
    assert_int_equal(st[0], 0);
    assert_int_equal(st[1], 9);
    assert_int_equal(st[2], TPROC_TIMED_OUT);
    assert_int_equal(bad, 2);
}

static void test_capture(void **state)
{
    (void)state;
    char out[64], err[64];
    char *const argv[] = {"sh", "-c", "echo hello; echo oops >&2; echo \"$TPROC_X\"; exit 4", NULL};
    char env[] = "TPROC_X=from-env";
    char *const extra[] = {env, NULL};
    int st = tproc_capture(argv, extra, 10.0, out, sizeof(out), err, sizeof(err));
    assert_int_equal(st, 4);
    assert_string_equal(out, "hello\nfrom-env\n");
    assert_string_equal(err, "oops\n");
}

static void test_capture_truncates_and_times_out(void **state)
{
    (void)state;
    char out[8], err[8];
    char *const argv[] = {"sh", "-c", "echo 0123456789abcdef; sleep 30", NULL};
    int st = tproc_capture(argv, NULL, TIMEOUT_S, out, sizeof(out), err, sizeof(err));
    assert_int_equal(st, TPROC_TIMED_OUT);
    assert_string_equal(out, "0123456");
    assert_string_equal(err, "");
}

static void test_capture_sub_and_json_num(void **state)
{
    (void)state;
    char out[256], err[256];
    const char *args[] = {"{\"a\": 12.5, \"b\": -3}", NULL};
    assert_int_equal(
        tproc_capture_sub("/bin/echo", "-n", args, 10.0, out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "{\"a\": 12.5, \"b\": -3}");
    assert_true(tproc_json_num(out, "\"a\": ") == 12.5);
    assert_true(tproc_json_num(out, "\"b\": ") == -3.0);
    assert_true(isnan(tproc_json_num(out, "\"c\": ")));
}

static void test_reap(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(3);
    assert_int_equal(tproc_reap(&pid), 3);
    assert_int_equal(pid, 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pause();
        _exit(0);
    }
    kill(pid, SIGTERM);
    assert_int_equal(tproc_reap(&pid), 128 + SIGTERM);
    assert_int_equal(tproc_reap(&pid), TPROC_NOT_RUN); /* pid 0: none */
}

static void test_kill_reap(void **state)
{
    (void)state;
    pid_t none = 0;
    tproc_kill_reap(&none); /* nothing to do */
    assert_int_equal(none, 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pause(); /* until killed */
        _exit(0);
    }
    tproc_kill_reap(&pid);
    assert_int_equal(pid, 0);
    /* reaped: no child of this process is left to wait for */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes_collected),
        cmocka_unit_test(test_timeout_kills_whole_group),
        cmocka_unit_test(test_fork_all),
        cmocka_unit_test(test_capture),
        cmocka_unit_test(test_capture_truncates_and_times_out),
        cmocka_unit_test(test_capture_sub_and_json_num),
        cmocka_unit_test(test_reap),
        cmocka_unit_test(test_kill_reap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
