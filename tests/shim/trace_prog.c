/*
 * A small "CUDA program" for the recording tests, run against the driver
 * double: two allocations, six launches of `scale` (a, b, n) with growing
 * n, one launch of `fill` (b, n), two of `peek` (b, faulted) with the same
 * shape (the first "faults", the second does not), then both frees, then a
 * VMM mapping of 2 MiB, mapped and unmapped (v=...); with TRACE_PROG_FORK=1
 * it forks after the launches a child that exits at once (normally); with
 * TRACE_PROG_RELOAD=1 it then unloads the module and launches, at peek's
 * handle, another kernel, `poke` (b, 0), once. Its host
 * kernels declare what they touch and how long they take through the
 * double's fake CUPTI (fake_touch, fake_spend). With TRACE_PROG_CAPTURE=1 a
 * second thread captures a stream of its own in mode GLOBAL from before the
 * first launch to after the last (exit 23 if the capture was invalidated:
 * the double does that when a thread not in RELAXED mode makes a potentially
 * unsafe call, such as the recorder's synchronization, meanwhile; exit 24 if
 * this thread's mode was not GLOBAL after the launches; exit 25 if no such
 * call was made in RELAXED mode meanwhile, the double's count). Prints the
 * two addresses ("a=... b=...") for the test to compare with the trace, and
 * the GMUX_GATE it was given ("gate=...").
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "fake_cuda/fake_cuda.h"

#define N_MAX 1024 /* floats per buffer */

static fake_touch_fn touch;
static fake_spend_fn spend;

static void scale(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)grid;
    (void)block;
    float *a = (float *)(uintptr_t) * (CUdeviceptr *)args[0];
    float *b = (float *)(uintptr_t) * (CUdeviceptr *)args[1];
    uint64_t n = *(uint64_t *)args[2];
    for (uint64_t i = 0; i < n; i++)
        b[i] = 2.0f * a[i];
    touch(a, n * sizeof(float), 1);
    touch(b, n * sizeof(float), 2);
    spend(10 * n);
}

static void fill(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)grid;
    (void)block;
    float *b = (float *)(uintptr_t) * (CUdeviceptr *)args[0];
    uint64_t n = *(uint64_t *)args[1];
    for (uint64_t i = 0; i < n; i++)
        b[i] = 1.0f;
    touch(b, n * sizeof(float), 2);
    spend(777);
}

/* Reads b; "faults" (reports the range, as CUPTI reports faulted pages) only
 * when told to, and then, on managed memory (GMUX_POLICY demand), takes longer
 * as a kernel waiting for its pages does. On plain memory (policy off, gmux
 * trace's timing pass) it takes 250 ns, else 300: the test tells the passes'
 * times apart. */
static void peek(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)grid;
    (void)block;
    const float *b = (const float *)(uintptr_t) * (CUdeviceptr *)args[0];
    uint64_t faulted = *(uint64_t *)args[1];
    const char *policy = getenv("GMUX_POLICY");
    bool off = policy && strcmp(policy, "off") == 0;
    bool demand = policy && strcmp(policy, "demand") == 0;
    if (faulted)
        touch(b, 64, 1);
    spend(faulted && demand ? 5000 : off ? 250 : 300);
}

static void *get(PFN_cuGetProcAddress_v12000 gpa, const char *base)
{
    void *p = NULL;
    return gpa(base, &p, 12000, 0, NULL) == CUDA_SUCCESS ? p : NULL;
}

/* TRACE_PROG_CAPTURE: the capturing thread begins, signals, waits for the
 * end of the launches, ends. Under cap_mu. */
static pthread_mutex_t cap_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cap_cv = PTHREAD_COND_INITIALIZER;
static int cap_state; /* 1: begun (cap_r says how), 2: the launches are done */
static CUresult cap_r;
static CUstream cap_s;
static PFN_cuStreamBeginCapture_v10010 cap_begin;
static PFN_cuStreamEndCapture_v10000 cap_end;

