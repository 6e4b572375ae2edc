/*
 * llm-decode: N instances of a decoder-only LLM (Llama-2 shapes) generating
 * tokens. Each instance loads its weights layer by layer into large segments
 * (tensors carved out of them, as a caching allocator does), reserves a KV
 * cache per layer for prompt + generated tokens, and for each new token runs
 * every layer: the weights are read layer by layer and the attention reads the
 * KV cache, whose used part grows by one token per step. Shapes and timings:
 * docs/workloads.md.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/wl_internal.h"

enum { K_EMBED, K_NORM, K_ADD_NORM, K_GEMM, K_ROPE, K_KV_APPEND, K_ATTN, K_SILU, K_SAMPLE, K_N };
static const char *const kernels[K_N] = {
    "llm_embedding_gather", "llm_rmsnorm",          "llm_fused_add_rmsnorm",
    "llm_gemm_bf16",        "llm_rotary_embedding", "llm_kv_cache_append",
    "llm_attention_decode", "llm_silu_and_mul",     "llm_argmax_sample"};

static const char *const models[] = {"llama2-7b", "llama2-13b", "llama2-70b", NULL};
/* layers, hidden, ffn, heads, kv_heads, vocab: from each model's published config.json */
static const uint64_t model_dims[][6] = {
    {32, 4096, 11008, 32, 32, 32000},
    {40, 5120, 13824, 40, 40, 32000},
    {80, 8192, 28672, 64, 8, 32000},
};

typedef struct llm_cfg {
    uint64_t instances, model, layers, hidden, ffn, heads, kv_heads, vocab, batch, prompt, tokens,
        segment;
    uint64_t head_dim, kv_dim, max_ctx; /* derived */
} llm_cfg_t;

#define OFF(f) offsetof(llm_cfg_t, f)
static const wl_setting_t settings[] = {
    {"instances", WL_T_COUNT, "8", 1, 256, OFF(instances), NULL, "model instances (tasks)"},
    {"model", WL_T_CHOICE, "llama2-13b", 0, 0, OFF(model), models, "model shape"},
    {"layers", WL_T_COUNT, "0", 0, 1024, OFF(layers), NULL, "decoder layers (0: the model's)"},
    {"hidden", WL_T_COUNT, "0", 0, 65536, OFF(hidden), NULL, "hidden size (0: the model's)"},
    {"ffn", WL_T_COUNT, "0", 0, 262144, OFF(ffn), NULL, "MLP inner size (0: the model's)"},
    {"heads", WL_T_COUNT, "0", 0, 1024, OFF(heads), NULL, "attention heads (0: the model's)"},
    {"kv-heads", WL_T_COUNT, "0", 0, 1024, OFF(kv_heads), NULL, "KV heads (0: the model's)"},
    {"batch", WL_T_COUNT, "8", 1, 4096, OFF(batch), NULL, "sequences decoded together"},
    {"prompt", WL_T_COUNT, "2048", 1, 1 << 20, OFF(prompt), NULL,
     "tokens already in the KV cache at the start"},
    {"tokens", WL_T_COUNT, "16", 1, 1 << 20, OFF(tokens), NULL, "decode steps (new tokens)"},
    {"segment", WL_T_SIZE, "2GiB", 64ull << 20, 1ull << 40, OFF(segment), NULL,
     "caching-allocator segment size for the weights"},
};

static int finish(void *c, char *err, size_t errlen)
{
    llm_cfg_t *cfg = c;
    const uint64_t *m = model_dims[cfg->model];
    uint64_t *f[] = {&cfg->layers, &cfg->hidden, &cfg->ffn, &cfg->heads, &cfg->kv_heads};
    for (int i = 0; i < 5; i++)
        if (*f[i] == 0)
            *f[i] = m[i];
    cfg->vocab = m[5];
    if (cfg->hidden % cfg->heads || cfg->heads % cfg->kv_heads) {
        snprintf(err, errlen, "hidden must be a multiple of heads, heads of kv-heads");
        return -1;
    }
    cfg->head_dim = cfg->hidden / cfg->heads;
    cfg->kv_dim = cfg->kv_heads * cfg->head_dim;
    cfg->max_ctx = cfg->prompt + cfg->tokens;
    /* the largest tensor must fit in a segment */
    uint64_t big = cfg->ffn * 2 * cfg->hidden * 2;
    if (cfg->vocab * cfg->hidden * 2 > big)
        big = cfg->vocab * cfg->hidden * 2;
    if (big > cfg->segment) {
        snprintf(err, errlen, "segment is smaller than the largest weight (%llu bytes)",
                 (unsigned long long)big);
        return -1;
    }
    return 0;
}

static uint32_t ntasks(const void *c)
{
    return (uint32_t)((const llm_cfg_t *)c)->instances;
}

