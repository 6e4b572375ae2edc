/* Tests of GMUX_LOG parsing, level filtering and the sink. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/log.h"

struct capture {
    int lines;
    char last[1024];
    com_log_subsys_t subsys;
};

static void capture_sink(com_log_level_t level, com_log_subsys_t subsys, const char *line,
                         void *arg)
{
    (void)level;
    struct capture *c = arg;
    c->lines++;
    c->subsys = subsys;
    strncpy(c->last, line, sizeof(c->last) - 1);
}

static int setup(void **state)
{
    static struct capture c;
    memset(&c, 0, sizeof(c));
    com_log_set_sink(capture_sink, &c);
    *state = &c;
    return com_log_configure(NULL, NULL, 0) == GMUX_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    com_log_set_sink(NULL, NULL);
    com_log_set_clock(COM_LOG_CLOCK_ELAPSED);
    return 0;
}

static int evaluations;
static int side_effect(void)
{
    return ++evaluations;
}

static void test_default_is_warn(void **state)
{
    struct capture *c = *state;
    COM_INFO(NET, "hidden %d", 1);
    assert_int_equal(c->lines, 0);
    COM_WARN(NET, "shown %d", 2);
    assert_int_equal(c->lines, 1);
    assert_non_null(strstr(c->last, "shown 2"));
    assert_non_null(strstr(c->last, " warn "));
    assert_non_null(strstr(c->last, " net "));
    assert_non_null(strstr(c->last, "test_log.c:"));
}

static void test_level_for_named_subsystem_only(void **state)
{
    struct capture *c = *state;
    assert_int_equal(com_log_configure("debug,net", NULL, 0), GMUX_OK);
    COM_DEBUG(NET, "net debug");
    assert_int_equal(c->lines, 1);
    assert_int_equal(c->subsys, COM_SUBSYS_NET);
    COM_DEBUG(ENGINE, "engine debug");
    COM_INFO(ENGINE, "engine info");
    assert_int_equal(c->lines, 1);
    COM_TRACE(NET, "net trace");
    assert_int_equal(c->lines, 1);
}

static void test_bare_level_applies_everywhere(void **state)
{
    struct capture *c = *state;
    assert_int_equal(com_log_configure("info", NULL, 0), GMUX_OK);
    COM_INFO(SIM, "a");
    COM_INFO(DAEMON, "b");
    COM_DEBUG(SIM, "c");
    assert_int_equal(c->lines, 2);
}

static void test_assignment_form_and_off(void **state)
{
    struct capture *c = *state;
    assert_int_equal(com_log_configure("off, engine=trace", NULL, 0), GMUX_OK);
    COM_ERROR(NET, "silenced");
    assert_int_equal(c->lines, 0);
    COM_TRACE(ENGINE, "loud");
    assert_int_equal(c->lines, 1);
}

static void test_arguments_not_evaluated_when_off(void **state)
{
    struct capture *c = *state;
    evaluations = 0;
    COM_DEBUG(SHIM, "value %d", side_effect());
    assert_int_equal(evaluations, 0);
    COM_ERROR(SHIM, "value %d", side_effect());
    assert_int_equal(evaluations, 1);
    assert_non_null(strstr(c->last, "value 1"));
}

static void test_bad_spec_is_rejected_and_changes_nothing(void **state)
{
    struct capture *c = *state;
    char err[256] = "";
    assert_int_equal(com_log_configure("debug", NULL, 0), GMUX_OK);
    assert_int_equal(com_log_configure("trace,netz", err, sizeof(err)), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "'netz'"));
    assert_int_equal(com_log_configure("net=loud", err, sizeof(err)), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "'net=loud'"));
    /* Still "debug" everywhere, not trace. */
    COM_DEBUG(CLI, "d");
    COM_TRACE(CLI, "t");
    assert_int_equal(c->lines, 1);
}