static void *capture_thread(void *arg)
{
    (void)arg;
    CUresult r = cap_begin(cap_s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    pthread_mutex_lock(&cap_mu);
    cap_r = r;
    cap_state = 1;
    pthread_cond_broadcast(&cap_cv);
    while (cap_state != 2)
        pthread_cond_wait(&cap_cv, &cap_mu);
    pthread_mutex_unlock(&cap_mu);
    CUgraph g = NULL;
    if (r == CUDA_SUCCESS)
        cap_r = cap_end(cap_s, &g);
    return NULL;
}

int main(void)
{
    void *drv = dlopen("libcuda.so.1", RTLD_NOW);
    if (!drv)
        return 10;
    PFN_cuGetProcAddress_v12000 gpa =
        (PFN_cuGetProcAddress_v12000)dlsym(drv, "cuGetProcAddress_v2");
    fake_register_kernel_fn reg = (fake_register_kernel_fn)dlsym(drv, "fake_register_kernel");
    touch = (fake_touch_fn)dlsym(drv, "fake_touch");
    spend = (fake_spend_fn)dlsym(drv, "fake_spend");
    if (!gpa || !reg || !touch || !spend)
        return 11;
    PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)get(gpa, "cuMemAlloc");
    PFN_cuMemFree_v3020 mfree = (PFN_cuMemFree_v3020)get(gpa, "cuMemFree");
    PFN_cuLaunchKernel_v4000 launch = (PFN_cuLaunchKernel_v4000)get(gpa, "cuLaunchKernel");
    if (!alloc || !mfree || !launch)
        return 12;
    CUdeviceptr a, b;
    if (alloc(&a, N_MAX * sizeof(float)) || alloc(&b, N_MAX * sizeof(float)))
        return 13;
    const char *cap_env = getenv("TRACE_PROG_CAPTURE");
    bool capture = cap_env && strcmp(cap_env, "1") == 0;
    pthread_t cap_th;
    if (capture) {
        PFN_cuStreamCreate_v2000 screate = (PFN_cuStreamCreate_v2000)get(gpa, "cuStreamCreate");
        cap_begin = (PFN_cuStreamBeginCapture_v10010)get(gpa, "cuStreamBeginCapture");
        cap_end = (PFN_cuStreamEndCapture_v10000)get(gpa, "cuStreamEndCapture");
        if (!screate || !cap_begin || !cap_end ||
            screate(&cap_s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
            pthread_create(&cap_th, NULL, capture_thread, NULL) != 0)
            return 23;
        pthread_mutex_lock(&cap_mu);
        while (cap_state != 1)
            pthread_cond_wait(&cap_cv, &cap_mu);
        pthread_mutex_unlock(&cap_mu);
        if (cap_r != CUDA_SUCCESS)
            return 23;
    }
    static const size_t s3[] = {8, 8, 8}, s2[] = {8, 8};
    CUfunction fs = reg("scale", 3, s3, scale), ff = reg("fill", 2, s2, fill),
               fp = reg("peek", 2, s2, peek);
    if (!fs || !ff || !fp)
        return 14;
    for (uint64_t k = 1; k <= 6; k++) {
        uint64_t n = 128 * k;
        void *args[] = {&a, &b, &n};
        if (launch(fs, (unsigned)k, 1, 1, 128, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS)
            return 15;
    }
    uint64_t n = 64;
    void *args[] = {&b, &n};
    /* TRACE_PROG_SKIP_FILL_WHEN_OFF=1: the run under policy off (gmux trace's
     * timing pass) leaves fill out, so the two passes launch differently */
    const char *skip = getenv("TRACE_PROG_SKIP_FILL_WHEN_OFF");
    const char *policy = getenv("GMUX_POLICY");
    bool skip_fill = skip && strcmp(skip, "1") == 0 && policy && strcmp(policy, "off") == 0;
    if (!skip_fill && launch(ff, 1, 2, 3, 32, 4, 1, 0, NULL, args, NULL) != CUDA_SUCCESS)
        return 16;
    for (int i = 0; i < 2; i++) {
        uint64_t faulted = i == 0;
        void *pargs[] = {&b, &faulted};
        if (launch(fp, 2, 1, 1, 64, 1, 1, 0, NULL, pargs, NULL) != CUDA_SUCCESS)
            return 18;
    }
    if (capture) {
        /* the recorder's calls left this thread's capture mode as it was (GLOBAL) */
        PFN_cuThreadExchangeStreamCaptureMode_v10010 xmode =
            (PFN_cuThreadExchangeStreamCaptureMode_v10010)get(gpa,
                                                              "cuThreadExchangeStreamCaptureMode");
        CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_GLOBAL;
        if (!xmode || xmode(&m) != CUDA_SUCCESS || m != CU_STREAM_CAPTURE_MODE_GLOBAL)
            return 24;
        pthread_mutex_lock(&cap_mu);
        cap_state = 2;
        pthread_cond_broadcast(&cap_cv);
        pthread_mutex_unlock(&cap_mu);
        if (pthread_join(cap_th, NULL) != 0 || cap_r != CUDA_SUCCESS)
            return 23;
        fake_unsafe_relaxed_fn relaxed = (fake_unsafe_relaxed_fn)dlsym(drv, "fake_unsafe_relaxed");
        if (!relaxed || relaxed() == 0)
            return 25;
    }
    const char *fork_env = getenv("TRACE_PROG_FORK");
    if (fork_env && strcmp(fork_env, "1") == 0) {
        pid_t child = fork();
        if (child == 0)
            exit(0); /* flushes stdio: what the child's copy of a buffer holds */
        int status;
        if (child < 0 || waitpid(child, &status, 0) != child || status != 0)
            return 20;
    }
    const char *reload_env = getenv("TRACE_PROG_RELOAD");
    if (reload_env && strcmp(reload_env, "1") == 0) {
        fake_reload_kernel_fn reload = (fake_reload_kernel_fn)dlsym(drv, "fake_reload_kernel");
        PFN_cuModuleUnload_v2000 unload = (PFN_cuModuleUnload_v2000)get(gpa, "cuModuleUnload");
        if (!reload || !unload || unload((CUmodule)0x1000) != CUDA_SUCCESS)
            return 21;
        reload(fp, "poke", 2, s2, peek);
        uint64_t zero = 0;
        void *pargs[] = {&b, &zero};
        if (launch(fp, 1, 1, 1, 32, 1, 1, 0, NULL, pargs, NULL) != CUDA_SUCCESS)
            return 22;
    }
    if (mfree(a) || mfree(b))
        return 17;
    PFN_cuMemAddressReserve_v10020 reserve =
        (PFN_cuMemAddressReserve_v10020)get(gpa, "cuMemAddressReserve");
    PFN_cuMemCreate_v10020 create = (PFN_cuMemCreate_v10020)get(gpa, "cuMemCreate");
    PFN_cuMemMap_v10020 map = (PFN_cuMemMap_v10020)get(gpa, "cuMemMap");
    PFN_cuMemUnmap_v10020 unmap = (PFN_cuMemUnmap_v10020)get(gpa, "cuMemUnmap");
    PFN_cuMemRelease_v10020 release = (PFN_cuMemRelease_v10020)get(gpa, "cuMemRelease");
    CUdeviceptr v;
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    if (!reserve || !create || !map || !unmap || !release || reserve(&v, 2 << 20, 0, 0, 0) ||
        create(&h, 2 << 20, &prop, 0) || map(v, 2 << 20, 0, h, 0) || unmap(v, 2 << 20) ||
        release(h))
        return 19;
    const char *gate = getenv("GMUX_GATE");
    printf("a=%llu b=%llu v=%llu gate=%s\n", (unsigned long long)a, (unsigned long long)b,
           (unsigned long long)v, gate ? gate : "unset");
    return 0;
}