typedef struct llm_layer {
    uint64_t attn_norm, wqkv, wo, mlp_norm, wgu, wdown;
    wl_seg_t kv; /* K then V: [batch][max_ctx][kv_dim] each */
} llm_layer_t;

typedef struct llm_task {
    wl_heap_t heap;
    wl_rng_t rng;
    int phase; /* 0 allocate, 1 decode, 2 free */
    uint64_t step;
    uint64_t layer; /* 0: embedding, 1..layers: layers, layers+1: head */
    llm_layer_t *L;
    wl_seg_t *wsegs;
    uint32_t nwsegs;
    wl_seg_t work;
    uint64_t emb, final_norm, lm_head;
    uint64_t x, resid, qkv, attn, gu, act, logits, tok;
} llm_task_t;

static void task_init(void *t, const void *c, uint32_t index, uint32_t global, uint64_t seed)
{
    llm_task_t *k = t;
    (void)c;
    (void)index;
    wl_heap_init(&k->heap, global);
    k->rng.s = seed;
}

static void task_fini(void *t)
{
    llm_task_t *k = t;
    free(k->L);
    free(k->wsegs);
}

/* A weight tensor from the current weights segment, opening a new one when full. */
static uint64_t weight(llm_task_t *k, const llm_cfg_t *c, wl_buf_t *b, uint64_t bytes)
{
    wl_seg_t *s = k->nwsegs ? &k->wsegs[k->nwsegs - 1] : NULL;
    if (!s || s->used + bytes > s->size) {
        k->wsegs[k->nwsegs++] = wl_segment(b, &k->heap, c->segment);
        s = &k->wsegs[k->nwsegs - 1];
    }
    return wl_carve(s, bytes);
}

static void allocate(llm_task_t *k, const llm_cfg_t *c, wl_buf_t *b)
{
    uint64_t h = c->hidden, bt = c->batch;
    k->L = calloc(c->layers, sizeof(*k->L));
    k->wsegs = calloc(6 * c->layers + 4, sizeof(*k->wsegs));
    if (!k->L || !k->wsegs) {
        b->oom = 1;
        return;
    }
    k->emb = weight(k, c, b, c->vocab * h * 2);
    for (uint64_t l = 0; l < c->layers; l++) {
        llm_layer_t *L = &k->L[l];
        L->attn_norm = weight(k, c, b, h * 2);
        L->wqkv = weight(k, c, b, (h + 2 * c->kv_dim) * h * 2);
        L->wo = weight(k, c, b, h * h * 2);
        L->mlp_norm = weight(k, c, b, h * 2);
        L->wgu = weight(k, c, b, 2 * c->ffn * h * 2);
        L->wdown = weight(k, c, b, c->ffn * h * 2);
    }
    k->final_norm = weight(k, c, b, h * 2);
    k->lm_head = weight(k, c, b, c->vocab * h * 2);
    for (uint64_t l = 0; l < c->layers; l++)
        k->L[l].kv = wl_segment(b, &k->heap, 2 * bt * c->max_ctx * c->kv_dim * 2);
    uint64_t ws = 4 * (bt * h * 2 + 512) + bt * (h + 2 * c->kv_dim) * 2 + bt * 3 * c->ffn * 2 +
                  bt * c->vocab * 4 + bt * 4 + 16 * 512;
    k->work = wl_segment(b, &k->heap, ws);
    k->x = wl_carve(&k->work, bt * h * 2);
    k->resid = wl_carve(&k->work, bt * h * 2);
    k->qkv = wl_carve(&k->work, bt * (h + 2 * c->kv_dim) * 2);
    k->attn = wl_carve(&k->work, bt * h * 2);
    k->gu = wl_carve(&k->work, bt * 2 * c->ffn * 2);
    k->act = wl_carve(&k->work, bt * c->ffn * 2);
    k->logits = wl_carve(&k->work, bt * c->vocab * 4);
    k->tok = wl_carve(&k->work, bt * 4);
}

/* C[M,N] = A[M,K] x B[N,K]^T, bf16: the weight B is read whole. */
static void gemm(wl_buf_t *b, uint64_t A, uint64_t B, uint64_t C, uint64_t M, uint64_t N,
                 uint64_t K, uint64_t out_elem)
{
    double bytes = (double)(M * K * 2 + N * K * 2 + M * N * out_elem);
    uint32_t grid = (uint32_t)(((N + 127) / 128) * ((M + 63) / 64));
    wl_launch(b, K_GEMM, grid, 256, wl_time_ns(2.0 * M * N * K, WL_H200_BF16_FLOPS, bytes, 1.0));
    wl_ptr(b, A);
    wl_ptr(b, B);
    wl_ptr(b, C);
    wl_val(b, M);
    wl_val(b, N);
    wl_val(b, K);
    wl_touch(b, A, M * K * 2, ENG_ACCESS_READ);
    wl_touch(b, B, N * K * 2, ENG_ACCESS_READ);
    wl_touch(b, C, M * N * out_elem, ENG_ACCESS_WRITE);
}

