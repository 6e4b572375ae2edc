/*
 * sci-stencil: a domain-decomposed 3-D 7-point stencil (Jacobi sweeps) per
 * task over an nx x ny x nz grid of doubles: arrays u, u_new and a variable
 * coefficient, each a cudaMalloc of its own. Every sweep runs slab by slab
 * (slab z-planes per launch, reading one halo plane on each side), computes a
 * residual partial per slab and packs the two y-faces of the slab into halo
 * buffers (strided reads), then u and u_new swap. Timings: docs/workloads.md.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/wl_internal.h"

enum { K_STENCIL, K_RESID, K_PACK, K_N };
static const char *const kernels[K_N] = {"sci_stencil7_slab", "sci_residual_slab",
                                         "sci_pack_yface"};

typedef struct st_cfg {
    uint64_t tasks, nx, ny, nz, slab, iterations;
} st_cfg_t;

#define OFF(f) offsetof(st_cfg_t, f)
static const wl_setting_t settings[] = {
    {"tasks", WL_T_COUNT, "4", 1, 256, OFF(tasks), NULL, "independent solvers (tasks)"},
    {"nx", WL_T_COUNT, "1024", 8, 1 << 20, OFF(nx), NULL, "grid points along x (contiguous)"},
    {"ny", WL_T_COUNT, "1024", 8, 1 << 20, OFF(ny), NULL, "grid points along y"},
    {"nz", WL_T_COUNT, "3584", 8, 1 << 20, OFF(nz), NULL, "grid points along z (slowest)"},
    {"slab", WL_T_COUNT, "128", 1, 1 << 20, OFF(slab), NULL, "z-planes per launch"},
    {"iterations", WL_T_COUNT, "20", 1, 1 << 20, OFF(iterations), NULL, "Jacobi sweeps"},
};

static int finish(void *c, char *err, size_t errlen)
{
    st_cfg_t *cfg = c;
    if (cfg->slab > cfg->nz) {
        snprintf(err, errlen, "slab (%llu) larger than nz (%llu)", (unsigned long long)cfg->slab,
                 (unsigned long long)cfg->nz);
        return -1;
    }
    if (cfg->nx * cfg->ny * cfg->nz > (1ull << 40)) {
        snprintf(err, errlen, "grid larger than 2^40 points");
        return -1;
    }
    return 0;
}

static uint32_t ntasks(const void *c)
{
    return (uint32_t)((const st_cfg_t *)c)->tasks;
}

typedef struct st_task {
    wl_heap_t heap;
    int phase;
    uint64_t iter, slab;
    wl_seg_t u, un, coef, halo, part;
} st_task_t;

static void task_init(void *t, const void *c, uint32_t index, uint32_t global, uint64_t seed)
{
    st_task_t *k = t;
    (void)c;
    (void)index;
    (void)seed;
    wl_heap_init(&k->heap, global);
}

static void task_fini(void *t)
{
    (void)t;
}

static const uint8_t R = ENG_ACCESS_READ, W = ENG_ACCESS_WRITE;

static void pack(wl_buf_t *b, const st_cfg_t *c, uint64_t src, uint64_t dst, uint64_t nzs)
{
    uint64_t plane = c->nx * c->ny * 8, row = c->nx * 8;
    wl_launch(b, K_PACK, (uint32_t)nzs, 256,
              wl_time_ns(0, WL_H200_FP64_FLOPS, 2.0 * nzs * row, 0.7));
    wl_ptr(b, src);
    wl_ptr(b, dst);
    wl_val(b, c->nx);
    wl_val(b, c->nx * c->ny);
    wl_val(b, nzs);
    for (uint64_t z = 0; z < nzs; z++)
        wl_touch(b, src + z * plane, row, R);
    wl_touch(b, dst, nzs * row, W);
}

static void sweep_slab(st_task_t *k, const st_cfg_t *c, wl_buf_t *b)
{
    uint64_t plane = c->nx * c->ny * 8, pe = c->nx * c->ny;
    uint64_t z0 = k->slab * c->slab, nzs = c->nz - z0 < c->slab ? c->nz - z0 : c->slab;
    uint64_t zh0 = z0 ? z0 - 1 : 0, zh1 = z0 + nzs < c->nz ? z0 + nzs + 1 : c->nz;
    const wl_seg_t *in = k->iter % 2 ? &k->un : &k->u, *out = k->iter % 2 ? &k->u : &k->un;
    uint64_t pin = in->base + zh0 * plane, pout = out->base + z0 * plane;
    uint64_t pcoef = k->coef.base + z0 * plane;
    double pts = (double)nzs * pe;
    wl_launch(b, K_STENCIL, (uint32_t)((pts + 255) / 256 > 4e9 ? 4e9 : (pts + 255) / 256), 256,
              wl_time_ns(13.0 * pts, WL_H200_FP64_FLOPS, 8.0 * ((zh1 - zh0) * pe + 2 * pts), 1.0));
    wl_ptr(b, pin);
    wl_ptr(b, pout);
    wl_ptr(b, pcoef);
    wl_val(b, pe);
    wl_val(b, c->nx);
    wl_val(b, zh1 - zh0);
    wl_val(b, nzs);
    wl_touch(b, pin, (zh1 - zh0) * plane, R);
    wl_touch(b, pcoef, nzs * plane, R);
    wl_touch(b, pout, nzs * plane, W);
    /* residual partial of this slab: one double per slab */
    uint64_t pold = in->base + z0 * plane, ppart = k->part.base + k->slab * 8;
    wl_launch(b, K_RESID, 1024, 256, wl_time_ns(3.0 * pts, WL_H200_FP64_FLOPS, 16.0 * pts, 1.0));
    wl_ptr(b, pout);
    wl_ptr(b, pold);
    wl_ptr(b, ppart);
    wl_val(b, pe);
    wl_val(b, nzs);
    wl_touch(b, pout, nzs * plane, R);
    wl_touch(b, pold, nzs * plane, R);
    wl_touch(b, ppart, 8, W);
    /* the two y-faces of the slab into the halo buffers (strided: one row per plane) */
    uint64_t face = c->nx * c->nz * 8;
    pack(b, c, pout, k->halo.base + z0 * c->nx * 8, nzs);
    pack(b, c, pout + (c->ny - 1) * c->nx * 8, k->halo.base + face + z0 * c->nx * 8, nzs);
}

