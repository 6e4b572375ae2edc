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
#define PARAMS_CHUNK      32   /* descriptors a launch copies and checks at a time */

/*
 * One kernel's cached layout. The launch path reads slots without a lock, and
 * unloads empty them for reuse, so each slot is a seqlock: a writer (holding
 * params_fill_lock) makes seq odd, changes the slot or the pool words it
 * names, and makes seq even again; a reader copies what it needs, then checks
 * that seq is even and unchanged, and else reads again. What a reader uses
 * (parameter count, offsets, sizes: how far into the program's kernelParams
 * it reads) is always a copy that was checked this way. Every field is an
 * atomic, so no read is a data race, torn or not. Without fences (TSan does
 * not model them): writers store data with release, so a reader that loads
 * (acquire) any word written after a seq change also sees that change when it
 * loads seq again; readers load data with acquire, so that second load of seq
 * comes after them. On x86 these are plain moves.
 */
typedef struct params_slot {
    _Atomic uint32_t seq;
    _Atomic uint32_t n;     /* parameters; 0: no layout known */
    _Atomic uintptr_t key;  /* CUfunction; 0 = empty */
    _Atomic uint32_t first; /* index into params_pool */
} params_slot_t;

typedef struct params_desc {
    uint32_t offset;
    uint32_t size;
} params_desc_t;

/* A slot as one reader saw it (seq even at the time). */
typedef struct params_view {
    const params_slot_t *slot;
    uint32_t seq, n, first;
} params_view_t;

static params_slot_t params_slots[PARAMS_SLOTS];
static _Atomic uint64_t params_pool[PARAMS_POOL]; /* offset << 32 | size */
static uint32_t params_pool_used;                 /* under params_fill_lock */
static pthread_mutex_t params_fill_lock = PTHREAD_MUTEX_INITIALIZER;
static shim_param_info_fn params_func_info, params_kernel_info;

void shim_params_set_info(shim_param_info_fn func_info, shim_param_info_fn kernel_info)
{
    params_func_info = func_info;
    params_kernel_info = kernel_info;
}

/* Opens / closes a change of slot s. Lock held. The odd seq is ordered
 * before the writer's later stores by their release (see above). */
static void params_write_begin(params_slot_t *s)
{
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
}

static void params_write_end(params_slot_t *s)
{
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 1, memory_order_release);
}

/* Empties every slot and the pool. Lock held. */
static void params_clear(void)
{
    for (size_t i = 0; i < PARAMS_SLOTS; i++) {
        params_slot_t *s = &params_slots[i];
        if (atomic_load_explicit(&s->key, memory_order_relaxed) == 0)
            continue;
        params_write_begin(s);
        atomic_store_explicit(&s->key, 0, memory_order_release);
        atomic_store_explicit(&s->n, 0, memory_order_release);
        atomic_store_explicit(&s->first, 0, memory_order_release);
        params_write_end(s);
    }
    params_pool_used = 0;
}

void shim_params_reset(void)
{
    pthread_mutex_lock(&params_fill_lock);
    params_clear();
    pthread_mutex_unlock(&params_fill_lock);
}

void shim_params_forget(void)
{
    shim_params_reset();
}

static size_t params_hash(uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (PARAMS_SLOTS - 1);
}

/* Asks one query for the whole layout into out; returns the count (0: none). */
static uint32_t params_query(shim_param_info_fn info, CUfunction func, params_desc_t *out,
                             uint32_t room)
{
    if (!info)
        return 0;
    uint32_t i;
    for (i = 0; i < PARAMS_MAX_PER_FN; i++) {
        size_t off = 0, size = 0;
        if (info(func, i, &off, &size) != CUDA_SUCCESS)
            break;
        if (i >= room || off > UINT32_MAX || size > UINT32_MAX)
            return 0; /* no room, or a layout no parameter block has */
        out[i] = (params_desc_t){.offset = (uint32_t)off, .size = (uint32_t)size};
    }
    /* A kernel without parameters answers an error for index 0, like a bad handle. */
    return i;
}

/* Fills the empty slot s for func (its first launch since the last unload),
 * and describes it in *v. Lock held. */
static void params_fill(params_slot_t *s, CUfunction func, params_view_t *v)
{
    static params_desc_t tmp[PARAMS_MAX_PER_FN]; /* lock held */
    uint32_t room = PARAMS_POOL - params_pool_used;
    uint32_t n = params_query(params_func_info, func, tmp, room);
    if (n == 0)
        n = params_query(params_kernel_info, func, tmp, room);
    params_write_begin(s);
    atomic_store_explicit(&s->key, (uintptr_t)func, memory_order_release);
    atomic_store_explicit(&s->first, params_pool_used, memory_order_release);
    for (uint32_t i = 0; i < n; i++)
        atomic_store_explicit(&params_pool[params_pool_used + i],
                              (uint64_t)tmp[i].offset << 32 | tmp[i].size, memory_order_release);
    atomic_store_explicit(&s->n, n, memory_order_release);
    params_pool_used += n;
    params_write_end(s);
    *v = (params_view_t){.slot = s,
                         .seq = atomic_load_explicit(&s->seq, memory_order_relaxed),
                         .n = n,
                         .first = atomic_load_explicit(&s->first, memory_order_relaxed)};
}

