/*
 * The test double of libcuda.so.1 (see fake_cuda.h). Built only under tests/.
 * Every function is exported under the driver's symbol name through an asm
 * label, because cuda.h #defines several of those names to others.
 */
#include "fake_cuda_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct fake_sym {
    const char *sym, *base;
    int version, per_thread;
    void *fn;
} fake_sym_t;
#define FAKE_ENTRY_(sym, base, ver, pfn, pt) {#sym, #base, ver, pt, (void *)fk_##sym},
static const fake_sym_t fake_syms[] = {FAKE_LIST(FAKE_ENTRY_)};
#undef FAKE_ENTRY_
#define FAKE_NSYMS (sizeof(fake_syms) / sizeof(fake_syms[0]))

/* --- call log ------------------------------------------------------------- */

static fake_call_t fake_log[FAKE_LOG_CAP];
/* Calls logged (entries [0, n) are complete): written under fake_log_mu with
 * a release store after the entry, read with an acquire load, so a test
 * scanning the log while another thread calls the driver (the shim's gate
 * watcher) reads whole entries only. It used to be reserved before the entry
 * was written, and such a reader could see a half-written one (TSan). */
static _Atomic size_t fake_log_n;
static pthread_mutex_t fake_log_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int fake_logging = 1;
static __thread size_t fake_last_rec = SIZE_MAX;

size_t fake_rec_last(void)
{
    return fake_last_rec;
}

void fake_rec(const char *fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
    if (!atomic_load_explicit(&fake_logging, memory_order_relaxed))
        return;
    pthread_mutex_lock(&fake_log_mu);
    size_t i = atomic_load_explicit(&fake_log_n, memory_order_relaxed);
    if (i < FAKE_LOG_CAP) {
        fake_call_t *c = &fake_log[i];
        strncpy(c->fn, fn, sizeof(c->fn) - 1);
        c->a[0] = a0;
        c->a[1] = a1;
        c->a[2] = a2;
        c->a[3] = a3;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        c->ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    atomic_store_explicit(&fake_log_n, i + 1, memory_order_release);
    pthread_mutex_unlock(&fake_log_mu);
    fake_last_rec = i;
}

FAKE_API void fake_reset(void)
{
    pthread_mutex_lock(&fake_log_mu);
    atomic_store(&fake_log_n, 0);
    fake_order_reset();
    pthread_mutex_unlock(&fake_log_mu);
}

FAKE_API size_t fake_log_count(void)
{
    size_t n = atomic_load_explicit(&fake_log_n, memory_order_acquire);
    return n < FAKE_LOG_CAP ? n : FAKE_LOG_CAP;
}

FAKE_API const fake_call_t *fake_log_get(size_t i)
{
    return i < fake_log_count() ? &fake_log[i] : NULL;
}

FAKE_API void fake_set_logging(int on)
{
    atomic_store(&fake_logging, on);
}

FAKE_API void *fake_entry(const char *sym)
{
    for (size_t i = 0; i < FAKE_NSYMS; i++)
        if (strcmp(fake_syms[i].sym, sym) == 0)
            return fake_syms[i].fn;
    return NULL;
}

/* --- lookup --------------------------------------------------------------- */

static CUresult fake_lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                            CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    if (version > 13000)
        return CUDA_ERROR_INVALID_VALUE;
    int want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const fake_sym_t *best = NULL;
    int known = 0;
    for (size_t i = 0; i < FAKE_NSYMS; i++) {
        const fake_sym_t *s = &fake_syms[i];
        if (strcmp(s->base, symbol) != 0)
            continue;
        known = 1;
        if (s->version > version || (s->per_thread && !want_pt))
            continue;
        if (!best || s->version > best->version || (s->version == best->version && s->per_thread))
            best = s;
    }
    *pfn = best ? best->fn : NULL;
    if (status)
        *status = best    ? CU_GET_PROC_ADDRESS_SUCCESS
                  : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

CUresult fk_cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return fake_lookup(symbol, pfn, version, flags, NULL);
}

CUresult fk_cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                CUdriverProcAddressQueryResult *status)
{
    return fake_lookup(symbol, pfn, version, flags, status);
}

/* --- memory --------------------------------------------------------------- */

#define FAKE_MAX_ALLOCS 4096

typedef struct fake_alloc {
    uint64_t base, size;
    int managed;
    int owned;    /* the double malloc'ed it */
    int array;    /* FAKE_ARRAY_*: a CUDA array's memory (its handle is its address), 0: not */
    uint64_t ctx; /* the context current when it was made */
} fake_alloc_t;

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static fake_alloc_t fake_allocs[FAKE_MAX_ALLOCS];
static uint64_t fake_used;

