/*
 * GPU programs for the libgmux.so checks (tests/gpu/shim_checks.sh runs each
 * natively and under `gmux run`, and compares the RESULT lines):
 *   vecadd-driver    driver API only: cuMemAlloc, cuMemcpy, cuLaunchKernel
 *   vecadd-runtime   runtime API: cudaMalloc, cudaMemcpy, <<<>>>
 *   managed-streams  cudaMallocManaged, kernels on four streams
 *   graph            stream capture, a child graph node, cudaGraphInstantiate, ten
 *                    graph launches
 *   graph-cond       conditional nodes (CUDA 12.4+): a kernel, an IF and a WHILE (three
 *                    rounds a launch) made with cudaGraphAddNode, bodies captured, ten
 *                    graph launches
 *   graph-prefetch   the program's own cuMemPrefetchAsync captured into a graph (to the
 *                    device before its kernel, to the host after it) on managed memory,
 *                    a plain kernel on the same buffer after each of ten graph launches;
 *                    where the driver refuses a prefetch in a capture it prints
 *                    "RESULT graph-prefetch unsupported-N" (N the error), natively and
 *                    under gmux alike
 *   vmm              cuMemCreate / cuMemAddressReserve / cuMemMap, kernel, copy back
 *   ipc              whether cudaIpcGetMemHandle shares cudaMalloc'd memory
 *   launch-rate N    N empty kernels, prints launches per second
 *   launch-rate-managed N  the same with 64 MiB of managed memory allocated
 *                    (and touched) first: what managed memory in the context
 *                    costs the driver's launches natively
 * Each prints "RESULT <name> <checksum>" (integer arithmetic: exact).
 * Exit 77 without a GPU.
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        int rc_ = (int)(x);                                                                        \
        if (rc_ != 0) {                                                                            \
            std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, rc_);          \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

extern "C" __global__ void k_vadd(const uint32_t *a, const uint32_t *b, uint32_t *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] * 3u + b[i];
}

__global__ void k_scale(uint32_t *x, uint32_t mul, uint32_t add, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * mul + add;
}

__global__ void k_empty()
{
}

static uint64_t checksum(const uint32_t *v, int n)
{
    uint64_t s = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        s = (s ^ v[i]) * 1099511628211ull;
    return s;
}

static const int N = 1 << 22;

static int vecadd_driver()
{
    CK(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUfunction f;
    CK(cudaGetFuncBySymbol(&f, (const void *)k_vadd));
    std::vector<uint32_t> a(N), b(N), c(N);
    for (int i = 0; i < N; i++) {
        a[i] = (uint32_t)i;
        b[i] = (uint32_t)(i * 7);
    }
    CUdeviceptr da, db, dc;
    CK(cuMemAlloc(&da, N * 4));
    CK(cuMemAlloc(&db, N * 4));
    CK(cuMemAlloc(&dc, N * 4));
    CK(cuMemcpyHtoD(da, a.data(), N * 4));
    CK(cuMemcpyHtoD(db, b.data(), N * 4));
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    for (int it = 0; it < 5; it++)
        CK(cuLaunchKernel(f, (N + 255) / 256, 1, 1, 256, 1, 1, 0, 0, args, nullptr));
    CK(cuMemcpyDtoH(c.data(), dc, N * 4));
    CK(cuMemFree(da));
    CK(cuMemFree(db));
    CK(cuMemFree(dc));
    std::printf("RESULT vecadd-driver %016llx\n", (unsigned long long)checksum(c.data(), N));
    return 0;
}

static int vecadd_runtime()
{
    std::vector<uint32_t> a(N), b(N), c(N);
    for (int i = 0; i < N; i++) {
        a[i] = (uint32_t)(i ^ 0x5a5a);
        b[i] = (uint32_t)(3 * i + 1);
    }
    uint32_t *da, *db, *dc;
    CK(cudaMalloc(&da, N * 4));
    CK(cudaMalloc(&db, N * 4));
    CK(cudaMalloc(&dc, N * 4));
    CK(cudaMemcpy(da, a.data(), N * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), N * 4, cudaMemcpyHostToDevice));
    k_vadd<<<(N + 255) / 256, 256, 0, 0>>>(da, db, dc, N);
    k_scale<<<(N + 255) / 256, 256, 0, 0>>>(dc, 5, 11, N);
    CK(cudaGetLastError());
    CK(cudaMemcpy(c.data(), dc, N * 4, cudaMemcpyDeviceToHost));
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    std::printf("RESULT vecadd-runtime %016llx\n", (unsigned long long)checksum(c.data(), N));
    return 0;
}

static int managed_streams()
{
    const int S = 4, M = N / S;
    uint32_t *x;
    CK(cudaMallocManaged(&x, (size_t)N * 4));
    for (int i = 0; i < N; i++)
        x[i] = (uint32_t)i;
    cudaStream_t s[S];
    for (int k = 0; k < S; k++)
        CK(cudaStreamCreate(&s[k]));
    for (int it = 0; it < 10; it++)
        for (int k = 0; k < S; k++)
            k_scale<<<(M + 255) / 256, 256, 0, s[k]>>>(x + k * M, 3, (uint32_t)(k + it), M);
    for (int k = 0; k < S; k++) {
        CK(cudaStreamSynchronize(s[k]));
        CK(cudaStreamDestroy(s[k]));
    }
    CK(cudaGetLastError());
    std::printf("RESULT managed-streams %016llx\n", (unsigned long long)checksum(x, N));
    CK(cudaFree(x));
    return 0;
}

static int graph()
{
    uint32_t *x, *y;
    CK(cudaMalloc(&x, N * 4));
    CK(cudaMalloc(&y, N * 4));
    CK(cudaMemset(x, 1, N * 4));
    CK(cudaMemset(y, 2, N * 4));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaGraph_t g, inner;
    cudaGraphExec_t exec;
    /* the second kernel sits in a child graph: libgmux.so must walk into it */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    k_scale<<<(N + 255) / 256, 256, 0, s>>>(x, 3, 1, N);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    k_vadd<<<(N + 255) / 256, 256, 0, s>>>(x, y, y, N);
    CK(cudaStreamEndCapture(s, &inner));
    cudaGraphNode_t root, child;
    size_t nroot = 1;
    CK(cudaGraphGetNodes(g, &root, &nroot));
    CK(cudaGraphAddChildGraphNode(&child, g, &root, 1, inner));
    CK(cudaGraphInstantiate(&exec, g, 0));
    for (int it = 0; it < 10; it++)
        CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    std::vector<uint32_t> h(N);
    CK(cudaMemcpy(h.data(), y, N * 4, cudaMemcpyDeviceToHost));
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(g));
    CK(cudaGraphDestroy(inner));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(x));
    CK(cudaFree(y));
    std::printf("RESULT graph %016llx\n", (unsigned long long)checksum(h.data(), N));
    return 0;
}

