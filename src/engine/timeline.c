/* Timeline: planning window over all tasks and per-chunk future-use queues. */
#include "engine/timeline.h"

#include <stdlib.h>
#include <string.h>

#include "common/array.h"

typedef struct eng_use_node {
    uint64_t pos;
    uint32_t next;
    uint32_t write; /* the launch at pos writes the chunk (in the padding) */
} eng_use_node_t;

struct eng_timeline {
    eng_timeline_params_t p;
    eng_regions_t *regs;
    eng_sched_t *sched;

    eng_entry_t *ents; /* live entries are ents[ehead, etail) */
    uint64_t ehead, etail, ecap;
    uint64_t nlaunch; /* launches in the window */

    uint32_t *refs;                     /* refs[i] holds absolute reference index rbase + i */
    uint32_t *blocks;                   /* beside refs when p.block_size: blocks touched */
    uint64_t rbase, rhead, rtail, rcap; /* rhead/rtail absolute */

    eng_use_node_t *nodes;
    uint32_t nnodes, nodes_cap, free_node;

    uint64_t next_pos;
    uint64_t slice;
    uint32_t cur; /* task of the slice being planned */
    bool ended;   /* no task has work left */
    uint32_t max_ws;
    bool held; /* the predictor asked to plan `held_item` later */
    uint32_t held_task;
    eng_item_t held_item; /* valid: the feed is not called again until it is planned */
};

gmux_status_t eng_timeline_create(const eng_timeline_params_t *p, eng_regions_t *regs,
                                  eng_sched_t *sched, eng_timeline_t **tl_p)
{
    if (!p || !p->feed.next || p->lookahead == 0 || !regs || !sched)
        return GMUX_ERR_INVALID;
    uint64_t bs = p->block_size, cs = eng_regions_chunk_size(regs);
    if (bs && ((bs & (bs - 1)) != 0 || bs > cs || cs / bs > 32))
        return GMUX_ERR_INVALID;
    eng_timeline_t *tl = calloc(1, sizeof(*tl));
    if (!tl)
        return GMUX_ERR_NOMEM;
    tl->p = *p;
    tl->regs = regs;
    tl->sched = sched;
    tl->cur = ENG_SCHED_IDLE;
    tl->free_node = ENG_NONE;
    *tl_p = tl;
    return GMUX_OK;
}

void eng_timeline_destroy(eng_timeline_t *tl)
{
    if (!tl)
        return;
    free(tl->ents);
    free(tl->refs);
    free(tl->blocks);
    free(tl->nodes);
    free(tl);
}

static gmux_status_t ent_append(eng_timeline_t *tl, eng_entry_t **e_p)
{
    if (tl->etail == tl->ecap) {
        if (tl->ehead > tl->ecap / 2) {
            memmove(tl->ents, tl->ents + tl->ehead, (tl->etail - tl->ehead) * sizeof(*tl->ents));
            tl->etail -= tl->ehead;
            tl->ehead = 0;
        } else {
            size_t cap = tl->ecap;
            gmux_status_t st =
                com_array_grow((void **)&tl->ents, &cap, cap + 1, sizeof(*tl->ents), 256, SIZE_MAX);
            if (st != GMUX_OK)
                return st;
            tl->ecap = cap;
        }
    }
    *e_p = &tl->ents[tl->etail++];
    return GMUX_OK;
}

static gmux_status_t ref_append(eng_timeline_t *tl, uint32_t ref, uint32_t blocks)
{
    if (tl->rtail - tl->rbase == tl->rcap) {
        uint64_t dead = tl->rhead - tl->rbase;
        if (dead > tl->rcap / 2) {
            uint64_t live = tl->rtail - tl->rhead;
            memmove(tl->refs, tl->refs + dead, live * sizeof(*tl->refs));
            if (tl->blocks)
                memmove(tl->blocks, tl->blocks + dead, live * sizeof(*tl->blocks));
            tl->rbase = tl->rhead;
        } else {
            size_t cap = tl->rcap;
            gmux_status_t st = com_array_grow((void **)&tl->refs, &cap, cap + 1, sizeof(*tl->refs),
                                              1024, SIZE_MAX);
            if (st != GMUX_OK)
                return st;
            if (tl->p.block_size) {
                /* Same arguments, same element size: blocks gets refs' new capacity. */
                size_t bcap = tl->rcap;
                st = com_array_grow((void **)&tl->blocks, &bcap, bcap + 1, sizeof(*tl->blocks),
                                    1024, SIZE_MAX);
                if (st != GMUX_OK)
                    return st; /* refs grew alone: rcap still fits both */
            }
            tl->rcap = cap;
        }
    }
    if (tl->blocks)
        tl->blocks[tl->rtail - tl->rbase] = blocks;
    tl->refs[tl->rtail++ - tl->rbase] = ref;
    return GMUX_OK;
}

