/*
 * The program's own prefetches (cuMemPrefetchAsync at every ABI, the _ptsz
 * forms, CUDA 13's cuMemPrefetchBatchAsync) against the driver double: they
 * reach the driver unchanged, and the shim's record of what it prefetched
 * follows them:
 *   - a region the program moved back to the host (whole or in part) is
 *     prefetched again, on the migration stream and ordered before the next
 *     launch that uses it, and only that region;
 *   - a region the program moved whole to the device the launch runs on,
 *     on the launch's own stream, is not prefetched again; on another
 *     stream, it is, once, ordered before the launch;
 *   - a batch with several locations moves each range to its own location;
 *   - a prefetch the driver refused (a batch where the driver takes none,
 *     FAKE_CUDA_NO_BATCH=1; locations laid out wrong; a batch on the legacy
 *     stream) moved nothing;
 *   - a region the program discarded (CUDA 13's cuMemDiscardBatchAsync, even
 *     in part) is prefetched again by the next launch that uses it, and a
 *     discard-and-prefetch batch counts as its prefetches (the double gives
 *     the discarded bytes up: FAKE_DISCARDED).
 * The same holds for the program's prefetches recorded into a graph by a
 * stream capture, at each launch of the graph instead of at the capture
 * (graph.h): a graph that moves a region to the host after its kernel
 * leaves it to be prefetched again by the next launch, and one that moves
 * a region to the device before its kernel is not preceded by the shim's
 * prefetch of it; prefetches of a destroyed graph are forgotten with it.
 * CTest runs this under every policy, without plain allocations redirected
 * (the program's regions are then its own managed memory, which the
 * proactive policy prefetches all the same) and with a driver that refuses
 * batches (shim_harness.c).
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shim_harness.h"

#define N 256 /* floats per region */

/* The ways a program prefetches: base name, ABI version, per-thread stream. */
typedef struct form {
    const char *logged; /* the name the double logs the call under */
    int version;
    int per_thread;
} form_t;

static const form_t forms[] = {
    {"cuMemPrefetchAsync", 8000, 0},       {"cuMemPrefetchAsync_ptsz", 8000, 1},
    {"cuMemPrefetchAsync_v2", 12020, 0},   {"cuMemPrefetchAsync_v2_ptsz", 12020, 1},
    {"cuMemPrefetchBatchAsync", 13000, 0}, {"cuMemPrefetchBatchAsync_ptsz", 13000, 1},
};
#define NFORMS (sizeof(forms) / sizeof(forms[0]))

/* Whether the driver takes batched prefetches (not FAKE_CUDA_NO_BATCH=1). */
static bool batches(void)
{
    return strcmp(prefetch_form(2), "cuMemPrefetchBatchAsync") == 0;
}

/* Whether the driver takes a prefetch of form f. */
static bool taken(const form_t *f)
{
    return f->version != 13000 || batches();
}

/* The regions are managed memory (redirected, or the program's own), which
 * the proactive policy, and only it, prefetches. */
static bool prefetching(void)
{
    return mode_proactive;
}

/* The program prefetches [p, p+len) to the host (to_device 0) or to device 0
 * through form f on stream s, and the double sees exactly that call, or
 * refuses it where it takes no batches (CUDA_ERROR_NOT_SUPPORTED, passed on). */
