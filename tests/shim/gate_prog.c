/*
 * A program for the gating tests (test_gate_*.c): run under `gmux run` with the
 * driver double as libcuda.so.1 (its helpers: gate_prog.h). It launches many short kernels that
 * each busy-wait a little and then mix a buffer in "device" memory, records when each kernel ran
 * (the double runs kernels inside cuLaunchKernel), and writes
 *
 *   checksum <hex> request <ns>     (request: just before the first launch)
 *   <start ns> <end ns>             (one line per kernel)
 *   D <ns> <base> <len> <before>    (one line per prefetch to the device the
 *                                    driver double saw, in call order;
 *                                    before: 1 if fake_ordered puts the
 *                                    next launch after it, or there is none)
 *   H <ns> <base> <len> <ordered>   (the same for prefetches to the host;
 *                                    ordered: 1 if the driver double's
 *                                    model of stream order puts it after
 *                                    the last launch before it, or there
 *                                    was none: fake_ordered)
 *   S <ns> <stream>                 (one line per stream synchronization the
 *                                    driver double saw: the program makes
 *                                    none, the shim's are waits for its
 *                                    migration stream)
 *
 * to OUTFILE. Usage:
 *   gate_prog OUTFILE SEED NKERNELS WORK_US [DELAY_MS [EXTRA_MIB [PAUSE_MS [CAPTURE [STREAM]]]]]
 * EXTRA_MIB: one more allocation of that size (part of the working set the
 * shim announces to gmuxd, never touched; 0: none). PAUSE_MS: a pause without
 * launches after the first half of the kernels. CAPTURE 1: through the
 * pause, a blocking stream captures a graph (in the double's model); 2: the
 * launch stream does (with STREAM 1: a non-blocking one); exit status 16 if
 * something invalidated that capture; 3: from before the first launch to after
 * the last, a second thread captures its own non-blocking stream in mode
 * GLOBAL (cuStreamBeginCapture), while this thread launches: exit 16 if that
 * capture's end fails (the double invalidates it when a thread not in
 * RELAXED mode makes a potentially unsafe call meanwhile); 4 (with STREAM 1):
 * at the pause, the double is armed to begin a capture of the launch stream
 * (through cuStreamBeginCapture_v2, the shim's hook) from another thread right
 * after the shim's next query of that stream, and the capture ends after the
 * pause: exit 16 if it was invalidated; a line "A 1" if it began and held;
 * 5: the program runs in a context of its own (cuCtxCreate), and at the
 * pause the double is armed so that the next push of that context (the
 * shim's watcher thread entering it to evict) makes another thread destroy
 * it (through the shim's cuCtxDestroy hook) and create another at its
 * handle; after the pause (the program does the same itself if the hook
 * never fired) the kernels go on in the new context with a new buffer
 * holding what the old one held: exit 19 if the double saw the context
 * destroyed while another thread had it pushed; a line "A 1" if the hook
 * fired; 6 (with STREAM 1): like 4, but the capture begins through the
 * double's own cuStreamBeginCapture_v2, which the shim does not see, so the
 * shim's event record on the launch stream joins its migration stream to
 * the capture (the capture is broken: not checked); once the shim found that
 * (queried the stream as capturing, then left the context), one kernel that
 * touches nothing runs on the blocking stream, with an allocation of its own
 * (prefetched by the proactive policy): exit 20 if anything was prefetched
 * on the joined stream before the capture ended (captured, not run, in the
 * driver); a line "A 1" if the capture began. 7: no capture; after the
 * pause, the double is armed to stall this thread's next cuCtxGetCurrent
 * (the shim's, as the next launch waits for its turn): it creates
 * OUTFILE.stalled and waits until OUTFILE.resume exists. 8: like 7, but the
 * stall is armed for this thread's next prefetch (the shim's, as the next
 * launch applies a stored fill ahead before it waits for its turn). 9: after
 * the pause the kernels go on in a second context (cuCtxCreate), the first
 * kept; a line "O <n>": the prefetches to the device not ordered after the
 * last prefetch to the host before them (on its stream, or waiting for an
 * event recorded on that stream after it). 10: the program runs in a
 * context of its own (cuCtxCreate) and destroys it at the pause, before
 * OUTFILE.paused (through the shim's cuCtxDestroy hook); after the pause the
 * kernels go on in a new context with a new buffer holding what the old one
 * held (EXTRA_MIB is not allocated again: the memory the scripts evict
 * stays gone, wherever the allocator puts the next block); a line "A 1"
 * if the buffer came back at its old address. 11: after the pause the program pops its
 * (primary) context, so that none is current, and launches: the shim waits for a turn with no
 * context, and the driver refuses the launch (exit 13 if it does not); the program then pushes the
 * context back and launches the kernel again. 12: like 11, and a blocking stream captures a graph
 * (as 1) from the pause until the context is pushed back; the program then creates OUTFILE.pushed
 * and waits until OUTFILE.resume exists before it launches again. 13: at the pause the program
 * creates 64 contexts (the driver double's limit raised, FAKE_CUDA_MAX_CTX) and launches in each a
 * kernel that takes an allocation of that context and touches nothing; the last one stays current,
 * and the kernels after the pause go on in it: with the proactive policy, the shim's 64 entries of
 * context state (the primary context's and 63 of these) are taken, and that one has none. 14: at
 * the pause (after OUTFILE.paused), once OUTFILE.cap exists, a second thread begins a capture of
 * its own non-blocking stream in mode GLOBAL (as 3), the program creates OUTFILE.capturing, and the
 * capture ends right after the pause: exit 16 if its end fails. With 3 and 14, a line "R <n>": the
 * potentially unsafe calls the capture's mode would have refused that the double let through
 * because the caller was in mode RELAXED (the shim's own). 15: through the
 * pause, the program captures its per-thread default stream in mode GLOBAL
 * (stream 0 through cuStreamBeginCapture_v2_ptsz): a blocking stream, so the
 * legacy stream is unusable meanwhile; exit 16 if the capture's end fails.
 * 16 (with EXTRA_MIB, PAUSE_MS a file): no capture; at three quarters of
 * the kernels a second pause (OUTFILE.paused2, until PAUSE_MS's file with
 * "2" appended exists), after which the kernels mix the EXTRA_MIB
 * allocation instead of the buffer: the turn between the pauses uses the
 * buffer only, the one after the second the extra allocation only. 17
 * (PAUSE_MS a file): the program runs in a context of its own
 * (cuCtxCreate); once the pause is over it destroys it (through the shim's
 * hook), creates another, allocates the buffer (holding what the old one
 * held) and EXTRA_MIB again, and pauses again as 16 does before its next
 * launch; a line "A 1" if the double gave both allocations their old
 * addresses back (FAKE_CUDA_REUSE=1). 18 (with STREAM 1): like 6, with a second
 * non-blocking stream made after the launch stream (the shim orders the evictions after
 * the launch stream, then after that one); once the thread that queried the launch stream
 * (the armed capture begun there) left the context, the program ends the capture and
 * creates OUTFILE.capended: exit 16 if its end failed, 21 if its graph holds any node (the
 * program captured nothing: the shim's work), 22 if the stream the shim found joined to it
 * was not destroyed by the time the end returned (the shim leaves it to the capture, then
 * releases it); a line "A 1" if the capture began. 19 (with STREAM 1): like 18, with a
 * second capture armed on the second stream: both begin between the shim's queries and its
 * records; both must end valid (a wait of the joined stream on an event captured in the
 * other would merge the two and invalidate both), exit 16, 21, 22 as for 18, either capture;
 * a line "A 1" if both began. 20 (with STREAM 1): like 18, and once the pause began the
 * program waits until OUTFILE.launch exists (the turn revoked), then launches one kernel that
 * touches nothing on the second stream, with an allocation of its own (prefetched by the
 * proactive policy), without a turn (its wait times out); the double stalls that launch's
 * prefetch (it creates OUTFILE.stalled and waits until OUTFILE.resume exists); then it ends
 * the capture as 18 does: exit 16, 21, 22 as for 18 (the launch's prefetch or its stream
 * pulled into the capture: 16 or 21). 21 (with STREAM 1): no capture; once the pause began the
 * program waits until OUTFILE.launch exists (the turn revoked), then launches one kernel that
 * touches nothing on the launch stream, with an allocation of its own (prefetched by the
 * proactive policy), without a turn (its wait times out); the double holds that launch past its
 * gate (OUTFILE.stalled) until the shim queries the launch stream from another thread (the
 * watcher ordering an eviction after it: OUTFILE.ordering), and holds that query until the launch
 * returned (OUTFILE.launched): the launch meets the ordering in progress (gate_prog_util.c).
 * STREAM 1: the kernels go on a stream
 * the program creates non-blocking (cuStreamCreateWithPriority), which the
 * legacy stream does not wait for; 2: on one it creates blocking
 * (cuStreamCreate, flags 0), which the legacy stream waits for; 3: the
 * program creates a green context (cuGreenCtxCreate), makes its converted
 * context current (pushed) before it allocates, and the kernels go on a
 * stream of the green context (cuGreenCtxStreamCreate, non-blocking, as the
 * driver requires); 0 (default): the NULL stream.
 * GATE_PROG_ALLOCS=N in the environment: N more allocations of 256 bytes
 * (at most 1900) before the first launch, kept to the end, and a line
 * "M <base> <len>" for each in OUTFILE; between each and the next, another
 * of 256 bytes is made and freed, so no two of them touch.
 * GATE_PROG_ARRAY_MIB=N: a CUDA array of N MiB (cuArrayCreate) before the
 * first launch, kept to the end (pinned memory the shim counts, never announces).
 * GATE_PROG_PAUSE_SWAP=1 (with EXTRA_MIB): once the pause is over, 64 KiB
 * more is allocated and the EXTRA_MIB allocation freed, before the next
 * launch; lines "N <base> <len>" and "F <base> <len>" in OUTFILE say which.
 * DELAY_MS and PAUSE_MS may instead name a file (they begin with '/'): the
 * program waits until that file exists (exit 18 after two minutes), so that
 * tests order programs on what happened rather than on how long it took. At
 * the pause (its capture begun), the program creates OUTFILE.paused, and it
 * writes a line "C <begin ns> <end ns>": when the pause (and the capture
 * through it) began and ended.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "fake_cuda/fake_cuda.h"
#include "gate_prog.h"

#define GATE_WORDS 512u

static uint64_t (*times)[2];
static unsigned work_us;

/* args: the buffer (CUdeviceptr) and the kernel's index. */
static void mix_kernel(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)grid;
    (void)block;
    uint64_t *buf = (uint64_t *)(uintptr_t) * (CUdeviceptr *)args[0];
    uint64_t k = *(uint64_t *)args[1];
    uint64_t t0 = now_ns();
    while (now_ns() - t0 < (uint64_t)work_us * 1000u) {
    }
    for (unsigned i = 0; i < GATE_WORDS; i++)
        buf[i] = buf[i] * 6364136223846793005ull + k + i;
    times[k][0] = t0;
    times[k][1] = now_ns();
}

