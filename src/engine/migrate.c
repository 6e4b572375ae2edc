/* Migration plans: batching fills and evictions into backend transfers. */
#include "engine/migrate.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "engine/runsort.h"

typedef struct eng_mig_item {
    uint32_t chunk;
    uint32_t victim;
    eng_ticket_t victim_last;
    bool victim_dirty;
    uint64_t fill_bytes; /* of chunk: the chunk size unless it is on the device in part */
    uint64_t wb_bytes;   /* of victim, likewise */
} eng_mig_item_t;

/* A growable array of fixed-size values. */
typedef struct eng_mig_vec {
    void *a;
    uint32_t n, cap;
} eng_mig_vec_t;

struct eng_migrate {
    eng_regions_t *regs;
    eng_backend_t be;
    uint32_t batch;
    eng_mig_item_t *items;
    uint32_t n;
    uint64_t block;          /* block size of eng_chunk_t.blocks */
    eng_move_t *ids;         /* scratch: chunks to merge into runs */
    eng_move_t *ids_tmp;     /* scratch of their sort */
    eng_ticket_t *wbt;       /* scratch: write-back ticket of ids[i] */
    bool slot_order;         /* fills take the round's slots in the order they free up */
    bool fault;              /* what is issued serves a demand fault (eng_migrate_set_fault) */
    eng_mig_vec_t fills;     /* slot order: the round's fills, in plan order (eng_move_t) */
    eng_mig_vec_t slots;     /* slot order: freed at a compute ticket, then by write-backs */
    eng_mig_vec_t wb_slots;  /* slot order: the round's write-back tickets, in issue order */
    eng_mig_vec_t slots_tmp; /* slot order: scratch of the sort of slots */
    /* per chunk id, while ENG_CHUNK_CLEANED: the blocks its cleaning moved
     * (0: the whole chunk), for eng_migrate_clean_end's bytes (a partial
     * chunk may gain blocks before its end) */
    uint8_t *cleaned;
    uint32_t ncleaned; /* ids it covers */
    eng_migrate_stats_t stats;
};

static gmux_status_t vec_append(eng_mig_vec_t *v, size_t size, const void *x, uint32_t n)
{
    if ((size_t)v->n + n > v->cap) {
        gmux_status_t st = com_array_grow_u32(&v->a, &v->cap, (size_t)v->n + n, size, 256);
        if (st != GMUX_OK)
            return st;
    }
    memcpy((char *)v->a + (size_t)v->n * size, x, (size_t)n * size);
    v->n += n;
    return GMUX_OK;
}

static gmux_status_t vec_push(eng_mig_vec_t *v, size_t size, const void *x)
{
    return vec_append(v, size, x, 1);
}

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
    m->ids_tmp = calloc(batch_chunks, sizeof(*m->ids_tmp));
    m->wbt = calloc(batch_chunks, sizeof(*m->wbt));
    if (!m->items || !m->ids || !m->ids_tmp || !m->wbt) {
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
    free(m->ids_tmp);
    free(m->wbt);
    free(m->fills.a);
    free(m->slots.a);
    free(m->wb_slots.a);
    free(m->slots_tmp.a);
    free(m->cleaned);
    free(m);
}

static gmux_status_t bwait(eng_migrate_t *m, eng_dir_t dir, eng_ticket_t t)
{
    if (t == 0 || !m->be.ops->wait)
        return GMUX_OK;
    return m->be.ops->wait(m->be.ctx, dir, t);
}

/* One backend transfer of [addr, addr+len), of which bytes move; *moved_p:
 * what the backend moves (the whole range without its partial op). */
