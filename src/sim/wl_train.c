/*
 * dl-train: data-parallel-free training of a decoder-only transformer
 * (Llama-2 shapes) per task: forward layer by layer (each layer's saved
 * activations in a segment of their own), loss, backward in reverse (every
 * GEMM as a data-gradient and a weight-gradient GEMM; a layer's activation
 * segment is freed once its backward is done), then a fused Adam step per
 * parameter group. Parameters bf16, gradients bf16, master weights and both
 * Adam moments fp32 (16 bytes per parameter), carved out of large segments.
 * Shapes and timings: docs/workloads.md.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/wl_internal.h"

enum {
    K_EMB_FWD,
    K_NORM_FWD,
    K_GEMM_NT,
    K_FLASH_FWD,
    K_ADD,
    K_SILU_FWD,
    K_XENT,
    K_GEMM_NN,
    K_GEMM_TN,
    K_SILU_BWD,
    K_NORM_BWD,
    K_FLASH_BWD,
    K_EMB_BWD,
    K_ADAM,
    K_N
};
static const char *const kernels[K_N] = {
    "train_embedding_fwd", "train_rmsnorm_fwd",  "train_gemm_bf16_nt",  "train_flash_attn_fwd",
    "train_add",           "train_silu_mul_fwd", "train_cross_entropy", "train_gemm_bf16_nn",
    "train_gemm_bf16_tn",  "train_silu_mul_bwd", "train_rmsnorm_bwd",   "train_flash_attn_bwd",
    "train_embedding_bwd", "train_adam_fused"};

static const char *const models[] = {"llama2-7b", "llama2-13b", NULL};
static const uint64_t model_dims[][5] = {
    {32, 4096, 11008, 32, 32000}, /* layers, hidden, ffn, heads, vocab */
    {40, 5120, 13824, 40, 32000},
};

typedef struct tr_cfg {
    uint64_t tasks, model, layers, hidden, ffn, heads, batch, seq, steps, segment;
    uint64_t vocab, T; /* derived: T tokens per step */
} tr_cfg_t;

#define OFF(f) offsetof(tr_cfg_t, f)
static const wl_setting_t settings[] = {
    {"tasks", WL_T_COUNT, "3", 1, 256, OFF(tasks), NULL, "training jobs (tasks)"},
    {"model", WL_T_CHOICE, "llama2-7b", 0, 0, OFF(model), models, "model shape"},
    {"layers", WL_T_COUNT, "0", 0, 1024, OFF(layers), NULL, "layers (0: the model's)"},
    {"hidden", WL_T_COUNT, "0", 0, 65536, OFF(hidden), NULL, "hidden size (0: the model's)"},
    {"ffn", WL_T_COUNT, "0", 0, 262144, OFF(ffn), NULL, "MLP inner size (0: the model's)"},
    {"heads", WL_T_COUNT, "0", 0, 1024, OFF(heads), NULL, "attention heads (0: the model's)"},
    {"batch", WL_T_COUNT, "1", 1, 1024, OFF(batch), NULL, "sequences per step"},
    {"seq", WL_T_COUNT, "2048", 16, 1 << 20, OFF(seq), NULL, "tokens per sequence"},
    {"steps", WL_T_COUNT, "3", 1, 1 << 20, OFF(steps), NULL, "training steps"},
    {"segment", WL_T_SIZE, "2GiB", 64ull << 20, 1ull << 40, OFF(segment), NULL,
     "caching-allocator segment size for parameters and optimizer state"},
};

static int finish(void *c, char *err, size_t errlen)
{
    tr_cfg_t *cfg = c;
    const uint64_t *m = model_dims[cfg->model];
    uint64_t *f[] = {&cfg->layers, &cfg->hidden, &cfg->ffn, &cfg->heads};
    for (int i = 0; i < 4; i++)
        if (*f[i] == 0)
            *f[i] = m[i];
    cfg->vocab = m[4];
    cfg->T = cfg->batch * cfg->seq;
    if (cfg->hidden % cfg->heads) {
        snprintf(err, errlen, "hidden must be a multiple of heads");
        return -1;
    }
    return 0;
}

static uint32_t ntasks(const void *c)
{
    return (uint32_t)((const tr_cfg_t *)c)->tasks;
}

