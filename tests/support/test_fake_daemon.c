/* Tests of the scripted daemon helper (fake_daemon.c): it registers a real
 * client with the task id given, runs the script on that connection, passes
 * bytes both ways on ctl, reports the script's exit code or why it never ran,
 * and leaves no socket, lock file or child behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
