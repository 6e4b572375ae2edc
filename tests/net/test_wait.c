/*
 * The waiting discipline's lock handling (src/net/ops.c, net_wait;
 * src/net/proxy.c, net_progress_poll / net_progress_sleep): a thread that
 * waits while another thread keeps the progress lock (a proxy posting a long
 * stream) sleeps on the lock instead of spinning beside it, wakes when the
 * lock is released, and still honours its timeout.
 *
 * One-rank communicators (no launcher environment); the "holder" thread
 * stands for a proxy that keeps the lock.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <gmux/net.h>

#include "common/clock.h"
#include "net/internal.h"

#define HOLD_NS (300u * 1000u * 1000u) /* how long the holder keeps the lock */

struct holder {
    gmux_comm_t *comm;
    _Atomic int locked;   /* the holder has the lock */
    _Atomic int released; /* the holder has let it go */
    bool signal_after;    /* then set signal 0 to 1 */
};

static void *holder_main(void *arg)
{
    struct holder *h = arg;
    net_progress_lock_wait(h->comm);
    atomic_store(&h->locked, 1);
    struct timespec ts = {0, HOLD_NS};
    nanosleep(&ts, NULL);
    atomic_store(&h->released, 1);
    pthread_mutex_unlock(&h->comm->progress_lock);
    if (h->signal_after)
        assert_int_equal(gmux_signal(h->comm, 0, 0, 0, GMUX_SIGNAL_SET, 1), GMUX_OK);
    return NULL;
}

static gmux_comm_t *one_rank(void)
{
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.num_signals = 1;
    p.timeout_s = 30;
    gmux_comm_t *comm = NULL;
    assert_int_equal(gmux_comm_init(&p, &comm), GMUX_OK);
    return comm;
}

