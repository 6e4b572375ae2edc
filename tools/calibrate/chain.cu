/*
 * The validation chain of gmux-calibrate: a short program of kernels over
 * three managed buffers, each kernel reading one buffer whole and writing
 * another, timed three ways on the GPU:
 *   warm       every buffer resident: each kernel's compute time alone
 *   demand     every buffer cold (on the host): unified-memory demand paging
 *   proactive  every buffer cold, each kernel's buffers prefetched on a
 *              migration stream ahead of it (the next kernel's migration
 *              overlaps the current kernel), as gmux's shim does
 * and written as a gmux trace (the warm times as compute times), so that
 * `gmux sim --trace FILE --calibration CAL --oversub 100` predicts the demand
 * and proactive times of a program it was not calibrated on
 * (tests/gpu/run.sh compares them; docs/gpu-results.md).
 * The buffers add up to 2 GiB: far below the free HBM, since the lent GPU's
 * rules forbid asking for more managed memory than the card has free.
 */
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "chain.h"

/* Whether e is an error, said on stderr (what: the call that returned it). */
static bool ck_failed(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return false;
    std::fprintf(stderr, "gmux-calibrate: chain: %s failed: %s\n", what, cudaGetErrorString(e));
    return true;
}
/* In chain_run: on an error, to its one cleanup path (label release). */
#define CK_AS(call, what)                                                                          \
    do {                                                                                           \
        if (ck_failed((call), what))                                                               \
            goto release;                                                                          \
    } while (0)
#define CK(call) CK_AS(call, #call)
/* After a launch of chain_rw, which returns nothing: its error, if any. */
#define CK_LAUNCH() CK_AS(cudaGetLastError(), "launch of chain_rw")

/* Reads in[0..nin) whole, writes out[0..nout) whole. */
__global__ void chain_rw(const uint4 *in, size_t nin, uint4 *out, size_t nout,
                         unsigned long long *sink)
{
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t step = (size_t)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (size_t i = tid; i < nin; i += step)
        acc += in[i].x ^ in[i].w;
    for (size_t i = tid; i < nout; i += step)
        out[i] = make_uint4((unsigned)i, acc, (unsigned)(i >> 32), 7u);
    if (acc == 0x9e3779b9u)
        *sink = acc;
}

static const size_t chain_mib[3] = {768, 256, 1024};
static const int chain_io[][2] = {{0, 1}, {1, 2}, {2, 0}, {0, 1}, {1, 2}, {2, 0}};
enum { CHAIN_LAUNCHES = sizeof(chain_io) / sizeof(chain_io[0]) };

