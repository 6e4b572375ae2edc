/* Engine test helpers. */
#include "tfeed.h"

#include <string.h>

void tfeed_init(tfeed_t *f, uint32_t ntasks)
{
    memset(f, 0, sizeof(*f));
    f->ntasks = ntasks;
}

static eng_item_t *push(tfeed_t *f, uint32_t task)
{
    eng_item_t *it = &f->items[task][f->nitems[task]++];
    memset(it, 0, sizeof(*it));
    return it;
}

void tfeed_alloc(tfeed_t *f, uint32_t task, uint64_t id, uint64_t base, uint64_t size)
{
    eng_item_t *it = push(f, task);
    it->kind = ENG_ITEM_ALLOC;
    it->id = id;
    it->base = base;
    it->size = size;
}

void tfeed_free(tfeed_t *f, uint32_t task, uint64_t id)
{
    eng_item_t *it = push(f, task);
    it->kind = ENG_ITEM_FREE;
    it->id = id;
}

void tfeed_launch_mask(tfeed_t *f, uint32_t task, uint64_t base, uint64_t chunk, uint32_t mask,
                       uint32_t wmask, uint64_t time_ns)
{
    eng_item_t *it = push(f, task);
    it->kind = ENG_ITEM_LAUNCH;
    it->time_ns = time_ns;
    it->ranges = &f->ranges[f->nranges];
    for (uint32_t i = 0; i < 32; i++) {
        if (!(mask & (1u << i)))
            continue;
        f->ranges[f->nranges++] =
            (eng_range_t){base + i * chunk + 1, chunk / 2,
                          (uint8_t)((wmask & (1u << i)) ? ENG_ACCESS_RW : ENG_ACCESS_READ)};
        it->nranges++;
    }
}

static gmux_status_t tf_next(void *ctx, uint32_t task, eng_item_t *item)
{
    tfeed_t *f = ctx;
    if (f->next[task] >= f->nitems[task])
        return GMUX_ERR_NOT_FOUND;
    *item = f->items[task][f->next[task]++];
    return GMUX_OK;
}

eng_feed_t tfeed_feed(tfeed_t *f)
{
    return (eng_feed_t){tf_next, f};
}

void tfeed_rewind(tfeed_t *f)
{
    memset(f->next, 0, sizeof(f->next));
}

static int find(const tback_t *b, uint64_t key)
{
    for (uint32_t i = 0; i < b->npresent; i++)
        if (b->present[i] == key)
            return (int)i;
    return -1;
}

static void tb_log(tback_t *b, uint64_t kind, uint32_t task, uint64_t addr, uint64_t len)
{
    if (b->log && b->nlog < b->log_cap) {
        b->log[2 * b->nlog] = kind << 60 | (uint64_t)task << 48 | addr;
        b->log[2 * b->nlog + 1] = len;
    }
    b->nlog++;
}

static gmux_status_t xfer(tback_t *b, int dir, uint64_t len, eng_ticket_t *t)
{
    uint64_t s = b->free_ns[dir] > b->wait_ns[dir] ? b->free_ns[dir] : b->wait_ns[dir];
    b->free_ns[dir] = s + 1000 + len / 64;
    *t = b->free_ns[dir];
    return GMUX_OK;
}

static gmux_status_t tb_prefetch(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                                 eng_ticket_t *t)
{
    tback_t *b = ctx;
    tb_log(b, 1, task, addr, len);
    for (uint64_t a = addr; a < addr + len; a += b->chunk) {
        uint64_t key = (uint64_t)task << 48 | a;
        if (find(b, key) >= 0 || b->npresent == 1024)
            b->errors++;
        else
            b->present[b->npresent++] = key;
        b->fills++;
    }
    if (b->npresent > b->max_present)
        b->max_present = b->npresent;
    b->bytes_h2d += len;
    return xfer(b, ENG_DIR_H2D, len, t);
}

static gmux_status_t tb_evict(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                              eng_ticket_t *t)
{
    tback_t *b = ctx;
    tb_log(b, 2, task, addr, len);
    for (uint64_t a = addr; a < addr + len; a += b->chunk) {
        int i = find(b, (uint64_t)task << 48 | a);
        if (i < 0)
            b->errors++;
        else
            b->present[i] = b->present[--b->npresent];
        b->evictions++;
    }
    b->bytes_d2h += len;
    return xfer(b, ENG_DIR_D2H, len, t);
}

static gmux_status_t tb_fence(void *ctx, eng_ticket_t t)
{
    (void)ctx;
    (void)t;
    return GMUX_OK;
}

