/*
 * One rank of the multi-process net tests, started by `gmux launch`:
 *   net_rank data MAXBYTES     puts of 1 byte .. MAXBYTES around a ring, verified
 *   net_rank order ROUNDS THREADS   ordering stress: a signal is never seen before its data
 *   net_rank mixed ROUNDS THREADS   threads sharing one stream, their operations going
 *                              direct or through the ring: a signal never before the data
 *                              of any earlier put of its thread (net_rank_mixed.c)
 *   net_rank coalesce ROUNDS    runs of contiguous puts and put_values, the signal on the
 *                              last or alone after them (what the proxy merges): every
 *                              signal after its data, exact bytes, every counter bumped
 *   net_rank semantics         counters, flush (source reuse) and quiet (remote completion)
 *   net_rank hmem EXPECT       windows and put sources registered as device memory, direct
 *                              or staged as EXPECT says (net_rank_hmem.c)
 *   net_rank teams             barriers over world and strided teams
 *   net_rank kill [linger]     the last rank dies (SIGKILL); the others must see GMUX_ERR_PEER;
 *                              linger: rank 0 finalizes only once the others left
 *   net_rank killlock          the same on shm, the victim dying while it holds its own and
 *                              rank 0's region locks, as if killed inside libfabric
 *   net_rank guardlive         (shm) after a death, a live rank keeps its own region lock
 *                              for 1.5 s inside a call: the shm guard must leave it held
 *   net_rank orphan exit|finalize   the launcher is killed mid-job (net_rank_orphan.c)
 *   net_rank leftover          (shm) the rank NET_RANK_DIE_UNLINKING names dies at the end of
 *                              its join; the others count its files left (net_rank_orphan.c)
 *   net_rank shape WHAT        the last rank joins with another ctx, sig, provider or hmem
 *                              setting: every rank is refused at once
 *   net_rank quiet2|rxerr|fetchlate|deadops|deadfetch|deadring|stagefull   defects an audit found
 *                              (net_rank_audit.c)
 * Exit 0 on success; failures print the reason.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gmux/net.h>

#include "common/clock.h"
#include "net/internal.h" /* kill linger, killlock: the peers gone, the region locks */

#include "net_rank.h"
#include "rank_kill.h"

gmux_comm_t *comm;
int me, n;

static uint8_t pattern(int src, size_t size, size_t i)
{
    return (uint8_t)(src * 131 + size * 7 + i * 13 + (i >> 9));
}

/* Bytes i..i+7 of src's pattern as they lie in memory. */
static uint64_t pattern8(int src, size_t size, size_t i)
{
    uint8_t b[8];
    for (size_t k = 0; k < 8; k++)
        b[k] = pattern(src, size, i + k);
    uint64_t v;
    memcpy(&v, b, 8);
    return v;
}

/* Fills buf with src's pattern, eight bytes a store: under TSan every
 * store is a call, and the 64 MiB case made most of the mode's time. */
static void pattern_fill(uint8_t *buf, int src, size_t size)
{
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t v = pattern8(src, size, i);
        memcpy(buf + i, &v, 8);
    }
    for (; i < size; i++)
        buf[i] = pattern(src, size, i);
}

/* The first byte of buf that is not src's pattern, or size (checks every
 * byte, eight a load). */
static size_t pattern_mismatch(const uint8_t *buf, int src, size_t size)
{
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t v;
        memcpy(&v, buf + i, 8);
        if (v != pattern8(src, size, i))
            break;
    }
    for (; i < size; i++)
        if (buf[i] != pattern(src, size, i))
            return i;
    return size;
}