static void own_prefetch(const form_t *f, CUdeviceptr p, size_t len, int to_device, CUstream s)
{
    const char *base = f->version == 13000 ? "cuMemPrefetchBatchAsync" : "cuMemPrefetchAsync";
    void *fn = get(base, f->version, f->per_thread ? PT : LEGACY);
    assert_non_null(fn);
    CUmemLocation loc = {.type = to_device ? CU_MEM_LOCATION_TYPE_DEVICE
                                           : CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
                         .id = 0};
    size_t from = f_count();
    CUresult r;
    if (f->version == 8000) {
        CUdevice dev = to_device ? 0 : CU_DEVICE_CPU;
        r = ((PFN_cuMemPrefetchAsync_v8000)fn)(p, len, dev, s);
        loc.id = dev; /* what the double logs */
        loc.type = 0;
    } else if (f->version == 12020) {
        r = ((PFN_cuMemPrefetchAsync_v12020)fn)(p, len, loc, 0, s);
    } else {
        CUdeviceptr ptrs[] = {p};
        size_t sizes[] = {len}, idx[] = {0};
        r = ((PFN_cuMemPrefetchBatchAsync_v13000)fn)(ptrs, sizes, 1, &loc, idx, 1, 0, s);
    }
    if (!taken(f)) {
        assert_int_equal(r, CUDA_ERROR_NOT_SUPPORTED);
        assert_int_equal(find_call(f->logged, from), -1);
        return;
    }
    assert_int_equal(r, CUDA_SUCCESS);
    long i = find_call(f->logged, from);
    assert_true(i >= 0);
    const fake_call_t *c = f_get((size_t)i);
    assert_int_equal(c->a[0], p);
    assert_int_equal(c->a[1], len);
    if (f->version == 8000)
        assert_int_equal((int64_t)c->a[2], loc.id);
    else
        assert_int_equal(c->a[2], ((uint64_t)loc.type << 32) | (uint32_t)loc.id);
    assert_int_equal(c->a[3], (uint64_t)(uintptr_t)s);
}

static CUdeviceptr region(void)
{
    return managed_region(N * 4);
}

static void launch(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream s)
{
    int n = N;
    void *args[] = {&a, &b, &c, &n};
    assert_int_equal(GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000)(vadd_fn(), 1, 1, 1, 1,
                                                                            1, 1, 0, s, args, NULL),
                     CUDA_SUCCESS);
}

/* Launch on a, b, c; the program moves [c+off, c+off+len) back to the host;
 * launch again: c, and only c, is prefetched again, ordered before it. */
static void evicted_by_program(size_t off, size_t len)
{
    for (size_t k = 0; k < NFORMS; k++) {
        CUdeviceptr a = region(), b = region(), c = region();
        CUstream s = new_stream();
        launch(a, b, c, s);
        f_reset();
        own_prefetch(&forms[k], c + off, len, 0, forms[k].per_thread ? NULL : s);
        size_t mark = f_count();
        launch(a, b, c, s);
        long l = find_call("cuLaunchKernel", mark);
        assert_true(l >= 0);
        size_t of = 0;
        long at = -1;
        size_t n = shim_prefetches_since(mark, c, &of, &at);
        if (!prefetching() || !taken(&forms[k])) { /* c has not moved */
            assert_int_equal(n, 0);
            continue;
        }
        /* on main: no prefetch at all, the shim took c for resident */
        assert_int_equal(of, 1);
        assert_int_equal(n, 1);
        assert_int_equal(f_get((size_t)at)->a[1], N * 4); /* the whole region */
        assert_true(at < l);
        assert_int_equal(ordered(at, l), 1);
    }
}

static void test_program_prefetch_to_host(void **state)
{
    (void)state;
    evicted_by_program(0, N * 4);
}

static void test_program_prefetch_of_part_to_host(void **state)
{
    (void)state;
    evicted_by_program(256, 512);
}

/* The program moves c to the host, then back to the device on the launch's
 * stream: the next launch there finds it resident, and the shim moves nothing. */