/*
 * Addresses handed out again (FAKE_CUDA_REUSE=1 in the environment): memory
 * freed (cuMemFree, or with its context) is kept, and the next allocation
 * of the same rounded size gets the last one freed back, as the driver
 * hands out a virtual address again once it is free. Without it the C
 * library decides, and a sanitizer's quarantine never does. Under fake_lock.
 */
#define FAKE_REUSE_MAX 64
static struct {
    void *p;
    size_t size;
} fake_reuse[FAKE_REUSE_MAX];
static size_t fake_reuse_n;

static int fake_reuse_on(void)
{
    const char *v = getenv("FAKE_CUDA_REUSE");
    return v && v[0] == '1';
}

/* p (of rounded size) is freed: kept for reuse, else given back. Under fake_lock. */
static void fake_release(void *p, size_t size)
{
    if (fake_reuse_on() && fake_reuse_n < FAKE_REUSE_MAX) {
        fake_reuse[fake_reuse_n].p = p;
        fake_reuse[fake_reuse_n++].size = size;
        return;
    }
    free(p);
}

/* The last block of size freed and kept, taken; NULL: none. */
static void *fake_reused(size_t size)
{
    void *p = NULL;
    pthread_mutex_lock(&fake_lock);
    for (size_t i = fake_reuse_n; i-- > 0;)
        if (fake_reuse[i].size == size) {
            p = fake_reuse[i].p;
            fake_reuse[i] = fake_reuse[--fake_reuse_n];
            break;
        }
    pthread_mutex_unlock(&fake_lock);
    return p;
}

static CUresult fake_alloc_as(CUdeviceptr *dptr, size_t size, int managed, int array)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t rounded = (size + 255) / 256 * 256;
    void *p = fake_reused(rounded);
    if (!p)
        p = aligned_alloc(256, rounded);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(p, 0, size);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&fake_lock);
    for (size_t i = 0; i < FAKE_MAX_ALLOCS; i++)
        if (!fake_allocs[i].base) {
            fake_allocs[i] = (fake_alloc_t){U(p), size, managed, 1, array, U(fake_current())};
            fake_used += size;
            r = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&fake_lock);
    if (r != CUDA_SUCCESS)
        free(p);
    else
        *dptr = (CUdeviceptr)U(p);
    return r;
}

static CUresult fake_alloc(CUdeviceptr *dptr, size_t size, int managed)
{
    return fake_alloc_as(dptr, size, managed, 0);
}

CUresult fake_alloc_array(CUdeviceptr *p, size_t size, int array)
{
    return fake_alloc_as(p, size, 0, array);
}

/* Frees the block at dptr made as array (0: a plain allocation); CUDA_ERROR_INVALID_VALUE: none. */
static CUresult fake_free_as(CUdeviceptr dptr, int array)
{
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fake_lock);
    for (size_t i = 0; i < FAKE_MAX_ALLOCS; i++)
        if (dptr && fake_allocs[i].base == dptr && fake_allocs[i].owned &&
            fake_allocs[i].array == array) {
            fake_used -= fake_allocs[i].size;
            fake_release((void *)(uintptr_t)dptr, (fake_allocs[i].size + 255) / 256 * 256);
            fake_allocs[i] = (fake_alloc_t){0};
            r = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&fake_lock);
    return r;
}

static CUresult fake_free(CUdeviceptr dptr)
{
    return fake_free_as(dptr, 0);
}

CUresult fake_free_array(CUdeviceptr p, int array)
{
    return fake_free_as(p, array);
}

/* A context went: so did what was allocated in it. */
void fake_free_ctx(CUcontext ctx)
{
    pthread_mutex_lock(&fake_lock);
    for (size_t i = 0; i < FAKE_MAX_ALLOCS; i++)
        if (fake_allocs[i].base && fake_allocs[i].owned && fake_allocs[i].ctx == U(ctx)) {
            fake_used -= fake_allocs[i].size;
            fake_release((void *)(uintptr_t)fake_allocs[i].base,
                         (fake_allocs[i].size + 255) / 256 * 256);
            fake_allocs[i] = (fake_alloc_t){0};
        }
    pthread_mutex_unlock(&fake_lock);
}

