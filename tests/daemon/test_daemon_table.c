/*
 * Integration tests of gmuxd with real processes: the task table of
 * `gmux status` and `gmux top` against the daemon's STATUS. Three clients
 * (gmux_test_client) with known budgets, one of them having run a kernel
 * and gone idle, so every value in the table is known and stays put while
 * the commands run. The table fits the width it is given (COLUMNS, else
 * the terminal, else 80 columns): until 2026-12-02 it was 111 columns wide
 * whatever the terminal, the only output of the CLI wider than 80.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "drig.h"
#include "tproc.h"

/* 28 bytes: more than the narrow table has room for, less than a name holds */
#define LONG_NAME "a-rather-long-task-name-here"

static dmn_report_t rep;
static char out[65536], err[4096];

/* What each client shows, in the narrow form (units of at most 4 columns)
 * and the wide one (com_format_size). */
typedef struct want {
    const char *name, *cls;
    int prio;
    uint64_t total, resident, migrated, faults, kernels;
    const char *narrow[5]; /* RES TOTAL FAULTS MIGR KERNELS */
    const char *wide[5];
} want_t;

static const want_t wants[3] = {
    {"k0",
     "batch",
     0,
     1536ull << 20,
     0,
     0,
     0,
     0,
     {"0B", "1.5G", "0", "0B", "0"},
     {"0 B", "1.50 GiB", "0", "0 B", "0"}},
    {LONG_NAME,
     "latency",
     2,
     300ull << 20,
     0,
     0,
     0,
     0,
     {"0B", "300M", "0", "0B", "0"},
     {"0 B", "300.00 MiB", "0", "0 B", "0"}},
    /* one kernel run: gmux_test_client's 64 MiB resident, 3 faults, 1 MiB moved */
    {"worker",
     "batch",
     -1,
     40960ull << 20,
     64ull << 20,
     1ull << 20,
     3,
     1,
     {"64M", "40G", "3", "1.0M", "1"},
     {"64.00 MiB", "40.00 GiB", "3", "1.00 MiB", "1"}},
};

/* Three tasks, each has reported its memory, and the worker its kernel.
 * (Until 2026-12-03 it waited for the worker only: under load the worker
 * could register, run and report before k0's first STATS was read, and the
 * premise below found k0's total 0.) */
static int worker_ran(const dmn_report_t *r, void *arg)
{
    (void)arg;
    int ran = 0, reported = 0;
    for (uint32_t i = 0; i < r->n_tasks; i++) {
        ran += strcmp(r->tasks[i].name, "worker") == 0 && r->tasks[i].kernels == 1;
        reported += r->tasks[i].total > 0;
    }
    return r->n_tasks == 3 && ran == 1 && reported == 3;
}

/* ... and all three idle: the worker past the IDLE that follows its stats.
 * (Until 2026-12-04 worker_ran alone: the report between the worker's STATS
 * and its IDLE showed it running, the CLI run later printed it idle.) */
static int all_idle(const dmn_report_t *r, void *arg)
{
    int idle = 0;
    for (uint32_t i = 0; i < r->n_tasks; i++)
        idle += r->tasks[i].state == DMN_STATE_IDLE;
    return worker_ran(r, arg) && idle == 3;
}

/* How long the clients stay: the test's ctest TIMEOUT, so none leaves while
 * it runs, however slow the machine; drig_fini kills them at its end. (Until
 * 2026-12-04 k0 and LONG_NAME gave up their go file after 20 s and the worker
 * ran its second kernel after 60 s idle: a loaded run that reached a CLI
 * command later than that lost their rows, or the worker's counts.) */
#define STAY_S 600

/* Starts the daemon and the three clients: k0 and LONG_NAME registered and
 * waiting on a go file that never comes, worker past its one kernel and
 * idle; all three stay for STAY_S; *r left with the report that showed it. */