static void test_program_prefetch_to_device(void **state)
{
    (void)state;
    for (size_t k = 0; k < NFORMS; k++) {
        if (forms[k].per_thread)
            continue; /* the launch's stream is s, not the per-thread one */
        CUdeviceptr a = region(), b = region(), c = region();
        CUstream s = new_stream();
        launch(a, b, c, s);
        own_prefetch(&forms[k], c, N * 4, 0, s);
        own_prefetch(&forms[k], c, N * 4, 1, s);
        size_t mark = f_count();
        launch(a, b, c, s);
        size_t of = 0;
        long at = -1;
        assert_int_equal(shim_prefetches_since(mark, c, &of, &at), 0);
        /* part of it only: the rest may still be on the host */
        own_prefetch(&forms[k], c, N * 4, 0, s);
        own_prefetch(&forms[k], c, N * 2, 1, s);
        mark = f_count();
        launch(a, b, c, s);
        size_t want = prefetching() && taken(&forms[k]) ? 1 : 0;
        assert_int_equal(shim_prefetches_since(mark, c, &of, &at), want);
        assert_int_equal(of, want);
    }
}

/* Four managed regions a, b, c, e, each used by a launch on stream s, then
 * moved to the host by one batch of the program's on s, through batch (a
 * prefetch or a discard-and-prefetch: both take the same arguments); with
 * the locations of a batch that moves a and b to the device, c to the host
 * and e to the device (locs[] from idx[] on). */
typedef struct four_batch {
    CUdeviceptr ptrs[4]; /* a, b, c, e */
    size_t sizes[4];
    CUmemLocation locs[3]; /* device, host, device */
    size_t idx[3];
    CUstream s;
    CUresult want; /* what a well-formed batch gets (a driver without batches refuses it) */
} four_batch_t;

static const CUmemLocation to_dev = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
static const CUmemLocation to_hst = {.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, .id = 0};

static void four_batch_init(four_batch_t *fb, PFN_cuMemPrefetchBatchAsync_v13000 batch)
{
    *fb = (four_batch_t){.locs = {to_dev, to_hst, to_dev},
                         .idx = {0, 2, 3},
                         .s = new_stream(),
                         .want = batches() ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED};
    for (size_t i = 0; i < 4; i++) {
        fb->ptrs[i] = region();
        fb->sizes[i] = N * 4;
    }
    launch(fb->ptrs[0], fb->ptrs[1], fb->ptrs[2], fb->s);
    launch(fb->ptrs[3], fb->ptrs[3], fb->ptrs[3], fb->s);
    CUmemLocation hst = to_hst;
    size_t all[] = {0};
    assert_int_equal(batch(fb->ptrs, fb->sizes, 4, &hst, all, 1, 0, fb->s), fb->want);
}

/* Launches on a, b, c and on e (stream s) after the batch: returns the
 * shim's prefetches, and of c in *of_p. */
static size_t four_batch_launches(const four_batch_t *fb, size_t *of_p)
{
    size_t mark = f_count();
    long at = -1;
    *of_p = 0;
    launch(fb->ptrs[0], fb->ptrs[1], fb->ptrs[2], fb->s);
    launch(fb->ptrs[3], fb->ptrs[3], fb->ptrs[3], fb->s);
    return shim_prefetches_since(mark, fb->ptrs[2], of_p, &at);
}

/* The double logged, from index from on, the four ranges ptrs[] under the
 * name logged, the first two to the device, the third to the host, the
 * fourth to the device. */
static void assert_logged_dev_dev_host_dev(const char *logged, size_t from, const CUdeviceptr *ptrs)
{
    const uint64_t to_dev = (uint64_t)CU_MEM_LOCATION_TYPE_DEVICE << 32;
    const uint64_t to_host = (uint64_t)CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT << 32;
    const uint64_t where[] = {to_dev, to_dev, to_host, to_dev};
    long i = (long)from - 1;
    for (size_t k = 0; k < 4; k++) {
        i = find_call(logged, (size_t)i + 1);
        assert_true(i >= 0);
        assert_int_equal(f_get((size_t)i)->a[0], ptrs[k]);
        assert_int_equal(f_get((size_t)i)->a[2], where[k]);
    }
}

/* fb's batch of several locations through batch on stream s (a and b to
 * the device, c to the host, e to the device): the double, logging it as
 * logged, saw each range with its own location. */
