/*
 * Launch hook cost of libgmux.so against the driver double, side by side in
 * one run: each policy runs in a child process (the shim reads its policy at
 * start), and each child times the same launch loop twice, once through the
 * double's own cuLaunchKernel (no shim) and once through the entry point the
 * shim hands out via cuGetProcAddress. Two kernels: three pointer arguments,
 * already prefetched (steady state without oversubscription), then none (the
 * empty kernel of the GPU launch-rate check). The child also counts
 * malloc/calloc/realloc calls during the shim loop (must be 0).
 *
 * Each policy runs twice: ungated (GMUX_GATE=0) and gated while holding the
 * turn (a gmuxd of its own, forked by this benchmark on a temporary socket;
 * the task is alone, so it keeps the turn: the hook's cost is the gate's
 * fast path). The parent checks from the shim's counters that the gated
 * child really waited once for a turn from the daemon (not local mode).
 *
 * Output: one JSON line per policy, gate and kernel (pointer_args 3 or 0).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "common/settings.h"
#include "daemon/server.h"
#include "fake_cuda/fake_cuda.h"

/* --- counting allocator (this executable interposes malloc for everyone) -- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static _Atomic int counting;
static _Atomic uint64_t allocations;

void *malloc(size_t n)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add(&allocations, 1);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add(&allocations, 1);
    return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add(&allocations, 1);
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double time_loop(PFN_cuLaunchKernel_v4000 launch, CUfunction f, void **args, long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS)
            return -1;
    return (now_ns() - t0) / (double)n;
}

static int child(const char *policy, long n)
{
    const char *gate = getenv("GMUX_GATE");
    gate = gate && strcmp(gate, "1") == 0 ? "holding" : "off";
    void *drv = dlopen("libcuda.so.1", RTLD_NOW);
    if (!drv)
        return 2;
    PFN_cuGetProcAddress_v12000 gpa =
        (PFN_cuGetProcAddress_v12000)dlsym(drv, "cuGetProcAddress_v2");
    fake_entry_fn entry = (fake_entry_fn)dlsym(drv, "fake_entry");
    fake_set_logging_fn logging = (fake_set_logging_fn)dlsym(drv, "fake_set_logging");
    fake_register_kernel_fn reg = (fake_register_kernel_fn)dlsym(drv, "fake_register_kernel");
    if (!gpa || !entry || !logging || !reg)
        return 3;
    void *hooked = NULL, *alloc = NULL;
    gpa("cuLaunchKernel", &hooked, 12000, 0, NULL);
    gpa("cuMemAlloc", &alloc, 12000, 0, NULL);
    PFN_cuLaunchKernel_v4000 native = (PFN_cuLaunchKernel_v4000)entry("cuLaunchKernel");
    if (!hooked || !alloc || !native || hooked == (void *)native)
        return 4; /* not running under the shim */
    logging(0);
    CUdeviceptr a, b, c;
    PFN_cuMemAlloc_v3020 mem_alloc = (PFN_cuMemAlloc_v3020)alloc;
    if (mem_alloc(&a, 1 << 20) || mem_alloc(&b, 1 << 20) || mem_alloc(&c, 1 << 20))
        return 5;
    static const size_t sizes[] = {8, 8, 8, 4};
    CUfunction f = reg("bench", 4, sizes, NULL);
    int count = 1 << 18;
    void *args[] = {&a, &b, &c, &count};
    /* the counter must see an allocation, or a 0 below would prove nothing */
    atomic_store(&counting, 1);
    void *volatile probe = malloc(64);
    free(probe);
    atomic_store(&counting, 0);
    if (atomic_load(&allocations) != 1)
        return 7;
    /* the GPU check's kernel (tests/gpu/shim_prog.cu launch-rate): no arguments */
    CUfunction empty = reg("empty", 0, NULL, NULL);
    void *no_args[1] = {NULL};
    if (!empty)
        return 8;
    const char *budget = getenv("GMUX_BUDGET"), *tpl = getenv("GMUX_TEMPLATES");
    for (int k = 0; k < 2; k++) {
        CUfunction kf = k ? empty : f;
        void **kargs = k ? no_args : args;
        /* warm-up: layout cache, migration stream, first prefetch */
        time_loop((PFN_cuLaunchKernel_v4000)hooked, kf, kargs, 1000);
        time_loop(native, kf, kargs, 1000);
        double best_native = 1e30, best_shim = 1e30;
        uint64_t allocs = 0;
        for (int round = 0; round < 5; round++) {
            double t = time_loop(native, kf, kargs, n);
            best_native = t < best_native ? t : best_native;
            uint64_t before = atomic_load(&allocations);
            atomic_store(&counting, 1);
            t = time_loop((PFN_cuLaunchKernel_v4000)hooked, kf, kargs, n);
            atomic_store(&counting, 0);
            allocs += atomic_load(&allocations) - before;
            best_shim = t < best_shim ? t : best_shim;
        }
        if (best_native < 0 || best_shim < 0)
            return 6;
        printf("{\"bench\":\"shim_launch\",\"policy\":\"%s\",\"gate\":\"%s\",\"launches\":%ld,"
               "\"pointer_args\":%d,\"oversubscribed\":%s,\"templates\":%s,"
               "\"native_ns\":%.1f,\"shim_ns\":%.1f,\"hook_ns\":%.1f,\"mallocs_in_loop\":%llu}\n",
               policy, gate, n * 5, k ? 0 : 3, budget && *budget ? "true" : "false",
               tpl && *tpl ? "true" : "false", best_native, best_shim, best_shim - best_native,
               (unsigned long long)allocs);
    }
    return 0;
}

