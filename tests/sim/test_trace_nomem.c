/*
 * The trace readers say "out of memory" with GMUX_ERR_NOMEM, not as a parse
 * error. This binary is linked with realloc wrapped (-Wl,--wrap=realloc):
 * the readers' own calls go through __wrap_realloc, which can be told to let
 * a number of calls through and then refuse every one (libc's internal
 * allocations, such as getline's, are not wrapped). getline is wrapped too,
 * to fail as it does when its buffer cannot grow: under optimisation glibc's
 * stdio.h makes it an inline call of __getdelim, so both are
 * (-Wl,--wrap=getline,--wrap=__getdelim).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include "sim_test_util.h"

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);

static int armed;        /* refuse reallocs once ok_left is spent */
static unsigned ok_left; /* reallocs still let through while armed */
static unsigned refused; /* reallocs refused */

void *__wrap_realloc(void *p, size_t n)
{
    if (armed) {
        if (ok_left == 0) {
            refused++;
            return NULL;
        }
        ok_left--;
    }
    return __real_realloc(p, n);
}

ssize_t __real_getline(char **line, size_t *cap, FILE *f);
ssize_t __wrap_getline(char **line, size_t *cap, FILE *f);
ssize_t __real___getdelim(char **line, size_t *cap, int delim, FILE *f);
ssize_t __wrap___getdelim(char **line, size_t *cap, int delim, FILE *f);

static int lines_armed;      /* fail getline with ENOMEM once lines_left is spent */
static unsigned lines_left;  /* getline calls still let through while armed */
static unsigned lines_fails; /* getline calls failed */

/* Whether this call is to fail (ENOMEM set). */
static int line_fails(void)
{
    if (!lines_armed)
        return 0;
    if (lines_left == 0) {
        lines_fails++;
        errno = ENOMEM;
        return 1;
    }
    lines_left--;
    return 0;
}

ssize_t __wrap_getline(char **line, size_t *cap, FILE *f)
{
    return line_fails() ? -1 : __real_getline(line, cap, f);
}

ssize_t __wrap___getdelim(char **line, size_t *cap, int delim, FILE *f)
{
    return line_fails() ? -1 : __real___getdelim(line, cap, delim, f);
}

static void arm(unsigned ok)
{
    armed = 1;
    ok_left = ok;
    refused = 0;
}

/* Task 0 allocates, then launches with two arguments and one range. */
#define TRACE                                                                                      \
    "gmux-trace 1\ntask 0 a\nkernel 0 k0\nalloc 0 1 0x10000 4096\n"                                \
    "launch 0 0 grid=1,1,1 block=32,1,1 ns=10 args=p:0x10000,v:4 touch=r:0x10000+16\nend\n"

static void write_trace(char *txt, size_t tlen, char *bin, size_t blen)
{
    tmp_path(txt, tlen, "nomem-t");
    FILE *f = fopen(txt, "w");
    assert_non_null(f);
    fputs(TRACE, f);
    assert_int_equal(fclose(f), 0);
    tmp_path(bin, blen, "nomem-b");
    char err[512];
    sim_source_t *src;
    assert_int_equal(sim_trace_open(txt, &src, err, sizeof(err)), GMUX_OK);
    assert_int_equal(write_source_to(src, bin, SIM_TRACE_BINARY, err, sizeof(err)), GMUX_OK);
    sim_source_close(src);
}

/* Reads the launch of task 0 with `ok` reallocs let through: the launch's
 * arguments (ok = 0) or its ranges (ok = 1) cannot grow. */
