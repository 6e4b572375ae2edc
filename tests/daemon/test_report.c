/*
 * What `gmux status` prints from a STATUS snapshot (src/daemon/report.c): the
 * table and the JSON object, including the planned bytes of protocol v4, the
 * eviction waits of v6, and the share column.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/parse.h"
#include "common/text.h"
#include "daemon/report.h"

/* The JSON object or the table of r; with keep, the table as a refreshing
 * view prints it after the tables before (keep: what they showed). */
static char *print_kept(bool json, const dmn_report_t *r, unsigned width, dmn_table_keep_t *keep)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    if (json)
        dmn_report_json(f, "/run/gmux.sock", r);
    else if (keep)
        dmn_report_table_keep(f, "/run/gmux.sock", r, width, keep);
    else
        dmn_report_table(f, "/run/gmux.sock", r, width);
    fclose(f);
    return buf;
}

static char *print_width(bool json, const dmn_report_t *r, unsigned width)
{
    return print_kept(json, r, width, NULL);
}

static char *print(bool json, const dmn_report_t *r)
{
    return print_width(json, r, COM_TEXT_WIDTH);
}

static dmn_report_t sample(void)
{
    dmn_report_t r;
    memset(&r, 0, sizeof(r));
    r.uptime_ns = 2500000000ull;
    r.switches = 12;
    r.mode = DMN_MODE_SLICED;
    r.capacity = 8ull << 30;
    r.footprint = 12ull << 30;
    r.n_tasks = 1;
    r.tasks[0] = (dmn_status_task_t){.id = 3,
                                     .pid = 4242,
                                     .state = DMN_STATE_RUNNING,
                                     .cls = DMN_CLASS_BATCH,
                                     .run_ns = 1000000000ull,
                                     .age_ns = 4000000000ull,
                                     .name = "trainer"};
    return r;
}

/* Nothing planned yet: no planned line; the JSON has the zeros. */
static void test_nothing_planned(void **state)
{
    (void)state;
    dmn_report_t r = sample();
    char *t = print(false, &r);
    assert_null(strstr(t, "planned"));
    assert_non_null(strstr(t, "switches 12"));
    assert_non_null(strstr(t, "trainer"));
    assert_non_null(strstr(t, "25.0%")); /* 1 s of 4 s holding the turn */
    free(t);
    char *j = print(true, &r);
    assert_non_null(strstr(j, "\"planned\": {\"evict_bytes\": 0, \"fill_bytes\": 0, "
                              "\"ahead_bytes\": 0, \"ahead_plans\": 0}"));
    assert_non_null(strstr(j, "\"share\": 0.2500"));
    free(j);
}

/* The footprints against the capacity, or why there is none: "of ?
 * (capacity unknown)" told a user nothing. */
static void test_capacity_line(void **state)
{
    (void)state;
    dmn_report_t r = sample();
    char *t = print(false, &r);
    assert_non_null(strstr(t, "mode sliced  footprints 12.00 GiB of 8.00 GiB  mode changes 0\n"));
    free(t);
    r.capacity = 0;
    t = print(false, &r);
    assert_non_null(strstr(t, "footprints 12.00 GiB (device memory not reported by any task)"));
    assert_null(strstr(t, " of ?"));
    free(t);
}

/* Planned bytes are shown per kind, with the switches that filled ahead. */
static void test_planned(void **state)
{
    (void)state;
    dmn_report_t r = sample();
    r.evict_bytes = 1ull << 30;
    r.fill_bytes = 3ull << 30;
    r.ahead_bytes = 512ull << 20;
    r.ahead_plans = 5;
    char *t = print(false, &r);
    const char *line = strstr(t, "planned  evict ");
    assert_non_null(line);
    char ev[32], fi[32], ah[32], want[160];
    com_format_size(r.evict_bytes, ev, sizeof(ev));
    com_format_size(r.fill_bytes, fi, sizeof(fi));
    com_format_size(r.ahead_bytes, ah, sizeof(ah));
    snprintf(want, sizeof(want), "planned  evict %s  fill %s  ahead %s in 5 of 12 switches\n", ev,
             fi, ah);
    assert_memory_equal(line, want, strlen(want));
    free(t);
    char *j = print(true, &r);
    assert_non_null(strstr(j, "\"planned\": {\"evict_bytes\": 1073741824, \"fill_bytes\": "
                              "3221225472, \"ahead_bytes\": 536870912, \"ahead_plans\": 5}"));
    free(j);
}

