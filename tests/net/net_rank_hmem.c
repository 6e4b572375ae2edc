/*
 * net_rank hmem EXPECT: windows and put sources registered as device memory
 * (gmux/net_ext.h). GMUX_MEM_HOST_HMEM memory is host memory that goes
 * through the provider's FI_HMEM path exactly as GPU memory does with a
 * libfabric built with CUDA: registered with its interface, its descriptor
 * passed with every transfer from it, never read by the proxy itself.
 *
 * EXPECT: "direct" (the provider must reach it: shm with GMUX_NET_HMEM=rma),
 * "staged" (it must not: GMUX_NET_HMEM=off), or "any" (whatever the
 * provider offers; the outcomes must agree with each other).
 *
 * Checked: the source and window registrations' outcomes; a window whose
 * last rank asked for CUDA memory (which no provider here reaches: it alone
 * falls back, the others stay direct) and, without a fallback, every rank
 * failing together (and so for a rank's bad argument: no rank waits for
 * the timeout); runs of contiguous small puts from the device source
 * (which the proxy must not gather) and a large one, the signal after the
 * data; puts and a get to the rank itself copied through the comm's
 * mem_copy when device memory is involved; remote atomics refused where
 * FI_HMEM cost them; deregistration.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include <gmux/net_ext.h>

#include "common/clock.h"
#include "net/internal.h"
#include "net_rank.h"

#define HB  (64 * 1024) /* window bytes */
#define RUN 64          /* contiguous 8-byte puts, what the proxy would gather */

static atomic_int copies;

static int count_copy(void *arg, void *dst, const void *src, size_t nb)
{
    (void)arg;
    memmove(dst, src, nb);
    atomic_fetch_add(&copies, 1);
    return 0;
}

static uint8_t hpat(int src, int round, size_t i)
{
    return (uint8_t)(src * 37 + round * 11 + i * 7 + (i >> 8));
}

static void fill(uint8_t *p, int src, int round, size_t len)
{
    for (size_t i = 0; i < len; i++)
        p[i] = hpat(src, round, i);
}

/* The first byte that differs from src's pattern, or len. */
static size_t differs(const uint8_t *p, int src, int round, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != hpat(src, round, i))
            return i;
    return len;
}

static uint8_t *page_buf(void)
{
    uint8_t *p = aligned_alloc(4096, HB);
    if (p)
        memset(p, 0, HB);
    return p;
}

