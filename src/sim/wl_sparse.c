/*
 * sci-sparse: sparse and graph kernels over a large CSR matrix per task.
 * A conjugate-gradient-like loop runs SpMV block by block (row_ptr and y by
 * row range; col_idx and values from row_ptr's contents; x gathered through
 * the column indices: a band around the diagonal plus scattered long-range
 * pieces), dot products and vector updates; every few iterations a
 * breadth-first search over the same graph expands frontiers whose touched
 * parts of row_ptr, col_idx and dist depend on the data only. Row lengths vary
 * per block, so none of the indirect ranges follows from the arguments.
 * Sizes and timings: docs/workloads.md.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/wl_internal.h"

enum { K_SPMV, K_DOT, K_UPDATE, K_BFS, K_N };
static const char *const kernels[K_N] = {"sparse_spmv_csr_block", "sparse_dot_block",
                                         "sparse_cg_update_block", "graph_bfs_expand"};

typedef struct sp_cfg {
    uint64_t tasks, rows, nnz_per_row, block_rows, band, far, iterations, bfs_every, bfs_levels;
} sp_cfg_t;

#define OFF(f) offsetof(sp_cfg_t, f)
static const wl_setting_t settings[] = {
    {"tasks", WL_T_COUNT, "4", 1, 256, OFF(tasks), NULL, "independent solvers (tasks)"},
    {"rows", WL_T_COUNT, "402653184", 1024, 1ull << 34, OFF(rows), NULL, "matrix rows (vertices)"},
    {"nnz-per-row", WL_T_COUNT, "12", 1, 4096, OFF(nnz_per_row), NULL,
     "mean non-zeros per row (row lengths vary per block from 0.5x to 1.5x)"},
    {"block-rows", WL_T_COUNT, "16777216", 256, 1ull << 34, OFF(block_rows), NULL,
     "rows per SpMV launch"},
    {"band", WL_T_COUNT, "65536", 0, 1ull << 34, OFF(band), NULL,
     "columns on each side of the diagonal most entries fall in"},
    {"far", WL_T_COUNT, "32", 0, 4096, OFF(far), NULL,
     "scattered 64 KiB pieces of x each SpMV block also gathers"},
    {"iterations", WL_T_COUNT, "20", 1, 1 << 20, OFF(iterations), NULL, "solver iterations"},
    {"bfs-every", WL_T_COUNT, "5", 0, 1 << 20, OFF(bfs_every), NULL,
     "a breadth-first search every N iterations (0: never)"},
    {"bfs-levels", WL_T_COUNT, "8", 1, 64, OFF(bfs_levels), NULL, "frontier levels per search"},
};

static int finish(void *c, char *err, size_t errlen)
{
    sp_cfg_t *cfg = c;
    if (cfg->block_rows > cfg->rows) {
        snprintf(err, errlen, "block-rows larger than rows");
        return -1;
    }
    if ((cfg->rows + cfg->block_rows - 1) / cfg->block_rows > 65536) {
        snprintf(err, errlen, "more than 65536 row blocks (raise block-rows)");
        return -1;
    }
    return 0;
}

static uint32_t ntasks(const void *c)
{
    return (uint32_t)((const sp_cfg_t *)c)->tasks;
}

#define PIECE  (64ull << 10)
#define MAXPCS 256

typedef struct sp_task {
    wl_heap_t heap;
    wl_rng_t rng;
    int phase; /* 0 setup, 1 solver block, 2 bfs level, 3 free */
    uint64_t iter, block, level;
    uint64_t nblocks;
    uint64_t *nz0; /* nblocks+1: first non-zero of each block (row_ptr at block starts) */
    wl_seg_t rp, col, val, x, y, p, r, part, dist, fa, fb, cnt;
    uint64_t pieces[MAXPCS];
} sp_task_t;

static void task_init(void *t, const void *c, uint32_t index, uint32_t global, uint64_t seed)
{
    sp_task_t *k = t;
    (void)c;
    (void)index;
    wl_heap_init(&k->heap, global);
    k->rng.s = seed;
}

static void task_fini(void *t)
{
    free(((sp_task_t *)t)->nz0);
}

static const uint8_t R = ENG_ACCESS_READ, W = ENG_ACCESS_WRITE, RW = ENG_ACCESS_RW;

static uint64_t block_len(const sp_cfg_t *c, uint64_t b)
{
    uint64_t r0 = b * c->block_rows;
    return c->rows - r0 < c->block_rows ? c->rows - r0 : c->block_rows;
}