/* A parameter group: the same element range in the five state arrays. */
typedef struct tr_group {
    uint64_t p, g, master, m, v; /* bf16, bf16, fp32, fp32, fp32 */
    uint64_t n;                  /* elements */
} tr_group_t;

/* A layer's saved activations (one segment), or the head's. */
typedef struct tr_act {
    wl_seg_t seg;
    uint64_t x, n1, qkv, attn, lse, xm, n2, gu, a;
} tr_act_t;

typedef struct tr_task {
    wl_heap_t heap;
    uint64_t seed;
    int phase; /* 0 setup, 1 forward, 2 backward, 3 optimizer, 4 free */
    uint64_t step, idx;
    wl_pool_t pools[5];
    tr_group_t *groups; /* 0 embedding, 1..L layers, L+1 final norm and lm head */
    tr_act_t *act;      /* 0..L-1 layers, L head */
    wl_seg_t data, work;
    uint64_t tokens, labels, dy, dt, dt2, loss;
    uint64_t *rows; /* bitmap over the vocabulary: the rows this step's tokens use */
} tr_task_t;

static void task_init(void *t, const void *c, uint32_t index, uint32_t global, uint64_t seed)
{
    tr_task_t *k = t;
    const tr_cfg_t *cfg = c;
    (void)index;
    wl_heap_init(&k->heap, global);
    k->seed = seed;
    for (int i = 0; i < 5; i++)
        k->pools[i].seg_size = cfg->segment * (i < 2 ? 1 : 2);
}

static void task_fini(void *t)
{
    tr_task_t *k = t;
    for (int i = 0; i < 5; i++)
        wl_pool_fini(&k->pools[i]);
    free(k->groups);
    free(k->act);
    free(k->rows);
}

static const uint8_t R = ENG_ACCESS_READ, W = ENG_ACCESS_WRITE, RW = ENG_ACCESS_RW;

static void setup(tr_task_t *k, const tr_cfg_t *c, wl_buf_t *b)
{
    uint64_t h = c->hidden, L = c->layers, T = c->T;
    k->groups = calloc(L + 2, sizeof(*k->groups));
    k->act = calloc(L + 1, sizeof(*k->act));
    k->rows = calloc((c->vocab + 63) / 64, sizeof(*k->rows));
    if (!k->groups || !k->act || !k->rows) {
        b->oom = 1;
        return;
    }
    for (uint64_t g = 0; g < L + 2; g++) {
        tr_group_t *G = &k->groups[g];
        G->n = g == 0   ? c->vocab * h
               : g <= L ? 2 * h + 4 * h * h + 3 * c->ffn * h
                        : h + c->vocab * h;
        G->p = wl_pool_carve(&k->pools[0], b, &k->heap, G->n * 2);
        G->g = wl_pool_carve(&k->pools[1], b, &k->heap, G->n * 2);
        G->master = wl_pool_carve(&k->pools[2], b, &k->heap, G->n * 4);
        G->m = wl_pool_carve(&k->pools[3], b, &k->heap, G->n * 4);
        G->v = wl_pool_carve(&k->pools[4], b, &k->heap, G->n * 4);
    }
    k->data = wl_segment(b, &k->heap, 2 * T * 4 + 2 * WL_TENSOR_ALIGN + 4096);
    k->tokens = wl_carve(&k->data, T * 4);
    k->labels = wl_carve(&k->data, T * 4);
    k->loss = wl_carve(&k->data, 4);
    uint64_t wide = (2 * c->ffn > 3 * h ? 2 * c->ffn : 3 * h);
    k->work = wl_segment(b, &k->heap, T * h * 2 + 2 * T * wide * 2 + 4 * WL_TENSOR_ALIGN);
    k->dy = wl_carve(&k->work, T * h * 2);
    k->dt = wl_carve(&k->work, T * wide * 2);
    k->dt2 = wl_carve(&k->work, T * wide * 2);
}

/* Offsets (elements) of a layer's tensors inside its group. */
#define P_NORM1(h)      0
#define P_WQKV(h)       (h)
#define P_WO(h)         ((h) + 3 * (h) * (h))
#define P_NORM2(h)      ((h) + 4 * (h) * (h))
#define P_WGU(h)        (2 * (h) + 4 * (h) * (h))
#define P_WDOWN(h, ffn) (2 * (h) + 4 * (h) * (h) + 2 * (ffn) * (h))

