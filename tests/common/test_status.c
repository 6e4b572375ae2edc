/* Tests of the status type and its generated string tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <gmux/status.h>

#include "common/errors.h"

#define ALL_(name, value, msg) name,
static const gmux_status_t all[] = {GMUX_STATUS_LIST(ALL_)};
#undef ALL_
#define N_ALL (sizeof(all) / sizeof(all[0]))

static void test_ok_is_zero_and_errors_negative(void **state)
{
    (void)state;
    assert_int_equal(GMUX_OK, 0);
    for (size_t i = 1; i < N_ALL; i++)
        assert_true(all[i] < 0);
}

static void test_messages_distinct_and_known(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_ALL; i++) {
        assert_string_not_equal(gmux_status_str(all[i]), "unknown status");
        for (size_t j = i + 1; j < N_ALL; j++) {
            assert_int_not_equal(all[i], all[j]);
            assert_string_not_equal(gmux_status_str(all[i]), gmux_status_str(all[j]));
        }
    }
    assert_string_equal(gmux_status_str(GMUX_ERR_TIMEOUT), "timed out");
    assert_string_equal(gmux_status_name(GMUX_ERR_TIMEOUT), "GMUX_ERR_TIMEOUT");
    assert_string_equal(gmux_status_name(GMUX_OK), "GMUX_OK");
}

static void test_unknown_value(void **state)
{
    (void)state;
    assert_string_equal(gmux_status_str((gmux_status_t)-9999), "unknown status");
    assert_string_equal(gmux_status_str((gmux_status_t)5), "unknown status");
    assert_string_equal(gmux_status_name((gmux_status_t)-9999), "GMUX_STATUS_UNKNOWN");
}

static void test_errno_conversion(void **state)
{
    (void)state;
    assert_int_equal(com_status_from_errno(0), GMUX_OK);
    assert_int_equal(com_status_from_errno(ENOMEM), GMUX_ERR_NOMEM);
    assert_int_equal(com_status_from_errno(ETIMEDOUT), GMUX_ERR_TIMEOUT);
    assert_int_equal(com_status_from_errno(ECONNREFUSED), GMUX_ERR_PEER);
    assert_int_equal(com_status_from_errno(EPIPE), GMUX_ERR_CLOSED);
    assert_int_equal(com_status_from_errno(EIO), GMUX_ERR_IO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok_is_zero_and_errors_negative),
        cmocka_unit_test(test_messages_distinct_and_known),
        cmocka_unit_test(test_unknown_value),
        cmocka_unit_test(test_errno_conversion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
