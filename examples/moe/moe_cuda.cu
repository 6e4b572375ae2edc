/*
 * MoE dispatch/combine driven by CUDA kernels through the gmux device API
 * (include/gmux/net_device.cuh): the same problem and wire layout as
 * moe_cpu.c (see moe_core.h), with every put and signal issued by a kernel.
 *
 *   k_dispatch        one block per token: builds each of its K messages in
 *                     pinned memory and puts it (block form)
 *   k_dispatch_count  one thread per expert: the count signal
 *   k_experts         one block per source rank: waits for each local
 *                     expert's count signal, checks it and each message as
 *                     moe_cpu does, runs the expert, puts the weighted
 *                     outputs back, then the combine signal
 *   k_combine         one block per token: waits for every rank's combine
 *                     signal and sums
 * Buffers are pinned host memory mapped into the device (the Debian
 * libfabric cannot reach device memory); the window is registered like any
 * host window. The per-token steps are moe_core.h's, the same code as
 * moe_cpu's; a kernel's failure is kept in a status word the host reports.
 * Exit 77 without a GPU; 0 when every value equals the reference in every
 * iteration.
 *
 *   moe_cuda [--tokens T] [--hidden H] [--experts-per-rank EL] [--topk K]
 *            [--iters N] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int *status;                      /* device: the first failure of a kernel */
};

#define MOE_BATCH 64u /* combine puts per ring claim */

/* A kernel's failure, said by the thread that met it (thread 0 of a block):
 * the first of an iteration is kept in *m.status for the host. */
__device__ static void fail(const moe_dev &m, const char *what, gmux_status_t st)
{
    printf("moe_cuda: rank %d: %s: %d\n", m.me, what, (int)st);
    atomicCAS(m.status, 0, (int)st);
}

__global__ static void k_dispatch(gmux_dev_handle_t h, moe_dev m, int iter)
{
    const moe_params_t &p = m.p;
    int t = blockIdx.x;
    size_t msg = moe_msg_floats(&p);
    __shared__ unsigned slot;
    for (int k = 0; k < p.topk; k++) {
        int e = m.route[t * p.topk + k], q, le;
        moe_expert_home(&p, e, &q, &le);
        float *s = m.send + moe_send_off(&p, t, k);
        if (threadIdx.x == 0)
            slot = atomicAdd(&m.counts[e], 1u);
        moe_msg_build(&p, m.me, t, k, m.weight[t * p.topk + k], iter, s, threadIdx.x, blockDim.x);
        __syncthreads(); /* slot */
        gmux_status_t st = gmux_dev_put_block(h, moe_disp_ctx(m.nctx, le), q, m.win,
                                              moe_recv_off(&p, le, m.me, (int)slot) * sizeof(float),
                                              s, msg * sizeof(float), NULL);
        if (st != GMUX_OK && threadIdx.x == 0)
            fail(m, "dispatch put", st);
    }
}

__global__ static void k_dispatch_count(gmux_dev_handle_t h, moe_dev m, int iter)
{
    const moe_params_t &p = m.p;
    int e = blockIdx.x * blockDim.x + threadIdx.x, q, le;
    if (e >= moe_experts(&p))
        return;
    moe_expert_home(&p, e, &q, &le);
    gmux_status_t st = gmux_dev_signal(h, moe_disp_ctx(m.nctx, le), q, moe_sig_disp(&p, le, m.me),
                                       GMUX_SIGNAL_SET, moe_sig_value(iter, m.counts[e]));
    if (st != GMUX_OK)
        fail(m, "count signal", st);
}

/* Every thread of the block reads the same signal and messages (written
 * before the signal and not again this iteration), so every check comes out
 * the same in all of them and they leave together. */