static int mode_data(size_t maxbytes)
{
    uint8_t *win = malloc(maxbytes), *src = malloc(maxbytes);
    CHECK(win && src, "out of memory");
    gmux_window_t w;
    OK(gmux_window_register(comm, win, maxbytes, &w));
    int right = (me + 1) % n, left = (me + n - 1) % n;
    uint64_t round = 0;
    /* 1, 5, 21, 85, 340, ... and always maxbytes itself last */
    for (size_t size = 1, last = 0; !last; size = size < 64 ? size * 4 + 1 : size * 4) {
        if (size >= maxbytes) {
            size = maxbytes;
            last = 1;
        }
        pattern_fill(src, me, size);
        gmux_op_opts_t o = {GMUX_SIGNAL_ADD, 0, 1, GMUX_NO_COUNTER};
        OK(gmux_put(comm, (uint32_t)(round % 4), right, w, 0, src, size, &o));
        round++;
        OK(gmux_signal_wait(comm, 0, round, NULL));
        size_t bad = pattern_mismatch(win, left, size);
        CHECK(bad == size, "size %zu byte %zu", size, bad);
        OK(gmux_flush(comm, (uint32_t)((round - 1) % 4)));
        OK(gmux_barrier(gmux_team_world(comm)));
    }
    /* put_value of every width, with a SET signal */
    for (unsigned b = 1; b <= 8; b++) {
        uint64_t v = 0x0807060504030201ull * (uint64_t)(me + 1);
        gmux_op_opts_t o = {GMUX_SIGNAL_SET, 1, b, GMUX_NO_COUNTER};
        OK(gmux_put_value(comm, 0, right, w, 16 * b, v, b, &o));
        OK(gmux_signal_wait(comm, 1, b, NULL));
        uint64_t want = 0x0807060504030201ull * (uint64_t)(left + 1), got = 0;
        memcpy(&got, win + 16 * b, b);
        CHECK(memcmp(&got, &want, b) == 0, "put_value %u bytes", b);
        OK(gmux_barrier(gmux_team_world(comm)));
    }
    OK(gmux_window_deregister(comm, w));
    free(win);
    free(src);
    printf("rank %d: data ok up to %zu bytes over %s\n", me, maxbytes, gmux_comm_provider(comm));
    return 0;
}

/* --- ordering stress -------------------------------------------------------- */

#define ORD_SLOT 8192 /* bytes of window per (source, thread) */
#define ORD_KEEP 4    /* source buffers per thread in flight */
static int ord_threads;
static uint64_t ord_rounds;
static gmux_window_t ord_win;
static uint8_t *ord_mem;
static atomic_int ord_fail;

static size_t ord_size(uint64_t i)
{
    static const size_t sizes[] = {8, 64, 512, 4096, ORD_SLOT};
    return i % 7 == 0 ? 8 : sizes[i % 5];
}

static void *ord_producer(void *arg)
{
    int t = (int)(intptr_t)arg;
    int right = (me + 1) % n;
    uint32_t ctx = (uint32_t)(t % 2); /* several threads share each context's ring */
    uint64_t *bufs[ORD_KEEP];
    uint64_t used_at[ORD_KEEP] = {0};
    for (int k = 0; k < ORD_KEEP; k++)
        bufs[k] = malloc(ORD_SLOT);
    uint64_t off = ((uint64_t)me * (uint64_t)ord_threads + (uint64_t)t) * ORD_SLOT;
    uint32_t sig = (uint32_t)(me * ord_threads + t);
    uint64_t nput = 0;
    gmux_status_t st = GMUX_OK;
    for (uint64_t i = 1; i <= ord_rounds && st == GMUX_OK; i++) {
        size_t sz = ord_size(i);
        bool attach = i % 3 == 0;
        gmux_op_opts_t o = {attach ? GMUX_SIGNAL_SET : GMUX_SIGNAL_NONE, sig, i, (uint32_t)t};
        if (i % 7 == 0) {
            o.counter_id = GMUX_NO_COUNTER;
            st = gmux_put_value(comm, ctx, right, ord_win, off, i, 8, &o);
        } else {
            int k = (int)(i % ORD_KEEP);
            if (used_at[k])
                st = gmux_counter_wait(comm, (uint32_t)t, used_at[k], NULL);
            for (size_t w = 0; w < sz / 8; w++)
                bufs[k][w] = i;
            if (st == GMUX_OK)
                st = gmux_put(comm, ctx, right, ord_win, off, bufs[k], sz, &o);
            used_at[k] = ++nput;
        }
        if (st == GMUX_OK && !attach)
            st = gmux_signal(comm, ctx, right, sig, GMUX_SIGNAL_SET, i);
    }
    if (st == GMUX_OK)
        st = gmux_flush(comm, ctx);
    if (st != GMUX_OK) {
        fprintf(stderr, "rank %d thread %d: %s\n", me, t, gmux_status_name(st));
        atomic_store(&ord_fail, 1);
    }
    for (int k = 0; k < ORD_KEEP; k++)
        free(bufs[k]);
    return NULL;
}

