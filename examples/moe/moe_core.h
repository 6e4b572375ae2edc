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
 * Pure functions (but for the buffers they are given); usable from host and
 * device code.
 */
#ifndef MOE_CORE_H
#define MOE_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

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

/*
 * The per-token steps of dispatch, experts and combine, the same code in
 * moe_cpu.c (one lane: lane 0 of 1) and in moe_cuda.cu's kernels (lane
 * threadIdx.x of blockDim.x; the lanes of a block pass the same arguments
 * but their lane). Statuses are gmux_status_t, as the host API's.
 */

/* A value another rank put: uncached on the device (the window is mapped
 * host memory written behind the GPU's back), plain on the host. */
MOE_HD float moe_ld(const float *x)
{
#ifdef __CUDA_ARCH__
    return __ldcv(x);
#else
    return *x;
#endif
}

/* Where expert e lives: rank *q, local expert *le there. */
MOE_HD void moe_expert_home(const moe_params_t *p, int e, int *q, int *le)
{
    *q = e / p->local_exp;
    *le = e % p->local_exp;
}

/* Signal ids: the count of (local expert le, source src), the results of rank q. */
MOE_HD uint32_t moe_sig_disp(const moe_params_t *p, int le, int src)
{
    return (uint32_t)(MOE_SIG_DISP + le * p->ranks + src);
}

MOE_HD uint32_t moe_sig_comb(int q)
{
    return (uint32_t)(MOE_SIG_COMB + q);
}

/* Contexts of nctx: dispatch spreads local experts over all but the last,
 * the results go back on the last. */
MOE_HD uint32_t moe_disp_ctx(uint32_t nctx, int le)
{
    return (uint32_t)le % (nctx > 1 ? nctx - 1 : 1);
}

MOE_HD uint32_t moe_comb_ctx(uint32_t nctx)
{
    return nctx - 1;
}

/* Offset in floats of message (t, k) in the send buffer [t][k][msg]. */
MOE_HD size_t moe_send_off(const moe_params_t *p, int t, int k)
{
    return ((size_t)t * (size_t)p->topk + (size_t)k) * moe_msg_floats(p);
}

/* Offset in floats of the result of received message (le, src, slot) in the
 * result buffer [le][src][slot][H]. */
MOE_HD size_t moe_res_off(const moe_params_t *p, int le, int src, int slot)
{
    return (((size_t)le * (size_t)p->ranks + (size_t)src) * (size_t)p->tokens + (size_t)slot) *
           (size_t)p->hidden;
}

/* Writes message (t, k) of rank me, weight w, for iteration iter into s:
 * the meta by lane 0, values lane, lane + lanes, ... */
MOE_HD void moe_msg_build(const moe_params_t *p, int me, int t, int k, float w, int iter, float *s,
                          int lane, int lanes)
{
    if (lane == 0) {
        s[0] = (float)t;
        s[1] = (float)k;
        s[2] = w;
    }
    for (int j = lane; j < p->hidden; j += lanes)
        s[MOE_META + j] = moe_input(me, t, j, iter, p);
}

/* The count in a dispatch signal read for iteration iter: GMUX_ERR_STATE
 * when it is another iteration's, GMUX_ERR_RANGE above the T slots.
 * *count is written only on success. */
MOE_HD gmux_status_t moe_count_parse(const moe_params_t *p, int iter, uint64_t v, uint32_t *count)
{
    if ((v >> 32) != (uint64_t)iter + 1)
        return GMUX_ERR_STATE;
    if ((uint32_t)v > (uint32_t)p->tokens)
        return GMUX_ERR_RANGE;
    *count = (uint32_t)v;
    return GMUX_OK;
}

/* The meta of a received message: GMUX_ERR_PARSE unless the token is an
 * integer in 0..T-1 and k one in 0..K-1 (tested as floats, so that no
 * out-of-range or NaN value is ever converted). Outputs only on success. */
MOE_HD gmux_status_t moe_msg_parse(const moe_params_t *p, const float *in, int *t, int *k, float *w)
{
    float ft = moe_ld(&in[0]), fk = moe_ld(&in[1]);
    if (!(ft >= 0.0f && ft < (float)p->tokens && fk >= 0.0f && fk < (float)p->topk))
        return GMUX_ERR_PARSE;
    if ((float)(int)ft != ft || (float)(int)fk != fk)
        return GMUX_ERR_PARSE;
    *t = (int)ft;
    *k = (int)fk;
    *w = moe_ld(&in[2]);
    return GMUX_OK;
}

/* Expert e of this rank on received message `slot` of (local expert le,
 * source src) in the window: checks its meta, writes lane's values of
 * w * f_e(x) into the result buffer res and sets *comb_off (bytes, in the
 * source's window) and *y (the result row) for its put. */
MOE_HD gmux_status_t moe_expert_msg(const moe_params_t *p, const float *window, float *res, int e,
                                    int le, int src, int slot, int lane, int lanes,
                                    size_t *comb_off, float **y)
{
    const float *in = window + moe_recv_off(p, le, src, slot);
    int t, k;
    float w;
    gmux_status_t st = moe_msg_parse(p, in, &t, &k, &w);
    if (st != GMUX_OK)
        return st;
    float *row = res + moe_res_off(p, le, src, slot);
    for (int j = lane; j < p->hidden; j += lanes)
        row[j] = w * moe_expert(e, moe_ld(&in[MOE_META + j]));
    *comb_off = moe_comb_off(p, t, k) * sizeof(float);
    *y = row;
    return GMUX_OK;
}

/* Combines token t: out[t][j] = sum over k, in k order, of comb[t][k][j],
 * for j = lane, lane + lanes, ... */
MOE_HD void moe_combine_token(const moe_params_t *p, const float *window, float *out, int t,
                              int lane, int lanes)
{
    for (int j = lane; j < p->hidden; j += lanes) {
        float sum = 0.0f;
        for (int k = 0; k < p->topk; k++)
            sum += moe_ld(&window[moe_comb_off(p, t, k) + (size_t)j]);
        out[(size_t)t * (size_t)p->hidden + (size_t)j] = sum;
    }
}

#endif /* MOE_CORE_H */
