/* net_devstage: see devstage.h. */
#include "net/devstage.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "net/internal.h"

#define STAGE_MAX_WINDOWS 16
#define STAGE_PAGE        4096u

typedef struct stage_win {
    bool used;
    bool target; /* a window remote puts land in; else a local source range */
    bool direct; /* registered as device memory: no shadow, no bounce */
    gmux_window_t win;
    char *dev;    /* device buffer */
    char *shadow; /* pinned host shadow, registered with the comm */
    size_t size;
} stage_win_t;

struct net_devstage {
    gmux_comm_t *comm;
    net_devstage_copy_t copy;
    uint32_t nrings;
    net_ring_t *rings;       /* staging rings [ctx * size + peer] */
    gmux_dev_ring_t *hrings; /* their host view for the handle */
    uint64_t *mirror;        /* nsig words the kernels read */
    uint64_t *seen;          /* comm values last published */
    size_t mirror_bytes;
    char *arena;
    size_t arena_bytes, arena_used;
    pthread_mutex_t lock; /* win[]: registration vs the service thread */
    stage_win_t win[STAGE_MAX_WINDOWS];
};

gmux_status_t net_devstage_create(gmux_comm_t *comm, const net_devstage_copy_t *copy,
                                  size_t arena_bytes, net_devstage_t **stage_p)
{
    gmux_status_t st = GMUX_ERR_NOMEM;
    net_devstage_t *s = calloc(1, sizeof(*s));
    if (!s)
        return st;
    s->comm = comm;
    s->copy = *copy;
    pthread_mutex_init(&s->lock, NULL);
    s->nrings = comm->nctx * (uint32_t)comm->size;
    s->rings = calloc(s->nrings, sizeof(*s->rings));
    s->hrings = calloc(s->nrings, sizeof(*s->hrings));
    s->seen = calloc(comm->nsig, sizeof(uint64_t));
    if (!s->rings || !s->hrings || !s->seen)
        goto free_stage;
    s->mirror_bytes = ((size_t)comm->nsig * 8 + STAGE_PAGE - 1) & ~(size_t)(STAGE_PAGE - 1);
    void *m = NULL;
    if (posix_memalign(&m, STAGE_PAGE, s->mirror_bytes) != 0)
        goto free_stage;
    memset(m, 0, s->mirror_bytes);
    s->mirror = m;
    s->arena = copy->host_alloc(copy->arg, arena_bytes);
    if (!s->arena)
        goto free_stage;
    s->arena_bytes = arena_bytes;
    if (copy->copy)
        gmux_comm_set_mem_copy(comm, copy->copy, copy->arg);
    for (uint32_t i = 0; i < s->nrings; i++) {
        if ((st = net_ring_create(comm->ring_slots, &s->rings[i])) != GMUX_OK)
            goto free_stage;
        s->hrings[i].slots = (uint64_t *)s->rings[i].slots;
        s->hrings[i].tail = (uint64_t *)s->rings[i].tail;
        s->hrings[i].head = (uint64_t *)s->rings[i].head;
    }
    *stage_p = s;
    return GMUX_OK;

free_stage:
    net_devstage_destroy(s);
    return st;
}