/* C[M,N] (op)= A[M,K] . B[N,K]: one of the three GEMM kernels. */
static void gemm(wl_buf_t *b, uint32_t kernel, uint64_t A, uint64_t B, uint64_t C, uint64_t M,
                 uint64_t N, uint64_t K, uint8_t cmode)
{
    double bytes = 2.0 * (M * K + N * K + M * N * (cmode == RW ? 2 : 1));
    wl_launch(b, kernel, (uint32_t)(((M + 127) / 128) * ((N + 127) / 128)), 256,
              wl_time_ns(2.0 * M * N * K, WL_H200_BF16_FLOPS, bytes, 1.0));
    wl_ptr(b, A);
    wl_ptr(b, B);
    wl_ptr(b, C);
    wl_val(b, M);
    wl_val(b, N);
    wl_val(b, K);
    wl_touch(b, A, M * K * 2, R);
    wl_touch(b, B, N * K * 2, R);
    wl_touch(b, C, M * N * 2, cmode);
}

/* Element-wise kernel over n bf16 values: inputs in[0..nin), one output. */
static void eltwise(wl_buf_t *b, uint32_t kernel, const uint64_t *in, const uint64_t *in_len,
                    int nin, uint64_t out, uint64_t out_len, uint8_t omode, uint64_t rows,
                    uint64_t cols)
{
    double bytes = (double)out_len * (omode == RW ? 2 : 1);
    for (int i = 0; i < nin; i++)
        bytes += (double)in_len[i];
    wl_launch(b, kernel, (uint32_t)rows, 256,
              wl_time_ns(8.0 * rows * cols, WL_H200_FP32_FLOPS, bytes, 1.0));
    for (int i = 0; i < nin; i++)
        wl_ptr(b, in[i]);
    wl_ptr(b, out);
    wl_val(b, rows);
    wl_val(b, cols);
    for (int i = 0; i < nin; i++)
        wl_touch(b, in[i], in_len[i], R);
    wl_touch(b, out, out_len, omode);
}

static void flash(wl_buf_t *b, const tr_cfg_t *c, const tr_act_t *A, int bwd, uint64_t dout,
                  uint64_t dqkv)
{
    uint64_t T = c->T, h = c->hidden;
    /* causal attention: 2*s*s*h*batch FLOPs forward (half of the full 4*s*s*h), 2.5x backward */
    double flops = 2.0 * c->seq * c->seq * h * c->batch * (bwd ? 2.5 : 1.0);
    double bytes = 2.0 * T * 3 * h + 2.0 * T * h + 4.0 * c->heads * T;
    wl_launch(b, bwd ? K_FLASH_BWD : K_FLASH_FWD,
              (uint32_t)(c->batch * c->heads * (c->seq / 128 + 1)), 128,
              wl_time_ns(flops, WL_H200_BF16_FLOPS, bytes * (bwd ? 2.0 : 1.0), 1.0));
    wl_ptr(b, A->qkv);
    wl_ptr(b, A->attn);
    wl_ptr(b, A->lse);
    if (bwd) {
        wl_ptr(b, dout);
        wl_ptr(b, dqkv);
    }
    wl_val(b, c->batch);
    wl_val(b, c->seq);
    wl_val(b, c->heads);
    wl_val(b, h / c->heads);
    wl_touch(b, A->qkv, T * 3 * h * 2, R);
    wl_touch(b, A->attn, T * h * 2, bwd ? R : W);
    wl_touch(b, A->lse, c->heads * T * 4, bwd ? R : W);
    if (bwd) {
        wl_touch(b, dout, T * h * 2, R);
        wl_touch(b, dqkv, T * 3 * h * 2, W);
    }
}

