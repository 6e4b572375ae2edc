/*
 * GMUX_LOG_CLOCK end to end: `gmux run` hands the environment to the gmuxd
 * it starts and to the program, whose libgmux.so logs too. With utc, every
 * line of both processes carries the wall clock (ISO-8601 UTC, milliseconds)
 * from between the instants before and after the run, so their logs can be
 * merged by time; without it, the seconds since each process's first line.
 * gate_prog runs with the driver double as libcuda.so.1 (run_env).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "tdir.h"
#include "tproc.h"

static char dir[] = "/tmp/gmux-log-clock-XXXXXX";
static char out[4096], err[32768];

static void wall(char buf[COM_LOG_UTC_LEN])
{
    struct timespec ts;
    assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts), 0);
    com_log_format_utc((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, buf,
                       COM_LOG_UTC_LEN);
}

/* gate_prog (4 kernels) under `gmux run`, its own gmuxd on a socket of the
 * test's folder, logging at info; clock: GMUX_LOG_CLOCK's value or NULL. */
static void run_logged(const char *clock, int k)
{
    char sock[128], outfile[128], clock_env[64];
    snprintf(sock, sizeof(sock), "%s/d%d.sock", dir, k);
    snprintf(outfile, sizeof(outfile), "%s/out%d", dir, k);
    snprintf(clock_env, sizeof(clock_env), "GMUX_LOG_CLOCK=%s", clock ? clock : "");
    char *env[] = {"GMUX_LOG=info", "GMUX_DAEMON_IDLE_EXIT_S=1", clock ? clock_env : NULL, NULL};
    char *argv[] = {GMUX_BIN, "run", "--socket", sock, "--", GATE_PROG,
                    outfile,  "1",   "4",        "0",  NULL};
    int rc = tproc_capture(argv, env, 120.0, out, sizeof(out), err, sizeof(err));
    if (rc != 0)
        fail_msg("gmux run: exit %d: %s", rc, err);
}

/* The stamp of the first line containing `what` (copied into stamp), and
 * that line's pid; fails without one. */
static int stamp_of(const char *what, char *stamp, size_t cap)
{
    const char *at = strstr(err, what);
    if (!at)
        fail_msg("no line with '%s': %s", what, err);
    const char *line = at;
    while (line > err && line[-1] != '\n')
        line--;
    int pid = 0;
    assert_int_equal(sscanf(line, "gmux[%d]", &pid), 1);
    const char *s = strchr(line, ' ');
    assert_non_null(s);
    while (*s == ' ')
        s++;
    size_t n = strcspn(s, " ");
    assert_true(n < cap);
    memcpy(stamp, s, n);
    stamp[n] = '\0';
    return pid;
}

static void test_utc_in_daemon_and_program(void **state)
{
    (void)state;
    char before[COM_LOG_UTC_LEN], after[COM_LOG_UTC_LEN], d[64], p[64];
    wall(before);
    run_logged("utc", 0);
    wall(after);
    int dpid = stamp_of("listening on", d, sizeof(d));  /* gmuxd */
    int ppid = stamp_of("libgmux ready", p, sizeof(p)); /* the program's shim */
    assert_int_not_equal(dpid, ppid);
    const char *stamps[] = {d, p};
    for (int i = 0; i < 2; i++) {
        if (strlen(stamps[i]) != COM_LOG_UTC_LEN - 1 || strcmp(before, stamps[i]) > 0 ||
            strcmp(stamps[i], after) > 0)
            fail_msg("stamp '%s' not a UTC time in [%s, %s]: %s", stamps[i], before, after, err);
    }
}

static void test_elapsed_by_default(void **state)
{
    (void)state;
    char d[64], p[64];
    run_logged(NULL, 1);
    stamp_of("listening on", d, sizeof(d));
    stamp_of("libgmux ready", p, sizeof(p));
    char *end;
    strtod(d, &end);
    assert_true(*end == '\0' && end != d);
    strtod(p, &end);
    assert_true(*end == '\0' && end != p);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utc_in_daemon_and_program),
        cmocka_unit_test(test_elapsed_by_default),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
