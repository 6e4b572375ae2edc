/* Simulated device memory that carries data; see tmem.h. */
#include "tmem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CH_ABSENT = 0, CH_RESIDENT = 1, CH_DISPLACED = 2 };

typedef struct tmem_region {
    uint64_t id, base, size;
    uint64_t nchunks, nbytes; /* data bytes: ceil(size / granule) */
    uint8_t *state;           /* per chunk */
    uint8_t *host, *dev;
} tmem_region_t;

struct tmem {
    tmem_params_t p;
    sim_device_t dev;
    eng_backend_t inner;
    tmem_region_t *v; /* sorted by base */
    size_t n, cap;
    uint64_t sum; /* running checksum of what every launch read */
    tmem_stats_t st;
    uint64_t displaced;
    uint64_t overruns;
    uint64_t lost; /* discards of chunks written since their fill */ /* fills that broke the budget
                                                                        or the device capacity */
    char error[256];
};

static void fail(tmem_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(tmem_t *m, const char *fmt, ...)
{
    if (m->error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->error, sizeof(m->error), fmt, ap);
    va_end(ap);
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t fnv(uint64_t h, const uint8_t *b, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t fnv64(uint64_t h, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    return fnv(h, b, 8);
}

gmux_status_t tmem_create(const tmem_params_t *p, tmem_t **out)
{
    if (!p->chunk || (p->chunk & (p->chunk - 1)) || !p->granule ||
        (p->granule & (p->granule - 1)) || p->granule > p->chunk || p->budget < p->chunk)
        return GMUX_ERR_INVALID;
    tmem_t *m = calloc(1, sizeof(*m));
    if (!m)
        return GMUX_ERR_NOMEM;
    m->p = *p;
    sim_device_init(&m->dev, p->sim);
    m->inner = sim_device_backend(&m->dev);
    m->sum = 0xcbf29ce484222325ull;
    *out = m;
    return GMUX_OK;
}

static void region_free(tmem_region_t *r)
{
    free(r->state);
    free(r->host);
    free(r->dev);
}

void tmem_destroy(tmem_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        region_free(&m->v[i]);
    free(m->v);
    free(m);
}

sim_device_t *tmem_device(tmem_t *m)
{
    return &m->dev;
}

gmux_status_t tmem_alloc(tmem_t *m, uint64_t id, uint64_t base, uint64_t size)
{
    if (size == 0 || base + size < base)
        return GMUX_ERR_INVALID;
    size_t at = 0;
    while (at < m->n && m->v[at].base < base)
        at++;
    if ((at < m->n && m->v[at].base < base + size) ||
        (at > 0 && m->v[at - 1].base + m->v[at - 1].size > base)) {
        fail(m, "allocation %llu at %#llx overlaps a live one", (unsigned long long)id,
             (unsigned long long)base);
        return GMUX_ERR_EXISTS;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        tmem_region_t *v = realloc(m->v, cap * sizeof(*v));
        if (!v)
            return GMUX_ERR_NOMEM;
        m->v = v, m->cap = cap;
    }
    tmem_region_t r = {id,
                       base,
                       size,
                       (size + m->p.chunk - 1) / m->p.chunk,
                       (size + m->p.granule - 1) / m->p.granule,
                       NULL,
                       NULL,
                       NULL};
    r.state = calloc(r.nchunks, 1);
    r.host = malloc(r.nbytes);
    r.dev = calloc(r.nbytes, 1);
    if (!r.state || !r.host || !r.dev) {
        region_free(&r);
        return GMUX_ERR_NOMEM;
    }
    for (uint64_t i = 0; i < r.nbytes; i += 8) {
        uint64_t x = mix64(id * 0x10001ull + i);
        memcpy(r.host + i, &x, r.nbytes - i < 8 ? r.nbytes - i : 8);
    }
    memmove(&m->v[at + 1], &m->v[at], (m->n - at) * sizeof(*m->v));
    m->v[at] = r;
    m->n++;
    return GMUX_OK;
}

/* The region containing addr, or NULL. */
static tmem_region_t *find(tmem_t *m, uint64_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->v[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    tmem_region_t *r = &m->v[lo - 1];
    return addr - r->base < r->size ? r : NULL;
}

/* Data bytes [lo, hi) of chunk c. */
static void chunk_bytes(const tmem_t *m, const tmem_region_t *r, uint64_t c, uint64_t *lo,
                        uint64_t *hi)
{
    uint64_t per = m->p.chunk / m->p.granule;
    *lo = c * per;
    *hi = *lo + per < r->nbytes ? *lo + per : r->nbytes;
}

static void resident_add(tmem_t *m, int64_t delta)
{
    m->st.resident += (uint64_t)delta;
    if (m->st.resident > m->st.peak)
        m->st.peak = m->st.resident;
    if (delta > 0 && m->st.resident > m->p.budget) {
        m->overruns++;
        fail(m, "capacity overrun: %llu bytes resident, budget %llu",
             (unsigned long long)m->st.resident, (unsigned long long)m->p.budget);
    }
    tmem_shared_t *s = m->p.shared;
    if (!s)
        return;
    uint64_t now = atomic_fetch_add(&s->resident, (uint64_t)delta) + (uint64_t)delta;
    uint64_t peak = atomic_load(&s->peak);
    while (now > peak && !atomic_compare_exchange_weak(&s->peak, &peak, now))
        ;
    if (delta > 0 && now > m->p.device) {
        m->overruns++;
        fail(m, "device overrun: %llu bytes resident across tasks, capacity %llu",
             (unsigned long long)now, (unsigned long long)m->p.device);
    }
}

static void chunk_fill(tmem_t *m, tmem_region_t *r, uint64_t c)
{
    uint64_t lo, hi;
    chunk_bytes(m, r, c, &lo, &hi);
    memcpy(r->dev + lo, r->host + lo, hi - lo);
    if (r->state[c] == CH_DISPLACED)
        m->displaced -= m->p.chunk;
    r->state[c] = CH_RESIDENT;
    resident_add(m, (int64_t)m->p.chunk);
}

static void chunk_writeback(tmem_t *m, tmem_region_t *r, uint64_t c)
{
    uint64_t lo, hi;
    chunk_bytes(m, r, c, &lo, &hi);
    memcpy(r->host + lo, r->dev + lo, hi - lo);
}

/* Applies fn to every chunk of [addr, addr+len) in allocations (a transfer
 * may run past the end of a region's last, partial chunk). */
typedef void (*chunk_fn)(tmem_t *m, tmem_region_t *r, uint64_t c, void *arg);
static void each_chunk(tmem_t *m, uint64_t addr, uint64_t len, chunk_fn fn, void *arg)
{
    uint64_t end = addr + len;
    while (addr < end) {
        tmem_region_t *r = find(m, addr);
        if (!r) {
            addr = (addr / m->p.chunk + 1) * m->p.chunk;
            continue;
        }
        uint64_t c = (addr - r->base) / m->p.chunk;
        fn(m, r, c, arg);
        addr = r->base + (c + 1) * m->p.chunk;
    }
}

static void do_fill(tmem_t *m, tmem_region_t *r, uint64_t c, void *arg)
{
    (void)arg;
    if (r->state[c] == CH_RESIDENT)
        return;
    chunk_fill(m, r, c);
    m->st.filled += m->p.chunk;
}

static void do_evict(tmem_t *m, tmem_region_t *r, uint64_t c, void *arg)
{
    int discard = *(int *)arg;
    if (r->state[c] == CH_DISPLACED) { /* already written back by a daemon order */
        m->displaced -= m->p.chunk;
        r->state[c] = CH_ABSENT;
        return;
    }
    if (r->state[c] != CH_RESIDENT)
        return;
    if (discard) {
        /* the device bytes are dropped: if they were written since the fill
         * and are read again (or live at the end), the checksum shows it */
        m->st.discarded += m->p.chunk;
    } else {
        chunk_writeback(m, r, c);
        m->st.evicted += m->p.chunk;
    }
    r->state[c] = CH_ABSENT;
    resident_add(m, -(int64_t)m->p.chunk);
}

static gmux_status_t be_prefetch(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                                 eng_ticket_t *t)
{
    tmem_t *m = ctx;
    uint64_t before = m->overruns;
    each_chunk(m, addr, len, do_fill, NULL);
    if (m->overruns != before)
        return GMUX_ERR_CAPACITY;
    return m->inner.ops->prefetch(m->inner.ctx, task, addr, len, t);
}

static gmux_status_t be_evict(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                              eng_ticket_t *t)
{
    tmem_t *m = ctx;
    int discard = 0;
    each_chunk(m, addr, len, do_evict, &discard);
    return m->inner.ops->evict(m->inner.ctx, task, addr, len, t);
}

static gmux_status_t be_discard(void *ctx, uint32_t task, uint64_t addr, uint64_t len)
{
    (void)task;
    tmem_t *m = ctx;
    int discard = 1;
    each_chunk(m, addr, len, do_evict, &discard);
    return GMUX_OK;
}

static gmux_status_t be_fence(void *ctx, eng_ticket_t t)
{
    tmem_t *m = ctx;
    return m->inner.ops->fence(m->inner.ctx, t);
}

static uint64_t be_now(void *ctx)
{
    tmem_t *m = ctx;
    return m->inner.ops->now(m->inner.ctx);
}

static gmux_status_t be_wait(void *ctx, eng_dir_t dir, eng_ticket_t t)
{
    tmem_t *m = ctx;
    return m->inner.ops->wait ? m->inner.ops->wait(m->inner.ctx, dir, t) : GMUX_OK;
}

/* Current contents of a region: the device copy of resident chunks. */
static uint64_t region_sum(const tmem_t *m, const tmem_region_t *r, uint64_t h)
{
    h = fnv64(fnv64(h, r->id), r->size);
    for (uint64_t c = 0; c < r->nchunks; c++) {
        uint64_t lo, hi;
        chunk_bytes(m, r, c, &lo, &hi);
        h = fnv(h, (r->state[c] == CH_RESIDENT ? r->dev : r->host) + lo, hi - lo);
    }
    return h;
}

static void be_release(void *ctx, uint32_t task, uint64_t addr, uint64_t len)
{
    (void)task, (void)len;
    tmem_t *m = ctx;
    tmem_region_t *r = find(m, addr);
    if (!r || r->base != addr) {
        fail(m, "release of %#llx, not an allocation", (unsigned long long)addr);
        return;
    }
    for (uint64_t c = 0; c < r->nchunks; c++) {
        if (r->state[c] == CH_RESIDENT)
            resident_add(m, -(int64_t)m->p.chunk);
        else if (r->state[c] == CH_DISPLACED)
            m->displaced -= m->p.chunk;
    }
    region_free(r);
    size_t at = (size_t)(r - m->v);
    memmove(&m->v[at], &m->v[at + 1], (m->n - at - 1) * sizeof(*m->v));
    m->n--;
}

static const eng_backend_ops_t tmem_ops = {
    .prefetch = be_prefetch,
    .evict = be_evict,
    .fence = be_fence,
    .now = be_now,
    .wait = be_wait,
    .discard = be_discard,
    .release = be_release,
};

eng_backend_t tmem_backend(tmem_t *m)
{
    return (eng_backend_t){&tmem_ops, m};
}

/* The data bytes [lo, hi) of [addr, addr+len), checking residency. */
static gmux_status_t span(tmem_t *m, const eng_range_t *x, tmem_region_t **r_p, uint64_t *lo,
                          uint64_t *hi)
{
    tmem_region_t *r = find(m, x->addr);
    if (!r || x->len == 0 || x->addr + x->len - r->base > r->size) {
        fail(m, "launch range %#llx+%llu outside the allocations", (unsigned long long)x->addr,
             (unsigned long long)x->len);
        return GMUX_ERR_NOT_FOUND;
    }
    uint64_t off = x->addr - r->base;
    for (uint64_t c = off / m->p.chunk; c <= (off + x->len - 1) / m->p.chunk; c++)
        if (r->state[c] != CH_RESIDENT) {
            fail(m, "launch %llu touches chunk %#llx, not resident",
                 (unsigned long long)m->st.launches,
                 (unsigned long long)(r->base + c * m->p.chunk));
            return GMUX_ERR_STATE;
        }
    *r_p = r;
    *lo = off / m->p.granule;
    *hi = (off + x->len + m->p.granule - 1) / m->p.granule;
    return GMUX_OK;
}

gmux_status_t tmem_launch(tmem_t *m, uint32_t kernel, const eng_range_t *x, uint32_t n)
{
    uint64_t h = fnv64(0xcbf29ce484222325ull, kernel);
    tmem_region_t *r;
    uint64_t lo, hi;
    for (uint32_t i = 0; i < n; i++) {
        gmux_status_t st = span(m, &x[i], &r, &lo, &hi);
        if (st != GMUX_OK)
            return st;
        if (x[i].mode & ENG_ACCESS_READ)
            h = fnv(h, r->dev + lo, hi - lo);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!(x[i].mode & ENG_ACCESS_WRITE))
            continue;
        (void)span(m, &x[i], &r, &lo, &hi);
        int rw = (x[i].mode & ENG_ACCESS_READ) != 0;
        for (uint64_t b = lo; b < hi; b++) {
            uint8_t v = (uint8_t)mix64(h + b);
            r->dev[b] = rw ? (uint8_t)(r->dev[b] * 3u + v) : v;
        }
    }
    m->sum = fnv64(m->sum, h);
    m->st.launches++;
    return GMUX_OK;
}

static void do_plan_evict(tmem_t *m, tmem_region_t *r, uint64_t c, void *arg)
{
    (void)arg;
    if (r->state[c] != CH_RESIDENT)
        return;
    chunk_writeback(m, r, c);
    r->state[c] = CH_DISPLACED;
    m->displaced += m->p.chunk;
    m->st.plan_evicted += m->p.chunk;
    resident_add(m, -(int64_t)m->p.chunk);
}

static void do_plan_fill(tmem_t *m, tmem_region_t *r, uint64_t c, void *arg)
{
    uint64_t *counter = arg;
    if (r->state[c] != CH_DISPLACED)
        return; /* only what the engine holds: the budget stays the engine's */
    chunk_fill(m, r, c);
    *counter += m->p.chunk;
}

void tmem_plan(tmem_t *m, dmn_plan_kind_t kind, const dmn_range_t *x, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (kind == DMN_PLAN_EVICT)
            each_chunk(m, x[i].base, x[i].len, do_plan_evict, NULL);
        else
            each_chunk(m, x[i].base, x[i].len, do_plan_fill, &m->st.plan_filled);
    }
}

uint64_t tmem_displaced(const tmem_t *m)
{
    return m->displaced;
}

void tmem_restore(tmem_t *m)
{
    for (size_t i = 0; i < m->n && m->displaced > 0; i++)
        for (uint64_t c = 0; c < m->v[i].nchunks; c++)
            if (m->v[i].state[c] == CH_DISPLACED)
                do_plan_fill(m, &m->v[i], c, &m->st.restored);
}

uint64_t tmem_checksum(const tmem_t *m)
{
    uint64_t h = m->sum;
    for (size_t i = 0; i < m->n; i++)
        h = region_sum(m, &m->v[i], h);
    return h;
}

const tmem_stats_t *tmem_stats(const tmem_t *m)
{
    return &m->st;
}

const char *tmem_error(const tmem_t *m)
{
    return m->error;
}
