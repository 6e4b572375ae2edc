/* Tests of the scripted daemon helper (fake_daemon.c): it registers a real
 * client with the task id given, runs the script on that connection, passes
 * bytes both ways on ctl, reports the script's exit code or why it never ran,
 * and leaves no socket, lock file or child behind; the silent and closing
 * daemons count every REGISTER sent before they were ended. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/client.h"
#include "daemon/endpoint.h"
#include "fake_daemon.h"
#include "msg_io.h"
#include "tdir.h"

static char dir[] = "/tmp/gmux-tdmn-XXXXXX";
static char path[128], lock[140];
static tdmn_t fake;

static int kill_fake(void **state)
{
    (void)state;
    tdmn_kill(&fake);
    return 0;
}

/* Waits for the go byte, reads one STATS, sends its kernels back on ctl. */
static int echo_script(int fd, int ctl, void *arg)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    dmn_msg_t m;
    char b;
    if (read(ctl, &b, 1) != 1 || b != 'g')
        return 20;
    if (tmsg_read(fd, buf, &m) != 0 || m.hdr.type != DMN_MSG_STATS)
        return 21;
    uint64_t k = m.u.stats.kernels;
    if (write(ctl, &k, sizeof(k)) != (ssize_t)sizeof(k))
        return 22;
    return *(int *)arg;
}

static void test_script_runs_registered(void **state)
{
    (void)state;
    int code = 7;
    assert_int_equal(tdmn_start(&fake, path, 42, echo_script, &code), 0);
    assert_true(fake.pid > 0);
    assert_int_equal(access(path, F_OK), 0);
    dmn_client_opts_t o = {path, "tdmn", DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    assert_false(dmn_client_is_local(c));
    assert_int_equal(dmn_client_task_id(c), 42);
    dmn_msg_stats_t st = {.kernels = 1234};
    assert_int_equal(dmn_client_report(c, &st), GMUX_OK);
    assert_int_equal(tdmn_go(&fake), 0);
    uint64_t k = 0;
    assert_int_equal(read(fake.ctl, &k, sizeof(k)), (ssize_t)sizeof(k));
    assert_int_equal(k, 1234);
    assert_int_equal(tdmn_end(&fake), 7); /* the script's value */
    assert_int_equal(fake.pid, 0);
    assert_int_equal(fake.ctl, -1);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_not_equal(access(lock, F_OK), 0);
    dmn_client_close(c);
}

static int never_script(int fd, int ctl, void *arg)
{
    (void)fd, (void)ctl, (void)arg;
    return 30;
}

/* A peer that hangs up without registering: the script never runs. */
static void test_no_register(void **state)
{
    (void)state;
    assert_int_equal(tdmn_start(&fake, path, 1, never_script, NULL), 0);
    int fd;
    assert_int_equal(dmn_endpoint_connect_nowait(path, &fd), GMUX_OK);
    close(fd);
    assert_int_equal(tdmn_end(&fake), TDMN_ERR_REGISTER);
}

/* Reads ctl until the test closes it: 0 then. */
static int wait_script(int fd, int ctl, void *arg)
{
    (void)fd, (void)arg;
    char b;
    while (read(ctl, &b, 1) == 1)
        ;
    return 0;
}

/* A test that fails half-way: the teardown kills the child and cleans up. */
static void test_kill_running(void **state)
{
    (void)state;
    assert_int_equal(tdmn_start(&fake, path, 1, wait_script, NULL), 0);
    dmn_client_opts_t o = {path, "tdmn", DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    assert_false(dmn_client_is_local(c));
    tdmn_kill(&fake);
    assert_int_equal(fake.pid, 0);
    assert_int_equal(fake.ctl, -1);
    assert_int_not_equal(access(path, F_OK), 0);
    tdmn_kill(&fake); /* twice: nothing */
    dmn_client_close(c);
}

/* Connects n times to path, sending REGISTER on each and hanging up: what a
 * client that gives each try up does. */
static void register_and_leave(int n)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    dmn_msg_register_t reg = {1, DMN_CLASS_BATCH, 0, 0, 0, "leaver"};
    size_t len = dmn_proto_encode_register(buf, sizeof(buf), 1, &reg);
    for (int i = 0; i < n; i++) {
        int fd;
        assert_int_equal(dmn_endpoint_connect_nowait(path, &fd), GMUX_OK);
        assert_int_equal(tmsg_write_all(fd, buf, len), 0);
        close(fd);
    }
}

/* Ends the silent or closing daemon with the test's end of ctl closed while
 * the child is stopped (a child the scheduler kept from running): it wakes to
 * connections still queued and ctl ended at once. */
static int end_stopped(void)
{
    int st;
    if (kill(fake.pid, SIGSTOP) != 0 || waitpid(fake.pid, &st, WUNTRACED) != fake.pid ||
        !WIFSTOPPED(st))
        return -1;
    register_and_leave(3);
    close(fake.ctl);
    fake.ctl = -1;
    if (kill(fake.pid, SIGCONT) != 0)
        return -1;
    return tdmn_end(&fake);
}

/* Every REGISTER sent before tdmn_end counts, those the child had not yet
 * taken when ctl ended included (it reported 100: none, and
 * test_client_quiet failed on a loaded machine). */
static void test_queued_registers_counted(void **state)
{
    (void)state;
    static uint8_t refused[DMN_PROTO_MAX_MSG];
    size_t n = dmn_proto_encode_refused(refused, sizeof(refused), 1, GMUX_ERR_CAPACITY, "full");
    assert_int_equal(tdmn_start_silent(&fake, path), 0);
    register_and_leave(2); /* sent while it runs */
    assert_int_equal(end_stopped(), TDMN_CLOSER_BASE + 5);
    assert_int_equal(tdmn_start_closer(&fake, path, refused, n), 0);
    assert_int_equal(end_stopped(), TDMN_CLOSER_BASE + 3);
    assert_int_not_equal(access(path, F_OK), 0);
}

/* A path it cannot listen on: -1, no child left. */
static void test_start_fails(void **state)
{
    (void)state;
    char file[160], bad[200];
    snprintf(file, sizeof(file), "%s/file", dir);
    FILE *f = fopen(file, "w"); /* a file where its directory should be */
    assert_non_null(f);
    fclose(f);
    snprintf(bad, sizeof(bad), "%s/d.sock", file);
    assert_int_equal(tdmn_start(&fake, bad, 1, never_script, NULL), -1);
    assert_int_equal(fake.pid, 0);
    assert_int_equal(fake.ctl, -1);
}

int main(void)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/d.sock", dir);
    snprintf(lock, sizeof(lock), "%s.lock", path);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_script_runs_registered, kill_fake),
        cmocka_unit_test_teardown(test_no_register, kill_fake),
        cmocka_unit_test_teardown(test_kill_running, kill_fake),
        cmocka_unit_test_teardown(test_start_fails, kill_fake),
        cmocka_unit_test_teardown(test_queued_registers_counted, kill_fake),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
