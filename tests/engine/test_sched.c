/* Tests of the time-slice scheduler: round robin, priorities, LC class. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/sched.h"

static void test_round_robin_quantum(void **state)
{
    (void)state;
    eng_sched_t *s;
    assert_int_equal(eng_sched_create(3, 100, &s), GMUX_OK);
    uint32_t order[6];
    for (int i = 0; i < 6; i++) {
        order[i] = eng_sched_pick(s);
        assert_false(eng_sched_should_yield(s)); /* fresh quantum */
        eng_sched_charge(s, 60);
        assert_false(eng_sched_should_yield(s));
        eng_sched_charge(s, 40);
        assert_true(eng_sched_should_yield(s)); /* quantum used up, others wait */
    }
    uint32_t want[6] = {0, 1, 2, 0, 1, 2};
    assert_memory_equal(order, want, sizeof(want));
    eng_sched_destroy(s);
}

static void test_alone_keeps_running_and_done_tasks_skipped(void **state)
{
    (void)state;
    eng_sched_t *s;
    assert_int_equal(eng_sched_create(3, 100, &s), GMUX_OK);
    eng_sched_set_ready(s, 0, false);
    eng_sched_set_ready(s, 2, false);
    assert_int_equal(eng_sched_pick(s), 1);
    eng_sched_charge(s, 1000);
    assert_false(eng_sched_should_yield(s)); /* nobody else ready */
    eng_sched_set_ready(s, 1, false);
    assert_true(eng_sched_should_yield(s));
    assert_int_equal(eng_sched_pick(s), ENG_SCHED_IDLE);
    eng_sched_destroy(s);
}

static void test_priorities_strict(void **state)
{
    (void)state;
    eng_sched_t *s;
    assert_int_equal(eng_sched_create(4, 100, &s), GMUX_OK);
    assert_int_equal(eng_sched_set_class(s, 2, ENG_CLASS_BE, 5), GMUX_OK);
    assert_int_equal(eng_sched_set_class(s, 3, ENG_CLASS_BE, 5), GMUX_OK);
    /* the two priority-5 tasks alternate; 0 and 1 never run while they are ready */
    for (int i = 0; i < 6; i++) {
        uint32_t t = eng_sched_pick(s);
        assert_true(t == 2 || t == 3);
        assert_int_equal(t, i % 2 == 0 ? 2 : 3);
        eng_sched_charge(s, 100);
        assert_true(eng_sched_should_yield(s));
    }
    eng_sched_set_ready(s, 2, false);
    eng_sched_set_ready(s, 3, false);
    uint32_t t = eng_sched_pick(s);
    assert_true(t == 0 || t == 1);
    /* a higher priority becoming ready waits for the end of the quantum */
    eng_sched_set_ready(s, 3, true);
    eng_sched_charge(s, 50);
    assert_false(eng_sched_should_yield(s));
    eng_sched_charge(s, 50);
    assert_true(eng_sched_should_yield(s));
    assert_int_equal(eng_sched_pick(s), 3);
    /* a lower priority does not take over at the end of the quantum */
    eng_sched_charge(s, 500);
    assert_false(eng_sched_should_yield(s));
    eng_sched_destroy(s);
}

static void test_latency_critical_preempts_at_kernel_boundary(void **state)
{
    (void)state;
    eng_sched_t *s;
    assert_int_equal(eng_sched_create(3, 1000, &s), GMUX_OK);
    assert_int_equal(eng_sched_set_class(s, 1, ENG_CLASS_LC, 0), GMUX_OK);
    assert_int_equal(eng_sched_set_class(s, 0, ENG_CLASS_BE, 99), GMUX_OK);
    eng_sched_set_ready(s, 1, false);
    assert_int_equal(eng_sched_pick(s), 0); /* highest BE priority */
    eng_sched_charge(s, 10);
    assert_false(eng_sched_should_yield(s));
    eng_sched_set_ready(s, 1, true);        /* LC work arrives mid-quantum */
    assert_true(eng_sched_should_yield(s)); /* at the very next kernel boundary */
    assert_int_equal(eng_sched_pick(s), 1);
    /* BE tasks never preempt LC; LC runs beyond its quantum when alone in its class */
    eng_sched_charge(s, 5000);
    assert_false(eng_sched_should_yield(s));
    eng_sched_set_ready(s, 1, false);
    assert_true(eng_sched_should_yield(s));
    assert_int_equal(eng_sched_pick(s), 0);
    assert_int_equal(eng_sched_set_class(s, 7, ENG_CLASS_LC, 0), GMUX_ERR_INVALID);
    eng_sched_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_robin_quantum),
        cmocka_unit_test(test_alone_keeps_running_and_done_tasks_skipped),
        cmocka_unit_test(test_priorities_strict),
        cmocka_unit_test(test_latency_critical_preempts_at_kernel_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
