/*
 * gmux-calibrate: measures the GPU paths that the simulator models, so that
 * `gmux sim --calibration FILE` can replace its datasheet defaults with
 * figures from the machine at hand.
 *
 *   pinned copies     cudaMemcpyAsync host<->device from pinned memory
 *   prefetch          cudaMemPrefetchAsync of managed memory, each way
 *   demand paging     a kernel streaming over a cold managed buffer (pages on
 *                     the host): throughput, and GPU page faults counted by
 *                     CUPTI's unified-memory counters (with their batches)
 *   fault latency     a kernel touching one word per 2 MiB of a cold buffer:
 *                     the cost of a fault that moves almost nothing
 *   demand variants   a streaming write over the cold buffer, and 2 or 4
 *                     cold buffers streamed side by side by one kernel
 *                     (recorded for the simulator's fault model; they feed
 *                     no parameter yet)
 *   validation chain  six kernels over three managed buffers, warm, under
 *                     demand paging and prefetched ahead (chain.cu); with
 *                     --chain-trace FILE also written as a gmux trace, for
 *                     checking the simulator on a program it was not fitted to
 *
 * Output: one JSON object on stdout (keys documented in docs/sim.md, section
 * calibration). Exit 77 without a GPU. Options and exit codes:
 * gmux-calibrate --help (args.c, read before any CUDA call; the chain trace
 * is created before any CUDA call too, and put in place only when the run
 * ends with the JSON printed). Every way out, success included, goes
 * through cal_exit, which releases what main holds (held).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <cupti.h>

#include "args.h"
#include "chain.h"
#include "trace_out.h"

/* What main holds, released on every way out (cal_exit); null: not held. */
struct cal_held {
    FILE *trace; /* --chain-trace's stream, until closed */
    cudaStream_t s;
    cudaEvent_t e0, e1;
    unsigned long long *sink;
    void *host, *dev;
    char *man;
    uint4 **ptrs;
};
static cal_held held;
static bool cupti_ok;

/* Releases what held names (a trace not closed yet is abandoned: its part
 * removed), returns CUPTI's buffers (freed by buffer_completed) and exits
 * with status. */
[[noreturn]] static void cal_exit(int status)
{
    if (held.trace)
        cal_trace_abort(held.trace);
    if (cupti_ok) {
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
        cuptiActivityFlushAll(1);
    }
    /* only what is held: no call reaches the runtime on the way out of a
     * run that never reached the GPU (no GPU, a trace refused) */
    if (held.ptrs)
        cudaFree(held.ptrs);
    if (held.man)
        cudaFree(held.man);
    if (held.dev)
        cudaFree(held.dev);
    if (held.host)
        cudaFreeHost(held.host);
    if (held.sink)
        cudaFree(held.sink);
    if (held.e1)
        cudaEventDestroy(held.e1);
    if (held.e0)
        cudaEventDestroy(held.e0);
    if (held.s)
        cudaStreamDestroy(held.s); /* a null s would be the default stream */
    held = cal_held{};
    std::exit(status);
}

#define CHECK_AS(call, what)                                                                       \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "gmux-calibrate: %s failed: %s\n", what, cudaGetErrorString(e_)); \
            cal_exit(1);                                                                           \
        }                                                                                          \
    } while (0)
#define CHECK(call) CHECK_AS(call, #call)
/* After a kernel launch, which returns nothing: its error (a bad
 * configuration, no kernel image for the GPU), or an earlier one. */
#define CHECK_LAUNCH(kernel) CHECK_AS(cudaGetLastError(), "launch of " #kernel)

/* --chain-trace FILE (trace_out.h): says why it cannot be written, exit 1. */
[[noreturn]] static void trace_fail(const char *path, int errnum)
{
    const char *dir = cal_trace_folder(); /* a link's target's folder, or "" */
    std::fprintf(stderr, "gmux-calibrate: cannot write chain trace '%s': %s%s%s\n", path, dir,
                 dir[0] ? ": " : "", std::strerror(errnum));
    cal_exit(1);
}

