/*
 * One rank of the device-API protocol test, started by `gmux launch`. The
 * functions of include/gmux/net_device.cuh are compiled here as host code and
 * run on CPU threads against a host handle (gmux_dev_handle_create_host), so
 * CI exercises the device producer path (ticket claim, word encoding,
 * service-thread flush/quiet, waits) against the real proxy without a GPU.
 *
 *   netdev_rank basic       put+signal ring with data checks, put_value,
 *                           signal set/add/inc, counters, flush, quiet,
 *                           wait timeout, invalid arguments
 *   netdev_rank threads T   T threads push puts with signals into the same
 *                           rings at once (claims contend; checks the
 *                           claim count; GMUX_NET_DEV_CLAIM picks cas/faa)
 *   netdev_rank kill        the last rank is killed; the others' device
 *                           puts, quiet and waits must fail, not hang
 *   netdev_rank deadstall   the same death, seen while the progress lock
 *                           is held (a pass stuck in the provider): device
 *                           puts to the dead rank, waits and quiet must
 *                           still fail at once with GMUX_ERR_PEER
 *   netdev_rank staged      a staged handle (device-memory windows) whose
 *                           "device" is host memory copied with memcpy: puts
 *                           from a source range, data checked in the target
 *                           window's device buffer as soon as the signal shows
 *   netdev_rank direct E    the same handle with its "device" memory offered
 *                           to the provider through FI_HMEM (as host memory,
 *                           GMUX_MEM_HOST_HMEM): E = direct (nothing staged
 *                           or copied but a rank's puts to itself), staged
 *                           (the provider cannot: everything staged)
 * Exit 0 on success.
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <atomic>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gmux/net.h>
#include <gmux/net_device.cuh>

#include "net/devstage.h"
#include "net/devsvc.h"
#include "netdev_hold.h"
#include "../net/rank_check.h"
#include "../net/rank_kill.h"

static int me, n;

enum { SIG_DATA = 0, SIG_VALUE = 1, SIG_SET = 2, SIG_INC = 3, SIG_BATCH = 4, SIG_THREADS = 8 };
#define WIN_BYTES 65536

static uint8_t pattern(int src, size_t size, size_t i)
{
    return (uint8_t)(src * 37 + size * 11 + i * 5 + (i >> 8));
}

static int mode_basic(gmux_comm_t *comm, const gmux_dev_handle_t &h)
{
    uint8_t *win = (uint8_t *)calloc(1, WIN_BYTES);
    uint8_t *src = (uint8_t *)malloc(WIN_BYTES);
    CHECK(win && src, "out of memory");
    gmux_window_t w;
    OK(gmux_window_register(comm, win, WIN_BYTES, &w));
    int right = (me + 1) % n, left = (me + n - 1) % n;

    /* put + signal around the ring, sizes 1 .. 32 KiB, data checked */
    uint64_t round = 0;
    for (size_t size = 1; size <= WIN_BYTES / 2; size = size * 3 + 1) {
        for (size_t i = 0; i < size; i++)
            src[i] = pattern(me, size, i);
        gmux_op_opts_t o = {GMUX_SIGNAL_ADD, SIG_DATA, 1, 0};
        OK(gmux_dev_put(h, (uint32_t)(round % h.nctx), right, w, 0, src, size, &o));
        OK(gmux_dev_counter_wait(h, 0, round + 1, 0, NULL)); /* source consumed */
        round++;
        uint64_t seen = 0;
        OK(gmux_dev_signal_wait(h, SIG_DATA, round, 0, &seen));
        CHECK(seen == round, "signal %llu, expected %llu", (unsigned long long)seen,
              (unsigned long long)round);
        for (size_t i = 0; i < size; i++)
            CHECK(win[i] == pattern(left, size, i), "size %zu byte %zu", size, i);
        OK(gmux_barrier(gmux_team_world(comm))); /* the window is reused next round */
    }

    /* put_value with a signal, then quiet: the value is at the target */
    uint64_t v = 0x0123456789abcdefull ^ (uint64_t)me;
    gmux_op_opts_t ov = {GMUX_SIGNAL_SET, SIG_VALUE, 7, GMUX_NO_COUNTER};
    OK(gmux_dev_put_value(h, 1, right, w, WIN_BYTES - 8, v, 8, &ov));
    OK(gmux_dev_quiet(h, 1));
    OK(gmux_dev_signal_wait(h, SIG_VALUE, 7, 0, NULL));
    uint64_t got;
    memcpy(&got, win + WIN_BYTES - 8, 8);
    CHECK(got == (0x0123456789abcdefull ^ (uint64_t)left), "put_value got %llx",
          (unsigned long long)got);

    /* a batch of puts with one claim, the signal on the last: all landed */
    {
        uint64_t offs[5], sizes[5];
        const void *srcs[5];
        for (int i = 0; i < 5; i++) {
            offs[i] = 1024 + 64 * (uint64_t)i;
            sizes[i] = 8 + (uint64_t)i;
            srcs[i] = src + 64 * i;
            for (uint64_t k = 0; k < sizes[i]; k++)
                src[64 * i + k] = pattern(me, 1000 + (size_t)i, (size_t)k);
        }
        gmux_op_opts_t ob = {GMUX_SIGNAL_SET, SIG_BATCH, 5, GMUX_NO_COUNTER};
        uint32_t issued = 0;
        OK(gmux_dev_put_batch(h, 0, right, w, 5, offs, srcs, sizes, &ob, &issued));
        CHECK(issued == 5, "batch issued %u", issued);
        OK(gmux_dev_signal_wait(h, SIG_BATCH, 5, 0, NULL));
        for (int i = 0; i < 5; i++)
            for (uint64_t k = 0; k < sizes[i]; k++)
                CHECK(win[1024 + 64 * i + k] == pattern(left, 1000 + (size_t)i, (size_t)k),
                      "batch put %d byte %llu", i, (unsigned long long)k);
        OK(gmux_dev_quiet(h, 0)); /* src is reused below */
        OK(gmux_barrier(gmux_team_world(comm)));
    }

    /* signal set, add and inc from every rank to rank 0 */
    OK(gmux_dev_signal(h, 2, 0, SIG_INC, GMUX_SIGNAL_INC, 0));
    OK(gmux_dev_signal(h, 2, 0, SIG_INC, GMUX_SIGNAL_ADD, 10));
    OK(gmux_dev_flush(h, 2));
    if (me == 0)
        OK(gmux_dev_signal_wait(h, SIG_INC, 11u * (uint64_t)n, 0, NULL));
    OK(gmux_barrier(gmux_team_world(comm)));
    if (me == 0)
        CHECK(gmux_dev_signal_read(h, SIG_INC) == 11u * (uint64_t)n, "inc/add total");
    OK(gmux_dev_signal(h, 3, right, SIG_SET, GMUX_SIGNAL_SET, 1000 + (uint64_t)me));
    OK(gmux_dev_signal_wait(h, SIG_SET, 1000 + (uint64_t)left, 0, NULL));
    CHECK(gmux_dev_signal_read(h, SIG_SET) == 1000 + (uint64_t)left, "set value");

    /* a wait that cannot be satisfied times out */
    uint64_t t0 = gmux_dev_now_ns();
    gmux_status_t st = gmux_dev_signal_wait(h, SIG_SET, 1u << 30, 50u * 1000 * 1000, NULL);
    CHECK(st == GMUX_ERR_TIMEOUT, "%s", gmux_status_name(st));
    CHECK(gmux_dev_now_ns() - t0 >= 50u * 1000 * 1000, "returned before the timeout");

    /* bad arguments are refused on the device side */
    CHECK(gmux_dev_signal(h, h.nctx, right, 0, GMUX_SIGNAL_INC, 0) == GMUX_ERR_INVALID, "ctx");
    CHECK(gmux_dev_signal(h, 0, n, 0, GMUX_SIGNAL_INC, 0) == GMUX_ERR_INVALID, "peer");
    CHECK(gmux_dev_signal(h, 0, right, h.nsig, GMUX_SIGNAL_INC, 0) == GMUX_ERR_INVALID, "sig");
    CHECK(gmux_dev_put_value(h, 0, right, w, 0, 1, 9, NULL) == GMUX_ERR_INVALID, "bytes");

    /* counter reset/read */
    gmux_dev_counter_reset(h, 0);
    CHECK(gmux_dev_counter_read(h, 0) == 0, "counter reset");
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(gmux_window_deregister(comm, w));
    free(win);
    free(src);
    return 0;
}

