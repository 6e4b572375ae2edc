/* The engine: prefetching over the timeline with OPT/LRU eviction. */
#include "engine/engine.h"

#include <stdlib.h>

struct eng_engine {
    eng_engine_params_t p;
    eng_regions_t *regs;
    eng_sched_t *sched;
    eng_timeline_t *tl;
    eng_placement_t *place;
    eng_migrate_t *mig;
    uint64_t pf_pos; /* prefetch cursor: entry position ... */
    uint32_t pf_ref; /* ... and reference within it */
    uint64_t last_slice;
    uint64_t faults;
    bool pending; /* a step was handed out and not completed */
};

static void on_next_use(void *ctx, uint32_t chunk)
{
    eng_engine_t *e = ctx;
    eng_place_key_changed(e->place, chunk);
}

gmux_status_t eng_engine_create(const eng_engine_params_t *p, const eng_backend_t *be,
                                eng_engine_t **e_p)
{
    if (!p || !be || p->chunk_size == 0 || p->capacity_bytes < p->chunk_size ||
        p->batch_chunks == 0 || (p->policy != ENG_PLACE_OPT && p->policy != ENG_PLACE_LRU))
        return GMUX_ERR_INVALID;
    eng_engine_t *e = calloc(1, sizeof(*e));
    if (!e)
        return GMUX_ERR_NOMEM;
    e->p = *p;
    gmux_status_t st = eng_regions_create(p->ntasks, p->chunk_size, &e->regs);
    if (st == GMUX_OK)
        st = eng_sched_create(p->ntasks, p->quantum_ns, &e->sched);
    if (st == GMUX_OK)
        st = eng_place_create(e->regs, p->policy, p->capacity_bytes / p->chunk_size, &e->place);
    if (st == GMUX_OK)
        st = eng_migrate_create(e->regs, be, p->batch_chunks, &e->mig);
    if (st == GMUX_OK) {
        eng_timeline_params_t tp = {.lookahead = p->lookahead,
                                    .feed = p->feed,
                                    .predict = p->predict,
                                    .predict_ctx = p->predict_ctx,
                                    .next_use_changed = on_next_use,
                                    .cb_ctx = e};
        st = eng_timeline_create(&tp, e->regs, e->sched, &e->tl);
    }
    if (st != GMUX_OK) {
        eng_engine_destroy(e);
        return st;
    }
    *e_p = e;
    return GMUX_OK;
}

void eng_engine_destroy(eng_engine_t *e)
{
    if (!e)
        return;
    eng_timeline_destroy(e->tl);
    eng_migrate_destroy(e->mig);
    eng_place_destroy(e->place);
    eng_sched_destroy(e->sched);
    eng_regions_destroy(e->regs);
    free(e);
}

eng_sched_t *eng_engine_sched(eng_engine_t *e)
{
    return e->sched;
}

eng_regions_t *eng_engine_regions(eng_engine_t *e)
{
    return e->regs;
}

const eng_placement_t *eng_engine_placement(const eng_engine_t *e)
{
    return e->place;
}

/* Fills chunk for position need_pos, evicting if the capacity is reached;
 * GMUX_ERR_BUSY when no resident chunk may make room. */
static gmux_status_t fill(eng_engine_t *e, uint32_t chunk, uint64_t need_pos, uint64_t pin_pos)
{
    uint32_t victim = ENG_NONE;
    bool dirty = false;
    eng_ticket_t last = 0;
    if (eng_place_resident(e->place) >= eng_place_capacity(e->place)) {
        /* A chunk the launch about to run touches is never the victim. With a
         * learned prediction such a chunk may be one the prediction missed, so
         * its planned next use is later: set it aside and look again. */
        uint32_t held[256];
        unsigned nheld = 0;
        for (;;) {
            victim = eng_place_victim(e->place, need_pos);
            if (victim == ENG_NONE || pin_pos == ENG_POS_INF ||
                eng_regions_chunk(e->regs, victim)->truth_pos != pin_pos)
                break;
            if (nheld == sizeof(held) / sizeof(held[0])) {
                victim = ENG_NONE;
                break;
            }
            eng_place_remove(e->place, victim);
            held[nheld++] = victim;
        }
        for (unsigned i = 0; i < nheld; i++)
            (void)eng_place_insert(e->place, held[i]);
        if (victim == ENG_NONE)
            return GMUX_ERR_BUSY;
        eng_chunk_t *v = eng_regions_chunk(e->regs, victim);
        dirty = (v->flags & ENG_CHUNK_DIRTY) != 0;
        last = v->last_ticket;
        v->flags &= ~(uint32_t)ENG_CHUNK_DIRTY;
        eng_place_remove(e->place, victim);
    }
    gmux_status_t st = eng_place_insert(e->place, chunk);
    if (st != GMUX_OK)
        return st;
    return eng_migrate_add(e->mig, chunk, victim, dirty, last);
}