static gmux_status_t xfer(eng_migrate_t *m, eng_xfer_kind_t kind, uint32_t task, uint64_t addr,
                          uint64_t len, uint64_t bytes, eng_ticket_t *t_p, uint64_t *moved_p)
{
    const eng_backend_ops_t *ops = m->be.ops;
    *moved_p = len;
    if (m->fault && ops->partial && kind != ENG_XFER_CLEAN) {
        *moved_p = bytes;
        kind = kind == ENG_XFER_PREFETCH ? ENG_XFER_FAULT_IN : ENG_XFER_FAULT_OUT;
        return ops->partial(m->be.ctx, kind, task, addr, len, bytes, t_p);
    }
    if (bytes < len && ops->partial) {
        *moved_p = bytes;
        return ops->partial(m->be.ctx, kind, task, addr, len, bytes, t_p);
    }
    if (kind == ENG_XFER_PREFETCH)
        return ops->prefetch(m->be.ctx, task, addr, len, t_p);
    if (kind == ENG_XFER_EVICT)
        return ops->evict(m->be.ctx, task, addr, len, t_p);
    return ops->clean(m->be.ctx, task, addr, len, t_p);
}

/* Bytes of a chunk on the device. */
static uint64_t device_bytes(const eng_migrate_t *m, const eng_chunk_t *x)
{
    if (!(x->flags & ENG_CHUNK_PARTIAL) || m->block == 0)
        return eng_regions_chunk_size(m->regs);
    return (uint64_t)__builtin_popcount(x->blocks) * m->block;
}

/* Sorts ids and issues one transfer per run of adjacent chunks of one region.
 * tix (optional) gets each sorted id's ticket. waits (optional, H2D) gives
 * each sorted id's slot: a run is split where a slot freed by a write-back
 * (wb_from: the first index whose slot comes from a write-back) differs from
 * the previous one, and each transfer waits for the last slot it takes. */
static gmux_status_t issue_runs(eng_migrate_t *m, eng_dir_t dir, eng_move_t *ids, uint32_t n,
                                eng_ticket_t *tix, const eng_ticket_t *waits, uint32_t wb_from,
                                eng_ticket_t *last_p)
{
    eng_runsort_moves(ids, n, m->ids_tmp); /* n <= batch */
    uint64_t cs = eng_regions_chunk_size(m->regs);
    uint32_t i = 0;
    while (i < n) {
        uint32_t j = i + 1;
        uint32_t reg = eng_regions_chunk(m->regs, ids[i].chunk)->region;
        uint64_t bytes = ids[i].bytes;
        while (j < n && ids[j].chunk == ids[j - 1].chunk + 1 &&
               eng_regions_chunk(m->regs, ids[j].chunk)->region == reg &&
               !(waits && j >= wb_from && waits[j] != waits[j - 1]))
            bytes += ids[j++].bytes;
        const eng_region_t *r = eng_regions_get(m->regs, reg);
        uint64_t addr = eng_regions_chunk_addr(m->regs, ids[i].chunk);
        uint64_t len = (uint64_t)(j - i) * cs, moved = 0;
        eng_ticket_t t = 0;
        gmux_status_t st = waits ? bwait(m, dir, waits[j - 1]) : GMUX_OK;
        if (st != GMUX_OK)
            return st;
        st = xfer(m, dir == ENG_DIR_H2D ? ENG_XFER_PREFETCH : ENG_XFER_EVICT, r->task, addr, len,
                  bytes, &t, &moved);
        if (st != GMUX_OK)
            return st;
        if (dir == ENG_DIR_H2D) {
            m->stats.bytes_h2d += moved;
            m->stats.calls_h2d++;
            for (uint32_t k = i; k < j; k++)
                eng_regions_chunk(m->regs, ids[k].chunk)->fill_ticket = t;
        } else {
            m->stats.bytes_d2h += moved;
            m->stats.calls_d2h++;
        }
        for (uint32_t k = i; tix && k < j; k++)
            tix[k] = t;
        *last_p = t;
        i = j;
    }
    return GMUX_OK;
}

