/* STATUS's counters against what real processes did: a real
 * server (dmn_server_run in a forked child, tsrv.h), clients of the client
 * library in this process or in forked children. Checks the meanings
 * docs/daemon.md gives them ("Commands", `gmux status`) and the invariants
 * between them:
 * - switches counts every grant that went, so evict waits <= switches and
 *   ahead plans <= switches (a task granted again after it gave the turn
 *   back is a switch too: its plan may evict and its GRANT wait for that);
 * - a task's run time (gpu_time_s, share) counts from a GRANT that went,
 *   none of the time that GRANT was held for evictions;
 * - reclaimed counts every task that left, a clean close as a kill (the
 *   daemon sees the socket end in both), and the table and JSON agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/client.h"
#include "daemon/endpoint.h"
#include "daemon/report.h"
#include "daemon/server.h"
#include "tdir.h"
#include "tproc.h"
#include "tsrv.h"

static char dir[] = "/tmp/gmux-cnt-XXXXXX";
static char path[128];
static pid_t server_pid, kid_pid; /* children left by a failed assertion, 0 none */

#define MB2 (2ull << 20)

static void start_server(const char *placement, const char *capacity, uint64_t evict_wait_ns)
{
    tsrv_cfg_t c = {placement, capacity};
    dmn_server_opts_t o = {.path = path,
                           .group = DMN_NO_GROUP,
                           .quantum_ns = 20 * COM_NS_PER_MS,
                           .grace_ns = 2 * COM_NS_PER_S,
                           .evict_wait_ns = evict_wait_ns};
    tsrv_start(&o, tsrv_prep_cfg, &c, &server_pid);
}

static int kill_leftovers(void **state)
{
    (void)state;
    tproc_kill_reap(&kid_pid);
    tproc_kill_reap(&server_pid);
    return 0;
}

static void count_plan(void *arg, uint64_t seq, dmn_plan_kind_t kind, const dmn_range_t *r,
                       uint32_t n)
{
    uint64_t *bytes = arg; /* per dmn_plan_kind_t */
    (void)seq;
    for (uint32_t i = 0; i < n && kind <= DMN_PLAN_AHEAD; i++)
        bytes[kind] += r[i].len;
}