/* Counts the WHILE body's rounds: three per graph launch (count starts each
 * launch at a multiple of three). */
__global__ void k_while_ctl(cudaGraphConditionalHandle h, uint32_t *count)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        cudaGraphSetConditional(h, ++*count % 3 != 0);
}

/* Fills body with kernels captured on s (a conditional node's body graph). */
static void capture_into(cudaStream_t s, cudaGraph_t body)
{
    CK(cudaStreamBeginCaptureToGraph(s, body, NULL, NULL, 0, cudaStreamCaptureModeGlobal));
}

static int graph_cond()
{
    uint32_t *x, *y, *w, *z, *count;
    for (uint32_t **b : {&x, &y, &w, &z}) {
        CK(cudaMalloc(b, N * 4));
        CK(cudaMemset(*b, 1, N * 4));
    }
    CK(cudaMalloc(&count, 4));
    CK(cudaMemset(count, 0, 4));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaGraph_t g, done;
    CK(cudaGraphCreate(&g, 0));
    /* a plain kernel, an IF whose body adds y into w (taken: default 1 at
     * every launch), a WHILE whose body scales z, three rounds a launch;
     * libgmux.so sees the bodies only where cudaGraphAddNode hands them out */
    capture_into(s, g);
    k_scale<<<(N + 255) / 256, 256, 0, s>>>(x, 3, 1, N);
    CK(cudaStreamEndCapture(s, &done));
    cudaGraphConditionalHandle hif, hwhile;
    CK(cudaGraphConditionalHandleCreate(&hif, g, 1, cudaGraphCondAssignDefault));
    CK(cudaGraphConditionalHandleCreate(&hwhile, g, 1, cudaGraphCondAssignDefault));
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = hif;
    p.conditional.type = cudaGraphCondTypeIf;
    p.conditional.size = 1;
    cudaGraphNode_t nif, nwhile;
    CK(cudaGraphAddNode(&nif, g, NULL, NULL, 0, &p));
    capture_into(s, p.conditional.phGraph_out[0]);
    k_vadd<<<(N + 255) / 256, 256, 0, s>>>(y, w, w, N);
    CK(cudaStreamEndCapture(s, &done));
    p = {};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = hwhile;
    p.conditional.type = cudaGraphCondTypeWhile;
    p.conditional.size = 1;
    CK(cudaGraphAddNode(&nwhile, g, NULL, NULL, 0, &p));
    capture_into(s, p.conditional.phGraph_out[0]);
    k_scale<<<(N + 255) / 256, 256, 0, s>>>(z, 5, 1, N);
    k_while_ctl<<<1, 1, 0, s>>>(hwhile, count);
    CK(cudaStreamEndCapture(s, &done));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, g, 0));
    for (int it = 0; it < 10; it++)
        CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    uint32_t rounds = 0;
    CK(cudaMemcpy(&rounds, count, 4, cudaMemcpyDeviceToHost));
    if (rounds != 30) {
        std::fprintf(stderr, "graph-cond: the WHILE body ran %u times, not 30\n", rounds);
        return 1;
    }
    std::vector<uint32_t> h(N);
    uint64_t sum = 0;
    for (uint32_t *b : {x, w, z}) {
        CK(cudaMemcpy(h.data(), b, N * 4, cudaMemcpyDeviceToHost));
        sum = sum * 31 + checksum(h.data(), N);
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    for (uint32_t *b : {x, y, w, z, count})
        CK(cudaFree(b));
    std::printf("RESULT graph-cond %016llx\n", (unsigned long long)sum);
    return 0;
}