/* Watches the slots written by the left neighbour: a signal value s must
 * never be visible before the data of round s. */
static int ord_check(void)
{
    int left = (me + n - 1) % n;
    uint64_t done = 0, checks = 0;
    uint64_t *seen = calloc((size_t)ord_threads, sizeof(uint64_t));
    while (done < (uint64_t)ord_threads && !atomic_load(&ord_fail)) {
        done = 0;
        for (int t = 0; t < ord_threads; t++) {
            uint32_t sig = (uint32_t)(left * ord_threads + t);
            uint64_t s = gmux_signal_read(comm, sig);
            if (s == 0) {
                continue;
            }
            const _Atomic uint64_t *slot =
                (const _Atomic uint64_t *)(ord_mem +
                                           ((uint64_t)left * (uint64_t)ord_threads + (uint64_t)t) *
                                               ORD_SLOT);
            size_t last = ord_size(s) / 8 - 1;
            uint64_t first_w = atomic_load_explicit(&slot[0], memory_order_relaxed);
            uint64_t last_w = atomic_load_explicit(&slot[last], memory_order_relaxed);
            CHECK(first_w >= s && last_w >= s,
                  "ORDER VIOLATION: signal %" PRIu64 " seen before its data (%" PRIu64 ", %" PRIu64
                  ") from rank %d thread %d",
                  s, first_w, last_w, left, t);
            CHECK(s >= seen[t], "signal went back");
            seen[t] = s;
            checks++;
            done += s == ord_rounds;
        }
        /* drive progress while nothing new arrives */
        uint32_t sig0 = (uint32_t)(left * ord_threads);
        gmux_signal_wait_timeout(comm, sig0, seen[0] + 1, 0.0005, NULL);
    }
    free(seen);
    CHECK(!atomic_load(&ord_fail), "a producer failed");
    printf("rank %d: order ok, %" PRIu64 " rounds x %d threads, %" PRIu64 " checks\n", me,
           ord_rounds, ord_threads, checks);
    return 0;
}

static int mode_order(uint64_t rounds, int threads)
{
    ord_threads = threads;
    ord_rounds = rounds;
    size_t bytes = (size_t)n * (size_t)threads * ORD_SLOT;
    ord_mem = calloc(1, bytes);
    OK(gmux_window_register(comm, ord_mem, bytes, &ord_win));
    pthread_t th[64];
    for (int t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, ord_producer, (void *)(intptr_t)t);
    int rc = ord_check();
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(gmux_window_deregister(comm, ord_win));
    free(ord_mem);
    return rc;
}

/* --- coalescing ---------------------------------------------------------------- */

/* Round i of a thread writes a run of pieces at offsets 0, 8, ... of its
 * region: piece j is a put_value or a put of 2, 16 or 100 words, all words
 * holding i; then SET signal i, on the run's last put or alone after it.
 * Runs go up to 9.6 KB, so the proxy's gathered writes (at most the inject
 * size) split some of them. */
#define CO_WORDS  2048 /* words of window per (source, thread) */
#define CO_PIECES 12
#define CO_KEEP   64 /* source buffers per thread */
static const uint32_t co_piece_words[4] = {1, 2, 16, 100};

static uint32_t co_piece(uint64_t i, uint32_t j)
{
    return co_piece_words[(i + j) % 4];
}

static uint32_t co_npieces(uint64_t i)
{
    return 1 + (uint32_t)(i % CO_PIECES);
}

static uint64_t co_words(uint64_t i)
{
    uint64_t w = 0;
    for (uint32_t j = 0; j < co_npieces(i); j++)
        w += co_piece(i, j);
    return w;
}