static void setup(sp_task_t *k, const sp_cfg_t *c, wl_buf_t *b)
{
    k->nblocks = (c->rows + c->block_rows - 1) / c->block_rows;
    if (!(k->nz0 = calloc(k->nblocks + 1, sizeof(*k->nz0)))) {
        b->oom = 1;
        return;
    }
    for (uint64_t i = 0; i < k->nblocks; i++) /* row lengths 0.5x..1.5x the mean, per block */
        k->nz0[i + 1] = k->nz0[i] + block_len(c, i) * c->nnz_per_row / 2 +
                        wl_rng_below(&k->rng, block_len(c, i) * c->nnz_per_row + 1);
    uint64_t nnz = k->nz0[k->nblocks], n = c->rows;
    k->rp = wl_segment(b, &k->heap, (n + 1) * 8);
    k->col = wl_segment(b, &k->heap, nnz * 4);
    k->val = wl_segment(b, &k->heap, nnz * 8);
    k->x = wl_segment(b, &k->heap, n * 8);
    k->y = wl_segment(b, &k->heap, n * 8);
    k->p = wl_segment(b, &k->heap, n * 8);
    k->r = wl_segment(b, &k->heap, n * 8);
    k->part = wl_segment(b, &k->heap, k->nblocks * 8);
    k->dist = wl_segment(b, &k->heap, n * 4);
    k->fa = wl_segment(b, &k->heap, n * 4);
    k->fb = wl_segment(b, &k->heap, n * 4);
    k->cnt = wl_segment(b, &k->heap, 8);
}

/* Sorted distinct random 64 KiB pieces of [base, base+size): data-dependent ranges. */
static void scatter(sp_task_t *k, wl_buf_t *b, uint64_t base, uint64_t size, uint64_t count,
                    uint8_t mode)
{
    uint64_t npieces = (size + PIECE - 1) / PIECE;
    if (count > MAXPCS)
        count = MAXPCS;
    if (count * 2 >= npieces) { /* dense enough to touch everything */
        wl_touch(b, base, size, mode);
        return;
    }
    for (uint64_t i = 0; i < count; i++)
        k->pieces[i] = wl_rng_below(&k->rng, npieces);
    for (uint64_t i = 1; i < count; i++)
        for (uint64_t j = i; j > 0 && k->pieces[j - 1] > k->pieces[j]; j--) {
            uint64_t t = k->pieces[j];
            k->pieces[j] = k->pieces[j - 1];
            k->pieces[j - 1] = t;
        }
    for (uint64_t i = 0; i < count; i++) {
        if (i && k->pieces[i] == k->pieces[i - 1])
            continue;
        uint64_t off = k->pieces[i] * PIECE;
        wl_touch(b, base + off, size - off < PIECE ? size - off : PIECE, mode);
    }
}

static void spmv(sp_task_t *k, const sp_cfg_t *c, wl_buf_t *b, uint64_t blk)
{
    uint64_t r0 = blk * c->block_rows, nr = block_len(c, blk);
    uint64_t z0 = k->nz0[blk], nz = k->nz0[blk + 1] - z0;
    double bytes = 8.0 * (nr + 1) + 12.0 * nz + 8.0 * nr + 8.0 * (nr + 2 * c->band);
    wl_launch(b, K_SPMV, (uint32_t)((nr + 255) / 256), 256,
              wl_time_ns(2.0 * nz, WL_H200_FP64_FLOPS, bytes, 0.6));
    wl_ptr(b, k->rp.base + r0 * 8);
    wl_ptr(b, k->col.base);
    wl_ptr(b, k->val.base);
    wl_ptr(b, k->p.base);
    wl_ptr(b, k->y.base + r0 * 8);
    wl_val(b, nr);
    wl_touch(b, k->rp.base + r0 * 8, (nr + 1) * 8, R);
    wl_touch(b, k->col.base + z0 * 4, nz * 4, R); /* where: row_ptr's contents */
    wl_touch(b, k->val.base + z0 * 8, nz * 8, R);
    uint64_t c0 = r0 > c->band ? r0 - c->band : 0;
    uint64_t c1 = r0 + nr + c->band < c->rows ? r0 + nr + c->band : c->rows;
    wl_touch(b, k->p.base + c0 * 8, (c1 - c0) * 8, R); /* the band of x gathered */
    scatter(k, b, k->p.base, c->rows * 8, c->far, R);  /* and long-range couplings */
    wl_touch(b, k->y.base + r0 * 8, nr * 8, W);
}