static void four_batch_move(four_batch_t *fb, PFN_cuMemPrefetchBatchAsync_v13000 batch,
                            const char *logged, CUstream s)
{
    size_t from = f_count();
    assert_int_equal(batch(fb->ptrs, fb->sizes, 4, fb->locs, fb->idx, 3, 0, s), fb->want);
    if (batches())
        assert_logged_dev_dev_host_dev(logged, from, fb->ptrs);
}

/* The program moves c to the host, then back to the device on stream s (or
 * its per-thread default stream), and launches on another stream t, which
 * it did not order after that prefetch: the launch must not run before c is
 * back, so the shim prefetches c again, once, ordered before it; the next
 * launch on t finds c ordered and moves nothing. */
static void test_program_prefetch_on_other_stream(void **state)
{
    (void)state;
    for (size_t k = 0; k < NFORMS; k++) {
        CUdeviceptr a = region(), b = region(), c = region();
        CUstream s = forms[k].per_thread ? NULL : new_stream(), t = new_stream();
        launch(a, b, c, t);
        own_prefetch(&forms[k], c, N * 4, 0, s);
        own_prefetch(&forms[k], c, N * 4, 1, s);
        size_t mark = f_count(), of = 0;
        long at = -1;
        launch(a, b, c, t);
        long l = find_call("cuLaunchKernel", mark);
        /* on main 0: c taken for resident, and the launch not ordered after its move */
        size_t want = prefetching() && taken(&forms[k]) ? 1 : 0;
        assert_int_equal(shim_prefetches_since(mark, c, &of, &at), want);
        assert_int_equal(of, want);
        if (want) {
            assert_true(at < l);
            assert_int_equal(ordered(at, l), 1);
        }
        mark = f_count();
        launch(a, b, c, t);
        assert_int_equal(shim_prefetches_since(mark, c, &of, &at), 0);
    }
}

/* A batch of the program's with several locations, through both batched
 * entry points: a and b go to the device, c to the host, e to the device
 * (after all four were moved to the host): the next launches prefetch c
 * again, and only c. On main the shim's path for several locations was
 * never run (the double took one location only). */
static void test_program_batch_of_several_locations(void **state)
{
    (void)state;
    for (int pt = 0; pt < 2; pt++) {
        PFN_cuMemPrefetchBatchAsync_v13000 batch = (PFN_cuMemPrefetchBatchAsync_v13000)get(
            "cuMemPrefetchBatchAsync", 13000, pt ? PT : LEGACY);
        assert_non_null(batch);
        four_batch_t fb;
        four_batch_init(&fb, batch);
        CUmemLocation hst = to_hst;
        size_t all[] = {0}, first_not_0[] = {1, 2, 3}, not_ascending[] = {0, 3, 2},
               past_end[] = {0, 2, 4};
        /* locations laid out wrong: refused, nothing moved */
        const char *logged = pt ? "cuMemPrefetchBatchAsync_ptsz" : "cuMemPrefetchBatchAsync";
        size_t from = f_count();
        if (batches()) {
            assert_int_equal(batch(fb.ptrs, fb.sizes, 4, fb.locs, first_not_0, 3, 0, fb.s),
                             CUDA_ERROR_INVALID_VALUE);
            assert_int_equal(batch(fb.ptrs, fb.sizes, 4, fb.locs, not_ascending, 3, 0, fb.s),
                             CUDA_ERROR_INVALID_VALUE);
            assert_int_equal(batch(fb.ptrs, fb.sizes, 4, fb.locs, past_end, 3, 0, fb.s),
                             CUDA_ERROR_INVALID_VALUE);
            assert_int_equal(batch(fb.ptrs, fb.sizes, 2, fb.locs, all, 3, 0, fb.s),
                             CUDA_ERROR_INVALID_VALUE);
            /* cuda.h: flags "reserved for future use. Must be zero." */
            assert_int_equal(batch(fb.ptrs, fb.sizes, 4, &hst, all, 1, 1, fb.s),
                             CUDA_ERROR_INVALID_VALUE);
            /* CUDA 13 (cuda.h): a batch's stream "must not be legacy NULL
             * stream"; NULL names it through the plain entry point (through
             * _ptsz, the thread's own default stream) */
            assert_int_equal(batch(fb.ptrs, fb.sizes, 4, &hst, all, 1, 0, CU_STREAM_LEGACY),
                             CUDA_ERROR_INVALID_VALUE);
            if (!pt)
                assert_int_equal(batch(fb.ptrs, fb.sizes, 4, &hst, all, 1, 0, NULL),
                                 CUDA_ERROR_INVALID_VALUE);
        }
        assert_int_equal(find_call(logged, from), -1);
        four_batch_move(&fb, batch, logged, fb.s);
        size_t of, n = four_batch_launches(&fb, &of);
        size_t moved = prefetching() && batches() ? 1 : 0; /* c; else nothing moved */
        assert_int_equal(n, moved);
        assert_int_equal(of, moved);
    }
}