static void start_holder(struct holder *h, pthread_t *th)
{
    assert_int_equal(pthread_create(th, NULL, holder_main, h), 0);
    while (!atomic_load(&h->locked))
        sched_yield();
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * COM_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* poll says "taken" (-1) rather than "no work" (0); sleep gets the lock only
 * once the holder lets it go, and gives up after its own limit. */
static void test_poll_and_sleep(void **state)
{
    (void)state;
    gmux_comm_t *comm = one_rank();
    /* free (once the proxy's own idle pass, if any, is over): a pass, no work */
    int w = -1;
    for (int i = 0; i < 100000 && w < 0; i++)
        if ((w = net_progress_poll(comm)) < 0)
            sched_yield();
    assert_true(w >= 0);
    struct holder h = {.comm = comm};
    pthread_t th;
    start_holder(&h, &th);
    assert_int_equal(net_progress_poll(comm), -1);
    assert_int_equal(net_progress_try(comm), 0);                 /* the old contract */
    assert_int_equal(net_progress_sleep(comm, 1000 * 1000), -1); /* 1 ms: still held */
    assert_false(atomic_load(&h.released));
    assert_true(net_progress_sleep(comm, 20 * COM_NS_PER_S) >= 0);
    assert_true(atomic_load(&h.released)); /* woke only after the release */
    pthread_join(th, NULL);
    assert_int_equal(gmux_comm_finalize(comm), GMUX_OK);
}

/* A wait whose condition comes true only after the holder's release: it
 * returns OK, and it slept meanwhile (its thread used a small part of the
 * holder's 300 ms of CPU time; spinning with sched_yield, as the waits did
 * before, uses most of a core on an idle machine). */
static void test_wait_sleeps_beside_holder(void **state)
{
    (void)state;
    gmux_comm_t *comm = one_rank();
    struct holder h = {.comm = comm, .signal_after = true};
    pthread_t th;
    start_holder(&h, &th);
    uint64_t cpu0 = thread_cpu_ns();
    assert_int_equal(gmux_signal_wait_timeout(comm, 0, 1, 20.0, NULL), GMUX_OK);
    uint64_t cpu = thread_cpu_ns() - cpu0;
    assert_true(atomic_load(&h.released));
    print_message("waiter CPU time while the lock was held: %.2f ms of %.0f ms\n", cpu / 1e6,
                  HOLD_NS / 1e6);
    assert_true(cpu < HOLD_NS / 10);
    pthread_join(th, NULL);
    assert_int_equal(gmux_comm_finalize(comm), GMUX_OK);
}

/* Sleeping on the lock does not stretch a short timeout by much: a 20 ms wait
 * that cannot be satisfied times out long before the holder lets go. */
static void test_timeout_while_held(void **state)
{
    (void)state;
    gmux_comm_t *comm = one_rank();
    struct holder h = {.comm = comm};
    pthread_t th;
    start_holder(&h, &th);
    assert_int_equal(gmux_signal_wait_timeout(comm, 0, 1, 0.02, NULL), GMUX_ERR_TIMEOUT);
    assert_false(atomic_load(&h.released)); /* it did not wait for the release */
    pthread_join(th, NULL);
    assert_int_equal(gmux_comm_finalize(comm), GMUX_OK);
}

/* A holder that never lets go (a proxy stuck inside the provider behind a
 * dead rank's lock, with nothing to free it) until the test says so. */
struct stuck {
    gmux_comm_t *comm;
    _Atomic int locked, release;
};

static void *stuck_main(void *arg)
{
    struct stuck *s = arg;
    pthread_mutex_lock(&s->comm->progress_lock);
    atomic_store(&s->locked, 1);
    while (!atomic_load(&s->release))
        sched_yield();
    pthread_mutex_unlock(&s->comm->progress_lock);
    return NULL;
}

struct caller {
    gmux_comm_t *comm;
    gmux_status_t flush, src_dereg;
};

static void *caller_main(void *arg)
{
    struct caller *c = arg;
    c->flush = gmux_flush(c->comm, 0);
    c->src_dereg = gmux_source_deregister(c->comm, c);
    return NULL;
}

/* Calls that need the progress lock give up with GMUX_ERR_TIMEOUT once the
 * communicator's timeout passed while a holder keeps it for good. Until
 * 2026-12-03 net_progress_lock polled for ever: gmux_flush hung here (its
 * wait's condition took the lock), whatever the timeout; so did
 * gmux_source_deregister. The join below is only a watchdog for that hang. */
static void test_lock_bounded_when_held_for_good(void **state)
{
    (void)state;
    gmux_comm_t *comm = one_rank();
    assert_int_equal(gmux_comm_set_timeout(comm, 0.2), GMUX_OK);
    struct stuck s = {.comm = comm};
    pthread_t th, tc;
    assert_int_equal(pthread_create(&th, NULL, stuck_main, &s), 0);
    while (!atomic_load(&s.locked))
        sched_yield();
    struct caller c = {comm, GMUX_OK, GMUX_OK};
    assert_int_equal(pthread_create(&tc, NULL, caller_main, &c), 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 60;
    int joined = pthread_timedjoin_np(tc, NULL, &ts);
    if (joined != 0)
        fail_msg("flush still waiting for the progress lock after 60 s (timeout 0.2 s)");
    atomic_store(&s.release, 1);
    pthread_join(th, NULL);
    assert_int_equal(c.flush, GMUX_ERR_TIMEOUT);
    assert_int_equal(c.src_dereg, GMUX_ERR_TIMEOUT);
    assert_int_equal(gmux_comm_finalize(comm), GMUX_OK);
}

struct setter {
    gmux_comm_t *comm;
    _Atomic int stop;
};

static void *setter_main(void *arg)
{
    struct setter *s = arg;
    for (unsigned i = 0; !atomic_load(&s->stop); i++) {
        assert_int_equal(gmux_comm_set_timeout(s->comm, i & 1 ? 30.0 : 20.0), GMUX_OK);
        sched_yield();
    }
    return NULL;
}

/* The communicator's timeout changed by one thread while others wait with
 * it (net_rank fetchlate shortens it around calls that must time out): no
 * data race (TSan; the field was written plainly), and waits use the new
 * value. */
static void test_timeout_set_while_waiting(void **state)
{
    (void)state;
    gmux_comm_t *comm = one_rank();
    struct setter s = {.comm = comm};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, setter_main, &s), 0);
    for (int i = 0; i < 2000; i++)
        assert_int_equal(gmux_flush(comm, 0), GMUX_OK); /* reads the timeout */
    atomic_store(&s.stop, 1);
    pthread_join(th, NULL);
    assert_int_equal(gmux_comm_set_timeout(comm, 0), GMUX_ERR_INVALID);
    assert_int_equal(gmux_comm_set_timeout(comm, -1), GMUX_ERR_INVALID);
    assert_int_equal(gmux_comm_set_timeout(comm, 0.0 / 0.0), GMUX_ERR_INVALID);
    assert_int_equal(gmux_comm_set_timeout(comm, 1e30), GMUX_OK);
    assert_true(gmux_comm_timeout(comm) == NET_TIMEOUT_MAX_S); /* "never", kept in range */
    assert_int_equal(gmux_comm_set_timeout(comm, 0.02), GMUX_OK);
    assert_true(gmux_comm_timeout(comm) == 0.02);
    assert_int_equal(gmux_signal_wait(comm, 0, 1, NULL), GMUX_ERR_TIMEOUT);
    assert_int_equal(gmux_comm_finalize(comm), GMUX_OK);
}