void net_devstage_destroy(net_devstage_t *s)
{
    if (!s)
        return;
    if (s->copy.copy)
        gmux_comm_set_mem_copy(s->comm, NULL, NULL);
    for (uint32_t i = 0; s->rings && i < s->nrings; i++)
        if (s->rings[i].mem)
            net_ring_destroy(&s->rings[i]);
    for (int i = 0; i < STAGE_MAX_WINDOWS; i++)
        if (s->win[i].used && s->win[i].shadow)
            s->copy.host_free(s->copy.arg, s->win[i].shadow);
    if (s->arena)
        s->copy.host_free(s->copy.arg, s->arena);
    free(s->rings);
    free(s->hrings);
    free(s->seen);
    free(s->mirror);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

void net_devstage_fill(net_devstage_t *s, gmux_dev_handle_t *h)
{
    h->rings = s->hrings;
    h->sigview = s->mirror;
}

size_t net_devstage_ranges(const net_devstage_t *s, net_devsvc_range_t *out, size_t n, size_t max)
{
    for (uint32_t i = 0; i < s->nrings && n < max; i++)
        out[n++] = (net_devsvc_range_t){s->rings[i].mem, s->rings[i].mem_size};
    if (n < max)
        out[n++] = (net_devsvc_range_t){s->mirror, s->mirror_bytes};
    return n;
}

/* Whether the provider reaches [dev_base, +size) as the handle's device
 * memory: a registration tried and undone (local). */
static bool stage_reachable(net_devstage_t *s, void *dev_base, size_t size)
{
    if (s->copy.mem.kind == GMUX_MEM_HOST ||
        gmux_source_register_mem(s->comm, dev_base, size, &s->copy.mem) != GMUX_OK)
        return false;
    gmux_source_deregister(s->comm, dev_base);
    return true;
}

/* The slot taken for entry, or -1 when the table is full. */
static int stage_slot(net_devstage_t *s, const stage_win_t *entry)
{
    int slot = -1;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < STAGE_MAX_WINDOWS && slot < 0; i++)
        if (!s->win[i].used)
            slot = i;
    if (slot >= 0)
        s->win[slot] = *entry;
    pthread_mutex_unlock(&s->lock);
    return slot;
}

static gmux_status_t window_register_direct(net_devstage_t *s, void *dev_base, size_t size,
                                            gmux_window_t *win_p)
{
    stage_win_t e = {.used = true, .target = true, .direct = true, .dev = dev_base, .size = size};
    int slot = stage_slot(s, &e);
    if (slot < 0)
        return net_window_register_failed(s->comm, size, GMUX_ERR_CAPACITY);
    bool direct = false;
    /* no fallback: the probe said the provider reaches it */
    gmux_status_t st =
        gmux_window_register_mem(s->comm, dev_base, size, &s->copy.mem, NULL, win_p, &direct);
    pthread_mutex_lock(&s->lock);
    if (st == GMUX_OK)
        s->win[slot].win = *win_p;
    else
        s->win[slot].used = false;
    pthread_mutex_unlock(&s->lock);
    return st;
}

gmux_status_t net_devstage_window_register(net_devstage_t *s, void *dev_base, size_t size,
                                           gmux_window_t *win_p)
{
    /* collective: a failure before the exchange still takes part in it
     * (net_window_register_failed), or the other ranks' exchange would pair
     * with this rank's next registration */
    if (!dev_base || size == 0)
        return net_window_register_failed(s->comm, size, GMUX_ERR_INVALID);
    if (stage_reachable(s, dev_base, size))
        return window_register_direct(s, dev_base, size, win_p);
    char *shadow = s->copy.host_alloc(s->copy.arg, size);
    if (!shadow)
        return net_window_register_failed(s->comm, size, GMUX_ERR_NOMEM);
    gmux_status_t st = GMUX_ERR_DRIVER;
    /* the shadow starts as the device buffer, so the first copy back keeps it */
    if (s->copy.d2h(s->copy.arg, shadow, dev_base, size) != 0)
        goto announce;
    /* in the table before the collective: peers may put (and signal) as soon
     * as it completes, before this call returns */
    st = GMUX_ERR_CAPACITY;
    stage_win_t e = {.used = true, .target = true, .dev = dev_base, .shadow = shadow, .size = size};
    int slot = stage_slot(s, &e);
    if (slot < 0)
        goto announce;
    if ((st = gmux_window_register(s->comm, shadow, size, win_p)) != GMUX_OK)
        goto drop_slot;
    pthread_mutex_lock(&s->lock);
    s->win[slot].win = *win_p;
    pthread_mutex_unlock(&s->lock);
    return GMUX_OK;

announce:
    st = net_window_register_failed(s->comm, size, st);
    goto free_shadow;
drop_slot:
    pthread_mutex_lock(&s->lock);
    s->win[slot].used = false;
    pthread_mutex_unlock(&s->lock);
free_shadow:
    s->copy.host_free(s->copy.arg, shadow);
    return st;
}

