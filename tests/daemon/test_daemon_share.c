/*
 * Integration tests of gmuxd's share mode (share.h) with real client
 * processes (gmux_test_client): footprints that fit let every task hold the
 * GPU at once; footprints that overflow give time slices, with one holder at
 * a time; a registration that overflows brings the slices back, and its
 * departure the shared mode. Concurrency is read from the daemon's own state
 * (`gmux status`: mode, task states), exclusion from the clients' kernel
 * logs; no timing is asserted. Long deadlines for a loaded machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/clock.h"
#include "drig.h"

#define CLIENT_TIMEOUT_S 120.0
#define DEVICE_MIB       1024 /* what every client reports as its device memory */
#define MIB              (1ull << 20)

static dmn_report_t rep;

static uint32_t count_state(const dmn_report_t *r, uint32_t state)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n_tasks; i++)
        n += r->tasks[i].state == state;
    return n;
}

/* *(int *)arg tasks, mode shared, all of them holding the GPU at once. */
static int all_running_shared(const dmn_report_t *r, void *arg)
{
    int want = *(int *)arg;
    return r->mode == DMN_MODE_SHARED && (int)r->n_tasks == want &&
           (int)count_state(r, DMN_STATE_RUNNING) == want;
}

static int sliced_with(const dmn_report_t *r, void *arg)
{
    return r->mode == DMN_MODE_SLICED && (int)r->n_tasks == *(int *)arg;
}

static void start_daemon(drig_t *r)
{
    /* a revoked client always answers at its next boundary: no forced turns */
    setenv("GMUX_DAEMON_GRACE_MS", "60000", 1);
    unsetenv("GMUX_DAEMON_CAPACITY");
    unsetenv("GMUX_DAEMON_SHARE");
    pid_t d = drig_start_daemon(r, 5, "none");
    unsetenv("GMUX_DAEMON_GRACE_MS");
    assert_true(d > 0);
}

static void read_all(drig_t *r, const char *const *names, int n, dlog_t *logs, long kernels)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(drig_read_log(r, names[i], i, &logs[i]), 0);
        if (kernels)
            assert_int_equal(logs[i].n, kernels);
        assert_int_equal(logs[i].registrations, 1);
        for (int k = 0; k < logs[i].n; k++)
            assert_int_equal(logs[i].k[k].local, 0);
    }
}

/* Kernels of all logs that start in [from, to], exclusive in time? */
static int exclusive_within(const dlog_t *logs, int n, uint64_t from, uint64_t to)
{
    int total = 0, m = 0;
    for (int i = 0; i < n; i++)
        total += logs[i].n;
    dkernel_t *k = malloc((size_t)total * sizeof(*k));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < logs[i].n; j++)
            if (logs[i].k[j].start >= from && logs[i].k[j].start <= to)
                k[m++] = logs[i].k[j];
    int ok = drig_exclusive(k, m);
    free(k);
    return ok;
}

/* Two tasks of 100 MiB on a 1 GiB device: both hold the GPU at once. */
static void test_fit_runs_together(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    start_daemon(&r);
    const char *names[2] = {"f0", "f1"};
    pid_t p[2];
    for (int i = 0; i < 2; i++)
        p[i] = drig_start_client_mem(&r, names[i], "batch", 0, 800, 5000, 0, 100, DEVICE_MIB);
    int two = 2;
    assert_true(drig_until(&r, all_running_shared, &two, 60.0, &rep));
    assert_int_equal(rep.capacity, DEVICE_MIB * MIB);
    assert_int_equal(rep.footprint, 200 * MIB);
    assert_int_equal(rep.tasks[0].footprint, 100 * MIB);
    assert_int_equal(rep.mode_changes, 1);
    for (int i = 0; i < 2; i++)
        assert_int_equal(drig_wait(p[i], CLIENT_TIMEOUT_S), 0);
    dlog_t logs[2];
    read_all(&r, names, 2, logs, 800);
    long overlaps = 0;
    for (int i = 0; i < logs[0].n; i++)
        for (int j = 0; j < logs[1].n; j++)
            overlaps +=
                logs[0].k[i].start < logs[1].k[j].end && logs[1].k[j].start < logs[0].k[i].end;
    printf("fit: both running in shared mode; %ld pairs of their kernels overlapped\n", overlaps);
    for (int i = 0; i < 2; i++)
        drig_free_log(&logs[i]);
    drig_fini(&r);
}

