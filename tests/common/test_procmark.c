/* Tests of com_procmark (src/common/procmark.c): a key is marked once per
 * process, a mark is seen by the next look, and keys do not see each other.
 * That another copy of src/common sees it is test_shmem_settings (a
 * malformed GMUX_LOG told once by libgmux-shmem.so and libgmux-net.so). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/procmark.h"

static void test_marked_once(void **state)
{
    (void)state;
    char key[64];
    snprintf(key, sizeof(key), "test-procmark-%d", (int)getpid());
    assert_false(com_procmark_test(key));
    assert_false(com_procmark_test_and_set(key)); /* marks it */
    assert_true(com_procmark_test(key));
    assert_true(com_procmark_test_and_set(key));
    assert_true(com_procmark_test_and_set(key));
}

static void test_keys_apart(void **state)
{
    (void)state;
    assert_false(com_procmark_test_and_set("GMUX_LOG=chatty"));
    assert_false(com_procmark_test("GMUX_LOG=chatt"));
    assert_false(com_procmark_test("GMUX_LOG=chatty2"));
    assert_false(com_procmark_test_and_set("GMUX_LOG=verbose"));
    assert_true(com_procmark_test("GMUX_LOG=chatty"));
    assert_true(com_procmark_test("GMUX_LOG=verbose"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marked_once),
        cmocka_unit_test(test_keys_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
