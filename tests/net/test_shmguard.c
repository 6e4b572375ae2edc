/* Tests of net_shmguard: a region lock is released only when every live
 * rank that could hold it is accounted for as a waiter, and that view held
 * for the whole stuck period; never from a live holder (the 1 s rule's
 * misjudgement), never when the view moves, never when the lock is free,
 * and regions it does not know are not touched. Each rank is played by a
 * guard of its own in this one process; fake regions live in /dev/shm
 * under names of this test's own. */
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

#define NREG 3
static char names[NREG * NET_FAB_NAME_MAX];
static bool dead_ranks[NREG];

static bool is_dead(void *arg, int r)
{
    (void)arg;
    return dead_ranks[r];
}

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
    char page[NREG * NET_FAB_NAME_MAX + 16];
    for (int r = 0; r < NREG; r++) {
        const char *name = names + r * NET_FAB_NAME_MAX + strlen("fi_shm:/");
        shm_unlink(name);
        snprintf(page, sizeof(page), "%s.guard", name);
        shm_unlink(page); /* left by a guard never closed (a "dead" rank) */
        dead_ranks[r] = false;
    }
}

static bool libfabric_117(void)
{
    uint32_t v = net_fi_version();
    return FI_MAJOR(v) == 1 && FI_MINOR(v) == 17;
}

/* The guard of rank me, over NREG regions of version 4. */
static net_shmguard_t *open_guard(int me)
{
    net_shmguard_t *g = NULL;
    assert_int_equal(net_shmguard_open(names, NET_FAB_NAME_MAX, NREG, me, &g), GMUX_OK);
    assert_non_null(g);
    return g;
}

/* The regions and one guard per rank (g[r] plays rank r's process). */
static void open_all(net_shmguard_t *g[NREG])
{
    for (int r = 0; r < NREG; r++)
        make_region(r, 4);
    for (int r = 0; r < NREG; r++)
        g[r] = open_guard(r);
}

static void close_all(net_shmguard_t *g[NREG])
{
    for (int r = 0; r < NREG; r++)
        net_shmguard_close(g[r]);
    remove_regions();
}

/* The job the cases play (all but the one about unknown regions): the
 * regions and one guard per rank (g[r] plays rank r), made by the setup
 * open_job and closed by the teardown close_job, which runs after a failed
 * assertion too (no name of the test stays in /dev/shm). Without libfabric
 * 1.17 nothing is made, and the case skips. */
static net_shmguard_t *job_guards[NREG];

static int open_job(void **state)
{
    *state = NULL;
    if (libfabric_117()) {
        open_all(job_guards);
        *state = job_guards;
    }
    return 0;
}

static int close_job(void **state)
{
    if (*state)
        close_all(job_guards);
    return 0;
}

#define JOB_CASE(f) cmocka_unit_test_setup_teardown(f, open_job, close_job)

/* The case's guards (it skips without them); rank `dead` has died (-1: none). */
static net_shmguard_t **job(void **state, int dead)
{
    if (!*state)
        skip();
    if (dead >= 0)
        dead_ranks[dead] = true;
    return *state;
}

static const uint64_t S = NET_SHMGUARD_STUCK_NS;

/* Lock words are written as glibc's x86-64 spin lock leaves them: 1 free,
 * 0 taken, one less per thread waiting (the test plays every holder and
 * waiter by writing the word; no pthread_spin_* on the shared word, which a
 * sanitizer would take for a lock held by this thread). */
static void set_word(pthread_spinlock_t *l, int word)
{
    atomic_store((_Atomic int *)l, word);
}

static int word(pthread_spinlock_t *l)
{
    return atomic_load((_Atomic int *)l);
}

/* Checks by rank me's guard over [t, t + span] every S / 4: whether any released. */
static bool checks(net_shmguard_t *g, uint64_t t, uint64_t span)
{
    bool any = false;
    for (uint64_t d = 0; d <= span; d += S / 4)
        any |= net_shmguard_check(g, t + d, is_dead, NULL);
    return any;
}

/* Rank 2 died holding rank 1's lock; rank 0 waits for it in a send to
 * rank 1, rank 1 itself in its progress: both live ranks are waiters. */