static dmn_client_t *open_client(const char *name, uint64_t *bytes)
{
    dmn_client_opts_t o = {path, name, DMN_CLASS_BATCH, 0, 0, count_plan, bytes, NULL, NULL,
                           NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    return c;
}

/* Waits (10 s at most) for c's turn while `other` reads its socket, so that
 * it answers the daemon's request for EVICTED at once (no on_evict_end). */
static void turn_while_polling(dmn_client_t *c, dmn_client_t *other)
{
    uint64_t deadline = com_deadline_after_ns(10 * COM_NS_PER_S);
    while (!dmn_client_holds_turn(c) && !com_deadline_passed(deadline)) {
        (void)dmn_client_poll(other);
        gmux_status_t st = dmn_client_wait_turn(c, 20 * COM_NS_PER_MS);
        assert_true(st == GMUX_OK || st == GMUX_ERR_TIMEOUT);
    }
    assert_true(dmn_client_holds_turn(c));
}

/* X fills the whole device (opt, capacity 3 chunks) and goes idle; A is
 * then granted three times in a row, going idle in between, its working set
 * a chunk larger each time: each grant evicts one of X's chunks and waits
 * for X's EVICTED. Each of A's grants is a switch for the placement (it
 * plans X's eviction) and is held: STATUS counts 4 switches (X, A, A, A) and
 * 3 evict waits. Until 2026-12-03 a task granted again after the last holder
 * was itself was no switch: STATUS said 2 switches and 3 evict waits, and
 * the table "evict waits 3 switches" beside "switches 2". */
static void test_regrant_counted(void **state)
{
    (void)state;
    start_server("opt", "6MiB", 10 * COM_NS_PER_S);
    uint64_t xb[3] = {0}, ab[3] = {0};
    dmn_client_t *x = open_client("x", xb), *a = open_client("a", ab);
    dmn_range_t xs = {0x10000000, 3 * MB2};
    assert_int_equal(dmn_client_pending(x, 1, &xs, 1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(x, 5 * COM_NS_PER_S), GMUX_OK);
    assert_int_equal(dmn_client_idle(x), GMUX_OK);
    for (uint64_t k = 1; k <= 3; k++) {
        dmn_range_t as = {0x20000000, k * MB2};
        assert_int_equal(dmn_client_pending(a, 1, &as, 1), GMUX_OK);
        turn_while_polling(a, x);
        assert_int_equal(dmn_client_idle(a), GMUX_OK);
    }
    (void)dmn_client_poll(x);
    dmn_report_t rep;
    assert_int_equal(dmn_report_fetch(path, &rep, 5000), GMUX_OK);
    assert_int_equal(xb[DMN_PLAN_EVICT], 3 * MB2); /* one chunk at each of A's grants */
    assert_int_equal(rep.evict_bytes, 3 * MB2);
    assert_int_equal(rep.fill_bytes, xb[DMN_PLAN_FILL] + ab[DMN_PLAN_FILL]);
    assert_int_equal(rep.fill_bytes, 6 * MB2);
    assert_int_equal(rep.evict_waits, 3);
    assert_int_equal(rep.evict_timeouts, 0);
    assert_int_equal(rep.ahead_plans, 0); /* nobody waited */
    assert_true(rep.evict_waits <= rep.switches);
    assert_int_equal(rep.switches, 4);
    dmn_client_close(x);
    dmn_client_close(a);
    tsrv_stop(&server_pid);
}

static int no_tasks(const dmn_report_t *rep, void *arg)
{
    (void)arg;
    return rep->n_tasks == 0;
}

static int one_task(const dmn_report_t *rep, void *arg)
{
    (void)arg;
    return rep->n_tasks == 1;
}

/* Polls STATUS until pred holds (30 s at most, a hang guard); *rep the last. */
static int report_until(int (*pred)(const dmn_report_t *, void *), dmn_report_t *rep)
{
    uint64_t deadline = com_deadline_after_ns(30 * COM_NS_PER_S);
    for (;;) {
        assert_int_equal(dmn_report_fetch(path, rep, 5000), GMUX_OK);
        if (pred(rep, NULL))
            return 1;
        if (com_deadline_passed(deadline))
            return 0;
        com_clock_sleep_ns(10 * COM_NS_PER_MS);
    }
}

/* The record of task id in rep, NULL if it is not listed. */
static const dmn_status_task_t *task_of(const dmn_report_t *rep, uint32_t id)
{
    for (uint32_t i = 0; i < rep->n_tasks; i++)
        if (rep->tasks[i].id == id)
            return &rep->tasks[i];
    return NULL;
}

static uint32_t watched; /* the task id the predicates below look at */

static int watched_held(const dmn_report_t *rep, void *arg)
{
    (void)arg;
    const dmn_status_task_t *t = task_of(rep, watched);
    return t && t->state == DMN_STATE_HELD;
}

static int watched_idle(const dmn_report_t *rep, void *arg)
{
    (void)arg;
    const dmn_status_task_t *t = task_of(rep, watched);
    return t && t->state == DMN_STATE_IDLE;
}

/* `gmux status` and `gmux top` print rep (dmn_report_table) with one task
 * in state word; the JSON (`--json`) says the same. */
static void shown_as(const dmn_report_t *rep, const char *word)
{
    char *js = NULL, *tab = NULL, want[64];
    size_t jn = 0, tn = 0;
    FILE *f = open_memstream(&js, &jn);
    dmn_report_json(f, path, rep);
    fclose(f);
    f = open_memstream(&tab, &tn);
    dmn_report_table(f, path, rep, 200);
    fclose(f);
    snprintf(want, sizeof(want), "\"state\": \"%s\"", word);
    assert_non_null(strstr(js, want));
    snprintf(want, sizeof(want), " %s ", word);
    assert_non_null(strstr(tab, want));
    free(js);
    free(tab);
}

/* A's switch evicts from X, which never answers (bound 20 s): A's GRANT is
 * held. STATUS, `gmux status` and `gmux top` show A held, not running (until
 * 2026-12-03 running, though A may not launch). A's turn has not started,
 * so STATUS counts none of that time as
 * A's (gpu_time_s, share), and once A goes idle before its GRANT went (the
 * grant is void) it never held the turn: run time 0, no switch, no evict
 * wait. Until 2026-12-03 the held time counted as A's from the decision
 * on: STATUS showed it growing during the hold (and dropping back when the
 * GRANT went), and kept it for good when A went idle meanwhile. */
static void test_held_grant_no_run_time(void **state)
{
    (void)state;
    start_server("opt", "4MiB", 20 * COM_NS_PER_S);
    uint64_t xb[3] = {0}, ab[3] = {0};
    dmn_client_t *x = open_client("x", xb), *a = open_client("a", ab);
    dmn_range_t xs = {0x10000000, 2 * MB2}, as = {0x20000000, MB2};
    assert_int_equal(dmn_client_pending(x, 1, &xs, 1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(x, 5 * COM_NS_PER_S), GMUX_OK);
    assert_int_equal(dmn_client_idle(x), GMUX_OK); /* and X reads nothing from now on */
    assert_int_equal(dmn_client_pending(a, 1, &as, 1), GMUX_OK);
    watched = dmn_client_task_id(a);
    dmn_report_t rep;
    assert_true(report_until(watched_held, &rep)); /* granted, its GRANT held */
    com_clock_sleep_ns(50 * COM_NS_PER_MS);        /* time that is not A's */
    assert_int_equal(dmn_report_fetch(path, &rep, 5000), GMUX_OK);
    assert_int_equal(task_of(&rep, watched)->state, DMN_STATE_HELD); /* not running */
    shown_as(&rep, "held");
    assert_int_equal(rep.evict_waits, 0);
    assert_int_equal(task_of(&rep, watched)->run_ns, 0);
    assert_false(dmn_client_holds_turn(a));
    assert_int_equal(dmn_client_idle(a), GMUX_OK); /* the held grant is void */
    assert_true(report_until(watched_idle, &rep));
    assert_int_equal(task_of(&rep, watched)->run_ns, 0);
    assert_int_equal(rep.switches, 1); /* X's: A's never went */
    assert_int_equal(rep.evict_waits, 0);
    assert_int_equal(rep.fill_bytes, 2 * MB2);
    dmn_client_close(x);
    dmn_client_close(a);
    tsrv_stop(&server_pid);
}

/* The child tasks of test_reclaimed_every_leave: registers, runs a turn and
 * then either closes cleanly and exits 0 (clean), or says so on fd and waits
 * to be killed. */
static int child_task(const char *name, int clean, int fd)
{
    dmn_client_opts_t o = {path, name, DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};
    dmn_client_t *c = NULL;
    dmn_range_t r = {0x10000000, MB2};
    if (dmn_client_open(&o, &c) != GMUX_OK || dmn_client_is_local(c) ||
        dmn_client_pending(c, 1, &r, 1) != GMUX_OK ||
        dmn_client_wait_turn(c, 10 * COM_NS_PER_S) != GMUX_OK || dmn_client_idle(c) != GMUX_OK)
        return 3;
    if (clean) {
        dmn_client_close(c);
        return 0;
    }
    if (write(fd, "r", 1) != 1)
        return 4;
    for (;;)
        pause();
}

static pid_t fork_task(const char *name, int clean, int fd)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(child_task(name, clean, fd));
    return pid;
}

/* One task closes cleanly and exits, another is killed (SIGKILL) holding
 * nothing: `reclaimed` counts both, as docs/daemon.md and docs/protocol.md
 * define it (every task that left; the daemon sees its socket end either
 * way), and the table and the JSON say the same. */
static void test_reclaimed_every_leave(void **state)
{
    (void)state;
    start_server("none", NULL, 0);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t clean = fork_task("clean", 1, -1);
    assert_int_equal(tproc_reap(&clean), 0);
    kid_pid = fork_task("killed", 0, p[1]);
    close(p[1]);
    char b;
    assert_int_equal(read(p[0], &b, 1), 1); /* registered, ran a turn, idle */
    close(p[0]);
    dmn_report_t rep;
    assert_true(report_until(one_task, &rep)); /* the clean one gone */
    assert_int_equal(rep.reclaimed, 1);
    tproc_kill_reap(&kid_pid);
    assert_true(report_until(no_tasks, &rep));
    assert_int_equal(rep.reclaimed, 2);
    assert_int_equal(rep.switches, 2);
    char *js = NULL, *tab = NULL;
    size_t jn = 0, tn = 0;
    FILE *f = open_memstream(&js, &jn);
    dmn_report_json(f, path, &rep);
    fclose(f);
    f = open_memstream(&tab, &tn);
    dmn_report_table(f, path, &rep, 200);
    fclose(f);
    assert_int_equal(tproc_json_num(js, "\"reclaimed\": "), 2);
    assert_int_equal(tproc_json_num(js, "\"switches\": "), 2);
    assert_non_null(strstr(tab, "switches 2  reclaimed 2"));
    free(js);
    free(tab);
    tsrv_stop(&server_pid);
}

int main(void)
{
    tdir_make_for_socket(dir, path, sizeof(path));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_regrant_counted, kill_leftovers),
        cmocka_unit_test_teardown(test_held_grant_no_run_time, kill_leftovers),
        cmocka_unit_test_teardown(test_reclaimed_every_leave, kill_leftovers),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
