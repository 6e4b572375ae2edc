/*
 * The driver double's execution side: kernels (host functions run at launch,
 * or recorded into the graph of a capture), parameter layouts. Graphs:
 * fake_cuda_graph.c; streams and events: fake_cuda_stream.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_internal.h"

#define FAKE_MAX_KERNELS 64

static fake_kernel_t
    fake_kernels[FAKE_MAX_KERNELS]; /* static: kernels live as long as the driver */
static _Atomic size_t fake_nkernels;

/* Writes kernel k's name, layout (8-byte arguments aligned to 8, smaller
 * ones to their size) and body. */
static void fake_define_kernel(fake_kernel_t *k, const char *name, unsigned nparams,
                               const size_t *sizes, fake_kernel_fn fn)
{
    memset(k->name, 0, sizeof(k->name));
    strncpy(k->name, name, sizeof(k->name) - 1);
    k->n = nparams;
    k->fn = fn;
    size_t off = 0;
    for (unsigned i = 0; i < nparams; i++) {
        size_t align = sizes[i] >= 8 ? 8 : sizes[i];
        off = (off + align - 1) / align * align;
        k->size[i] = sizes[i];
        k->offset[i] = off;
        off += sizes[i];
    }
}

FAKE_API void *fake_register_kernel(const char *name, unsigned nparams, const size_t *sizes,
                                    fake_kernel_fn fn)
{
    size_t slot = atomic_fetch_add(&fake_nkernels, 1);
    if (nparams > FAKE_MAX_PARAMS || slot >= FAKE_MAX_KERNELS)
        return NULL;
    fake_kernel_t *k = &fake_kernels[slot];
    fake_define_kernel(k, name, nparams, sizes, fn);
    return k;
}

FAKE_API void fake_reload_kernel(void *f, const char *name, unsigned nparams, const size_t *sizes,
                                 fake_kernel_fn fn)
{
    if (f && nparams <= FAKE_MAX_PARAMS)
        fake_define_kernel((fake_kernel_t *)f, name, nparams, sizes, fn);
}

/* Modules and libraries are not modelled: unloading one is logged. */
CUresult fk_cuModuleUnload(CUmodule m)
{
    REC(U(m), 0, 0, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuLibraryUnload(CUlibrary l)
{
    REC(U(l), 0, 0, 0);
    return CUDA_SUCCESS;
}

static CUresult fake_param_info(const fake_kernel_t *k, size_t i, size_t *off, size_t *size)
{
    if (!k || i >= k->n)
        return CUDA_ERROR_INVALID_VALUE;
    *off = k->offset[i];
    *size = k->size[i];
    return CUDA_SUCCESS;
}

CUresult fk_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
    fake_stall_fire(FAKE_STALL_PARAM_INFO);
    return fake_param_info((const fake_kernel_t *)f, i, off, size);
}

CUresult fk_cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size)
{
    return fake_param_info((const fake_kernel_t *)k, i, off, size);
}

/* The kernelParams form of a launch's arguments (argv: room for k->n);
 * NULL (*r_p set) if they cannot be read. */
static void **fake_args(const fake_kernel_t *k, void **params, void **extra, void **argv,
                        CUresult *r_p)
{
    *r_p = CUDA_ERROR_INVALID_VALUE;
    if (!params && extra) {
        unsigned char *buf = NULL;
        size_t size = 0;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                size = *(size_t *)extra[i + 1];
        }
        for (unsigned i = 0; i < k->n; i++) {
            if (!buf || k->offset[i] + k->size[i] > size)
                return NULL;
            argv[i] = buf + k->offset[i];
        }
        params = argv;
    }
    if (k->n && !params)
        return NULL;
    *r_p = CUDA_SUCCESS;
    return params ? params : argv;
}

CUresult fake_run(const fake_kernel_t *k, const unsigned grid[3], const unsigned block[3],
                  void **params, void **extra)
{
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!fake_current())
        return CUDA_ERROR_INVALID_CONTEXT; /* none current on the launching thread */
    void *argv[FAKE_MAX_PARAMS];
    CUresult r;
    params = fake_args(k, params, extra, argv, &r);
    if (r == CUDA_SUCCESS && k->fn)
        k->fn(params, grid, block);
    return r;
}

/* A launch on stream s: run now, or, while s captures, recorded as a kernel
 * node of the capture's graph (its argument values copied), run when the
 * graph is launched; refused on the legacy stream while a blocking stream
 * captures (fake_legacy_work). */
static CUresult fake_launch(const fake_kernel_t *k, const unsigned grid[3], const unsigned block[3],
                            void **params, void **extra, CUstream s, int ptsz)
{
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!fake_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fake_legacy_work(fake_stream_of(s, ptsz)))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    CUgraph g = fake_capture_graph(s, ptsz);
    if (!g) {
        fake_order_work(fake_stream_of(s, ptsz), fake_rec_last());
        return fake_run(k, grid, block, params, extra);
    }
    void *argv[FAKE_MAX_PARAMS];
    CUresult r;
    params = fake_args(k, params, extra, argv, &r);
    if (r != CUDA_SUCCESS)
        return r;
    CUDA_KERNEL_NODE_PARAMS p = {.func = (CUfunction)k,
                                 .gridDimX = grid[0],
                                 .gridDimY = grid[1],
                                 .gridDimZ = grid[2],
                                 .blockDimX = block[0],
                                 .blockDimY = block[1],
                                 .blockDimZ = block[2],
                                 .kernelParams = params};
    return fake_capture_kernel(g, &p);
}