struct watcher {
    const uint64_t *word;
    uint64_t want;
    _Atomic int seen;
};

/* Spins on one window word with acquire loads, as shmem_wait_until does,
 * touching nothing else of the communicator (no lock that would order it
 * after the writer). */
static void *watcher_main(void *arg)
{
    struct watcher *w = arg;
    uint64_t deadline = com_clock_ns() + 20 * COM_NS_PER_S;
    while (__atomic_load_n(w->word, __ATOMIC_ACQUIRE) != w->want)
        if (com_clock_ns() > deadline)
            return NULL;
    atomic_store(&w->seen, 1);
    return NULL;
}

/* A rank's put to itself writes a window word that another of its threads
 * waits on with atomic loads: the copy must write each aligned word
 * atomically (TSan: it raced with memmove), and the waiter sees the value
 * whole. Words at offsets that make the copy's head and tail short. */
static void test_local_put_to_waited_word(void **state)
{
    (void)state;
    gmux_comm_t *comm = one_rank();
    static uint64_t win_mem[16];
    gmux_window_t win;
    assert_int_equal(gmux_window_register(comm, win_mem, sizeof(win_mem), &win), GMUX_OK);
    uint64_t src[16];
    for (int i = 0; i < 16; i++)
        src[i] = 0x1122334455667700u + (uint64_t)i;
    struct watcher w[3] = {
        {&win_mem[1], src[1], 0}, {&win_mem[5], src[5], 0}, {&win_mem[9], 0x55667709u, 0}};
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, watcher_main, &w[i]), 0);
    /* bytes [4, 52): a 4-byte head, words 1..5, a 4-byte tail in word 6 */
    assert_int_equal(gmux_put(comm, 0, 0, win, 4, (char *)src + 4, 48, NULL), GMUX_OK);
    assert_int_equal(gmux_put_value(comm, 0, 0, win, 9 * 8, 0x55667709u, 8, NULL), GMUX_OK);
    assert_int_equal(gmux_flush(comm, 0), GMUX_OK);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_true(atomic_load(&w[i].seen));
    }
    assert_int_equal(memcmp((char *)win_mem + 4, (char *)src + 4, 48), 0);
    static const char zero[4];
    assert_int_equal(memcmp(win_mem, zero, 4), 0); /* the bytes around it untouched */
    assert_int_equal(memcmp((char *)win_mem + 52, zero, 4), 0);
    assert_int_equal(gmux_window_deregister(comm, win), GMUX_OK);
    assert_int_equal(gmux_comm_finalize(comm), GMUX_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poll_and_sleep),
        cmocka_unit_test(test_wait_sleeps_beside_holder),
        cmocka_unit_test(test_timeout_while_held),
        cmocka_unit_test(test_timeout_set_while_waiting),
        cmocka_unit_test(test_lock_bounded_when_held_for_good),
        cmocka_unit_test(test_local_put_to_waited_word),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