static uint64_t tb_now(void *ctx)
{
    return ((tback_t *)ctx)->now_ns;
}

static gmux_status_t tb_wait(void *ctx, eng_dir_t dir, eng_ticket_t t)
{
    tback_t *b = ctx;
    if (t > b->wait_ns[dir])
        b->wait_ns[dir] = t;
    return GMUX_OK;
}

static gmux_status_t tb_discard(void *ctx, uint32_t task, uint64_t addr, uint64_t len)
{
    tback_t *b = ctx;
    tb_log(b, 3, task, addr, len);
    for (uint64_t a = addr; a < addr + len; a += b->chunk) {
        int i = find(b, (uint64_t)task << 48 | a);
        if (i < 0)
            b->errors++;
        else
            b->present[i] = b->present[--b->npresent];
    }
    return GMUX_OK;
}

static void tb_release(void *ctx, uint32_t task, uint64_t addr, uint64_t len)
{
    tback_forget(ctx, task, addr, len);
}

/* Cleaning keeps the chunk: it must be present. */
static gmux_status_t tb_clean(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                              eng_ticket_t *t)
{
    tback_t *b = ctx;
    for (uint64_t a = addr; a < addr + len; a += b->chunk)
        if (find(b, (uint64_t)task << 48 | a) < 0)
            b->errors++;
    b->cleans += len / b->chunk;
    b->bytes_d2h += len;
    return xfer(b, ENG_DIR_D2H, len, t);
}

/* The copy engine back to the host is idle whenever the test says so. */
static bool tb_idle(void *ctx, eng_dir_t dir)
{
    tback_t *b = ctx;
    return dir == ENG_DIR_D2H && b->d2h_idle;
}

static const eng_backend_ops_t tb_ops = {tb_prefetch, tb_evict,   tb_fence, tb_now,  tb_wait,
                                         tb_discard,  tb_release, tb_clean, tb_idle, NULL};

eng_backend_t tback_backend(tback_t *b, uint64_t chunk)
{
    memset(b, 0, sizeof(*b));
    b->chunk = chunk;
    return (eng_backend_t){&tb_ops, b};
}

bool tback_has(const tback_t *b, uint32_t task, uint64_t addr)
{
    return find(b, (uint64_t)task << 48 | addr) >= 0;
}

void tback_forget(tback_t *b, uint32_t task, uint64_t addr, uint64_t len)
{
    for (uint64_t a = addr; a < addr + len; a += b->chunk) {
        int i = find(b, (uint64_t)task << 48 | a);
        if (i >= 0)
            b->present[i] = b->present[--b->npresent];
    }
}

static int popcount(uint32_t x)
{
    return __builtin_popcount(x);
}

uint64_t tf_exhaustive_min_fetches(const uint32_t *masks, uint32_t n, uint32_t nchunks,
                                   uint32_t cap)
{
    const uint64_t inf = UINT64_MAX;
    uint32_t states = 1u << nchunks;
    static uint64_t cur[1024], nxt[1024];
    for (uint32_t s = 0; s < states; s++)
        cur[s] = inf;
    cur[0] = 0;
    for (uint32_t k = 0; k < n; k++) {
        for (uint32_t s = 0; s < states; s++)
            nxt[s] = inf;
        for (uint32_t s = 0; s < states; s++) {
            if (cur[s] == inf)
                continue;
            uint64_t cost = cur[s] + (uint64_t)popcount(masks[k] & ~s);
            /* keep any subset of the old set beside the launch's chunks */
            uint32_t others = s & ~masks[k];
            for (uint32_t keep = others;; keep = (keep - 1) & others) {
                uint32_t t = keep | masks[k];
                if ((uint32_t)popcount(t) <= cap && cost < nxt[t])
                    nxt[t] = cost;
                if (keep == 0)
                    break;
            }
        }
        memcpy(cur, nxt, states * sizeof(*cur));
    }
    uint64_t best = inf;
    for (uint32_t s = 0; s < states; s++)
        if (cur[s] < best)
            best = cur[s];
    return best;
}

eng_regions_t *tf_regions_one(uint32_t nchunks)
{
    eng_regions_t *r;
    uint32_t reg;
    if (eng_regions_create(1, 1, &r) != GMUX_OK)
        return NULL;
    if (eng_regions_alloc(r, 0, 1, 0, nchunks, &reg) != GMUX_OK) {
        eng_regions_destroy(r);
        return NULL;
    }
    return r;
}
