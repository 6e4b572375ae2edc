/*
 * Symmetric memory: the symmetric heap (one anonymous mapping per PE,
 * registered as a net window) with a deterministic first-fit allocator, so
 * the same sequence of collective calls hands out the same offsets on every
 * PE; and the main program's writable data and bss (its global and static
 * variables), found with dl_iterate_phdr and registered as a second window.
 *
 * The allocator keeps its block list outside the heap, so a stray remote
 * write into the heap can never corrupt it.
 */

#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "shmem/internal.h"

typedef struct shm_block {
    size_t off, size;
    bool used;
} shm_block_t;

static shm_block_t *blocks;
static size_t nblocks, cap;

gmux_status_t shm_heap_init(size_t size)
{
    if (size < 2 * SHM_SCRATCH)
        size = 2 * SHM_SCRATCH;
    if (size > SIZE_MAX - SHM_ALIGN_MAX)
        return GMUX_ERR_NOMEM;
    /* reserve SHM_ALIGN_MAX more and keep the aligned part: shmem_align
     * aligns offsets, which are addresses' alignment only from such a base */
    char *raw = mmap(NULL, size + SHM_ALIGN_MAX, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return GMUX_ERR_NOMEM;
    size_t head = (SHM_ALIGN_MAX - (uintptr_t)raw % SHM_ALIGN_MAX) % SHM_ALIGN_MAX;
    char *p = raw + head;
    if (head)
        munmap(raw, head);
    munmap(p + size, SHM_ALIGN_MAX - head); /* the tail, never empty */
    cap = 64;
    blocks = calloc(cap, sizeof(*blocks));
    if (!blocks) {
        munmap(p, size);
        return GMUX_ERR_NOMEM;
    }
    blocks[0] = (shm_block_t){0, size, false};
    nblocks = 1;
    shm_state.heap = p;
    shm_state.heap_size = size;
    return GMUX_OK;
}

void shm_heap_fini(void)
{
    if (shm_state.heap)
        munmap(shm_state.heap, shm_state.heap_size);
    shm_state.heap = NULL;
    shm_state.heap_size = 0;
    free(blocks);
    blocks = NULL;
    nblocks = cap = 0;
}

static bool insert_at(size_t i, shm_block_t b)
{
    if (nblocks == cap) {
        shm_block_t *nb = realloc(blocks, 2 * cap * sizeof(*blocks));
        if (!nb)
            return false;
        blocks = nb;
        cap *= 2;
    }
    memmove(&blocks[i + 1], &blocks[i], (nblocks - i) * sizeof(*blocks));
    blocks[i] = b;
    nblocks++;
    return true;
}

static void remove_at(size_t i)
{
    memmove(&blocks[i], &blocks[i + 1], (nblocks - i - 1) * sizeof(*blocks));
    nblocks--;
}

void *shm_heap_alloc(size_t size, size_t align)
{
    if (align > SHM_ALIGN_MAX)
        return NULL; /* the base is not aligned to it */
    if (size == 0)
        size = 1;
    if (size > SIZE_MAX - (SHM_ALIGN - 1))
        return NULL; /* rounding up would wrap to a few bytes */
    size = (size + SHM_ALIGN - 1) & ~(size_t)(SHM_ALIGN - 1);
    pthread_mutex_lock(&shm_state.lock);
    void *out = NULL;
    for (size_t i = 0; i < nblocks && !out; i++) {
        shm_block_t b = blocks[i];
        if (b.used)
            continue;
        size_t start = (b.off + align - 1) & ~(align - 1);
        if (start - b.off > b.size || b.size - (start - b.off) < size)
            continue;
        size_t pad = start - b.off, rest = b.size - pad - size;
        /* split: [pad free][size used][rest free] */
        if (pad && !insert_at(i, (shm_block_t){b.off, pad, false}))
            break;
        if (pad)
            i++;
        blocks[i] = (shm_block_t){start, size, true};
        if (rest && !insert_at(i + 1, (shm_block_t){start + size, rest, false})) {
            blocks[i].size += rest; /* keep the tail inside the block */
        }
        out = shm_state.heap + start;
    }
    pthread_mutex_unlock(&shm_state.lock);
    return out;
}

static ssize_t find_block(const void *p)
{
    if (!shm_state.heap || (const char *)p < shm_state.heap)
        return -1;
    size_t off = (size_t)((const char *)p - shm_state.heap);
    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].off == off && blocks[i].used)
            return (ssize_t)i;
    return -1;
}

