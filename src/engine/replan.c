/*
 * Mispredictions: faulting in the chunks a launch touches that its
 * prediction missed, and re-planning after them.
 *
 * A miss invalidates the plan made from the wrong prediction: every pending
 * replacement is dropped and the plan becomes what is on the device now
 * (planned fills not yet issued leave it; chunks whose planned eviction was
 * pending rejoin it, or fill free reserve slots); the shadow pass places the
 * launches after the miss again at the next step. Afterwards the device
 * holds exactly the plan and the reserve.
 *
 * Only two kinds of chunk can differ between the plan and the device: those
 * named by a pending replacement (its fill, its victim), and those the
 * shadow pass placed beyond the miss (their shadow_last, eviction key and
 * next-use cursor ran ahead). Every other planned chunk already has the key
 * the re-plan would give it: its next use after the miss is its next use
 * after its last placement, at or before the miss. So the incremental
 * re-plan visits those chunks only, and costs what the dropped plan cost to
 * make; replan_full walks every chunk and is kept as the reference that
 * tests/engine/test_engine.c checks the incremental one against (same
 * transfers, same steps, on random workloads with wrong predictors).
 */
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

#include "engine/engine_impl.h"

static gmux_status_t scratch_push(eng_engine_t *e, uint32_t chunk)
{
    if (e->nscratch == e->scratch_cap) {
        gmux_status_t st = com_array_grow_u32((void **)&e->scratch, &e->scratch_cap,
                                              (size_t)e->nscratch + 1, sizeof(*e->scratch), 256);
        if (st != GMUX_OK)
            return st;
    }
    e->scratch[e->nscratch++] = chunk;
    return GMUX_OK;
}

/* Room in the listed bit arrays for every chunk id handed out so far (new
 * words start clear). */
static gmux_status_t listed_fit(eng_engine_t *e)
{
    uint32_t words = (eng_regions_chunk_limit(e->regs) + 63) / 64;
    if (words > e->listed_cap) {
        uint32_t old = e->listed_cap;
        gmux_status_t st =
            com_array_grow_u32((void **)&e->listed, &e->listed_cap, words, sizeof(*e->listed), 64);
        if (st != GMUX_OK)
            return st;
        memset(e->listed + old, 0, (size_t)(e->listed_cap - old) * sizeof(*e->listed));
    }
    uint32_t sums = (e->listed_cap + 63) / 64;
    if (sums > e->listed_sum_cap) {
        uint32_t old = e->listed_sum_cap;
        gmux_status_t st = com_array_grow_u32((void **)&e->listed_sum, &e->listed_sum_cap, sums,
                                              sizeof(*e->listed_sum), 4);
        if (st != GMUX_OK)
            return st;
        memset(e->listed_sum + old, 0, (size_t)(e->listed_sum_cap - old) * sizeof(*e->listed_sum));
    }
    return GMUX_OK;
}

static inline bool listed_has(const eng_engine_t *e, uint32_t c)
{
    return (e->listed[c >> 6] >> (c & 63)) & 1;
}

static inline void listed_set(eng_engine_t *e, uint32_t c)
{
    uint64_t *w = &e->listed[c >> 6], bit = 1ull << (c & 63);
    if (*w & bit)
        return;
    if (!*w)
        e->listed_sum[c >> 12] |= 1ull << ((c >> 6) & 63);
    *w |= bit;
    e->nlisted++;
}

static inline void listed_clear(eng_engine_t *e, uint32_t c)
{
    uint64_t *w = &e->listed[c >> 6];
    *w &= ~(1ull << (c & 63));
    if (!*w)
        e->listed_sum[c >> 12] &= ~(1ull << ((c >> 6) & 63));
}

/* Moves the listed ids into the scratch list, ascending, and clears them all
 * (every bit even when the scratch list cannot grow: GMUX_ERR_NOMEM). */
static gmux_status_t listed_drain(eng_engine_t *e)
{
    gmux_status_t st = GMUX_OK;
    if (e->nlisted > e->scratch_cap)
        st = com_array_grow_u32((void **)&e->scratch, &e->scratch_cap, e->nlisted,
                                sizeof(*e->scratch), 256);
    e->nscratch = 0;
    for (uint32_t s = 0; s < e->listed_sum_cap; s++) {
        for (uint64_t sw = e->listed_sum[s]; sw; sw &= sw - 1) {
            uint32_t wi = s * 64 + (uint32_t)__builtin_ctzll(sw);
            for (uint64_t w = e->listed[wi]; w && st == GMUX_OK; w &= w - 1)
                e->scratch[e->nscratch++] = wi * 64 + (uint32_t)__builtin_ctzll(w);
            e->listed[wi] = 0;
        }
        e->listed_sum[s] = 0;
    }
    e->nlisted = 0;
    return st;
}

