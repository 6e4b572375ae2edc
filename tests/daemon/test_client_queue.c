/* Unit tests of the client library (src/daemon/client.c): what it does when
 * the daemon stops reading its socket, against a scripted daemon (a forked
 * child speaking the protocol) that reads only when the test says so. */
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
#include "msg_io.h"
#include "tdir.h"

static char dir[] = "/tmp/gmux-clq-XXXXXX";
static char path[128];
static tdmn_t fake;

enum { REPORTS = 1000 }; /* far more than a Unix socket buffers: the rest waits */

/* The script: reads nothing until a byte comes on ctl (never if the test
 * closes it first); then reads the client's messages in order and writes
 * back on ctl how many STATS came before the first PENDING and that
 * PENDING's request number; then reads until the client hangs up. */
static int reads_when_told(int fd, int ctl, void *arg)
{
    (void)arg;
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    dmn_msg_t m;
    char b;
    if (read(ctl, &b, 1) != 1) /* told never to read */
        return 0;
    unsigned long long counts[2] = {0, 0};
    while (tmsg_read(fd, buf, &m) == 0 && m.hdr.type != DMN_MSG_PENDING)
        counts[0] += m.hdr.type == DMN_MSG_STATS;
    if (m.hdr.type != DMN_MSG_PENDING)
        return 13;
    counts[1] = m.u.ranges.seq;
    if (write(ctl, counts, sizeof(counts)) != (ssize_t)sizeof(counts))
        return 14;
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    return 0;
}

static int kill_leftover_fake(void **state)
{
    (void)state;
    com_log_set_sink(NULL, NULL);
    tdmn_kill(&fake);
    return 0;
}

static dmn_client_t *open_registered(void)
{
    dmn_client_opts_t o = {path, "queued", DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL,
                           NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    assert_false(dmn_client_is_local(c));
    return c;
}

/* Sends REPORTS counters and then a PENDING, more than the socket takes. */
static void flood(dmn_client_t *c)
{
    dmn_msg_stats_t st = {0};
    for (int i = 0; i < REPORTS; i++) {
        st.kernels = (uint64_t)i;
        assert_int_equal(dmn_client_report(c, &st), GMUX_OK);
    }
    dmn_range_t r = {1u << 21, 4096};
    assert_int_equal(dmn_client_pending(c, 1, &r, 1), GMUX_OK);
}

/* A daemon that does not read for a moment (busy, scheduled out) while the
 * client's socket is full: each call waited up to 2 s for room (the shim's
 * launch path too, and its watcher thread holding the gate's lock) and then
 * gave the daemon up (local mode, registration lost). Now what the socket does
 * not take waits in the client, in order, and goes out as the daemon reads:
 * the calls return at once and the daemon gets every message. */
static void test_full_socket_queues(void **state)
{
    (void)state;
    assert_int_equal(tdmn_start(&fake, path, 5, reads_when_told, NULL), 0);
    dmn_client_t *c = open_registered();
    flood(c);
    assert_false(dmn_client_is_local(c)); /* gave the daemon up, after 2 s */
    assert_int_equal(tdmn_go(&fake), 0);
    unsigned long long counts[2];
    struct pollfd pf = {fake.ctl, POLLIN, 0};
    for (int i = 0; i < 20000 && poll(&pf, 1, 1) == 0; i++)
        (void)dmn_client_poll(c); /* sends what waits, as the watcher thread does */
    assert_int_equal(read(fake.ctl, counts, sizeof(counts)), (ssize_t)sizeof(counts));
    assert_int_equal(counts[0], REPORTS); /* all of them, in order, before the PENDING */
    assert_int_equal(counts[1], 1);
    assert_false(dmn_client_is_local(c));
    dmn_client_close(c);
    assert_int_equal(tdmn_end(&fake), 0);
}

/* Warnings logged that say the client dropped messages. */
static int dropped_warnings;

static void count_drops(com_log_level_t level, com_log_subsys_t subsys, const char *line, void *arg)
{
    (void)subsys, (void)arg;
    dropped_warnings += level <= COM_LOG_WARN && strstr(line, "dropped") != NULL;
}

/* A daemon that never reads again (stopped) loses the client all the same:
 * once nothing was sent for 2 s while messages wait, a call goes local. The
 * messages that waited are lost with the connection: a warning says so (it
 * was an info line, below the default level: they went silently). */
static void test_stopped_daemon_given_up(void **state)
{
    (void)state;
    assert_int_equal(tdmn_start(&fake, path, 5, reads_when_told, NULL), 0);
    dmn_client_t *c = open_registered();
    dropped_warnings = 0;
    com_log_set_sink(count_drops, NULL);
    flood(c);
    uint64_t deadline = com_deadline_after_ns(30 * COM_NS_PER_S);
    while (!dmn_client_is_local(c) && !com_deadline_passed(deadline)) {
        (void)dmn_client_poll(c);
        com_clock_sleep_ns(COM_NS_PER_MS);
    }
    com_log_set_sink(NULL, NULL);
    assert_true(dmn_client_is_local(c));
    assert_int_equal(dropped_warnings, 1);
    dmn_client_close(c);
    assert_int_equal(tdmn_end(&fake), 0); /* ctl closed: the script stops waiting */
}

int main(void)
{
    tdir_make_for_socket(dir, path, sizeof(path));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_full_socket_queues, kill_leftover_fake),
        cmocka_unit_test_teardown(test_stopped_daemon_given_up, kill_leftover_fake),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