/* Row-wise kernels over rows x cols bf16 values. */
static void norm(wl_buf_t *b, int fused, uint64_t x, uint64_t resid, uint64_t w, uint64_t out,
                 uint64_t rows, uint64_t cols)
{
    uint64_t n = rows * cols * 2;
    wl_launch(b, fused ? K_ADD_NORM : K_NORM, (uint32_t)rows, 256,
              wl_time_ns(5.0 * rows * cols, WL_H200_FP32_FLOPS, (fused ? 4.0 : 2.0) * n, 1.0));
    wl_ptr(b, x);
    if (fused)
        wl_ptr(b, resid);
    wl_ptr(b, w);
    wl_ptr(b, out);
    wl_val(b, rows);
    wl_val(b, cols);
    wl_touch(b, x, n, ENG_ACCESS_READ);
    if (fused)
        wl_touch(b, resid, n, ENG_ACCESS_RW);
    wl_touch(b, w, cols * 2, ENG_ACCESS_READ);
    wl_touch(b, out, n, ENG_ACCESS_WRITE);
}

static void layer(llm_task_t *k, const llm_cfg_t *c, wl_buf_t *b, const llm_layer_t *L)
{
    uint64_t h = c->hidden, bt = c->batch, kvd = c->kv_dim, ctx = c->prompt + k->step;
    uint64_t stride = c->max_ctx * kvd * 2; /* bytes between sequences in the cache */
    uint64_t kc = L->kv.base, vc = L->kv.base + bt * stride;
    uint64_t q = k->qkv, kn = k->qkv + bt * h * 2, vn = kn + bt * kvd * 2;
    norm(b, 1, k->x, k->resid, L->attn_norm, k->attn, bt, h);
    gemm(b, k->attn, L->wqkv, k->qkv, bt, h + 2 * kvd, h, 2);
    /* rotary embedding of q and k in place */
    wl_launch(b, K_ROPE, (uint32_t)bt, 128,
              wl_time_ns(6.0 * bt * (h + kvd), WL_H200_FP32_FLOPS, 4.0 * bt * (h + kvd), 1.0));
    wl_ptr(b, q);
    wl_ptr(b, kn);
    wl_val(b, bt);
    wl_val(b, h);
    wl_val(b, kvd);
    wl_val(b, ctx);
    wl_touch(b, q, bt * h * 2, ENG_ACCESS_RW);
    wl_touch(b, kn, bt * kvd * 2, ENG_ACCESS_RW);
    /* the new token's K and V into slot ctx of every sequence: strided writes */
    wl_launch(b, K_KV_APPEND, (uint32_t)bt, 128,
              wl_time_ns(0, WL_H200_FP32_FLOPS, 8.0 * bt * kvd, 1.0));
    wl_ptr(b, kn);
    wl_ptr(b, vn);
    wl_ptr(b, kc + ctx * kvd * 2);
    wl_ptr(b, vc + ctx * kvd * 2);
    wl_val(b, bt);
    wl_val(b, kvd);
    wl_val(b, stride);
    wl_touch(b, kn, bt * kvd * 2, ENG_ACCESS_READ);
    wl_touch(b, vn, bt * kvd * 2, ENG_ACCESS_READ);
    for (uint64_t s = 0; s < bt; s++)
        wl_touch(b, kc + s * stride + ctx * kvd * 2, kvd * 2, ENG_ACCESS_WRITE);
    for (uint64_t s = 0; s < bt; s++)
        wl_touch(b, vc + s * stride + ctx * kvd * 2, kvd * 2, ENG_ACCESS_WRITE);
    /* attention over ctx+1 cached tokens of each sequence: strided, length grows per step */
    uint64_t used = (ctx + 1) * kvd * 2;
    wl_launch(b, K_ATTN, (uint32_t)(bt * c->heads), 128,
              wl_time_ns(4.0 * bt * (ctx + 1) * h, WL_H200_BF16_FLOPS,
                         2.0 * bt * used + 4.0 * bt * h, 1.0));
    wl_ptr(b, q);
    wl_ptr(b, kc);
    wl_ptr(b, vc);
    wl_ptr(b, k->attn);
    wl_val(b, bt);
    wl_val(b, ctx + 1);
    wl_val(b, h);
    wl_val(b, kvd);
    wl_val(b, stride);
    wl_touch(b, q, bt * h * 2, ENG_ACCESS_READ);
    for (uint64_t s = 0; s < bt; s++)
        wl_touch(b, kc + s * stride, used, ENG_ACCESS_READ);
    for (uint64_t s = 0; s < bt; s++)
        wl_touch(b, vc + s * stride, used, ENG_ACCESS_READ);
    wl_touch(b, k->attn, bt * h * 2, ENG_ACCESS_WRITE);
    gemm(b, k->attn, L->wo, k->x, bt, h, h, 2);
    norm(b, 1, k->x, k->resid, L->mlp_norm, k->attn, bt, h);
    gemm(b, k->attn, L->wgu, k->gu, bt, 2 * c->ffn, h, 2);
    wl_launch(b, K_SILU, (uint32_t)bt, 256,
              wl_time_ns(4.0 * bt * c->ffn, WL_H200_FP32_FLOPS, 6.0 * bt * c->ffn, 1.0));
    wl_ptr(b, k->gu);
    wl_ptr(b, k->act);
    wl_val(b, bt);
    wl_val(b, c->ffn);
    wl_touch(b, k->gu, bt * 2 * c->ffn * 2, ENG_ACCESS_READ);
    wl_touch(b, k->act, bt * c->ffn * 2, ENG_ACCESS_WRITE);
    gemm(b, k->act, L->wdown, k->x, bt, h, c->ffn, 2);
}