/* Block-wise vector kernels: ranges follow from pointer and count. */
static void vec(sp_task_t *k, const sp_cfg_t *c, wl_buf_t *b, uint64_t blk, int update)
{
    uint64_t r0 = blk * c->block_rows, nr = block_len(c, blk), o = r0 * 8;
    if (!update) {
        wl_launch(b, K_DOT, (uint32_t)((nr + 1023) / 1024), 256,
                  wl_time_ns(2.0 * nr, WL_H200_FP64_FLOPS, 16.0 * nr, 1.0));
        wl_ptr(b, k->p.base + o);
        wl_ptr(b, k->y.base + o);
        wl_ptr(b, k->part.base + blk * 8);
        wl_val(b, nr);
        wl_touch(b, k->p.base + o, nr * 8, R);
        wl_touch(b, k->y.base + o, nr * 8, R);
        wl_touch(b, k->part.base + blk * 8, 8, W);
        return;
    }
    wl_launch(b, K_UPDATE, (uint32_t)((nr + 255) / 256), 256,
              wl_time_ns(6.0 * nr, WL_H200_FP64_FLOPS, 56.0 * nr, 1.0));
    wl_ptr(b, k->x.base + o);
    wl_ptr(b, k->r.base + o);
    wl_ptr(b, k->p.base + o);
    wl_ptr(b, k->y.base + o);
    wl_val(b, nr);
    wl_touch(b, k->x.base + o, nr * 8, RW);
    wl_touch(b, k->r.base + o, nr * 8, RW);
    wl_touch(b, k->p.base + o, nr * 8, RW);
    wl_touch(b, k->y.base + o, nr * 8, R);
}

/* Fraction of vertices in the frontier at each level (a small-world graph's search). */
static const double frontier_share[] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.3, 0.35, 0.15, 0.05};

static void bfs_level(sp_task_t *k, const sp_cfg_t *c, wl_buf_t *b)
{
    uint64_t L = k->level, n = c->rows;
    size_t ns = sizeof(frontier_share) / sizeof(frontier_share[0]);
    uint64_t fsize = (uint64_t)(frontier_share[L % ns] * (double)n) + 1;
    uint64_t fnext = (uint64_t)(frontier_share[(L + 1) % ns] * (double)n) + 1;
    uint64_t in = L % 2 ? k->fb.base : k->fa.base, out = L % 2 ? k->fa.base : k->fb.base;
    uint64_t nnz = k->nz0[k->nblocks];
    double edges = (double)fsize * c->nnz_per_row;
    wl_launch(b, K_BFS, (uint32_t)((fsize + 255) / 256), 256,
              wl_time_ns(edges, WL_H200_FP32_FLOPS, 16.0 * fsize + 12.0 * edges, 0.3));
    wl_ptr(b, k->rp.base);
    wl_ptr(b, k->col.base);
    wl_ptr(b, k->dist.base);
    wl_ptr(b, in);
    wl_ptr(b, out);
    wl_ptr(b, k->cnt.base);
    wl_val(b, fsize);
    wl_val(b, L + 1);
    wl_touch(b, in, fsize * 4, R);
    scatter(k, b, k->rp.base, (n + 1) * 8, fsize, R);
    scatter(k, b, k->col.base, nnz * 4, fsize, R);
    scatter(k, b, k->dist.base, n * 4, (uint64_t)edges, RW);
    wl_touch(b, out, fnext * 4, W); /* how many are appended depends on the data */
    wl_touch(b, k->cnt.base, 4, RW);
}

static int refill(void *t, const void *cv, wl_buf_t *b)
{
    sp_task_t *k = t;
    const sp_cfg_t *c = cv;
    switch (k->phase) {
    case 0:
        setup(k, c, b);
        k->phase = 1;
        return 0;
    case 1:
        spmv(k, c, b, k->block);
        vec(k, c, b, k->block, 0);
        vec(k, c, b, k->block, 1);
        if (++k->block < k->nblocks)
            return 0;
        k->block = 0;
        k->iter++;
        if (c->bfs_every && k->iter % c->bfs_every == 0) {
            k->phase = 2;
            k->level = 0;
        } else if (k->iter == c->iterations) {
            k->phase = 3;
        }
        return 0;
    case 2:
        bfs_level(k, c, b);
        if (++k->level == c->bfs_levels)
            k->phase = k->iter == c->iterations ? 3 : 1;
        return 0;
    default:
        wl_release(b, &k->rp);
        wl_release(b, &k->col);
        wl_release(b, &k->val);
        wl_release(b, &k->x);
        wl_release(b, &k->y);
        wl_release(b, &k->p);
        wl_release(b, &k->r);
        wl_release(b, &k->part);
        wl_release(b, &k->dist);
        wl_release(b, &k->fa);
        wl_release(b, &k->fb);
        wl_release(b, &k->cnt);
        return 1;
    }
}

const wl_def_t wl_sci_sparse = {
    .name = "sci-sparse",
    .summary = "CSR SpMV solver iterations and breadth-first searches with indirect access",
    .settings = settings,
    .nsettings = sizeof(settings) / sizeof(settings[0]),
    .cfg_size = sizeof(sp_cfg_t),
    .finish = finish,
    .ntasks = ntasks,
    .kernels = kernels,
    .nkernels = K_N,
    .task_size = sizeof(sp_task_t),
    .task_init = task_init,
    .refill = refill,
    .task_fini = task_fini,
};