/* Whether slot s still holds what the reader saw at sequence seq. */
static bool params_unchanged(const params_slot_t *s, uint32_t seq)
{
    return atomic_load_explicit(&s->seq, memory_order_relaxed) == seq;
}

/* Finds func's layout, filling its slot on its first launch (under the lock);
 * false when none is known (the driver gave none, or the table is full). */
static bool params_layout(CUfunction func, params_view_t *v)
{
    uintptr_t key = (uintptr_t)func;
    if (!key)
        return false;
    size_t h = params_hash(key);
    for (;;) {
        bool again = false;
        size_t probe;
        for (probe = 0; probe < PARAMS_SLOTS && !again; probe++) {
            const params_slot_t *s = &params_slots[(h + probe) & (PARAMS_SLOTS - 1)];
            uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
            if (seq & 1) { /* being written: wait for the writer, look again */
                pthread_mutex_lock(&params_fill_lock);
                pthread_mutex_unlock(&params_fill_lock);
                again = true;
                break;
            }
            uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
            if (k == 0)
                break; /* not cached: fill it */
            if (k != key)
                continue;
            /* a layout's n and first are checked with its descriptors (params_copy) */
            uint32_t n = atomic_load_explicit(&s->n, memory_order_acquire);
            uint32_t first = atomic_load_explicit(&s->first, memory_order_acquire);
            if (n == 0 && !params_unchanged(s, seq)) {
                again = true;
                break;
            }
            *v = (params_view_t){.slot = s, .seq = seq, .n = n, .first = first};
            return n > 0;
        }
        if (again)
            continue;
        /* not found: look again under the lock (writers are then still) and fill */
        bool ok = false;
        pthread_mutex_lock(&params_fill_lock);
        for (probe = 0; probe < PARAMS_SLOTS; probe++) {
            params_slot_t *s = &params_slots[(h + probe) & (PARAMS_SLOTS - 1)];
            uintptr_t k = atomic_load_explicit(&s->key, memory_order_relaxed);
            if (k == key) {
                *v =
                    (params_view_t){.slot = s,
                                    .seq = atomic_load_explicit(&s->seq, memory_order_relaxed),
                                    .n = atomic_load_explicit(&s->n, memory_order_relaxed),
                                    .first = atomic_load_explicit(&s->first, memory_order_relaxed)};
                ok = v->n > 0;
                break;
            }
            if (k == 0) {
                params_fill(s, func, v);
                ok = v->n > 0;
                break;
            }
        }
        pthread_mutex_unlock(&params_fill_lock);
        return ok; /* table full: no layout */
    }
}

/* Copies descriptors [at, at + count) of the layout v into out; false when
 * the slot changed since v was read (the copy, and v's n and first, are then
 * not to be used). Reads stay inside the pool whatever v holds. */
static bool params_copy(const params_view_t *v, uint32_t at, uint32_t count, params_desc_t *out)
{
    for (uint32_t i = 0; i < count; i++) {
        uint32_t idx = v->first + at + i;
        uint64_t w =
            idx < PARAMS_POOL ? atomic_load_explicit(&params_pool[idx], memory_order_acquire) : 0;
        out[i] = (params_desc_t){.offset = (uint32_t)(w >> 32), .size = (uint32_t)w};
    }
    return params_unchanged(v->slot, v->seq);
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
 * since later positions would shift). The layout is read in checked chunks;
 * when an unload changed it meanwhile, the launch is read again from the
 * start with the new one. */
static size_t params_walk(CUfunction func, void **kernel_params, void **extra, uint64_t *out,
                          size_t max, bool positional)
{
    size_t size = 0, n = 0;
    const unsigned char *buf = NULL;
    if (!kernel_params && (!extra || !(buf = params_extra_buffer(extra, &size))))
        return 0;
    params_view_t v;
    for (;;) {
        if (!params_layout(func, &v)) { /* no layout: the extra buffer's words */
            if (kernel_params)
                return 0; /* kernelParams cannot be read without one */
            size_t len = size < PARAMS_EXTRA_MAX ? size : PARAMS_EXTRA_MAX;
            if (!positional)
                return params_words(buf, 0, (uint32_t)len, out, 0, max);
            for (size_t i = 0; i + 8 <= len && n < max; i += 8)
                memcpy(&out[n++], buf + i, sizeof(uint64_t));
            return n;
        }
        bool changed = false;
        n = 0;
        for (uint32_t at = 0; at < v.n && n < max && !changed; at += PARAMS_CHUNK) {
            params_desc_t d[PARAMS_CHUNK];
            uint32_t count = v.n - at < PARAMS_CHUNK ? v.n - at : PARAMS_CHUNK;
            if (!params_copy(&v, at, count, d)) {
                changed = true;
                break;
            }
            for (uint32_t j = 0; j < count && n < max; j++) {
                const unsigned char *p = kernel_params ? kernel_params[at + j]
                                         : (size_t)d[j].offset + d[j].size <= size
                                             ? buf + d[j].offset
                                             : NULL;
                if (!p) {
                    if (positional)
                        return 0;
                    continue;
                }
                n = positional ? params_values_of(p, d[j].offset, d[j].size, out, n, max)
                               : params_words(p, d[j].offset, d[j].size, out, n, max);
            }
        }
        if (!changed)
            return n;
    }
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