struct uvm_totals {
    unsigned long long h2d_bytes, d2h_bytes, gpu_faults, fault_records;
    unsigned long long fault_record_ns; /* sum of (end - start) of fault records */
};
static uvm_totals totals;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *size = 8 << 20;
    *buffer = static_cast<uint8_t *>(std::aligned_alloc(8, *size));
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t valid)
{
    CUpti_Activity *rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)
            continue;
        auto *um = reinterpret_cast<CUpti_ActivityUnifiedMemoryCounter3 *>(rec);
        switch (um->counterKind) {
        case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
            totals.h2d_bytes += um->value;
            break;
        case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
            totals.d2h_bytes += um->value;
            break;
        case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
            totals.gpu_faults += um->value;
            totals.fault_records++;
            totals.fault_record_ns += um->end > um->start ? um->end - um->start : 0;
            break;
        default:
            break;
        }
    }
    std::free(buffer);
}

static void cupti_start()
{
    CUpti_ActivityUnifiedMemoryCounterConfig cfg[3];
    const CUpti_ActivityUnifiedMemoryCounterKind kinds[3] = {
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT};
    for (int i = 0; i < 3; i++) {
        cfg[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
        cfg[i].kind = kinds[i];
        cfg[i].deviceId = 0;
        cfg[i].enable = 1;
    }
    cupti_ok =
        cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS &&
        cuptiActivityConfigureUnifiedMemoryCounter(cfg, 3) == CUPTI_SUCCESS &&
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER) == CUPTI_SUCCESS;
    if (!cupti_ok)
        std::fprintf(stderr, "gmux-calibrate: CUPTI unified-memory counters unavailable\n");
}

static uvm_totals cupti_take()
{
    if (cupti_ok)
        cuptiActivityFlushAll(1);
    uvm_totals t = totals;
    totals = uvm_totals{};
    return t;
}

/* One thread per 16 bytes, grid-stride: a streaming read as a copy kernel does. */
__global__ void stream_read(const uint4 *p, size_t n, unsigned long long *sink)
{
    unsigned long long acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        acc += p[i].x;
    if (acc == 0x9e3779b97f4a7c15ull)
        *sink = acc;
}

/* k streaming reads side by side: the grid's blocks split into k groups,
 * group g streaming over p[g] (n words each). */
__global__ void streams_read(uint4 *const *p, int k, size_t n, unsigned long long *sink)
{
    int g = (int)(blockIdx.x % (unsigned)k);
    size_t lanes = (size_t)(gridDim.x / (unsigned)k) * blockDim.x;
    size_t lane = (size_t)(blockIdx.x / (unsigned)k) * blockDim.x + threadIdx.x;
    unsigned long long acc = 0;
    for (size_t i = lane; i < n; i += lanes)
        acc += p[g][i].x;
    if (acc == 0x9e3779b97f4a7c15ull)
        *sink = acc;
}

/* One thread per 16 bytes, grid-stride: a streaming write over the buffer. */
__global__ void stream_write(uint4 *p, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = make_uint4((unsigned)i, 1u, 2u, 3u);
}

/* One word per stride bytes. */
__global__ void sparse_touch(const char *p, size_t bytes, size_t stride, unsigned long long *sink)
{
    size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * stride;
    if (i < bytes && p[i] == 0x5a)
        *sink = i;
}

static float time_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

