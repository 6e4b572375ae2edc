/* net_shmguard: see shmguard.h. */
#include "net/shmguard.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fabric.h>

#include "common/log.h"
#include "net/fiload.h"

#define GUARD_MAP_BYTES 4096

/* The head of libfabric 1.17's struct smr_region (include/ofi_shm.h),
 * version 4: only the fields up to the lock matter here. */
typedef struct smr_head_v4 {
    uint8_t version;
    uint8_t resv;
    uint16_t flags;
    int pid;
    uint8_t cma_cap_peer;
    uint8_t cma_cap_self;
    uint32_t max_sar_buf_per_peer;
    void *base_addr;
    pthread_spinlock_t lock;
} smr_head_v4_t;

#define SMR_HEAD_VERSION 4
_Static_assert(sizeof(pthread_spinlock_t) == sizeof(int), "a spin lock is one int");

/* The word of an unlocked pthread spin lock (1 with glibc on x86-64, 0 in
 * its generic code): the guard reads and writes lock words as plain atomics,
 * never through pthread_spin_* on a lock another process holds. */
static int spin_unlocked_word(void)
{
    pthread_spinlock_t l;
    int v;
    pthread_spin_init(&l, PTHREAD_PROCESS_SHARED);
    memcpy(&v, (const void *)&l, sizeof(v));
    pthread_spin_destroy(&l);
    return v;
}

static void *map_region(const char *name)
{
    const char *prefix = "fi_shm://";
    if (strncmp(name, prefix, strlen(prefix)) == 0)
        name += strlen(prefix);
    char path[512];
    if (snprintf(path, sizeof(path), "/dev/shm/%s", name) >= (int)sizeof(path) || strchr(name, '/'))
        return NULL;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    void *p = mmap(NULL, GUARD_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return NULL;
    if (((const smr_head_v4_t *)p)->version != SMR_HEAD_VERSION) {
        munmap(p, GUARD_MAP_BYTES);
        return NULL;
    }
    return p;
}

gmux_status_t net_shmguard_open(const char *names, size_t name_stride, int n,
                                net_shmguard_t **guard_p)
{
    uint32_t v = net_fi_version();
    if (FI_MAJOR(v) != 1 || FI_MINOR(v) != 17)
        return GMUX_ERR_UNSUPPORTED; /* another region layout: not ours to touch */
    net_shmguard_t *g = calloc(1, sizeof(*g));
    if (!g)
        return GMUX_ERR_NOMEM;
    g->hdr = calloc((size_t)n, sizeof(*g->hdr));
    if (!g->hdr) {
        free(g);
        return GMUX_ERR_NOMEM;
    }
    g->n = n;
    int mapped = 0;
    for (int r = 0; r < n; r++) {
        g->hdr[r] = map_region(names + (size_t)r * name_stride);
        mapped += g->hdr[r] != NULL;
    }
    if (mapped == 0) {
        net_shmguard_close(g);
        return GMUX_ERR_UNSUPPORTED;
    }
    if (mapped < n)
        COM_WARN(NET, "shm guard: %d of %d regions mapped", mapped, n);
    g->unlocked = spin_unlocked_word();
    atomic_init(&g->seq, 0);
    atomic_init(&g->region, -1);
    pthread_mutex_init(&g->lock, NULL);
    *guard_p = g;
    return GMUX_OK;
}

void net_shmguard_close(net_shmguard_t *g)
{
    if (!g)
        return;
    for (int r = 0; r < g->n; r++)
        if (g->hdr[r])
            munmap(g->hdr[r], GUARD_MAP_BYTES);
    free(g->hdr);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

pthread_spinlock_t *net_shmguard_lock_of(net_shmguard_t *g, int r)
{
    if (!g || r < 0 || r >= g->n || !g->hdr[r])
        return NULL;
    return &((smr_head_v4_t *)g->hdr[r])->lock;
}

bool net_shmguard_check(net_shmguard_t *g, uint64_t now_ns)
{
    if (!g || pthread_mutex_trylock(&g->lock) != 0)
        return false;
    bool released = false;
    uint64_t s = atomic_load_explicit(&g->seq, memory_order_acquire);
    if (!(s & 1)) {
        g->seen_seq = 0; /* nothing inside libfabric now */
    } else if (s != g->seen_seq) {
        g->seen_seq = s; /* a new call: start timing it */
        g->seen_ns = now_ns;
    } else if (now_ns - g->seen_ns >= NET_SHMGUARD_STUCK_NS) {
        int r = atomic_load_explicit(&g->region, memory_order_relaxed);
        _Atomic int *w = (_Atomic int *)net_shmguard_lock_of(g, r);
        if (w && atomic_load_explicit(w, memory_order_acquire) != g->unlocked) {
            /* held while the call could not get in for a whole period: its
             * holder is dead (if it was free, the call is stuck elsewhere) */
            atomic_store_explicit(w, g->unlocked, memory_order_release);
            g->released++;
            released = true;
            COM_WARN(NET,
                     "shm guard: released the lock of rank %d's region, left held by a dead rank",
                     r);
        }
        g->seen_ns = now_ns; /* re-armed: a second stale lock takes another period */
    }
    pthread_mutex_unlock(&g->lock);
    return released;
}