/* CUDA 13's discards, through the plain and the _ptsz entry point. */
static PFN_cuMemDiscardBatchAsync_v13000 discard_fn(int pt)
{
    void *fn = get("cuMemDiscardBatchAsync", 13000, pt ? PT : LEGACY);
    assert_non_null(fn);
    return (PFN_cuMemDiscardBatchAsync_v13000)fn;
}

static PFN_cuMemDiscardAndPrefetchBatchAsync_v13000 discard_prefetch_fn(int pt)
{
    void *fn = get("cuMemDiscardAndPrefetchBatchAsync", 13000, pt ? PT : LEGACY);
    assert_non_null(fn);
    return (PFN_cuMemDiscardAndPrefetchBatchAsync_v13000)fn;
}

/* Whether every byte of [p, p+len) is b (the double's memory is the host's). */
static bool bytes_are(CUdeviceptr p, size_t len, unsigned char b)
{
    for (size_t i = 0; i < len; i++)
        if (((const unsigned char *)(uintptr_t)p)[i] != b)
            return false;
    return true;
}

/* The program discards part of c, resident after a launch: the double
 * gives up those bytes, and the next launch prefetches c, and only c, whole
 * and ordered before it. A discard refused (flags, the legacy stream, a
 * range that is not managed memory, no ranges, a driver without batches)
 * changes no byte and nothing in the record. On main the discard was not
 * hooked: the shim took c for resident and the launch after it ran
 * unprefetched. */
