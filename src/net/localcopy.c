/*
 * A rank's copies into its own windows (net_local_copy, internal.h): puts
 * and put_values to itself, executed in stream order by whoever holds the
 * progress lock. Host memory is written unit by unit with atomic stores,
 * since other threads of the rank may poll the words it writes; device
 * memory goes through the comm's mem_copy.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/internal.h"

/* Stores k (1, 2, 4 or 8) bytes from s at d, aligned to k, atomically. */
static void store_atomic(uint8_t *d, const uint8_t *s, size_t k)
{
    if (k == 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        __atomic_store_n((uint64_t *)(void *)d, v, __ATOMIC_RELEASE);
    } else if (k == 4) {
        uint32_t v;
        memcpy(&v, s, 4);
        __atomic_store_n((uint32_t *)(void *)d, v, __ATOMIC_RELEASE);
    } else if (k == 2) {
        uint16_t v;
        memcpy(&v, s, 2);
        __atomic_store_n((uint16_t *)(void *)d, v, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(d, *s, __ATOMIC_RELEASE);
    }
}

/* Copies n bytes to window memory that other threads of this rank may be
 * polling with atomic loads (shmem_wait_until on a word a put to self
 * writes): every naturally aligned 1, 2, 4 or 8 byte unit of dst that the
 * copy covers whole is written by one atomic store, so a waiter never sees a
 * torn value (memmove gives no such promise, and races with the loads). */
static void copy_to_window(uint8_t *d, const uint8_t *s, size_t n)
{
    while (n) {
        size_t k = 8;
        while (k > 1 && (((uintptr_t)d & (k - 1)) || n < k))
            k >>= 1;
        store_atomic(d, s, k);
        d += k;
        s += k;
        n -= k;
    }
}

gmux_status_t net_local_copy(gmux_comm_t *comm, void *dst, uint8_t dst_mem, const void *src,
                             uint8_t src_mem, size_t n)
{
    if ((dst_mem != GMUX_MEM_HOST || src_mem != GMUX_MEM_HOST) && comm->mem_copy)
        return comm->mem_copy(comm->mem_copy_arg, dst, src, n) ? GMUX_ERR_DRIVER : GMUX_OK;
    if (dst_mem == GMUX_MEM_CUDA || src_mem == GMUX_MEM_CUDA)
        return GMUX_ERR_UNSUPPORTED;
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    if (s < d + n && d < s + n) {
        /* overlapping (a window put into itself): through a copy of the source */
        uint8_t *tmp = malloc(n);
        if (!tmp) {
            memmove(dst, src, n);
            return GMUX_OK;
        }
        memcpy(tmp, src, n);
        copy_to_window(dst, tmp, n);
        free(tmp);
        return GMUX_OK;
    }
    copy_to_window(dst, src, n);
    return GMUX_OK;
}
