/*
 * A part file guarded by com_part_guard, in forked children ended by a
 * signal: SIGINT, SIGTERM and SIGHUP remove it and end the child by that
 * signal; an ignored signal stays ignored (the part kept, the child goes
 * on); once com_part_unguard has run a signal acts as before the guard and
 * removes nothing. A part as long as a path can be (PATH_MAX - 1 bytes) is
 * guarded whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/partguard.h"
#include "tproc.h"

static char dir[] = "/tmp/gmux-partguard-XXXXXX";
static char part[64];

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void make_file(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);
}

typedef struct how {
    int sig;
    bool ignored;     /* the signal ignored before the guard */
    bool lifted;      /* com_part_unguard before the signal */
    const char *part; /* the part guarded; NULL: part */
} how_t;

/* Child: guards the part, then raises the signal; 0 when it goes on. */
static int guard_then_signal(int index, void *arg)
{
    const how_t *h = arg;
    (void)index;
    if (h->ignored)
        signal(h->sig, SIG_IGN);
    if (com_part_guard(h->part ? h->part : part) != 0)
        return 3;
    if (h->lifted)
        com_part_unguard();
    raise(h->sig);
    return 0;
}

static int run(how_t h)
{
    make_file(h.part ? h.part : part);
    int status = 0;
    tproc_fork_all(1, guard_then_signal, &h, 30.0, &status);
    return status;
}

static void test_signal_removes_part(void **state)
{
    (void)state;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t k = 0; k < 3; k++) {
        int st = run((how_t){sigs[k], false, false, NULL});
        if (st != 128 + sigs[k])
            fail_msg("signal %d: status %d, not %d", sigs[k], st, 128 + sigs[k]);
        if (exists(part))
            fail_msg("signal %d: the part was left behind", sigs[k]);
    }
}

static void test_ignored_stays_ignored(void **state)
{
    (void)state;
    assert_int_equal(run((how_t){SIGINT, true, false, NULL}), 0);
    assert_true(exists(part));
    assert_int_equal(unlink(part), 0);
}

static void test_lifted_removes_nothing(void **state)
{
    (void)state;
    assert_int_equal(run((how_t){SIGTERM, false, true, NULL}), 128 + SIGTERM);
    assert_true(exists(part));
    assert_int_equal(unlink(part), 0);
}

/* A part of PATH_MAX - 1 bytes (the longest any call takes, in folders of
 * 99-byte names under dir) is removed whole, not cut nor left unguarded. */
static void test_longest_part(void **state)
{
    (void)state;
    char *p = malloc(PATH_MAX + 1);
    assert_non_null(p);
    size_t n = (size_t)snprintf(p, PATH_MAX, "%s", dir);
    size_t tops[PATH_MAX / 100 + 1], ntops = 0;
    while (n + 100 < PATH_MAX - 1 - 20) {
        p[n] = '/';
        memset(p + n + 1, 'd', 99);
        p[n + 100] = '\0';
        assert_int_equal(mkdir(p, 0700), 0);
        tops[ntops++] = n;
        n += 100;
    }
    p[n] = '/';
    memset(p + n + 1, 'p', PATH_MAX - 1 - 6 - n - 1);
    memcpy(p + PATH_MAX - 1 - 6, ".part~", 7);
    assert_int_equal(strlen(p), PATH_MAX - 1);
    int st = run((how_t){SIGTERM, false, false, p});
    bool left = exists(p);
    unlink(p);
    while (ntops > 0) {
        p[tops[--ntops] + 100] = '\0';
        rmdir(p);
    }
    /* one byte more: no call takes it, and it is said not guarded */
    memset(p, 'p', PATH_MAX - 1);
    p[PATH_MAX - 1] = 'p';
    p[PATH_MAX] = '\0';
    int too_long = com_part_guard(p);
    free(p);
    assert_int_equal(st, 128 + SIGTERM);
    assert_false(left);
    assert_int_equal(too_long, ENAMETOOLONG);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    snprintf(part, sizeof(part), "%s/out.part~", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signal_removes_part),
        cmocka_unit_test(test_ignored_stays_ignored),
        cmocka_unit_test(test_lifted_removes_nothing),
        cmocka_unit_test(test_longest_part),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(part);
    rmdir(dir);
    return rc;
}
