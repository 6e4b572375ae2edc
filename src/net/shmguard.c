/* net_shmguard: see shmguard.h. */
#include "net/shmguard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fabric.h>

#include "common/log.h"
#include "net/fab.h"
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

/* A rank's guard page: its bracket, and the mutex that guards of every rank
 * take to release the lock of this rank's region (robust: a guard that
 * dies holding it does not stop the others). */
struct net_shmguard_page {
    _Atomic uint32_t magic; /* GUARD_PAGE_MAGIC once the rest is set */
    uint32_t version;
    _Atomic uint64_t bracket;
    pthread_mutex_t release;
};
#define GUARD_PAGE_MAGIC   0x67786d67u /* "gmxg" */
#define GUARD_PAGE_VERSION 1
#define GUARD_PAGE_SUFFIX  ".guard"
_Static_assert(sizeof(struct net_shmguard_page) <= GUARD_MAP_BYTES, "one page");

#define REGION_MASK ((1ull << NET_SHMGUARD_REGION_BITS) - 1)
#define VIEW_DEAD   UINT64_MAX /* a dead rank's slot in check's view */

/* The words of glibc's x86-64 spin lock, which the waiter count relies on:
 * 1 free, 0 taken, one less for each thread that starts waiting. */
#define WORD_FREE 1

/* Whether this process's spin lock is the one described above (as far as
 * one thread can tell: free and taken words, a failed trylock that leaves
 * the word alone). */
static bool spin_lock_known(void)
{
#if defined(__x86_64__) && defined(__GLIBC__)
    pthread_spinlock_t l;
    int free_w, held_w, after_try;
    pthread_spin_init(&l, PTHREAD_PROCESS_SHARED);
    memcpy(&free_w, (const void *)&l, sizeof(int));
    pthread_spin_lock(&l);
    memcpy(&held_w, (const void *)&l, sizeof(int));
    int busy = pthread_spin_trylock(&l);
    memcpy(&after_try, (const void *)&l, sizeof(int));
    pthread_spin_unlock(&l);
    pthread_spin_destroy(&l);
    return free_w == WORD_FREE && held_w == 0 && busy != 0 && after_try == 0;
#else
    return false;
#endif
}