/* The blocks of a chunk that its bytes [a, b) (offsets in the chunk) cover. */
static uint32_t block_mask(const eng_timeline_t *tl, uint64_t a, uint64_t b)
{
    if (!tl->p.block_size)
        return 0;
    uint64_t lo = a / tl->p.block_size, hi = (b - 1) / tl->p.block_size;
    uint32_t upto = hi >= 31 ? UINT32_MAX : (1u << (hi + 1)) - 1;
    return upto & ~((1u << lo) - 1);
}

/* Keeps ENG_CHUNK_NEXTW that of the chunk's first queued use. */
static void nextw_sync(eng_timeline_t *tl, eng_chunk_t *c)
{
    if (c->q_head != ENG_NONE && tl->nodes[c->q_head].write)
        c->flags |= ENG_CHUNK_NEXTW;
    else
        c->flags &= ~(uint32_t)ENG_CHUNK_NEXTW;
}

static gmux_status_t use_push(eng_timeline_t *tl, uint32_t chunk, uint64_t pos, bool write)
{
    uint32_t n;
    if (tl->free_node != ENG_NONE) {
        n = tl->free_node;
        tl->free_node = tl->nodes[n].next;
    } else {
        if (tl->nnodes == tl->nodes_cap) {
            gmux_status_t st = com_array_grow_u32((void **)&tl->nodes, &tl->nodes_cap,
                                                  (size_t)tl->nnodes + 1, sizeof(*tl->nodes), 1024);
            if (st != GMUX_OK)
                return st;
        }
        n = tl->nnodes++;
    }
    tl->nodes[n] = (eng_use_node_t){pos, ENG_NONE, write};
    eng_chunk_t *c = eng_regions_chunk(tl->regs, chunk);
    if (tl->p.use_added)
        tl->p.use_added(tl->p.cb_ctx, chunk, pos);
    if (c->q_tail == ENG_NONE) {
        c->q_head = c->q_tail = n;
        c->next_use = pos;
        nextw_sync(tl, c);
        if (tl->p.next_use_changed)
            tl->p.next_use_changed(tl->p.cb_ctx, chunk);
    } else {
        tl->nodes[c->q_tail].next = n;
        c->q_tail = n;
    }
    return GMUX_OK;
}

static void use_pop(eng_timeline_t *tl, uint32_t chunk)
{
    eng_chunk_t *c = eng_regions_chunk(tl->regs, chunk);
    uint32_t n = c->q_head;
    if (n == ENG_NONE)
        return;
    c->q_head = tl->nodes[n].next;
    if (c->q_behind == n)
        c->q_behind = ENG_NONE; /* every use left lies after the shadow position */
    if (c->q_head == ENG_NONE) {
        c->q_tail = ENG_NONE;
        c->next_use = ENG_POS_INF;
    } else {
        c->next_use = tl->nodes[c->q_head].pos;
    }
    nextw_sync(tl, c);
    tl->nodes[n].next = tl->free_node;
    tl->free_node = n;
    if (tl->p.next_use_changed)
        tl->p.next_use_changed(tl->p.cb_ctx, chunk);
}

/* Appends the chunks of ranges (deduplicated within this position, write
 * flags and touched blocks merged) as references; *n_p counts them. */
