/*
 * CUPTI unified-memory counters, loaded with dlopen: see cupti.h.
 */
#include "shim/cupti.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/log.h"
#include "shim/stats.h"

#if defined(__has_include)
#if __has_include(<cupti.h>)
#define SHIM_HAVE_CUPTI_H 1
#endif
#endif

#ifdef SHIM_HAVE_CUPTI_H
#include <cupti.h>

#define CUPTI_BUFFER_BYTES (1u << 20)
#define CUPTI_MAX_FAULTS   65536u

static struct {
    __typeof__(cuptiActivityRegisterCallbacks) *register_callbacks;
    __typeof__(cuptiActivityConfigureUnifiedMemoryCounter) *configure_um;
    __typeof__(cuptiActivityEnable) *enable;
    __typeof__(cuptiActivityFlushAll) *flush_all;
    __typeof__(cuptiActivityGetNextRecord) *next_record;
} cupti;

static pthread_once_t cupti_once = PTHREAD_ONCE_INIT;
static atomic_bool cupti_on;
static pthread_mutex_t cupti_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cupti_faults[CUPTI_MAX_FAULTS];
static size_t cupti_nfaults;
static uint64_t cupti_lost;
static uint64_t cupti_kernel_ns, cupti_kernels; /* kernel records since the last take */

void shim_cupti_account(const void *record)
{
    const CUpti_Activity *rec = record;
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        pthread_mutex_lock(&cupti_lock);
        cupti_kernel_ns += k->end > k->start ? k->end - k->start : 0;
        cupti_kernels++;
        pthread_mutex_unlock(&cupti_lock);
        return;
    }
    if (rec->kind != CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)
        return;
    const CUpti_ActivityUnifiedMemoryCounter3 *um =
        (const CUpti_ActivityUnifiedMemoryCounter3 *)rec;
    switch (um->counterKind) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
        SHIM_STAT_ADD(um_bytes_htod, um->value);
        break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
        SHIM_STAT_ADD(um_bytes_dtoh, um->value);
        break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
        SHIM_STAT_ADD(um_faults, um->value ? um->value : 1);
        pthread_mutex_lock(&cupti_lock);
        if (cupti_nfaults < CUPTI_MAX_FAULTS)
            cupti_faults[cupti_nfaults++] = um->address;
        else
            cupti_lost++;
        pthread_mutex_unlock(&cupti_lock);
        break;
    default:
        break;
    }
}

static void CUPTIAPI cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, CUPTI_BUFFER_BYTES);
    *size = *buffer ? CUPTI_BUFFER_BYTES : 0;
    *max_records = 0; /* as many as fit */
}

static void CUPTIAPI cupti_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                            size_t size, size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *rec = NULL;
    while (cupti.next_record(buffer, valid, &rec) == CUPTI_SUCCESS)
        shim_cupti_account(rec);
    free(buffer);
}

static void cupti_load(void)
{
    static const char *const names[] = {"libcupti.so", "libcupti.so.13",
                                        "/usr/local/cuda/lib64/libcupti.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        COM_WARN(SHIM, "CUPTI (libcupti.so) not found: no fault counts, no touched ranges");
        return;
    }
    *(void **)&cupti.register_callbacks = dlsym(lib, "cuptiActivityRegisterCallbacks");
    *(void **)&cupti.configure_um = dlsym(lib, "cuptiActivityConfigureUnifiedMemoryCounter");
    *(void **)&cupti.enable = dlsym(lib, "cuptiActivityEnable");
    *(void **)&cupti.flush_all = dlsym(lib, "cuptiActivityFlushAll");
    *(void **)&cupti.next_record = dlsym(lib, "cuptiActivityGetNextRecord");
    if (!cupti.register_callbacks || !cupti.configure_um || !cupti.enable || !cupti.flush_all ||
        !cupti.next_record) {
        COM_WARN(SHIM, "CUPTI lacks the activity API: no fault counts, no touched ranges");
        return;
    }
    static const CUpti_ActivityUnifiedMemoryCounterKind kinds[3] = {
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT};
    CUpti_ActivityUnifiedMemoryCounterConfig cfg[3];
    for (int i = 0; i < 3; i++)
        cfg[i] = (CUpti_ActivityUnifiedMemoryCounterConfig){
            .scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE,
            .kind = kinds[i],
            .deviceId = 0,
            .enable = 1};
    CUptiResult r = cupti.register_callbacks(cupti_buffer_requested, cupti_buffer_completed);
    if (r == CUPTI_SUCCESS)
        r = cupti.configure_um(cfg, 3);
    if (r == CUPTI_SUCCESS)
        r = cupti.enable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
    if (r != CUPTI_SUCCESS) {
        COM_WARN(SHIM, "CUPTI unified-memory counters unavailable (CUPTI error %d)", (int)r);
        return;
    }
    atomic_store(&cupti_on, true);
    COM_INFO(SHIM, "CUPTI unified-memory counters on");
}

bool shim_cupti_start(void)
{
    pthread_once(&cupti_once, cupti_load);
    return atomic_load(&cupti_on);
}

bool shim_cupti_enable_kernels(void)
{
    if (!shim_cupti_start())
        return false;
    CUptiResult r = cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        COM_WARN(SHIM, "CUPTI kernel records unavailable (CUPTI error %d): compute times are 0",
                 (int)r);
        return false;
    }
    return true;
}

uint64_t shim_cupti_take_kernel_ns(uint64_t *kernels_p)
{
    pthread_mutex_lock(&cupti_lock);
    uint64_t ns = cupti_kernel_ns;
    if (kernels_p)
        *kernels_p = cupti_kernels;
    cupti_kernel_ns = cupti_kernels = 0;
    pthread_mutex_unlock(&cupti_lock);
    return ns;
}

void shim_cupti_flush(void)
{
    if (atomic_load(&cupti_on))
        cupti.flush_all(1);
}

size_t shim_cupti_take_faults(uint64_t *addrs, size_t max, uint64_t *lost_p)
{
    shim_cupti_flush();
    pthread_mutex_lock(&cupti_lock);
    size_t n = cupti_nfaults < max ? cupti_nfaults : max;
    for (size_t i = 0; i < n; i++)
        addrs[i] = cupti_faults[i];
    if (lost_p)
        *lost_p = cupti_lost + (cupti_nfaults - n);
    cupti_nfaults = 0;
    cupti_lost = 0;
    pthread_mutex_unlock(&cupti_lock);
    return n;
}

#else /* no cupti.h at build time */

bool shim_cupti_start(void)
{
    COM_WARN(SHIM, "built without CUPTI headers: no fault counts, no touched ranges");
    return false;
}

void shim_cupti_flush(void)
{
}

bool shim_cupti_enable_kernels(void)
{
    return false;
}

uint64_t shim_cupti_take_kernel_ns(uint64_t *kernels_p)
{
    if (kernels_p)
        *kernels_p = 0;
    return 0;
}

size_t shim_cupti_take_faults(uint64_t *addrs, size_t max, uint64_t *lost_p)
{
    (void)addrs;
    (void)max;
    if (lost_p)
        *lost_p = 0;
    return 0;
}

#endif
