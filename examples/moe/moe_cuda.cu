/*
 * MoE dispatch/combine driven by CUDA kernels through the gmux device API
 * (include/gmux/net_device.cuh): the same problem and wire layout as
 * moe_cpu.c (see moe_core.h), with every put and signal issued by a kernel.
 *
 *   k_dispatch        one block per token: builds each of its K messages in
 *                     pinned memory and puts it (block form)
 *   k_dispatch_count  one thread per expert: the count signal
 *   k_experts         one block per source rank: waits for each local
 *                     expert's count signal, runs the expert, puts the
 *                     weighted outputs back, then the combine signal
 *   k_combine         one block per token: waits for every rank's combine
 *                     signal and sums
 * Buffers are pinned host memory mapped into the device (the Debian
 * libfabric cannot reach device memory); the window is registered like any
 * host window. Exit 77 without a GPU; 0 when every value equals the
 * reference in every iteration.
 *
 *   moe_cuda [--tokens T] [--hidden H] [--experts-per-rank EL] [--topk K]
 *            [--iters N] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include <gmux/net.h>
#include <gmux/net_device.cuh>

#include "moe_core.h"
#include "moe_main.h"

#define THREADS 128

struct moe_dev {
    moe_params_t p;
    int me;
    uint32_t nctx;
    gmux_window_t win;
    float *window, *send, *res, *out; /* pinned, mapped; same address on both sides */
    int *route;                       /* device */
    float *weight;                    /* device */
    unsigned *counts;                 /* device, per expert */
};

#define MOE_BATCH 64u /* combine puts per ring claim */

__device__ static uint32_t disp_ctx(const moe_dev &m, int le)
{
    return (uint32_t)le % (m.nctx > 1 ? m.nctx - 1 : 1);
}

__global__ static void k_dispatch(gmux_dev_handle_t h, moe_dev m, int iter)
{
    const moe_params_t &p = m.p;
    int t = blockIdx.x;
    size_t msg = moe_msg_floats(&p);
    __shared__ unsigned slot;
    for (int k = 0; k < p.topk; k++) {
        int e = m.route[t * p.topk + k], q = e / p.local_exp, le = e % p.local_exp;
        float *s = m.send + ((size_t)t * (size_t)p.topk + (size_t)k) * msg;
        if (threadIdx.x == 0) {
            slot = atomicAdd(&m.counts[e], 1u);
            s[0] = (float)t;
            s[1] = (float)k;
            s[2] = m.weight[t * p.topk + k];
        }
        for (int j = threadIdx.x; j < p.hidden; j += blockDim.x)
            s[MOE_META + j] = moe_input(m.me, t, j, iter, &p);
        __syncthreads(); /* slot */
        gmux_status_t st = gmux_dev_put_block(h, disp_ctx(m, le), q, m.win,
                                              moe_recv_off(&p, le, m.me, (int)slot) * sizeof(float),
                                              s, msg * sizeof(float), NULL);
        if (st != GMUX_OK && threadIdx.x == 0)
            printf("moe_cuda: dispatch put: %d\n", (int)st);
    }
}

__global__ static void k_dispatch_count(gmux_dev_handle_t h, moe_dev m, int iter)
{
    const moe_params_t &p = m.p;
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= moe_experts(&p))
        return;
    int q = e / p.local_exp, le = e % p.local_exp;
    gmux_status_t st =
        gmux_dev_signal(h, disp_ctx(m, le), q, (uint32_t)(MOE_SIG_DISP + le * p.ranks + m.me),
                        GMUX_SIGNAL_SET, moe_sig_value(iter, m.counts[e]));
    if (st != GMUX_OK)
        printf("moe_cuda: count signal: %d\n", (int)st);
}