static gmux_status_t map_ranges(eng_timeline_t *tl, uint32_t task, const eng_range_t *ranges,
                                uint32_t nranges, uint64_t pos, bool truth, uint32_t *n_p)
{
    uint64_t cs = eng_regions_chunk_size(tl->regs);
    uint64_t first_ref = tl->rtail;
    uint32_t n = 0, whole = block_mask(tl, 0, cs), hint = ENG_NONE;
    for (uint32_t i = 0; i < nranges; i++) {
        const eng_range_t *rg = &ranges[i];
        if (rg->len == 0)
            continue;
        uint32_t ri = eng_regions_find_near(tl->regs, task, rg->addr, hint);
        if (ri == ENG_NONE)
            continue; /* outside every allocation: not the engine's memory */
        hint = ri;
        const eng_region_t *reg = eng_regions_get(tl->regs, ri);
        uint64_t lo = rg->addr - reg->base;
        uint64_t hi = rg->len > reg->size - lo ? reg->size : lo + rg->len;
        uint32_t wr = (rg->mode & ENG_ACCESS_WRITE) ? ENG_REF_WRITE : 0;
        /* Only the first chunk starts inside and only the last ends inside:
         * the chunks between are touched whole. */
        uint64_t k0 = lo / cs, k1 = (hi - 1) / cs;
        uint32_t head = block_mask(tl, lo - k0 * cs, k0 == k1 ? hi - k0 * cs : cs);
        uint32_t tail = block_mask(tl, 0, hi - k1 * cs);
        for (uint64_t k = k0; k <= k1; k++) {
            uint32_t chunk = reg->first_chunk + (uint32_t)k;
            eng_chunk_t *c = eng_regions_chunk(tl->regs, chunk);
            uint64_t *stamp = truth ? &c->truth_pos : &c->plan_pos;
            uint32_t *idx = truth ? &c->truth_ref : &c->plan_ref;
            uint32_t bm = k == k0 ? head : k == k1 ? tail : whole;
            if (*stamp == pos) {
                uint64_t j = first_ref + *idx - tl->rbase;
                tl->refs[j] |= wr;
                if (wr && !truth) { /* its use was queued by the first range */
                    tl->nodes[c->q_tail].write = 1;
                    nextw_sync(tl, c);
                }
                if (tl->blocks)
                    tl->blocks[j] |= bm;
                continue;
            }
            *stamp = pos;
            *idx = (uint32_t)(tl->rtail - first_ref);
            gmux_status_t st = ref_append(tl, chunk | wr, bm);
            if (st == GMUX_OK && !truth)
                st = use_push(tl, chunk, pos, wr != 0);
            if (st != GMUX_OK)
                return st;
            n++;
        }
    }
    *n_p = n;
    return GMUX_OK;
}

static gmux_status_t plan_launch(eng_timeline_t *tl, uint32_t task, const eng_item_t *it)
{
    const eng_range_t *pr = it->ranges;
    uint32_t npr = it->nranges;
    if (tl->p.predict) {
        gmux_status_t st =
            tl->p.predict(tl->p.predict_ctx, task, &it->launch, it->ranges, it->nranges, &pr, &npr);
        if (st == GMUX_ERR_BUSY) {
            if (tl->nlaunch == 0)
                return GMUX_ERR_STATE; /* nothing left to wait for */
            tl->held = true;
            tl->held_task = task;
            tl->held_item = *it;
            return GMUX_OK;
        }
        if (st != GMUX_OK)
            return st;
    }
    tl->held = false;
    uint64_t pos = tl->next_pos;
    eng_entry_t e = {.pos = pos,
                     .slice = tl->slice,
                     .time_ns = it->time_ns,
                     .task = task,
                     .kernel = it->launch.kernel,
                     .region = ENG_NONE,
                     .kind = ENG_ITEM_LAUNCH};
    e.ref_off = tl->rtail;
    gmux_status_t st = map_ranges(tl, task, pr, npr, pos, false, &e.nrefs);
    if (st != GMUX_OK)
        return st;
    if (tl->p.predict) {
        e.tref_off = tl->rtail;
        st = map_ranges(tl, task, it->ranges, it->nranges, pos, true, &e.ntrefs);
        if (st != GMUX_OK)
            return st;
    } else {
        e.tref_off = e.ref_off;
        e.ntrefs = e.nrefs;
    }
    eng_entry_t *slot;
    st = ent_append(tl, &slot);
    if (st != GMUX_OK)
        return st;
    *slot = e;
    tl->next_pos++;
    tl->nlaunch++;
    if (e.ntrefs > tl->max_ws)
        tl->max_ws = e.ntrefs;
    if (e.nrefs > tl->max_ws)
        tl->max_ws = e.nrefs;
    eng_sched_charge(tl->sched, it->time_ns);
    return GMUX_OK;
}