#define FAKE_LAUNCH(name, ptsz)                                                                    \
    CUresult fk_##name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,           \
                       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,        \
                       void **extra)                                                               \
    {                                                                                              \
        (void)shmem;                                                                               \
        REC(U(f), U(s), gx, bx);                                                                   \
        const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};                            \
        return fake_launch((const fake_kernel_t *)f, grid, block, params, extra, s, ptsz);         \
    }
FAKE_LAUNCH(cuLaunchKernel, 0)
FAKE_LAUNCH(cuLaunchKernel_ptsz, 1)
#undef FAKE_LAUNCH

#define FAKE_LAUNCH_COOP(name, ptsz)                                                               \
    CUresult fk_##name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,           \
                       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params)        \
    {                                                                                              \
        (void)shmem;                                                                               \
        REC(U(f), U(s), gx, bx);                                                                   \
        const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};                            \
        return fake_launch((const fake_kernel_t *)f, grid, block, params, NULL, s, ptsz);          \
    }
FAKE_LAUNCH_COOP(cuLaunchCooperativeKernel, 0)
FAKE_LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz, 1)
#undef FAKE_LAUNCH_COOP

#define FAKE_LAUNCH_EX(name, ptsz)                                                                 \
    CUresult fk_##name(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)         \
    {                                                                                              \
        if (!c)                                                                                    \
            return CUDA_ERROR_INVALID_VALUE;                                                       \
        REC(U(f), U(c->hStream), c->gridDimX, c->blockDimX);                                       \
        const unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};                          \
        const unsigned block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};                      \
        return fake_launch((const fake_kernel_t *)f, grid, block, params, extra, c->hStream,       \
                           ptsz);                                                                  \
    }
FAKE_LAUNCH_EX(cuLaunchKernelEx, 0)
FAKE_LAUNCH_EX(cuLaunchKernelEx_ptsz, 1)
#undef FAKE_LAUNCH_EX

/* FAKE_CUDA_LIBRARY_KERNELS=1: every kernel handle is a library kernel's
 * (CUkernel), as the runtime hands out for lazily loaded modules: the
 * function form of the name query refuses it, the kernel form answers. */
CUresult fk_cuFuncGetName(const char **name, CUfunction f)
{
    REC(U(f), 0, 0, 0);
    if (!name || !f)
        return CUDA_ERROR_INVALID_VALUE;
    const char *lib = getenv("FAKE_CUDA_LIBRARY_KERNELS");
    if (lib && strcmp(lib, "1") == 0)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = ((const fake_kernel_t *)f)->name;
    return CUDA_SUCCESS;
}

CUresult fk_cuKernelGetName(const char **name, CUkernel k)
{
    REC(U(k), 0, 0, 0);
    if (!name || !k)
        return CUDA_ERROR_INVALID_VALUE;
    *name = ((const fake_kernel_t *)k)->name;
    return CUDA_SUCCESS;
}

CUresult fk_cuCtxSynchronize(void)
{
    REC0();
    if (fake_unsafe_refused())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return CUDA_SUCCESS; /* kernels run synchronously at launch */
}

/* --- fake CUPTI: ranges host kernels declared -------------------------------- */

#define FAKE_MAX_TOUCHED 256

static pthread_mutex_t fake_touch_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t fake_touch_addr[FAKE_MAX_TOUCHED], fake_touch_len[FAKE_MAX_TOUCHED];
static uint8_t fake_touch_mode[FAKE_MAX_TOUCHED];
static size_t fake_ntouched;

FAKE_API void fake_touch(const void *addr, uint64_t len, int mode)
{
    pthread_mutex_lock(&fake_touch_lock);
    if (fake_ntouched < FAKE_MAX_TOUCHED) {
        fake_touch_addr[fake_ntouched] = U(addr);
        fake_touch_len[fake_ntouched] = len;
        fake_touch_mode[fake_ntouched] = (uint8_t)mode;
        fake_ntouched++;
    }
    pthread_mutex_unlock(&fake_touch_lock);
}

static uint64_t fake_kernel_ns; /* under fake_touch_lock */

FAKE_API void fake_spend(uint64_t ns)
{
    pthread_mutex_lock(&fake_touch_lock);
    fake_kernel_ns += ns;
    pthread_mutex_unlock(&fake_touch_lock);
}

FAKE_API uint64_t gmux_test_cupti_kernel_ns(void)
{
    pthread_mutex_lock(&fake_touch_lock);
    uint64_t ns = fake_kernel_ns;
    fake_kernel_ns = 0;
    pthread_mutex_unlock(&fake_touch_lock);
    return ns;
}

FAKE_API size_t gmux_test_cupti_touched(uint64_t *addr, uint64_t *len, uint8_t *mode, size_t max)
{
    pthread_mutex_lock(&fake_touch_lock);
    size_t n = fake_ntouched < max ? fake_ntouched : max;
    for (size_t i = 0; i < n; i++) {
        addr[i] = fake_touch_addr[i];
        len[i] = fake_touch_len[i];
        mode[i] = fake_touch_mode[i];
    }
    fake_ntouched = 0;
    pthread_mutex_unlock(&fake_touch_lock);
    return n;
}