static void *co_producer(void *arg)
{
    int t = (int)(intptr_t)arg;
    int right = (me + 1) % n;
    uint32_t ctx = (uint32_t)t;
    uint64_t *bufs[CO_KEEP];
    uint64_t used_at[CO_KEEP] = {0};
    for (int k = 0; k < CO_KEEP; k++)
        bufs[k] = malloc(100 * sizeof(uint64_t));
    uint64_t base = ((uint64_t)me * 2 + (uint64_t)t) * CO_WORDS * 8;
    uint32_t sig = (uint32_t)(me * 2 + t);
    uint64_t nput = 0;
    gmux_status_t st = GMUX_OK;
    for (uint64_t i = 1; i <= ord_rounds && st == GMUX_OK; i++) {
        bool attach = i % 2 == 0;
        uint64_t off = base;
        uint32_t np = co_npieces(i);
        for (uint32_t j = 0; j < np && st == GMUX_OK; j++) {
            uint32_t w = co_piece(i, j);
            bool last = j + 1 == np;
            gmux_op_opts_t o = {last && attach ? GMUX_SIGNAL_SET : GMUX_SIGNAL_NONE, sig, i,
                                GMUX_NO_COUNTER};
            if (w == 1) {
                st = gmux_put_value(comm, ctx, right, ord_win, off, i, 8, &o);
            } else {
                int k = (int)(nput % CO_KEEP);
                if (used_at[k])
                    st = gmux_counter_wait(comm, (uint32_t)t, used_at[k], NULL);
                for (uint32_t x = 0; x < w; x++)
                    bufs[k][x] = i;
                o.counter_id = (uint32_t)t;
                if (st == GMUX_OK)
                    st = gmux_put(comm, ctx, right, ord_win, off, bufs[k], w * 8, &o);
                used_at[k] = ++nput;
            }
            off += w * 8;
        }
        if (st == GMUX_OK && !attach)
            st = gmux_signal(comm, ctx, right, sig, GMUX_SIGNAL_SET, i);
    }
    if (st == GMUX_OK)
        st = gmux_counter_wait(comm, (uint32_t)t, nput, NULL); /* every counter bumped */
    if (st == GMUX_OK)
        st = gmux_quiet(comm, ctx);
    if (st != GMUX_OK) {
        fprintf(stderr, "rank %d thread %d: %s\n", me, t, gmux_status_name(st));
        atomic_store(&ord_fail, 1);
    }
    for (int k = 0; k < CO_KEEP; k++)
        free(bufs[k]);
    return NULL;
}

/* Checks the run of round s (and the words past it) against signal s. */
static void co_check_run(const _Atomic uint64_t *w, uint64_t s, bool final)
{
    uint64_t len = co_words(s);
    for (uint64_t x = 0; x < len; x++) {
        uint64_t v = atomic_load_explicit(&w[x], memory_order_relaxed);
        CHECK(v >= s && v <= ord_rounds,
              "ORDER VIOLATION: word %" PRIu64 " = %" PRIu64 " under signal %" PRIu64, x, v, s);
        CHECK(!final || v == s, "word %" PRIu64 " = %" PRIu64 " after the last round %" PRIu64, x,
              v, s);
    }
}

static int mode_coalesce(uint64_t rounds)
{
    ord_rounds = rounds;
    size_t bytes = (size_t)n * 2 * CO_WORDS * 8;
    ord_mem = calloc(1, bytes);
    OK(gmux_window_register(comm, ord_mem, bytes, &ord_win));
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, co_producer, (void *)(intptr_t)t);
    int left = (me + n - 1) % n;
    uint64_t seen[2] = {0, 0}, checks = 0;
    while ((seen[0] < rounds || seen[1] < rounds) && !atomic_load(&ord_fail)) {
        for (int t = 0; t < 2; t++) {
            uint64_t s = gmux_signal_read(comm, (uint32_t)(left * 2 + t));
            if (s == 0)
                continue;
            CHECK(s >= seen[t], "signal went back");
            seen[t] = s;
            const _Atomic uint64_t *w =
                (const _Atomic uint64_t *)(ord_mem +
                                           ((uint64_t)left * 2 + (uint64_t)t) * CO_WORDS * 8);
            co_check_run(w, s, false);
            checks++;
        }
        gmux_signal_wait_timeout(comm, (uint32_t)(left * 2), seen[0] + 1, 0.0005, NULL);
    }
    CHECK(!atomic_load(&ord_fail), "a producer failed");
    for (int t = 0; t < 2; t++)
        co_check_run(
            (const _Atomic uint64_t *)(ord_mem + ((uint64_t)left * 2 + (uint64_t)t) * CO_WORDS * 8),
            rounds, true);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(gmux_window_deregister(comm, ord_win));
    free(ord_mem);
    printf("rank %d: coalesce ok, %" PRIu64 " rounds x 2 threads, %" PRIu64 " checks\n", me, rounds,
           checks);
    return 0;
}