CUresult fk_cuMemGetInfo_v2(size_t *free_p, size_t *total_p)
{
    pthread_mutex_lock(&fake_lock);
    *free_p = FAKE_TOTAL_MEMORY - fake_used;
    pthread_mutex_unlock(&fake_lock);
    *total_p = FAKE_TOTAL_MEMORY;
    REC(*free_p, *total_p, 0, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuMemAlloc(unsigned int *dptr, unsigned int size)
{
    (void)dptr;
    REC(0, size, 0, 0);
    return CUDA_ERROR_NOT_SUPPORTED; /* 32-bit addresses: only there to be resolved */
}

CUresult fk_cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    if (fake_unsafe_refused())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    CUresult r = fake_alloc(dptr, size, 0);
    REC(r == CUDA_SUCCESS ? *dptr : 0, size, 0, 0);
    return r;
}

CUresult fk_cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned flags)
{
    if (fake_unsafe_refused())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    CUresult r = fake_alloc(dptr, size, 1);
    REC(r == CUDA_SUCCESS ? *dptr : 0, size, flags, 0);
    return r;
}

CUresult fk_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                               unsigned elem)
{
    if (!pitch || !width || !height || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_unsafe_refused())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    *pitch = (width + 255) / 256 * 256;
    CUresult r = fake_alloc(dptr, *pitch * height, 0);
    REC(r == CUDA_SUCCESS ? *dptr : 0, *pitch, width, height);
    return r;
}

CUresult fk_cuMemAllocPitch_v9(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                               unsigned elem)
{
    return fk_cuMemAllocPitch_v2(dptr, pitch, width, height, elem);
}

CUresult fk_cuMemFree_v2(CUdeviceptr dptr)
{
    REC(dptr, 0, 0, 0);
    if (fake_unsafe_refused())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return fake_free(dptr);
}

#define FAKE_ASYNC(name)                                                                           \
    CUresult fk_##name(CUdeviceptr *dptr, size_t size, CUstream s)                                 \
    {                                                                                              \
        CUresult r = fake_alloc(dptr, size, 0);                                                    \
        REC(r == CUDA_SUCCESS ? *dptr : 0, size, U(s), 0);                                         \
        return r;                                                                                  \
    }
FAKE_ASYNC(cuMemAllocAsync)
FAKE_ASYNC(cuMemAllocAsync_ptsz)
#undef FAKE_ASYNC

#define FAKE_POOL(name)                                                                            \
    CUresult fk_##name(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s)              \
    {                                                                                              \
        CUresult r = fake_alloc(dptr, size, 0);                                                    \
        REC(r == CUDA_SUCCESS ? *dptr : 0, size, U(pool), U(s));                                   \
        return r;                                                                                  \
    }
FAKE_POOL(cuMemAllocFromPoolAsync)
FAKE_POOL(cuMemAllocFromPoolAsync_ptsz)
#undef FAKE_POOL

#define FAKE_FREE_ASYNC(name)                                                                      \
    CUresult fk_##name(CUdeviceptr dptr, CUstream s)                                               \
    {                                                                                              \
        REC(dptr, U(s), 0, 0);                                                                     \
        return fake_free(dptr);                                                                    \
    }
FAKE_FREE_ASYNC(cuMemFreeAsync)
FAKE_FREE_ASYNC(cuMemFreeAsync_ptsz)
#undef FAKE_FREE_ASYNC

CUresult fk_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                                unsigned long long flags)
{
    (void)align;
    (void)addr;
    (void)flags;
    void *p = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)U(p);
    REC(*ptr, size, 0, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    REC(ptr, size, 0, 0);
    free((void *)(uintptr_t)ptr);
    return CUDA_SUCCESS;
}

static _Atomic uint64_t fake_next_handle = 0x100;

CUresult fk_cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
                        const CUmemAllocationProp *prop, unsigned long long flags)
{
    (void)flags;
    if (!h || !prop || !size)
        return CUDA_ERROR_INVALID_VALUE;
    *h = atomic_fetch_add(&fake_next_handle, 1);
    REC(*h, size, (uint64_t)prop->location.type, (uint64_t)prop->location.id);
    return CUDA_SUCCESS;
}