static void launch_out_of_memory(const char *path, unsigned ok)
{
    char err[512];
    sim_source_t *src;
    sim_event_t ev;
    assert_int_equal(sim_trace_open(path, &src, err, sizeof(err)), GMUX_OK);
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(ev.kind, SIM_EV_ALLOC);
    arm(ok);
    gmux_status_t st = sim_source_next(src, 0, &ev);
    armed = 0;
    assert_int_equal(refused, 1);
    assert_int_equal(st, GMUX_ERR_NOMEM);
    assert_non_null(strstr(src->error, "out of memory"));
    /* the failed cursor says it again */
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_ERR_NOMEM);
    assert_non_null(strstr(src->error, "out of memory"));
    sim_source_close(src);

    /* and with memory the same trace reads to its end */
    assert_int_equal(sim_trace_open(path, &src, err, sizeof(err)), GMUX_OK);
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(ev.kind, SIM_EV_LAUNCH);
    assert_int_equal(ev.u.launch.nargs, 2);
    assert_int_equal(ev.u.launch.nranges, 1);
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_ERR_NOT_FOUND);
    sim_source_close(src);
}

static void test_launch_out_of_memory(void **state)
{
    (void)state;
    char txt[64], bin[64];
    write_trace(txt, sizeof(txt), bin, sizeof(bin));
    for (unsigned ok = 0; ok < 2; ok++) {
        launch_out_of_memory(txt, ok);
        launch_out_of_memory(bin, ok);
    }
    remove(txt), remove(bin);
}

/* A text trace's declarations that cannot be stored: open fails with NOMEM. */
static void test_text_declarations_out_of_memory(void **state)
{
    (void)state;
    char txt[64], bin[64], err[512] = "";
    write_trace(txt, sizeof(txt), bin, sizeof(bin));
    sim_source_t *src = NULL;
    arm(0);
    gmux_status_t st = sim_trace_open(txt, &src, err, sizeof(err));
    armed = 0;
    assert_true(refused >= 1);
    assert_int_equal(st, GMUX_ERR_NOMEM);
    assert_non_null(strstr(err, "out of memory"));
    assert_null(src);
    remove(txt), remove(bin);
}

/* A line the text reader cannot hold (getline's ENOMEM) is out of memory,
 * GMUX_ERR_NOMEM, as a decoded launch that cannot grow is: until
 * 2026-12-03 it was said as an I/O "read error" (GMUX_ERR_IO), both while
 * the declarations were read and at an event. */
static void test_text_line_out_of_memory(void **state)
{
    (void)state;
    char txt[64], bin[64], err[512] = "";
    write_trace(txt, sizeof(txt), bin, sizeof(bin));
    sim_source_t *src = NULL;
    /* the declarations: the header line read, the next one cannot be */
    lines_armed = 1, lines_left = 1, lines_fails = 0;
    gmux_status_t st = sim_trace_open(txt, &src, err, sizeof(err));
    lines_armed = 0;
    assert_int_equal(lines_fails, 1);
    assert_int_equal(st, GMUX_ERR_NOMEM);
    assert_non_null(strstr(err, "out of memory"));
    assert_null(strstr(err, "read error"));
    assert_null(src);
    /* an event: the alloc read, the launch's line cannot be */
    assert_int_equal(sim_trace_open(txt, &src, err, sizeof(err)), GMUX_OK);
    sim_event_t ev;
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(ev.kind, SIM_EV_ALLOC);
    lines_armed = 1, lines_left = 0, lines_fails = 0;
    st = sim_source_next(src, 0, &ev);
    lines_armed = 0;
    assert_int_equal(lines_fails, 1);
    assert_int_equal(st, GMUX_ERR_NOMEM);
    assert_non_null(strstr(src->error, "out of memory"));
    /* the failed cursor says it again */
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_ERR_NOMEM);
    sim_source_close(src);
    /* the lines after 'end' (only blanks and comments may follow) */
    assert_int_equal(sim_trace_open(txt, &src, err, sizeof(err)), GMUX_OK);
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    lines_armed = 1, lines_left = 1, lines_fails = 0; /* 'end' read, the next not */
    st = sim_source_next(src, 0, &ev);
    lines_armed = 0;
    assert_int_equal(lines_fails, 1);
    assert_int_equal(st, GMUX_ERR_NOMEM);
    sim_source_close(src);
    remove(txt), remove(bin);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_out_of_memory),
        cmocka_unit_test(test_text_declarations_out_of_memory),
        cmocka_unit_test(test_text_line_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
