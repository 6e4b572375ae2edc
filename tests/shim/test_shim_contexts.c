/*
 * More live CUDA contexts than the shim keeps state for (64 entries,
 * backend_cuda.h), against the driver double with its limit raised
 * (FAKE_CUDA_MAX_CTX; by default it allows 16 live contexts, so this path
 * went untested). What backend_cuda.h says must hold:
 *   - the first 64 live contexts get a migration stream (their launches are
 *     prefetched for), the ones beyond get none, and the shim says so once;
 *   - nothing else changes for those: their launches run with their own
 *     arguments, their allocations are tracked (the budget view counts them)
 *     and forgotten when their context is destroyed;
 *   - once one of the 64 is destroyed, a context that had no state gets
 *     the entry it left, and the table is full again after it.
 * And threads making the first launches in the primary context at once get
 * one state for it (test_primary_first_launches_at_once), and a context's
 * state made while another thread captures a graph in mode GLOBAL is made
 * in mode RELAXED (test_state_made_relaxed_during_capture).
 * CTest runs this with LD_PRELOAD=libgmux.so, policy proactive, a budget,
 * no gate, and FAKE_CUDA_MAX_CTX above 64.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim_harness.h"

#define TRACKED 64 /* the shim's table of context state (backend_cuda.h) */
#define NCTX    (TRACKED + 6)
#define BUF     (64u << 10)

static const char warning[] = "live CUDA contexts: no migration stream";

static PFN_cuCtxCreate_v3020 create;
static PFN_cuCtxDestroy_v4000 destroy;
static PFN_cuCtxPushCurrent_v4000 push;
static PFN_cuCtxPopCurrent_v4000 pop;
static PFN_cuLaunchKernel_v4000 launch;
static CUfunction tag_fn;

/* tag(buf, t): buf[0] = t. */
static void k_tag(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)grid;
    (void)block;
    **(uint64_t **)args[0] = *(uint64_t *)args[1];
}

static uint64_t used(void)
{
    size_t fr = 0, total = 0;
    assert_int_equal(GET(PFN_cuMemGetInfo_v3020, "cuMemGetInfo", 12000)(&fr, &total), CUDA_SUCCESS);
    return total - fr;
}

/* Launches tag(buf, t) in ctx (pushed, popped after); whether the shim
 * prefetched for it. */