int mode_hmem(const char *expect)
{
    bool want_direct = strcmp(expect, "direct") == 0, want_staged = strcmp(expect, "staged") == 0;
    CHECK(want_direct || want_staged || strcmp(expect, "any") == 0, "EXPECT: direct|staged|any");
    gmux_mem_t hm = {GMUX_MEM_HOST_HMEM, 0}, cuda = {GMUX_MEM_CUDA, 0};
    uint8_t *win = page_buf(), *fb = page_buf(), *src = page_buf(), *w3 = page_buf(),
            *fb3 = page_buf(), *w4 = page_buf();
    CHECK(win && fb && src && w3 && fb3 && w4, "out of memory");
    int right = (me + 1) % n, left = (me + n - 1) % n;

    /* a put source in device memory: registered where the provider reaches it */
    gmux_status_t st = gmux_source_register_mem(comm, src, HB, &hm);
    CHECK(st == GMUX_OK || st == GMUX_ERR_UNSUPPORTED, "source: %s", gmux_status_name(st));
    bool src_direct = st == GMUX_OK;
    CHECK(gmux_source_register_mem(comm, src, HB, NULL) == GMUX_ERR_INVALID, "no memory kind");
    gmux_mem_t host = {GMUX_MEM_HOST, 0};
    CHECK(gmux_source_register_mem(comm, src, HB, &host) == GMUX_ERR_INVALID,
          "host sources need no registration");

    /* a window: direct where reachable, else the fallback is the window */
    gmux_window_t w;
    bool direct = false;
    OK(gmux_window_register_mem(comm, win, HB, &hm, fb, &w, &direct));
    CHECK(direct == src_direct, "window direct %d, source direct %d", direct, src_direct);
    CHECK(!want_direct || direct, "the provider does not reach HMEM memory");
    CHECK(!want_staged || !direct, "registered directly with GMUX_NET_HMEM=off");
    uint8_t *recv = direct ? win : fb;
    size_t wsz = 0;
    CHECK(gmux_window_base(comm, w, &wsz) == recv && wsz == HB, "window base");

    /* the last rank asks for CUDA memory (a host pointer: nothing reaches it
     * as that): it alone falls back, the others stay as they were */
    const gmux_mem_t *mine = me == n - 1 ? &cuda : &hm;
    gmux_window_t wm;
    bool dm = true;
    OK(gmux_window_register_mem(comm, w3, HB, mine, fb3, &wm, &dm));
    CHECK(dm == (me == n - 1 ? false : direct), "mixed window: direct %d on rank %d", dm, me);
    uint8_t *recv3 = dm ? w3 : fb3;
    /* without a fallback the last rank fails, so every rank does */
    gmux_window_t wx;
    st = gmux_window_register_mem(comm, w4, HB, mine, NULL, &wx, NULL);
    CHECK(st == GMUX_ERR_UNSUPPORTED, "no fallback anywhere: %s", gmux_status_name(st));

    /* a rank with a bad argument still takes part: every rank fails with it
     * at once, none waits for the timeout (not timed: it is an hour
     * meanwhile, so a wait for it would outlast the launcher's --timeout) */
    double keep = gmux_comm_timeout(comm);
    OK(gmux_comm_set_timeout(comm, 3600));
    st = gmux_window_register(comm, me == n - 1 ? NULL : w4, HB, &wx);
    CHECK(st == GMUX_ERR_INVALID, "a rank's NULL base: %s", gmux_status_name(st));
    st = gmux_window_register(comm, w4, me == 0 ? HB / 2 : HB, &wx);
    CHECK(st == GMUX_ERR_INVALID, "sizes differ: %s", gmux_status_name(st));
    st = gmux_window_register(comm, w4, HB, me == n - 1 ? NULL : &wx);
    CHECK(st == GMUX_ERR_INVALID, "a rank's NULL window pointer: %s", gmux_status_name(st));
    OK(gmux_comm_set_timeout(comm, keep));
    OK(gmux_barrier(gmux_team_world(comm))); /* the job still works */

    gmux_comm_set_mem_copy(comm, count_copy, NULL);
    net_progress_lock_wait(comm);
    uint64_t dev_writes0 = comm->stats.dev_writes;
    pthread_mutex_unlock(&comm->progress_lock);
    for (int round = 1; round <= 3; round++) {
        fill(src, me, round, HB / 2);
        for (int k = 0; k < RUN; k++)
            OK(gmux_put(comm, 0, right, w, (uint64_t)k * 8, src + k * 8, 8, NULL));
        gmux_op_opts_t o = {GMUX_SIGNAL_SET, 1, (uint64_t)round, GMUX_NO_COUNTER};
        OK(gmux_put(comm, 0, right, w, RUN * 8, src + RUN * 8, HB / 2 - RUN * 8, &o));
        gmux_op_opts_t o3 = {GMUX_SIGNAL_SET, 2, (uint64_t)round, GMUX_NO_COUNTER};
        OK(gmux_put(comm, 1, right, wm, 0, src, HB / 2, &o3));
        OK(gmux_signal_wait(comm, 1, (uint64_t)round, NULL));
        OK(gmux_signal_wait(comm, 2, (uint64_t)round, NULL));
        size_t d1 = differs(recv, left, round, HB / 2), d3 = differs(recv3, left, round, HB / 2);
        CHECK(d1 == HB / 2, "round %d: window byte %zu", round, d1);
        CHECK(d3 == HB / 2, "round %d: mixed window byte %zu", round, d3);
        OK(gmux_quiet(comm, 0));
        OK(gmux_quiet(comm, 1));
        OK(gmux_barrier(gmux_team_world(comm))); /* src and the windows are rewritten */
    }

    /* every put from the device source was posted alone with its
     * registration's descriptor: none gathered, none injected */
    net_progress_lock_wait(comm);
    uint64_t dev_writes = comm->stats.dev_writes - dev_writes0;
    pthread_mutex_unlock(&comm->progress_lock);
    CHECK(dev_writes == (direct ? 3 * (RUN + 2) : 0), "%llu writes from the device source",
          (unsigned long long)dev_writes);

    /* to itself: device memory on either side goes through mem_copy */
    int before = atomic_load(&copies);
    fill(src, me, 9, 4096);
    gmux_op_opts_t os = {GMUX_SIGNAL_SET, 3, 1, GMUX_NO_COUNTER};
    OK(gmux_put(comm, 2, me, w, HB / 2, src, 4096, &os));
    OK(gmux_quiet(comm, 2));
    OK(gmux_signal_wait(comm, 3, 1, NULL));
    CHECK(differs(recv + HB / 2, me, 9, 4096) == 4096, "put to itself");
    uint8_t back[64];
    OK(gmux_get(comm, 2, me, w, HB / 2, back, sizeof(back)));
    CHECK(memcmp(back, recv + HB / 2, sizeof(back)) == 0, "get from itself");
    int used = atomic_load(&copies) - before;
    CHECK(used == (direct ? 2 : 0), "%d copies through mem_copy", used);

    /* remote atomics: refused where FI_HMEM cost them (shm, GMUX_NET_HMEM=rma) */
    uint64_t old = 0;
    st = gmux_atomic(comm, 0, right, w, HB - 8, GMUX_AMO_ADD, 8, 1, 0, &old);
    CHECK(st == GMUX_OK || (direct && st == GMUX_ERR_UNSUPPORTED), "atomic: %s",
          gmux_status_name(st));
    bool atomics = st == GMUX_OK;

    OK(gmux_barrier(gmux_team_world(comm)));
    if (src_direct)
        OK(gmux_source_deregister(comm, src));
    CHECK(gmux_source_deregister(comm, src) == GMUX_ERR_NOT_FOUND, "deregistered twice");
    gmux_comm_set_mem_copy(comm, NULL, NULL);
    OK(gmux_window_deregister(comm, wm));
    OK(gmux_window_deregister(comm, w));
    free(win);
    free(fb);
    free(src);
    free(w3);
    free(fb3);
    free(w4);
    printf("rank %d: hmem ok (%s, atomics %s)\n", me, direct ? "direct" : "staged",
           atomics ? "yes" : "no");
    return 0;
}