int main(int argc, char **argv)
{
    long n = 1000000;
    if (argc >= 3 && strcmp(argv[1], "--child") == 0)
        return child(argv[2], argc >= 4 ? atol(argv[3]) : n);
    if (argc >= 2)
        n = atol(argv[1]);
    static const char *const policies[] = {"off", "demand", "proactive"};
    char sock[128], stats[128];
    snprintf(sock, sizeof(sock), "/tmp/gmux_bench_shim_%d.sock", (int)getpid());
    snprintf(stats, sizeof(stats), "/tmp/gmux_bench_shim_%d.json", (int)getpid());
    unlink(sock);
    int ready[2];
    if (pipe(ready) != 0)
        return 1;
    fflush(stdout);
    pid_t daemon = fork();
    if (daemon == 0) {
        close(ready[0]);
        dmn_server_opts_t o;
        char path[256];
        if (dmn_server_opts_from_settings(&o, path, sizeof(path), 0) != GMUX_OK)
            _exit(1);
        o.path = sock;
        static volatile sig_atomic_t stop;
        _exit(dmn_server_run(&o, &stop, ready[1]) == GMUX_OK ? 0 : 1);
    }
    close(ready[1]);
    char byte;
    if (daemon < 0 || read(ready[0], &byte, 1) != 1) {
        fprintf(stderr, "bench_shim: cannot start gmuxd\n");
        return 1;
    }
    close(ready[0]);
    int failed = 0;
    char tpl[128];
    snprintf(tpl, sizeof(tpl), "/tmp/gmux_bench_shim_%d.db", (int)getpid());
    FILE *db = fopen(tpl, "w");
    if (!db)
        return 1;
    /* the bench kernel (a, b, c, int count) as the shim presents it: pppv */
    fprintf(db, "gmux-templates 1\nkernel bench pppv\n"
                "arg 0 T2 off=0 len=2*a3 mode=r\narg 1 T2 off=0 len=2*a3 mode=r\n"
                "arg 2 T2 off=0 len=2*a3 mode=w\nend\ntotal 1\n");
    fclose(db);
    /* rows 0-5: each policy ungated and gated; 6-7: proactive, ungated, with
     * 3 MiB of managed memory over a 2 MiB budget (every launch prefetches),
     * whole regions then template prediction */
    for (size_t i = 0; i < 8; i++) {
        const char *policy = i < 6 ? policies[i / 2] : "proactive";
        int gated = i < 6 ? (int)(i % 2) : 0;
        int oversub = i >= 6, templates = i == 7;
        unlink(stats);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            char count[32];
            snprintf(count, sizeof(count), "%ld", n);
            setenv("LD_PRELOAD", GMUX_SHIM_PATH, 1);
            setenv("LD_LIBRARY_PATH", GMUX_FAKE_CUDA_DIR, 1);
            setenv("GMUX_POLICY", policy, 1);
            setenv("GMUX_GATE", gated ? "1" : "0", 1);
            setenv("GMUX_SOCKET", sock, 1);
            setenv("GMUX_GATE_IDLE_MS", "60000", 1); /* keep the turn between the loops */
            setenv("GMUX_SHIM_STATS", stats, 1);
            if (oversub)
                setenv("GMUX_BUDGET", "2097152", 1);
            if (templates)
                setenv("GMUX_TEMPLATES", tpl, 1);
            execl("/proc/self/exe", argv[0], "--child", policy, count, (char *)NULL);
            _exit(127);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_shim: policy %s failed (status %d)\n", policy, st);
            failed = 1;
            continue;
        }
        char json[4096] = {0};
        FILE *f = fopen(stats, "r");
        size_t got = f ? fread(json, 1, sizeof(json) - 1, f) : 0;
        if (f)
            fclose(f);
        const char *w = got ? strstr(json, "\"gate_waits\":") : NULL;
        long waits = w ? atol(w + strlen("\"gate_waits\":")) : -1;
        if (waits != (gated ? 1 : 0)) {
            fprintf(stderr, "bench_shim: policy %s gate %d: %ld waits for the turn, not %d\n",
                    policy, gated, waits, gated);
            failed = 1;
        }
        const char *t = got ? strstr(json, "\"template_launches\":") : NULL;
        long narrowed = t ? atol(t + strlen("\"template_launches\":")) : -1;
        if ((templates && narrowed <= 0) || (!templates && narrowed != 0)) {
            fprintf(stderr, "bench_shim: row %zu: %ld launches narrowed by templates\n", i,
                    narrowed);
            failed = 1;
        }
    }
    kill(daemon, SIGKILL);
    waitpid(daemon, NULL, 0);
    unlink(sock);
    unlink(stats);
    unlink(tpl);
    return failed;
}