/* The daemon's pid heads the table and is in the JSON; unknown (0) it is "?"
 * in the table and 0 in the JSON. */
static void test_daemon_pid(void **state)
{
    (void)state;
    dmn_report_t r = sample();
    r.daemon_pid = 31337;
    char *t = print(false, &r);
    assert_non_null(strstr(t, "gmuxd /run/gmux.sock  pid 31337  up 2.5 s"));
    free(t);
    char *j = print(true, &r);
    assert_non_null(strstr(j, "\"daemon_pid\": 31337,"));
    free(j);
    r.daemon_pid = 0;
    t = print(false, &r);
    assert_non_null(strstr(t, "  pid ?  "));
    free(t);
    j = print(true, &r);
    assert_non_null(strstr(j, "\"daemon_pid\": 0,"));
    free(j);
}

/* Switches held for their evictions (v6): a table line once one was, the
 * JSON object always (zeros before). */
static void test_evict_waits(void **state)
{
    (void)state;
    dmn_report_t r = sample();
    char *t = print(false, &r);
    assert_null(strstr(t, "evict waits"));
    free(t);
    char *j = print(true, &r);
    assert_non_null(strstr(j, "\"evict_wait\": {\"switches\": 0, \"timeouts\": 0, "
                              "\"total_ms\": 0.000, \"max_ms\": 0.000}"));
    free(j);
    r.evict_waits = 7;
    r.evict_timeouts = 2;
    r.evict_wait_ns = 1250000000ull;
    r.evict_wait_max_ns = 500000000ull;
    t = print(false, &r);
    assert_non_null(
        strstr(t, "evict waits  7 switches, 2 gave up  1250.0 ms in all, 500.0 ms at most\n"));
    free(t);
    j = print(true, &r);
    assert_non_null(strstr(j, "\"evict_wait\": {\"switches\": 7, \"timeouts\": 2, "
                              "\"total_ms\": 1250.000, \"max_ms\": 500.000}"));
    free(j);
}

/* The row of the table (the line after the header). */
static const char *task_row(const char *t)
{
    const char *head = strstr(t, "\nID ");
    assert_non_null(head);
    const char *row = strchr(head + 1, '\n');
    assert_non_null(row);
    return row + 1;
}

/* Table t (freed) has head in it and its task row starts with row. */
static void assert_table(char *t, const char *head, const char *row)
{
    assert_non_null(strstr(t, head));
    assert_memory_equal(task_row(t), row, strlen(row));
    free(t);
}

/* The table's two forms: narrow on 80 columns (sizes in 4 columns, counts
 * exact up to 99999 and rounded past it), wide where it fits (every count,
 * sizes to two decimals); a narrower width wraps the summary lines between
 * their fields. */