static void test_program_discard(void **state)
{
    (void)state;
    for (int pt = 0; pt < 2; pt++) {
        PFN_cuMemDiscardBatchAsync_v13000 discard = discard_fn(pt);
        const char *logged = pt ? "cuMemDiscardBatchAsync_ptsz" : "cuMemDiscardBatchAsync";
        CUdeviceptr a = region(), b = region(), c = region();
        CUstream s = new_stream(), on = pt ? NULL : s;
        launch(a, b, c, s);
        memset((void *)(uintptr_t)c, 0x11, N * 4);
        CUdeviceptr ptrs[] = {c + 256};
        size_t sizes[] = {512};
        char host[64];
        CUdeviceptr not_managed[] = {(CUdeviceptr)(uintptr_t)host};
        size_t host_size[] = {sizeof(host)};
        CUresult refused = batches() ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
        size_t from = f_count();
        assert_int_equal(discard(ptrs, sizes, 1, 1, on), refused); /* flags must be 0 */
        assert_int_equal(discard(ptrs, sizes, 1, 0, CU_STREAM_LEGACY), refused);
        if (!pt) /* NULL is the legacy stream through the plain entry point */
            assert_int_equal(discard(ptrs, sizes, 1, 0, NULL), refused);
        assert_int_equal(discard(ptrs, sizes, 0, 0, on), refused);
        assert_int_equal(discard(not_managed, host_size, 1, 0, on), refused);
        assert_int_equal(find_call(logged, from), batches() ? (long)f_count() - 1 : -1);
        assert_true(bytes_are(c, N * 4, 0x11));
        size_t mark = f_count(), of = 0;
        long at = -1;
        launch(a, b, c, s);
        assert_int_equal(shim_prefetches_since(mark, c, &of, &at), 0);

        memset((void *)(uintptr_t)c, 0x11, N * 4); /* the launch wrote c */
        from = f_count();
        CUresult want = batches() ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
        assert_int_equal(discard(ptrs, sizes, 1, 0, on), want);
        if (batches()) {
            long i = find_call(logged, from);
            assert_true(i >= 0);
            assert_int_equal(f_get((size_t)i)->a[0], c + 256);
            assert_int_equal(f_get((size_t)i)->a[1], 512);
            assert_int_equal(f_get((size_t)i)->a[3], (uint64_t)(uintptr_t)on);
        }
        /* the discarded bytes given up, the others kept */
        assert_true(bytes_are(c, 256, 0x11));
        assert_true(bytes_are(c + 256, 512, batches() ? FAKE_DISCARDED : 0x11));
        assert_true(bytes_are(c + 768, N * 4 - 768, 0x11));
        mark = f_count();
        launch(a, b, c, s);
        long l = find_call("cuLaunchKernel", mark);
        size_t want_n = prefetching() && batches() ? 1 : 0;
        assert_int_equal(shim_prefetches_since(mark, c, &of, &at), want_n);
        assert_int_equal(of, want_n);
        if (want_n) {
            assert_int_equal(f_get((size_t)at)->a[1], N * 4); /* the whole region */
            assert_int_equal(ordered(at, l), 1);
        }
    }
}

/* The program discards and prefetches a, b and e to the device (after
 * moving them to the host) and c to the host, in one batch of three
 * locations: the next launches prefetch c, and only c. The discarded bytes
 * are given up. On main the call was not hooked: c stayed taken for
 * resident and nothing was prefetched, while a, b and e were. */
static void test_program_discard_and_prefetch(void **state)
{
    (void)state;
    for (int pt = 0; pt < 2; pt++) {
        PFN_cuMemDiscardAndPrefetchBatchAsync_v13000 dp = discard_prefetch_fn(pt);
        four_batch_t fb;
        four_batch_init(&fb, dp);
        CUdeviceptr c = fb.ptrs[2];
        size_t first_not_0[] = {1, 2, 3}, past_end[] = {0, 2, 4};
        /* refused, nothing discarded: locations laid out wrong, flags, the legacy stream */
        const char *logged =
            pt ? "cuMemDiscardAndPrefetchBatchAsync_ptsz" : "cuMemDiscardAndPrefetchBatchAsync";
        memset((void *)(uintptr_t)c, 0x22, N * 4);
        size_t from = f_count();
        if (batches()) {
            assert_int_equal(dp(fb.ptrs, fb.sizes, 4, fb.locs, first_not_0, 3, 0, fb.s),
                             CUDA_ERROR_INVALID_VALUE);
            assert_int_equal(dp(fb.ptrs, fb.sizes, 4, fb.locs, past_end, 3, 0, fb.s),
                             CUDA_ERROR_INVALID_VALUE);
            assert_int_equal(dp(fb.ptrs, fb.sizes, 4, fb.locs, fb.idx, 3, 2, fb.s),
                             CUDA_ERROR_INVALID_VALUE);
            assert_int_equal(dp(fb.ptrs, fb.sizes, 4, fb.locs, fb.idx, 3, 0, CU_STREAM_LEGACY),
                             CUDA_ERROR_INVALID_VALUE);
        }
        assert_int_equal(find_call(logged, from), -1);
        assert_true(bytes_are(c, N * 4, 0x22));
        four_batch_move(&fb, dp, logged, pt ? NULL : fb.s);
        assert_true(bytes_are(c, N * 4, batches() ? FAKE_DISCARDED : 0x22));
        size_t of, n = four_batch_launches(&fb, &of);
        size_t moved = prefetching() && batches() ? 1 : 0;
        /* c moved again; with the batch on the per-thread default stream, a,
         * b and e too: their move to the device is not ordered before
         * launches on s (test_program_prefetch_on_other_stream) */
        assert_int_equal(n, pt ? 4 * moved : moved);
        assert_int_equal(of, moved);
    }
}