static int refill(void *t, const void *cv, wl_buf_t *b)
{
    st_task_t *k = t;
    const st_cfg_t *c = cv;
    uint64_t bytes = c->nx * c->ny * c->nz * 8, nslabs = (c->nz + c->slab - 1) / c->slab;
    if (k->phase == 0) {
        k->u = wl_segment(b, &k->heap, bytes);
        k->un = wl_segment(b, &k->heap, bytes);
        k->coef = wl_segment(b, &k->heap, bytes);
        k->halo = wl_segment(b, &k->heap, 2 * c->nx * c->nz * 8);
        k->part = wl_segment(b, &k->heap, nslabs * 8);
        k->phase = 1;
        return 0;
    }
    if (k->phase == 1) {
        sweep_slab(k, c, b);
        if (++k->slab == nslabs) {
            k->slab = 0;
            if (++k->iter == c->iterations)
                k->phase = 2;
        }
        return 0;
    }
    wl_release(b, &k->u);
    wl_release(b, &k->un);
    wl_release(b, &k->coef);
    wl_release(b, &k->halo);
    wl_release(b, &k->part);
    return 1;
}

const wl_def_t wl_sci_stencil = {
    .name = "sci-stencil",
    .summary = "3-D 7-point Jacobi sweeps over large grids, slab by slab, with halo packing",
    .settings = settings,
    .nsettings = sizeof(settings) / sizeof(settings[0]),
    .cfg_size = sizeof(st_cfg_t),
    .finish = finish,
    .ntasks = ntasks,
    .kernels = kernels,
    .nkernels = K_N,
    .task_size = sizeof(st_task_t),
    .task_init = task_init,
    .refill = refill,
    .task_fini = task_fini,
};