static void embed(llm_task_t *k, const llm_cfg_t *c, wl_buf_t *b)
{
    uint64_t h = c->hidden, bt = c->batch;
    /* gathers the rows of this step's tokens: which rows depends on data (the token ids) */
    wl_launch(b, K_EMBED, (uint32_t)bt, 256, wl_time_ns(0, WL_H200_FP32_FLOPS, 4.0 * bt * h, 1.0));
    wl_ptr(b, k->tok);
    wl_ptr(b, k->emb);
    wl_ptr(b, k->x);
    wl_val(b, bt);
    wl_val(b, h);
    wl_touch(b, k->tok, bt * 4, ENG_ACCESS_READ);
    for (uint64_t s = 0; s < bt; s++)
        wl_touch(b, k->emb + wl_rng_below(&k->rng, c->vocab) * h * 2, h * 2, ENG_ACCESS_READ);
    wl_touch(b, k->x, bt * h * 2, ENG_ACCESS_WRITE);
}

static void head(llm_task_t *k, const llm_cfg_t *c, wl_buf_t *b)
{
    uint64_t h = c->hidden, bt = c->batch;
    norm(b, 1, k->x, k->resid, k->final_norm, k->attn, bt, h);
    gemm(b, k->attn, k->lm_head, k->logits, bt, c->vocab, h, 4);
    wl_launch(b, K_SAMPLE, (uint32_t)bt, 1024,
              wl_time_ns(bt * c->vocab, WL_H200_FP32_FLOPS, 4.0 * bt * c->vocab, 1.0));
    wl_ptr(b, k->logits);
    wl_ptr(b, k->tok);
    wl_val(b, bt);
    wl_val(b, c->vocab);
    wl_touch(b, k->logits, bt * c->vocab * 4, ENG_ACCESS_READ);
    wl_touch(b, k->tok, bt * 4, ENG_ACCESS_WRITE);
}

static int refill(void *t, const void *cv, wl_buf_t *b)
{
    llm_task_t *k = t;
    const llm_cfg_t *c = cv;
    if (k->phase == 0) {
        allocate(k, c, b);
        k->phase = 1;
        return 0;
    }
    if (k->phase == 1) {
        if (k->layer == 0)
            embed(k, c, b);
        else if (k->layer <= c->layers)
            layer(k, c, b, &k->L[k->layer - 1]);
        else
            head(k, c, b);
        if (++k->layer > c->layers + 1) {
            k->layer = 0;
            if (++k->step == c->tokens)
                k->phase = 2;
        }
        return 0;
    }
    for (uint32_t i = 0; i < k->nwsegs; i++)
        wl_release(b, &k->wsegs[i]);
    for (uint64_t l = 0; l < c->layers; l++)
        wl_release(b, &k->L[l].kv);
    wl_release(b, &k->work);
    return 1;
}

const wl_def_t wl_llm_decode = {
    .name = "llm-decode",
    .summary = "N instances of a decoder-only LLM (Llama-2 shapes) decoding tokens",
    .settings = settings,
    .nsettings = sizeof(settings) / sizeof(settings[0]),
    .cfg_size = sizeof(llm_cfg_t),
    .finish = finish,
    .ntasks = ntasks,
    .kernels = kernels,
    .nkernels = K_N,
    .task_size = sizeof(llm_task_t),
    .task_init = task_init,
    .refill = refill,
    .task_fini = task_fini,
};