/* A discard captured into a graph after its kernel: nothing changes at the
 * capture (c is still taken for resident by the graph's launch), and after
 * the graph's launch c counts as moved away: the next launch prefetches it. */
static void test_graph_discard(void **state)
{
    (void)state;
    PFN_cuMemDiscardBatchAsync_v13000 discard = discard_fn(0);
    CUdeviceptr a = region(), b = region(), c = region();
    CUstream s = new_stream();
    launch(a, b, c, s);
    assert_int_equal(GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture",
                         12000)(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    launch(a, b, c, s);
    CUdeviceptr ptrs[] = {c};
    size_t sizes[] = {N * 4};
    CUresult want = batches() ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
    assert_int_equal(discard(ptrs, sizes, 1, 0, s), want);
    CUgraph g = NULL;
    assert_int_equal(GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000)(s, &g),
                     CUDA_SUCCESS);
    size_t mark, of = 0;
    long at = -1;
    CUgraphExec e = graph_run(g, s, &mark);
    /* with the discard counted at the capture, the graph's launch prefetched c */
    assert_int_equal(shim_prefetches_since(mark, c, &of, &at), 0);
    mark = f_count();
    launch(a, b, c, s);
    size_t moved = prefetching() && batches() ? 1 : 0;
    assert_int_equal(shim_prefetches_since(mark, c, &of, &at), moved);
    assert_int_equal(of, moved);
    graph_done(e, g);
}

enum { PF_NONE, PF_FIRST, PF_LAST }; /* where a capture puts the program's prefetch */

/* Captures on s the program's launch on a, b, c and its prefetch of c
 * through form f (to the host or to the device), before the launch, after
 * it or none; returns the graph. The shim moves nothing at capture. */
static CUgraph capture_with_prefetch(const form_t *f, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                                     int to_device, int where, CUstream s)
{
    assert_int_equal(GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture",
                         12000)(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    size_t mark = f_count();
    if (where == PF_FIRST)
        own_prefetch(f, c, N * 4, to_device, s);
    launch(a, b, c, s);
    if (where == PF_LAST)
        own_prefetch(f, c, N * 4, to_device, s);
    CUgraph g = NULL;
    assert_int_equal(GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000)(s, &g),
                     CUDA_SUCCESS);
    /* the program's prefetch only: the shim's would go on its migration stream */
    for (size_t i = mark; i < f_count(); i++)
        if (strncmp(f_get(i)->fn, "cuMemPrefetch", 13) == 0)
            assert_int_equal(f_get(i)->a[3], (uint64_t)(uintptr_t)s);
    return g;
}

/* A graph whose kernel uses a, b, c, all resident, and which then moves c
 * to the host: its launch moves nothing of the shim's, and the next launch
 * prefetches c, and only c, again. */