/* Drops a clean victim's device copy through the backend, if it can. */
static gmux_status_t drop(eng_migrate_t *m, uint32_t victim)
{
    m->stats.drops++;
    if (!m->be.ops->discard)
        return GMUX_OK;
    const eng_region_t *r = eng_regions_get(m->regs, eng_regions_chunk(m->regs, victim)->region);
    return m->be.ops->discard(m->be.ctx, r->task, eng_regions_chunk_addr(m->regs, victim),
                              eng_regions_chunk_size(m->regs));
}

/* Slot order, at a batch: its evictions are issued now, the slots they free
 * and its fills wait for the end of the round (eng_migrate_flush). */
static gmux_status_t evict_batch(eng_migrate_t *m)
{
    eng_ticket_t last_use = 0, wb = 0;
    uint32_t nwb = 0;
    gmux_status_t st = GMUX_OK;
    for (uint32_t i = 0; i < m->n && st == GMUX_OK; i++) {
        const eng_mig_item_t *it = &m->items[i];
        eng_move_t fx = {it->fill_bytes, it->chunk};
        if (it->chunk != ENG_NONE)
            st = vec_push(&m->fills, sizeof(fx), &fx);
        if (st != GMUX_OK)
            break;
        if (it->victim != ENG_NONE && it->victim_dirty) {
            m->ids[nwb++] = (eng_move_t){it->wb_bytes, it->victim};
            if (it->victim_last > last_use)
                last_use = it->victim_last;
            continue;
        }
        /* a free slot or a dropped victim: free once its last use has run */
        st = vec_push(&m->slots, sizeof(eng_ticket_t), &it->victim_last);
        if (st == GMUX_OK && it->victim != ENG_NONE)
            st = drop(m, it->victim);
    }
    if (st == GMUX_OK && nwb > 0) {
        st = bwait(m, ENG_DIR_D2H, last_use);
        if (st == GMUX_OK)
            st = issue_runs(m, ENG_DIR_D2H, m->ids, nwb, m->wbt, NULL, 0, &wb);
        m->stats.writebacks += nwb;
        for (uint32_t i = 0; i < nwb && st == GMUX_OK; i++)
            st = vec_push(&m->wb_slots, sizeof(eng_ticket_t), &m->wbt[i]);
    }
    m->n = 0;
    return st;
}

/*
 * Slot order, at the end of a round: every slot the round frees is free at a
 * known ticket (a free slot or a dropped victim: the compute ticket of its
 * last use, all already handed out; a written-back victim: its write-back,
 * in issue order). The round's fills go in plan order, in batches, and the
 * i-th fill takes the i-th slot to free up: fills into dropped victims' slots
 * do not queue behind write-backs, and no more chunks than slots are ever on
 * the device.
 */
static gmux_status_t fill_round(eng_migrate_t *m)
{
    uint32_t wb_from = m->slots.n;
    /* nearly in order as they come (runs of a batch's equal tickets) */
    gmux_status_t st =
        com_array_grow_u32(&m->slots_tmp.a, &m->slots_tmp.cap, wb_from, sizeof(eng_ticket_t), 256);
    if (st == GMUX_OK)
        eng_runsort_tickets(m->slots.a, wb_from, m->slots_tmp.a);
    if (st == GMUX_OK && m->wb_slots.n > 0)
        st = vec_append(&m->slots, sizeof(eng_ticket_t), m->wb_slots.a, m->wb_slots.n);
    const eng_ticket_t *sl = m->slots.a;
    const eng_move_t *fills = m->fills.a;
    for (uint32_t k = 0; k < m->fills.n && st == GMUX_OK; k += m->batch) {
        uint32_t nf = m->fills.n - k < m->batch ? m->fills.n - k : m->batch;
        for (uint32_t i = 0; i < nf; i++)
            m->ids[i] = fills[k + i];
        eng_ticket_t last = 0;
        if (k + nf <= m->slots.n) /* always: every fill came with a slot */
            st = issue_runs(m, ENG_DIR_H2D, m->ids, nf, NULL, sl + k, wb_from > k ? wb_from - k : 0,
                            &last);
        else
            st = issue_runs(m, ENG_DIR_H2D, m->ids, nf, NULL, NULL, 0, &last);
        m->stats.fills += nf;
    }
    m->fills.n = m->slots.n = m->wb_slots.n = 0;
    return st;
}