static void test_table_forms(void **state)
{
    (void)state;
    dmn_report_t r = sample();
    r.tasks[0].resident = 3ull << 29;
    r.tasks[0].total = 40ull << 30;
    r.tasks[0].migrated = 5000;
    r.tasks[0].faults = 1234567;
    r.tasks[0].kernels = 99999;
    char *t = print_width(false, &r, 80);
    assert_non_null(
        strstr(t, "\nID  PID NAME    STATE   CLASS PRI  RES TOTAL FAULTS MIGR KERNELS SHARE\n"));
    const char *row = task_row(t);
    const char *want = " 3 4242 trainer running batch   0 1.5G   40G   1.2M 4.9K   99999 25.0%\n";
    assert_memory_equal(row, want, strlen(want));
    free(t);
    t = print_width(false, &r, 200);
    assert_non_null(strstr(t, " RESIDENT "));
    row = task_row(t);
    want = " 3 4242 trainer running batch   0 1.50 GiB 40.00 GiB 1234567 4.88 KiB   99999 25.0%\n";
    assert_memory_equal(row, want, strlen(want));
    free(t);
    /* the table cannot fit 60 columns; the name is not padded past itself */
    t = print_width(false, &r, 60);
    assert_non_null(
        strstr(t, "\nmode sliced  footprints 12.00 GiB of 8.00 GiB\n  mode changes 0\n"));
    assert_non_null(strstr(t, "\n 3 4242 trainer running "));
    free(t);
    /* a name longer than the room is cut with "..." last */
    snprintf(r.tasks[0].name, sizeof(r.tasks[0].name), "%s", "trainer-with-a-long-name-0123");
    t = print_width(false, &r, 80);
    want = " 3 4242 trainer-with-a... running batch   0 1.5G   40G   1.2M 4.9K   99999 25.0%\n";
    assert_memory_equal(task_row(t), want, strlen(want));
    free(t);
    /* cut by characters, never inside one: the \xc3\xa9 (one column) is the
     * 14th character and stays whole (until 2026-12-02 the cut counted bytes:
     * "trainer-with-..." and a blank of padding) */
    snprintf(r.tasks[0].name, sizeof(r.tasks[0].name), "%s", "trainer-with-\xc3\xa9-long-name");
    t = print_width(false, &r, 80);
    want = " 3 4242 trainer-with-\xc3\xa9... running ";
    assert_memory_equal(task_row(t), want, strlen(want));
    free(t);
    /* the 15th character is two bytes: the cut keeps none of it */
    snprintf(r.tasks[0].name, sizeof(r.tasks[0].name), "%s", "trainer-with-a\xc3\xa9long-name");
    t = print_width(false, &r, 80);
    want = " 3 4242 trainer-with-a... running ";
    assert_memory_equal(task_row(t), want, strlen(want));
    free(t);
}

/* The pinned bytes (v9): a PINNED (narrow PIN) column after the resident
 * bytes while a task pins any, none while no task does (the table as
 * before); the JSON carries "pinned" either way. */
static void test_table_pinned(void **state)
{
    (void)state;
    dmn_report_t r = sample();
    r.tasks[0].resident = 3ull << 29;
    r.tasks[0].total = 40ull << 30;
    char *t = print_width(false, &r, 80);
    assert_null(strstr(t, "PIN"));
    free(t);
    char *j = print(true, &r);
    assert_non_null(strstr(j, "\"resident\": 1610612736, \"pinned\": 0, \"total\": "));
    free(j);
    r.tasks[0].pinned = 1ull << 29;
    assert_table(print_width(false, &r, 80),
                 "\nID  PID NAME    STATE   CLASS PRI  RES  PIN TOTAL FAULTS MIGR KERNELS SHARE\n",
                 " 3 4242 trainer running batch   0 1.5G 512M   40G      0   0B       0 25.0%\n");
    assert_table(print_width(false, &r, 200), " RESIDENT     PINNED     TOTAL ",
                 " 3 4242 trainer running batch   0 1.50 GiB 512.00 MiB 40.00 GiB      0 ");
    j = print(true, &r);
    assert_non_null(strstr(j, "\"resident\": 1610612736, \"pinned\": 536870912, \"total\": "));
    free(j);
}

/* A refreshing view (gmux top) keeps PIN from the first snapshot where a
 * task pins memory: the next, where none does, still has it (0B), in the
 * narrow and the wide form; before that snapshot it has none, and a
 * one-shot table (gmux status) of the second snapshot has none. */
