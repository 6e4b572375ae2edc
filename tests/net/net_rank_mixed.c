/*
 * net_rank mixed ROUNDS THREADS: THREADS producer threads of every rank put
 * to its right neighbour on one stream (context 0), so their operations
 * share one ring: each one either executes directly (the caller got the
 * progress lock and the ring was empty) or goes through the ring (the lock
 * was taken: by the proxy, by this rank's checker or disturber waiting, by
 * another producer; or the ring still held something). The checker watches
 * the left neighbour: a signal s of thread t must never be visible before
 * the data of rounds 1..s of that thread, each written once to its own word.
 * With GMUX_NET_DIRECT=0 the same runs through the ring alone.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "net_rank.h"

#define MX_MAX_THREADS 16

static uint64_t mx_rounds;
static int mx_threads;
static gmux_window_t mx_win;
static uint64_t *mx_mem; /* [source rank][thread][round 0..rounds] */
static atomic_int mx_fail, mx_stop;

static uint64_t mx_word(int src, int t, uint64_t i)
{
    return ((uint64_t)src * (uint64_t)mx_threads + (uint64_t)t) * (mx_rounds + 1) + i;
}

static void *mx_producer(void *arg)
{
    int t = (int)(intptr_t)arg;
    int right = (me + 1) % n;
    uint32_t sig = (uint32_t)(me * mx_threads + t);
    /* sources of the plain puts: never rewritten, kept until the flush */
    uint64_t *src = malloc((mx_rounds + 1) * sizeof(uint64_t));
    CHECK(src, "out of memory");
    gmux_status_t st = GMUX_OK;
    for (uint64_t i = 1; i <= mx_rounds && st == GMUX_OK; i++) {
        bool attach = i % 3 == 0;
        gmux_op_opts_t o = {attach ? GMUX_SIGNAL_SET : GMUX_SIGNAL_NONE, sig, i, GMUX_NO_COUNTER};
        uint64_t off = mx_word(me, t, i) * 8;
        src[i] = i;
        if (i % 4 == 1)
            st = gmux_put(comm, 0, right, mx_win, off, &src[i], 8, &o);
        else
            st = gmux_put_value(comm, 0, right, mx_win, off, i, 8, &o);
        if (st == GMUX_OK && !attach)
            st = gmux_signal(comm, 0, right, sig, GMUX_SIGNAL_SET, i);
    }
    if (st == GMUX_OK)
        st = gmux_flush(comm, 0);
    if (st != GMUX_OK) {
        fprintf(stderr, "rank %d thread %d: %s\n", me, t, gmux_status_name(st));
        atomic_store(&mx_fail, 1);
    }
    free(src);
    return NULL;
}

/* Takes the progress lock now and then through the public API (a short
 * wait on a signal nobody sends drives progress), so that producers find it
 * taken and queue in the ring. */
static void *mx_disturber(void *arg)
{
    uint32_t spare = (uint32_t)(intptr_t)arg;
    struct timespec pause = {0, 20 * 1000};
    while (!atomic_load(&mx_stop)) {
        gmux_signal_wait_timeout(comm, spare, 1, 0.00002, NULL);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static uint64_t mx_check(void)
{
    int left = (me + n - 1) % n;
    uint64_t verified[MX_MAX_THREADS] = {0}, checks = 0;
    for (;;) {
        int done = 0;
        for (int t = 0; t < mx_threads; t++) {
            uint64_t s = gmux_signal_read(comm, (uint32_t)(left * mx_threads + t));
            CHECK(s >= verified[t], "signal of thread %d went back", t);
            for (uint64_t j = verified[t] + 1; j <= s; j++) {
                const _Atomic uint64_t *w = (const _Atomic uint64_t *)&mx_mem[mx_word(left, t, j)];
                uint64_t v = atomic_load_explicit(w, memory_order_relaxed);
                CHECK(v == j,
                      "ORDER VIOLATION: signal %" PRIu64 " of rank %d thread %d visible, data "
                      "of round %" PRIu64 " is %" PRIu64,
                      s, left, t, j, v);
                checks++;
            }
            verified[t] = s;
            done += s == mx_rounds;
        }
        if (done == mx_threads || atomic_load(&mx_fail))
            break;
        gmux_signal_wait_timeout(comm, (uint32_t)(left * mx_threads), verified[0] + 1, 0.0005,
                                 NULL);
    }
    return checks;
}

int mode_mixed(uint64_t rounds, int threads)
{
    CHECK(threads >= 1 && threads <= MX_MAX_THREADS, "1 to %d threads", MX_MAX_THREADS);
    mx_rounds = rounds;
    mx_threads = threads;
    size_t bytes = (size_t)n * (size_t)threads * (rounds + 1) * sizeof(uint64_t);
    mx_mem = calloc(1, bytes);
    CHECK(mx_mem, "out of memory");
    OK(gmux_window_register(comm, mx_mem, bytes, &mx_win));
    pthread_t th[MX_MAX_THREADS], dis;
    pthread_create(&dis, NULL, mx_disturber, (void *)(intptr_t)(n * threads));
    for (int t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, mx_producer, (void *)(intptr_t)t);
    uint64_t checks = mx_check();
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    atomic_store(&mx_stop, 1);
    pthread_join(dis, NULL);
    CHECK(!atomic_load(&mx_fail), "a producer failed");
    CHECK(checks == rounds * (uint64_t)threads, "%" PRIu64 " checks", checks);
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(gmux_window_deregister(comm, mx_win));
    free(mx_mem);
    printf("rank %d: mixed ok, %" PRIu64 " rounds x %d threads on one stream\n", me, rounds,
           threads);
    return 0;
}
