/*
 * pcie_floor: what the bus itself costs a kernel, without gmux (issue 8).
 *
 * A kernel-initiated put through a proxy thread crosses the bus twice per
 * direction at least: the kernel's descriptor to host memory, and the
 * peer's signal from host memory into the polling kernel. This program
 * times those primitives on one thread of one block, so the netdev round
 * trips can be set against the floor any proxy design has on this machine:
 *   host_load      a system-scope load of pinned host memory (dependent)
 *   host_cas       a system-scope compare-and-swap on pinned host memory
 *   dev_cas        the same on device memory
 *   fence          a system-scope release fence with nothing outstanding
 *   store_fence    a relaxed store to host memory, then the fence
 *   push_host      what a gmux put's push does: CAS on a host tail, fence,
 *                  eight relaxed stores (the descriptor)
 *   push_dev       the same with the tail in device memory
 *   k2c_rtt        a kernel stores a flag in host memory, a CPU thread
 *                  spinning on it answers with another, the kernel polls it
 *   k2c_rtt_fenced the same with a release fence before each kernel store
 *   k2k_host_rtt   two kernels (two streams) ping-pong through host memory
 *   k2k_dev_rtt    the same through device memory
 *   globaltimer_tick_ns  the smallest step of %globaltimer seen
 * Prints one JSON record (nanoseconds, means over ITERS). Everything is timed
 * on the host around whole kernels, the empty kernel's time (launch and
 * synchronisation) taken off. (The first H200 run read 0 ns for six of the
 * primitives: the push loops wrote their slots past the end of the 4 KiB
 * pinned buffer, over the results that followed it. The buffer is 64 KiB now.)
 * Exit 77 without a GPU. Every wait is bounded (2 s of %globaltimer, or 4 s
 * on the CPU).
 */
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cuda/atomic>
#include <cuda_runtime.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                        \
                         cudaGetErrorString(e_));                                                  \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

typedef cuda::atomic_ref<uint64_t, cuda::thread_scope_system> sysref;

enum { P_LOAD, P_CAS, P_DEVCAS, P_FENCE, P_STFENCE, P_PUSH_HOST, P_PUSH_DEV, P_N };
static const char *const prim_names[P_N] = {"host_load_ns", "host_cas_ns",    "dev_cas_ns",
                                            "fence_ns",     "store_fence_ns", "push_host_ns",
                                            "push_dev_ns"};
static const int ITERS = 20000;
static const uint64_t LIMIT_NS = 2000000000ull;

__device__ static uint64_t now_ns()
{
    uint64_t t;
    /* "memory": loads and stores stay on their side of the read */
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : : "memory");
    return t;
}

__device__ static void fence_sys()
{
    cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system);
}

/* A push as gmux does it: claim a ticket on tail, fence, write 8 words. */
__device__ static void push(uint64_t *tail, uint64_t *slots, uint64_t i)
{
    uint64_t t = sysref(*tail).load(cuda::memory_order_relaxed);
    while (!sysref(*tail).compare_exchange_weak(t, t + 1, cuda::memory_order_relaxed,
                                                cuda::memory_order_relaxed))
        ;
    fence_sys();
    uint64_t *slot = slots + (t & 63) * 8;
    for (int w = 0; w < 8; w++)
        sysref(slot[w]).store(i + (uint64_t)w, cuda::memory_order_relaxed);
}

/* Runs primitive p ITERS times. host: 1 KiB of pinned memory (words 0..7
 * scratch, 64.. the 64 slots of 8 words); dev: the same on the device. */
__global__ void k_prim(int p, uint64_t *host, uint64_t *dev, uint64_t *sink)
{
    uint64_t acc = 0;
    for (int i = 0; i < ITERS; i++) {
        switch (p) {
        case P_LOAD: /* the address depends on the last value: no overlap */
            acc += sysref(host[acc & 1 ? 1 : 0]).load(cuda::memory_order_relaxed);
            break;
        case P_CAS:
        case P_DEVCAS: {
            uint64_t e = acc;
            sysref((p == P_CAS ? host : dev)[2])
                .compare_exchange_strong(e, e + 1, cuda::memory_order_relaxed,
                                         cuda::memory_order_relaxed);
            acc = e + 1;
            break;
        }
        case P_FENCE:
            fence_sys();
            break;
        case P_STFENCE:
            sysref(host[3]).store((uint64_t)i, cuda::memory_order_relaxed);
            fence_sys();
            break;
        case P_PUSH_HOST:
            push(&host[4], host + 64, (uint64_t)i);
            break;
        case P_PUSH_DEV:
            push(&dev[4], host + 64, (uint64_t)i);
            break;
        }
    }
    *sink = acc;
}

__global__ void k_empty()
{
}

/* The smallest nonzero step between successive %globaltimer reads (100
 * steps, at most 2 s). */
__global__ void k_tick(uint64_t *out)
{
    uint64_t last = now_ns(), start = last, best = ~0ull;
    /* bounded in reads too: a timer that never moves must not hang it */
    for (long reads = 0, steps = 0; steps < 100 && last - start < LIMIT_NS && reads < (1l << 28);
         reads++) {
        uint64_t t = now_ns();
        if (t != last) {
            best = t - last < best ? t - last : best;
            last = t;
            steps++;
        }
    }
    *out = best;
}

/* Ping: stores *mine = i (after a fence if asked), waits for *theirs == i.
 * Pong (first = false): waits first, then answers. *bad_p is set if a wait
 * ran out. */