CUresult fk_cuMemRelease(CUmemGenericAllocationHandle h)
{
    REC(h, 0, 0, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                     unsigned long long flags)
{
    (void)offset;
    (void)flags;
    REC(ptr, size, h, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    REC(ptr, size, 0, 0);
    return CUDA_SUCCESS;
}

/* Whether [p, p+len) lies inside one managed allocation. */
static bool fake_in_managed(CUdeviceptr p, size_t len)
{
    bool in = false;
    pthread_mutex_lock(&fake_lock);
    for (size_t i = 0; i < FAKE_MAX_ALLOCS && !in; i++) {
        const fake_alloc_t *a = &fake_allocs[i];
        in = a->base && a->managed && p >= a->base && p + len <= a->base + a->size;
    }
    pthread_mutex_unlock(&fake_lock);
    return in;
}

/* Like the driver: managed memory cannot be shared between processes. */
CUresult fk_cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr dptr)
{
    REC(dptr, 0, 0, 0);
    if (!handle || fake_in_managed(dptr, 1))
        return CUDA_ERROR_INVALID_VALUE;
    memset(handle, 0, sizeof(*handle));
    memcpy(handle->reserved, &dptr, sizeof(dptr));
    return CUDA_SUCCESS;
}

/* Refuses (like the driver) a prefetch that is not inside one managed
 * allocation, and one on the legacy stream while a blocking stream captures. */
static CUresult fake_prefetch(CUdeviceptr p, size_t len, CUstream s, int ptsz)
{
    if (!fake_in_managed(p, len))
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_legacy_work(fake_stream_of(s, ptsz)))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    CUgraph g = fake_capture_graph(s, ptsz); /* a capturing stream's: recorded (fake_cuda.h) */
    if (g)
        return fake_capture_op(g, FAKE_NODE_PREFETCH, p, len, 0);
    fake_order_work(fake_stream_of(s, ptsz), fake_rec_last());
    return CUDA_SUCCESS;
}

CUresult fk_cuMemPrefetchAsync_v2(CUdeviceptr p, size_t len, CUmemLocation loc, unsigned flags,
                                  CUstream s)
{
    (void)flags;
    fake_stall_fire(FAKE_STALL_PREFETCH);
    REC(p, len, ((uint64_t)loc.type << 32) | (uint32_t)loc.id, U(s));
    return fake_prefetch(p, len, s, 0);
}

CUresult fk_cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t len, CUmemLocation loc, unsigned flags,
                                       CUstream s)
{
    (void)flags;
    REC(p, len, ((uint64_t)loc.type << 32) | (uint32_t)loc.id, U(s));
    return fake_prefetch(p, len, s, 1);
}

/* The CUDA 8.0 ABI: a device ordinal, CU_DEVICE_CPU for the host (logged as
 * the device, a[2]). */
CUresult fk_cuMemPrefetchAsync(CUdeviceptr p, size_t len, CUdevice dev, CUstream s)
{
    REC(p, len, (uint64_t)(int64_t)dev, U(s));
    return fake_prefetch(p, len, s, 0);
}

CUresult fk_cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t len, CUdevice dev, CUstream s)
{
    REC(p, len, (uint64_t)(int64_t)dev, U(s));
    return fake_prefetch(p, len, s, 1);
}

/*
 * CUDA 13's batched range operations (cuda.h): cuMemPrefetchBatchAsync,
 * cuMemDiscardBatchAsync and cuMemDiscardAndPrefetchBatchAsync, each also
 * _ptsz. One log entry per range (under the entry point's name, arguments
 * as cuMemPrefetchAsync_v2's: each range with its own location, locs[k]
 * applying from range loc_idx[k] on, up to the next location's first
 * range; a discard's location is logged as 0). The whole batch is refused,
 * nothing done, if the locations are not laid out as cuda.h requires
 * (loc_idx[0] 0, strictly ascending, all below count, so nlocs <= count),
 * the flags ("reserved for future use. Must be zero") are not 0, any range
 * is not managed memory, or it is queued on the legacy stream, capture or
 * not (the stream "must not be legacy NULL stream"; NULL names it through
 * the plain entry points, the calling thread's per-thread default stream
 * through _ptsz). cuda.h names no error code for these:
 * CUDA_ERROR_INVALID_VALUE is the double's choice. A discard leaves a
 * range's contents indeterminate (cuda.h): the double overwrites them with
 * FAKE_DISCARDED bytes, so that a test reading them sees they were given
 * up (a discard followed by a prefetch is a discard too). Queued on a
 * capturing stream, each range is recorded as the prefetch node a single
 * prefetch is (fake_cuda.h), in the batch's order, and the graph's launch
 * changes no bytes. What the driver records for a batch is not documented
 * (cuda.h says nothing of capture for these): one node per range is the
 * double's choice, the case where the shim must tell a batch's nodes apart.
 * FAKE_CUDA_NO_BATCH=1 makes all three refuse every batch
 * (CUDA_ERROR_NOT_SUPPORTED: cuda.h's "All devices ... must have a
 * non-zero value for ... CONCURRENT_MANAGED_ACCESS otherwise the API will
 * return an error"), so the shim's fallback is tested.
 */