static void start_three(drig_t *r)
{
    drig_init(r);
    assert_true(drig_start_daemon(r, 10, "none") > 0);
    char stay[16];
    snprintf(stay, sizeof(stay), "%d", STAY_S);
    setenv("GMUX_TEST_CLIENT_WAIT_S", stay, 1);
    drig_wait_for_go(r, "never");
    assert_true(drig_start_client_mem(r, wants[0].name, wants[0].cls, wants[0].prio, 1, 1000, 0,
                                      1536, 0) > 0);
    assert_true(drig_start_client_mem(r, wants[1].name, wants[1].cls, wants[1].prio, 1, 1000, 0,
                                      300, 0) > 0);
    drig_wait_for_go(r, NULL);
    /* two kernels, STAY_S idle after each: killed by drig_fini in the first
     * idle; it keeps its turn after the first kernel's stats until the hold
     * file comes, as a loaded machine may keep it between the two messages */
    char hold[sizeof(r->dir) + 8];
    snprintf(hold, sizeof(hold), "%s/hold", r->dir);
    setenv("GMUX_TEST_CLIENT_HOLD", hold, 1);
    assert_true(drig_start_client_mem(r, wants[2].name, wants[2].cls, wants[2].prio, 2, 1000,
                                      STAY_S * 1000000L, 40960, 0) > 0);
    unsetenv("GMUX_TEST_CLIENT_HOLD");
    unsetenv("GMUX_TEST_CLIENT_WAIT_S");
    assert_true(drig_until(r, worker_ran, NULL, 60.0, &rep));
    FILE *f = fopen(hold, "w");
    assert_true(f && fclose(f) == 0);
    assert_true(drig_until(r, all_idle, NULL, 60.0, &rep));
    for (int w = 0; w < 3; w++) { /* the premise: STATUS holds what wants says */
        const dmn_status_task_t *t = NULL;
        for (uint32_t i = 0; i < rep.n_tasks; i++)
            if (strcmp(rep.tasks[i].name, wants[w].name) == 0)
                t = &rep.tasks[i];
        assert_non_null(t);
        assert_int_equal(t->total, wants[w].total);
        assert_int_equal(t->resident, wants[w].resident);
        assert_int_equal(t->migrated, wants[w].migrated);
        assert_int_equal(t->faults, wants[w].faults);
        assert_int_equal(t->kernels, wants[w].kernels);
    }
}

/* Splits the row of task t (the line whose first two words are its id and
 * pid) into words; returns how many (at most cap). */
static int row_words(const char *text, const dmn_status_task_t *t, char words[][64], int cap)
{
    char id[16], pid[16];
    snprintf(id, sizeof(id), "%u", t->id);
    snprintf(pid, sizeof(pid), "%u", t->pid);
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        char buf[512];
        size_t len =
            (size_t)(end - line) < sizeof(buf) - 1 ? (size_t)(end - line) : sizeof(buf) - 1;
        memcpy(buf, line, len);
        buf[len] = '\0';
        int n = 0;
        for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && n < cap;
             w = strtok_r(NULL, " ", &save))
            snprintf(words[n++], 64, "%s", w);
        if (n >= 2 && strcmp(words[0], id) == 0 && strcmp(words[1], pid) == 0)
            return n;
        line = *end ? end + 1 : end;
    }
    return 0;
}

/* Every task of rep has its row in text, with the values wants gives in
 * the form asked (wide or not); the name whole or cut with "..." at the
 * end. Returns how many names were cut. */
static int check_rows(const char *text, int wide)
{
    int cut = 0;
    assert_int_equal(rep.n_tasks, 3);
    for (uint32_t i = 0; i < rep.n_tasks; i++) {
        const dmn_status_task_t *t = &rep.tasks[i];
        const want_t *w = NULL;
        for (int k = 0; k < 3; k++)
            if (strcmp(t->name, wants[k].name) == 0)
                w = &wants[k];
        assert_non_null(w);
        char words[16][64];
        int n = row_words(text, t, words, 16);
        if (wide) { /* sizes are two words: "1.50 GiB" */
            assert_int_equal(n, 15);
        } else {
            assert_int_equal(n, 12);
        }
        size_t len = strlen(words[2]);
        if (strcmp(words[2], t->name) != 0) {
            assert_true(len > 3 && strcmp(words[2] + len - 3, "...") == 0);
            assert_memory_equal(words[2], t->name, len - 3);
            cut++;
        }
        assert_string_equal(words[3], dmn_state_name(t->state));
        assert_string_equal(words[4], w->cls);
        char prio[16];
        snprintf(prio, sizeof(prio), "%d", w->prio);
        assert_string_equal(words[5], prio);
        int k = 6;
        for (int c = 0; c < 5; c++) {
            const char *v = wide ? w->wide[c] : w->narrow[c];
            char cell[2 * sizeof(words[0])]; /* two words and their blank */
            if (strchr(v, ' ')) {
                snprintf(cell, sizeof(cell), "%s %s", words[k], words[k + 1]);
                k += 2;
            } else {
                snprintf(cell, sizeof(cell), "%s", words[k++]);
            }
            assert_string_equal(cell, v);
        }
        /* the share: a percentage with one decimal, 0.0% for the tasks that
         * never ran */
        len = strlen(words[k]);
        assert_true(len >= 4 && words[k][len - 1] == '%' && words[k][len - 3] == '.');
        if (w->kernels == 0)
            assert_string_equal(words[k], "0.0%");
    }
    return cut;
}