/* First step for one chunk: its plan state reverts to the device's. */
static void revert_chunk(eng_engine_t *e, uint32_t c, uint64_t p)
{
    eng_chunk_t *x = eng_regions_chunk(e->regs, c);
    x->q_behind = ENG_NONE;                 /* the shadow position moves back */
    x->flags &= ~(uint32_t)ENG_CHUNK_TOPUP; /* its planned top-up was dropped */
    if (x->shadow_last > p)
        x->shadow_last = p;
    if ((x->flags & (ENG_CHUNK_RESIDENT | ENG_CHUNK_PRESENT)) == ENG_CHUNK_RESIDENT)
        eng_place_remove(e->place, c); /* a planned fill not issued */
    if ((x->flags & (ENG_CHUNK_RESIDENT | ENG_CHUNK_RESERVE)) ==
        (ENG_CHUNK_RESIDENT | ENG_CHUNK_RESERVE))
        eng_resv_drop(e, c); /* its dropped fill would have moved it into the plan */
}

/* Second step: a chunk on the device outside plan and reserve (its planned
 * eviction was dropped) rejoins the plan, or a free reserve slot. */
static void rejoin_chunk(eng_engine_t *e, uint32_t c, uint64_t p)
{
    eng_chunk_t *x = eng_regions_chunk(e->regs, c);
    if ((x->flags & (ENG_CHUNK_RESIDENT | ENG_CHUNK_PRESENT | ENG_CHUNK_RESERVE)) !=
        ENG_CHUNK_PRESENT)
        return;
    x->key = eng_timeline_next_after(e->tl, c, p);
    if (eng_place_resident(e->place) >= eng_place_capacity(e->place) ||
        eng_place_insert(e->place, c) != GMUX_OK) {
        x->flags |= ENG_CHUNK_RESERVE; /* the device holds it: a reserve slot is free */
        e->resv[e->nresv++] = c;
    }
}

/* Third step: a planned chunk's eviction key is its next use after p. */
static void rekey_chunk(eng_engine_t *e, uint32_t c, uint64_t p)
{
    eng_chunk_t *x = eng_regions_chunk(e->regs, c);
    if (x->flags & ENG_CHUNK_RESIDENT) {
        x->key = eng_timeline_next_after(e->tl, c, p);
        eng_place_key_changed(e->place, c);
    }
}

/* The reference: every chunk, in id order. */
static void replan_full(eng_engine_t *e, uint64_t p)
{
    uint32_t limit = eng_regions_chunk_limit(e->regs);
    for (uint32_t c = 0; c < limit; c++)
        revert_chunk(e, c, p);
    for (uint32_t c = 0; c < limit; c++)
        rejoin_chunk(e, c, p);
    for (uint32_t c = 0; c < limit; c++)
        rekey_chunk(e, c, p);
    e->rs.chunks += limit;
}

/*
 * The chunks of the pending replacements and of the launches placed in
 * (p, sh_pos), each once, in id order (the order replan_full visits them in:
 * which chunks overflow into the reserve, and the LRU order of those that
 * rejoin, depend on it), into the scratch list.
 */
static gmux_status_t replan_list(eng_engine_t *e, uint64_t p)
{
    gmux_status_t st = listed_fit(e);
    if (st != GMUX_OK)
        return st;
    for (uint64_t i = e->rhead; i < e->rtail; i++) {
        const eng_repl_t *r = &e->repl[i % e->rcap];
        listed_set(e, r->chunk);
        if (r->victim != ENG_NONE)
            listed_set(e, r->victim);
    }
    const eng_entry_t *front = eng_timeline_peek(e->tl, 0);
    for (uint64_t i = p + 1 - front->pos;; i++) {
        const eng_entry_t *ent = eng_timeline_peek(e->tl, i);
        if (!ent || ent->pos >= e->sh_pos)
            break;
        const uint32_t *refs = eng_timeline_refs(e->tl, ent);
        for (uint32_t k = 0; k < ent->nrefs; k++)
            listed_set(e, ENG_REF_CHUNK(refs[k]));
        e->rs.positions++;
    }
    return listed_drain(e);
}