/* --- counters, flush, quiet ------------------------------------------------- */

static int mode_semantics(void)
{
    enum { N_PUTS = 32, BIG = 256 * 1024 };
    uint8_t *win = calloc(1, (size_t)N_PUTS * BIG);
    uint8_t *src = malloc(BIG);
    gmux_window_t w;
    OK(gmux_window_register(comm, win, (size_t)N_PUTS * BIG, &w));
    int right = (me + 1) % n, left = (me + n - 1) % n;
    /* counter: one increment per put with a counter, none for the others */
    memset(src, 0x11 + me, BIG);
    gmux_counter_reset(comm, 3);
    for (int i = 0; i < N_PUTS; i++) {
        gmux_op_opts_t o = {GMUX_SIGNAL_NONE, 0, 0, i % 2 ? 3u : GMUX_NO_COUNTER};
        OK(gmux_put(comm, 0, right, w, (uint64_t)i * BIG, src, BIG, &o));
    }
    OK(gmux_counter_wait_timeout(comm, 3, N_PUTS / 2, 30.0, NULL));
    /* flush: afterwards the source may change without affecting the target */
    OK(gmux_flush(comm, 0));
    CHECK(gmux_counter_read(comm, 3) == N_PUTS / 2, "counter %" PRIu64, gmux_counter_read(comm, 3));
    memset(src, 0xee, BIG);
    /* quiet on context 0, then a signal on context 1: context 1 does not
     * order behind context 0, so only quiet makes the data visible now */
    OK(gmux_quiet(comm, 0));
    OK(gmux_signal(comm, 1, right, 7, GMUX_SIGNAL_INC, 0));
    OK(gmux_signal_wait(comm, 7, 1, NULL));
    for (size_t i = 0; i < (size_t)N_PUTS * BIG; i += 4093)
        CHECK(win[i] == (uint8_t)(0x11 + left), "byte %zu is %#x after quiet", i, win[i]);
    /* wait with timeout: nobody signals 8 */
    uint64_t seen = 99;
    gmux_status_t st = gmux_signal_wait_timeout(comm, 8, 1, 0.05, &seen);
    CHECK(st == GMUX_ERR_TIMEOUT && seen == 0, "%s seen %" PRIu64, gmux_status_name(st), seen);
    /* reset, then ADD accumulates */
    gmux_signal_reset(comm, 7);
    OK(gmux_barrier(gmux_team_world(comm)));
    for (int i = 0; i < 5; i++)
        OK(gmux_signal(comm, 2, right, 7, GMUX_SIGNAL_ADD, 10));
    OK(gmux_signal_wait(comm, 7, 50, &seen));
    CHECK(seen == 50, "add: %" PRIu64, seen);
    /* invalid arguments */
    CHECK(gmux_put(comm, 0, n, w, 0, src, 1, NULL) == GMUX_ERR_INVALID, "bad peer");
    CHECK(gmux_put(comm, 0, right, w, (uint64_t)N_PUTS * BIG, src, 1, NULL) == GMUX_ERR_RANGE,
          "past window");
    CHECK(gmux_put_value(comm, 0, right, w, 0, 1, 9, NULL) == GMUX_ERR_INVALID, "9 bytes");
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(gmux_window_deregister(comm, w));
    free(win);
    free(src);
    printf("rank %d: semantics ok\n", me);
    return 0;
}

/* --- a peer dies ------------------------------------------------------------ */

/* The lock word of rank r's shm region, as the guard maps it (the regions'
 * names are gone from /dev/shm once the job started). NULL if absent. */
