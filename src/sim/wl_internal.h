/*
 * Internals shared by the workload generators (wl_*.c) and the workload
 * source (workload.c): the per-task event buffer generators fill, an emulated
 * caching allocator (segments carved into tensors), a deterministic random
 * number generator, the roofline cost model, and the definition table every
 * workload fills in. Not for use outside src/sim.
 *
 * A generator task produces its events in small batches (one layer, one slab,
 * one row block): refill() appends a batch to the buffer, the source hands
 * the events out one by one and calls refill() again when the buffer is empty.
 * Memory is one batch per task, whatever the length of the trace.
 */
#ifndef SIM_WL_INTERNAL_H
#define SIM_WL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "sim/trace.h"

/* ---- published H200 figures (NVIDIA H200 Tensor Core GPU datasheet, SXM) ---- */
#define WL_H200_BF16_FLOPS 989e12 /* dense BF16 tensor core, FLOP/s */
#define WL_H200_FP64_FLOPS 67e12  /* FP64 tensor core, FLOP/s */
#define WL_H200_FP32_FLOPS 67e12  /* FP32 (non-tensor), FLOP/s */
#define WL_H200_HBM_BPS    4.8e12 /* HBM3e bandwidth, bytes/s */
/* ---- modelling assumptions (docs/workloads.md says why) ---- */
#define WL_EFF_COMPUTE 0.70  /* share of peak FLOP/s a large GEMM reaches */
#define WL_EFF_MEMORY  0.85  /* share of peak bandwidth a streaming kernel reaches */
#define WL_LAUNCH_NS   3000u /* floor per kernel: launch latency, ramp and tail */

/* Compute time of a kernel on an unloaded GPU with its data resident:
 * the roofline max(flops/(peak*eff), bytes/(bw*eff*mem_eff)) plus nothing
 * less than WL_LAUNCH_NS. mem_eff < 1 for irregular (gather) access. */
uint64_t wl_time_ns(double flops, double peak_flops, double bytes, double mem_eff);

/* ---- deterministic random numbers (splitmix64) ---- */
typedef struct wl_rng {
    uint64_t s;
} wl_rng_t;
uint64_t wl_rng_next(wl_rng_t *r);
uint64_t wl_rng_below(wl_rng_t *r, uint64_t n); /* uniform in [0, n), n > 0 */
uint64_t wl_mix(uint64_t a, uint64_t b);        /* seed derivation */

/* ---- the per-task event buffer ---- */
typedef struct wl_qev {
    sim_event_t ev;
    size_t arg0, range0; /* offsets into the arrays (they move when they grow) */
} wl_qev_t;

typedef struct wl_buf {
    wl_qev_t *evs;
    size_t n, cap, head;
    sim_arg_t *args;
    size_t nargs, cap_args;
    sim_range_t *ranges;
    size_t nranges, cap_ranges;
    int oom;
} wl_buf_t;

void wl_buf_clear(wl_buf_t *b); /* empties it, keeping capacity */
void wl_buf_fini(wl_buf_t *b);
int wl_buf_pop(wl_buf_t *b, sim_event_t *ev); /* 0 with an event, -1 if empty */

void wl_emit_alloc(wl_buf_t *b, uint64_t id, uint64_t base, uint64_t size);
void wl_emit_free(wl_buf_t *b, uint64_t id);
/* Starts a launch; the arguments and ranges that follow belong to it. */
void wl_launch(wl_buf_t *b, uint32_t kernel, uint32_t grid, uint32_t block, uint64_t ns);
void wl_ptr(wl_buf_t *b, uint64_t addr);
void wl_val(wl_buf_t *b, uint64_t v);
void wl_touch(wl_buf_t *b, uint64_t addr, uint64_t len, uint8_t mode);

/* ---- an emulated caching allocator for one task ---- */
#define WL_SEG_ALIGN    (2ull << 20) /* segments are whole 2 MiB pages */
#define WL_TENSOR_ALIGN 512ull       /* PyTorch's caching allocator rounds to 512 B */

typedef struct wl_heap {
    uint64_t next_va; /* where the next segment goes (bump, never reused) */
    uint64_t next_id;
} wl_heap_t;

typedef struct wl_seg {
    uint64_t id, base, size, used;
} wl_seg_t;

/* The address space of task number `global_task` (distinct for every task). */
void wl_heap_init(wl_heap_t *h, uint32_t global_task);
/* Allocates a segment (emits the alloc event). */
wl_seg_t wl_segment(wl_buf_t *b, wl_heap_t *h, uint64_t size);
/* Carves a tensor out of a segment; the caller sized the segment for it. */
uint64_t wl_carve(wl_seg_t *s, uint64_t bytes);
void wl_release(wl_buf_t *b, wl_seg_t *s); /* emits the free */

/* A pool of equal segments from which tensors are carved in order; a tensor
 * (or group of tensors carved together) larger than a segment gets its own. */
typedef struct wl_pool {
    wl_seg_t *segs;
    uint32_t n, cap;
    uint64_t seg_size;
} wl_pool_t;

/* Carves bytes from the last segment, opening a new one when it does not fit. */
uint64_t wl_pool_carve(wl_pool_t *p, wl_buf_t *b, wl_heap_t *h, uint64_t bytes);
void wl_pool_release(wl_pool_t *p, wl_buf_t *b); /* frees every segment */
void wl_pool_fini(wl_pool_t *p);

/* ---- workload definitions ---- */
typedef enum wl_type {
    WL_T_COUNT = 1, /* integer */
    WL_T_SIZE,      /* bytes, "2MiB" accepted */
    WL_T_CHOICE,    /* one of choices; stored as its index */
} wl_type_t;

typedef struct wl_setting {
    const char *key;
    wl_type_t type;
    const char *def; /* default, as text */
    uint64_t min, max;
    size_t offset;              /* of the uint64_t field in the config struct */
    const char *const *choices; /* NULL-terminated, WL_T_CHOICE */
    const char *help;
} wl_setting_t;

typedef struct wl_def {
    const char *name;
    const char *summary;
    const wl_setting_t *settings;
    size_t nsettings;
    size_t cfg_size;
    /* Checks settings against each other and derives fields; message on error. */
    int (*finish)(void *cfg, char *err, size_t errlen);
    uint32_t (*ntasks)(const void *cfg);
    const char *const *kernels;
    uint32_t nkernels;
    size_t task_size;
    /* global_task: the task's index in the whole source (address space). */
    void (*task_init)(void *task, const void *cfg, uint32_t index, uint32_t global_task,
                      uint64_t seed);
    /* Appends the next batch of events; returns 1 once the task has no more. */
    int (*refill)(void *task, const void *cfg, wl_buf_t *b);
    void (*task_fini)(void *task);
} wl_def_t;

extern const wl_def_t wl_llm_decode, wl_dl_train, wl_sci_stencil, wl_sci_sparse;

#endif /* SIM_WL_INTERNAL_H */