enum { FAKE_BATCH_PREFETCH = 1, FAKE_BATCH_DISCARD = 2 };

static CUresult fake_range_batch(const char *fn, int what, CUdeviceptr *ptrs, size_t *sizes,
                                 size_t count, CUmemLocation *locs, size_t *loc_idx, size_t nlocs,
                                 unsigned long long flags, CUstream s, int ptsz)
{
    const char *no = getenv("FAKE_CUDA_NO_BATCH");
    if (no && strcmp(no, "1") == 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    bool prefetch = what & FAKE_BATCH_PREFETCH;
    if (!ptrs || !sizes || !count || flags || !fake_stream_of(s, ptsz) ||
        (prefetch && (!locs || !fake_batch_idx_ok(count, loc_idx, nlocs))))
        return CUDA_ERROR_INVALID_VALUE;
    if (prefetch)
        fake_stall_fire(FAKE_STALL_PREFETCH);
    CUresult r = CUDA_SUCCESS;
    size_t logged[64]; /* the first 64 ranges' log entries, placed in the stream's order */
    size_t k = 0;      /* the location of range i */
    for (size_t i = 0; i < count; i++) {
        if (prefetch && k + 1 < nlocs && loc_idx[k + 1] == i)
            k++;
        uint64_t where = prefetch ? ((uint64_t)locs[k].type << 32) | (uint32_t)locs[k].id : 0;
        fake_rec(fn, ptrs[i], sizes[i], where, U(s));
        if (i < 64)
            logged[i] = fake_rec_last();
        if (!fake_in_managed(ptrs[i], sizes[i]))
            r = CUDA_ERROR_INVALID_VALUE;
    }
    /* as a single prefetch: recorded while its stream captures */
    CUgraph g = r == CUDA_SUCCESS ? fake_capture_graph(s, ptsz) : NULL;
    for (size_t i = 0; g && i < count; i++)
        (void)fake_capture_op(g, FAKE_NODE_PREFETCH, ptrs[i], sizes[i], 0);
    for (size_t i = 0; r == CUDA_SUCCESS && !g && i < count; i++) {
        if (i < 64)
            fake_order_work(fake_stream_of(s, ptsz), logged[i]);
        if (what & FAKE_BATCH_DISCARD)
            memset((void *)(uintptr_t)ptrs[i], FAKE_DISCARDED, sizes[i]);
    }
    return r;
}

CUresult fk_cuMemPrefetchBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                    CUmemLocation *locs, size_t *loc_idx, size_t nlocs,
                                    unsigned long long flags, CUstream s)
{
    return fake_range_batch(__func__ + 3, FAKE_BATCH_PREFETCH, ptrs, sizes, count, locs, loc_idx,
                            nlocs, flags, s, 0);
}

CUresult fk_cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                         CUmemLocation *locs, size_t *loc_idx, size_t nlocs,
                                         unsigned long long flags, CUstream s)
{
    return fake_range_batch(__func__ + 3, FAKE_BATCH_PREFETCH, ptrs, sizes, count, locs, loc_idx,
                            nlocs, flags, s, 1);
}

CUresult fk_cuMemDiscardBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                   unsigned long long flags, CUstream s)
{
    return fake_range_batch(__func__ + 3, FAKE_BATCH_DISCARD, ptrs, sizes, count, NULL, NULL, 0,
                            flags, s, 0);
}

CUresult fk_cuMemDiscardBatchAsync_ptsz(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                        unsigned long long flags, CUstream s)
{
    return fake_range_batch(__func__ + 3, FAKE_BATCH_DISCARD, ptrs, sizes, count, NULL, NULL, 0,
                            flags, s, 1);
}

CUresult fk_cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                              CUmemLocation *locs, size_t *loc_idx, size_t nlocs,
                                              unsigned long long flags, CUstream s)
{
    return fake_range_batch(__func__ + 3, FAKE_BATCH_DISCARD | FAKE_BATCH_PREFETCH, ptrs, sizes,
                            count, locs, loc_idx, nlocs, flags, s, 0);
}

CUresult fk_cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr *ptrs, size_t *sizes, size_t count,
                                                   CUmemLocation *locs, size_t *loc_idx,
                                                   size_t nlocs, unsigned long long flags,
                                                   CUstream s)
{
    return fake_range_batch(__func__ + 3, FAKE_BATCH_DISCARD | FAKE_BATCH_PREFETCH, ptrs, sizes,
                            count, locs, loc_idx, nlocs, flags, s, 1);
}
