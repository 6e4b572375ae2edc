/* Tests of the monotonic clock and deadlines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/clock.h"

static void test_monotonic(void **state)
{
    (void)state;
    uint64_t prev = com_clock_ns();
    for (int i = 0; i < 100000; i++) {
        uint64_t t = com_clock_ns();
        assert_true(t >= prev);
        prev = t;
    }
}

static void test_sleep_lasts_at_least(void **state)
{
    (void)state;
    uint64_t t0 = com_clock_ns();
    com_clock_sleep_ns(5 * COM_NS_PER_MS);
    uint64_t dt = com_clock_ns() - t0;
    assert_true(dt >= 5 * COM_NS_PER_MS);
    double s0 = com_clock_s();
    assert_true(s0 > 0.0);
}

static void test_deadlines(void **state)
{
    (void)state;
    uint64_t never = com_deadline_after_ns(UINT64_MAX);
    assert_true(never == UINT64_MAX);
    assert_false(com_deadline_passed(never));
    uint64_t soon = com_deadline_after_ns(2 * COM_NS_PER_MS);
    assert_false(com_deadline_passed(soon + COM_NS_PER_S));
    com_clock_sleep_ns(3 * COM_NS_PER_MS);
    assert_true(com_deadline_passed(soon));
    assert_true(com_deadline_passed(0));
    /* Overflow saturates to "never". */
    assert_true(com_deadline_after_ns(UINT64_MAX - 1) == UINT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monotonic),
        cmocka_unit_test(test_sleep_lasts_at_least),
        cmocka_unit_test(test_deadlines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
