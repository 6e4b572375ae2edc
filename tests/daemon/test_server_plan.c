/* The server when a grant's plan fails (src/daemon/server.c, arbiter.h): a
 * real server in a forked child, with a placement that writes its orders
 * (evict the previous holder's ranges, fill the incoming one's, like "swap")
 * and its GRANT flag PLANNED, and then fails every second switch. The grant
 * must still be sent, with none of the failed plan's orders to anyone and
 * without the flag (nothing was filled: the task's policy prefetches what
 * it needs), the next plan must go out whole, STATUS must count only the
 * orders sent, and the daemon must say in its log that a grant went out
 * without its plan.
 *
 * And the GRANT flag of each built-in placement (protocol v8): PLANNED from
 * "opt" and "chunk", with a capacity or without, never from "swap" or
 * "none". */
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
#include "common/settings.h"
#include "daemon/client.h"
#include "daemon/endpoint.h"
#include "daemon/report.h"
#include "daemon/server.h"
#include "tproc.h"
#include "tsrv.h"

static char dir[] = "/tmp/gmux-sp-XXXXXX";
static char path[128], log_path[128];
static pid_t server_pid;

/* Evicts the previous holder's ranges, fills the incoming task's; every
 * second switch then fails, with its orders written. */
static gmux_status_t failing_on_switch(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                                       const dmn_task_view_t *from, const dmn_task_view_t *to,
                                       dmn_plan_t *plan)
{
    (void)tasks, (void)n_tasks;
    unsigned *n = ctx;
    gmux_status_t st = GMUX_OK;
    plan->grant_flags = DMN_GRANT_PLANNED; /* as opt and chunk */
    if (from && from->id != to->id)
        for (uint32_t i = 0; i < from->n_ranges && st == GMUX_OK; i++)
            st = dmn_plan_add(plan, from->id, DMN_PLAN_EVICT, from->ranges[i]);
    for (uint32_t i = 0; i < to->n_ranges && st == GMUX_OK; i++)
        st = dmn_plan_add(plan, to->id, DMN_PLAN_FILL, to->ranges[i]);
    return st == GMUX_OK && ++*n % 2 == 0 ? GMUX_ERR_NOMEM : st;
}

static unsigned n_switches;
static const dmn_placement_t failing = {"failing", &n_switches, failing_on_switch, NULL};

/* In the server child: log lines to log_path too, the share mode off. */
static int child_prep(dmn_server_opts_t *o, void *arg)
{
    (void)o, (void)arg;
    char err[64];
    return tsrv_log_to(log_path) ||
           com_settings_set(COM_SETTING_DAEMON_SHARE, "0", err, sizeof(err)) != GMUX_OK;
}

static void start_server(void)
{
    dmn_server_opts_t o = {
        path, DMN_NO_GROUP, 20 * COM_NS_PER_MS, 2 * COM_NS_PER_S, &failing, 0, 0, 0, 0, 0, NULL, 0};
    tsrv_start(&o, child_prep, NULL, &server_pid);
}

static int kill_leftover_server(void **state)
{
    (void)state;
    tproc_kill_reap(&server_pid);
    return 0;
}

struct plans {
    int n;
    struct {
        dmn_plan_kind_t kind;
        uint64_t seq;
        dmn_range_t r;
    } ev[16];
};

static void on_plan(void *arg, uint64_t seq, dmn_plan_kind_t kind, const dmn_range_t *r, uint32_t n)
{
    struct plans *p = arg;
    for (uint32_t i = 0; i < n && p->n < 16; i++, p->n++) {
        p->ev[p->n].kind = kind;
        p->ev[p->n].seq = seq;
        p->ev[p->n].r = r[i];
    }
}

