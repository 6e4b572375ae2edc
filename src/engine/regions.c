/* Regions and chunks: allocation of chunk ids, per-task address lookup. */
#include "engine/regions.h"
#include "common/array.h"

#include <stdlib.h>
#include <string.h>

typedef struct eng_extent {
    uint32_t start;
    uint32_t len;
} eng_extent_t;

typedef struct eng_task_map {
    uint32_t *idx; /* region indices sorted by base */
    uint32_t n;
    uint32_t cap;
} eng_task_map_t;

struct eng_regions {
    eng_regions_view_t view; /* first: eng_regions_chunk() reads it inline */
    uint64_t chunk_size;
    uint32_t ntasks;
    eng_task_map_t *maps;

    uint32_t chunk_limit; /* ids below this have been handed out at least once */
    uint32_t chunk_cap;
    uint64_t live_chunks;

    eng_extent_t *free_ext; /* free id extents sorted by start, coalesced */
    uint32_t nfree_ext;
    uint32_t free_ext_cap;

    eng_region_t *regions;
    uint32_t nregions;
    uint32_t regions_cap;
    uint32_t *free_regions;
    uint32_t nfree_regions;
    uint32_t free_regions_cap;
};

static gmux_status_t grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    return com_array_grow_u32(arr, cap, need, elem, 16);
}

gmux_status_t eng_regions_create(uint32_t ntasks, uint64_t chunk_size, eng_regions_t **r_p)
{
    if (ntasks == 0 || chunk_size == 0)
        return GMUX_ERR_INVALID;
    eng_regions_t *r = calloc(1, sizeof(*r));
    if (!r)
        return GMUX_ERR_NOMEM;
    r->maps = calloc(ntasks, sizeof(*r->maps));
    if (!r->maps) {
        free(r);
        return GMUX_ERR_NOMEM;
    }
    r->ntasks = ntasks;
    r->chunk_size = chunk_size;
    *r_p = r;
    return GMUX_OK;
}

void eng_regions_destroy(eng_regions_t *r)
{
    if (!r)
        return;
    for (uint32_t t = 0; t < r->ntasks; t++)
        free(r->maps[t].idx);
    free(r->maps);
    free(r->view.chunks);
    free(r->free_ext);
    free(r->regions);
    free(r->free_regions);
    free(r);
}

uint64_t eng_regions_chunk_size(const eng_regions_t *r)
{
    return r->chunk_size;
}

/* First fit over the free extents, else fresh ids at the end. */
static gmux_status_t take_ids(eng_regions_t *r, uint32_t n, uint32_t *first_p)
{
    for (uint32_t i = 0; i < r->nfree_ext; i++) {
        eng_extent_t *e = &r->free_ext[i];
        if (e->len < n)
            continue;
        *first_p = e->start;
        e->start += n;
        e->len -= n;
        if (e->len == 0) {
            memmove(e, e + 1, (r->nfree_ext - i - 1) * sizeof(*e));
            r->nfree_ext--;
        }
        return GMUX_OK;
    }
    if ((uint64_t)r->chunk_limit + n >= (1u << 30))
        return GMUX_ERR_CAPACITY; /* ids must fit in 30 bits (reference strings use two flag bits)
                                   */
    gmux_status_t st =
        grow((void **)&r->view.chunks, &r->chunk_cap, r->chunk_limit + n, sizeof(*r->view.chunks));
    if (st != GMUX_OK)
        return st;
    *first_p = r->chunk_limit;
    r->chunk_limit += n;
    return GMUX_OK;
}