struct thr_arg {
    const gmux_dev_handle_t *h;
    int tid;
    int per_thread;
    gmux_window_t w;
    uint64_t *src;
};

static void *thr_main(void *p)
{
    struct thr_arg *a = (struct thr_arg *)p;
    const gmux_dev_handle_t &h = *a->h;
    int right = (me + 1) % n;
    for (int i = 0; i < a->per_thread; i++) {
        uint64_t slot = (uint64_t)a->tid * (uint64_t)a->per_thread + (uint64_t)i;
        /* every thread shares ctx 0: all claims contend on one ring */
        gmux_op_opts_t o = {GMUX_SIGNAL_ADD, SIG_THREADS, slot + 1, GMUX_NO_COUNTER};
        gmux_status_t st = gmux_dev_put(h, 0, right, a->w, slot * 8, &a->src[slot], 8, &o);
        CHECK(st == GMUX_OK, "%s", gmux_status_name(st));
    }
    return NULL;
}

static int mode_threads(gmux_comm_t *comm, gmux_dev_handle_t h, int nthreads)
{
    /* count the claims and the compare-and-swaps they lost */
    uint64_t stats[2] = {0, 0};
    h.claim_stats = stats;
    const int per = 200;
    size_t total = (size_t)nthreads * per;
    uint64_t *win = (uint64_t *)calloc(total, 8);
    uint64_t *src = (uint64_t *)malloc(total * 8);
    CHECK(win && src, "out of memory");
    for (size_t i = 0; i < total; i++)
        src[i] = ((uint64_t)me << 40) | (i * 2654435761u);
    gmux_window_t w;
    OK(gmux_window_register(comm, win, total * 8, &w));
    pthread_t th[16];
    struct thr_arg args[16];
    CHECK(nthreads > 0 && nthreads <= 16, "threads");
    for (int t = 0; t < nthreads; t++) {
        args[t] = {&h, t, per, w, src};
        CHECK(pthread_create(&th[t], NULL, thr_main, &args[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    /* one claim per put (a signal rides in the put's descriptor) */
    CHECK(stats[0] == total, "claims %llu, puts %zu", (unsigned long long)stats[0], total);
    bool faa = h.claim_mode == GMUX_DEV_CLAIM_FAA;
    if (me == 0)
        fprintf(stderr, "netdev_rank threads: %zu claims (%s): %llu %s\n", total,
                faa ? "fetch-and-add" : "compare-and-swap", (unsigned long long)stats[1],
                faa ? "waited for their slots" : "lost compare-and-swaps");
    uint64_t expect = (uint64_t)total * (total + 1) / 2;
    OK(gmux_dev_signal_wait(h, SIG_THREADS, expect, 0, NULL));
    CHECK(gmux_dev_signal_read(h, SIG_THREADS) == expect, "signal sum");
    int left = (me + n - 1) % n;
    for (size_t i = 0; i < total; i++)
        CHECK(win[i] == (((uint64_t)left << 40) | (i * 2654435761u)), "word %zu", i);
    OK(gmux_dev_quiet(h, 0));
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(gmux_window_deregister(comm, w));
    free(win);
    free(src);
    return 0;
}

/* The fake device of the staged mode: plain memory, synchronous memcpy. */
static int fake_copy(void *arg, void *dst, const void *src, size_t n)
{
    (void)arg;
    memcpy(dst, src, n);
    return 0;
}

static std::atomic<size_t> fake_d2h_bytes; /* what the service thread staged */
static std::atomic<size_t> fake_h2d_bytes; /* what it copied into device windows */
static std::atomic<int> fake_any_copies;   /* puts to itself through the comm's mem_copy */

static int fake_d2h(void *arg, void *dst, const void *src, size_t n)
{
    fake_d2h_bytes += n;
    return fake_copy(arg, dst, src, n);
}

static int fake_h2d(void *arg, void *dst, const void *src, size_t n)
{
    fake_h2d_bytes += n;
    return fake_copy(arg, dst, src, n);
}

static int fake_any(void *arg, void *dst, const void *src, size_t n)
{
    fake_any_copies++;
    memmove(dst, src, n);
    (void)arg;
    return 0;
}

static void *fake_alloc(void *arg, size_t n)
{
    (void)arg;
    return aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
}

static void fake_free(void *arg, void *p)
{
    (void)arg;
    free(p);
}

/* expect: 's' every window and source staged, 'd' every one direct. */
static int mode_staged(gmux_comm_t *comm, const gmux_dev_handle_t &h0, char expect)
{
    gmux_dev_handle_t h = h0;
    CHECK(h.sigview != NULL, "a staged handle reads signals from the mirror");
    uint8_t *dev_recv = (uint8_t *)calloc(1, WIN_BYTES);
    uint8_t *dev_src = (uint8_t *)calloc(1, WIN_BYTES);
    CHECK(dev_recv && dev_src, "out of memory");
    dev_recv[17] = 0xab; /* registration keeps what the device buffer held */
    gmux_window_t w;
    OK(gmux_dev_window_register(&h, dev_recv, WIN_BYTES, &w));
    OK(gmux_dev_source_register(&h, dev_src, WIN_BYTES));
    CHECK(dev_recv[17] == 0xab, "device window clobbered at registration");
    int want = expect == 'd';
    CHECK(gmux_dev_is_direct(&h, dev_recv) == want && gmux_dev_is_direct(&h, dev_src) == want,
          "window %d, source %d: expected %d", gmux_dev_is_direct(&h, dev_recv),
          gmux_dev_is_direct(&h, dev_src), want);
    CHECK(gmux_dev_is_direct(&h, dev_src + 1) == -1 && gmux_dev_is_direct(&h, NULL) == -1,
          "an address nothing was registered at");
    int right = (me + 1) % n, left = (me + n - 1) % n;
    uint64_t round = 0;
    size_t staged_before = fake_d2h_bytes, put_bytes = 0;
    for (size_t size = 1; size <= WIN_BYTES / 2; size = size * 5 + 3) {
        put_bytes += size;
        for (size_t i = 0; i < size; i++)
            dev_src[i] = pattern(me, size, i);
        gmux_op_opts_t o = {GMUX_SIGNAL_ADD, SIG_DATA, 1, GMUX_NO_COUNTER};
        uint32_t ctx = (uint32_t)(round % h.nctx);
        OK(gmux_dev_put(h, ctx, right, w, 0, dev_src, size, &o));
        OK(gmux_dev_flush(h, ctx)); /* dev_src is rewritten next round */
        round++;
        OK(gmux_dev_signal_wait(h, SIG_DATA, round, 0, NULL));
        /* the signal is visible: the data must be in the device buffer */
        for (size_t i = 0; i < size; i++)
            CHECK(dev_recv[i] == pattern(left, size, i), "size %zu byte %zu", size, i);
        OK(gmux_barrier(gmux_team_world(comm)));
    }
    size_t staged = fake_d2h_bytes - staged_before;
    CHECK(staged == (expect == 'd' ? 0 : put_bytes), "staged %zu bytes of %zu", staged, put_bytes);
    CHECK(expect == 'd' ? fake_h2d_bytes == 0 : fake_h2d_bytes > 0,
          "%zu bytes copied into device windows", (size_t)fake_h2d_bytes);
    /* to itself: staged, through the bounce arena and the shadow; direct,
     * one device-to-device copy through the comm's mem_copy */
    int any_before = fake_any_copies;
    for (size_t i = 0; i < 4096; i++)
        dev_src[i] = pattern(me, 4096, i);
    gmux_op_opts_t oself = {GMUX_SIGNAL_SET, SIG_SET, 77, GMUX_NO_COUNTER};
    OK(gmux_dev_put(h, 2, me, w, WIN_BYTES / 2, dev_src, 4096, &oself));
    OK(gmux_dev_quiet(h, 2));
    OK(gmux_dev_signal_wait(h, SIG_SET, 77, 0, NULL));
    for (size_t i = 0; i < 4096; i++)
        CHECK(dev_recv[WIN_BYTES / 2 + i] == pattern(me, 4096, i), "put to itself, byte %zu", i);
    CHECK(fake_any_copies - any_before == (expect == 'd' ? 1 : 0), "%d copies to itself",
          fake_any_copies - any_before);
    OK(gmux_barrier(gmux_team_world(comm)));
    /* put_value and a lone signal through the staging rings, then quiet */
    gmux_op_opts_t ov = {GMUX_SIGNAL_SET, SIG_VALUE, 9, GMUX_NO_COUNTER};
    OK(gmux_dev_put_value(h, 1, right, w, WIN_BYTES - 8, 0xfeedull + (uint64_t)me, 8, &ov));
    OK(gmux_dev_signal(h, 1, right, SIG_INC, GMUX_SIGNAL_INC, 0));
    OK(gmux_dev_quiet(h, 1));
    OK(gmux_dev_signal_wait(h, SIG_VALUE, 9, 0, NULL));
    OK(gmux_dev_signal_wait(h, SIG_INC, 1, 0, NULL));
    uint64_t got;
    memcpy(&got, dev_recv + WIN_BYTES - 8, 8);
    CHECK(got == 0xfeedull + (uint64_t)left, "put_value got %llx", (unsigned long long)got);
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(gmux_dev_source_deregister(&h, dev_src));
    OK(gmux_dev_window_deregister(&h, w));
    free(dev_recv);
    free(dev_src);
    return 0;
}

/* A killed peer seen through the device API: the last rank dies (SIGKILL)
 * after a barrier; the others keep putting to it from "kernels" until a put
 * or a quiet reports the failure, then a wait for a signal it will never
 * send must fail with GMUX_ERR_PEER (as a host wait does once a rank died),
 * and nothing may hang: every call returns well inside the launcher's grace. */
static int mode_kill(gmux_comm_t *comm, const gmux_dev_handle_t &h)
{
    uint64_t *win;
    gmux_window_t w;
    int victim = rank_kill_start(comm, &win, &w, NULL, NULL);
    gmux_status_t st = GMUX_OK;
    uint64_t puts = 0;
    while (st == GMUX_OK && puts < 1000000) {
        gmux_op_opts_t o = {GMUX_SIGNAL_INC, SIG_DATA, 0, GMUX_NO_COUNTER};
        st = gmux_dev_put_value(h, 0, victim, w, 0, ++puts, 8, &o);
        if (st == GMUX_OK && puts % 64 == 0)
            st = gmux_dev_quiet(h, 0);
    }
    CHECK(st == GMUX_ERR_PEER, "device puts ended with %s after %llu", gmux_status_name(st),
          (unsigned long long)puts);
    /* a quiet reports a failure once; a later put to the dead rank fails again */
    gmux_status_t again = gmux_dev_put_value(h, 0, victim, w, 0, 1, 8, NULL);
    st = again == GMUX_OK ? gmux_dev_quiet(h, 0) : again;
    CHECK(st == GMUX_ERR_PEER, "put after the failure: %s", gmux_status_name(st));
    st = gmux_dev_signal_wait(h, SIG_DATA, UINT64_MAX, 200ull * 1000 * 1000, NULL);
    CHECK(st == GMUX_ERR_PEER, "wait ended with %s", gmux_status_name(st));
    printf("rank %d: device API: peer failure detected after %llu puts\n", me,
           (unsigned long long)puts);
    fflush(stdout);
    free(win); /* the window stays registered: the communicator is torn down failed */
    return 0;
}

/* The death as the device API sees it while no progress pass can run: once
 * the rank knows the victim is dead, a thread takes the progress lock and
 * keeps it (as a pass stuck in a provider call on a lock the dead rank left
 * held would), then every device operation that names the victim, each
 * wait (which that rank's signal may never reach) and a quiet must fail with
 * GMUX_ERR_PEER: on their own, not at their timeout, since nothing the
 * proxy would do can happen. The lock is let go before finalize. */
static int mode_deadstall(gmux_comm_t *comm, const gmux_dev_handle_t &h)
{
    uint64_t *win;
    gmux_window_t w;
    int victim = rank_kill_start(comm, &win, &w, NULL, NULL);
    /* the notice, read by the proxy's passes (bounded: twice the comm's timeout) */
    int polls = (int)(2 * 1000 * gmux_comm_timeout(comm));
    for (int i = 0; i < polls && gmux_peer_alive(comm, victim); i++)
        usleep(1000);
    CHECK(!gmux_peer_alive(comm, victim), "the death of rank %d was never announced", victim);
    CHECK(netdev_hold_progress(comm) == 0, "cannot start the holding thread");
    gmux_op_opts_t o = {GMUX_SIGNAL_INC, SIG_DATA, 0, GMUX_NO_COUNTER};
    /* more than a ring's worth: none may wait for room the proxy never makes */
    for (uint32_t i = 0; i < 2 * h.nslots; i++) {
        gmux_status_t st = gmux_dev_put_value(h, 0, victim, w, 0, i, 8, &o);
        CHECK(st == GMUX_ERR_PEER, "put_value %u to the dead rank: %s", i, gmux_status_name(st));
    }
    uint64_t one = 1;
    gmux_status_t st = gmux_dev_put(h, 0, victim, w, 8, &one, 8, NULL);
    CHECK(st == GMUX_ERR_PEER, "put to the dead rank: %s", gmux_status_name(st));
    st = gmux_dev_signal(h, 0, victim, SIG_VALUE, GMUX_SIGNAL_ADD, 1);
    CHECK(st == GMUX_ERR_PEER, "signal to the dead rank: %s", gmux_status_name(st));
    uint64_t off = 16, size = 8;
    const void *src = &one;
    uint32_t issued = 7;
    st = gmux_dev_put_batch(h, 0, victim, w, 1, &off, &src, &size, &o, &issued);
    CHECK(st == GMUX_ERR_PEER && issued == 0, "batch to the dead rank: %s, %u issued",
          gmux_status_name(st), issued);
    /* 0: the comm's timeout; the victim's signal never comes */
    st = gmux_dev_signal_wait(h, SIG_DATA, UINT64_MAX, 0, NULL);
    CHECK(st == GMUX_ERR_PEER, "signal wait: %s", gmux_status_name(st));
    st = gmux_dev_counter_wait(h, 0, UINT64_MAX, 0, NULL);
    CHECK(st == GMUX_ERR_PEER, "counter wait: %s", gmux_status_name(st));
    st = gmux_dev_quiet(h, 0);
    CHECK(st == GMUX_ERR_PEER, "quiet: %s", gmux_status_name(st));
    netdev_release_progress();
    printf("rank %d: device API: the death seen with the progress lock held\n", me);
    fflush(stdout);
    free(win); /* the window stays registered: the communicator is torn down failed */
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: netdev_rank basic|threads T|staged|direct E|kill|deadstall\n");
        return 2;
    }
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    bool kill_mode = strcmp(argv[1], "kill") == 0 || strcmp(argv[1], "deadstall") == 0;
    if (kill_mode)
        /* a death must show well before this; 10 s was too little for the
         * join itself on a 2-core machine under a load of 14 (both kill tests
         * failed there on 2026-12-04: a bootstrap collective timed out) */
        p.timeout_s = 20;
    gmux_comm_t *comm = NULL;
    gmux_status_t st = gmux_comm_init(&p, &comm);
    if (st != GMUX_OK) {
        fprintf(stderr, "gmux_comm_init: %s\n", gmux_status_name(st));
        return 1;
    }
    me = gmux_comm_rank(comm);
    n = gmux_comm_size(comm);
    if (me == 0)
        fprintf(stderr, "netdev_rank %s: %d ranks over %s\n", argv[1], n, gmux_comm_provider(comm));
    gmux_dev_handle_t h;
    bool direct = strcmp(argv[1], "direct") == 0 && argc > 2;
    bool staged = strcmp(argv[1], "staged") == 0 || direct;
    if (staged) {
        net_devstage_copy_t copy = {fake_d2h, fake_h2d,           fake_alloc, fake_free,
                                    NULL,     {GMUX_MEM_HOST, 0}, NULL};
        if (direct) { /* offered to the provider as FI_HMEM memory */
            copy.mem.kind = GMUX_MEM_HOST_HMEM;
            copy.copy = fake_any;
        }
        net_devsvc_t *svc = NULL;
        OK(net_devsvc_start_staged(comm, &copy, &h, &svc));
    } else {
        OK(gmux_dev_handle_create_host(comm, &h));
        gmux_window_t bad;
        CHECK(gmux_dev_window_register(&h, &bad, 8, &bad) == GMUX_ERR_STATE, "not staged");
    }
    int rc = 2;
    if (strcmp(argv[1], "basic") == 0)
        rc = mode_basic(comm, h);
    else if (strcmp(argv[1], "threads") == 0 && argc > 2)
        rc = mode_threads(comm, h, atoi(argv[2]));
    else if (staged)
        rc = mode_staged(comm, h, direct && strcmp(argv[2], "direct") == 0 ? 'd' : 's');
    else if (strcmp(argv[1], "kill") == 0)
        rc = mode_kill(comm, h);
    else if (strcmp(argv[1], "deadstall") == 0)
        rc = mode_deadstall(comm, h);
    gmux_dev_handle_destroy(&h);
    st = gmux_comm_finalize(comm);
    if (kill_mode) { /* a communicator that lost a rank fails to finalize */
        if (rc == 0 && st == GMUX_OK) {
            fprintf(stderr, "rank %d: finalize after a death returned OK\n", me);
            rc = 1;
        }
    } else if (rc == 0 && st != GMUX_OK) {
        fprintf(stderr, "rank %d: finalize: %s\n", me, gmux_status_name(st));
        rc = 1;
    }
    return rc;
}