__global__ void k_pingpong(uint64_t *mine, uint64_t *theirs, bool first, bool fenced, int *bad_p)
{
    uint64_t deadline = now_ns() + LIMIT_NS;
    for (uint64_t i = 1; i <= (uint64_t)ITERS; i++) {
        if (first) {
            if (fenced)
                fence_sys();
            sysref(*mine).store(i, cuda::memory_order_relaxed);
        }
        while (sysref(*theirs).load(cuda::memory_order_acquire) != i)
            if (now_ns() > deadline) {
                *bad_p = 1;
                return;
            }
        if (!first) {
            if (fenced)
                fence_sys();
            sysref(*mine).store(i, cuda::memory_order_relaxed);
        }
    }
}

/* The CPU side of k2c: answers each flag the kernel raises. */
static bool cpu_pong(volatile uint64_t *k2c, volatile uint64_t *c2k)
{
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4);
    for (uint64_t i = 1; i <= (uint64_t)ITERS; i++) {
        while (__atomic_load_n(k2c, __ATOMIC_ACQUIRE) != i)
            if (std::chrono::steady_clock::now() > deadline)
                return false;
        __atomic_store_n(c2k, i, __ATOMIC_RELEASE);
    }
    return true;
}

static double host_ns()
{
    return (double)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/* ns per iteration of the kernel run(s) launched by f, the empty kernel's
 * time (launch and synchronisation) taken off. */
template <typename F> static double timed(F f, double empty_ns)
{
    double t0 = host_ns();
    f();
    CK(cudaDeviceSynchronize());
    return (host_ns() - t0 - empty_ns) / ITERS;
}

static double k2c(uint64_t *host, int *bad, bool fenced, double empty_ns)
{
    host[0] = host[1] = 0;
    *bad = 0;
    bool ok = true;
    double ns = timed(
        [&] {
            k_pingpong<<<1, 1, 0, 0>>>(&host[0], &host[1], true, fenced, bad);
            ok = cpu_pong(&host[0], &host[1]);
        },
        empty_ns);
    return ok && !*bad ? ns : -1;
}

static double k2k(uint64_t *flags, bool on_host, int *bad, double empty_ns)
{
    *bad = 0;
    if (on_host)
        flags[0] = flags[1] = 0;
    else
        CK(cudaMemset(flags, 0, 2 * sizeof(uint64_t)));
    cudaStream_t a, b;
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    CK(cudaDeviceSynchronize());
    double ns = timed(
        [&] {
            k_pingpong<<<1, 1, 0, b>>>(&flags[1], &flags[0], false, false, bad);
            k_pingpong<<<1, 1, 0, a>>>(&flags[0], &flags[1], true, false, bad);
        },
        empty_ns);
    CK(cudaStreamDestroy(a));
    CK(cudaStreamDestroy(b));
    return *bad ? -1 : ns;
}

int main()
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        std::printf("pcie_floor: no GPU: skipped\n");
        return 77;
    }
    uint64_t *host = nullptr, *dev = nullptr, *devflags = nullptr, *sink = nullptr;
    int *bad = nullptr;
    CK(cudaHostAlloc(&host, 65536,
                     cudaHostAllocMapped | cudaHostAllocPortable)); /* slots: words 64..575 */
    CK(cudaHostAlloc(&bad, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
    CK(cudaMalloc(&dev, 4096));
    CK(cudaMalloc(&devflags, 4096));
    CK(cudaMalloc(&sink, 8));
    CK(cudaMemset(dev, 0, 4096));
    *bad = 0;
    for (int i = 0; i < 512; i++)
        host[i] = 0;
    /* warm-up, then the empty kernel's launch and synchronisation */
    k_empty<<<1, 1, 0, 0>>>();
    CK(cudaDeviceSynchronize());
    double empty_ns = 1e30;
    for (int r = 0; r < 5; r++) {
        double t = timed([] { k_empty<<<1, 1, 0, 0>>>(); }, 0) * ITERS;
        empty_ns = t < empty_ns ? t : empty_ns;
    }
    double prim[P_N];
    for (int p = 0; p < P_N; p++) {
        k_prim<<<1, 1, 0, 0>>>(p, host, dev, sink); /* warm-up */
        CK(cudaDeviceSynchronize());
        prim[p] = timed([&] { k_prim<<<1, 1, 0, 0>>>(p, host, dev, sink); }, empty_ns);
    }
    k2c(host, bad, false, empty_ns); /* warm-up */
    double k2c_plain = k2c(host, bad, false, empty_ns);
    double k2c_fenced = k2c(host, bad, true, empty_ns);
    double k2k_host = k2k(&host[8], true, bad, empty_ns);
    double k2k_dev = k2k(devflags, false, bad, empty_ns);
    k_tick<<<1, 1, 0, 0>>>(sink);
    uint64_t tick = 0;
    CK(cudaMemcpy(&tick, sink, sizeof(tick), cudaMemcpyDeviceToHost));
    bool ok = k2c_plain > 0 && k2c_fenced > 0 && k2k_host > 0 && k2k_dev > 0;
    std::printf("{\"check\":\"pcie_floor\",\"iters\":%d,\"empty_kernel_ns\":%.0f", ITERS, empty_ns);
    for (int p = 0; p < P_N; p++)
        std::printf(",\"%s\":%.0f", prim_names[p], prim[p]);
    std::printf(",\"k2c_rtt_ns\":%.0f,\"k2c_rtt_fenced_ns\":%.0f,\"k2k_host_rtt_ns\":%.0f,"
                "\"k2k_dev_rtt_ns\":%.0f,\"globaltimer_tick_ns\":%llu,\"ok\":%s}\n",
                k2c_plain, k2c_fenced, k2k_host, k2k_dev, (unsigned long long)tick,
                ok ? "true" : "false");
    CK(cudaFreeHost(host));
    CK(cudaFreeHost(bad));
    CK(cudaFree(dev));
    CK(cudaFree(devflags));
    CK(cudaFree(sink));
    return ok ? 0 : 1;
}