static pthread_spinlock_t *region_lock(int r)
{
    return comm->guard ? net_shmguard_lock_of(comm->guard, r) : NULL;
}

/* killlock: die inside the provider's critical sections: senders to the
 * victim and rank 0's own progress would spin for ever */
static void take_region_locks(void *arg)
{
    (void)arg;
    pthread_spinlock_t *own = region_lock(me), *zero = region_lock(0);
    CHECK(own && zero, "shm regions not found");
    pthread_spin_lock(own);
    pthread_spin_lock(zero);
}

/* kill linger: rank 0 stays until it has heard that every other rank is
 * gone (the victim died, the other survivors left after the death), so that
 * it names each (test_net_multi.c reads how). */
static void wait_others_gone(void)
{
    uint64_t end = com_clock_ns() + 20 * COM_NS_PER_S;
    for (int r = 1; r < n; r++) {
        while (!net_peer_dead(comm, r)) {
            CHECK(com_clock_ns() < end, "rank %d still there after 20 s", r);
            net_boot_poll(comm->boot);
            usleep(1000);
        }
    }
}

static int mode_kill(bool holding_locks, bool linger)
{
    uint64_t *win;
    gmux_window_t w;
    if (getenv("NET_RANK_KILL_STALL"))
        rank_kill_before_barrier = kill_stall_before_barrier;
    int victim = rank_kill_start(comm, &win, &w, holding_locks ? take_region_locks : NULL, NULL);
    /* keep talking to the victim until that fails; then waits must fail too.
     * Context 1 floods it without waiting (the victim does not read, so
     * writes queue up inside the provider when it dies: libfabric 1.17's tcp
     * reports queued injected writes with no context and ofi_rxm crashes on
     * them, see docs/net.md); context 0 asks for remote completion. */
    gmux_status_t st = GMUX_OK;
    for (uint64_t i = 1; st == GMUX_OK; i++) {
        gmux_op_opts_t o = {GMUX_SIGNAL_INC, 0, 0, GMUX_NO_COUNTER};
        st = gmux_put_value(comm, 1, victim, w, 8, i, 8, NULL);
        if (st == GMUX_OK && i % 64 == 0)
            st = gmux_put_value(comm, 0, victim, w, 0, i, 8, &o);
    }
    CHECK(st == GMUX_ERR_PEER, "operations ended with %s", gmux_status_name(st));
    /* returns at once: OK when nothing of context 0 was posted since the barrier */
    st = gmux_quiet(comm, 0);
    CHECK(st == GMUX_ERR_PEER || st == GMUX_OK, "quiet ended with %s", gmux_status_name(st));
    st = gmux_signal_wait(comm, 0, UINT64_MAX, NULL);
    CHECK(st == GMUX_ERR_PEER, "wait ended with %s", gmux_status_name(st));
    st = gmux_barrier(gmux_team_world(comm));
    CHECK(st == GMUX_ERR_PEER, "barrier ended with %s", gmux_status_name(st));
    printf("rank %d: peer failure detected (%s)\n", me, gmux_status_name(st));
    fflush(stdout);
    if (linger && me == 0)
        wait_others_gone();
    st = gmux_comm_finalize(comm);
    CHECK(st != GMUX_OK, "finalize after a death returned OK");
    comm = NULL;
    free(win);
    return 0;
}

/* Ranks that join with different shapes (argv: ctx, sig, provider or hmem
 * differ on the last rank) are all refused at once; nothing else runs. "At
 * once" is not timed: each rank's timeout is an hour, so a refusal that
 * waited for it would outlast the launcher's --timeout and fail the job
 * (test_net_multi: test_shape), however loaded the machine. How long the
 * refusal took is said, not judged. */