static void *map_file(const char *path, int flags)
{
    int fd = open(path, flags | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return NULL;
    if ((flags & O_CREAT) && ftruncate(fd, GUARD_MAP_BYTES) != 0) {
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, GUARD_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

static void *map_region(const char *name)
{
    char path[512];
    void *p = net_fab_shm_path(name, "", path, sizeof(path)) ? map_file(path, 0) : NULL;
    if (p && ((const smr_head_v4_t *)p)->version != SMR_HEAD_VERSION) {
        munmap(p, GUARD_MAP_BYTES);
        return NULL;
    }
    return p;
}

/* Creates this rank's page (bracket closed, release mutex set up). */
static net_shmguard_page_t *create_page(const char *name)
{
    char path[512];
    if (!net_fab_shm_path(name, GUARD_PAGE_SUFFIX, path, sizeof(path)))
        return NULL;
    net_shmguard_page_t *pg = map_file(path, O_CREAT | O_TRUNC);
    if (!pg)
        return NULL;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    int rc = pthread_mutex_init(&pg->release, &a);
    pthread_mutexattr_destroy(&a);
    if (rc != 0) {
        munmap(pg, GUARD_MAP_BYTES);
        unlink(path);
        return NULL;
    }
    pg->version = GUARD_PAGE_VERSION;
    atomic_store(&pg->bracket, 0);
    atomic_store_explicit(&pg->magic, GUARD_PAGE_MAGIC, memory_order_release);
    return pg;
}

/* Rank r's page, mapped on first use; NULL while it has none (yet). */
static net_shmguard_page_t *page_of(net_shmguard_t *g, int r)
{
    if (g->page[r])
        return g->page[r];
    char path[512];
    net_shmguard_page_t *pg = NULL;
    if (net_fab_shm_path(g->names + (size_t)r * g->name_stride, GUARD_PAGE_SUFFIX, path,
                         sizeof(path)))
        pg = map_file(path, 0);
    if (!pg)
        return NULL;
    if (atomic_load_explicit(&pg->magic, memory_order_acquire) != GUARD_PAGE_MAGIC ||
        pg->version != GUARD_PAGE_VERSION) {
        munmap(pg, GUARD_MAP_BYTES);
        return NULL;
    }
    return g->page[r] = pg;
}

gmux_status_t net_shmguard_open(const char *names, size_t name_stride, int n, int me,
                                net_shmguard_t **guard_p)
{
    uint32_t v = net_fi_version();
    if (FI_MAJOR(v) != 1 || FI_MINOR(v) != 17 || me < 0 || me >= n || !spin_lock_known())
        return GMUX_ERR_UNSUPPORTED; /* another region layout or lock: not ours to touch */
    net_shmguard_t *g = calloc(1, sizeof(*g));
    if (!g)
        return GMUX_ERR_NOMEM;
    g->n = n;
    g->me = me;
    g->name_stride = name_stride;
    g->hdr = calloc((size_t)n, sizeof(*g->hdr));
    g->page = calloc((size_t)n, sizeof(*g->page));
    g->seen = calloc((size_t)n + 2, sizeof(*g->seen));
    g->view = calloc((size_t)n + 2, sizeof(*g->view));
    g->names = malloc((size_t)n * name_stride);
    pthread_mutex_init(&g->lock, NULL);
    if (!g->hdr || !g->page || !g->seen || !g->view || !g->names) {
        net_shmguard_close(g);
        return GMUX_ERR_NOMEM;
    }
    memcpy(g->names, names, (size_t)n * name_stride);
    int mapped = 0;
    for (int r = 0; r < n; r++) {
        g->hdr[r] = map_region(names + (size_t)r * name_stride);
        mapped += g->hdr[r] != NULL;
    }
    g->page[me] = create_page(names + (size_t)me * name_stride);
    if (mapped == 0 || !g->page[me]) {
        net_shmguard_close(g);
        return GMUX_ERR_UNSUPPORTED;
    }
    if (mapped < n)
        COM_WARN(NET, "shm guard: %d of %d regions mapped", mapped, n);
    g->mine = &g->page[me]->bracket;
    *guard_p = g;
    return GMUX_OK;
}

void net_shmguard_close(net_shmguard_t *g)
{
    if (!g)
        return;
    char path[512];
    if (!g->unlinked && g->page && g->page[g->me] &&
        net_fab_shm_path(g->names + (size_t)g->me * g->name_stride, GUARD_PAGE_SUFFIX, path,
                         sizeof(path)))
        unlink(path); /* ours, if the join did not; a killed rank's: the launcher */
    for (int r = 0; r < g->n; r++) {
        if (g->hdr && g->hdr[r])
            munmap(g->hdr[r], GUARD_MAP_BYTES);
        if (g->page && g->page[r])
            munmap(g->page[r], GUARD_MAP_BYTES);
    }
    free(g->hdr);
    free(g->page);
    free(g->seen);
    free(g->view);
    free(g->names);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

void net_shmguard_map_pages(net_shmguard_t *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock); /* page_of also runs in check */
    for (int r = 0; r < g->n; r++)
        if (!page_of(g, r))
            COM_WARN(NET, "shm guard: rank %d's page not found; a lock it might hold is kept", r);
    pthread_mutex_unlock(&g->lock);
}

void net_shmguard_unlink(net_shmguard_t *g)
{
    if (!g || g->unlinked)
        return;
    const char *name = g->names + (size_t)g->me * g->name_stride;
    char path[512];
    if (net_fab_shm_path(name, GUARD_PAGE_SUFFIX, path, sizeof(path)))
        unlink(path);
    g->unlinked = true;
}

pthread_spinlock_t *net_shmguard_lock_of(net_shmguard_t *g, int r)
{
    if (!g || r < 0 || r >= g->n || !g->hdr[r])
        return NULL;
    return &((smr_head_v4_t *)g->hdr[r])->lock;
}

/* What take_view found. */
typedef enum view_kind {
    VIEW_NONE,  /* nothing to release: the lock is free, or a live rank is out of sight */
    VIEW_BUSY,  /* no verdict now: someone moved, or a live rank could hold the lock */
    VIEW_CLEAR, /* held, and no live rank can be its holder */
} view_kind_t;

/* Takes check's view of region r's lock into view (n + 2 slots): every
 * rank's bracket is read before and after the word, and must agree, so
 * what it says held at the instant the word was read. CLEAR when the lock
 * was held and every live rank that could hold it was accounted for as a
 * waiter; view then keeps the brackets of those waiters (0 elsewhere), the
 * word and r, which check requires to stay the same for a period. */
static view_kind_t take_view(net_shmguard_t *g, int r, net_shmguard_dead_fn dead, void *arg,
                             uint64_t *view)
{
    _Atomic int *w = (_Atomic int *)net_shmguard_lock_of(g, r);
    if (!w)
        return VIEW_NONE;
    for (int x = 0; x < g->n; x++) {
        net_shmguard_page_t *pg = dead(arg, x) ? NULL : page_of(g, x);
        if (!pg && !dead(arg, x))
            return VIEW_NONE; /* a live rank we cannot see: it might hold it */
        view[x] = pg ? atomic_load(&pg->bracket) : VIEW_DEAD;
    }
    int word = atomic_load(w);
    for (int x = 0; x < g->n; x++)
        if (view[x] != VIEW_DEAD && atomic_load(&g->page[x]->bracket) != view[x])
            return VIEW_BUSY; /* someone moved meanwhile */
    if (word > 0)
        return VIEW_NONE; /* free */
    long waiters = 0;     /* live ranks inside a call that waits for r's lock */
    for (int x = 0; x < g->n; x++) {
        int q = view[x] == VIEW_DEAD ? -1 : (int)(view[x] & REGION_MASK) - 1;
        if (q == r) {
            waiters++; /* a send to r, or r's own progress: holds r or waits for it */
            continue;
        }
        if (q >= 0 && q == x)
            return VIEW_BUSY; /* progressing its own region: may hold r's by trylock */
        view[x] = 0;          /* dead, outside libfabric or sending elsewhere: cannot hold r's */
    }
    view[g->n] = (uint64_t)(uint32_t)word;
    view[g->n + 1] = (uint64_t)r;
    /* each waiter took one off the word; a holder did not */
    return -(long)word >= waiters ? VIEW_CLEAR : VIEW_BUSY;
}

bool net_shmguard_check(net_shmguard_t *g, uint64_t now_ns, net_shmguard_dead_fn dead, void *arg)
{
    if (!g || pthread_mutex_trylock(&g->lock) != 0)
        return false;
    bool released = false;
    size_t vbytes = ((size_t)g->n + 2) * sizeof(uint64_t);
    uint64_t *view = g->view;
    uint64_t own = atomic_load(g->mine);
    int r = (int)(own & REGION_MASK) - 1;
    view_kind_t k = r < 0 ? VIEW_NONE : take_view(g, r, dead, arg, view);
    if (k == VIEW_NONE) {
        g->seen_ns = 0; /* nothing to release now */
    } else if (k == VIEW_BUSY) {
        /* no verdict this time; a clear view later must still match the first */
    } else if (g->seen_ns == 0 || memcmp(view, g->seen, vbytes) != 0) {
        memcpy(g->seen, view, vbytes); /* a new clear view: start timing it */
        g->seen_ns = now_ns;
    } else if (now_ns - g->seen_ns >= NET_SHMGUARD_STUCK_NS) {
        net_shmguard_page_t *owner = page_of(g, r);
        int rc = owner ? pthread_mutex_trylock(&owner->release) : EBUSY;
        if (rc == EOWNERDEAD) { /* a guard died releasing: nothing of it is half done */
            pthread_mutex_consistent(&owner->release);
            rc = 0;
        }
        if (rc == 0) {
            /* Under the mutex no other guard releases r's lock. A clear view
             * leaves only a dead holder, which never unlocks: until we swap,
             * the word can only go down (new waiters), so the swap frees
             * exactly the lock we judged, or fails. */
            int word = (int)(uint32_t)g->seen[g->n];
            if (take_view(g, r, dead, arg, view) == VIEW_CLEAR &&
                memcmp(view, g->seen, vbytes) == 0 &&
                atomic_compare_exchange_strong((_Atomic int *)net_shmguard_lock_of(g, r), &word,
                                               WORD_FREE)) {
                g->released++;
                released = true;
                COM_WARN(NET,
                         "shm guard: released the lock of rank %d's region, left held by a dead "
                         "rank",
                         r);
            }
            pthread_mutex_unlock(&owner->release);
        }
        g->seen_ns = 0; /* re-armed: a second stale lock takes another period */
    }
    pthread_mutex_unlock(&g->lock);
    return released;
}
