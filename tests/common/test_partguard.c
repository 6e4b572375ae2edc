/*
 * A part file guarded by com_part_guard, in forked children ended by a
 * signal: SIGINT, SIGTERM and SIGHUP remove it and end the child by that
 * signal; an ignored signal stays ignored (the part kept, the child goes
 * on); once com_part_unguard has run a signal acts as before the guard and
 * removes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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

static void make_part(void)
{
    FILE *f = fopen(part, "w");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);
}

typedef struct how {
    int sig;
    bool ignored; /* the signal ignored before the guard */
    bool lifted;  /* com_part_unguard before the signal */
} how_t;

/* Child: guards the part, then raises the signal; 0 when it goes on. */
static int guard_then_signal(int index, void *arg)
{
    const how_t *h = arg;
    (void)index;
    if (h->ignored)
        signal(h->sig, SIG_IGN);
    com_part_guard(part);
    if (h->lifted)
        com_part_unguard();
    raise(h->sig);
    return 0;
}

static int run(how_t h)
{
    make_part();
    int status = 0;
    tproc_fork_all(1, guard_then_signal, &h, 30.0, &status);
    return status;
}

static void test_signal_removes_part(void **state)
{
    (void)state;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t k = 0; k < 3; k++) {
        int st = run((how_t){sigs[k], false, false});
        if (st != 128 + sigs[k])
            fail_msg("signal %d: status %d, not %d", sigs[k], st, 128 + sigs[k]);
        if (exists(part))
            fail_msg("signal %d: the part was left behind", sigs[k]);
    }
}

static void test_ignored_stays_ignored(void **state)
{
    (void)state;
    assert_int_equal(run((how_t){SIGINT, true, false}), 0);
    assert_true(exists(part));
    assert_int_equal(unlink(part), 0);
}

static void test_lifted_removes_nothing(void **state)
{
    (void)state;
    assert_int_equal(run((how_t){SIGTERM, false, true}), 128 + SIGTERM);
    assert_true(exists(part));
    assert_int_equal(unlink(part), 0);
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
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(part);
    rmdir(dir);
    return rc;
}