static gmux_status_t give_ids(eng_regions_t *r, uint32_t start, uint32_t n)
{
    uint32_t i = 0;
    while (i < r->nfree_ext && r->free_ext[i].start < start)
        i++;
    bool left = i > 0 && r->free_ext[i - 1].start + r->free_ext[i - 1].len == start;
    bool right = i < r->nfree_ext && start + n == r->free_ext[i].start;
    if (left && right) {
        r->free_ext[i - 1].len += n + r->free_ext[i].len;
        memmove(&r->free_ext[i], &r->free_ext[i + 1],
                (r->nfree_ext - i - 1) * sizeof(r->free_ext[0]));
        r->nfree_ext--;
    } else if (left) {
        r->free_ext[i - 1].len += n;
    } else if (right) {
        r->free_ext[i].start = start;
        r->free_ext[i].len += n;
    } else {
        gmux_status_t st =
            grow((void **)&r->free_ext, &r->free_ext_cap, r->nfree_ext + 1, sizeof(*r->free_ext));
        if (st != GMUX_OK)
            return st;
        memmove(&r->free_ext[i + 1], &r->free_ext[i], (r->nfree_ext - i) * sizeof(r->free_ext[0]));
        r->free_ext[i] = (eng_extent_t){start, n};
        r->nfree_ext++;
    }
    return GMUX_OK;
}