gmux_status_t eng_migrate_flush(eng_migrate_t *m)
{
    if (m->slot_order) {
        gmux_status_t st = m->n > 0 ? evict_batch(m) : GMUX_OK;
        return st == GMUX_OK ? fill_round(m) : st;
    }
    if (m->n == 0)
        return GMUX_OK;
    /* Write-backs: after the last launch that used any of them. */
    eng_ticket_t last_use = 0, clean_last = 0, wb = 0;
    uint32_t nwb = 0;
    gmux_status_t st = GMUX_OK;
    for (uint32_t i = 0; i < m->n && st == GMUX_OK; i++) {
        const eng_mig_item_t *it = &m->items[i];
        if (it->victim != ENG_NONE && it->victim_dirty) {
            m->ids[nwb++] = (eng_move_t){it->wb_bytes, it->victim};
            if (it->victim_last > last_use)
                last_use = it->victim_last;
            continue;
        }
        /* a free slot (a region's release) or a clean victim: after its last use */
        if (it->victim_last > clean_last)
            clean_last = it->victim_last;
        if (it->victim != ENG_NONE)
            st = drop(m, it->victim);
    }
    if (st == GMUX_OK && nwb > 0) {
        st = bwait(m, ENG_DIR_D2H, last_use);
        if (st == GMUX_OK)
            st = issue_runs(m, ENG_DIR_D2H, m->ids, nwb, NULL, NULL, 0, &wb);
        m->stats.writebacks += nwb;
    }
    /* Fills: after this batch's slots are all free. */
    if (st == GMUX_OK)
        st = bwait(m, ENG_DIR_H2D, wb);
    if (st == GMUX_OK)
        st = bwait(m, ENG_DIR_H2D, clean_last);
    uint32_t nf = 0;
    for (uint32_t i = 0; i < m->n; i++)
        if (m->items[i].chunk != ENG_NONE) /* ENG_NONE: an eviction only */
            m->ids[nf++] = (eng_move_t){m->items[i].fill_bytes, m->items[i].chunk};
    eng_ticket_t last = 0;
    if (st == GMUX_OK && nf > 0)
        st = issue_runs(m, ENG_DIR_H2D, m->ids, nf, NULL, NULL, 0, &last);
    m->stats.fills += nf;
    m->n = 0;
    return st;
}

gmux_status_t eng_migrate_add(eng_migrate_t *m, uint32_t chunk, uint32_t victim, bool victim_dirty,
                              eng_ticket_t victim_last)
{
    uint64_t cs = eng_regions_chunk_size(m->regs);
    return eng_migrate_add_bytes(m, chunk, cs, victim, victim_dirty, cs, victim_last);
}

gmux_status_t eng_migrate_add_bytes(eng_migrate_t *m, uint32_t chunk, uint64_t fill_bytes,
                                    uint32_t victim, bool victim_dirty, uint64_t wb_bytes,
                                    eng_ticket_t victim_last)
{
    m->items[m->n++] =
        (eng_mig_item_t){chunk, victim, victim_last, victim_dirty, fill_bytes, wb_bytes};
    if (m->n < m->batch)
        return GMUX_OK;
    return m->slot_order ? evict_batch(m) : eng_migrate_flush(m);
}