/* The program's own prefetches inside a graph: libgmux.so applies them at each
 * graph launch (docs/shim.md), so after the graph moves x to the host, the
 * plain launch that reads x must find it where it is (prefetched again, or
 * faulted in): the result is the same either way, which is what is checked. */
static int graph_prefetch()
{
    uint32_t *x, *y;
    CK(cudaMallocManaged(&x, (size_t)N * 4));
    CK(cudaMallocManaged(&y, (size_t)N * 4));
    for (int i = 0; i < N; i++) {
        x[i] = (uint32_t)i;
        y[i] = 7u;
    }
    int dev = 0;
    CK(cudaGetDevice(&dev));
    CUmemLocation on_dev = {CU_MEM_LOCATION_TYPE_DEVICE, dev};
    CUmemLocation on_host = {CU_MEM_LOCATION_TYPE_HOST, 0};
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CUresult r = cuMemPrefetchAsync((CUdeviceptr)x, (size_t)N * 4, on_dev, 0, (CUstream)s);
    if (r == CUDA_SUCCESS) {
        k_scale<<<(N + 255) / 256, 256, 0, s>>>(x, 3, 1, N);
        r = cuMemPrefetchAsync((CUdeviceptr)x, (size_t)N * 4, on_host, 0, (CUstream)s);
    }
    cudaGraph_t g = NULL;
    cudaError_t end = cudaStreamEndCapture(s, &g);
    if (r != CUDA_SUCCESS || end != cudaSuccess) {
        (void)cudaGetLastError();
        if (g)
            CK(cudaGraphDestroy(g));
        std::printf("RESULT graph-prefetch unsupported-%d\n",
                    r != CUDA_SUCCESS ? (int)r : (int)end);
        return 0;
    }
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, g, 0));
    for (int it = 0; it < 10; it++) {
        CK(cudaGraphLaunch(exec, s));
        k_vadd<<<(N + 255) / 256, 256, 0, s>>>(x, y, y, N);
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    uint64_t sum = checksum(y, N) ^ checksum(x, N);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(x));
    CK(cudaFree(y));
    std::printf("RESULT graph-prefetch %016llx\n", (unsigned long long)sum);
    return 0;
}