int main(int argc, char **argv)
{
    cal_args_t args;
    int rc = cal_args_read(argc, argv, &args);
    if (rc >= 0)
        return rc;
    const size_t mib = args.size_mib;
    const char *chain_trace = args.chain_trace;
    FILE *&trace = held.trace;
    int errnum = 0;
    if (chain_trace && !(trace = cal_trace_open(chain_trace, &errnum)))
        trace_fail(chain_trace, errnum);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        std::fprintf(stderr, "gmux-calibrate: no GPU: skipped\n");
        cal_exit(77);
    }
    cupti_start();
    CHECK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    const size_t bytes = mib << 20;

    cudaStream_t &s = held.s;
    cudaEvent_t &e0 = held.e0, &e1 = held.e1;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    unsigned long long *&sink = held.sink;
    CHECK(cudaMalloc(&sink, sizeof(*sink)));

    /* Pinned copies: best of 3 each way. */
    void *&host = held.host, *&dev = held.dev;
    CHECK(cudaMallocHost(&host, bytes));
    CHECK(cudaMalloc(&dev, bytes));
    std::memset(host, 1, bytes);
    float h2d = 1e30f, d2h = 1e30f;
    for (int r = 0; r < 3; r++) {
        CHECK(cudaEventRecord(e0, s));
        CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
        CHECK(cudaEventRecord(e1, s));
        CHECK(cudaEventSynchronize(e1));
        h2d = std::min(h2d, time_ms(e0, e1));
        CHECK(cudaEventRecord(e0, s));
        CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));
        CHECK(cudaEventRecord(e1, s));
        CHECK(cudaEventSynchronize(e1));
        d2h = std::min(d2h, time_ms(e0, e1));
    }
    CHECK(cudaFreeHost(host));
    host = nullptr;
    CHECK(cudaFree(dev));
    dev = nullptr;

    /* Managed prefetch, each way. */
    char *&man = held.man;
    CHECK(cudaMallocManaged(&man, bytes));
    std::memset(man, 1, bytes);
    cudaMemLocation on_dev = {cudaMemLocationTypeDevice, 0};
    cudaMemLocation on_host = {cudaMemLocationTypeHost, 0};
    cupti_take();
    CHECK(cudaEventRecord(e0, s));
    CHECK(cudaMemPrefetchAsync(man, bytes, on_dev, 0, s));
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float pf_h2d = time_ms(e0, e1);
    CHECK(cudaEventRecord(e0, s));
    CHECK(cudaMemPrefetchAsync(man, bytes, on_host, 0, s));
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float pf_d2h = time_ms(e0, e1);
    uvm_totals pf = cupti_take();

    /* Demand paging: stream over the buffer, now cold (on the host). */
    std::memset(man, 2, bytes);
    CHECK(cudaEventRecord(e0, s));
    stream_read<<<prop.multiProcessorCount * 8, 256, 0, s>>>(reinterpret_cast<uint4 *>(man),
                                                             bytes / sizeof(uint4), sink);
    CHECK_LAUNCH(stream_read);
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float demand = time_ms(e0, e1);
    uvm_totals dm = cupti_take();

    /* Warm: the same kernel with the data resident, to separate compute. */
    CHECK(cudaEventRecord(e0, s));
    stream_read<<<prop.multiProcessorCount * 8, 256, 0, s>>>(reinterpret_cast<uint4 *>(man),
                                                             bytes / sizeof(uint4), sink);
    CHECK_LAUNCH(stream_read);
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float warm = time_ms(e0, e1);

    /* Fault latency: one word per 2 MiB of a cold buffer. */
    CHECK(cudaMemPrefetchAsync(man, bytes, on_host, 0, s));
    CHECK(cudaStreamSynchronize(s));
    std::memset(man, 3, bytes);
    const size_t stride = 2u << 20;
    const size_t touches = bytes / stride;
    cupti_take();
    CHECK(cudaEventRecord(e0, s));
    sparse_touch<<<(unsigned)((touches + 255) / 256), 256, 0, s>>>(man, bytes, stride, sink);
    CHECK_LAUNCH(sparse_touch);
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float sparse = time_ms(e0, e1);
    uvm_totals sp = cupti_take();

    /* Demand paging of a streaming write over the cold buffer (each page is
     * migrated before it is overwritten: the driver cannot know it will be). */
    CHECK(cudaMemPrefetchAsync(man, bytes, on_host, 0, s));
    CHECK(cudaStreamSynchronize(s));
    std::memset(man, 4, bytes);
    cupti_take();
    CHECK(cudaEventRecord(e0, s));
    stream_write<<<prop.multiProcessorCount * 8, 256, 0, s>>>(reinterpret_cast<uint4 *>(man),
                                                              bytes / sizeof(uint4));
    CHECK_LAUNCH(stream_write);
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float dwrite = time_ms(e0, e1);
    uvm_totals dw = cupti_take();

    /* Demand paging of k cold buffers streamed side by side by one kernel
     * (the same bytes in all: the buffer cut in k): does the driver page k
     * streams faster than one? (The validation chain faults two buffers at
     * a time and paged at about 1.35x the single-stream rate.) */
    const int ks[2] = {2, 4};
    float dstreams[2];
    uvm_totals dst[2];
    uint4 **&ptrs = held.ptrs;
    CHECK(cudaMallocManaged(&ptrs, 4 * sizeof(*ptrs)));
    for (int j = 0; j < 2; j++) {
        int k = ks[j];
        size_t part = bytes / (size_t)k / sizeof(uint4) * sizeof(uint4);
        for (int g = 0; g < k; g++)
            ptrs[g] = reinterpret_cast<uint4 *>(man + (size_t)g * part);
        CHECK(cudaMemPrefetchAsync(man, bytes, on_host, 0, s));
        CHECK(cudaStreamSynchronize(s));
        std::memset(man, 5 + j, bytes);
        CHECK(cudaMemPrefetchAsync(ptrs, 4 * sizeof(*ptrs), on_dev, 0, s));
        CHECK(cudaStreamSynchronize(s));
        cupti_take();
        CHECK(cudaEventRecord(e0, s));
        streams_read<<<prop.multiProcessorCount * 8, 256, 0, s>>>(ptrs, k, part / sizeof(uint4),
                                                                  sink);
        CHECK_LAUNCH(streams_read);
        CHECK(cudaEventRecord(e1, s));
        CHECK(cudaEventSynchronize(e1));
        dstreams[j] = time_ms(e0, e1);
        dst[j] = cupti_take();
    }
    CHECK(cudaFree(ptrs));
    ptrs = nullptr;
    CHECK(cudaFree(man));
    man = nullptr;
    chain_result_t ch = {};
    if (chain_run(prop.multiProcessorCount, trace, &ch) != 0)
        cal_exit(1); /* said */
    if (trace) {
        FILE *f = trace;
        trace = nullptr; /* closed, whatever cal_trace_close says */
        if ((errnum = cal_trace_close(f)) != 0)
            trace_fail(chain_trace, errnum);
    }

    auto gbps = [&](double ms) { return ms > 0 ? (double)bytes / (ms * 1e-3) / 1e9 : 0.0; };
    std::printf("{\"gmux_calibration\": 1, \"gpu\": \"%s\", \"driver\": %d, \"runtime\": %d, "
                "\"hbm_bytes\": %zu, \"buffer_bytes\": %zu, \"cupti\": %s,\n",
                prop.name, driver, runtime, prop.totalGlobalMem, bytes,
                cupti_ok ? "true" : "false");
    std::printf(" \"pinned_h2d_GBps\": %.3f, \"pinned_d2h_GBps\": %.3f,\n", gbps(h2d), gbps(d2h));
    std::printf(" \"prefetch_h2d_GBps\": %.3f, \"prefetch_d2h_GBps\": %.3f, "
                "\"prefetch_cupti_h2d_bytes\": %llu, \"prefetch_cupti_d2h_bytes\": %llu,\n",
                gbps(pf_h2d), gbps(pf_d2h), pf.h2d_bytes, pf.d2h_bytes);
    std::printf(" \"demand_stream_GBps\": %.3f, \"demand_ms\": %.3f, \"warm_ms\": %.3f, "
                "\"demand_gpu_faults\": %llu, \"demand_fault_records\": %llu, "
                "\"demand_h2d_bytes\": %llu, \"demand_fault_record_us_mean\": %.3f,\n",
                gbps(demand), demand, warm, dm.gpu_faults, dm.fault_records, dm.h2d_bytes,
                dm.fault_records ? dm.fault_record_ns / 1e3 / dm.fault_records : 0.0);
    std::printf(" \"sparse_touches\": %zu, \"sparse_ms\": %.3f, \"sparse_us_per_touch\": %.3f, "
                "\"sparse_gpu_faults\": %llu, \"sparse_fault_records\": %llu, "
                "\"sparse_h2d_bytes\": %llu,\n",
                touches, sparse, sparse * 1e3 / (double)touches, sp.gpu_faults, sp.fault_records,
                sp.h2d_bytes);
    std::printf(" \"demand_write_GBps\": %.3f, \"demand_write_h2d_bytes\": %llu,\n", gbps(dwrite),
                dw.h2d_bytes);
    std::printf(" \"demand_streams2_GBps\": %.3f, \"demand_streams2_h2d_bytes\": %llu, "
                "\"demand_streams4_GBps\": %.3f, \"demand_streams4_h2d_bytes\": %llu,\n",
                gbps(dstreams[0]), dst[0].h2d_bytes, gbps(dstreams[1]), dst[1].h2d_bytes);
    std::printf(" \"chain_launches\": %d, \"chain_bytes\": %llu, \"chain_warm_ms\": %.3f, "
                "\"chain_demand_ms\": %.3f, \"chain_proactive_ms\": %.3f}\n",
                ch.launches, ch.bytes, ch.warm_ms, ch.demand_ms, ch.proactive_ms);
    cal_exit(0);
}
