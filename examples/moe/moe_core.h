/*
 * MoE dispatch/combine example: the problem, shared by the CPU-thread
 * version (moe_cpu.c), the CUDA version (moe_cuda.cu) and their serial
 * reference.
 *
 * R ranks, each holding T tokens of H values; E = R * EL experts, rank q
 * owning experts q*EL .. q*EL+EL-1. Token g (global index rank*T + t) goes to
 * K distinct experts with integer weights; expert e maps x to a_e*x + b_e;
 * the combined output of a token is sum_k w_k * f_{e_k}(x). Every value is a
 * small integer held in a float, so any summation order gives the same bits
 * and results can be compared exactly.
 *
 * Wire layout (low-latency style, one put per (token, expert) plus one count
 * signal per (expert, source rank)):
 *   window = [recv | comb]
 *   recv[le][src][slot][MOE_META + H]   tokens received for local expert le
 *   comb[t][k][H]                       weighted expert outputs, back home
 *   message meta = {token t, top-k index k, weight w} (floats, exact)
 *   dispatch signal  MOE_SIG_DISP + le*R + src = (iter+1) << 32 | count
 *   combine signal   MOE_SIG_COMB + q          = (iter+1) << 32 | count
 *
 * Pure functions; usable from host and device code.
 */
#ifndef MOE_CORE_H
#define MOE_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define MOE_HD __host__ __device__ static inline
#else
#define MOE_HD static inline
#endif

#define MOE_META      3
#define MOE_MAX_K     8
#define MOE_SIG_DISP  16
#define MOE_SIG_COMB  8 /* < MOE_SIG_DISP; ranks up to 8 */
#define MOE_MAX_RANKS 8

typedef struct moe_params {
    int ranks;     /* R */
    int tokens;    /* T, per rank */
    int hidden;    /* H */
    int local_exp; /* EL, experts per rank */
    int topk;      /* K <= min(E, MOE_MAX_K) */
    int iters;
} moe_params_t;

MOE_HD int moe_experts(const moe_params_t *p)
{
    return p->ranks * p->local_exp;
}

MOE_HD size_t moe_msg_floats(const moe_params_t *p)
{
    return (size_t)MOE_META + (size_t)p->hidden;
}

MOE_HD size_t moe_recv_floats(const moe_params_t *p)
{
    return (size_t)p->local_exp * (size_t)p->ranks * (size_t)p->tokens * moe_msg_floats(p);
}

MOE_HD size_t moe_comb_floats(const moe_params_t *p)
{
    return (size_t)p->tokens * (size_t)p->topk * (size_t)p->hidden;
}

/* Offsets in floats inside the window. */
MOE_HD size_t moe_recv_off(const moe_params_t *p, int le, int src, int slot)
{
    return (((size_t)le * (size_t)p->ranks + (size_t)src) * (size_t)p->tokens + (size_t)slot) *
           moe_msg_floats(p);
}

MOE_HD size_t moe_comb_off(const moe_params_t *p, int t, int k)
{
    return moe_recv_floats(p) + ((size_t)t * (size_t)p->topk + (size_t)k) * (size_t)p->hidden;
}

MOE_HD uint32_t moe_hash(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* Input value j of token t of rank in iteration iter (varies per iteration,
 * so stale data from an earlier one never passes the check). */
MOE_HD float moe_input(int rank, int t, int j, int iter, const moe_params_t *p)
{
    int g = rank * p->tokens + t;
    return (float)((g * 31 + j * 7 + iter * 3) % 17 - 8);
}

/* The K distinct experts and weights of token t of rank. */
MOE_HD void moe_route(int rank, int t, const moe_params_t *p, int *experts, float *weights)
{
    uint32_t g = (uint32_t)(rank * p->tokens + t);
    int E = moe_experts(p);
    for (int k = 0; k < p->topk; k++) {
        uint32_t h = moe_hash(g * 977u + (uint32_t)k * 131u + 7u);
        int e = (int)(h % (uint32_t)E);
        for (int tries = 0; tries < E; tries++) {
            int dup = 0;
            for (int i = 0; i < k; i++)
                dup |= experts[i] == e;
            if (!dup)
                break;
            e = (e + 1) % E;
        }
        experts[k] = e;
        weights[k] = (float)(1 + (h >> 8) % 3);
    }
}

MOE_HD float moe_expert(int e, float x)
{
    return x * (float)(e % 3 + 1) + (float)(e % 7 - 3);
}

/* The serial reference: output value j of token t of rank in iteration iter. */
MOE_HD float moe_reference(int rank, int t, int j, int iter, const moe_params_t *p)
{
    int ex[MOE_MAX_K];
    float w[MOE_MAX_K];
    moe_route(rank, t, p, ex, w);
    float x = moe_input(rank, t, j, iter, p), sum = 0.0f;
    for (int k = 0; k < p->topk; k++)
        sum += w[k] * moe_expert(ex[k], x);
    return sum;
}

MOE_HD uint64_t moe_sig_value(int iter, uint32_t count)
{
    return (uint64_t)(iter + 1) << 32 | count;
}

#endif /* MOE_CORE_H */