/* CAPTURE 5: the program's context, and how it is replaced by another at its handle. */
static CUcontext own_ctx;
static PFN_cuCtxCreate_v3020 ctx_create;
static PFN_cuCtxDestroy_v4000 ctx_destroy;
static int ctx_replaced; /* 1 once done, -1 if it failed */

static void replace_ctx(void)
{
    CUcontext again = NULL;
    int ok = ctx_destroy(own_ctx) == CUDA_SUCCESS && ctx_create(&again, 0, 0) == CUDA_SUCCESS &&
             again == own_ctx;
    ctx_replaced = ok ? 1 : -1;
}

/* CAPTURE 6: a kernel that touches nothing. */
static void probe_kernel(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)args;
    (void)grid;
    (void)block;
}

/* CAPTURE 18 at the pause, the capture armed on ls at log index armed_at (19:
 * another on two, else NULL): waits until the thread that queried ls left the
 * context, ends the captures (the program's cuStreamEndCapture, through the
 * shim) and creates OUTFILE.capended. Returns 0, 16 if an end failed, 21 if a
 * graph holds a node (the program captured nothing), 22 if the stream the shim found
 * joined to it was not destroyed by the time the end returned, -1 on a wait
 * too long; *began_p: the capture's beginning. */
static size_t armed_at;
static fake_graph_nodes_fn graph_nodes;

