/* Event buffer, emulated caching allocator, RNG and cost model of the workload generators. */
#include <stdlib.h>
#include <string.h>

#include "sim/wl_internal.h"
#include "common/array.h"

uint64_t wl_time_ns(double flops, double peak_flops, double bytes, double mem_eff)
{
    double t_c = flops / (peak_flops * WL_EFF_COMPUTE);
    double t_m = bytes / (WL_H200_HBM_BPS * WL_EFF_MEMORY * mem_eff);
    double t = (t_c > t_m ? t_c : t_m) * 1e9;
    return t < WL_LAUNCH_NS ? WL_LAUNCH_NS : (uint64_t)(t + 0.5);
}

uint64_t wl_rng_next(wl_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t wl_rng_below(wl_rng_t *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)wl_rng_next(r) * n) >> 64);
}

uint64_t wl_mix(uint64_t a, uint64_t b)
{
    wl_rng_t r = {a ^ (b * 0xd1b54a32d192ed03ull)};
    return wl_rng_next(&r);
}

void wl_buf_clear(wl_buf_t *b)
{
    b->n = b->head = b->nargs = b->nranges = 0;
}

void wl_buf_fini(wl_buf_t *b)
{
    free(b->evs);
    free(b->args);
    free(b->ranges);
    memset(b, 0, sizeof(*b));
}

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
    return com_array_grow(v, cap, need, elem, 64, SIZE_MAX) == GMUX_OK ? 0 : -1;
}

static wl_qev_t *push(wl_buf_t *b)
{
    if (b->oom || grow((void **)&b->evs, &b->cap, b->n + 1, sizeof(*b->evs))) {
        b->oom = 1;
        return NULL;
    }
    wl_qev_t *q = &b->evs[b->n++];
    memset(q, 0, sizeof(*q));
    q->arg0 = b->nargs;
    q->range0 = b->nranges;
    return q;
}

int wl_buf_pop(wl_buf_t *b, sim_event_t *ev)
{
    if (b->head >= b->n)
        return -1;
    wl_qev_t *q = &b->evs[b->head++];
    *ev = q->ev;
    if (ev->kind == SIM_EV_LAUNCH) {
        ev->u.launch.args = b->args + q->arg0;
        ev->u.launch.ranges = b->ranges + q->range0;
    }
    return 0;
}

void wl_emit_alloc(wl_buf_t *b, uint64_t id, uint64_t base, uint64_t size)
{
    wl_qev_t *q = push(b);
    if (q) {
        q->ev.kind = SIM_EV_ALLOC;
        q->ev.u.alloc = (sim_alloc_ev_t){.id = id, .base = base, .size = size};
    }
}

void wl_emit_free(wl_buf_t *b, uint64_t id)
{
    wl_qev_t *q = push(b);
    if (q) {
        q->ev.kind = SIM_EV_FREE;
        q->ev.u.free.id = id;
    }
}

void wl_launch(wl_buf_t *b, uint32_t kernel, uint32_t grid, uint32_t block, uint64_t ns)
{
    wl_qev_t *q = push(b);
    if (q) {
        q->ev.kind = SIM_EV_LAUNCH;
        sim_launch_ev_t *l = &q->ev.u.launch;
        l->kernel = kernel;
        l->grid[0] = grid ? grid : 1;
        l->grid[1] = l->grid[2] = 1;
        l->block[0] = block;
        l->block[1] = l->block[2] = 1;
        l->time_ns = ns;
    }
}

void wl_ptr(wl_buf_t *b, uint64_t addr)
{
    if (b->oom || b->n == 0 ||
        grow((void **)&b->args, &b->cap_args, b->nargs + 1, sizeof(*b->args))) {
        b->oom = 1;
        return;
    }
    b->args[b->nargs++] = (sim_arg_t){.kind = ENG_ARG_PTR, .value = addr};
    b->evs[b->n - 1].ev.u.launch.nargs++;
}

void wl_val(wl_buf_t *b, uint64_t v)
{
    if (b->oom || b->n == 0 ||
        grow((void **)&b->args, &b->cap_args, b->nargs + 1, sizeof(*b->args))) {
        b->oom = 1;
        return;
    }
    b->args[b->nargs++] = (sim_arg_t){.kind = ENG_ARG_VAL, .value = v};
    b->evs[b->n - 1].ev.u.launch.nargs++;
}

void wl_touch(wl_buf_t *b, uint64_t addr, uint64_t len, uint8_t mode)
{
    if (len == 0)
        return;
    if (b->oom || b->n == 0 ||
        grow((void **)&b->ranges, &b->cap_ranges, b->nranges + 1, sizeof(*b->ranges))) {
        b->oom = 1;
        return;
    }
    b->ranges[b->nranges++] = (sim_range_t){.addr = addr, .len = len, .mode = mode};
    b->evs[b->n - 1].ev.u.launch.nranges++;
}

void wl_heap_init(wl_heap_t *h, uint32_t global_task)
{
    /* 1 TiB of address space per task from 0x200000000000, as separate processes would see. */
    h->next_va = 0x200000000000ull + ((uint64_t)global_task << 40);
    h->next_id = 1;
}

wl_seg_t wl_segment(wl_buf_t *b, wl_heap_t *h, uint64_t size)
{
    size = (size + WL_SEG_ALIGN - 1) & ~(WL_SEG_ALIGN - 1);
    wl_seg_t s = {.id = h->next_id++, .base = h->next_va, .size = size, .used = 0};
    h->next_va += size + WL_SEG_ALIGN; /* a guard page between segments */
    wl_emit_alloc(b, s.id, s.base, s.size);
    return s;
}

uint64_t wl_carve(wl_seg_t *s, uint64_t bytes)
{
    uint64_t at = s->base + s->used;
    s->used += (bytes + WL_TENSOR_ALIGN - 1) & ~(WL_TENSOR_ALIGN - 1);
    if (s->used > s->size)
        abort(); /* a generator sized its segment wrong: a bug, never input-driven */
    return at;
}

void wl_release(wl_buf_t *b, wl_seg_t *s)
{
    wl_emit_free(b, s->id);
    s->size = 0;
}

uint64_t wl_pool_carve(wl_pool_t *p, wl_buf_t *b, wl_heap_t *h, uint64_t bytes)
{
    wl_seg_t *s = p->n ? &p->segs[p->n - 1] : NULL;
    uint64_t need = (bytes + WL_TENSOR_ALIGN - 1) & ~(WL_TENSOR_ALIGN - 1);
    if (!s || s->used + need > s->size) {
        if (p->n == p->cap) {
            uint32_t cap = p->cap ? 2 * p->cap : 16;
            wl_seg_t *v = realloc(p->segs, cap * sizeof(*v));
            if (!v) {
                b->oom = 1;
                return 0;
            }
            p->segs = v;
            p->cap = cap;
        }
        p->segs[p->n++] = wl_segment(b, h, need > p->seg_size ? need : p->seg_size);
        s = &p->segs[p->n - 1];
    }
    return wl_carve(s, bytes);
}

void wl_pool_release(wl_pool_t *p, wl_buf_t *b)
{
    for (uint32_t i = 0; i < p->n; i++)
        wl_release(b, &p->segs[i]);
    p->n = 0;
}

void wl_pool_fini(wl_pool_t *p)
{
    free(p->segs);
    memset(p, 0, sizeof(*p));
}
