/* Migration plans: batching fills and evictions into backend transfers. */
#include "engine/migrate.h"

#include <stdbool.h>
#include <stdlib.h>

typedef struct eng_mig_item {
    uint32_t chunk;
    uint32_t victim;
    eng_ticket_t victim_last;
    bool victim_dirty;
} eng_mig_item_t;

struct eng_migrate {
    eng_regions_t *regs;
    eng_backend_t be;
    uint32_t batch;
    eng_mig_item_t *items;
    uint32_t n;
    uint32_t *ids; /* scratch: chunk ids to merge into runs */
    eng_migrate_stats_t stats;
};

gmux_status_t eng_migrate_create(eng_regions_t *regs, const eng_backend_t *be,
                                 uint32_t batch_chunks, eng_migrate_t **m_p)
{
    if (!regs || !be || !be->ops || batch_chunks == 0)
        return GMUX_ERR_INVALID;
    eng_migrate_t *m = calloc(1, sizeof(*m));
    if (!m)
        return GMUX_ERR_NOMEM;
    m->items = calloc(batch_chunks, sizeof(*m->items));
    m->ids = calloc(batch_chunks, sizeof(*m->ids));
    if (!m->items || !m->ids) {
        eng_migrate_destroy(m);
        return GMUX_ERR_NOMEM;
    }
    m->regs = regs;
    m->be = *be;
    m->batch = batch_chunks;
    *m_p = m;
    return GMUX_OK;
}

void eng_migrate_destroy(eng_migrate_t *m)
{
    if (!m)
        return;
    free(m->items);
    free(m->ids);
    free(m);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Sorts ids and issues one transfer per run of adjacent chunks of one region;
 * tickets_p (optional) gets each id's ticket, in sorted order. */
static gmux_status_t issue_runs(eng_migrate_t *m, eng_dir_t dir, uint32_t *ids, uint32_t n,
                                eng_ticket_t *last_p)
{
    qsort(ids, n, sizeof(*ids), cmp_u32);
    uint64_t cs = eng_regions_chunk_size(m->regs);
    uint32_t i = 0;
    while (i < n) {
        uint32_t j = i + 1;
        uint32_t reg = eng_regions_chunk(m->regs, ids[i])->region;
        while (j < n && ids[j] == ids[j - 1] + 1 &&
               eng_regions_chunk(m->regs, ids[j])->region == reg)
            j++;
        const eng_region_t *r = eng_regions_get(m->regs, reg);
        uint64_t addr = eng_regions_chunk_addr(m->regs, ids[i]);
        uint64_t len = (uint64_t)(j - i) * cs;
        eng_ticket_t t = 0;
        gmux_status_t st = dir == ENG_DIR_H2D
                               ? m->be.ops->prefetch(m->be.ctx, r->task, addr, len, &t)
                               : m->be.ops->evict(m->be.ctx, r->task, addr, len, &t);
        if (st != GMUX_OK)
            return st;
        if (dir == ENG_DIR_H2D) {
            m->stats.bytes_h2d += len;
            m->stats.calls_h2d++;
            for (uint32_t k = i; k < j; k++)
                eng_regions_chunk(m->regs, ids[k])->fill_ticket = t;
        } else {
            m->stats.bytes_d2h += len;
            m->stats.calls_d2h++;
        }
        *last_p = t;
        i = j;
    }
    return GMUX_OK;
}

static gmux_status_t bwait(eng_migrate_t *m, eng_dir_t dir, eng_ticket_t t)
{
    if (t == 0 || !m->be.ops->wait)
        return GMUX_OK;
    return m->be.ops->wait(m->be.ctx, dir, t);
}

gmux_status_t eng_migrate_flush(eng_migrate_t *m)
{
    if (m->n == 0)
        return GMUX_OK;
    /* Write-backs: after the last launch that used any of them. */
    eng_ticket_t last_use = 0, clean_last = 0, wb = 0;
    uint32_t nwb = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        const eng_mig_item_t *it = &m->items[i];
        if (it->victim == ENG_NONE) {
            /* a slot freed by a region's release: after its last use */
            if (it->victim_last > clean_last)
                clean_last = it->victim_last;
            continue;
        }
        if (it->victim_dirty) {
            m->ids[nwb++] = it->victim;
            if (it->victim_last > last_use)
                last_use = it->victim_last;
        } else {
            m->stats.drops++;
            if (it->victim_last > clean_last)
                clean_last = it->victim_last;
            if (m->be.ops->discard) {
                const eng_region_t *r =
                    eng_regions_get(m->regs, eng_regions_chunk(m->regs, it->victim)->region);
                gmux_status_t dst = m->be.ops->discard(m->be.ctx, r->task,
                                                       eng_regions_chunk_addr(m->regs, it->victim),
                                                       eng_regions_chunk_size(m->regs));
                if (dst != GMUX_OK)
                    return dst;
            }
        }
    }
    gmux_status_t st = GMUX_OK;
    if (nwb > 0) {
        st = bwait(m, ENG_DIR_D2H, last_use);
        if (st == GMUX_OK)
            st = issue_runs(m, ENG_DIR_D2H, m->ids, nwb, &wb);
        m->stats.writebacks += nwb;
    }
    /* Fills: after this batch's slots are free. */
    if (st == GMUX_OK)
        st = bwait(m, ENG_DIR_H2D, wb);
    if (st == GMUX_OK)
        st = bwait(m, ENG_DIR_H2D, clean_last);
    for (uint32_t i = 0; i < m->n; i++)
        m->ids[i] = m->items[i].chunk;
    eng_ticket_t last = 0;
    if (st == GMUX_OK)
        st = issue_runs(m, ENG_DIR_H2D, m->ids, m->n, &last);
    m->stats.fills += m->n;
    m->n = 0;
    return st;
}

gmux_status_t eng_migrate_add(eng_migrate_t *m, uint32_t chunk, uint32_t victim, bool victim_dirty,
                              eng_ticket_t victim_last)
{
    m->items[m->n++] = (eng_mig_item_t){chunk, victim, victim_last, victim_dirty};
    return m->n == m->batch ? eng_migrate_flush(m) : GMUX_OK;
}

void eng_migrate_release(eng_migrate_t *m, uint32_t region)
{
    if (!m->be.ops->release)
        return;
    const eng_region_t *r = eng_regions_get(m->regs, region);
    m->be.ops->release(m->be.ctx, r->task, r->base,
                       (uint64_t)r->nchunks * eng_regions_chunk_size(m->regs));
}

const eng_migrate_stats_t *eng_migrate_stats(const eng_migrate_t *m)
{
    return &m->stats;
}
