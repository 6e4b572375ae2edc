/* Unit tests of the client library (src/daemon/client.c): what it says when
 * it goes local. A daemon that ends the connection before answering REGISTER
 * (another protocol version, or no room) is one warning per client, not one
 * per retry; a REFUSED in another protocol version names the versions; and
 * the reason of a connection's end says end of file from a receive error;
 * a connection cut part-way through a PLAN, and a daemon killed before it
 * answered REGISTER. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

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

static char dir[] = "/tmp/gmux-cll-XXXXXX";
static char path[128];
static tdmn_t fake;

/* The lines the client logged: warnings counted, the last kept. */
static struct {
    int warnings;
    char last_warning[256];
    char text[8192]; /* every line, one after the other */
} seen;

static void capture(com_log_level_t level, com_log_subsys_t subsys, const char *line, void *arg)
{
    (void)subsys;
    (void)arg;
    if (level == COM_LOG_WARN) {
        seen.warnings++;
        snprintf(seen.last_warning, sizeof(seen.last_warning), "%s", line);
    }
    size_t used = strlen(seen.text);
    snprintf(seen.text + used, sizeof(seen.text) - used, "%s\n", line);
}

static void capture_start(void)
{
    memset(&seen, 0, sizeof(seen));
    com_log_set_sink(capture, NULL);
}

static int restore(void **state)
{
    (void)state;
    com_log_set_sink(NULL, NULL);
    (void)com_log_configure(NULL, NULL, 0);
    tdmn_kill(&fake);
    return 0;
}

/* Calls dmn_client_poll until the client has begun `connections`
 * connections (each begins and ends one epoch) or 20 s passed. */
static void retry_until(dmn_client_t *c, uint64_t connections)
{
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (dmn_client_epoch(c) < 2 * connections && !com_deadline_passed(deadline)) {
        (void)dmn_client_poll(c);
        com_clock_sleep_ns(COM_NS_PER_MS);
    }
    assert_true(dmn_client_epoch(c) >= 2 * connections);
}