static int joined_capture_end(const char *outfile, PFN_cuGetProcAddress_v12000 gpa, CUstream ls,
                              CUstream two, fake_log_count_fn count, fake_log_get_fn lg,
                              fake_armed_capture_join_fn arm_join, int *began_p)
{
    PFN_cuStreamEndCapture_v10000 end =
        (PFN_cuStreamEndCapture_v10000)get(gpa, "cuStreamEndCapture");
    PFN_cuGraphDestroy_v10000 destroy = (PFN_cuGraphDestroy_v10000)get(gpa, "cuGraphDestroy");
    if (!end || !destroy)
        return -1;
    for (int i = 0; !left_after_query(count, lg, ls, armed_at); i++) {
        if (i == 12000)
            return -1;
        struct timespec d = {0, 10000000L};
        nanosleep(&d, NULL);
    }
    *began_p = arm_join();
    CUresult r = CUDA_SUCCESS;
    int rc = 0;
    CUstream ends[2] = {ls, two};
    for (int i = 0; i < 2 && ends[i]; i++) {
        CUgraph g = NULL;
        CUresult e = *began_p == CUDA_SUCCESS ? end(ends[i], &g) : CUDA_ERROR_ILLEGAL_STATE;
        if (!rc) {
            r = e;
            rc = e != CUDA_SUCCESS ? 16 : graph_nodes(g, NULL, 0) != 0 ? 21 : 0;
        }
        if (g)
            (void)destroy(g);
    }
    size_t at = 0;
    uint64_t joined = joined_found(count, lg, ls, &at);
    if (!rc && !destroyed_since(count, lg, joined, armed_at))
        rc = 22;
    if (rc)
        fprintf(stderr, "gate_prog: the armed capture's end: %s (CUresult %d)\n",
                rc == 16   ? "failed"
                : rc == 21 ? "a graph with nodes"
                           : "the joined stream not destroyed",
                (int)r);
    char mark[4096];
    snprintf(mark, sizeof(mark), "%s.capended", outfile);
    FILE *m = fopen(mark, "w");
    return m && fclose(m) == 0 ? rc : -1;
}

