/* Unit tests of the client library (src/daemon/client.c) under a wedged
 * gmuxd, one that accepts and reads but never answers REGISTER: the client
 * says so once per outage (a warning: the task runs ungated), then only at
 * debug level however many times it retries, until a registration succeeds;
 * the next outage is worth a warning again. A task running for hours under
 * such a daemon logged a line at every retry.
 *
 * This binary compiles client.c itself with a REGISTER wait of 100 ms
 * (DMN_CLIENT_REGISTER_WAIT_MS, tests/daemon/CMakeLists.txt) so that a
 * retry costs a tenth of a second, not two. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "daemon/client.h"
#include "fake_daemon.h"
#include "tdir.h"

static char dir[] = "/tmp/gmux-clq-XXXXXX";
static char path[128];
static tdmn_t fake;

/* What the client logged about unanswered REGISTERs, by level. */
static struct {
    int warnings; /* every warning */
    int no_answer_warn, no_answer_info, no_answer_debug;
} seen;

static void capture(com_log_level_t level, com_log_subsys_t subsys, const char *line, void *arg)
{
    (void)subsys;
    (void)arg;
    seen.warnings += level <= COM_LOG_WARN;
    if (!strstr(line, "REGISTER"))
        return;
    if (level <= COM_LOG_WARN)
        seen.no_answer_warn++;
    else if (level == COM_LOG_INFO)
        seen.no_answer_info++;
    else
        seen.no_answer_debug++;
}

/* Every level down to debug reaches the sink: a line demoted shows as one. */
static void capture_start(void)
{
    char err[64];
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(com_log_configure("daemon=debug", err, sizeof(err)), GMUX_OK);
    com_log_set_sink(capture, NULL);
}

static void capture_stop(void)
{
    com_log_set_sink(NULL, NULL);
    (void)com_log_configure(NULL, NULL, 0);
}

static int restore(void **state)
{
    (void)state;
    capture_stop();
    tdmn_kill(&fake);
    return 0;
}

/* Calls dmn_client_poll until the client has begun `connections` more
 * connections than when called (each begins and ends one epoch) or 20 s. */
static void retry(dmn_client_t *c, uint64_t connections)
{
    uint64_t until = dmn_client_epoch(c) + 2 * connections;
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (dmn_client_epoch(c) < until && !com_deadline_passed(deadline)) {
        (void)dmn_client_poll(c);
        com_clock_sleep_ns(COM_NS_PER_MS);
    }
    assert_true(dmn_client_epoch(c) >= until);
}

static dmn_client_t *open_client(void)
{
    dmn_client_opts_t o = {path, "wedged", DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL,
                           NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    return c;
}

/* One outage: the open's try and four retries, none answered. */
static void silent_outage(dmn_client_t *c)
{
    assert_int_equal(tdmn_start_silent(&fake, path), 0);
    retry(c, 5);
    assert_true(dmn_client_is_local(c));
    while (dmn_client_fd(c) >= 0) /* the try under way given up too */
        (void)dmn_client_poll(c);
    assert_true(tdmn_end(&fake) >= TDMN_CLOSER_BASE + 5);
}

static void test_no_answer_warns_once(void **state)
{
    (void)state;
    capture_start();
    assert_int_equal(tdmn_start_silent(&fake, path), 0);
    dmn_client_t *c = open_client(); /* waits out its first REGISTER */
    assert_true(dmn_client_is_local(c));
    retry(c, 5);
    assert_true(dmn_client_is_local(c));
    capture_stop();
    dmn_client_close(c);
    assert_true(tdmn_end(&fake) >= TDMN_CLOSER_BASE + 6);
    print_message("lines on unanswered REGISTERs: %d warn, %d info, %d debug\n",
                  seen.no_answer_warn, seen.no_answer_info, seen.no_answer_debug);
    assert_int_equal(seen.warnings, 1);
    assert_int_equal(seen.no_answer_warn, 1);
    assert_int_equal(seen.no_answer_info, 0); /* each retry logged at info before */
    assert_true(seen.no_answer_debug >= 5);   /* still there for whoever asks */
}

/* The script: registers (the fake did), says so on ctl, then hangs up once
 * told. */
static int hang_up_when_told(int fd, int ctl, void *arg)
{
    (void)fd;
    (void)arg;
    char b;
    if (write(ctl, "a", 1) != 1)
        return 14;
    return read(ctl, &b, 1) == 1 ? 0 : 13;
}

/* Starts a fake gmuxd that registers the client as task 5 (it takes one
 * registration), and has the client register with it. The client gives a
 * REGISTER up 100 ms after sending it, at the first poll past that; so the
 * test polls it until it has connected (and sent REGISTER), then not again
 * until the fake says it answered: the next poll reads REGISTERED however
 * long the fake took. Until 2026-12-03 the test polled all along, and on a
 * loaded machine the fake could answer after the wait at each of ten starts
 * (1 run in 10 failed so at nice 19 beside four busy loops on one core).
 * Should the client give a try up before the test sees it connected (the
 * test itself kept off the processor for 100 ms), the fake would take that
 * abandoned connection: then it is started again. */
static void register_with_fake(dmn_client_t *c)
{
    for (int start = 0; start < 10; start++) {
        uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
        while (dmn_client_fd(c) >= 0 && !com_deadline_passed(deadline))
            (void)dmn_client_poll(c); /* a try at the fake killed below, ended */
        assert_true(dmn_client_fd(c) < 0);
        assert_int_equal(tdmn_start(&fake, path, 5, hang_up_when_told, NULL), 0);
        uint64_t epoch = dmn_client_epoch(c);
        while (dmn_client_fd(c) < 0 && !com_deadline_passed(deadline))
            (void)dmn_client_poll(c);
        assert_true(dmn_client_fd(c) >= 0);
        if (dmn_client_epoch(c) == epoch + 1) { /* one connection, and still open */
            struct pollfd pf = {fake.ctl, POLLIN, 0};
            char b;
            assert_int_equal(poll(&pf, 1, 20000), 1);
            assert_int_equal(read(fake.ctl, &b, 1), 1);
            assert_int_equal(b, 'a');
            (void)dmn_client_poll(c); /* REGISTERED waits in the socket */
            assert_false(dmn_client_is_local(c));
            return;
        }
        tdmn_kill(&fake);
    }
    fail_msg("the client gave up its first try at each of 10 fake gmuxds");
}

/* Outage, registration, outage: two warnings, one per outage. */
static void test_warns_again_after_registering(void **state)
{
    (void)state;
    capture_start();
    dmn_client_t *c = open_client(); /* no daemon: local, nothing said */
    assert_true(dmn_client_is_local(c));
    silent_outage(c);
    assert_int_equal(seen.no_answer_warn, 1);
    register_with_fake(c);
    assert_int_equal(dmn_client_task_id(c), 5);
    assert_int_equal(tdmn_go(&fake), 0);
    assert_int_equal(tdmn_end(&fake), 0);
    silent_outage(c);
    capture_stop();
    dmn_client_close(c);
    assert_int_equal(seen.warnings, 2);
    assert_int_equal(seen.no_answer_warn, 2);
    assert_int_equal(seen.no_answer_info, 0);
}

int main(void)
{
    tdir_make_for_socket(dir, path, sizeof(path));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_no_answer_warns_once, restore),
        cmocka_unit_test_teardown(test_warns_again_after_registering, restore),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