static void test_table_keeps_pin(void **state)
{
    (void)state;
    dmn_table_keep_t keep = {0};
    dmn_report_t r = sample();
    r.tasks[0].resident = 3ull << 29;
    r.tasks[0].total = 40ull << 30;
    char *t = print_kept(false, &r, 80, &keep);
    assert_null(strstr(t, "PIN"));
    free(t);
    r.tasks[0].pinned = 1ull << 29;
    t = print_kept(false, &r, 80, &keep);
    assert_non_null(strstr(t, " RES  PIN TOTAL "));
    free(t);
    r.tasks[0].pinned = 0;
    assert_table(print_kept(false, &r, 80, &keep),
                 "\nID  PID NAME    STATE   CLASS PRI  RES PIN TOTAL FAULTS MIGR KERNELS SHARE\n",
                 " 3 4242 trainer running batch   0 1.5G  0B   40G      0   0B       0 25.0%\n");
    assert_table(print_kept(false, &r, 200, &keep), " RESIDENT PINNED     TOTAL ",
                 " 3 4242 trainer running batch   0 1.50 GiB    0 B 40.00 GiB      0 ");
    t = print_width(false, &r, 80);
    assert_null(strstr(t, "PIN"));
    free(t);
}

/* The display column where the first occurrence of word starts on the
 * line at line: code points before it (the names here are one column a
 * character). */
static size_t column_of(const char *line, const char *word)
{
    const char *end = strchr(line, '\n');
    const char *at = strstr(line, word);
    assert_non_null(at);
    assert_true(end == NULL || at < end);
    size_t col = 0;
    for (const char *p = line; p < at; p++)
        col += ((unsigned char)*p & 0xC0) != 0x80;
    return col;
}

/* A name with multi-byte characters ("na\xc3\xafve-\xc3\xb1-train": 13 columns,
 * 15 bytes) takes as many columns as it has characters: the STATE column
 * starts at the same column on every row, in both forms. Until 2026-12-02
 * widths counted bytes: the ASCII rows were padded two columns past it. */
static void test_table_utf8_aligned(void **state)
{
    (void)state;
    dmn_report_t r = sample();
    r.n_tasks = 3;
    r.tasks[1] = r.tasks[0];
    r.tasks[1].id = 4;
    snprintf(r.tasks[1].name, sizeof(r.tasks[1].name), "%s", "na\xc3\xafve-\xc3\xb1-train");
    r.tasks[2] = r.tasks[0];
    r.tasks[2].id = 5;
    snprintf(r.tasks[2].name, sizeof(r.tasks[2].name), "%s", "ab");
    const unsigned widths[] = {80, 200};
    for (size_t i = 0; i < 2; i++) {
        char *t = print_width(false, &r, widths[i]);
        const char *head = strstr(t, "\nID ");
        assert_non_null(head);
        head++;
        size_t col = column_of(head, "STATE");
        const char *row = head;
        for (int k = 0; k < 3; k++) {
            row = strchr(row, '\n') + 1;
            assert_int_equal(column_of(row, " running ") + 1, col);
        }
        assert_non_null(strstr(t, " na\xc3\xafve-\xc3\xb1-train running "));
        free(t);
    }
}

/* The summary lines wrap by columns too: a socket path of 2-byte characters
 * whose line fits in code points keeps its pid on that line. */
static void test_summary_wraps_by_columns(void **state)
{
    (void)state;
    dmn_report_t r = sample();
    r.daemon_pid = 31337;
    const char *path = "/run/\xc3\xb1\xc3\xb1\xc3\xb1\xc3\xb1\xc3\xb1\xc3\xb1.sock";
    char line[128]; /* 33 code points, 39 bytes */
    snprintf(line, sizeof(line), "gmuxd %s  pid 31337", path);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    dmn_report_table(f, path, &r, 35);
    fclose(f);
    assert_true(strncmp(buf, line, strlen(line)) == 0);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_planned),
        cmocka_unit_test(test_capacity_line),
        cmocka_unit_test(test_planned),
        cmocka_unit_test(test_daemon_pid),
        cmocka_unit_test(test_evict_waits),
        cmocka_unit_test(test_table_forms),
        cmocka_unit_test(test_table_pinned),
        cmocka_unit_test(test_table_keeps_pin),
        cmocka_unit_test(test_table_utf8_aligned),
        cmocka_unit_test(test_summary_wraps_by_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