__global__ static void k_experts(gmux_dev_handle_t h, moe_dev m, int iter)
{
    const moe_params_t &p = m.p;
    int src = blockIdx.x;
    size_t msg = moe_msg_floats(&p);
    uint32_t back = 0;
    for (int le = 0; le < p.local_exp; le++) {
        uint32_t sig = (uint32_t)(MOE_SIG_DISP + le * p.ranks + src);
        if (gmux_dev_signal_wait_block(h, sig, moe_sig_value(iter, 0), 0, NULL) != GMUX_OK) {
            if (threadIdx.x == 0)
                printf("moe_cuda: rank %d: dispatch wait timed out\n", m.me);
            return;
        }
        uint32_t count = (uint32_t)gmux_dev_signal_read(h, sig);
        int e = m.me * p.local_exp + le;
        /* the results go back in batches: one ring claim per MOE_BATCH puts */
        __shared__ uint64_t b_off[MOE_BATCH], b_size[MOE_BATCH];
        __shared__ const void *b_src[MOE_BATCH];
        for (uint32_t i0 = 0; i0 < count; i0 += MOE_BATCH) {
            uint32_t nb = count - i0 < MOE_BATCH ? count - i0 : MOE_BATCH;
            for (uint32_t i = i0; i < i0 + nb; i++) {
                const float *in = m.window + moe_recv_off(&p, le, src, (int)i);
                int t = (int)__ldcv(&in[0]), k = (int)__ldcv(&in[1]);
                float w = __ldcv(&in[2]);
                float *y = m.res + moe_recv_off(&p, le, src, (int)i) / msg * (size_t)p.hidden;
                for (int j = threadIdx.x; j < p.hidden; j += blockDim.x)
                    y[j] = w * moe_expert(e, __ldcv(&in[MOE_META + j]));
                if (threadIdx.x == 0) {
                    b_off[i - i0] = moe_comb_off(&p, t, k) * sizeof(float);
                    b_src[i - i0] = y;
                    b_size[i - i0] = (size_t)p.hidden * sizeof(float);
                }
            }
            __syncthreads(); /* every thread's y rows, then thread 0's fence covers them */
            if (threadIdx.x == 0) {
                gmux_status_t st = gmux_dev_put_batch(h, m.nctx - 1, src, m.win, nb, b_off, b_src,
                                                      b_size, NULL, NULL);
                if (st != GMUX_OK)
                    printf("moe_cuda: combine put batch: %d\n", (int)st);
            }
            __syncthreads(); /* the batch arrays are reused */
        }
        back += count;
    }
    gmux_dev_signal_block(h, m.nctx - 1, src, (uint32_t)(MOE_SIG_COMB + m.me), GMUX_SIGNAL_SET,
                          moe_sig_value(iter, back));
}

