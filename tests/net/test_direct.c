/*
 * The direct path (src/net/proxy.c, net_progress_direct) against the ring
 * path on one stream: several producer threads issue put_values and signals
 * on the same (context, peer) while a disturber thread holds the progress
 * lock now and then, so that some operations go through the ring (lock
 * taken, or the ring not empty yet) and others execute directly. The main
 * thread checks the ordering rule: a signal of thread t with value s is never
 * visible before the data of every put of thread t issued before it.
 *
 * A one-rank job executes in order at once (exec_self), so the order seen
 * here is exactly the order in which the progress-lock holders executed the
 * descriptors: the order the target would give the stream (order.c). Every
 * data word is written once, before its signal, so under TSan a signal
 * released before its data shows up as a race too.
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

#define NT 4 /* producer threads, all on context 0 to peer 0 */
#if defined(__SANITIZE_THREAD__)
#define ROUNDS 1500
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ROUNDS 1500
#endif
#endif
#ifndef ROUNDS
#define ROUNDS 20000
#endif

struct run {
    gmux_comm_t *comm;
    gmux_window_t win;
    uint64_t *words;      /* [NT][ROUNDS + 1]: word i of thread t holds i once written */
    _Atomic int stop;     /* the disturber's */
    _Atomic int failed;   /* a producer's call failed */
    _Atomic uint64_t ops; /* operations issued, all threads */
};

static struct run R;

static void *producer(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t ops = 0;
    for (uint64_t i = 1; i <= ROUNDS; i++) {
        uint64_t off = ((uint64_t)t * (ROUNDS + 1) + i) * 8;
        bool attach = i % 3 == 0;
        gmux_op_opts_t o = {attach ? GMUX_SIGNAL_SET : GMUX_SIGNAL_NONE, (uint32_t)t, i,
                            GMUX_NO_COUNTER};
        gmux_status_t st = gmux_put_value(R.comm, 0, 0, R.win, off, i, 8, &o);
        ops++;
        if (st == GMUX_OK && !attach) {
            st = gmux_signal(R.comm, 0, 0, (uint32_t)t, GMUX_SIGNAL_SET, i);
            ops++;
        }
        if (st != GMUX_OK) {
            atomic_store(&R.failed, 1);
            break;
        }
    }
    atomic_fetch_add(&R.ops, ops);
    return NULL;
}

/* Takes the progress lock for a moment, every so often: meanwhile every
 * producer's trylock fails and its operation goes into the ring, and after
 * it the ring holds descriptors that the next operations must queue behind. */
static void *disturber(void *arg)
{
    (void)arg;
    struct timespec pause = {0, 20 * 1000};
    while (!atomic_load(&R.stop)) {
        net_progress_lock_wait(R.comm);
        for (int k = 0; k < 8; k++)
            sched_yield();
        pthread_mutex_unlock(&R.comm->progress_lock);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

/* Verifies, for every signal value seen, the data of all earlier rounds of
 * its thread (each word once, incrementally); returns the checks made. */
static uint64_t check_until_done(void)
{
    uint64_t verified[NT] = {0}, checks = 0;
    uint64_t deadline = com_deadline_after_ns(100 * COM_NS_PER_S);
    for (;;) {
        int done = 0;
        for (int t = 0; t < NT; t++) {
            uint64_t s = gmux_signal_read(R.comm, (uint32_t)t);
            assert_true(s >= verified[t]); /* SET values of one thread only grow */
            for (uint64_t j = verified[t] + 1; j <= s; j++) {
                uint64_t w = R.words[(uint64_t)t * (ROUNDS + 1) + j];
                if (w != j)
                    fail_msg("ORDER VIOLATION: thread %d signal %llu visible, data of round "
                             "%llu is %llu",
                             t, (unsigned long long)s, (unsigned long long)j,
                             (unsigned long long)w);
                checks++;
            }
            verified[t] = s;
            done += s == ROUNDS;
        }
        if (done == NT || atomic_load(&R.failed))
            break;
        assert_false(com_deadline_passed(deadline));
        /* drive progress for what sits in the ring */
        gmux_signal_wait_timeout(R.comm, 0, verified[0] + 1, 0.0002, NULL);
    }
    return checks;
}

static void run_mixed(bool direct)
{
    memset(&R, 0, sizeof(R));
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.ring_slots = 16; /* small: back-pressure happens too */
    p.num_signals = NT;
    p.num_counters = 1;
    p.timeout_s = 60;
    assert_int_equal(gmux_comm_init(&p, &R.comm), GMUX_OK);
    R.comm->direct = direct; /* before any producer runs */
    size_t bytes = (size_t)NT * (ROUNDS + 1) * 8;
    R.words = calloc(1, bytes);
    assert_non_null(R.words);
    assert_int_equal(gmux_window_register(R.comm, R.words, bytes, &R.win), GMUX_OK);

    pthread_t th[NT], dis;
    assert_int_equal(pthread_create(&dis, NULL, disturber, NULL), 0);
    for (int t = 0; t < NT; t++)
        assert_int_equal(pthread_create(&th[t], NULL, producer, (void *)(intptr_t)t), 0);
    uint64_t checks = check_until_done();
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    atomic_store(&R.stop, 1);
    pthread_join(dis, NULL);
    assert_false(atomic_load(&R.failed));
    assert_true(checks == (uint64_t)NT * ROUNDS);
    assert_int_equal(gmux_quiet(R.comm, 0), GMUX_OK);

    /* how the operations went: tickets claimed on the ring vs all issued */
    uint64_t ops = atomic_load(&R.ops);
    uint64_t ring = net_ring_tail(&R.comm->rings[0]);
    print_message("direct %s: %llu operations, %llu through the ring, %llu direct\n",
                  direct ? "on" : "off", (unsigned long long)ops, (unsigned long long)ring,
                  (unsigned long long)(ops - ring));
    assert_true(ops == (uint64_t)NT * ROUNDS * 2 - (uint64_t)NT * (ROUNDS / 3));
    if (direct) {
        assert_true(ring > 0);   /* the disturber forced some into the ring */
        assert_true(ring < ops); /* and the rest went direct */
    } else {
        assert_true(ring == ops);
    }
    assert_int_equal(gmux_window_deregister(R.comm, R.win), GMUX_OK);
    assert_int_equal(gmux_comm_finalize(R.comm), GMUX_OK);
    free(R.words);
}

static void test_mixed_direct(void **state)
{
    (void)state;
    run_mixed(true);
}

static void test_mixed_ring_only(void **state)
{
    (void)state;
    run_mixed(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_direct),
        cmocka_unit_test(test_mixed_ring_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