static dmn_client_t *open_client(const char *name, struct plans *pl)
{
    dmn_client_opts_t o = {path, name, DMN_CLASS_BATCH, 0, 0, on_plan, pl, NULL, NULL, NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    assert_false(dmn_client_is_local(c));
    return c;
}

/* Reads what the daemon has sent c (it is not granted: the wait times out). */
static void drain(dmn_client_t *c)
{
    assert_int_equal(dmn_client_wait_turn(c, 100 * COM_NS_PER_MS), GMUX_ERR_TIMEOUT);
}

static int log_has(const char *what)
{
    FILE *f = fopen(log_path, "r");
    char line[512];
    int found = 0;
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return found;
}

static void test_failed_plan_grants_without_orders(void **state)
{
    (void)state;
    start_server();
    struct plans p1 = {0}, p2 = {0};
    dmn_client_t *c1 = open_client("one", &p1), *c2 = open_client("two", &p2);
    dmn_range_t a = {0x10000, 0x1000}, b = {0x20000, 0x2000};
    /* Switch 1 (stands): c1 gets its fill, then the turn. */
    assert_int_equal(dmn_client_pending(c1, 1, &a, 1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c1, 5 * COM_NS_PER_S), GMUX_OK);
    uint64_t g1 = dmn_client_grant_seq(c1);
    assert_int_equal(dmn_client_grant_flags(c1), DMN_GRANT_PLANNED);
    assert_int_equal(p1.n, 1);
    assert_int_equal(p1.ev[0].kind, DMN_PLAN_FILL);
    assert_int_equal(p1.ev[0].seq, g1);
    /* Switch 2 (fails): c2 is granted all the same, with no fill, and c1
     * is not told to evict. */
    assert_int_equal(dmn_client_pending(c2, 1, &b, 1), GMUX_OK);
    assert_int_equal(dmn_client_idle(c1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c2, 5 * COM_NS_PER_S), GMUX_OK);
    assert_true(dmn_client_holds_turn(c2));
    uint64_t g2 = dmn_client_grant_seq(c2);
    assert_true(g2 > g1);
    assert_int_equal(p2.n, 0);
    assert_int_equal(dmn_client_grant_flags(c2), 0); /* the failed plan's flag went with it */
    /* Switch 3 (stands): back to c1, whose plan goes out whole: c2 evicts
     * b, c1 fills a again. */
    assert_int_equal(dmn_client_pending(c1, 1, &a, 1), GMUX_OK);
    assert_int_equal(dmn_client_idle(c2), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c1, 5 * COM_NS_PER_S), GMUX_OK);
    uint64_t g3 = dmn_client_grant_seq(c1);
    assert_true(g3 > g2);
    assert_int_equal(dmn_client_grant_flags(c1), DMN_GRANT_PLANNED);
    assert_int_equal(p1.n, 2);
    assert_int_equal(p1.ev[1].kind, DMN_PLAN_FILL);
    assert_int_equal(p1.ev[1].seq, g3);
    assert_int_equal(dmn_client_pending(c2, 1, &b, 1), GMUX_OK);
    drain(c2);
    assert_int_equal(p2.n, 1);
    assert_int_equal(p2.ev[0].kind, DMN_PLAN_EVICT);
    assert_int_equal(p2.ev[0].seq, g3);
    assert_int_equal(p2.ev[0].r.base, b.base);
    /* STATUS counts the orders sent, not those of the failed plan. */
    dmn_report_t rep;
    assert_int_equal(dmn_report_fetch(path, &rep, 5000), GMUX_OK);
    assert_int_equal(rep.fill_bytes, 2 * a.len);
    assert_int_equal(rep.evict_bytes, b.len);
    /* The daemon said which grant went out without its plan, and why. */
    char what[96];
    snprintf(what, sizeof(what), "grant %llu to task %u sent without its plan",
             (unsigned long long)g2, dmn_client_task_id(c2));
    assert_true(log_has(what));
    dmn_client_close(c1);
    dmn_client_close(c2);
    tsrv_stop(&server_pid);
}

/* Two tasks of 4 MiB each take turns (the second switch evicts the first
 * task's memory where a capacity of 6 MiB is set): both GRANTs carry flags,
 * and only those. */
static void check_grant_flags(const char *placement, const char *capacity, uint32_t flags)
{
    tsrv_cfg_t cfg = {placement, capacity};
    dmn_server_opts_t o = {
        path, DMN_NO_GROUP, 20 * COM_NS_PER_MS, 2 * COM_NS_PER_S, NULL, 0, 0, 0, 0, 0, NULL, 0};
    tsrv_start(&o, tsrv_prep_cfg, &cfg, &server_pid);
    struct plans p1 = {0}, p2 = {0};
    dmn_client_t *c1 = open_client("one", &p1), *c2 = open_client("two", &p2);
    dmn_range_t a = {0x40000000, 4u << 20}, b = {0x80000000, 4u << 20};
    assert_int_equal(dmn_client_pending(c1, 1, &a, 1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c1, 5 * COM_NS_PER_S), GMUX_OK);
    assert_int_equal(dmn_client_grant_flags(c1), flags);
    assert_int_equal(dmn_client_pending(c2, 1, &b, 1), GMUX_OK);
    assert_int_equal(dmn_client_idle(c1), GMUX_OK);
    assert_int_equal(dmn_client_wait_turn(c2, 5 * COM_NS_PER_S), GMUX_OK);
    assert_int_equal(dmn_client_grant_flags(c2), flags);
    print_message("  %s, capacity %s: flags %u\n", placement, capacity ? capacity : "none", flags);
    dmn_client_close(c1);
    dmn_client_close(c2);
    tsrv_stop(&server_pid);
}

static void test_grant_flags_by_placement(void **state)
{
    (void)state;
    check_grant_flags("opt", "6M", DMN_GRANT_PLANNED);
    check_grant_flags("chunk", "6M", DMN_GRANT_PLANNED);
    check_grant_flags("opt", NULL, DMN_GRANT_PLANNED);
    check_grant_flags("chunk", NULL, DMN_GRANT_PLANNED);
    check_grant_flags("swap", "6M", 0);
    check_grant_flags("none", "6M", 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/sock", dir);
    snprintf(log_path, sizeof(log_path), "%s/log", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_failed_plan_grants_without_orders, kill_leftover_server),
        cmocka_unit_test_teardown(test_grant_flags_by_placement, kill_leftover_server),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(path);
    unlink(log_path);
    rmdir(dir);
    return rc;
}