/* Makes the plan match the device after a miss at p (see the file header). */
static gmux_status_t replan(eng_engine_t *e, uint64_t p)
{
    e->rs.replans++;
    e->rs.repls += e->rtail - e->rhead;
    if (e->p.replan_full) {
        e->rs.positions += e->sh_pos > p + 1 ? e->sh_pos - p - 1 : 0;
        e->rhead = e->rtail;
        replan_full(e, p);
    } else {
        gmux_status_t st = replan_list(e, p);
        if (st != GMUX_OK)
            return st;
        e->rhead = e->rtail;
        for (uint32_t i = 0; i < e->nscratch; i++)
            revert_chunk(e, e->scratch[i], p);
        for (uint32_t i = 0; i < e->nscratch; i++)
            rejoin_chunk(e, e->scratch[i], p);
        for (uint32_t i = 0; i < e->nscratch; i++)
            rekey_chunk(e, e->scratch[i], p);
        e->rs.chunks += e->nscratch;
    }
    e->sh_pos = p + 1;
    return GMUX_OK;
}

/* Pins a planned chunk of the launch at p (key p: never the policy's victim)
 * until unpin_all. */
static gmux_status_t pin(eng_engine_t *e, uint32_t c, uint64_t p)
{
    eng_chunk_t *x = eng_regions_chunk(e->regs, c);
    x->key = p;
    eng_place_key_changed(e->place, c);
    return scratch_push(e, c);
}

/*
 * A chunk the prediction missed, needed now by the launch at p, whose true
 * references are listed (the policy's victims among them are
 * pinned as they come up, so none is evicted). Faulted in at once, never refused while the
 * launch's own chunks fit the device; it takes, in order of preference: a
 * free reserve slot; the slot of the oldest reserve chunk the launch does
 * not use; a free planned slot; or the slot of the policy's victim among the
 * planned chunks the launch does not use (it joins the plan in its stead).
 */
static gmux_status_t fault_in(eng_engine_t *e, uint32_t chunk, uint64_t p, uint32_t moved)
{
    eng_chunk_t *x = eng_regions_chunk(e->regs, chunk);
    x->shadow_last = p;
    uint32_t v = ENG_NONE;
    bool dirty = false;
    eng_ticket_t last = 0;
    uint64_t wb = 0;
    uint32_t i = 0;
    while (i < e->nresv && listed_has(e, e->resv[i]))
        i++;
    bool to_resv = e->nresv < e->p.reserve_chunks || i < e->nresv;
    if (to_resv && e->nresv >= e->p.reserve_chunks) {
        v = e->resv[i];
        eng_resv_drop(e, v);
    } else if (!to_resv) {
        gmux_status_t st = GMUX_OK;
        if (eng_place_resident(e->place) >= eng_place_capacity(e->place)) {
            /* the launch's own chunks are pinned as they come up */
            while ((v = eng_place_victim(e->place, p)) != ENG_NONE && listed_has(e, v) &&
                   st == GMUX_OK)
                st = pin(e, v, p);
            if (st != GMUX_OK)
                return st;
            if (v == ENG_NONE)
                return GMUX_ERR_CAPACITY; /* the launch alone fills the device */
            eng_place_remove(e->place, v);
        }
        st = eng_place_insert(e->place, chunk);
        if (st == GMUX_OK)
            st = pin(e, chunk, p);
        if (st != GMUX_OK)
            return st;
    }
    if (to_resv) {
        x->flags |= ENG_CHUNK_RESERVE;
        e->resv[e->nresv++] = chunk;
    }
    if (v != ENG_NONE) {
        eng_chunk_t *vx = eng_regions_chunk(e->regs, v);
        dirty = (vx->flags & ENG_CHUNK_DIRTY) != 0;
        eng_migrate_clean_end(
            e->mig, v, eng_regions_chunk_dead(e->regs, v) ? ENG_CLEAN_FREED : ENG_CLEAN_DROPPED);
        last = vx->last_ticket;
        wb = eng_chunk_held(e, vx);
        vx->flags &=
            ~(uint32_t)(ENG_CHUNK_DIRTY | ENG_CHUNK_PRESENT | ENG_CHUNK_PARTIAL | ENG_CHUNK_TOPUP);
    }
    x->flags |= ENG_CHUNK_PRESENT;
    if (moved != e->full_blocks) { /* the fault brought in part of it */
        x->flags |= ENG_CHUNK_PARTIAL;
        x->blocks = moved;
    }
    return eng_migrate_add_bytes(e->mig, chunk, eng_blocks_bytes(e, moved), v, dirty, wb, last);
}