gmux_status_t net_devstage_window_deregister(net_devstage_t *s, gmux_window_t win)
{
    char *shadow = NULL;
    bool found = false;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < STAGE_MAX_WINDOWS && !found; i++) {
        if (s->win[i].used && s->win[i].target && s->win[i].win == win) {
            shadow = s->win[i].shadow; /* NULL when direct */
            s->win[i].used = false;
            found = true;
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (!found)
        return GMUX_ERR_NOT_FOUND;
    gmux_status_t st = gmux_window_deregister(s->comm, win);
    if (shadow)
        s->copy.host_free(s->copy.arg, shadow);
    return st;
}

gmux_status_t net_devstage_source_register(net_devstage_t *s, void *dev_base, size_t size)
{
    if (!dev_base || size == 0)
        return GMUX_ERR_INVALID;
    /* direct: the comm hands the provider the registration; no bounce */
    bool direct = s->copy.mem.kind != GMUX_MEM_HOST &&
                  gmux_source_register_mem(s->comm, dev_base, size, &s->copy.mem) == GMUX_OK;
    stage_win_t e = {.used = true, .direct = direct, .dev = dev_base, .size = size};
    if (stage_slot(s, &e) >= 0)
        return GMUX_OK;
    if (direct)
        gmux_source_deregister(s->comm, dev_base);
    return GMUX_ERR_CAPACITY;
}

int net_devstage_is_direct(net_devstage_t *s, const void *dev_base)
{
    int r = -1;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < STAGE_MAX_WINDOWS && r < 0; i++)
        if (s->win[i].used && s->win[i].dev == dev_base)
            r = s->win[i].direct;
    pthread_mutex_unlock(&s->lock);
    return r;
}