static void test_releases_a_lock_left_by_a_dead_rank(void **state)
{
    net_shmguard_t **g = job(state, -1);
    pthread_spinlock_t *l = net_shmguard_lock_of(g[0], 1);
    assert_non_null(l);
    net_shmguard_enter(g[2], 2); /* rank 2 died inside its progress ... */
    set_word(l, 0);              /* ... holding rank 1's lock (by trylock) */
    dead_ranks[2] = true;
    net_shmguard_enter(g[0], 1);
    set_word(l, -1); /* rank 0 waits */
    uint64_t t = 1000;
    assert_false(net_shmguard_check(g[0], t, is_dead, NULL)); /* starts timing */
    net_shmguard_enter(g[1], 1);
    set_word(l, -2);                                          /* rank 1 waits too: a new view */
    assert_false(net_shmguard_check(g[0], t, is_dead, NULL)); /* timing restarts */
    assert_false(net_shmguard_check(g[0], t + S - 1, is_dead, NULL)); /* not yet */
    assert_int_equal(word(l), -2);
    assert_true(net_shmguard_check(g[0], t + S, is_dead, NULL));
    assert_int_equal(word(l), 1);                             /* free again */
    assert_int_equal(word(net_shmguard_lock_of(g[0], 0)), 1); /* the others untouched */
    assert_int_equal(word(net_shmguard_lock_of(g[0], 2)), 1);
    /* rank 1 takes it and rank 0 waits again: rank 1's guard, which judged the
     * same view, and rank 0's must not free it from the live rank 1 */
    set_word(l, -1);
    assert_false(checks(g[1], t + S, 3 * S));
    assert_false(checks(g[0], t + S, 3 * S));
    assert_int_equal(word(l), -1);
}

/* The case the 1 s rule misjudged: after a death, a live rank spends over
 * a period inside a critical section (its own region's, in its progress;
 * or a peer's, in a send) while a call of ours waits for it or while our
 * own call holds it. Never released, however long. */
static void test_never_releases_a_live_holder(void **state)
{
    net_shmguard_t **g = job(state, 2); /* rank 2 died outside libfabric */
    pthread_spinlock_t *l0 = net_shmguard_lock_of(g[0], 0);
    /* rank 0's own progress holds its own lock, nobody waits */
    net_shmguard_enter(g[0], 0);
    set_word(l0, 0);
    assert_false(checks(g[0], 1000, 5 * S));
    /* rank 1 (live) holds rank 0's lock in a send; rank 0's progress waits */
    net_shmguard_enter(g[1], 0);
    set_word(l0, -1);
    assert_false(checks(g[0], 10 * S, 5 * S));
    assert_false(checks(g[1], 10 * S, 5 * S));
    assert_int_equal(word(l0), -1);
    /* rank 1 progresses (may hold rank 0's lock by trylock) while rank 0 waits */
    net_shmguard_leave(g[1]);
    net_shmguard_enter(g[1], 1);
    assert_false(checks(g[0], 20 * S, 5 * S));
    assert_int_equal(word(l0), -1);
    /* once rank 1 is out of libfabric, only a dead rank can hold it */
    net_shmguard_leave(g[1]);
    assert_true(checks(g[0], 30 * S, 2 * S));
    assert_int_equal(word(l0), 1);
    net_shmguard_leave(g[0]);
}

/* The lock's owner keeps progressing (its fi_cq_read takes its lock only
 * when signalled, and the waiters cannot signal it): each of its calls may
 * hold the lock, but between them it holds nothing, and the senders' view
 * stays the same: released (net_rank killlock with 4 ranks stalled here). */
static void test_a_busy_owner_does_not_block_release(void **state)
{
    net_shmguard_t **g = job(state, 2);
    pthread_spinlock_t *l = net_shmguard_lock_of(g[1], 0);
    set_word(l, -1); /* rank 2 died holding it; rank 1 waits in a send */
    net_shmguard_enter(g[1], 0);
    bool released = false;
    uint64_t t = 1000;
    for (int i = 0; i < 16 && !released; i++, t += S / 4) {
        net_shmguard_enter(g[0], 0); /* inside: no verdict */
        assert_false(net_shmguard_check(g[1], t, is_dead, NULL));
        net_shmguard_leave(g[0]); /* outside: clear */
        released = net_shmguard_check(g[1], t + S / 8, is_dead, NULL);
    }
    assert_true(released);
    assert_int_equal(word(l), 1);
    net_shmguard_leave(g[1]);
}

static void test_a_view_that_changes_is_not_stuck(void **state)
{
    net_shmguard_t **g = job(state, 2);
    pthread_spinlock_t *l = net_shmguard_lock_of(g[0], 1);
    set_word(l, -1);
    uint64_t t = 1000;
    for (int i = 0; i < 5; i++) { /* a new call each time: the timer restarts */
        net_shmguard_enter(g[0], 1);
        assert_false(net_shmguard_check(g[0], t, is_dead, NULL));
        net_shmguard_leave(g[0]);
        assert_false(net_shmguard_check(g[0], t + S / 2, is_dead, NULL));
        t += S;
    }
    net_shmguard_enter(g[0], 1);
    for (int i = 0; i < 5; i++) { /* the lock word moves each time */
        set_word(l, -1 - (i & 1));
        assert_false(net_shmguard_check(g[0], t, is_dead, NULL));
        t += S;
    }
    assert_int_equal(word(l), -1); /* never released (the last word set) */
    net_shmguard_leave(g[0]);
}

static void test_a_free_lock_is_left_alone(void **state)
{
    net_shmguard_t **g = job(state, 2);
    net_shmguard_enter(g[0], 0);
    assert_false(checks(g[0], 0, 10 * S)); /* stuck, but not on this lock */
    assert_int_equal(word(net_shmguard_lock_of(g[0], 0)), 1);
    net_shmguard_leave(g[0]);
}