static void test_graph_prefetch_to_host(void **state)
{
    (void)state;
    for (size_t k = 0; k < NFORMS; k++) {
        if (forms[k].per_thread)
            continue; /* the capture is of s, not of the per-thread stream */
        CUdeviceptr a = region(), b = region(), c = region();
        CUstream s = new_stream();
        launch(a, b, c, s);
        CUgraph g = capture_with_prefetch(&forms[k], a, b, c, 0, PF_LAST, s);
        size_t mark, of = 0;
        long at = -1;
        CUgraphExec e = graph_run(g, s, &mark);
        /* on main the capture itself marked c moved, and the graph's launch
         * prefetched it, resident as it was */
        assert_int_equal(shim_prefetches_since(mark, c, &of, &at), 0);
        mark = f_count();
        launch(a, b, c, s);
        long l = find_call("cuLaunchKernel", mark);
        /* on main nothing: the graph's move of c to the host went unseen */
        size_t want = prefetching() && taken(&forms[k]) ? 1 : 0; /* else c never moved */
        assert_int_equal(shim_prefetches_since(mark, c, &of, &at), want);
        assert_int_equal(of, want);
        if (want)
            assert_true(at < l);
        graph_done(e, g);
    }
}

/* c on the host; a graph that moves c to the device and then runs its
 * kernel on a, b, c: its launch does not prefetch c (the graph moves it),
 * nor does the launch after it. */
static void test_graph_prefetch_to_device(void **state)
{
    (void)state;
    for (size_t k = 0; k < NFORMS; k++) {
        if (forms[k].per_thread)
            continue;
        CUdeviceptr a = region(), b = region(), c = region();
        CUstream s = new_stream();
        launch(a, b, c, s);
        own_prefetch(&forms[k], c, N * 4, 0, s);
        CUgraph g = capture_with_prefetch(&forms[k], a, b, c, 1, PF_FIRST, s);
        size_t mark, of = 0;
        long at = -1;
        CUgraphExec e = graph_run(g, s, &mark);
        /* on main the shim prefetched c before the graph, which moves it (a
         * and b may be prefetched: the capture's claim of c started a new
         * generation) */
        (void)shim_prefetches_since(mark, c, &of, &at);
        assert_int_equal(of, 0);
        mark = f_count();
        launch(a, b, c, s);
        assert_int_equal(shim_prefetches_since(mark, c, &of, &at), 0);
        graph_done(e, g);
    }
}

/* A captured graph holding a prefetch of c to the host is destroyed
 * unlaunched, and the double gives its handle to the graph of the next
 * capture, which holds only a launch on a, b, c: that graph's launch must
 * not count the dead graph's prefetch (c would be prefetched again after
 * it). */
static void test_graph_destroyed_forgets_prefetch(void **state)
{
    (void)state;
    const form_t *f = &forms[2]; /* cuMemPrefetchAsync_v2 */
    CUdeviceptr a = region(), b = region(), c = region();
    CUstream s = new_stream();
    launch(a, b, c, s);
    CUgraph dead = capture_with_prefetch(f, a, b, c, 0, PF_LAST, s);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(dead), CUDA_SUCCESS);
    CUgraph g = capture_with_prefetch(f, a, b, c, 0, PF_NONE, s);
    assert_ptr_equal(g, dead); /* the handle reused: else this shows nothing */
    size_t mark, of = 0;
    long at = -1;
    CUgraphExec e = graph_run(g, s, &mark);
    mark = f_count();
    launch(a, b, c, s);
    /* with the dead graph's prefetch kept, c was prefetched here */
    assert_int_equal(shim_prefetches_since(mark, c, &of, &at), 0);
    graph_done(e, g);
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_prefetch_to_host),
        cmocka_unit_test(test_program_prefetch_of_part_to_host),
        cmocka_unit_test(test_program_prefetch_to_device),
        cmocka_unit_test(test_program_prefetch_on_other_stream),
        cmocka_unit_test(test_program_batch_of_several_locations),
        cmocka_unit_test(test_graph_prefetch_to_host),
        cmocka_unit_test(test_graph_prefetch_to_device),
        cmocka_unit_test(test_graph_destroyed_forgets_prefetch),
        cmocka_unit_test(test_program_discard),
        cmocka_unit_test(test_program_discard_and_prefetch),
        cmocka_unit_test(test_graph_discard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