__global__ static void k_combine(gmux_dev_handle_t h, moe_dev m, int iter)
{
    const moe_params_t &p = m.p;
    int t = blockIdx.x;
    for (int q = 0; q < p.ranks; q++)
        if (gmux_dev_signal_wait_block(h, (uint32_t)(MOE_SIG_COMB + q), moe_sig_value(iter, 0), 0,
                                       NULL) != GMUX_OK)
            return;
    for (int j = threadIdx.x; j < p.hidden; j += blockDim.x) {
        float sum = 0.0f;
        for (int k = 0; k < p.topk; k++)
            sum += __ldcv(&m.window[moe_comb_off(&p, t, k) + (size_t)j]);
        m.out[(size_t)t * (size_t)p.hidden + (size_t)j] = sum;
    }
}

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "moe_cuda: %s: %s\n", #call, cudaGetErrorString(e_));                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int pinned(size_t bytes, float **p)
{
    CUDA_OK(cudaHostAlloc((void **)p, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    memset(*p, 0, bytes);
    void *d = NULL;
    CUDA_OK(cudaHostGetDevicePointer(&d, *p, 0));
    if (d != (void *)*p) {
        fprintf(stderr, "moe_cuda: mapped memory has another address on the device\n");
        return 1;
    }
    return 0;
}

static int run(gmux_comm_t *comm, moe_dev &m, int json)
{
    const moe_params_t &p = m.p;
    gmux_dev_handle_t h;
    gmux_status_t st = gmux_dev_handle_create(comm, &h);
    if (st != GMUX_OK) {
        fprintf(stderr, "moe_cuda: device handle: %s\n", gmux_status_name(st));
        return 1;
    }
    int E = moe_experts(&p);
    size_t msg = moe_msg_floats(&p);
    size_t wbytes = (moe_recv_floats(&p) + moe_comb_floats(&p)) * sizeof(float);
    if (pinned(wbytes, &m.window) || pinned((size_t)p.tokens * p.topk * msg * 4, &m.send) ||
        pinned(moe_recv_floats(&p) / msg * p.hidden * 4, &m.res) ||
        pinned((size_t)p.tokens * p.hidden * 4, &m.out))
        return 1;
    int *route = (int *)calloc((size_t)p.tokens * p.topk, sizeof(int));
    float *weight = (float *)calloc((size_t)p.tokens * p.topk, sizeof(float));
    for (int t = 0; t < p.tokens; t++)
        moe_route(m.me, t, &p, &route[t * p.topk], &weight[t * p.topk]);
    CUDA_OK(cudaMalloc((void **)&m.route, (size_t)p.tokens * p.topk * sizeof(int)));
    CUDA_OK(cudaMalloc((void **)&m.weight, (size_t)p.tokens * p.topk * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&m.counts, (size_t)E * sizeof(unsigned)));
    CUDA_OK(cudaMemcpy(m.route, route, (size_t)p.tokens * p.topk * sizeof(int),
                       cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(m.weight, weight, (size_t)p.tokens * p.topk * sizeof(float),
                       cudaMemcpyHostToDevice));
    if (gmux_window_register(comm, m.window, wbytes, &m.win) != GMUX_OK)
        return 1;
    /* ring claims and the compare-and-swaps they lost to each other, and the
     * time of each phase (events): where an iteration's time goes */
    uint64_t *cstats = NULL, claims[2] = {0, 0};
    CUDA_OK(cudaMalloc((void **)&cstats, sizeof(claims)));
    CUDA_OK(cudaMemset(cstats, 0, sizeof(claims)));
    h.claim_stats = cstats;
    const bool faa = h.claim_mode == GMUX_DEV_CLAIM_FAA;
    const unsigned backoff_ns = h.claim_backoff_ns;
    cudaEvent_t ev[4];
    for (int i = 0; i < 4; i++)
        CUDA_OK(cudaEventCreate(&ev[i]));
    double phase_ms[3] = {0, 0, 0};
    long bad = 0;
    double total = 0.0;
    for (int iter = 0; iter < p.iters; iter++) {
        memset(m.window + moe_recv_floats(&p), 0xff, moe_comb_floats(&p) * sizeof(float));
        CUDA_OK(cudaMemset(m.counts, 0, (size_t)E * sizeof(unsigned)));
        CUDA_OK(cudaDeviceSynchronize());
        double t0 = now_s();
        CUDA_OK(cudaEventRecord(ev[0]));
        k_dispatch<<<p.tokens, THREADS, 0, 0>>>(h, m, iter);
        k_dispatch_count<<<(E + 127) / 128, 128, 0, 0>>>(h, m, iter);
        CUDA_OK(cudaEventRecord(ev[1]));
        k_experts<<<p.ranks, THREADS, 0, 0>>>(h, m, iter);
        CUDA_OK(cudaEventRecord(ev[2]));
        k_combine<<<p.tokens, THREADS, 0, 0>>>(h, m, iter);
        CUDA_OK(cudaEventRecord(ev[3]));
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaDeviceSynchronize());
        for (int i = 0; i < 3 && (iter > 0 || p.iters == 1); i++) {
            float ms = 0.0f;
            CUDA_OK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
            phase_ms[i] += ms;
        }
        st = GMUX_OK;
        for (uint32_t c = 0; c < m.nctx && st == GMUX_OK; c++)
            st = gmux_flush(comm, c);
        if (st == GMUX_OK)
            st = gmux_barrier(gmux_team_world(comm));
        double t1 = now_s();
        if (st != GMUX_OK) {
            fprintf(stderr, "moe_cuda rank %d: iteration %d: %s\n", m.me, iter,
                    gmux_status_name(st));
            return 1;
        }
        if (iter > 0 || p.iters == 1)
            total += t1 - t0;
        for (int t = 0; t < p.tokens; t++)
            for (int j = 0; j < p.hidden; j++)
                bad += m.out[(size_t)t * p.hidden + j] != moe_reference(m.me, t, j, iter, &p);
    }
    CUDA_OK(cudaMemcpy(claims, cstats, sizeof(claims), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(cstats));
    for (int i = 0; i < 4; i++)
        cudaEventDestroy(ev[i]);
    gmux_window_deregister(comm, m.win);
    gmux_dev_handle_destroy(&h);
    free(route);
    free(weight);
    if (bad) {
        fprintf(stderr, "moe_cuda rank %d: %ld values differ from the reference\n", m.me, bad);
        return 1;
    }
    if (m.me == 0) {
        int timed = p.iters > 1 ? p.iters - 1 : 1;
        double us = total / timed * 1e6;
        /* per claim: lost compare-and-swaps (cas) or waits for a slot (faa) */
        double other = claims[0] ? (double)claims[1] / (double)claims[0] : 0.0;
        if (json)
            printf("{\"check\":\"moe_cuda\",\"ranks\":%d,\"provider\":\"%s\",\"tokens\":%d,"
                   "\"hidden\":%d,\"experts\":%d,\"topk\":%d,\"iters\":%d,\"us_per_iter\":%.1f,"
                   "\"dispatch_us\":%.1f,\"experts_us\":%.1f,\"combine_us\":%.1f,"
                   "\"claim\":\"%s\",\"backoff_ns\":%u,\"claims\":%llu,\"%s\":%.2f,"
                   "\"exact\":true}\n",
                   p.ranks, gmux_comm_provider(comm), p.tokens, p.hidden, E, p.topk, p.iters, us,
                   phase_ms[0] / timed * 1e3, phase_ms[1] / timed * 1e3, phase_ms[2] / timed * 1e3,
                   faa ? "faa" : "cas", backoff_ns, (unsigned long long)claims[0],
                   faa ? "waits_per_claim" : "cas_lost_per_claim", other);
        else
            printf("moe cuda: %d ranks over %s, %d tokens/rank x %d, %d experts, top-%d: %.1f us "
                   "per dispatch+combine (mean of %d; dispatch %.1f, experts %.1f, combine "
                   "%.1f), results exact; %llu ring claims (%s), %.2f %s each\n",
                   p.ranks, gmux_comm_provider(comm), p.tokens, p.hidden, E, p.topk, us, timed,
                   phase_ms[0] / timed * 1e3, phase_ms[1] / timed * 1e3, phase_ms[2] / timed * 1e3,
                   (unsigned long long)claims[0], faa ? "fetch-and-add" : "compare-and-swap", other,
                   faa ? "waits for a slot" : "lost compare-and-swaps");
    }
    return 0;
}

int main(int argc, char **argv)
{
    moe_dev m = {};
    int json = 0;
    int args = moe_parse_args(argc, argv, &m.p, &json);
    if (args != 0)
        return args > 0 ? 0 : 2;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "moe_cuda: no GPU: skipped\n");
        return 77;
    }
    gmux_comm_params_t cp;
    gmux_comm_params_init(&cp);
    gmux_comm_t *comm = NULL;
    gmux_status_t st = gmux_comm_init(&cp, &comm);
    if (st != GMUX_OK) {
        fprintf(stderr, "moe_cuda: gmux_comm_init: %s\n", gmux_status_name(st));
        return 1;
    }
    m.me = gmux_comm_rank(comm);
    m.p.ranks = gmux_comm_size(comm);
    m.nctx = 4;
    int rc = moe_params_check(&m.p) == 0 ? run(comm, m, json) : 1;
    st = gmux_comm_finalize(comm);
    return rc == 0 && st != GMUX_OK ? 1 : rc;
}