/* Two tasks of 600 MiB on a 1 GiB device: time slices, never two holders,
 * never more memory holding the GPU than the device has. */
static void test_overflow_slices(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    start_daemon(&r);
    const char *names[2] = {"o0", "o1"};
    pid_t p[2];
    int code[2] = {-1, -1};
    /* Both register, then run together: started one after the other, the
     * second could come after the first had run all its kernels alone on a
     * loaded machine, and no sample would show them both. */
    drig_wait_for_go(&r, "both");
    for (int i = 0; i < 2; i++)
        p[i] = drig_start_client_mem(&r, names[i], "batch", 0, 200, 3000, 0, 600, DEVICE_MIB);
    drig_wait_for_go(&r, NULL);
    int two = 2;
    assert_true(drig_until(&r, drig_n_tasks_is, &two, 60.0, &rep));
    assert_int_equal(drig_go(&r, "both"), 0);
    int samples = 0, both = 0;
    uint64_t deadline = com_deadline_after_ns((uint64_t)(CLIENT_TIMEOUT_S * 1e9));
    while ((code[0] < 0 || code[1] < 0) && !com_deadline_passed(deadline)) {
        for (int i = 0; i < 2; i++) {
            int st;
            if (code[i] < 0 && waitpid(p[i], &st, WNOHANG) == p[i])
                code[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        if (dmn_report_fetch(r.sock, &rep, 2000) != GMUX_OK)
            continue;
        samples++;
        both += rep.n_tasks == 2;
        uint64_t holding = 0;
        uint32_t holders = 0;
        for (uint32_t i = 0; i < rep.n_tasks; i++)
            if (rep.tasks[i].state == DMN_STATE_RUNNING ||
                rep.tasks[i].state == DMN_STATE_REVOKED || rep.tasks[i].state == DMN_STATE_HELD) {
                holders++;
                holding += rep.tasks[i].footprint;
            }
        /* alone, a task fits (shared); both never do */
        if (rep.n_tasks == 2) {
            assert_int_equal(rep.mode, DMN_MODE_SLICED);
            assert_int_equal(rep.footprint, 1200 * MIB);
        }
        assert_true(holders <= 1);
        assert_true(holding <= DEVICE_MIB * MIB); /* no capacity overrun */
        com_clock_sleep_ns(10 * COM_NS_PER_MS);
    }
    assert_int_equal(code[0], 0);
    assert_int_equal(code[1], 0);
    printf("overflow: %d samples of the daemon, %d with both tasks, never two holders\n", samples,
           both);
    assert_true(both > 0);
    dlog_t logs[2];
    read_all(&r, names, 2, logs, 200);
    assert_true(exclusive_within(logs, 2, 0, UINT64_MAX));
    for (int i = 0; i < 2; i++)
        drig_free_log(&logs[i]);
    drig_fini(&r);
}

/* The rig's daemon with two tasks of 300 MiB (names[0..1], 1500 kernels
 * each) running shared, then a third of 400 MiB (names[2], `kernels`
 * kernels) that overflows the device: sliced with three (in rep). */
static void overflow(drig_t *r, const char *names[3], pid_t p[3], long kernels)
{
    drig_init(r);
    start_daemon(r);
    for (int i = 0; i < 2; i++)
        p[i] = drig_start_client_mem(r, names[i], "batch", 0, 1500, 3000, 0, 300, DEVICE_MIB);
    int two = 2, three = 3;
    assert_true(drig_until(r, all_running_shared, &two, 60.0, &rep));
    /* the third registers (its footprint turns the mode to slices) and runs
     * once seen: its 60 kernels could otherwise come and go between two
     * samples of a test process held up on a loaded machine */
    drig_wait_for_go(r, "third");
    p[2] = drig_start_client_mem(r, names[2], "batch", 0, kernels, 3000, 0, 400, DEVICE_MIB);
    drig_wait_for_go(r, NULL);
    assert_true(drig_until(r, sliced_with, &three, 60.0, &rep));
    assert_int_equal(drig_go(r, "third"), 0);
}

/* Shared with two tasks of 300 MiB; a third of 400 MiB registers (1000 MiB:
 * over the 90% line): slices from its first kernel to its last, in which it
 * never overlaps anyone; once it has left, shared again (600 MiB, below the
 * 85% line). */
static void test_overflow_and_back(void **state)
{
    (void)state;
    static drig_t r;
    const char *names[3] = {"a", "b", "c"};
    pid_t p[3];
    overflow(&r, names, p, 60);
    int two = 2;
    assert_int_equal(rep.footprint, 1000 * MIB);
    assert_int_equal(drig_wait(p[2], CLIENT_TIMEOUT_S), 0);
    assert_true(drig_until(&r, all_running_shared, &two, 60.0, &rep));
    printf("overflow and back: %llu mode changes\n", (unsigned long long)rep.mode_changes);
    assert_int_equal(rep.mode_changes, 3); /* shared, sliced, shared */
    for (int i = 0; i < 2; i++)
        assert_int_equal(drig_wait(p[i], CLIENT_TIMEOUT_S), 0);
    dlog_t logs[3];
    read_all(&r, names, 3, logs, 0);
    assert_int_equal(logs[0].n, 1500);
    assert_int_equal(logs[2].n, 60);
    uint64_t c0 = logs[2].k[0].start, c1 = logs[2].k[59].end;
    assert_true(exclusive_within(logs, 3, c0, c1));
    for (int i = 0; i < 3; i++)
        drig_free_log(&logs[i]);
    drig_fini(&r);
}

/* kill -9 of the task whose footprint overflowed the device: its memory is
 * released with its slot, and the two others share the GPU again. */
static void test_killed_overflow_released(void **state)
{
    (void)state;
    static drig_t r;
    const char *names[3] = {"a", "b", "c"};
    pid_t p[3];
    overflow(&r, names, p, 100000);
    int two = 2;
    assert_int_equal(kill(p[2], SIGKILL), 0);
    assert_int_equal(drig_wait(p[2], CLIENT_TIMEOUT_S), 128 + SIGKILL);
    assert_true(drig_until(&r, all_running_shared, &two, 60.0, &rep));
    assert_int_equal(rep.footprint, 600 * MIB);
    assert_int_equal(rep.reclaimed, 1);
    for (int i = 0; i < 2; i++)
        assert_int_equal(drig_wait(p[i], CLIENT_TIMEOUT_S), 0);
    drig_fini(&r);
}

/* GMUX_DAEMON_SHARE=0: time slices even though everything fits. */
static void test_disabled(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    setenv("GMUX_DAEMON_SHARE", "0", 1);
    pid_t d = drig_start_daemon(&r, 5, "none");
    unsetenv("GMUX_DAEMON_SHARE");
    assert_true(d > 0);
    const char *names[2] = {"d0", "d1"};
    pid_t p[2];
    for (int i = 0; i < 2; i++)
        p[i] = drig_start_client_mem(&r, names[i], "batch", 0, 150, 3000, 0, 100, DEVICE_MIB);
    for (int i = 0; i < 2; i++)
        assert_int_equal(drig_wait(p[i], CLIENT_TIMEOUT_S), 0);
    assert_true(dmn_report_fetch(r.sock, &rep, 2000) == GMUX_OK);
    assert_int_equal(rep.mode, DMN_MODE_SLICED);
    assert_int_equal(rep.mode_changes, 0);
    dlog_t logs[2];
    read_all(&r, names, 2, logs, 150);
    assert_true(exclusive_within(logs, 2, 0, UINT64_MAX));
    for (int i = 0; i < 2; i++)
        drig_free_log(&logs[i]);
    drig_fini(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fit_runs_together, drig_teardown),
        cmocka_unit_test_teardown(test_overflow_slices, drig_teardown),
        cmocka_unit_test_teardown(test_overflow_and_back, drig_teardown),
        cmocka_unit_test_teardown(test_killed_overflow_released, drig_teardown),
        cmocka_unit_test_teardown(test_disabled, drig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