static int tag_in(CUcontext ctx, CUdeviceptr buf, uint64_t t)
{
    CUcontext was;
    assert_int_equal(push(ctx), CUDA_SUCCESS);
    f_reset();
    void *args[] = {&buf, &t};
    assert_int_equal(launch(tag_fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    int prefetched = find_call("cuMemPrefetchAsync_v2", 0) >= 0;
    assert_int_equal(pop(&was), CUDA_SUCCESS);
    assert_ptr_equal(was, ctx);
    return prefetched;
}

/* The driver's entry points the tests use, and the kernel tag. */
static void bind_entries(void)
{
    create = (PFN_cuCtxCreate_v3020)get("cuCtxCreate", 3020, LEGACY);
    destroy = GET(PFN_cuCtxDestroy_v4000, "cuCtxDestroy", 12000);
    push = GET(PFN_cuCtxPushCurrent_v4000, "cuCtxPushCurrent", 12000);
    pop = GET(PFN_cuCtxPopCurrent_v4000, "cuCtxPopCurrent", 12000);
    launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    static const size_t sizes[] = {8, 8};
    tag_fn = f_register("tag", 2, sizes, k_tag);
}

/* How many times the shim's log (the file at fd) says the table is full. */
static int warnings(int fd)
{
    static char text[1 << 16];
    ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
    assert_true(n >= 0);
    text[n] = '\0';
    int count = 0;
    for (const char *p = text; (p = strstr(p, warning)); p++)
        count++;
    return count;
}

static void test_live_contexts_beyond_tracked(void **state)
{
    (void)state;
    bind_entries();
    /* the shim's log to a file of ours for the test */
    char log[] = "/tmp/gmux_contexts_XXXXXX";
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    unlink(log);
    int saved = dup(2);
    assert_true(saved >= 0 && dup2(fd, 2) == 2);

    uint64_t u0 = used();
    static CUcontext ctx[NCTX + 1];
    static CUdeviceptr buf[NCTX + 1];
    static int prefetched[NCTX];
    for (int i = 0; i < NCTX; i++) {
        CUcontext was;
        assert_int_equal(create(&ctx[i], 0, 0), CUDA_SUCCESS);
        buf[i] = alloc(BUF);
        assert_int_equal(pop(&was), CUDA_SUCCESS); /* the double's stacks are shallow */
        prefetched[i] = tag_in(ctx[i], buf[i], 1000 + (uint64_t)i);
    }
    for (int i = 0; i < NCTX; i++) /* the first 64 tracked, the others not */
        assert_int_equal(prefetched[i], i < TRACKED);
    for (int i = NCTX - 1; i >= 0; i--) /* and launched all the same, again */
        (void)tag_in(ctx[i], buf[i], 2000 + (uint64_t)i);
    for (int i = 0; i < NCTX; i++)
        assert_int_equal(*(uint64_t *)(uintptr_t)buf[i], 2000 + (uint64_t)i);
    assert_int_equal(used() - u0, (uint64_t)NCTX * BUF);
    assert_int_equal(warnings(fd), 1);

    /* one of the 64 goes: the first context without state takes its entry */
    assert_int_equal(destroy(ctx[3]), CUDA_SUCCESS);
    ctx[3] = NULL;
    assert_int_equal(used() - u0, (uint64_t)(NCTX - 1) * BUF);
    assert_true(tag_in(ctx[TRACKED], buf[TRACKED], 3));
    assert_false(tag_in(ctx[TRACKED + 1], buf[TRACKED + 1], 4)); /* full again */
    assert_int_equal(*(uint64_t *)(uintptr_t)buf[TRACKED + 1], 4);
    assert_int_equal(warnings(fd), 1); /* said once */

    for (int i = 0; i < NCTX; i++)
        if (ctx[i])
            assert_int_equal(destroy(ctx[i]), CUDA_SUCCESS);
    assert_int_equal(used(), u0); /* the untracked contexts' allocations went too */
    /* every entry free again: a new context gets one */
    CUcontext was;
    assert_int_equal(create(&ctx[NCTX], 0, 0), CUDA_SUCCESS);
    buf[NCTX] = alloc(BUF);
    assert_int_equal(pop(&was), CUDA_SUCCESS);
    assert_true(tag_in(ctx[NCTX], buf[NCTX], 5));
    assert_int_equal(destroy(ctx[NCTX]), CUDA_SUCCESS);

    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    close(fd);
}

/* --- first launches in the primary context, at once ---------------------- */

#define RACERS 8

static CUdeviceptr race_buf[RACERS];
static CUresult race_rc[RACERS][2];

/* Racer i: retains the primary context and launches tag(race_buf[i], i),
 * as a program's threads do at their first CUDA call; the double holds the
 * launches' lookups of the current context until all racers made theirs. */
static void *racer(void *arg)
{
    size_t i = (size_t)(uintptr_t)arg;
    CUcontext c;
    uint64_t t = 100 + i;
    void *args[] = {&race_buf[i], &t};
    race_rc[i][0] =
        GET(PFN_cuDevicePrimaryCtxRetain_v7000, "cuDevicePrimaryCtxRetain", 12000)(&c, 0);
    race_rc[i][1] = launch(tag_fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
    return NULL;
}

/* Threads make the first launches in the primary context at once: the shim
 * creates its state for the context (a migration stream, three events) once,
 * and every launch prefetches on that one stream, never on one of an entry
 * another thread was still filling in. Run under TSan too (make check-tsan). */
static void test_primary_first_launches_at_once(void **state)
{
    (void)state;
    launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    static const size_t sizes[] = {8, 8};
    tag_fn = f_register("tag", 2, sizes, k_tag);
    CUcontext primary;
    assert_int_equal(
        GET(PFN_cuDevicePrimaryCtxRetain_v7000, "cuDevicePrimaryCtxRetain", 12000)(&primary, 0),
        CUDA_SUCCESS);
    for (size_t i = 0; i < RACERS; i++)
        race_buf[i] = alloc(BUF);
    fake_arm_ctx_meet_fn meet = (fake_arm_ctx_meet_fn)dlsym(drv, "fake_arm_ctx_meet");
    assert_non_null(meet);
    f_reset();
    meet(RACERS); /* their lookups of the context at once */
    pthread_t th[RACERS];
    for (size_t i = 0; i < RACERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, racer, (void *)(uintptr_t)i), 0);
    for (size_t i = 0; i < RACERS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    meet(0);
    for (size_t i = 0; i < RACERS; i++) {
        assert_int_equal(race_rc[i][0], CUDA_SUCCESS);
        assert_int_equal(race_rc[i][1], CUDA_SUCCESS);
        assert_int_equal(*(uint64_t *)(uintptr_t)race_buf[i], 100 + i);
    }
    /* one migration stream and its events, every prefetch on it */
    assert_int_equal(count_calls("cuStreamCreate"), 1);
    assert_int_equal(count_calls("cuEventCreate"), 3);
    long first = find_call("cuStreamCreate", 0);
    uint64_t mig = f_get((size_t)first)->a[0];
    assert_int_equal(count_prefetches(), RACERS);
    for (long i = find_call("cuMemPrefetchAsync_v2", 0); i >= 0;
         i = find_call("cuMemPrefetchAsync_v2", (size_t)i + 1))
        assert_int_equal(f_get((size_t)i)->a[3], mig);
    PFN_cuDevicePrimaryCtxRelease_v11000 release =
        GET(PFN_cuDevicePrimaryCtxRelease_v11000, "cuDevicePrimaryCtxRelease", 12000);
    for (size_t i = 0; i <= RACERS; i++)
        assert_int_equal(release(0), CUDA_SUCCESS);
}

/* --- a context's state made during another thread's capture ---------------- */

static CUcontext cap_ctx;
static CUdeviceptr cap_buf;
static int cap_prefetched;

static void *first_launch_in_cap_ctx(void *arg)
{
    (void)arg;
    cap_prefetched = tag_in(cap_ctx, cap_buf, 7);
    return NULL;
}

/* The first launch in a context, made while another thread of the program
 * captures a graph in mode GLOBAL: the shim creates the context's migration
 * stream and its three events then, and makes them in mode RELAXED (its
 * choice: the driver's documentation does not name stream or event
 * creation among the potentially unsafe calls, so the double counts such
 * calls by the caller's mode instead of refusing them). The capture must
 * end well, and the launch must be prefetched for on the new stream. */
static void test_state_made_relaxed_during_capture(void **state)
{
    (void)state;
    bind_entries();
    fake_capture_creations_fn creations =
        (fake_capture_creations_fn)dlsym(drv, "fake_capture_creations");
    assert_non_null(creations);
    CUcontext was;
    assert_int_equal(create(&cap_ctx, 0, 0), CUDA_SUCCESS);
    cap_buf = alloc(BUF); /* before the capture: an allocation would break it */
    assert_int_equal(pop(&was), CUDA_SUCCESS);
    CUstream s = new_stream();
    unsigned relaxed0, strict0, relaxed, strict;
    creations(&relaxed0, &strict0);
    assert_int_equal(GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture",
                         12000)(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, first_launch_in_cap_ctx, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    CUgraph g;
    assert_int_equal(GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000)(s, &g),
                     CUDA_SUCCESS);
    creations(&relaxed, &strict);
    print_message("creations during the capture: %u relaxed, %u not\n", relaxed - relaxed0,
                  strict - strict0);
    assert_true(cap_prefetched);
    assert_int_equal(strict - strict0, 0);
    assert_int_equal(relaxed - relaxed0, 4); /* the migration stream, three events */
    assert_int_equal(*(uint64_t *)(uintptr_t)cap_buf, 7);
    GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g);
    assert_int_equal(destroy(cap_ctx), CUDA_SUCCESS);
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_primary_first_launches_at_once),
        cmocka_unit_test(test_state_made_relaxed_during_capture),
        cmocka_unit_test(test_live_contexts_beyond_tracked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