__global__ static void k_experts(gmux_dev_handle_t h, moe_dev m, int iter)
{
    const moe_params_t &p = m.p;
    int src = blockIdx.x;
    uint32_t back = 0;
    for (int le = 0; le < p.local_exp; le++) {
        uint32_t sig = moe_sig_disp(&p, le, src), count = 0;
        gmux_status_t st = gmux_dev_signal_wait_block(h, sig, moe_sig_value(iter, 0), 0, NULL);
        if (st == GMUX_OK)
            st = moe_count_parse(&p, iter, gmux_dev_signal_read(h, sig), &count);
        if (st != GMUX_OK) {
            if (threadIdx.x == 0)
                fail(m, "dispatch count", st);
            return;
        }
        int e = m.me * p.local_exp + le;
        /* the results go back in batches: one ring claim per MOE_BATCH puts */
        __shared__ uint64_t b_off[MOE_BATCH], b_size[MOE_BATCH];
        __shared__ const void *b_src[MOE_BATCH];
        for (uint32_t i0 = 0; i0 < count; i0 += MOE_BATCH) {
            uint32_t nb = count - i0 < MOE_BATCH ? count - i0 : MOE_BATCH;
            for (uint32_t i = i0; i < i0 + nb; i++) {
                size_t off = 0;
                float *y = NULL;
                st = moe_expert_msg(&p, m.window, m.res, e, le, src, (int)i, threadIdx.x,
                                    blockDim.x, &off, &y);
                if (st != GMUX_OK) {
                    if (threadIdx.x == 0)
                        fail(m, "dispatched token", st);
                    return;
                }
                if (threadIdx.x == 0) {
                    b_off[i - i0] = off;
                    b_src[i - i0] = y;
                    b_size[i - i0] = (size_t)p.hidden * sizeof(float);
                }
            }
            __syncthreads(); /* every thread's y rows, then thread 0's fence covers them */
            if (threadIdx.x == 0) {
                st = gmux_dev_put_batch(h, moe_comb_ctx(m.nctx), src, m.win, nb, b_off, b_src,
                                        b_size, NULL, NULL);
                if (st != GMUX_OK)
                    fail(m, "combine put batch", st);
            }
            __syncthreads(); /* the batch arrays are reused */
        }
        back += count;
    }
    gmux_dev_signal_block(h, moe_comb_ctx(m.nctx), src, moe_sig_comb(m.me), GMUX_SIGNAL_SET,
                          moe_sig_value(iter, back));
}

__global__ static void k_combine(gmux_dev_handle_t h, moe_dev m, int iter)
{
    const moe_params_t &p = m.p;
    int t = blockIdx.x;
    for (int q = 0; q < p.ranks; q++) {
        gmux_status_t st =
            gmux_dev_signal_wait_block(h, moe_sig_comb(q), moe_sig_value(iter, 0), 0, NULL);
        if (st != GMUX_OK) {
            if (threadIdx.x == 0)
                fail(m, "combine wait", st);
            return;
        }
    }
    moe_combine_token(&p, m.window, m.out, t, threadIdx.x, blockDim.x);
}

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "moe_cuda: %s: %s\n", #call, cudaGetErrorString(e_));                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

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
    moe_route_table(&p, m.me, route, weight);
    CUDA_OK(cudaMalloc((void **)&m.route, (size_t)p.tokens * p.topk * sizeof(int)));
    CUDA_OK(cudaMalloc((void **)&m.weight, (size_t)p.tokens * p.topk * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&m.counts, (size_t)E * sizeof(unsigned)));
    CUDA_OK(cudaMalloc((void **)&m.status, sizeof(int)));
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
        CUDA_OK(cudaMemset(m.status, 0, sizeof(int)));
        CUDA_OK(cudaDeviceSynchronize());
        double t0 = moe_now_s();
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
        double t1 = moe_now_s();
        int kst = 0; /* a kernel's failure first: the flush or barrier may fail after it */
        CUDA_OK(cudaMemcpy(&kst, m.status, sizeof(kst), cudaMemcpyDeviceToHost));
        if (kst != GMUX_OK)
            st = (gmux_status_t)kst;
        if (st != GMUX_OK) {
            fprintf(stderr, "moe_cuda rank %d: iteration %d: %s\n", m.me, iter,
                    gmux_status_name(st));
            return 1;
        }
        if (iter > 0 || p.iters == 1)
            total += t1 - t0;
        bad += moe_check(&p, m.me, iter, m.out);
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
    gmux_comm_t *comm = moe_comm_open("moe_cuda");
    if (!comm)
        return 1;
    m.me = gmux_comm_rank(comm);
    m.p.ranks = gmux_comm_size(comm);
    m.nctx = 4;
    int rc = moe_params_check(&m.p) == 0 ? run(comm, m, json) : 1;
    return moe_comm_close(comm, rc);
}