/* Index in the task's sorted map of the first region with base > addr. */
static uint32_t upper(const eng_regions_t *r, const eng_task_map_t *m, uint64_t addr)
{
    uint32_t lo = 0, hi = m->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->regions[m->idx[mid]].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

gmux_status_t eng_regions_alloc(eng_regions_t *r, uint32_t task, uint64_t id, uint64_t base,
                                uint64_t size, uint32_t *region_p)
{
    if (task >= r->ntasks || size == 0 || base + size < base)
        return GMUX_ERR_INVALID;
    eng_task_map_t *m = &r->maps[task];
    uint32_t pos = upper(r, m, base);
    if (pos > 0) {
        const eng_region_t *prev = &r->regions[m->idx[pos - 1]];
        if (prev->base + prev->size > base)
            return GMUX_ERR_EXISTS;
    }
    if (pos < m->n && r->regions[m->idx[pos]].base < base + size)
        return GMUX_ERR_EXISTS;
    uint64_t n64 = (size + r->chunk_size - 1) / r->chunk_size;
    if (n64 >= (1u << 30))
        return GMUX_ERR_CAPACITY;
    uint32_t n = (uint32_t)n64;
    gmux_status_t st = grow((void **)&m->idx, &m->cap, m->n + 1, sizeof(*m->idx));
    if (st != GMUX_OK)
        return st;
    uint32_t ri;
    if (r->nfree_regions > 0) {
        ri = r->free_regions[--r->nfree_regions];
    } else {
        st = grow((void **)&r->regions, &r->regions_cap, r->nregions + 1, sizeof(*r->regions));
        if (st != GMUX_OK)
            return st;
        ri = r->nregions++;
    }
    uint32_t first;
    st = take_ids(r, n, &first);
    if (st != GMUX_OK) {
        /* the region index stays unused: a later alloc may take it */
        if (grow((void **)&r->free_regions, &r->free_regions_cap, r->nfree_regions + 1,
                 sizeof(*r->free_regions)) == GMUX_OK)
            r->free_regions[r->nfree_regions++] = ri;
        return st;
    }
    r->regions[ri] = (eng_region_t){.base = base,
                                    .size = size,
                                    .id = id,
                                    .task = task,
                                    .first_chunk = first,
                                    .nchunks = n,
                                    .mapped = true};
    for (uint32_t i = 0; i < n; i++) {
        r->view.chunks[first + i] = (eng_chunk_t){.next_use = ENG_POS_INF,
                                                  .plan_pos = ENG_POS_INF,
                                                  .truth_pos = ENG_POS_INF,
                                                  .q_head = ENG_NONE,
                                                  .q_tail = ENG_NONE,
                                                  .q_behind = ENG_NONE,
                                                  .key = ENG_POS_INF,
                                                  .lru_prev = ENG_NONE,
                                                  .lru_next = ENG_NONE,
                                                  .region = ri,
                                                  .flags = ENG_CHUNK_LIVE};
    }
    r->live_chunks += n;
    memmove(&m->idx[pos + 1], &m->idx[pos], (m->n - pos) * sizeof(*m->idx));
    m->idx[pos] = ri;
    m->n++;
    *region_p = ri;
    return GMUX_OK;
}

gmux_status_t eng_regions_unmap(eng_regions_t *r, uint32_t task, uint64_t id, uint32_t *region_p)
{
    if (task >= r->ntasks)
        return GMUX_ERR_INVALID;
    eng_task_map_t *m = &r->maps[task];
    for (uint32_t i = 0; i < m->n; i++) {
        eng_region_t *reg = &r->regions[m->idx[i]];
        if (reg->id != id)
            continue;
        *region_p = m->idx[i];
        reg->mapped = false;
        memmove(&m->idx[i], &m->idx[i + 1], (m->n - i - 1) * sizeof(*m->idx));
        m->n--;
        return GMUX_OK;
    }
    return GMUX_ERR_NOT_FOUND;
}

void eng_regions_release(eng_regions_t *r, uint32_t region)
{
    eng_region_t *reg = &r->regions[region];
    for (uint32_t i = 0; i < reg->nchunks; i++)
        r->view.chunks[reg->first_chunk + i].flags = 0;
    r->live_chunks -= reg->nchunks;
    /* Growth failures here only lose reuse of the ids, never correctness. */
    (void)give_ids(r, reg->first_chunk, reg->nchunks);
    if (grow((void **)&r->free_regions, &r->free_regions_cap, r->nfree_regions + 1,
             sizeof(*r->free_regions)) == GMUX_OK)
        r->free_regions[r->nfree_regions++] = region;
    reg->nchunks = 0;
}

uint32_t eng_regions_find(const eng_regions_t *r, uint32_t task, uint64_t addr)
{
    if (task >= r->ntasks)
        return ENG_NONE;
    const eng_task_map_t *m = &r->maps[task];
    uint32_t pos = upper(r, m, addr);
    if (pos == 0)
        return ENG_NONE;
    const eng_region_t *reg = &r->regions[m->idx[pos - 1]];
    return addr - reg->base < reg->size ? m->idx[pos - 1] : ENG_NONE;
}

uint32_t eng_regions_find_near(const eng_regions_t *r, uint32_t task, uint64_t addr, uint32_t hint)
{
    /* Mapped regions of a task never overlap: the hint's, if it holds addr, is
     * the one the search would find. */
    if (hint < r->nregions) {
        const eng_region_t *reg = &r->regions[hint];
        if (reg->mapped && reg->task == task && addr - reg->base < reg->size)
            return hint;
    }
    return eng_regions_find(r, task, addr);
}

const eng_region_t *eng_regions_get(const eng_regions_t *r, uint32_t region)
{
    return &r->regions[region];
}

bool eng_regions_chunk_dead(const eng_regions_t *r, uint32_t chunk)
{
    const eng_chunk_t *c = &r->view.chunks[chunk];
    return c->next_use == ENG_POS_INF && !r->regions[c->region].mapped;
}

void eng_regions_set_alloc_pos(eng_regions_t *r, uint32_t region, uint64_t pos)
{
    r->regions[region].alloc_pos = pos;
}

bool eng_regions_ids_fit(const eng_regions_t *r, uint64_t n, uint64_t max)
{
    for (uint32_t i = 0; i < r->nfree_ext; i++) {
        if (r->free_ext[i].len >= n)
            return true; /* take_ids' first fit */
    }
    return (uint64_t)r->chunk_limit + n <= max;
}

uint32_t eng_regions_chunk_limit(const eng_regions_t *r)
{
    return r->chunk_limit;
}

uint64_t eng_regions_live_chunks(const eng_regions_t *r)
{
    return r->live_chunks;
}

uint64_t eng_regions_chunk_addr(const eng_regions_t *r, uint32_t chunk)
{
    const eng_region_t *reg = &r->regions[r->view.chunks[chunk].region];
    return reg->base + (uint64_t)(chunk - reg->first_chunk) * r->chunk_size;
}
