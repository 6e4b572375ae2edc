/* Tests of GMUX_LOG parsing, level filtering and the sink. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