gmux_status_t eng_migrate_clean_idle(eng_migrate_t *m, eng_placement_t *place, uint64_t exec_next,
                                     uint32_t max)
{
    const eng_backend_ops_t *ops = m->be.ops;
    if (!ops->clean || !ops->idle || max == 0 || !ops->idle(m->be.ctx, ENG_DIR_D2H))
        return GMUX_OK;
    uint64_t now = ops->now(m->be.ctx);
    uint64_t cs = eng_regions_chunk_size(m->regs);
    uint32_t done = 0;
    /* Nothing a skipped chunk is checked by changes while the loop runs, nor
     * does skipping one change the backend: idle needs asking again only
     * after a clean. Most of the dirty heap is chunks a planned launch will
     * write that are not written (or not filled) yet: the heap's own pass
     * steps over them. */
    for (uint32_t i = 0; done < max;) {
        i = eng_place_dirty_find(place, i, ENG_CHUNK_DIRTY | ENG_CHUNK_PRESENT);
        if (i == ENG_NONE)
            break;
        uint32_t c = eng_place_dirty_at(place, i);
        eng_chunk_t *x = eng_regions_chunk(m->regs, c);
        /* a chunk its next planned use writes would be dirty again before a
         * drop could pay for the copy, unless evicted before that use: the
         * KV caches' growing ends, a stencil's array once read; a chunk
         * whose free is planned with no use left is dropped by the free
         * (once the shadow pass reaches the free, eng_place_expire takes it
         * out of the dirty heap; until then it is found here) */
        if (x->shadow_last >= exec_next || x->last_ticket > now || (x->flags & ENG_CHUNK_NEXTW) ||
            eng_regions_chunk_dead(m->regs, c)) {
            i++;
            continue;
        }
        const eng_region_t *r = eng_regions_get(m->regs, x->region);
        eng_ticket_t t = 0;
        uint64_t moved = 0;
        gmux_status_t st = GMUX_OK;
        if (c >= m->ncleaned)
            st = com_array_grow_u32((void **)&m->cleaned, &m->ncleaned, (size_t)c + 1,
                                    sizeof(*m->cleaned), 1024);
        if (st == GMUX_OK)
            st = bwait(m, ENG_DIR_D2H, x->last_ticket);
        if (st == GMUX_OK)
            st = xfer(m, ENG_XFER_CLEAN, r->task, eng_regions_chunk_addr(m->regs, c), cs,
                      device_bytes(m, x), &t, &moved);
        if (st != GMUX_OK)
            return st;
        m->stats.cleans++;
        m->stats.bytes_d2h += moved;
        m->stats.bytes_clean += moved;
        m->stats.calls_d2h++;
        x->flags &= ~(uint32_t)(ENG_CHUNK_DIRTY | ENG_CHUNK_WPLAN);
        x->flags |= ENG_CHUNK_CLEANED;
        m->cleaned[c] = moved < cs && m->block ? (uint8_t)(moved / m->block) : 0;
        eng_place_key_changed(place, c); /* now among the clean chunks */
        done++;
        if (!ops->idle(m->be.ctx, ENG_DIR_D2H))
            break;
    }
    return GMUX_OK;
}

void eng_migrate_clean_end(eng_migrate_t *m, uint32_t chunk, eng_clean_end_t how)
{
    eng_chunk_t *x = eng_regions_chunk(m->regs, chunk);
    if (!(x->flags & ENG_CHUNK_CLEANED))
        return;
    x->flags &= ~(uint32_t)ENG_CHUNK_CLEANED;
    uint64_t *to[3] = {&m->stats.clean_rewritten, &m->stats.clean_freed, &m->stats.clean_dropped};
    uint8_t nb = m->cleaned[chunk];
    *to[how] += nb ? nb * m->block : eng_regions_chunk_size(m->regs);
}

void eng_migrate_set_block(eng_migrate_t *m, uint64_t block)
{
    m->block = block;
}

void eng_migrate_set_fault(eng_migrate_t *m, bool on)
{
    m->fault = on;
}

void eng_migrate_set_slot_order(eng_migrate_t *m, bool on)
{
    m->slot_order = on;
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
