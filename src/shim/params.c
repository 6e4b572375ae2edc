/* Parameter layouts per kernel (fixed open-addressing cache) and decoding. */
#include "shim/params.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#define PARAMS_SLOTS      4096 /* power of two */
#define PARAMS_POOL       (64 * 1024)
#define PARAMS_MAX_PER_FN 1024
#define PARAMS_EXTRA_MAX  4096 /* bytes of an `extra` buffer scanned without a layout */

enum { SLOT_EMPTY = 0, SLOT_READY = 1, SLOT_UNKNOWN = 2 };
/* The key of a forgotten slot: never a handle (handles are aligned
 * pointers), never empty, so lookups probe past it and no fill reuses it
 * while a launch may still read its layout. The table and the pool only
 * fill up: past them, kernels have no layout (no prediction, no harm). */
#define SLOT_FORGOTTEN ((uintptr_t)1)

typedef struct params_slot {
    _Atomic(uintptr_t) key; /* CUfunction; 0 = empty */
    _Atomic int state;
    uint32_t first; /* index into params_pool */
    uint32_t n;
} params_slot_t;

typedef struct params_desc {
    uint32_t offset;
    uint32_t size;
} params_desc_t;

static params_slot_t params_slots[PARAMS_SLOTS];
static params_desc_t params_pool[PARAMS_POOL];
static uint32_t params_pool_used;
static pthread_mutex_t params_fill_lock = PTHREAD_MUTEX_INITIALIZER;
static shim_param_info_fn params_func_info, params_kernel_info;

void shim_params_set_info(shim_param_info_fn func_info, shim_param_info_fn kernel_info)
{
    params_func_info = func_info;
    params_kernel_info = kernel_info;
}

void shim_params_reset(void)
{
    pthread_mutex_lock(&params_fill_lock);
    for (size_t i = 0; i < PARAMS_SLOTS; i++) {
        atomic_store(&params_slots[i].state, SLOT_EMPTY);
        atomic_store(&params_slots[i].key, 0);
    }
    params_pool_used = 0;
    pthread_mutex_unlock(&params_fill_lock);
}

void shim_params_forget(void)
{
    pthread_mutex_lock(&params_fill_lock);
    for (size_t i = 0; i < PARAMS_SLOTS; i++) {
        uintptr_t k = atomic_load_explicit(&params_slots[i].key, memory_order_relaxed);
        if (k != 0 && k != SLOT_FORGOTTEN)
            atomic_store_explicit(&params_slots[i].key, SLOT_FORGOTTEN, memory_order_release);
    }
    pthread_mutex_unlock(&params_fill_lock);
}

static size_t params_hash(uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (PARAMS_SLOTS - 1);
}

/* Asks one query for the whole layout; returns the count or -1. */
static long params_query(shim_param_info_fn info, CUfunction func, params_desc_t *out)
{
    if (!info)
        return -1;
    size_t i;
    for (i = 0; i < PARAMS_MAX_PER_FN; i++) {
        size_t off = 0, size = 0;
        if (info(func, i, &off, &size) != CUDA_SUCCESS)
            break;
        out[i] = (params_desc_t){.offset = (uint32_t)off, .size = (uint32_t)size};
    }
    /* A kernel without parameters answers an error for index 0, like a bad handle. */
    return (long)i;
}

/* Fills the slot of func (first launch). Caller holds params_fill_lock. */
static void params_fill(params_slot_t *s, CUfunction func)
{
    uint32_t room = PARAMS_POOL - params_pool_used;
    params_desc_t *dst = &params_pool[params_pool_used];
    long n = -1;
    if (room >= PARAMS_MAX_PER_FN) {
        n = params_query(params_func_info, func, dst);
        if (n <= 0)
            n = params_query(params_kernel_info, func, dst);
    }
    if (n > 0) {
        s->first = params_pool_used;
        s->n = (uint32_t)n;
        params_pool_used += (uint32_t)n;
        atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
    } else {
        atomic_store_explicit(&s->state, SLOT_UNKNOWN, memory_order_release);
    }
}