gmux_status_t net_devstage_source_deregister(net_devstage_t *s, void *dev_base)
{
    gmux_status_t st = GMUX_ERR_NOT_FOUND;
    bool direct = false;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < STAGE_MAX_WINDOWS && st != GMUX_OK; i++) {
        if (s->win[i].used && !s->win[i].target && s->win[i].dev == dev_base) {
            s->win[i].used = false;
            direct = s->win[i].direct;
            st = GMUX_OK;
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (st == GMUX_OK && direct) {
        /* the provider may still be reading it: every earlier put first */
        for (uint32_t c = 0; c < s->comm->nctx && st == GMUX_OK; c++)
            st = net_flush_wait(s->comm, c); /* their errors stay theirs */
        gmux_status_t d = gmux_source_deregister(s->comm, dev_base);
        st = st != GMUX_OK ? st : d; /* a wait that timed out is said */
    }
    return st;
}

static const stage_win_t *dev_source(const net_devstage_t *s, uint64_t src, uint64_t size)
{
    for (int i = 0; i < STAGE_MAX_WINDOWS; i++) {
        const stage_win_t *w = &s->win[i];
        uint64_t lo = (uint64_t)(uintptr_t)w->dev;
        if (w->used && !w->target && !w->direct && src >= lo && size <= w->size &&
            src - lo <= w->size - size)
            return w;
    }
    return NULL;
}

/* Copies a device source into the arena; recycles the arena (every context's
 * earlier operations ended: all earlier sources consumed) when it is full. */
static gmux_status_t stage_source(net_devstage_t *s, net_desc_t *d)
{
    if (d->size > s->arena_bytes)
        return GMUX_ERR_RANGE;
    size_t need = (d->size + 63) & ~(size_t)63;
    if (s->arena_used + need > s->arena_bytes) {
        /* every earlier put ended, done or failed: none reads the arena
         * any more. A context's error stays for its owner's flush. */
        for (uint32_t c = 0; c < s->comm->nctx; c++) {
            gmux_status_t st = net_flush_wait(s->comm, c);
            if (st != GMUX_OK)
                return st;
        }
        s->arena_used = 0;
    }
    char *bounce = s->arena + s->arena_used;
    if (s->copy.d2h(s->copy.arg, bounce, (const void *)(uintptr_t)d->src, d->size) != 0)
        return GMUX_ERR_DRIVER;
    s->arena_used += need;
    d->src = (uint64_t)(uintptr_t)bounce;
    return GMUX_OK;
}

/* Pushes into the comm's ring of the same stream, progressing while full. */
static gmux_status_t forward_one(net_devstage_t *s, uint32_t i, net_desc_t *d)
{
    gmux_comm_t *comm = s->comm;
    gmux_status_t st = GMUX_OK;
    pthread_mutex_lock(&s->lock);
    if (d->opcode == NET_OP_PUT && d->size > 0 && dev_source(s, d->src, d->size))
        st = stage_source(s, d);
    pthread_mutex_unlock(&s->lock);
    if (st != GMUX_OK)
        return st;
    uint64_t deadline = com_deadline_after_ns((uint64_t)(net_timeout_s(comm) * 1e9));
    for (unsigned k = 0; (st = net_ring_try_push(&comm->rings[i], d)) == GMUX_ERR_BUSY; k++) {
        if (net_progress_try(comm) == 0 && k > 64)
            sched_yield();
        if ((k & 63) == 0 && com_deadline_passed(deadline))
            return GMUX_ERR_TIMEOUT;
    }
    net_proxy_kick(comm);
    return st;
}

int net_devstage_forward(net_devstage_t *s, bool drain)
{
    int done = 0;
    for (uint32_t i = 0; i < s->nrings; i++) {
        net_ring_t *r = &s->rings[i];
        uint64_t until = drain ? net_ring_tail(r) : 0;
        uint64_t deadline = 0;
        for (;;) {
            net_desc_t d;
            gmux_status_t st = net_ring_peek(r, &d);
            if (st == GMUX_ERR_BUSY) {
                if (!drain || (int64_t)(net_ring_head(r) - until) >= 0)
                    break;
                if (!deadline)
                    deadline = com_deadline_after_ns((uint64_t)(net_timeout_s(s->comm) * 1e9));
                if (com_deadline_passed(deadline))
                    return GMUX_ERR_TIMEOUT;
                sched_yield(); /* a producer is still writing its slot */
                continue;
            }
            if (st == GMUX_OK)
                st = forward_one(s, i, &d);
            net_ring_pop(r);
            if (st != GMUX_OK) {
                COM_ERROR(NET, "rank %d: staged descriptor dropped: %s", s->comm->rank,
                          gmux_status_str(st));
                atomic_store(&s->comm->ctx_error[d.ctx < s->comm->nctx ? d.ctx : 0], st);
            }
            done++;
        }
    }
    return done;
}

int net_devstage_mirror(net_devstage_t *s)
{
    gmux_comm_t *comm = s->comm;
    _Atomic uint64_t *sig = &comm->signals[NET_SIG_RESERVED];
    bool changed = false;
    for (uint32_t i = 0; i < comm->nsig && !changed; i++)
        changed = atomic_load_explicit(&sig[i], memory_order_acquire) != s->seen[i];
    if (!changed)
        return 0;
    /* values first (acquire): the data they cover is in the shadows now */
    for (uint32_t i = 0; i < comm->nsig; i++)
        s->seen[i] = atomic_load_explicit(&sig[i], memory_order_acquire);
    pthread_mutex_lock(&s->lock);
    for (int w = 0; w < STAGE_MAX_WINDOWS; w++)
        if (s->win[w].used && s->win[w].target && !s->win[w].direct &&
            s->copy.h2d(s->copy.arg, s->win[w].dev, s->win[w].shadow, s->win[w].size) != 0)
            COM_ERROR(NET, "rank %d: staging copy to the device failed", comm->rank);
    pthread_mutex_unlock(&s->lock);
    for (uint32_t i = 0; i < comm->nsig; i++)
        atomic_store_explicit((_Atomic uint64_t *)&s->mirror[i], s->seen[i], memory_order_release);
    return 1;
}