static int mode_shape(gmux_comm_params_t *p, const char *what)
{
    const char *r = getenv("GMUX_RANK"), *s = getenv("GMUX_SIZE");
    if (!r || !s)
        return 2;
    int rank = atoi(r);
    bool last = rank == atoi(s) - 1;
    if (strcmp(what, "ctx") == 0)
        p->num_contexts = last ? 2 : 4;
    else if (strcmp(what, "sig") == 0)
        p->num_signals = last ? 64 : 128;
    else if (strcmp(what, "provider") == 0)
        p->provider = last ? "tcp" : "shm";
    else if (strcmp(what, "hmem") == 0)
        setenv("GMUX_NET_HMEM", last ? "rma" : "auto", 1);
    else
        return 2;
    p->timeout_s = 3600;
    uint64_t t0 = com_clock_ns();
    gmux_status_t st = gmux_comm_init(p, &comm);
    double waited = (double)(com_clock_ns() - t0) * 1e-9;
    me = rank;
    CHECK(st == GMUX_ERR_INVALID && !comm, "joined with a different %s: %s", what,
          gmux_status_name(st));
    printf("rank %d: a different %s refused (after %.2f s)\n", rank, what, waited);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: net_rank data|order|mixed|coalesce|semantics|hmem|teams|kill|killlock|"
                "guardlive|orphan|leftover|shape|quiet2|rxerr|fetchlate|deadops|deadfetch|deadring|"
                "staleop|"
                "devwinbad|stagefull [args]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    if (strcmp(argv[1], "shape") == 0 && argc == 3)
        return mode_shape(&p, argv[2]);
    if (strcmp(argv[1], "teams") == 0)
        p.timeout_s = TEAMS_TIMEOUT_S;
    if (strcmp(argv[1], "kill") == 0 || strcmp(argv[1], "killlock") == 0 ||
        strcmp(argv[1], "guardlive") == 0) {
        p.timeout_s = 20;
        /* The victim runs no proxy thread: it reads nothing once the others
         * left the barrier (rank_kill.h), so their writes pile up in the
         * provider when it dies (the tcp case of docs/net.md), and in `kill` no thread of it
         * is inside libfabric then; `killlock` plays that case on purpose
         * (the shm guard's). */
        if (rank_kill_victim_env())
            p.start_proxy = 0;
    }
    if (strcmp(argv[1], "orphan") == 0 || strcmp(argv[1], "leftover") == 0)
        p.timeout_s = 20;
    bool audit = audit_mode(argv[1], &p);
    gmux_status_t st = gmux_comm_init(&p, &comm);
    if (st != GMUX_OK) {
        fprintf(stderr, "init: %s\n", gmux_status_name(st));
        return 1;
    }
    me = gmux_comm_rank(comm);
    n = gmux_comm_size(comm);
    int rc = 2;
    if (strcmp(argv[1], "data") == 0 && argc == 3)
        rc = mode_data(strtoull(argv[2], NULL, 0));
    else if (strcmp(argv[1], "order") == 0 && argc == 4)
        rc = mode_order(strtoull(argv[2], NULL, 0), atoi(argv[3]));
    else if (strcmp(argv[1], "mixed") == 0 && argc == 4)
        rc = mode_mixed(strtoull(argv[2], NULL, 0), atoi(argv[3]));
    else if (strcmp(argv[1], "coalesce") == 0 && argc == 3)
        rc = mode_coalesce(strtoull(argv[2], NULL, 0));
    else if (strcmp(argv[1], "semantics") == 0)
        rc = mode_semantics();
    else if (strcmp(argv[1], "hmem") == 0 && argc == 3)
        rc = mode_hmem(argv[2]);
    else if (strcmp(argv[1], "teams") == 0)
        rc = mode_teams();
    else if (strcmp(argv[1], "kill") == 0)
        rc = mode_kill(false, argc == 3 && strcmp(argv[2], "linger") == 0);
    else if (strcmp(argv[1], "killlock") == 0)
        rc = mode_kill(true, false);
    else if (strcmp(argv[1], "guardlive") == 0)
        rc = mode_guardlive();
    else if (strcmp(argv[1], "orphan") == 0 && argc == 3)
        rc = mode_orphan(argv[2]);
    else if (strcmp(argv[1], "leftover") == 0)
        rc = mode_leftover();
    else if (audit && argc == 2)
        rc = mode_audit(argv[1]);
    if (comm) {
        st = gmux_comm_finalize(comm);
        if (st != GMUX_OK) {
            fprintf(stderr, "rank %d: finalize: %s\n", me, gmux_status_name(st));
            rc = rc ? rc : 1;
        }
    }
    return rc;
}
