/*
 * The gate harness itself (gate_harness.h): gh_init makes a folder of its
 * own, never one a guessable name already names. It used to mkdir
 * /tmp/gmux_gate_PID and go on when that failed, so another user's folder
 * (or a link) planted under that name became the tests' folder: their
 * daemon's socket and logs went where someone else could read or replace
 * them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gate_harness.h"

static void test_init_ignores_planted_folder(void **state)
{
    (void)state;
    char planted[64], marker[96];
    snprintf(planted, sizeof(planted), "/tmp/gmux_gate_%d", (int)getpid());
    snprintf(marker, sizeof(marker), "%s/planted", planted);
    assert_int_equal(mkdir(planted, 0700), 0);
    assert_int_equal(chmod(planted, 0777), 0); /* anyone's */
    FILE *f = fopen(marker, "w");
    assert_non_null(f);
    fclose(f);

    gh_init();
    int same = strcmp(gh_dir, planted) == 0;
    unlink(marker);
    rmdir(planted);
    assert_false(same);
    struct stat sb;
    assert_int_equal(lstat(gh_dir, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(sb.st_mode & 0777, 0700);
    assert_int_equal(sb.st_uid, getuid());
    assert_non_null(strstr(gh_sock, gh_dir));
    assert_int_equal(gh_finish(0), 0);
    assert_int_not_equal(access(gh_dir, F_OK), 0); /* removed */
}

/* Two harnesses of one process (or two processes) never share a folder. */
static void test_init_fresh_each_time(void **state)
{
    (void)state;
    gh_init();
    char first[sizeof(gh_dir)];
    snprintf(first, sizeof(first), "%s", gh_dir);
    gh_init();
    int same = strcmp(first, gh_dir) == 0;
    struct stat sb;
    int both = stat(first, &sb) == 0 && stat(gh_dir, &sb) == 0;
    assert_int_equal(gh_finish(0), 0);
    snprintf(gh_dir, sizeof(gh_dir), "%s", first);
    assert_int_equal(gh_finish(0), 0);
    assert_false(same);
    assert_true(both);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_ignores_planted_folder),
        cmocka_unit_test(test_init_fresh_each_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