/* More blocks of a partial chunk (it keeps its slot); returns those the fault moves. */
static gmux_status_t refault(eng_engine_t *e, uint32_t chunk, uint32_t touched, uint32_t *moved_p)
{
    eng_chunk_t *x = eng_regions_chunk(e->regs, chunk);
    uint32_t mv = e->p.fault_blocks(e->p.fault_ctx, x->blocks, touched) & ~x->blocks;
    *moved_p = mv;
    if (!mv)
        return GMUX_OK;
    x->blocks |= mv;
    if (x->blocks == e->full_blocks)
        x->flags &= ~(uint32_t)ENG_CHUNK_PARTIAL;
    return eng_migrate_add_bytes(e->mig, chunk, eng_blocks_bytes(e, mv), ENG_NONE, false, 0, 0);
}

/* The blocks a fault on a chunk with nothing on the device moves. */
static uint32_t fault_moves(const eng_engine_t *e, uint32_t touched)
{
    uint32_t mv = e->p.fault_blocks ? e->p.fault_blocks(e->p.fault_ctx, 0, touched) : 0;
    mv &= e->full_blocks;
    return mv ? mv : e->full_blocks;
}

/* Unpins the chunks pin() listed: their keys become their next use after p. */
static void unpin_all(eng_engine_t *e, uint64_t p)
{
    for (uint32_t i = 0; i < e->nscratch; i++) {
        uint32_t c = e->scratch[i];
        eng_chunk_t *x = eng_regions_chunk(e->regs, c);
        if (!(x->flags & ENG_CHUNK_RESIDENT))
            continue;
        x->key = eng_timeline_next_after(e->tl, c, p);
        eng_place_key_changed(e->place, c);
    }
    e->nscratch = 0;
}

/* Room for ntruth faults in fault_refs and fault_moved. */
static gmux_status_t fault_fit(eng_engine_t *e, uint32_t ntruth)
{
    if (ntruth <= e->fault_cap)
        return GMUX_OK;
    uint32_t *n = realloc(e->fault_refs, (size_t)ntruth * sizeof(*n));
    if (!n)
        return GMUX_ERR_NOMEM;
    e->fault_refs = n;
    n = realloc(e->fault_moved, (size_t)ntruth * sizeof(*n));
    if (!n)
        return GMUX_ERR_NOMEM;
    e->fault_moved = n;
    e->fault_cap = ntruth;
    return GMUX_OK;
}

gmux_status_t eng_fault_launch(eng_engine_t *e, uint64_t p, const uint32_t *truth,
                               const uint32_t *touched, uint32_t ntruth, uint32_t *faults_p)
{
    uint32_t faults = 0;
    *faults_p = 0;
    bool miss = false, part = false;
    for (uint32_t i = 0; i < ntruth && !miss; i++) {
        const eng_chunk_t *x = eng_regions_chunk(e->regs, ENG_REF_CHUNK(truth[i]));
        uint32_t t = touched ? touched[i] : e->full_blocks;
        if (!(x->flags & ENG_CHUNK_PRESENT))
            miss = true;
        else if ((x->flags & ENG_CHUNK_PARTIAL) && (t & ~x->blocks))
            part = true;
    }
    if (!miss && !part)
        return GMUX_OK;
    gmux_status_t st = fault_fit(e, ntruth);
    if (st == GMUX_OK && miss && (e->rhead != e->rtail || e->sh_pos != p + 1))
        st = replan(e, p);
    if (st == GMUX_OK && miss)
        st = listed_fit(e);
    if (st != GMUX_OK)
        return st;
    if (miss) {
        for (uint32_t k = 0; k < ntruth; k++)
            listed_set(e, ENG_REF_CHUNK(truth[k]));
        e->nlisted = 0; /* cleared one by one below, not drained */
        e->nscratch = 0;
    }
    for (uint32_t i = 0; i < ntruth && st == GMUX_OK; i++) {
        uint32_t c = ENG_REF_CHUNK(truth[i]);
        uint32_t flags = eng_regions_chunk(e->regs, c)->flags;
        uint32_t t = touched ? touched[i] : e->full_blocks, mv = 0;
        if (!(flags & ENG_CHUNK_PRESENT)) {
            mv = fault_moves(e, t);
            st = fault_in(e, c, p, mv);
        } else if (flags & ENG_CHUNK_PARTIAL) {
            st = refault(e, c, t, &mv);
        }
        if (st == GMUX_OK && mv) {
            e->fault_refs[faults] = i;
            e->fault_moved[faults++] = mv;
        }
    }
    if (miss) {
        unpin_all(e, p);
        for (uint32_t k = 0; k < ntruth; k++)
            listed_clear(e, ENG_REF_CHUNK(truth[k]));
    }
    *faults_p = faults;
    return st;
}