/* The slot of func with its layout, or NULL when none is known. */
static const params_slot_t *params_layout(CUfunction func)
{
    uintptr_t key = (uintptr_t)func;
    if (!key || key == SLOT_FORGOTTEN)
        return NULL;
    size_t h = params_hash(key);
    for (size_t probe = 0; probe < PARAMS_SLOTS; probe++) {
        params_slot_t *s = &params_slots[(h + probe) & (PARAMS_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key) {
            int st = atomic_load_explicit(&s->state, memory_order_acquire);
            if (st == SLOT_EMPTY) {
                /* another thread is filling it: wait for the fill lock */
                pthread_mutex_lock(&params_fill_lock);
                pthread_mutex_unlock(&params_fill_lock);
                st = atomic_load_explicit(&s->state, memory_order_acquire);
            }
            return st == SLOT_READY ? s : NULL;
        }
        if (k != 0)
            continue;
        pthread_mutex_lock(&params_fill_lock);
        k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == 0) {
            atomic_store_explicit(&s->key, key, memory_order_release);
            params_fill(s, func);
            pthread_mutex_unlock(&params_fill_lock);
            return atomic_load(&s->state) == SLOT_READY ? s : NULL;
        }
        pthread_mutex_unlock(&params_fill_lock);
        if (k == key)
            probe--; /* filled by another thread meanwhile: read it again */
    }
    return NULL; /* table full: no layout */
}

/* Appends the 8-byte aligned words of [p, p+size) at block offset off. */
static size_t params_words(const unsigned char *p, uint32_t off, uint32_t size, uint64_t *out,
                           size_t n, size_t max)
{
    uint32_t skip = (8 - (off & 7)) & 7;
    for (uint32_t i = skip; i + 8 <= size && n < max; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, sizeof(v));
        if (v)
            out[n++] = v;
    }
    return n;
}

/* The parameter buffer of the `extra` form and its size (NULL if none). */
static const unsigned char *params_extra_buffer(void **extra, size_t *size_p)
{
    const unsigned char *buf = NULL;
    *size_p = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 16; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
            *size_p = *(const size_t *)extra[i + 1];
    }
    return buf;
}

/* The positional values of one parameter of size bytes at p (block offset off). */
static size_t params_values_of(const unsigned char *p, uint32_t off, uint32_t size, uint64_t *out,
                               size_t n, size_t max)
{
    if (size <= 8) {
        uint64_t v = 0;
        memcpy(&v, p, size); /* little-endian: zero-extended */
        if (n < max)
            out[n++] = v;
        return n;
    }
    uint32_t skip = (8 - (off & 7)) & 7;
    for (uint32_t i = skip; i + 8 <= size && n < max; i += 8)
        memcpy(&out[n++], p + i, sizeof(uint64_t));
    return n;
}

/* Both decodings: candidates (non-zero aligned words; a missing parameter is
 * skipped) or positional values (a missing one makes the launch unreadable,
 * since later positions would shift). */
static size_t params_walk(CUfunction func, void **kernel_params, void **extra, uint64_t *out,
                          size_t max, bool positional)
{
    const params_slot_t *s = params_layout(func);
    size_t size = 0, n = 0;
    const unsigned char *buf = NULL;
    if (!kernel_params && (!extra || !(buf = params_extra_buffer(extra, &size))))
        return 0;
    if (!s) { /* no layout: the extra buffer's words (kernelParams cannot be read) */
        if (kernel_params)
            return 0;
        size_t len = size < PARAMS_EXTRA_MAX ? size : PARAMS_EXTRA_MAX;
        if (!positional)
            return params_words(buf, 0, (uint32_t)len, out, 0, max);
        for (size_t i = 0; i + 8 <= len && n < max; i += 8)
            memcpy(&out[n++], buf + i, sizeof(uint64_t));
        return n;
    }
    for (uint32_t i = 0; i < s->n && n < max; i++) {
        const params_desc_t *d = &params_pool[s->first + i];
        const unsigned char *p = kernel_params                         ? kernel_params[i]
                                 : (size_t)d->offset + d->size <= size ? buf + d->offset
                                                                       : NULL;
        if (!p) {
            if (positional)
                return 0;
            continue;
        }
        n = positional ? params_values_of(p, d->offset, d->size, out, n, max)
                       : params_words(p, d->offset, d->size, out, n, max);
    }
    return n;
}

size_t shim_params_decode(CUfunction func, void **kernel_params, void **extra, uint64_t *out,
                          size_t max)
{
    return params_walk(func, kernel_params, extra, out, max, false);
}

size_t shim_params_values(CUfunction func, void **kernel_params, void **extra, uint64_t *out,
                          size_t max)
{
    return params_walk(func, kernel_params, extra, out, max, true);
}