static dmn_client_t *open_client(void)
{
    dmn_client_opts_t o = {path, "lonely", DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL,
                           NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    return c;
}

/* A daemon that comes after the client opened and refuses it (no room): the
 * task runs ungated, retries, and is told once. */
static void test_refused_warns_once(void **state)
{
    (void)state;
    static uint8_t refused[DMN_PROTO_MAX_MSG];
    size_t n = dmn_proto_encode_refused(refused, sizeof(refused), 1, GMUX_ERR_CAPACITY, "full");
    assert_true(n > 0);
    capture_start();
    dmn_client_t *c = open_client(); /* no daemon yet: local */
    assert_true(dmn_client_is_local(c));
    assert_int_equal(tdmn_start_closer(&fake, path, refused, n), 0);
    retry_until(c, 4);
    com_log_set_sink(NULL, NULL);
    dmn_client_close(c);
    assert_true(tdmn_end(&fake) >= TDMN_CLOSER_BASE + 4);
    assert_int_equal(seen.warnings, 1);
    assert_non_null(strstr(seen.last_warning, "refused 'lonely': full"));
}

/* The daemon takes the REGISTER and closes: every retry ends alike, and the
 * client warns once (the task runs ungated; the default level is warn). */
static void test_closed_before_register_warns_once(void **state)
{
    (void)state;
    assert_int_equal(tdmn_start_closer(&fake, path, NULL, 0), 0);
    capture_start();
    dmn_client_t *c = open_client();
    assert_true(dmn_client_is_local(c));
    retry_until(c, 5);
    com_log_set_sink(NULL, NULL);
    dmn_client_close(c);
    int code = tdmn_end(&fake);
    assert_true(code >= TDMN_CLOSER_BASE + 5);
    assert_int_equal(seen.warnings, 1);
    assert_non_null(strstr(seen.last_warning, "before answering REGISTER"));
}

/* A daemon of another version answers with a REFUSED in its own version:
 * the client says which versions, once. */
static void test_other_version_named(void **state)
{
    (void)state;
    static uint8_t refused[DMN_PROTO_MAX_MSG];
    size_t n = dmn_proto_encode_refused(refused, sizeof(refused), 1, GMUX_ERR_VERSION,
                                        "protocol version 5; gmuxd speaks 10");
    assert_true(n > 0);
    refused[4] = 10; /* little-endian version field */
    assert_int_equal(tdmn_start_closer(&fake, path, refused, n), 0);
    capture_start();
    dmn_client_t *c = open_client();
    assert_true(dmn_client_is_local(c));
    retry_until(c, 3);
    com_log_set_sink(NULL, NULL);
    dmn_client_close(c);
    assert_true(tdmn_end(&fake) >= TDMN_CLOSER_BASE + 3);
    assert_int_equal(seen.warnings, 1);
    assert_non_null(strstr(seen.last_warning, "version 10"));
}

/* The script: hangs up once told (what the client sent since REGISTER unread). */
static int hang_up_when_told(int fd, int ctl, void *arg)
{
    (void)fd;
    (void)arg;
    char b;
    return read(ctl, &b, 1) == 1 ? 0 : 13;
}

static void end_and_expect(int unread, const char *reason)
{
    char err[64];
    assert_int_equal(com_log_configure("daemon=info", err, sizeof(err)), GMUX_OK);
    assert_int_equal(tdmn_start(&fake, path, 7, hang_up_when_told, NULL), 0);
    dmn_client_t *c = open_client();
    assert_false(dmn_client_is_local(c));
    if (unread) { /* bytes the daemon never reads: its close resets the connection */
        dmn_msg_stats_t st = {0};
        assert_int_equal(dmn_client_report(c, &st), GMUX_OK);
    }
    assert_int_equal(tdmn_go(&fake), 0);
    assert_int_equal(tdmn_end(&fake), 0);
    capture_start();
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (!dmn_client_is_local(c) && !com_deadline_passed(deadline))
        (void)dmn_client_poll(c);
    com_log_set_sink(NULL, NULL);
    (void)com_log_configure(NULL, NULL, 0);
    assert_true(dmn_client_is_local(c));
    dmn_client_close(c);
    if (!strstr(seen.text, reason))
        fprintf(stderr, "expected '%s' in:\n%s", reason, seen.text);
    assert_non_null(strstr(seen.text, reason));
}

static void test_end_of_file_named(void **state)
{
    (void)state;
    end_and_expect(0, "local mode (closed by gmuxd)");
}

static void test_receive_error_named(void **state)
{
    (void)state;
    end_and_expect(1, "local mode (receive error: ");
}

/* What the client's callbacks saw. */
static struct {
    uint32_t ranges, ends, read_ends;
    uint64_t first_base;
} orders;

static void on_plan(void *arg, uint64_t seq, dmn_plan_kind_t kind, const dmn_range_t *r, uint32_t n)
{
    (void)arg, (void)seq, (void)kind;
    if (orders.ranges == 0 && n)
        orders.first_base = r[0].base;
    orders.ranges += n;
}

static void on_plan_end(void *arg, uint64_t seq, dmn_plan_kind_t kind, uint32_t n)
{
    (void)arg, (void)seq, (void)kind, (void)n;
    orders.ends++;
}

static void on_read_end(void *arg)
{
    (void)arg;
    orders.read_ends++;
}

/* The script: one whole PLAN and 20 bytes of a second, then the end of the
 * connection, then 'd' on ctl. */
static int plan_then_cut(int fd, int ctl, void *arg)
{
    (void)arg;
    static uint8_t buf[2 * DMN_PROTO_MAX_MSG];
    dmn_range_t r[2] = {{1 << 20, 4096}, {2 << 20, 4096}};
    char b;
    if (read(ctl, &b, 1) != 1)
        return 20;
    size_t a =
        dmn_proto_encode_ranges(buf, DMN_PROTO_MAX_MSG, 2, DMN_MSG_PLAN, DMN_PLAN_FILL, 1, r, 2);
    size_t z = dmn_proto_encode_ranges(buf + a, DMN_PROTO_MAX_MSG, 3, DMN_MSG_PLAN, DMN_PLAN_FILL,
                                       1, r, 2);
    if (a == 0 || z <= 20 || write(fd, buf, a + 20) != (ssize_t)(a + 20))
        return 21;
    close(fd);
    return write(ctl, "d", 1) == 1 ? 0 : 22;
}

/* A daemon that ends the connection part-way through a PLAN (it died while
 * sending): the whole message before is handed over, nothing of the cut one,
 * and no on_read_end (the connection's orders are void, its epoch over); the
 * bytes of the cut message do not reach the next connection, whose daemon
 * registers the client as usual. */
static void test_cut_mid_plan(void **state)
{
    (void)state;
    memset(&orders, 0, sizeof(orders));
    assert_int_equal(tdmn_start(&fake, path, 7, plan_then_cut, NULL), 0);
    dmn_client_opts_t o = {path, "cut",       DMN_CLASS_BATCH, 0,    0,   on_plan,
                           NULL, on_plan_end, on_read_end,     NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    assert_false(dmn_client_is_local(c));
    uint64_t epoch = dmn_client_epoch(c);
    uint32_t read_ends = orders.read_ends; /* REGISTERED's read, if any */
    assert_int_equal(tdmn_go(&fake), 0);
    char b;
    assert_int_equal(read(fake.ctl, &b, 1), 1); /* all written, and closed */
    assert_int_equal(tdmn_end(&fake), 0);
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (!dmn_client_is_local(c) && !com_deadline_passed(deadline))
        (void)dmn_client_poll(c);
    assert_true(dmn_client_is_local(c));
    assert_true(dmn_client_epoch(c) > epoch);
    assert_int_equal(orders.ranges, 2);
    assert_int_equal(orders.first_base, 1 << 20);
    assert_int_equal(orders.ends, 1);
    assert_int_equal(orders.read_ends, read_ends);
    assert_int_equal(tdmn_start(&fake, path, 8, hang_up_when_told, NULL), 0);
    deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (dmn_client_is_local(c) && !com_deadline_passed(deadline))
        (void)dmn_client_poll(c);
    assert_int_equal(dmn_client_task_id(c), 8);
    assert_int_equal(orders.ranges, 2);
    dmn_client_close(c);
    assert_int_equal(tdmn_go(&fake), 0);
    assert_int_equal(tdmn_end(&fake), 0);
}

/* gmuxd killed while the client waits for REGISTERED: the client runs
 * ungated and says so once, in words that allow for a daemon that stopped
 * (they named only a daemon that would not have the task: another
 * protocol version, or no room, "gmuxd's log says why"). */
static void test_killed_mid_register(void **state)
{
    (void)state;
    capture_start();
    dmn_client_t *c = open_client(); /* no daemon: local */
    assert_int_equal(tdmn_start_silent(&fake, path), 0);
    uint64_t deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (dmn_client_fd(c) < 0 && !com_deadline_passed(deadline))
        (void)dmn_client_poll(c); /* connected, REGISTER sent */
    assert_true(dmn_client_fd(c) >= 0);
    tdmn_kill(&fake);
    deadline = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (dmn_client_fd(c) >= 0 && !com_deadline_passed(deadline))
        (void)dmn_client_poll(c);
    com_log_set_sink(NULL, NULL);
    assert_true(dmn_client_is_local(c));
    dmn_client_close(c);
    assert_int_equal(seen.warnings, 1);
    if (!strstr(seen.last_warning, "gmuxd stopped"))
        fail_msg("the warning does not allow for a daemon that stopped: %s", seen.last_warning);
}

int main(void)
{
    tdir_make_for_socket(dir, path, sizeof(path));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_closed_before_register_warns_once, restore),
        cmocka_unit_test_teardown(test_other_version_named, restore),
        cmocka_unit_test_teardown(test_refused_warns_once, restore),
        cmocka_unit_test_teardown(test_end_of_file_named, restore),
        cmocka_unit_test_teardown(test_receive_error_named, restore),
        cmocka_unit_test_teardown(test_cut_mid_plan, restore),
        cmocka_unit_test_teardown(test_killed_mid_register, restore),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