static tr_act_t new_act(tr_task_t *k, const tr_cfg_t *c, wl_buf_t *b, int head)
{
    uint64_t T = c->T, h = c->hidden, n = T * h * 2;
    tr_act_t a = {0};
    uint64_t size = head ? 2 * n + T * c->vocab * 2
                         : 6 * n + T * 3 * h * 2 + c->heads * T * 4 + T * 3 * c->ffn * 2;
    a.seg = wl_segment(b, &k->heap, size + 16 * WL_TENSOR_ALIGN);
    a.x = wl_carve(&a.seg, n);
    a.n1 = wl_carve(&a.seg, n);
    if (head) {
        a.gu = wl_carve(&a.seg, T * c->vocab * 2); /* logits */
        return a;
    }
    a.qkv = wl_carve(&a.seg, T * 3 * h * 2);
    a.attn = wl_carve(&a.seg, n);
    a.lse = wl_carve(&a.seg, c->heads * T * 4);
    a.xm = wl_carve(&a.seg, n);
    a.n2 = wl_carve(&a.seg, n);
    a.gu = wl_carve(&a.seg, T * 2 * c->ffn * 2);
    a.a = wl_carve(&a.seg, T * c->ffn * 2);
    return a;
}

/* The embedding rows of this step's tokens (data-dependent), same in forward and backward. */
static void embedding(tr_task_t *k, const tr_cfg_t *c, wl_buf_t *b, int bwd)
{
    uint64_t T = c->T, h = c->hidden, rowb = h * 2, V = c->vocab;
    wl_rng_t r = {wl_mix(k->seed, k->step)};
    /* a bitmap, not a sorted list of T rows: T reaches 2^30, the vocabulary
     * is 32000 rows, and only the runs of rows used become ranges */
    memset(k->rows, 0, (V + 63) / 64 * sizeof(*k->rows));
    for (uint64_t i = 0; i < T; i++) {
        uint64_t row = wl_rng_below(&r, V);
        k->rows[row / 64] |= 1ull << (row % 64);
    }
    uint64_t table = bwd ? k->groups[0].g : k->groups[0].p;
    wl_launch(b, bwd ? K_EMB_BWD : K_EMB_FWD, (uint32_t)T, 256,
              wl_time_ns(0, WL_H200_FP32_FLOPS, 3.0 * T * rowb, 0.5));
    wl_ptr(b, k->tokens);
    wl_ptr(b, table);
    wl_ptr(b, bwd ? k->dy : k->act[0].x);
    wl_val(b, T);
    wl_val(b, h);
    wl_touch(b, k->tokens, T * 4, R);
    for (uint64_t i = 0; i < V;) {
        if (!(k->rows[i / 64] >> (i % 64) & 1)) {
            i++;
            continue;
        }
        uint64_t j = i + 1; /* a run of used rows: one range */
        while (j < V && k->rows[j / 64] >> (j % 64) & 1)
            j++;
        wl_touch(b, table + i * rowb, (j - i) * rowb, bwd ? RW : R);
        i = j;
    }
    wl_touch(b, bwd ? k->dy : k->act[0].x, T * rowb, bwd ? R : W);
}

static void forward_layer(tr_task_t *k, const tr_cfg_t *c, wl_buf_t *b, uint64_t l)
{
    uint64_t T = c->T, h = c->hidden, ffn = c->ffn, n = T * h * 2;
    const tr_group_t *G = &k->groups[l + 1];
    tr_act_t *A = &k->act[l];
    k->act[l + 1] = new_act(k, c, b, l + 1 == c->layers);
    uint64_t next = k->act[l + 1].x;
    uint64_t in[2], len[2];
    in[0] = A->x, in[1] = G->p + P_NORM1(h) * 2, len[0] = n, len[1] = h * 2;
    eltwise(b, K_NORM_FWD, in, len, 2, A->n1, n, W, T, h);
    gemm(b, K_GEMM_NT, A->n1, G->p + P_WQKV(h) * 2, A->qkv, T, 3 * h, h, W);
    flash(b, c, A, 0, 0, 0);
    gemm(b, K_GEMM_NT, A->attn, G->p + P_WO(h) * 2, k->dt, T, h, h, W);
    in[0] = A->x, in[1] = k->dt, len[0] = len[1] = n;
    eltwise(b, K_ADD, in, len, 2, A->xm, n, W, T, h);
    in[0] = A->xm, in[1] = G->p + P_NORM2(h) * 2, len[0] = n, len[1] = h * 2;
    eltwise(b, K_NORM_FWD, in, len, 2, A->n2, n, W, T, h);
    gemm(b, K_GEMM_NT, A->n2, G->p + P_WGU(h) * 2, A->gu, T, 2 * ffn, h, W);
    in[0] = A->gu, len[0] = T * 2 * ffn * 2;
    eltwise(b, K_SILU_FWD, in, len, 1, A->a, T * ffn * 2, W, T, ffn);
    gemm(b, K_GEMM_NT, A->a, G->p + P_WDOWN(h, ffn) * 2, k->dt, T, h, ffn, W);
    in[0] = A->xm, in[1] = k->dt, len[0] = len[1] = n;
    eltwise(b, K_ADD, in, len, 2, next, n, W, T, h);
}

