/*
 * Integration test of gmuxd with real processes: the pinned bytes a task
 * reports in its STATS (device memory no plan can move, daemon.md "Pinned
 * memory") reach `gmux status` and `gmux top` through STATUS. Until
 * 2026-12-04 the STATUS record had no pinned field: RES counted pinned
 * memory (protocol v9) and nothing told how much of it gmuxd cannot evict.
 * One task (a client in this process) reports 48 MiB pinned of 80 MiB
 * resident, another (gmux_test_client) none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/client.h"
#include "drig.h"
#include "tproc.h"

#define PINNED   (48ull << 20)
#define RESIDENT (80ull << 20)
#define TOTAL    (128ull << 20)

static dmn_report_t rep;
static char out[65536], err[4096];

/* Both tasks have reported their memory. */
static int both_reported(const dmn_report_t *r, void *arg)
{
    (void)arg;
    int reported = 0;
    for (uint32_t i = 0; i < r->n_tasks; i++)
        reported += r->tasks[i].total > 0;
    return r->n_tasks == 2 && reported == 2;
}

/* The line of text holding word (as a whole word), copied into line. */
static int line_with(const char *text, const char *word, char *line, size_t cap)
{
    size_t wl = strlen(word);
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        if (!end)
            end = p + strlen(p);
        for (const char *q = p; q + wl <= end; q++) {
            if (memcmp(q, word, wl) == 0 && (q == p || q[-1] == ' ') &&
                (q + wl == end || q[wl] == ' ')) {
                size_t n = (size_t)(end - p) < cap - 1 ? (size_t)(end - p) : cap - 1;
                memcpy(line, p, n);
                line[n] = '\0';
                return 1;
            }
        }
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* The word of row_key's row under the header word head of text's table
 * (the narrow form, where each cell is one word). */
static void cell_under(const char *text, const char *head, const char *row_key, char *cell,
                       size_t cap)
{
    char hl[512], rl[512];
    assert_true(line_with(text, "ID", hl, sizeof(hl)));
    assert_true(line_with(text, row_key, rl, sizeof(rl)));
    int k = -1, n = 0;
    for (char *save = NULL, *w = strtok_r(hl, " ", &save); w; w = strtok_r(NULL, " ", &save), n++)
        if (strcmp(w, head) == 0)
            k = n;
    if (k < 0)
        fail_msg("no column %s in\n%s", head, text);
    n = 0;
    for (char *save = NULL, *w = strtok_r(rl, " ", &save); w; w = strtok_r(NULL, " ", &save), n++)
        if (n == k) {
            snprintf(cell, cap, "%s", w);
            return;
        }
    fail_msg("row %s has no column %d in\n%s", row_key, k, text);
}

static void test_status_shows_pinned(void **state)
{
    (void)state;
    static drig_t r;
    drig_init(&r);
    assert_true(drig_start_daemon(&r, 10, "none") > 0);
    dmn_client_opts_t o = {0};
    o.path = r.sock;
    o.name = "pinner";
    o.cls = DMN_CLASS_BATCH;
    o.budget = TOTAL;
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    assert_false(dmn_client_is_local(c));
    dmn_msg_stats_t st = {.resident = RESIDENT, .total = TOTAL, .pinned = PINNED};
    assert_int_equal(dmn_client_report(c, &st), GMUX_OK);
    drig_wait_for_go(&r, "never");
    assert_true(drig_start_client_mem(&r, "plain", "batch", 0, 1, 1000, 0, 300, 0) > 0);
    assert_true(drig_until(&r, both_reported, NULL, 60.0, &rep));

    char *env[] = {"COLUMNS=200", NULL};
    int s = tproc_capture(drig_cli_argv("status", "--json", "--socket", r.sock), env, 30.0, out,
                          sizeof(out), err, sizeof(err));
    assert_int_equal(s, 0);
    printf("%s", out);
    assert_non_null(strstr(out, "\"pinned\": 50331648,"));
    assert_non_null(strstr(out, "\"resident\": 83886080,"));
    assert_non_null(strstr(out, "\"pinned\": 0,")); /* the plain task */

    /* the wide table: RESIDENT PINNED TOTAL, sizes to two decimals */
    s = tproc_capture(drig_cli_argv("status", "--socket", r.sock, NULL), env, 30.0, out,
                      sizeof(out), err, sizeof(err));
    assert_int_equal(s, 0);
    printf("%s", out);
    assert_non_null(strstr(out, " RESIDENT    PINNED      TOTAL "));
    assert_non_null(strstr(out, "80.00 MiB 48.00 MiB 128.00 MiB"));
    assert_non_null(strstr(out, "0 B 300.00 MiB")); /* plain: RESIDENT 0 B, PINNED 0 B */

    /* top --once at 80 columns: the narrow table, PIN after RES */
    char *narrow[] = {"COLUMNS=80", NULL};
    s = tproc_capture(drig_cli_argv("top", "--once", "--socket", r.sock), narrow, 30.0, out,
                      sizeof(out), err, sizeof(err));
    assert_int_equal(s, 0);
    printf("%s", out);
    assert_true(tproc_fits_cols(out, 80));
    char cell[64];
    cell_under(out, "PIN", "pinner", cell, sizeof(cell));
    assert_string_equal(cell, "48M");
    cell_under(out, "RES", "pinner", cell, sizeof(cell));
    assert_string_equal(cell, "80M");
    cell_under(out, "PIN", "plain", cell, sizeof(cell));
    assert_string_equal(cell, "0B");

    dmn_client_close(c);
    drig_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_status_shows_pinned, drig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