/* A live rank whose page cannot be seen might be the holder. */
static void test_an_unseen_live_rank_blocks_release(void **state)
{
    net_shmguard_t **g = job(state, -1);
    net_shmguard_close(g[1]); /* its page is gone; rank 1 stays "live" */
    g[1] = NULL;
    dead_ranks[2] = true;
    pthread_spinlock_t *l = net_shmguard_lock_of(g[0], 2);
    net_shmguard_enter(g[0], 2);
    set_word(l, -1);
    assert_false(checks(g[0], 1000, 5 * S));
    dead_ranks[1] = true; /* once it is dead: released */
    assert_true(checks(g[0], 10 * S, 2 * S));
    net_shmguard_leave(g[0]);
}

/* Whether /dev/shm holds region r's name (suffix "" or ".guard"). */
static bool named(int r, const char *suffix)
{
    char path[NET_FAB_NAME_MAX + 32];
    snprintf(path, sizeof(path), "/dev/shm/%s%s",
             names + r * NET_FAB_NAME_MAX + strlen("fi_shm://"), suffix);
    return access(path, F_OK) == 0;
}

/* Every rank maps every page, then each unlinks its page (the guard) and
 * its region (as comm.c's join does, by net_fab_shm_unlink, guard or not):
 * the names are gone from /dev/shm and the guards work on as before (a lock
 * left by a dead rank is released; a live holder's is not). */
static void test_works_after_its_names_are_unlinked(void **state)
{
    net_shmguard_t **g = job(state, -1);
    for (int r = 0; r < NREG; r++)
        net_shmguard_map_pages(g[r]);
    for (int r = 0; r < NREG; r++) {
        assert_true(named(r, "") && named(r, ".guard"));
        net_shmguard_unlink(g[r]);
        assert_true(named(r, "")); /* the guard's own page only */
        assert_false(named(r, ".guard"));
        char path[NET_FAB_NAME_MAX + 32];
        assert_true(net_fab_shm_path(names + r * NET_FAB_NAME_MAX, "", path, sizeof(path)));
        assert_int_equal(unlink(path), 0);
        assert_false(named(r, ""));
    }
    dead_ranks[2] = true;
    pthread_spinlock_t *l = net_shmguard_lock_of(g[0], 1);
    net_shmguard_enter(g[1], 1); /* rank 1 progresses, holding its own lock */
    set_word(l, -1);             /* while rank 0 waits for it in a send */
    net_shmguard_enter(g[0], 1);
    assert_false(checks(g[0], 1000, 5 * S));
    net_shmguard_leave(g[1]); /* rank 1 out: only the dead rank can hold it */
    set_word(l, -2);          /* ... and rank 1 waits again */
    net_shmguard_enter(g[1], 1);
    assert_true(checks(g[0], 10 * S, 2 * S));
    assert_int_equal(word(l), 1);
    net_shmguard_leave(g[0]);
    net_shmguard_leave(g[1]);
}

static void test_unknown_regions_are_not_mapped(void **state)
{
    (void)state;
    if (!libfabric_117())
        skip();
    make_region(0, 5); /* another layout version */
    make_region(2, 5);
    snprintf(names + NET_FAB_NAME_MAX, NET_FAB_NAME_MAX, "gmux-test-shmguard-missing-%d",
             (int)getpid());
    net_shmguard_t *g = NULL;
    assert_int_equal(net_shmguard_open(names, NET_FAB_NAME_MAX, NREG, 0, &g), GMUX_ERR_UNSUPPORTED);
    assert_null(g);
    /* one known region is enough; the others are simply not guarded */
    make_region(1, 4);
    assert_int_equal(net_shmguard_open(names, NET_FAB_NAME_MAX, NREG, 0, &g), GMUX_OK);
    assert_null(net_shmguard_lock_of(g, 0));
    assert_non_null(net_shmguard_lock_of(g, 1));
    assert_null(net_shmguard_lock_of(g, 2));
    assert_null(net_shmguard_lock_of(g, 3));
    dead_ranks[2] = true;
    net_shmguard_enter(g, 0); /* stuck on an unmapped region: nothing to do */
    assert_false(checks(g, 0, 2 * S));
    net_shmguard_leave(g);
    net_shmguard_close(g);
    remove_regions();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        JOB_CASE(test_releases_a_lock_left_by_a_dead_rank),
        JOB_CASE(test_never_releases_a_live_holder),
        JOB_CASE(test_a_busy_owner_does_not_block_release),
        JOB_CASE(test_a_view_that_changes_is_not_stuck),
        JOB_CASE(test_a_free_lock_is_left_alone),
        JOB_CASE(test_an_unseen_live_rank_blocks_release),
        cmocka_unit_test(test_unknown_regions_are_not_mapped),
        JOB_CASE(test_works_after_its_names_are_unlinked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