/* gmux status and top --once on an 80-column terminal (COLUMNS=80, or no
 * COLUMNS and no terminal): every line fits, every value matches STATUS,
 * the long name cut; the JSON keeps it whole, and the exact bytes. */
static void test_fits_80(void **state)
{
    (void)state;
    static drig_t r;
    start_three(&r);
    static const char *const how[][2] = {{"status", NULL}, {"top", "--once"}};
    static char *const widths[][2] = {{"COLUMNS=80", NULL}, {"COLUMNS=", NULL}};
    for (int h = 0; h < 2; h++) {
        for (int e = 0; e < 2; e++) {
            char *const *argv = how[h][1] ? drig_cli_argv(how[h][0], how[h][1], "--socket", r.sock)
                                          : drig_cli_argv(how[h][0], "--socket", r.sock, NULL);
            int st = tproc_capture(argv, widths[e], 30.0, out, sizeof(out), err, sizeof(err));
            if (st != 0)
                fprintf(stderr, "%s", err);
            assert_int_equal(st, 0);
            printf("gmux %s, %s:\n%s", how[h][0], widths[e][0], out);
            assert_true(tproc_fits_cols(out, 80));
            assert_non_null(strstr(out, "RES"));
            assert_int_equal(check_rows(out, 0), 1); /* LONG_NAME only */
        }
    }
    int st = tproc_capture(drig_cli_argv("status", "--json", "--socket", r.sock), widths[0], 30.0,
                           out, sizeof(out), err, sizeof(err));
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "\"name\": \"" LONG_NAME "\""));
    assert_non_null(strstr(out, "\"total\": 42949672960,")); /* 40 GiB, every byte */
    assert_non_null(strstr(out, "\"resident\": 67108864,"));
    drig_fini(&r);
}

/* A wider terminal gets the wide form: whole names, sizes to two decimals,
 * full headers; still within the width. */
static void test_wide_columns(void **state)
{
    (void)state;
    static drig_t r;
    start_three(&r);
    char *env[] = {"COLUMNS=200", NULL};
    int st = tproc_capture(drig_cli_argv("status", "--socket", r.sock, NULL), env, 30.0, out,
                           sizeof(out), err, sizeof(err));
    assert_int_equal(st, 0);
    printf("%s", out);
    assert_true(tproc_fits_cols(out, 200));
    assert_non_null(strstr(out, "RESIDENT"));
    assert_non_null(strstr(out, "MIGRATED"));
    assert_int_equal(check_rows(out, 1), 0);
    drig_fini(&r);
}

/* gmux top on a terminal without COLUMNS takes the terminal's width
 * (TIOCGWINSZ): a pseudo-terminal of 120 columns gets the wide form, one of
 * 60 the narrow one (which cannot fit 60; the long name is cut). */
static void test_top_terminal_width(void **state)
{
    (void)state;
    static drig_t r;
    start_three(&r);
    for (int pass = 0; pass < 2; pass++) {
        struct winsize ws = {.ws_row = 40, .ws_col = pass ? 60 : 120};
        int master;
        fflush(NULL);
        pid_t pid = forkpty(&master, NULL, NULL, &ws);
        assert_true(pid >= 0);
        if (pid == 0) {
            unsetenv("COLUMNS");
            execl(GMUX_CLI_PATH, GMUX_CLI_PATH, "top", "--once", "--socket", r.sock, (char *)NULL);
            _exit(127);
        }
        size_t len = 0;
        uint64_t deadline = com_deadline_after_ns(30 * COM_NS_PER_S);
        while (!com_deadline_passed(deadline) && len + 1 < sizeof(out)) {
            struct pollfd pf = {master, POLLIN, 0};
            if (poll(&pf, 1, 100) <= 0)
                continue;
            ssize_t n = read(master, out + len, sizeof(out) - 1 - len);
            if (n <= 0) /* EIO once the child has gone and closed its side */
                break;
            len += (size_t)n;
        }
        out[len] = '\0';
        close(master);
        int code = drig_wait(pid, 10.0);
        assert_int_equal(code, 0);
        /* the terminal ends lines with \r\n */
        char *w = out;
        for (const char *p = out; *p; p++)
            if (*p != '\r')
                *w++ = *p;
        *w = '\0';
        printf("%s", out);
        if (pass == 0) {
            assert_true(tproc_fits_cols(out, 120));
            assert_non_null(strstr(out, "RESIDENT"));
            assert_int_equal(check_rows(out, 1), 0);
        } else {
            assert_non_null(strstr(out, "RES "));
            assert_int_equal(check_rows(out, 0), 1);
        }
    }
    drig_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fits_80, drig_teardown),
        cmocka_unit_test_teardown(test_wide_columns, drig_teardown),
        cmocka_unit_test_teardown(test_top_terminal_width, drig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