/* rmsnorm backward: dx (into dy, which also carries the residual gradient) and dweight. */
static void norm_bwd(wl_buf_t *b, const tr_cfg_t *c, tr_task_t *k, uint64_t x, uint64_t w,
                     uint64_t gw, uint64_t dnorm)
{
    uint64_t T = c->T, h = c->hidden, n = T * h * 2;
    wl_launch(b, K_NORM_BWD, (uint32_t)T, 256,
              wl_time_ns(10.0 * T * h, WL_H200_FP32_FLOPS, 4.0 * n, 1.0));
    wl_ptr(b, x);
    wl_ptr(b, w);
    wl_ptr(b, dnorm);
    wl_ptr(b, k->dy);
    wl_ptr(b, gw);
    wl_val(b, T);
    wl_val(b, h);
    wl_touch(b, x, n, R);
    wl_touch(b, w, h * 2, R);
    wl_touch(b, dnorm, n, R);
    wl_touch(b, k->dy, n, RW);
    wl_touch(b, gw, h * 2, RW);
}

static void backward_layer(tr_task_t *k, const tr_cfg_t *c, wl_buf_t *b, uint64_t l)
{
    uint64_t T = c->T, h = c->hidden, ffn = c->ffn;
    const tr_group_t *G = &k->groups[l + 1];
    tr_act_t *A = &k->act[l];
    gemm(b, K_GEMM_NN, k->dy, G->p + P_WDOWN(h, ffn) * 2, k->dt, T, ffn, h, W);
    gemm(b, K_GEMM_TN, k->dy, A->a, G->g + P_WDOWN(h, ffn) * 2, h, ffn, T, RW);
    uint64_t in[2] = {A->gu, k->dt}, len[2] = {T * 2 * ffn * 2, T * ffn * 2};
    eltwise(b, K_SILU_BWD, in, len, 2, k->dt2, T * 2 * ffn * 2, W, T, ffn);
    gemm(b, K_GEMM_NN, k->dt2, G->p + P_WGU(h) * 2, k->dt, T, h, 2 * ffn, W);
    gemm(b, K_GEMM_TN, k->dt2, A->n2, G->g + P_WGU(h) * 2, 2 * ffn, h, T, RW);
    norm_bwd(b, c, k, A->xm, G->p + P_NORM2(h) * 2, G->g + P_NORM2(h) * 2, k->dt);
    gemm(b, K_GEMM_NN, k->dy, G->p + P_WO(h) * 2, k->dt, T, h, h, W);
    gemm(b, K_GEMM_TN, k->dy, A->attn, G->g + P_WO(h) * 2, h, h, T, RW);
    flash(b, c, A, 1, k->dt, k->dt2);
    gemm(b, K_GEMM_NN, k->dt2, G->p + P_WQKV(h) * 2, k->dt, T, h, 3 * h, W);
    gemm(b, K_GEMM_TN, k->dt2, A->n1, G->g + P_WQKV(h) * 2, 3 * h, h, T, RW);
    norm_bwd(b, c, k, A->x, G->p + P_NORM1(h) * 2, G->g + P_NORM1(h) * 2, k->dt);
    wl_release(b, &A->seg); /* this layer's saved activations are no longer needed */
}