size_t shm_heap_block_size(const void *p)
{
    pthread_mutex_lock(&shm_state.lock);
    ssize_t i = find_block(p);
    size_t size = i < 0 ? 0 : blocks[i].size;
    pthread_mutex_unlock(&shm_state.lock);
    return size;
}

void shm_heap_free(void *p)
{
    pthread_mutex_lock(&shm_state.lock);
    ssize_t i = find_block(p);
    if (i >= 0) {
        blocks[i].used = false;
        if ((size_t)i + 1 < nblocks && !blocks[i + 1].used) {
            blocks[i].size += blocks[i + 1].size;
            remove_at((size_t)i + 1);
        }
        if (i > 0 && !blocks[i - 1].used) {
            blocks[i - 1].size += blocks[i].size;
            remove_at((size_t)i);
        }
    }
    pthread_mutex_unlock(&shm_state.lock);
}

struct seg {
    uintptr_t lo, hi;
};

static int find_main(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct seg *s = arg;
    /* the first object is the main program */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || ph->p_memsz == 0)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!s->hi || lo < s->lo)
            s->lo = lo;
        if (hi > s->hi)
            s->hi = hi;
    }
    return 1;
}

gmux_status_t shm_data_find(char **base_p, size_t *size_p)
{
    struct seg s = {0, 0};
    dl_iterate_phdr(find_main, &s);
    if (!s.hi)
        return GMUX_ERR_NOT_FOUND;
    *base_p = (char *)s.lo;
    *size_p = s.hi - s.lo;
    return GMUX_OK;
}

/* --- the public allocation calls: collective, with a barrier --------------- */

/* A size of 0 returns NULL with no barrier (OpenSHMEM 1.5, 9.3): every PE
 * passes the same size, so all of them skip it. */
static void *alloc_collective(size_t size, size_t align, const char *call)
{
    shm_need_init(call);
    if (size == 0)
        return NULL;
    void *p = shm_heap_alloc(size, align);
    shm_check(gmux_barrier(gmux_team_world(shm_state.comm)), call);
    return p;
}

GMUX_API void *shmem_malloc(size_t size)
{
    return alloc_collective(size, SHM_ALIGN, "shmem_malloc");
}

GMUX_API void *shmem_malloc_with_hints(size_t size, long hints)
{
    (void)hints; /* every symmetric object is equally reachable here */
    return alloc_collective(size, SHM_ALIGN, "shmem_malloc_with_hints");
}

GMUX_API void *shmem_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    shm_need_init("shmem_calloc");
    if (count == 0 || size == 0)
        return NULL; /* as shmem_malloc(0): no barrier */
    void *p = shm_heap_alloc(count * size, SHM_ALIGN);
    if (p)
        memset(p, 0, count * size);
    shm_check(gmux_barrier(gmux_team_world(shm_state.comm)), "shmem_calloc");
    return p;
}

GMUX_API void *shmem_align(size_t alignment, size_t size)
{
    if (alignment == 0 || (alignment & (alignment - 1)))
        return NULL;
    return alloc_collective(size, alignment < SHM_ALIGN ? SHM_ALIGN : alignment, "shmem_align");
}

GMUX_API void shmem_free(void *ptr)
{
    shm_need_init("shmem_free");
    /* nobody may still be using it: barrier first */
    shm_check(gmux_barrier(gmux_team_world(shm_state.comm)), "shmem_free");
    if (ptr && !shm_heap_block_size(ptr))
        shm_die("shmem_free", "%p was not returned by shmem_malloc", ptr);
    if (ptr)
        shm_heap_free(ptr);
}

GMUX_API void *shmem_realloc(void *ptr, size_t size)
{
    if (!ptr)
        return shmem_malloc(size);
    shm_need_init("shmem_realloc");
    size_t old = shm_heap_block_size(ptr);
    if (!old)
        shm_die("shmem_realloc", "%p was not returned by shmem_malloc", ptr);
    shm_check(gmux_barrier(gmux_team_world(shm_state.comm)), "shmem_realloc");
    if (size == 0) {
        /* OpenSHMEM 1.5 (9.3.1): the block is freed, nothing is allocated;
         * as shmem_free, the barrier on entry is the only one */
        shm_heap_free(ptr);
        return NULL;
    }
    void *p = shm_heap_alloc(size, SHM_ALIGN);
    if (p) {
        memcpy(p, ptr, old < size ? old : size);
        shm_heap_free(ptr);
    }
    shm_check(gmux_barrier(gmux_team_world(shm_state.comm)), "shmem_realloc");
    return p;
}
