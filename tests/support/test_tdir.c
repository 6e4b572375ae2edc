/* Tests of the scratch-folder helper: what it removes and what it leaves. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "tdir.h"

static char outer[] = "/tmp/gmux-tdir-XXXXXX"; /* holds each case's folder */

static const char *at(const char *name)
{
    static char buf[4][256];
    static unsigned next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof(buf[0]), "%s/%s", outer, name);
    return p;
}

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x", 1), 1);
    close(fd);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Nested folders, files (one read-only) and a socket: all of it goes. */
static void test_removes_tree(void **state)
{
    (void)state;
    assert_int_equal(mkdir(at("t"), 0700), 0);
    assert_int_equal(mkdir(at("t/a"), 0700), 0);
    assert_int_equal(mkdir(at("t/a/b"), 0700), 0);
    touch(at("t/f"));
    touch(at("t/a/b/g"));
    assert_int_equal(chmod(at("t/a/b/g"), 0400), 0);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", at("t/a/d.sock"));
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(s);
    assert_true(exists(at("t/a/d.sock")));
    assert_int_equal(tdir_remove(at("t")), 0);
    assert_false(exists(at("t")));
}

/* A link inside is removed, never followed: what it points to stays. */
static void test_keeps_link_targets(void **state)
{
    (void)state;
    assert_int_equal(mkdir(at("keep"), 0700), 0);
    touch(at("keep/precious"));
    assert_int_equal(mkdir(at("t"), 0700), 0);
    assert_int_equal(symlink(at("keep"), at("t/dirlink")), 0);
    assert_int_equal(symlink(at("keep/precious"), at("t/filelink")), 0);
    assert_int_equal(tdir_remove(at("t")), 0);
    assert_false(exists(at("t")));
    assert_true(exists(at("keep/precious")));
    assert_int_equal(tdir_remove(at("keep")), 0);
}

/* A name with a quote and a space (the shell's `rm -rf '%s'` broke on it). */
static void test_odd_name(void **state)
{
    (void)state;
    const char *odd = at("it's here");
    assert_int_equal(mkdir(odd, 0700), 0);
    char inner[300];
    snprintf(inner, sizeof(inner), "%s/f", odd);
    touch(inner);
    assert_int_equal(tdir_remove(odd), 0);
    assert_false(exists(odd));
}

/* Nothing to remove, or no folder: -1, and the file is left alone. */
static void test_missing_or_not_a_folder(void **state)
{
    (void)state;
    assert_int_equal(tdir_remove(at("none")), -1);
    assert_int_equal(tdir_remove(""), -1);
    assert_int_equal(tdir_remove(NULL), -1);
    touch(at("file"));
    assert_int_equal(tdir_remove(at("file")), -1);
    assert_true(exists(at("file")));
    assert_int_equal(unlink(at("file")), 0);
}

/* The group's result passes through; a failed removal fails a passing run. */
static void test_finish(void **state)
{
    (void)state;
    assert_int_equal(mkdir(at("t"), 0700), 0);
    assert_int_equal(tdir_finish(at("t"), 0), 0);
    assert_false(exists(at("t")));
    assert_int_equal(mkdir(at("t"), 0700), 0);
    assert_int_equal(tdir_finish(at("t"), 3), 3);
    assert_false(exists(at("t")));
    assert_int_equal(tdir_finish(at("none"), 0), 1);
    assert_int_equal(tdir_finish(at("none"), 2), 2);
}

int main(void)
{
    if (!mkdtemp(outer))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_removes_tree), cmocka_unit_test(test_keeps_link_targets),
        cmocka_unit_test(test_odd_name),     cmocka_unit_test(test_missing_or_not_a_folder),
        cmocka_unit_test(test_finish),
    };
    return tdir_finish(outer, cmocka_run_group_tests(tests, NULL, NULL));
}