/* Final norm, lm head, loss and their backward. */
static void head(tr_task_t *k, const tr_cfg_t *c, wl_buf_t *b)
{
    uint64_t T = c->T, h = c->hidden, V = c->vocab, n = T * h * 2;
    const tr_group_t *G = &k->groups[c->layers + 1];
    tr_act_t *A = &k->act[c->layers];
    uint64_t w_norm = G->p, w_lm = G->p + h * 2, logits = A->gu;
    uint64_t in[2] = {A->x, w_norm}, len[2] = {n, h * 2};
    eltwise(b, K_NORM_FWD, in, len, 2, A->n1, n, W, T, h);
    gemm(b, K_GEMM_NT, A->n1, w_lm, logits, T, V, h, W);
    in[0] = k->labels, len[0] = T * 4;
    eltwise(b, K_XENT, in, len, 1, logits, T * V * 2, RW, T, V); /* logits become dlogits */
    gemm(b, K_GEMM_NN, logits, w_lm, k->dt, T, h, V, W);
    gemm(b, K_GEMM_TN, logits, A->n1, G->g + h * 2, V, h, T, RW);
    /* dy starts as the final norm's input gradient */
    wl_launch(b, K_NORM_BWD, (uint32_t)T, 256,
              wl_time_ns(10.0 * T * h, WL_H200_FP32_FLOPS, 4.0 * n, 1.0));
    wl_ptr(b, A->x);
    wl_ptr(b, w_norm);
    wl_ptr(b, k->dt);
    wl_ptr(b, k->dy);
    wl_ptr(b, G->g);
    wl_val(b, T);
    wl_val(b, h);
    wl_touch(b, A->x, n, R);
    wl_touch(b, w_norm, h * 2, R);
    wl_touch(b, k->dt, n, R);
    wl_touch(b, k->dy, n, W);
    wl_touch(b, G->g, h * 2, RW);
    wl_release(b, &A->seg);
}

static void adam(wl_buf_t *b, const tr_group_t *G, uint64_t step)
{
    uint64_t n = G->n;
    wl_launch(b, K_ADAM, (uint32_t)((n + 65535) / 65536), 512,
              wl_time_ns(12.0 * n, WL_H200_FP32_FLOPS, 2.0 * n * 16, 1.0));
    wl_ptr(b, G->p);
    wl_ptr(b, G->g);
    wl_ptr(b, G->master);
    wl_ptr(b, G->m);
    wl_ptr(b, G->v);
    wl_val(b, n);
    wl_val(b, step + 1);
    wl_touch(b, G->p, n * 2, RW);
    wl_touch(b, G->g, n * 2, RW); /* read, then zeroed for the next step */
    wl_touch(b, G->master, n * 4, RW);
    wl_touch(b, G->m, n * 4, RW);
    wl_touch(b, G->v, n * 4, RW);
}

static int refill(void *t, const void *cv, wl_buf_t *b)
{
    tr_task_t *k = t;
    const tr_cfg_t *c = cv;
    uint64_t L = c->layers;
    switch (k->phase) {
    case 0:
        setup(k, c, b);
        k->phase = 1;
        k->idx = 0;
        return 0;
    case 1: /* idx 0: embedding, 1..L: layers, L+1: head with its backward */
        if (k->idx == 0) {
            k->act[0] = new_act(k, c, b, L == 0);
            embedding(k, c, b, 0);
        } else if (k->idx <= L) {
            forward_layer(k, c, b, k->idx - 1);
        } else {
            head(k, c, b);
            k->phase = 2;
            k->idx = L;
            return 0;
        }
        k->idx++;
        return 0;
    case 2: /* idx L..1: layers in reverse, 0: embedding */
        if (k->idx > 0) {
            backward_layer(k, c, b, k->idx - 1);
            k->idx--;
        } else {
            embedding(k, c, b, 1);
            k->phase = 3;
        }
        return 0;
    case 3: /* one fused Adam launch per parameter group */
        for (uint64_t g = 0; g < L + 2; g++)
            adam(b, &k->groups[g], k->step);
        k->idx = 0;
        k->phase = ++k->step == c->steps ? 4 : 1;
        return 0;
    default:
        for (int i = 0; i < 5; i++)
            wl_pool_release(&k->pools[i], b);
        wl_release(b, &k->data);
        wl_release(b, &k->work);
        return 1;
    }
}

const wl_def_t wl_dl_train = {
    .name = "dl-train",
    .summary = "training of a decoder-only transformer (Llama-2 shapes) with Adam",
    .settings = settings,
    .nsettings = sizeof(settings) / sizeof(settings[0]),
    .cfg_size = sizeof(tr_cfg_t),
    .finish = finish,
    .ntasks = ntasks,
    .kernels = kernels,
    .nkernels = K_N,
    .task_size = sizeof(tr_task_t),
    .task_init = task_init,
    .refill = refill,
    .task_fini = task_fini,
};