/* Moves the prefetch cursor forward through slices up to max_slice. */
static gmux_status_t prefetch(eng_engine_t *e, uint64_t front_pos, uint64_t max_slice)
{
    if (e->pf_pos < front_pos) {
        e->pf_pos = front_pos;
        e->pf_ref = 0;
    }
    for (;;) {
        const eng_entry_t *ent = eng_timeline_peek(e->tl, e->pf_pos - front_pos);
        if (!ent || ent->slice > max_slice)
            break;
        if (ent->kind == ENG_ITEM_LAUNCH) {
            const uint32_t *refs = eng_timeline_refs(e->tl, ent);
            for (; e->pf_ref < ent->nrefs; e->pf_ref++) {
                uint32_t c = ENG_REF_CHUNK(refs[e->pf_ref]);
                if (eng_regions_chunk(e->regs, c)->flags & ENG_CHUNK_RESIDENT)
                    continue;
                gmux_status_t st = fill(e, c, ent->pos, ENG_POS_INF);
                if (st == GMUX_ERR_BUSY)
                    return eng_migrate_flush(e->mig); /* blocked: resume later */
                if (st != GMUX_OK)
                    return st;
            }
        }
        e->pf_pos++;
        e->pf_ref = 0;
    }
    return eng_migrate_flush(e->mig);
}

static void drop_region(eng_engine_t *e, uint32_t region)
{
    const eng_region_t *r = eng_regions_get(e->regs, region);
    for (uint32_t i = 0; i < r->nchunks; i++) {
        uint32_t c = r->first_chunk + i;
        eng_chunk_t *x = eng_regions_chunk(e->regs, c);
        x->flags &= ~(uint32_t)ENG_CHUNK_DIRTY;
        eng_place_remove(e->place, c);
    }
    eng_regions_release(e->regs, region);
}

gmux_status_t eng_engine_next(eng_engine_t *e, eng_step_t *step)
{
    if (e->pending)
        return GMUX_ERR_STATE;
    const eng_entry_t *front;
    for (;;) {
        gmux_status_t st = eng_timeline_fill(e->tl);
        if (st != GMUX_OK)
            return st;
        front = eng_timeline_peek(e->tl, 0);
        if (!front)
            return GMUX_ERR_NOT_FOUND;
        if (front->kind == ENG_ITEM_LAUNCH)
            break;
        drop_region(e, front->region);
        eng_timeline_pop(e->tl);
    }
    uint64_t pos = front->pos;
    gmux_status_t st = prefetch(e, pos, front->slice + e->p.prefetch_slices);
    if (st != GMUX_OK)
        return st;
    /* The prefetcher covers the predicted set unless it alone exceeds the capacity. */
    const uint32_t *refs = eng_timeline_refs(e->tl, front);
    for (uint32_t i = 0; i < front->nrefs; i++) {
        uint32_t c = ENG_REF_CHUNK(refs[i]);
        if (eng_regions_chunk(e->regs, c)->flags & ENG_CHUNK_RESIDENT)
            continue;
        st = fill(e, c, pos, pos);
        if (st != GMUX_OK)
            return st == GMUX_ERR_BUSY ? GMUX_ERR_CAPACITY : st;
    }
    /* What the prediction missed faults in. */
    const uint32_t *truth = eng_timeline_truth(e->tl, front);
    uint32_t faults = 0;
    for (uint32_t i = 0; i < front->ntrefs; i++) {
        uint32_t c = ENG_REF_CHUNK(truth[i]);
        if (eng_regions_chunk(e->regs, c)->flags & ENG_CHUNK_RESIDENT)
            continue;
        st = fill(e, c, pos, pos);
        if (st != GMUX_OK)
            return st == GMUX_ERR_BUSY ? GMUX_ERR_CAPACITY : st;
        faults++;
    }
    st = eng_migrate_flush(e->mig);
    if (st != GMUX_OK)
        return st;
    eng_ticket_t wait = 0;
    for (uint32_t i = 0; i < front->ntrefs; i++) {
        eng_ticket_t t = eng_regions_chunk(e->regs, ENG_REF_CHUNK(truth[i]))->fill_ticket;
        if (t > wait)
            wait = t;
    }
    e->faults += faults;
    *step = (eng_step_t){.pos = pos,
                         .slice = front->slice,
                         .time_ns = front->time_ns,
                         .task = front->task,
                         .kernel = front->kernel,
                         .switched = front->slice != e->last_slice,
                         .wait = wait,
                         .faults = faults,
                         .nrefs = front->ntrefs,
                         .refs = truth};
    e->last_slice = front->slice;
    e->pending = true;
    return GMUX_OK;
}

gmux_status_t eng_engine_complete(eng_engine_t *e, eng_ticket_t done)
{
    if (!e->pending)
        return GMUX_ERR_STATE;
    const eng_entry_t *front = eng_timeline_peek(e->tl, 0);
    const uint32_t *truth = eng_timeline_truth(e->tl, front);
    for (uint32_t i = 0; i < front->ntrefs; i++) {
        eng_chunk_t *c = eng_regions_chunk(e->regs, ENG_REF_CHUNK(truth[i]));
        c->last_ticket = done;
        if (truth[i] & ENG_REF_WRITE)
            c->flags |= ENG_CHUNK_DIRTY;
        eng_place_touch(e->place, ENG_REF_CHUNK(truth[i]));
    }
    const uint32_t *refs = eng_timeline_refs(e->tl, front);
    for (uint32_t i = 0; i < front->nrefs; i++)
        eng_regions_chunk(e->regs, ENG_REF_CHUNK(refs[i]))->last_ticket = done;
    eng_timeline_pop(e->tl);
    e->pending = false;
    return GMUX_OK;
}

const eng_migrate_stats_t *eng_engine_stats(const eng_engine_t *e)
{
    return eng_migrate_stats(e->mig);
}

uint64_t eng_engine_faults(const eng_engine_t *e)
{
    return e->faults;
}
