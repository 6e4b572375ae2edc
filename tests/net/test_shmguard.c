/* Tests of net_shmguard: a region lock is released only when a bracketed
 * call has stayed inside libfabric for the whole stuck period while the lock
 * stayed held; never when the call moves on, never when the lock is free,
 * and regions it does not know are not touched. Fake regions live in
 * /dev/shm under names of this test's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <rdma/fabric.h>
#include <sys/mman.h>
#include <unistd.h>

#include "net/fab.h"
#include "net/fiload.h"
#include "net/shmguard.h"

#define NREG 2
static char names[NREG * NET_FAB_NAME_MAX];

/* Creates region r: version byte v and an unlocked spin lock at the offset
 * libfabric 1.17 uses (after version, resv, flags, pid, two bytes, a
 * uint32 and a pointer). */
static void make_region(int r, uint8_t v)
{
    char *name = names + r * NET_FAB_NAME_MAX;
    snprintf(name, NET_FAB_NAME_MAX, "fi_shm://gmux-test-shmguard-%d-%d", (int)getpid(), r);
    int fd = shm_open(name + strlen("fi_shm:/"), O_CREAT | O_RDWR | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 8192), 0);
    uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(p != MAP_FAILED);
    close(fd);
    p[0] = v;
    pthread_spin_init((pthread_spinlock_t *)(p + 24), PTHREAD_PROCESS_SHARED);
    munmap(p, 4096);
}

static void remove_regions(void)
{
    for (int r = 0; r < NREG; r++)
        shm_unlink(names + r * NET_FAB_NAME_MAX + strlen("fi_shm:/"));
}

static bool libfabric_117(void)
{
    uint32_t v = net_fi_version();
    return FI_MAJOR(v) == 1 && FI_MINOR(v) == 17;
}

static net_shmguard_t *open_guard(void)
{
    make_region(0, 4);
    make_region(1, 4);
    net_shmguard_t *g = NULL;
    assert_int_equal(net_shmguard_open(names, NET_FAB_NAME_MAX, NREG, &g), GMUX_OK);
    assert_non_null(g);
    return g;
}

static const uint64_t S = NET_SHMGUARD_STUCK_NS;

/* The words of a locked and an unlocked spin lock, taken from a lock of our
 * own: the test plays the dead holder by writing the locked word, as the
 * guard releases it by writing the unlocked one (no pthread_spin_* on the
 * shared word, which a sanitizer would take for a lock held by this thread). */
static int spin_word(bool locked)
{
    pthread_spinlock_t l;
    int v;
    pthread_spin_init(&l, PTHREAD_PROCESS_SHARED);
    if (locked)
        pthread_spin_lock(&l);
    memcpy(&v, (const void *)&l, sizeof(v));
    if (locked)
        pthread_spin_unlock(&l);
    pthread_spin_destroy(&l);
    return v;
}

static void set_word(pthread_spinlock_t *l, bool locked)
{
    atomic_store((_Atomic int *)l, spin_word(locked));
}

static bool is_locked(pthread_spinlock_t *l)
{
    return atomic_load((_Atomic int *)l) != spin_word(false);
}

static void test_releases_a_lock_held_through_the_stuck_period(void **state)
{
    (void)state;
    if (!libfabric_117())
        skip();
    net_shmguard_t *g = open_guard();
    pthread_spinlock_t *l = net_shmguard_lock_of(g, 1);
    assert_non_null(l);
    set_word(l, true); /* the "dead rank" holds it */
    net_shmguard_enter(g, 1);
    uint64_t t = 1000;
    assert_false(net_shmguard_check(g, t));         /* starts timing */
    assert_false(net_shmguard_check(g, t + S - 1)); /* not yet */
    assert_true(is_locked(l));
    assert_true(net_shmguard_check(g, t + S));
    assert_false(is_locked(l));                          /* free again */
    assert_false(is_locked(net_shmguard_lock_of(g, 0))); /* the other one untouched */
    /* re-armed: nothing more until another full period */
    assert_false(net_shmguard_check(g, t + S + 1));
    net_shmguard_leave(g);
    net_shmguard_close(g);
    remove_regions();
}

static void test_a_call_that_moves_on_is_not_stuck(void **state)
{
    (void)state;
    if (!libfabric_117())
        skip();
    net_shmguard_t *g = open_guard();
    pthread_spinlock_t *l = net_shmguard_lock_of(g, 0);
    set_word(l, true);
    uint64_t t = 1000;
    for (int i = 0; i < 5; i++) { /* a new call each time: the timer restarts */
        net_shmguard_enter(g, 0);
        assert_false(net_shmguard_check(g, t));
        net_shmguard_leave(g);
        assert_false(net_shmguard_check(g, t + S / 2));
        t += S;
    }
    assert_true(is_locked(l)); /* never released */
    net_shmguard_close(g);
    remove_regions();
}

static void test_a_free_lock_is_left_alone(void **state)
{
    (void)state;
    if (!libfabric_117())
        skip();
    net_shmguard_t *g = open_guard();
    net_shmguard_enter(g, 0);
    assert_false(net_shmguard_check(g, 0));
    assert_false(net_shmguard_check(g, 10 * S));         /* stuck, but not on this lock */
    assert_false(is_locked(net_shmguard_lock_of(g, 0))); /* and the guard did not take it */
    net_shmguard_leave(g);
    net_shmguard_close(g);
    remove_regions();
}

static void test_unknown_regions_are_not_mapped(void **state)
{
    (void)state;
    if (!libfabric_117())
        skip();
    make_region(0, 5); /* another layout version */
    snprintf(names + NET_FAB_NAME_MAX, NET_FAB_NAME_MAX, "gmux-test-shmguard-missing-%d",
             (int)getpid());
    net_shmguard_t *g = NULL;
    assert_int_equal(net_shmguard_open(names, NET_FAB_NAME_MAX, NREG, &g), GMUX_ERR_UNSUPPORTED);
    assert_null(g);
    /* one known region is enough; the other is simply not guarded */
    make_region(1, 4);
    assert_int_equal(net_shmguard_open(names, NET_FAB_NAME_MAX, NREG, &g), GMUX_OK);
    assert_null(net_shmguard_lock_of(g, 0));
    assert_non_null(net_shmguard_lock_of(g, 1));
    assert_null(net_shmguard_lock_of(g, 2));
    net_shmguard_enter(g, 0); /* stuck on an unmapped region: nothing to do */
    assert_false(net_shmguard_check(g, 0));
    assert_false(net_shmguard_check(g, 2 * S));
    net_shmguard_leave(g);
    net_shmguard_close(g);
    remove_regions();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_releases_a_lock_held_through_the_stuck_period),
        cmocka_unit_test(test_a_call_that_moves_on_is_not_stuck),
        cmocka_unit_test(test_a_free_lock_is_left_alone),
        cmocka_unit_test(test_unknown_regions_are_not_mapped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