/* CAPTURE 20 at the pause: once OUTFILE.launch exists, launches pf on s with
 * *p, its prefetch stalled (OUTFILE.stalled, until OUTFILE.resume). 0, or -1. */
static int launch_stalled(const char *outfile, fake_arm_stall_prefetch_fn arm_stall_prefetch,
                          PFN_cuLaunchKernel_v4000 launch, CUfunction pf, CUstream s,
                          CUdeviceptr *p)
{
    char go_on[4096], mark[4096], until[4096];
    snprintf(go_on, sizeof(go_on), "%s.launch", outfile);
    snprintf(mark, sizeof(mark), "%s.stalled", outfile);
    snprintf(until, sizeof(until), "%s.resume", outfile);
    if (wait_for(go_on) != 0)
        return -1;
    arm_stall_prefetch(mark, until);
    void *args[] = {p};
    return launch(pf, 1, 1, 1, 1, 1, 1, 0, s, args, NULL) == CUDA_SUCCESS ? 0 : -1;
}

/* CAPTURE 13: creates n contexts and launches pf (one pointer argument,
 * touched not) in each, on an allocation of its own; the last stays
 * current. 0, or -1. */
static int fill_contexts(int n, PFN_cuGetProcAddress_v12000 gpa, CUfunction pf)
{
    PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)get(gpa, "cuMemAlloc");
    PFN_cuLaunchKernel_v4000 launch = (PFN_cuLaunchKernel_v4000)get(gpa, "cuLaunchKernel");
    PFN_cuCtxPopCurrent_v4000 pop = (PFN_cuCtxPopCurrent_v4000)get(gpa, "cuCtxPopCurrent");
    for (int i = 0; i < n; i++) {
        CUcontext c, was;
        CUdeviceptr p;
        void *args[] = {&p};
        if (!ctx_create || !alloc || !launch || !pop || ctx_create(&c, 0, 0) != CUDA_SUCCESS ||
            alloc(&p, 4096) != CUDA_SUCCESS ||
            launch(pf, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS ||
            (i + 1 < n && pop(&was) != CUDA_SUCCESS))
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    uint64_t seed = strtoull(argv[2], NULL, 10);
    unsigned long n = strtoul(argv[3], NULL, 10);
    work_us = (unsigned)strtoul(argv[4], NULL, 10);
    const char *delay = argc > 5 ? argv[5] : "0";
    unsigned long extra_mib = argc > 6 ? strtoul(argv[6], NULL, 10) : 0;
    const char *pause = argc > 7 ? argv[7] : "0";
    int pauses = pause[0] == '/' || strtol(pause, NULL, 10) > 0;
    char paused[4096];
    snprintf(paused, sizeof(paused), "%s.paused", argv[1]);
    int capture = argc > 8 ? atoi(argv[8]) : 0;
    int own_stream = argc > 9 ? atoi(argv[9]) : 0;
    times = calloc(n ? n : 1, sizeof(*times));
    void *drv = dlopen("libcuda.so.1", RTLD_NOW);
    if (!times || !drv)
        return 10;
    PFN_cuGetProcAddress_v12000 gpa =
        (PFN_cuGetProcAddress_v12000)dlsym(drv, "cuGetProcAddress_v2");
    fake_register_kernel_fn reg = (fake_register_kernel_fn)dlsym(drv, "fake_register_kernel");
    fake_log_count_fn log_count = (fake_log_count_fn)dlsym(drv, "fake_log_count");
    fake_log_get_fn log_get = (fake_log_get_fn)dlsym(drv, "fake_log_get");
    fake_set_capturing_blocking_fn set_capturing =
        (fake_set_capturing_blocking_fn)dlsym(drv, "fake_set_capturing_blocking");
    fake_set_capturing_fn set_capturing_nb =
        (fake_set_capturing_fn)dlsym(drv, "fake_set_capturing");
    fake_capture_invalidated_fn invalidated =
        (fake_capture_invalidated_fn)dlsym(drv, "fake_capture_invalidated");
    fake_arm_capture_fn arm = (fake_arm_capture_fn)dlsym(drv, "fake_arm_capture");
    fake_arm_capture_fn arm_also = (fake_arm_capture_fn)dlsym(drv, "fake_arm_capture_also");
    fake_armed_capture_join_fn arm_join =
        (fake_armed_capture_join_fn)dlsym(drv, "fake_armed_capture_join");
    fake_arm_push_fn arm_push = (fake_arm_push_fn)dlsym(drv, "fake_arm_push");
    fake_armed_push_join_fn push_join = (fake_armed_push_join_fn)dlsym(drv, "fake_armed_push_join");
    fake_ctx_destroyed_in_use_fn destroyed_in_use =
        (fake_ctx_destroyed_in_use_fn)dlsym(drv, "fake_ctx_destroyed_in_use");
    fake_entry_fn entry = (fake_entry_fn)dlsym(drv, "fake_entry");
    fake_arm_stall_fn arm_stall = (fake_arm_stall_fn)dlsym(drv, "fake_arm_stall");
    fake_arm_stall_prefetch_fn arm_stall_prefetch =
        (fake_arm_stall_prefetch_fn)dlsym(drv, "fake_arm_stall_prefetch");
    fake_unsafe_relaxed_fn relaxed = (fake_unsafe_relaxed_fn)dlsym(drv, "fake_unsafe_relaxed");
    fake_ordered_fn ordered = (fake_ordered_fn)dlsym(drv, "fake_ordered");
    graph_nodes = (fake_graph_nodes_fn)dlsym(drv, "fake_graph_nodes");
    if (!gpa || !reg || !log_count || !log_get || !set_capturing || !set_capturing_nb || !ordered ||
        !invalidated || !relaxed || !arm || !arm_also || !arm_join || !arm_push || !push_join ||
        !destroyed_in_use || !entry || !arm_stall || !arm_stall_prefetch || !graph_nodes)
        return 11;
    ctx_create = (PFN_cuCtxCreate_v3020)get(gpa, "cuCtxCreate");
    ctx_destroy = (PFN_cuCtxDestroy_v4000)get(gpa, "cuCtxDestroy");
    PFN_cuCtxPopCurrent_v4000 ctx_pop = (PFN_cuCtxPopCurrent_v4000)get(gpa, "cuCtxPopCurrent");
    PFN_cuCtxPushCurrent_v4000 ctx_push = (PFN_cuCtxPushCurrent_v4000)get(gpa, "cuCtxPushCurrent");
    CUcontext popped = NULL; /* CAPTURE 11 */
    if ((capture == 5 || capture == 10 || capture == 17) &&
        (!ctx_create || !ctx_destroy || ctx_create(&own_ctx, 0, 0) != CUDA_SUCCESS))
        return 11;
    PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)get(gpa, "cuMemAlloc");
    PFN_cuLaunchKernel_v4000 launch = (PFN_cuLaunchKernel_v4000)get(gpa, "cuLaunchKernel");
    PFN_cuStreamCreate_v2000 stream_create = (PFN_cuStreamCreate_v2000)get(gpa, "cuStreamCreate");
    PFN_cuStreamCreateWithPriority_v5050 stream_create_prio =
        (PFN_cuStreamCreateWithPriority_v5050)get(gpa, "cuStreamCreateWithPriority");
    PFN_cuStreamDestroy_v4000 stream_destroy =
        (PFN_cuStreamDestroy_v4000)get(gpa, "cuStreamDestroy");
    CUstream blocking = NULL, ls = NULL, second = NULL;
    if (own_stream == 3) { /* a green context's stream, its context current */
        PFN_cuGreenCtxCreate_v12040 green_create =
            (PFN_cuGreenCtxCreate_v12040)get_at(gpa, "cuGreenCtxCreate", 12040);
        PFN_cuCtxFromGreenCtx_v12040 from_green =
            (PFN_cuCtxFromGreenCtx_v12040)get_at(gpa, "cuCtxFromGreenCtx", 12040);
        PFN_cuGreenCtxStreamCreate_v12050 green_stream =
            (PFN_cuGreenCtxStreamCreate_v12050)get_at(gpa, "cuGreenCtxStreamCreate", 12050);
        CUgreenCtx green;
        CUcontext gctx;
        if (!green_create || !from_green || !green_stream || !ctx_push ||
            green_create(&green, NULL, 0, CU_GREEN_CTX_DEFAULT_STREAM) != CUDA_SUCCESS ||
            from_green(&gctx, green) != CUDA_SUCCESS || ctx_push(gctx) != CUDA_SUCCESS ||
            green_stream(&ls, green, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
            return 11;
    }
    if (!alloc || !launch || !stream_create || !stream_create_prio || !stream_destroy ||
        stream_create(&blocking, 0) != CUDA_SUCCESS ||
        (own_stream == 1 && stream_create_prio(&ls, CU_STREAM_NON_BLOCKING, -1) != CUDA_SUCCESS) ||
        (own_stream == 2 && stream_create(&ls, CU_STREAM_DEFAULT) != CUDA_SUCCESS) ||
        ((capture == 18 || capture == 19 || capture == 20) &&
         stream_create_prio(&second, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS))
        return 11;
    CUdeviceptr buf, extra, probe;
    if (alloc(&buf, GATE_WORDS * sizeof(uint64_t)) != CUDA_SUCCESS ||
        (extra_mib && alloc(&extra, extra_mib << 20) != CUDA_SUCCESS) ||
        ((capture == 6 || capture == 20 || capture == 21) && alloc(&probe, 4096) != CUDA_SUCCESS))
        return 12;
    static CUdeviceptr many[1900], gaps[1900];
    CUdeviceptr late = 0; /* GATE_PROG_PAUSE_SWAP */
    int swapped = 0;
    const char *allocs_env = getenv("GATE_PROG_ALLOCS");
    unsigned long nmany = allocs_env ? strtoul(allocs_env, NULL, 10) : 0;
    PFN_cuMemFree_v3020 mem_free = (PFN_cuMemFree_v3020)get(gpa, "cuMemFree");
    if (nmany > sizeof(many) / sizeof(many[0]) || (nmany && !mem_free))
        return 2;
    /* each followed by one freed at once: allocators that pack blocks of a
     * size side by side (the sanitizers') leave a gap between two kept */
    for (unsigned long i = 0; i < nmany; i++)
        if (alloc(&many[i], 256) != CUDA_SUCCESS || alloc(&gaps[i], 256) != CUDA_SUCCESS)
            return 12;
    for (unsigned long i = 0; i < nmany; i++)
        if (mem_free(gaps[i]) != CUDA_SUCCESS)
            return 12;
    const char *array_env = getenv("GATE_PROG_ARRAY_MIB");
    if (array_env) {
        PFN_cuArrayCreate_v3020 array_create = (PFN_cuArrayCreate_v3020)get(gpa, "cuArrayCreate");
        CUDA_ARRAY_DESCRIPTOR ad = {.Width = 1024,
                                    .Height = 256 * strtoul(array_env, NULL, 10),
                                    .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                    .NumChannels = 4};
        CUarray arr;
        if (!array_create || array_create(&arr, &ad) != CUDA_SUCCESS)
            return 12;
    }
    uint64_t *host = (uint64_t *)(uintptr_t)buf;
    for (unsigned i = 0; i < GATE_WORDS; i++)
        host[i] = seed * 1000003u + i;
    static const size_t sizes[] = {8, 8};
    CUfunction f = reg("mix", 2, sizes, mix_kernel);
    CUfunction pf = reg("probe", 1, sizes, probe_kernel);
    size_t joined_work = 0; /* CAPTURE 6 */
    int joined_bad = 0;     /* CAPTURE 18 */
    if (wait_for(delay) != 0)
        return 18;
    capturer_t cap = {0};
    pthread_t cap_th = 0;
    if (capture == 3 && capture_start(gpa, &cap, &cap_th) != 0)
        return 17;
    static uint64_t saved[GATE_WORDS]; /* CAPTURE 5: the buffer through the pause */
    int began = -1;                    /* CAPTURE 4 */
    uint64_t cap_from = 0, cap_to = 0; /* the pause (and its capture) */
    CUdeviceptr *mixed = &buf;         /* what the kernels mix (CAPTURE 16: extra, late) */
    uint64_t request = now_ns();
    for (uint64_t k = 0; k < n; k++) {
        if (pauses && k == n / 2) {
            cap_from = now_ns();
            if (capture == 1 || capture == 12)
                set_capturing(blocking);
            else if (capture == 2)
                set_capturing_nb(ls);
            else if (capture == 15) {
                PFN_cuStreamBeginCapture_v10010 begin_pt =
                    (PFN_cuStreamBeginCapture_v10010)get_pt(gpa, "cuStreamBeginCapture");
                if (!begin_pt || begin_pt(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS)
                    return 17;
            } else if (capture == 4)
                arm(ls, get(gpa, "cuStreamBeginCapture"));
            else if (capture == 6 || capture == 18 || capture == 19 || capture == 20) {
                armed_at = log_count();
                arm(ls, entry("cuStreamBeginCapture_v2"));
                if (capture == 19)
                    arm_also(second, entry("cuStreamBeginCapture_v2"));
            } else if (capture == 5) {
                memcpy(saved, host, sizeof(saved));
                arm_push(own_ctx, replace_ctx);
            } else if (capture == 10) {
                memcpy(saved, host, sizeof(saved));
                if (ctx_destroy(own_ctx) != CUDA_SUCCESS)
                    return 12;
            } else if (capture == 13 && fill_contexts(64, gpa, pf) != 0) {
                return 12;
            }
            FILE *m = fopen(paused, "w");
            if (!m)
                return 14;
            fclose(m);
            if (capture == 14) {
                char cap_go[4096], capturing[4096];
                snprintf(cap_go, sizeof(cap_go), "%s.cap", argv[1]);
                snprintf(capturing, sizeof(capturing), "%s.capturing", argv[1]);
                if (wait_for(cap_go) != 0)
                    return 18;
                FILE *c = NULL;
                if (capture_start(gpa, &cap, &cap_th) != 0 || !(c = fopen(capturing, "w")))
                    return 17;
                fclose(c);
            }
            if (capture == 6) {
                size_t at = 0;
                for (int i = 0; !joined_found(log_count, log_get, ls, &at) && access(pause, F_OK);
                     i++) {
                    if (i == 12000)
                        return 18;
                    struct timespec d = {0, 10000000L};
                    nanosleep(&d, NULL);
                }
                void *pargs[] = {&probe};
                if (launch(pf, 1, 1, 1, 1, 1, 1, 0, blocking, pargs, NULL) != CUDA_SUCCESS)
                    return 13;
            }
            if (capture == 20 &&
                launch_stalled(argv[1], arm_stall_prefetch, launch, pf, second, &probe) != 0)
                return 13;
            if (capture == 21 && launch_meets_ordering(argv[1], drv, launch, pf, ls, &probe) != 0)
                return 13;
            if (capture == 18 || capture == 19 || capture == 20) {
                joined_bad = joined_capture_end(argv[1], gpa, ls, capture == 19 ? second : NULL,
                                                log_count, log_get, arm_join, &began);
                if (joined_bad < 0)
                    return 18;
            }
            if (wait_for(pause) != 0)
                return 18;
            if (getenv("GATE_PROG_PAUSE_SWAP")) {
                if (!extra_mib || !mem_free || alloc(&late, 64 << 10) != CUDA_SUCCESS ||
                    mem_free(extra) != CUDA_SUCCESS)
                    return 12;
                swapped = 1;
            }
            if (capture == 1)
                set_capturing(NULL);
            else if (capture == 14 && !capture_finish(&cap, cap_th))
                return 16;
            else if (capture == 2)
                set_capturing_nb(NULL);
            else if (capture == 15) {
                PFN_cuStreamEndCapture_v10000 end_pt =
                    (PFN_cuStreamEndCapture_v10000)get_pt(gpa, "cuStreamEndCapture");
                CUgraph g = NULL;
                if (!end_pt || end_pt(NULL, &g) != CUDA_SUCCESS)
                    return 16;
            } else if (capture == 4) {
                PFN_cuStreamEndCapture_v10000 end =
                    (PFN_cuStreamEndCapture_v10000)get(gpa, "cuStreamEndCapture");
                CUgraph g;
                began = arm_join(); /* -1: the shim never looked (no daemon) */
                if (began >= 0 && (began != CUDA_SUCCESS || !end || end(ls, &g) != CUDA_SUCCESS))
                    return 16;
            } else if (capture == 6) {
                size_t at = 0, stop = log_count();
                uint64_t joined = joined_found(log_count, log_get, ls, &at);
                for (size_t i = at; joined && i < stop; i++)
                    joined_work += strncmp(log_get(i)->fn, "cuMemPrefetch", 13) == 0 &&
                                   log_get(i)->a[3] == joined;
                PFN_cuStreamEndCapture_v10000 end =
                    (PFN_cuStreamEndCapture_v10000)get(gpa, "cuStreamEndCapture");
                CUgraph g;
                began = arm_join();
                if (began == CUDA_SUCCESS && end)
                    (void)end(ls, &g); /* fails: the join broke the capture */
            } else if (capture == 7 || capture == 8) {
                char mark[4096], until[4096];
                snprintf(mark, sizeof(mark), "%s.stalled", argv[1]);
                snprintf(until, sizeof(until), "%s.resume", argv[1]);
                (capture == 7 ? arm_stall : arm_stall_prefetch)(mark, until);
            } else if (capture == 9) {
                CUcontext second = NULL;
                if (!ctx_create || ctx_create(&second, 0, 0) != CUDA_SUCCESS)
                    return 12;
            } else if (capture == 11 || capture == 12) {
                if (!ctx_pop || ctx_pop(&popped) != CUDA_SUCCESS)
                    return 12;
            } else if (capture == 10 || capture == 17) {
                CUdeviceptr was_buf = buf, was_extra = extra_mib ? extra : 0;
                CUcontext again = NULL;
                if (capture == 17) { /* the old context goes only now */
                    memcpy(saved, host, sizeof(saved));
                    if (ctx_destroy(own_ctx) != CUDA_SUCCESS)
                        return 12;
                }
                if (ctx_create(&again, 0, 0) != CUDA_SUCCESS ||
                    alloc(&buf, sizeof(saved)) != CUDA_SUCCESS ||
                    (capture == 17 && extra_mib && alloc(&extra, extra_mib << 20) != CUDA_SUCCESS))
                    return 12;
                began = buf == was_buf && (capture == 10 || !extra_mib || extra == was_extra)
                            ? CUDA_SUCCESS
                            : -1;
                host = (uint64_t *)(uintptr_t)buf;
                memcpy(host, saved, sizeof(saved));
                if (capture == 17 && pause_again(argv[1], pause) != 0)
                    return 18;
            } else if (capture == 5) {
                began = push_join() ? CUDA_SUCCESS : -1;
                if (began != CUDA_SUCCESS)
                    replace_ctx();
                /* the buffer went with the context */
                if (ctx_replaced != 1 || alloc(&buf, sizeof(saved)) != CUDA_SUCCESS)
                    return 12;
                host = (uint64_t *)(uintptr_t)buf;
                memcpy(host, saved, sizeof(saved));
            }
            cap_to = now_ns();
        }
        if (capture == 16 && k == n - n / 4) {
            if (!extra_mib || pause_again(argv[1], pause) != 0)
                return 18;
            mixed = &extra;
        }
        void *args[] = {mixed, &k};
        if (popped) { /* CAPTURE 11: no context current */
            if (launch(f, 1, 1, 1, 1, 1, 1, 0, ls, args, NULL) != CUDA_ERROR_INVALID_CONTEXT ||
                !ctx_push || ctx_push(popped) != CUDA_SUCCESS)
                return 13;
            popped = NULL;
            if (capture == 12) { /* the capture over; on when told */
                char mark[4096], until[4096];
                snprintf(mark, sizeof(mark), "%s.pushed", argv[1]);
                snprintf(until, sizeof(until), "%s.resume", argv[1]);
                set_capturing(NULL);
                FILE *m = fopen(mark, "w");
                if (!m || fclose(m) != 0 || wait_for(until) != 0)
                    return 18;
            }
        }
        if (launch(f, 1, 1, 1, 1, 1, 1, 0, ls, args, NULL) != CUDA_SUCCESS)
            return 13;
    }
    int capture_held = capture != 3 || capture_finish(&cap, cap_th);
    uint64_t sum = 0;
    for (unsigned i = 0; i < GATE_WORDS; i++)
        sum = (sum ^ host[i]) * 1099511628211ull;
    FILE *out = fopen(argv[1], "w");
    if (!out)
        return 14;
    fprintf(out, "checksum %016llx request %llu\n", (unsigned long long)sum,
            (unsigned long long)request);
    for (unsigned long k = 0; k < n; k++)
        fprintf(out, "%llu %llu\n", (unsigned long long)times[k][0],
                (unsigned long long)times[k][1]);
    uint64_t unordered = write_moves(out, log_count, log_get, ordered); /* CAPTURE 9 */
    for (unsigned long i = 0; i < nmany; i++)
        fprintf(out, "M %llu 256\n", (unsigned long long)many[i]);
    if (swapped)
        fprintf(out, "N %llu %u\nF %llu %lu\n", (unsigned long long)late, 64u << 10,
                (unsigned long long)extra, extra_mib << 20);
    if (capture >= 4)
        fprintf(out, "A %d\n", began == CUDA_SUCCESS ? 1 : 0);
    if (capture == 9)
        fprintf(out, "O %llu\n", (unsigned long long)unordered);
    if (capture == 3 || capture == 14)
        fprintf(out, "R %u\n", relaxed());
    if (pauses)
        fprintf(out, "C %llu %llu\n", (unsigned long long)cap_from, (unsigned long long)cap_to);
    fclose(out);
    free(times);
    if (ls && stream_destroy(ls) != CUDA_SUCCESS)
        return 15;
    (void)second; /* CAPTURE 18, 19: kept to the end */
    if (destroyed_in_use())
        return 19;
    if (joined_work)
        return 20;
    if (joined_bad)
        return joined_bad;
    return (capture != 6 && invalidated()) || !capture_held ? 16 : 0;
}
