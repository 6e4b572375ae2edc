/* The engine: a shadow placement pass ahead of execution, replacements
 * issued as early as their victims allow. */
#include "engine/engine.h"

#include "engine/engine_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/array.h"

static void on_use_added(void *ctx, uint32_t chunk, uint64_t pos)
{
    eng_engine_t *e = ctx;
    eng_chunk_t *c = eng_regions_chunk(e->regs, chunk);
    if ((c->flags & ENG_CHUNK_RESIDENT) && c->key == ENG_POS_INF && pos >= e->sh_pos) {
        c->key = pos;
        eng_place_key_changed(e->place, chunk);
    }
}

gmux_status_t eng_engine_create(const eng_engine_params_t *p, const eng_backend_t *be,
                                eng_engine_t **e_p)
{
    if (!p || !be || p->chunk_size == 0 || p->capacity_bytes < p->chunk_size ||
        p->batch_chunks == 0 || (p->policy != ENG_PLACE_OPT && p->policy != ENG_PLACE_LRU) ||
        p->reserve_chunks >= p->capacity_bytes / p->chunk_size)
        return GMUX_ERR_INVALID;
    eng_engine_t *e = calloc(1, sizeof(*e));
    if (!e)
        return GMUX_ERR_NOMEM;
    e->p = *p;
    uint64_t nb = p->fault_block ? p->chunk_size / p->fault_block : 1;
    e->full_blocks = nb >= 32 ? UINT32_MAX : (1u << nb) - 1;
    e->resv = calloc(p->reserve_chunks + 1, sizeof(*e->resv));
    if (!e->resv) {
        free(e);
        return GMUX_ERR_NOMEM;
    }
    gmux_status_t st = eng_regions_create(p->ntasks, p->chunk_size, &e->regs);
    if (st == GMUX_OK)
        st = eng_sched_create(p->ntasks, p->quantum_ns, &e->sched);
    if (st == GMUX_OK)
        st = eng_place_create(e->regs, p->policy,
                              p->capacity_bytes / p->chunk_size - p->reserve_chunks, &e->place);
    if (st == GMUX_OK)
        st = eng_migrate_create(e->regs, be, p->batch_chunks, &e->mig);
    if (st == GMUX_OK && p->fault_blocks)
        eng_migrate_set_block(e->mig, p->fault_block);
    if (st == GMUX_OK && p->h2d_bps > 0 && p->d2h_bps > 0) {
        /* write-back aware eviction and fills in slot order */
        double cs = (double)p->chunk_size * 1e9;
        eng_place_set_wb_costs(e->place, cs / (double)p->h2d_bps, cs / (double)p->d2h_bps,
                               (double)p->wb_slack_ns);
        eng_migrate_set_slot_order(e->mig, true);
    }
    if (st == GMUX_OK) {
        eng_timeline_params_t tp = {.lookahead = p->lookahead,
                                    .feed = p->feed,
                                    .predict = p->predict,
                                    .predict_ctx = p->predict_ctx,
                                    .use_added = on_use_added,
                                    .cb_ctx = e,
                                    .block_size = p->fault_block};
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
    free(e->repl);
    free(e->resv);
    free(e->scratch);
    free(e->listed);
    free(e->listed_sum);
    free(e->fault_refs);
    free(e->fault_moved);
    free(e);
}

/* Takes a chunk out of the fault reserve (it joined the plan or was freed). */
void eng_resv_drop(eng_engine_t *e, uint32_t chunk)
{
    for (uint32_t i = 0; i < e->nresv; i++) {
        if (e->resv[i] != chunk)
            continue;
        memmove(&e->resv[i], &e->resv[i + 1], (e->nresv - i - 1) * sizeof(*e->resv));
        e->nresv--;
        eng_regions_chunk(e->regs, chunk)->flags &= ~(uint32_t)ENG_CHUNK_RESERVE;
        return;
    }
}

uint64_t eng_blocks_bytes(const eng_engine_t *e, uint32_t mask)
{
    if (!e->p.fault_block)
        return mask ? e->p.chunk_size : 0;
    return (uint64_t)__builtin_popcount(mask) * e->p.fault_block;
}

uint64_t eng_chunk_held(const eng_engine_t *e, const eng_chunk_t *x)
{
    return (x->flags & ENG_CHUNK_PARTIAL) ? eng_blocks_bytes(e, x->blocks) : e->p.chunk_size;
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

static gmux_status_t repl_push(eng_engine_t *e, eng_repl_t r)
{
    if (e->rtail - e->rhead == e->rcap) {
        size_t ncap;
        gmux_status_t st =
            com_array_next_cap(e->rcap, e->rcap + 1, sizeof(*e->repl), 1024, SIZE_MAX, &ncap);
        if (st != GMUX_OK)
            return st;
        eng_repl_t *n = malloc(ncap * sizeof(*n));
        if (!n)
            return GMUX_ERR_NOMEM;
        for (uint64_t i = e->rhead; i < e->rtail; i++)
            n[i - e->rhead] = e->repl[i % e->rcap];
        free(e->repl);
        e->repl = n;
        e->rtail -= e->rhead;
        e->rhead = 0;
        e->rcap = ncap;
    }
    e->repl[e->rtail++ % e->rcap] = r;
    return GMUX_OK;
}

/* Places the chunk for position q in the shadow: free slot or a victim. */
static gmux_status_t shadow_take(eng_engine_t *e, uint32_t chunk, uint64_t q)
{
    eng_repl_t r = {.gate = 0, .chunk = chunk, .victim = ENG_NONE};
    if (eng_place_resident(e->place) >= eng_place_capacity(e->place)) {
        uint32_t v = eng_place_evict(e->place, q);
        if (v == ENG_NONE)
            return GMUX_ERR_CAPACITY;
        r.victim = v;
        r.gate = eng_regions_chunk(e->regs, v)->shadow_last + 1;
    }
    eng_chunk_t *c = eng_regions_chunk(e->regs, chunk);
    /* the allocation must exist: its address may have belonged to a region
     * whose free is still ahead of execution */
    uint64_t born = eng_regions_get(e->regs, c->region)->alloc_pos;
    if (born > r.gate)
        r.gate = born;
    c->key = q;
    gmux_status_t st = eng_place_insert(e->place, chunk);
    return st == GMUX_OK ? repl_push(e, r) : st;
}

/* Shadow placement of one launch at position q (its refs all resident at q). */
static gmux_status_t shadow_launch(eng_engine_t *e, const eng_entry_t *ent)
{
    const uint32_t *refs = eng_timeline_refs(e->tl, ent);
    uint64_t q = ent->pos;
    for (uint32_t i = 0; i < ent->nrefs; i++) { /* pin what is there */
        uint32_t c = ENG_REF_CHUNK(refs[i]);
        eng_chunk_t *x = eng_regions_chunk(e->regs, c);
        if ((x->flags & ENG_CHUNK_RESIDENT) && x->key != q) {
            x->key = q; /* normally already q: its next use */
            eng_place_key_changed(e->place, c);
        }
    }
    for (uint32_t i = 0; i < ent->nrefs; i++) {
        uint32_t c = ENG_REF_CHUNK(refs[i]);
        eng_chunk_t *x = eng_regions_chunk(e->regs, c);
        gmux_status_t st = GMUX_OK;
        if (!(x->flags & ENG_CHUNK_RESIDENT)) {
            st = shadow_take(e, c, q);
        } else if ((x->flags & (ENG_CHUNK_PARTIAL | ENG_CHUNK_TOPUP)) == ENG_CHUNK_PARTIAL) {
            /* on the device in part: fill in its missing blocks, in its own slot */
            x->flags |= ENG_CHUNK_TOPUP;
            st = repl_push(e, (eng_repl_t){.gate = 0, .chunk = c, .victim = ENG_NONE});
        }
        if (st != GMUX_OK)
            return st;
    }
    for (uint32_t i = 0; i < ent->nrefs; i++) {
        uint32_t c = ENG_REF_CHUNK(refs[i]);
        eng_chunk_t *x = eng_regions_chunk(e->regs, c);
        x->shadow_last = q;
        if (refs[i] & ENG_REF_WRITE)
            x->flags |= ENG_CHUNK_WPLAN;
        x->key = eng_timeline_next_after(e->tl, c, q);
        eng_place_key_changed(e->place, c);
        eng_place_touch(e->place, c);
    }
    return GMUX_OK;
}

/* Runs the shadow pass through position `through` and on while slices <= max_slice. */
static gmux_status_t shadow(eng_engine_t *e, uint64_t front_pos, uint64_t through,
                            uint64_t max_slice)
{
    for (;;) {
        const eng_entry_t *ent = eng_timeline_peek(e->tl, e->sh_pos - front_pos);
        if (!ent || (ent->pos > through && ent->slice > max_slice))
            return GMUX_OK;
        if (ent->kind == ENG_ITEM_LAUNCH) {
            gmux_status_t st = shadow_launch(e, ent);
            if (st != GMUX_OK)
                return st;
        } else if (ent->kind == ENG_ITEM_FREE) {
            /* at any later use the free has run: its chunks go first */
            const eng_region_t *r = eng_regions_get(e->regs, ent->region);
            for (uint32_t i = 0; i < r->nchunks; i++)
                eng_place_expire(e->place, r->first_chunk + i);
        }
        e->sh_pos++;
    }
}

/* Issues the pending replacements whose victims are done with, in order. */
static gmux_status_t issue(eng_engine_t *e)
{
    while (e->rhead < e->rtail) {
        eng_repl_t *r = &e->repl[e->rhead % e->rcap];
        if (r->gate > e->exec_next)
            break;
        bool dirty = false;
        eng_ticket_t last = r->freed_last;
        uint64_t wb = 0, fb = e->p.chunk_size;
        if (r->victim != ENG_NONE) {
            eng_chunk_t *v = eng_regions_chunk(e->regs, r->victim);
            bool dead = eng_regions_chunk_dead(e->regs, r->victim);
            dirty = !dead && (v->flags & ENG_CHUNK_DIRTY);
            eng_migrate_clean_end(e->mig, r->victim, dead ? ENG_CLEAN_FREED : ENG_CLEAN_DROPPED);
            wb = eng_chunk_held(e, v);
            v->flags &= ~(uint32_t)(ENG_CHUNK_DIRTY | ENG_CHUNK_PRESENT | ENG_CHUNK_PARTIAL |
                                    ENG_CHUNK_TOPUP);
            last = v->last_ticket;
        }
        uint32_t fill = r->chunk;
        eng_chunk_t *f = eng_regions_chunk(e->regs, fill);
        if (f->flags & (ENG_CHUNK_RESERVE | ENG_CHUNK_PRESENT)) {
            /* already there (a reserve chunk joins the plan; or a top-up): only a
             * partial chunk's missing blocks move */
            if (f->flags & ENG_CHUNK_RESERVE)
                eng_resv_drop(e, fill);
            if (f->flags & ENG_CHUNK_PARTIAL)
                fb -= eng_chunk_held(e, f);
            else
                fill = ENG_NONE;
        }
        f->flags =
            (f->flags & ~(uint32_t)(ENG_CHUNK_PARTIAL | ENG_CHUNK_TOPUP)) | ENG_CHUNK_PRESENT;
        if (fill == ENG_NONE && r->victim == ENG_NONE) {
            e->rhead++;
            continue;
        }
        gmux_status_t st = eng_migrate_add_bytes(e->mig, fill, fb, r->victim, dirty, wb, last);
        if (st != GMUX_OK)
            return st;
        e->rhead++;
    }
    gmux_status_t st = eng_migrate_flush(e->mig);
    if (st == GMUX_OK && e->p.h2d_bps > 0 && e->p.d2h_bps > 0)
        st = eng_migrate_clean_idle(e->mig, e->place, e->exec_next, e->p.clean_chunks);
    return st;
}

/* A freed region: pending evictions of its chunks become plain slot reuses. */
static void exec_free(eng_engine_t *e, uint32_t region)
{
    const eng_region_t *r = eng_regions_get(e->regs, region);
    for (uint64_t i = e->rhead; i < e->rtail; i++) {
        eng_repl_t *x = &e->repl[i % e->rcap];
        if (x->victim != ENG_NONE && x->victim - r->first_chunk < r->nchunks) {
            x->freed_last = eng_regions_chunk(e->regs, x->victim)->last_ticket;
            x->victim = ENG_NONE;
        }
    }
    for (uint32_t i = 0; i < r->nchunks; i++) {
        uint32_t c = r->first_chunk + i;
        eng_migrate_clean_end(e->mig, c, ENG_CLEAN_FREED);
        if (eng_regions_chunk(e->regs, c)->flags & ENG_CHUNK_RESERVE)
            eng_resv_drop(e, c);
        eng_regions_chunk(e->regs, c)->flags &=
            ~(uint32_t)(ENG_CHUNK_DIRTY | ENG_CHUNK_PRESENT | ENG_CHUNK_PARTIAL | ENG_CHUNK_TOPUP);
        eng_place_remove(e->place, c);
    }
    eng_migrate_release(e->mig, region);
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
        if (e->sh_pos < front->pos)
            e->sh_pos = front->pos;
        if (front->kind == ENG_ITEM_LAUNCH)
            break;
        exec_free(e, front->region);
        e->exec_next = front->pos + 1;
        eng_timeline_pop(e->tl);
    }
    uint64_t pos = front->pos;
    gmux_status_t st = shadow(e, pos, pos, front->slice + e->p.prefetch_slices);
    if (st != GMUX_OK)
        return st;
    st = issue(e);
    if (st != GMUX_OK)
        return st;
    const uint32_t *truth = eng_timeline_truth(e->tl, front);
    uint32_t faults = 0;
    const uint32_t *touched = eng_timeline_blocks(e->tl, front);
    /* issue() flushed the plan: what is queued now serves the faults */
    eng_migrate_set_fault(e->mig, true);
    st = eng_fault_launch(e, pos, truth, touched, front->ntrefs, &faults);
    if (st == GMUX_OK)
        st = eng_migrate_flush(e->mig);
    eng_migrate_set_fault(e->mig, false);
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
                         .refs = truth,
                         .blocks = touched,
                         .fault_refs = e->fault_refs,
                         .fault_moved = e->fault_moved};
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
        if (truth[i] & ENG_REF_WRITE) {
            eng_migrate_clean_end(e->mig, ENG_REF_CHUNK(truth[i]), ENG_CLEAN_REWRITTEN);
            c->flags |= ENG_CHUNK_DIRTY;
        }
    }
    const uint32_t *refs = eng_timeline_refs(e->tl, front);
    for (uint32_t i = 0; i < front->nrefs; i++)
        eng_regions_chunk(e->regs, ENG_REF_CHUNK(refs[i]))->last_ticket = done;
    e->exec_next = front->pos + 1;
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

const eng_replan_stats_t *eng_engine_replan_stats(const eng_engine_t *e)
{
    return &e->rs;
}