/* Plans one item; *progress says whether anything happened. */
static gmux_status_t plan_step(eng_timeline_t *tl)
{
    if (tl->cur == ENG_SCHED_IDLE || eng_sched_should_yield(tl->sched)) {
        uint32_t t = eng_sched_pick(tl->sched);
        if (t == ENG_SCHED_IDLE) {
            tl->ended = true;
            return GMUX_OK;
        }
        if (t != tl->cur || tl->slice == 0)
            tl->slice++;
        tl->cur = t;
    }
    uint32_t task = tl->cur;
    eng_item_t it;
    memset(&it, 0, sizeof(it));
    gmux_status_t st = tl->p.feed.next(tl->p.feed.ctx, task, &it);
    if (st == GMUX_ERR_NOT_FOUND) {
        eng_sched_set_ready(tl->sched, task, false);
        tl->cur = ENG_SCHED_IDLE;
        return GMUX_OK;
    }
    if (st != GMUX_OK)
        return st;
    switch (it.kind) {
    case ENG_ITEM_ALLOC: {
        uint32_t ri;
        st = eng_regions_alloc(tl->regs, task, it.id, it.base, it.size, &ri);
        if (st == GMUX_OK)
            eng_regions_set_alloc_pos(tl->regs, ri, tl->next_pos);
        return st;
    }
    case ENG_ITEM_FREE: {
        uint32_t ri;
        st = eng_regions_unmap(tl->regs, task, it.id, &ri);
        if (st != GMUX_OK)
            return st;
        eng_entry_t *slot;
        st = ent_append(tl, &slot);
        if (st != GMUX_OK)
            return st;
        *slot = (eng_entry_t){.pos = tl->next_pos++,
                              .slice = tl->slice,
                              .ref_off = tl->rtail,
                              .tref_off = tl->rtail,
                              .task = task,
                              .region = ri,
                              .kind = ENG_ITEM_FREE};
        return GMUX_OK;
    }
    case ENG_ITEM_LAUNCH:
        return plan_launch(tl, task, &it);
    }
    return GMUX_ERR_INVALID;
}

gmux_status_t eng_timeline_fill(eng_timeline_t *tl)
{
    if (tl->held) { /* retried first; deferred again ends this fill */
        eng_item_t it = tl->held_item;
        gmux_status_t st = plan_launch(tl, tl->held_task, &it);
        if (st != GMUX_OK || tl->held)
            return st;
    }
    while (!tl->ended && tl->nlaunch < tl->p.lookahead) {
        gmux_status_t st = plan_step(tl);
        if (st != GMUX_OK || tl->held)
            return st;
    }
    return GMUX_OK;
}

uint64_t eng_timeline_count(const eng_timeline_t *tl)
{
    return tl->etail - tl->ehead;
}

const eng_entry_t *eng_timeline_peek(const eng_timeline_t *tl, uint64_t i)
{
    return i < tl->etail - tl->ehead ? &tl->ents[tl->ehead + i] : NULL;
}

const uint32_t *eng_timeline_refs(const eng_timeline_t *tl, const eng_entry_t *e)
{
    return tl->refs + (e->ref_off - tl->rbase);
}

const uint32_t *eng_timeline_truth(const eng_timeline_t *tl, const eng_entry_t *e)
{
    return tl->refs + (e->tref_off - tl->rbase);
}

const uint32_t *eng_timeline_blocks(const eng_timeline_t *tl, const eng_entry_t *e)
{
    return tl->blocks ? tl->blocks + (e->tref_off - tl->rbase) : NULL;
}

void eng_timeline_pop(eng_timeline_t *tl)
{
    if (tl->ehead == tl->etail)
        return;
    const eng_entry_t *e = &tl->ents[tl->ehead];
    const uint32_t *refs = eng_timeline_refs(tl, e);
    for (uint32_t i = 0; i < e->nrefs; i++)
        use_pop(tl, ENG_REF_CHUNK(refs[i]));
    if (e->kind == ENG_ITEM_LAUNCH)
        tl->nlaunch--;
    tl->ehead++;
    tl->rhead = tl->ehead < tl->etail ? tl->ents[tl->ehead].ref_off : tl->rtail;
}

uint64_t eng_timeline_next_after(eng_timeline_t *tl, uint32_t chunk, uint64_t q)
{
    eng_chunk_t *c = eng_regions_chunk(tl->regs, chunk);
    uint32_t n = c->q_behind == ENG_NONE ? c->q_head : tl->nodes[c->q_behind].next;
    while (n != ENG_NONE && tl->nodes[n].pos <= q) {
        c->q_behind = n;
        n = tl->nodes[n].next;
    }
    return n == ENG_NONE ? ENG_POS_INF : tl->nodes[n].pos;
}

bool eng_timeline_done(const eng_timeline_t *tl)
{
    return tl->ended && tl->ehead == tl->etail;
}

uint32_t eng_timeline_max_ws(const eng_timeline_t *tl)
{
    return tl->max_ws;
}
