/* gmux run: environment handed to the command, exit status, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tproc.h"

static char out[16384], err[16384];
static char *const *env_extra;

static int run(char *const argv[])
{
    return tproc_capture(argv, env_extra, 60.0, out, sizeof(out), err, sizeof(err));
}

static void test_sets_environment_and_returns_status(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "run", "--policy", "demand", "--budget", "1G", "--no-managed",
                    "--", "/bin/sh", "-c",
                    "echo \"[$GMUX_POLICY] [$GMUX_BUDGET] [$GMUX_SHIM_MANAGED] [$LD_PRELOAD]\"; "
                    "exit 3",
                    NULL};
    assert_int_equal(run(argv), 3);
    assert_non_null(strstr(out, "[demand] [1G] [0] ["));
    assert_non_null(strstr(out, "/libgmux.so"));
}

static void test_keeps_existing_preload(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "run", "/bin/sh", "-c", "echo \"[$LD_PRELOAD]\"", NULL};
    assert_int_equal(run(argv), 0);
    assert_non_null(strstr(out, "/libgmux.so:" GMUX_OTHER_PRELOAD "]"));
}

static void test_missing_command(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "run", "--", "/nonexistent/gmux-no-such-program", NULL};
    assert_int_equal(run(argv), 127);
    assert_non_null(strstr(err, "cannot run '/nonexistent/gmux-no-such-program'"));
    char *none[] = {GMUX_CLI_PATH, "run", "--policy", "off", NULL};
    assert_int_equal(run(none), 2);
    assert_non_null(strstr(err, "no command given"));
}

static void test_bad_options(void **state)
{
    (void)state;
    char *policy[] = {GMUX_CLI_PATH, "run", "--policy", "eager", "--", "true", NULL};
    assert_int_equal(run(policy), 2);
    assert_non_null(strstr(err, "unknown policy 'eager'"));
    char *budget[] = {GMUX_CLI_PATH, "run", "--budget", "lots", "--", "true", NULL};
    assert_int_equal(run(budget), 2);
    assert_non_null(strstr(err, "bad budget 'lots'"));
    char *opt[] = {GMUX_CLI_PATH, "run", "--frobnicate", "--", "true", NULL};
    assert_int_equal(run(opt), 2);
    char *help[] = {GMUX_CLI_PATH, "run", "--help", NULL};
    assert_int_equal(run(help), 0);
    assert_non_null(strstr(out, "daemon"));
}

int main(void)
{
    /* An ASan build's shim needs its runtime, which sh does not load first. */
    static char *const extra[] = {"LD_PRELOAD=" GMUX_OTHER_PRELOAD,
                                  "ASAN_OPTIONS=verify_asan_link_order=0", NULL};
    env_extra = extra;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sets_environment_and_returns_status),
        cmocka_unit_test(test_keeps_existing_preload),
        cmocka_unit_test(test_missing_command),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