static int vmm()
{
    CK(cudaFree(0)); /* primary context */
    CUdevice dev;
    CK(cuCtxGetDevice(&dev));
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    size_t size = ((size_t)N * 4 + gran - 1) / gran * gran;
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    CK(cuMemAddressReserve(&va, size, 0, 0, 0));
    CK(cuMemCreate(&h, size, &prop, 0));
    CK(cuMemMap(va, size, 0, h, 0));
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemSetAccess(va, size, &access, 1));
    uint32_t *x = (uint32_t *)(uintptr_t)va;
    CK(cudaMemset(x, 0, N * 4));
    for (int it = 0; it < 4; it++)
        k_scale<<<(N + 255) / 256, 256, 0, 0>>>(x, 7, (uint32_t)it, N);
    std::vector<uint32_t> out(N);
    CK(cudaMemcpy(out.data(), x, N * 4, cudaMemcpyDeviceToHost));
    CK(cuMemUnmap(va, size));
    CK(cuMemRelease(h));
    CK(cuMemAddressFree(va, size));
    std::printf("RESULT vmm %016llx\n", (unsigned long long)checksum(out.data(), N));
    return 0;
}

static int launch_rate(long n, bool managed)
{
    uint32_t *m = nullptr;
    const int words = 16 << 20;
    if (managed) {
        CK(cudaMallocManaged(&m, words * sizeof(uint32_t)));
        k_scale<<<words / 256, 256, 0, 0>>>(m, 1u, 1u, words);
    }
    k_empty<<<1, 32, 0, 0>>>();
    CK(cudaDeviceSynchronize());
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++)
        k_empty<<<1, 32, 0, 0>>>();
    CK(cudaDeviceSynchronize());
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    std::printf("RATE %.0f\n", (double)n / s);
    if (m)
        CK(cudaFree(m));
    return 0;
}

/* Whether cudaMalloc'd memory can be shared with another process (an IPC
 * handle): natively yes; under a gmux policy that redirects to managed
 * memory no (libgmux.so then says why, naming --no-managed). */
static int ipc()
{
    void *p = nullptr;
    CK(cudaMalloc(&p, 1 << 20));
    cudaIpcMemHandle_t h;
    cudaError_t e = cudaIpcGetMemHandle(&h, p);
    (void)cudaGetLastError(); /* clears the refusal */
    CK(cudaFree(p));
    std::printf("RESULT ipc %s\n", e == cudaSuccess ? "shared" : "refused");
    return 0;
}

int main(int argc, char **argv)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::fprintf(stderr, "no GPU: skipped\n");
        return 77;
    }
    const char *what = argc > 1 ? argv[1] : "";
    if (!std::strcmp(what, "vecadd-driver"))
        return vecadd_driver();
    if (!std::strcmp(what, "vecadd-runtime"))
        return vecadd_runtime();
    if (!std::strcmp(what, "managed-streams"))
        return managed_streams();
    if (!std::strcmp(what, "graph"))
        return graph();
    if (!std::strcmp(what, "graph-cond"))
        return graph_cond();
    if (!std::strcmp(what, "graph-prefetch"))
        return graph_prefetch();
    if (!std::strcmp(what, "vmm"))
        return vmm();
    if (!std::strcmp(what, "launch-rate") || !std::strcmp(what, "launch-rate-managed"))
        return launch_rate(argc > 2 ? std::atol(argv[2]) : 200000,
                           !std::strcmp(what, "launch-rate-managed"));
    if (!std::strcmp(what, "ipc"))
        return ipc();
    std::fprintf(stderr,
                 "usage: shim_prog vecadd-driver|vecadd-runtime|managed-streams|graph|"
                 "graph-cond|graph-prefetch|vmm|ipc|launch-rate [N]|launch-rate-managed [N]\n");
    return 2;
}