static void test_long_line_truncated_safely(void **state)
{
    struct capture *c = *state;
    char big[4000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    COM_ERROR(COMMON, "%s", big);
    assert_int_equal(c->lines, 1);
    assert_true(strlen(c->last) < 1024);
    assert_true(strlen(c->last) > 900);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(com_log_level_name(COM_LOG_DEBUG), "debug");
    assert_string_equal(com_log_subsys_name(COM_SUBSYS_DAEMON), "daemon");
    assert_string_equal(com_log_subsys_name((com_log_subsys_t)99), "?");
}

/* The UTC stamp of fixed instants: leap days (2000 is a leap year, 2100 is
 * not), the end of a day, milliseconds cut and not rounded. */
static void test_utc_format(void **state)
{
    (void)state;
    static const struct {
        uint64_t secs, ns;
        const char *want;
    } cases[] = {
        {0, 0, "1970-01-01T00:00:00.000Z"},
        {951782400, 999999999, "2000-02-29T00:00:00.999Z"},
        {1709251199, 500000000, "2024-02-29T23:59:59.500Z"},
        {1796185867, 123456789, "2026-12-02T04:31:07.123Z"},
        {4107542399, 1000000, "2100-02-28T23:59:59.001Z"},
        {4107542400, 0, "2100-03-01T00:00:00.000Z"},
        {18446744073, 709551615, "2554-07-21T23:34:33.709Z"}, /* UINT64_MAX ns */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[COM_LOG_UTC_LEN];
        size_t n =
            com_log_format_utc(cases[i].secs * 1000000000ull + cases[i].ns, buf, sizeof(buf));
        assert_int_equal(n, COM_LOG_UTC_LEN - 1);
        assert_string_equal(buf, cases[i].want);
    }
    char small[COM_LOG_UTC_LEN - 1] = "untouched";
    assert_int_equal(com_log_format_utc(0, small, sizeof(small)), 0);
    assert_string_equal(small, "untouched");
}

static void test_clock_parse(void **state)
{
    (void)state;
    com_log_clock_t c = COM_LOG_CLOCK_UTC;
    assert_int_equal(com_log_clock_parse("elapsed", &c), GMUX_OK);
    assert_int_equal(c, COM_LOG_CLOCK_ELAPSED);
    assert_int_equal(com_log_clock_parse("UTC", &c), GMUX_OK);
    assert_int_equal(c, COM_LOG_CLOCK_UTC);
    assert_int_equal(com_log_clock_parse("", &c), GMUX_OK);
    assert_int_equal(c, COM_LOG_CLOCK_ELAPSED);
    assert_int_equal(com_log_clock_parse("local", &c), GMUX_ERR_PARSE);
    assert_int_equal(com_log_clock_parse("utc ", &c), GMUX_ERR_PARSE);
    assert_int_equal(c, COM_LOG_CLOCK_ELAPSED);
}

static void wall_stamp(char buf[COM_LOG_UTC_LEN])
{
    struct timespec ts;
    assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts), 0);
    com_log_format_utc((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, buf,
                       COM_LOG_UTC_LEN);
}

/* With the utc clock a line carries the wall clock between the instants
 * before and after it was written (the stamps sort as text); the elapsed
 * clock, the default, carries seconds. */
static void test_line_stamps(void **state)
{
    struct capture *c = *state;
    char before[COM_LOG_UTC_LEN], after[COM_LOG_UTC_LEN], got[COM_LOG_UTC_LEN];
    assert_int_equal(com_log_get_clock(), COM_LOG_CLOCK_ELAPSED);
    COM_WARN(NET, "elapsed");
    const char *t = strchr(c->last, ' ');
    assert_non_null(t);
    while (*t == ' ')
        t++;
    assert_true(*t >= '0' && *t <= '9');
    assert_null(strchr(c->last, 'Z'));

    com_log_set_clock(COM_LOG_CLOCK_UTC);
    wall_stamp(before);
    COM_WARN(NET, "wall");
    wall_stamp(after);
    t = strchr(c->last, ' ');
    assert_non_null(t);
    memcpy(got, t + 1, COM_LOG_UTC_LEN - 1);
    got[COM_LOG_UTC_LEN - 1] = '\0';
    assert_true(strcmp(before, got) <= 0);
    assert_true(strcmp(got, after) <= 0);
    static const char rest[] = " warn  net test_log.c:";
    assert_int_equal(strncmp(t + COM_LOG_UTC_LEN, rest, sizeof(rest) - 1), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_default_is_warn),
        T(test_level_for_named_subsystem_only),
        T(test_bare_level_applies_everywhere),
        T(test_assignment_form_and_off),
        T(test_arguments_not_evaluated_when_off),
        T(test_bad_spec_is_rejected_and_changes_nothing),
        T(test_long_line_truncated_safely),
        T(test_names),
        T(test_utc_format),
        T(test_clock_parse),
        T(test_line_stamps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