/* In to_host: on an error, -1. */
#define CK_RET(call)                                                                               \
    do {                                                                                           \
        if (ck_failed((call), #call))                                                              \
            return -1;                                                                             \
    } while (0)

static int to_host(uint4 *const buf[3], size_t const bytes[3], cudaStream_t s)
{
    cudaMemLocation host = {cudaMemLocationTypeHost, 0};
    for (int b = 0; b < 3; b++)
        CK_RET(cudaMemPrefetchAsync(buf[b], bytes[b], host, 0, s));
    CK_RET(cudaStreamSynchronize(s));
    return 0;
}

int chain_run(int sms, FILE *trace, chain_result_t *r)
{
    /* every handle starts null: the cleanup path releases those created */
    uint4 *buf[3] = {nullptr, nullptr, nullptr};
    size_t bytes[3];
    unsigned long long *sink = nullptr;
    cudaStream_t s = nullptr, m = nullptr;
    cudaEvent_t t0 = nullptr, t1 = nullptr, ev[CHAIN_LAUNCHES] = {}, kev[CHAIN_LAUNCHES + 1] = {};
    const unsigned grid = (unsigned)sms * 8, block = 256;
    cudaMemLocation dev = {cudaMemLocationTypeDevice, 0};
    float ms = 0;
    int rc = -1;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamCreate(&m));
    CK(cudaEventCreate(&t0));
    CK(cudaEventCreate(&t1));
    for (int k = 0; k < CHAIN_LAUNCHES; k++)
        CK(cudaEventCreate(&ev[k]));
    for (int k = 0; k <= CHAIN_LAUNCHES; k++)
        CK(cudaEventCreate(&kev[k]));
    CK(cudaMalloc(&sink, sizeof(*sink)));
    for (int b = 0; b < 3; b++) {
        bytes[b] = chain_mib[b] << 20;
        CK(cudaMallocManaged(&buf[b], bytes[b]));
        CK(cudaMemset(buf[b], b + 1, bytes[b]));
    }
    CK(cudaDeviceSynchronize());

    /* warm: everything resident; one event between kernels gives each one's time */
    for (int b = 0; b < 3; b++)
        CK(cudaMemPrefetchAsync(buf[b], bytes[b], dev, 0, s));
    for (int pass = 0; pass < 2; pass++) { /* the first pass warms up */
        CK(cudaEventRecord(kev[0], s));
        for (int k = 0; k < CHAIN_LAUNCHES; k++) {
            int i = chain_io[k][0], o = chain_io[k][1];
            chain_rw<<<grid, block, 0, s>>>(buf[i], bytes[i] / 16, buf[o], bytes[o] / 16, sink);
            CK_LAUNCH();
            CK(cudaEventRecord(kev[k + 1], s));
        }
        CK(cudaStreamSynchronize(s));
    }
    r->warm_ms = 0;
    for (int k = 0; k < CHAIN_LAUNCHES; k++) {
        CK(cudaEventElapsedTime(&ms, kev[k], kev[k + 1]));
        r->launch_ns[k] = (unsigned long long)(ms * 1e6);
        r->warm_ms += ms;
    }

    /* demand: cold buffers, kernels fault their pages in */
    if (to_host(buf, bytes, s))
        goto release;
    CK(cudaEventRecord(t0, s));
    for (int k = 0; k < CHAIN_LAUNCHES; k++) {
        int i = chain_io[k][0], o = chain_io[k][1];
        chain_rw<<<grid, block, 0, s>>>(buf[i], bytes[i] / 16, buf[o], bytes[o] / 16, sink);
        CK_LAUNCH();
    }
    CK(cudaEventRecord(t1, s));
    CK(cudaEventSynchronize(t1));
    CK(cudaEventElapsedTime(&r->demand_ms, t0, t1));

    /* proactive: cold buffers, each kernel's pair prefetched on m ahead of it */
    if (to_host(buf, bytes, s))
        goto release;
    CK(cudaEventRecord(t0, m));
    for (int k = 0; k < CHAIN_LAUNCHES; k++) {
        int i = chain_io[k][0], o = chain_io[k][1];
        CK(cudaMemPrefetchAsync(buf[i], bytes[i], dev, 0, m));
        CK(cudaMemPrefetchAsync(buf[o], bytes[o], dev, 0, m));
        CK(cudaEventRecord(ev[k], m));
        CK(cudaStreamWaitEvent(s, ev[k], 0));
        chain_rw<<<grid, block, 0, s>>>(buf[i], bytes[i] / 16, buf[o], bytes[o] / 16, sink);
        CK_LAUNCH();
    }
    CK(cudaEventRecord(t1, s));
    CK(cudaEventSynchronize(t1));
    CK(cudaEventElapsedTime(&r->proactive_ms, t0, t1));
    r->launches = CHAIN_LAUNCHES;
    r->bytes = 0;
    for (int b = 0; b < 3; b++)
        r->bytes += bytes[b];

    if (trace) {
        std::fprintf(trace, "gmux-trace 1\n# gmux-calibrate's validation chain, warm times "
                            "measured on the GPU\ntask 0 calibrate-chain\nkernel 0 chain_rw\n");
        for (int b = 0; b < 3; b++)
            std::fprintf(trace, "alloc 0 %d 0x%llx %zu\n", b, (unsigned long long)buf[b], bytes[b]);
        for (int k = 0; k < CHAIN_LAUNCHES; k++) {
            int i = chain_io[k][0], o = chain_io[k][1];
            unsigned long long bi = (unsigned long long)buf[i], bo = (unsigned long long)buf[o];
            std::fprintf(trace,
                         "launch 0 0 grid=%u,1,1 block=%u,1,1 ns=%llu "
                         "args=p:0x%llx,v:%zu,p:0x%llx,v:%zu touch=r:0x%llx+%zu,w:0x%llx+%zu\n",
                         grid, block, r->launch_ns[k], bi, bytes[i] / 16, bo, bytes[o] / 16, bi,
                         bytes[i], bo, bytes[o]);
        }
        std::fprintf(trace, "end\n");
    }
    rc = 0;
release: /* on success too: every handle created, released */
    for (int b = 0; b < 3; b++)
        cudaFree(buf[b]); /* cudaFree(nullptr) does nothing */
    cudaFree(sink);
    for (int k = 0; k <= CHAIN_LAUNCHES; k++)
        if (kev[k])
            cudaEventDestroy(kev[k]);
    for (int k = 0; k < CHAIN_LAUNCHES; k++)
        if (ev[k])
            cudaEventDestroy(ev[k]);
    if (t1)
        cudaEventDestroy(t1);
    if (t0)
        cudaEventDestroy(t0);
    if (m)
        cudaStreamDestroy(m);
    if (s)
        cudaStreamDestroy(s); /* a null s would be the default stream */
    return rc;
}
