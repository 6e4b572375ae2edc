/* Simulated runs: oracle/profile pass, demand paging, the proactive engine. */
#include "sim/run.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/placement.h"
#include "engine/timeline.h"
#include "sim/device.h"
#include "sim/faults.h"

static const char *const policy_names[SIM_POLICY_COUNT] = {"demand", "proactive", "proactive-lru",
                                                           "oracle"};

const char *sim_policy_name(sim_policy_t p)
{
    return p < SIM_POLICY_COUNT ? policy_names[p] : "?";
}

gmux_status_t sim_policy_parse(const char *name, sim_policy_t *p_p)
{
    for (int i = 0; i < SIM_POLICY_COUNT; i++) {
        if (strcmp(name, policy_names[i]) == 0) {
            *p_p = (sim_policy_t)i;
            return GMUX_OK;
        }
    }
    return GMUX_ERR_NOT_FOUND;
}

void sim_result_clear(sim_result_t *r)
{
    free(r->tasks);
    memset(r, 0, sizeof(*r));
}

/* The source seen as the engine's feed. */
void sim_item_from_launch(eng_item_t *it, const sim_launch_ev_t *l)
{
    it->kind = ENG_ITEM_LAUNCH;
    it->launch.kernel = l->kernel;
    memcpy(it->launch.grid, l->grid, sizeof(l->grid));
    memcpy(it->launch.block, l->block, sizeof(l->block));
    it->launch.nargs = l->nargs;
    it->launch.args = l->args;
    it->time_ns = l->time_ns;
    it->nranges = l->nranges;
    it->ranges = l->ranges;
}

/* The feed's context: the source, and the regions its allocations go to
 * (NULL until they exist), to keep chunk ids within SIM_MAX_CHUNKS. */
typedef struct sim_feed {
    sim_source_t *src;
    eng_regions_t *regs;
    uint64_t chunk;
} sim_feed_t;

static gmux_status_t feed_next(void *ctx, uint32_t task, eng_item_t *it)
{
    sim_feed_t *f = ctx;
    sim_source_t *src = f->src;
    sim_event_t ev;
    gmux_status_t st = sim_source_next(src, task, &ev);
    if (st != GMUX_OK)
        return st;
    switch (ev.kind) {
    case SIM_EV_ALLOC: {
        uint64_t n = ev.u.alloc.size / f->chunk + (ev.u.alloc.size % f->chunk != 0);
        if (f->regs && !eng_regions_ids_fit(f->regs, n, SIM_MAX_CHUNKS)) {
            snprintf(src->error, sizeof(src->error),
                     "task %u: allocation %" PRIu64 " (%" PRIu64 " bytes) would take the live "
                     "chunks past %llu, the simulator's limit (a larger --param chunk fits more)",
                     task, ev.u.alloc.id, ev.u.alloc.size, SIM_MAX_CHUNKS);
            return GMUX_ERR_RANGE;
        }
        it->kind = ENG_ITEM_ALLOC;
        it->id = ev.u.alloc.id;
        it->base = ev.u.alloc.base;
        it->size = ev.u.alloc.size;
        return GMUX_OK;
    }
    case SIM_EV_FREE:
        it->kind = ENG_ITEM_FREE;
        it->id = ev.u.free.id;
        return GMUX_OK;
    case SIM_EV_LAUNCH:
        sim_item_from_launch(it, &ev.u.launch);
        return GMUX_OK;
    }
    snprintf(src->error, sizeof(src->error), "event of unknown kind %d", (int)ev.kind);
    return GMUX_ERR_PARSE;
}

/* What every pass needs: the source, regions, scheduler and timeline. */
typedef struct run_ctx {
    sim_source_t *src;
    eng_regions_t *regs;
    eng_sched_t *sched;
    eng_timeline_t *tl;
    eng_placement_t *place; /* demand only */
    uint32_t *blocks;       /* demand: resident blocks of each chunk (sim/faults.h) */
    uint32_t nblocks;       /* entries of blocks */
    sim_feed_t feed;
} run_ctx_t;

static void on_next_use(void *ctx, uint32_t chunk)
{
    run_ctx_t *rc = ctx;
    if (rc->place) {
        eng_chunk_t *c = eng_regions_chunk(rc->regs, chunk);
        c->key = c->next_use;
        eng_place_key_changed(rc->place, chunk);
    }
}

static gmux_status_t apply_classes(eng_sched_t *s, const sim_hooks_t *h, uint32_t ntasks)
{
    for (uint32_t t = 0; t < ntasks && t < h->nclass; t++) {
        eng_class_t cls = h->lc && h->lc[t] ? ENG_CLASS_LC : ENG_CLASS_BE;
        gmux_status_t st = eng_sched_set_class(s, t, cls, h->prio ? h->prio[t] : 0);
        if (st != GMUX_OK)
            return st;
    }
    return GMUX_OK;
}

static void ctx_close(run_ctx_t *rc)
{
    eng_timeline_destroy(rc->tl);
    eng_place_destroy(rc->place);
    eng_sched_destroy(rc->sched);
    eng_regions_destroy(rc->regs);
    sim_source_close(rc->src);
    free(rc->blocks);
    memset(rc, 0, sizeof(*rc));
}

/* block: the timeline's block size (touched-block masks), 0 for none. */
static gmux_status_t ctx_open(run_ctx_t *rc, const sim_params_t *p, const sim_hooks_t *h,
                              uint32_t lookahead, uint64_t block, char *err, size_t errlen)
{
    memset(rc, 0, sizeof(*rc));
    gmux_status_t st = h->open(h->open_ctx, &rc->src, err, errlen);
    if (st != GMUX_OK)
        return st;
    st = eng_regions_create(rc->src->ntasks, (uint64_t)p->chunk_bytes, &rc->regs);
    rc->feed = (sim_feed_t){rc->src, rc->regs, (uint64_t)p->chunk_bytes};
    if (st == GMUX_OK)
        st = eng_sched_create(rc->src->ntasks, (uint64_t)p->quantum_ns, &rc->sched);
    if (st == GMUX_OK)
        st = apply_classes(rc->sched, h, rc->src->ntasks);
    if (st == GMUX_OK) {
        eng_timeline_params_t tp = {.lookahead = lookahead,
                                    .feed = {feed_next, &rc->feed},
                                    .next_use_changed = on_next_use,
                                    .cb_ctx = rc,
                                    .block_size = block};
        st = eng_timeline_create(&tp, rc->regs, rc->sched, &rc->tl);
    }
    if (st != GMUX_OK) {
        snprintf(err, errlen, "cannot set up the run: %s", gmux_status_str(st));
        ctx_close(rc);
    }
    return st;
}

/* Error text for a failure while planning: the source's message if it has one. */
static gmux_status_t plan_error(run_ctx_t *rc, gmux_status_t st, char *err, size_t errlen)
{
    if (rc->src && rc->src->error[0])
        snprintf(err, errlen, "%s", rc->src->error);
    else if (st == GMUX_ERR_EXISTS)
        snprintf(err, errlen, "an allocation overlaps a live one of the same task");
    else if (st == GMUX_ERR_NOT_FOUND)
        snprintf(err, errlen, "a free names no live allocation");
    else
        snprintf(err, errlen, "%s", gmux_status_str(st));
    return st == GMUX_ERR_NOT_FOUND ? GMUX_ERR_PARSE : st;
}

static gmux_status_t result_init(sim_result_t *r, uint32_t ntasks)
{
    memset(r, 0, sizeof(*r));
    r->tasks = calloc(ntasks, sizeof(*r->tasks));
    if (!r->tasks)
        return GMUX_ERR_NOMEM;
    r->ntasks = ntasks;
    return GMUX_OK;
}

static void count_launch(sim_result_t *r, const sim_hooks_t *h, const char *what, uint32_t task,
                         uint64_t compute, uint64_t end, bool switched)
{
    r->launches++;
    r->slices += switched;
    r->tasks[task].launches++;
    r->tasks[task].compute_ns += compute;
    r->tasks[task].finish_ns = end;
    if (end > r->makespan_ns)
        r->makespan_ns = end;
    if (h->progress && r->launches % SIM_PROGRESS_EVERY == 0)
        h->progress(h->progress_ctx, what, r->launches);
}

/* Drops a freed region from the placement (demand) and releases it. */
static void release_region(run_ctx_t *rc, uint32_t region, sim_refstr_t *refs)
{
    const eng_region_t *reg = eng_regions_get(rc->regs, region);
    for (uint32_t i = 0; i < reg->nchunks; i++) {
        uint32_t c = reg->first_chunk + i;
        if (refs)
            sim_refstr_free(refs, c);
        if (rc->place)
            eng_place_remove(rc->place, c);
        if (c < rc->nblocks)
            rc->blocks[c] = 0;
    }
    eng_regions_release(rc->regs, region);
}

gmux_status_t sim_profile_run(const sim_params_t *p, const sim_hooks_t *h, sim_profile_t *prof,
                              char *err, size_t errlen)
{
    memset(prof, 0, sizeof(*prof));
    run_ctx_t rc;
    gmux_status_t st = ctx_open(&rc, p, h, 1, sim_params_fault_block(p), err, errlen);
    if (st != GMUX_OK)
        return st;
    sim_fault_model_t fm;
    sim_fault_model_init(&fm, p);
    uint32_t nt = rc.src->ntasks;
    st = result_init(&prof->oracle, nt);
    if (st == GMUX_OK)
        st = sim_refstr_create((uint64_t)p->bound_max_refs, &prof->refs);
    if (st == GMUX_OK)
        sim_refstr_set_blocks(prof->refs, fm.nblocks);
    prof->task_names = st == GMUX_OK ? calloc(nt, sizeof(char *)) : NULL;
    if (st == GMUX_OK && !prof->task_names)
        st = GMUX_ERR_NOMEM;
    for (uint32_t t = 0; st == GMUX_OK && t < nt; t++) {
        const char *name = rc.src->task_names ? rc.src->task_names[t] : NULL;
        char buf[32];
        if (!name) {
            snprintf(buf, sizeof(buf), "task%u", t);
            name = buf;
        }
        prof->task_names[t] = strdup(name);
        if (!prof->task_names[t])
            st = GMUX_ERR_NOMEM;
    }
    if (st != GMUX_OK) {
        snprintf(err, errlen, "%s", gmux_status_str(st));
        goto out_close;
    }
    uint64_t now = 0, peak = 0, last_slice = 0;
    for (;;) {
        st = eng_timeline_fill(rc.tl);
        if (st != GMUX_OK) {
            st = plan_error(&rc, st, err, errlen);
            goto out_close;
        }
        uint64_t live = eng_regions_live_chunks(rc.regs);
        if (live > peak)
            peak = live;
        const eng_entry_t *e = eng_timeline_peek(rc.tl, 0);
        if (!e)
            break;
        if (e->kind == ENG_ITEM_FREE) {
            release_region(&rc, e->region, prof->refs);
        } else {
            const uint32_t *tr = eng_timeline_truth(rc.tl, e);
            const uint32_t *tb = eng_timeline_blocks(rc.tl, e);
            for (uint32_t i = 0; i < e->ntrefs; i++) {
                /* a launch that touches every block has the whole chunk on the
                 * device, whatever moved it; of the others, a policy may have
                 * moved some blocks only (the density rule can leave a chunk
                 * in part on the device, more than half of it) */
                if (tb && (tb[i] & fm.full) != fm.full)
                    sim_refstr_ref_part(prof->refs, ENG_REF_CHUNK(tr[i]), tb[i],
                                        (tr[i] & ENG_REF_WRITE) != 0);
                else
                    sim_refstr_ref(prof->refs, ENG_REF_CHUNK(tr[i]), (tr[i] & ENG_REF_WRITE) != 0);
            }
            sim_refstr_end_launch(prof->refs, e->time_ns);
            if (e->time_ns > SIM_MAX_COMPUTE_NS - now) {
                snprintf(err, errlen,
                         "launch compute times add up to more than 2^62 ns (146 years)");
                st = GMUX_ERR_RANGE;
                goto out_close;
            }
            now += e->time_ns;
            count_launch(&prof->oracle, h, "oracle", e->task, e->time_ns, now,
                         e->slice != last_slice);
            last_slice = e->slice;
        }
        eng_timeline_pop(rc.tl);
    }
    prof->footprint_bytes = peak * (uint64_t)p->chunk_bytes;
    prof->max_ws_chunks = eng_timeline_max_ws(rc.tl);
    prof->oracle.peak_resident = peak;
    st = GMUX_OK;
out_close:
    ctx_close(&rc);
    if (st != GMUX_OK)
        sim_profile_clear(prof);
    return st;
}

void sim_profile_clear(sim_profile_t *prof)
{
    if (prof->task_names) {
        for (uint32_t t = 0; t < prof->oracle.ntasks; t++)
            free(prof->task_names[t]);
        free(prof->task_names);
    }
    sim_refstr_destroy(prof->refs);
    sim_result_clear(&prof->oracle);
    memset(prof, 0, sizeof(*prof));
}

static uint64_t div_ceil_ns(double bytes, double bps)
{
    return sim_ns_ceil(bytes * 1e9 / bps);
}

/* A policy's clock past SIM_MAX_TIME_NS: the run is refused. */
static gmux_status_t time_check(uint64_t now, char *err, size_t errlen)
{
    if (now < SIM_MAX_TIME_NS)
        return GMUX_OK;
    snprintf(err, errlen,
             "the simulated time passes 2^63 ns (292 years): bandwidths too low or costs too "
             "high for this input");
    return GMUX_ERR_RANGE;
}

/* Room for the resident-block mask of every chunk id handed out so far. */
static gmux_status_t blocks_fit(run_ctx_t *rc)
{
    uint32_t lim = eng_regions_chunk_limit(rc->regs);
    if (lim <= rc->nblocks)
        return GMUX_OK;
    uint32_t n = rc->nblocks ? rc->nblocks : 1024;
    while (n < lim)
        n = n > UINT32_MAX / 2 ? lim : n * 2;
    uint32_t *b = realloc(rc->blocks, (size_t)n * sizeof(*b));
    if (!b)
        return GMUX_ERR_NOMEM;
    memset(b + rc->nblocks, 0, (size_t)(n - rc->nblocks) * sizeof(*b));
    rc->blocks = b;
    rc->nblocks = n;
    return GMUX_OK;
}

/*
 * Demand paging: the UVM driver's fault batches, FIFO (or LRU) eviction.
 * Residency is tracked per block of a chunk (sim/faults.h): a chunk with any
 * block on the device takes one slot; a launch faults on a chunk when it
 * touches a block that is not there (again if an earlier launch brought
 * other blocks), and the fault moves the touched blocks grown by the
 * driver's density rule. Eviction drops the whole chunk; a dirty chunk
 * writes back the blocks it has on the device.
 */
static gmux_status_t run_demand(run_ctx_t *rc, const sim_params_t *p, const sim_hooks_t *h,
                                uint64_t cap_chunks, sim_result_t *r, char *err, size_t errlen)
{
    gmux_status_t st = eng_place_create(rc->regs, p->uvm_lru ? ENG_PLACE_LRU : ENG_PLACE_FIFO,
                                        cap_chunks, &rc->place);
    if (st != GMUX_OK) {
        snprintf(err, errlen, "%s", gmux_status_str(st));
        return st;
    }
    sim_fault_model_t fm;
    sim_fault_model_init(&fm, p);
    uint64_t batch = (uint64_t)p->fault_batch;
    uint64_t now = 0, last_slice = 0;
    for (;;) {
        st = eng_timeline_fill(rc->tl);
        if (st == GMUX_OK)
            st = blocks_fit(rc);
        if (st != GMUX_OK)
            return plan_error(rc, st, err, errlen);
        const eng_entry_t *e = eng_timeline_peek(rc->tl, 0);
        if (!e)
            break;
        if (e->kind == ENG_ITEM_FREE) {
            release_region(rc, e->region, NULL);
            eng_timeline_pop(rc->tl);
            continue;
        }
        const uint32_t *tr = eng_timeline_truth(rc->tl, e);
        const uint32_t *tb = eng_timeline_blocks(rc->tl, e);
        uint64_t in_batch = 0;
        for (uint32_t i = 0; i < e->ntrefs; i++) {
            uint32_t c = ENG_REF_CHUNK(tr[i]);
            uint32_t *res = &rc->blocks[c];
            uint32_t mv = sim_fault_blocks(&fm, *res, tb ? tb[i] : fm.full);
            if (!mv)
                continue;
            if (in_batch == 0)
                now = sim_ns_add(now, (uint64_t)p->fault_latency_ns); /* a new fault batch */
            in_batch = (in_batch + 1) % batch;
            r->faults++;
            if (*res == 0) { /* not on the device: it takes a slot */
                if (eng_place_resident(rc->place) >= cap_chunks) {
                    uint32_t v = eng_place_victim(rc->place, e->pos);
                    if (v == ENG_NONE) {
                        snprintf(err, errlen, "a launch touches more chunks than the device holds");
                        return GMUX_ERR_CAPACITY;
                    }
                    eng_chunk_t *vx = eng_regions_chunk(rc->regs, v);
                    if (vx->flags & ENG_CHUNK_DIRTY) {
                        uint64_t wb = sim_fault_bytes(&fm, rc->blocks[v]);
                        now = sim_ns_add(now, div_ceil_ns((double)wb, p->d2h_bps));
                        r->bytes_d2h += wb;
                        vx->flags &= ~(uint32_t)ENG_CHUNK_DIRTY;
                    }
                    rc->blocks[v] = 0;
                    eng_place_remove(rc->place, v);
                }
                st = eng_place_insert(rc->place, c);
                if (st != GMUX_OK)
                    return st;
            }
            /* faulted data moves at the demand-paging rate, measured far
             * below the prefetch bandwidth (docs/sim.md, calibration) */
            uint64_t bytes = sim_fault_bytes(&fm, mv);
            *res |= mv;
            now = sim_ns_add(now, div_ceil_ns((double)bytes, p->fault_bps));
            r->bytes_h2d += bytes;
        }
        now = sim_ns_add(now, e->time_ns);
        st = time_check(now, err, errlen);
        if (st != GMUX_OK)
            return st;
        for (uint32_t i = 0; i < e->ntrefs; i++) {
            uint32_t c = ENG_REF_CHUNK(tr[i]);
            if (tr[i] & ENG_REF_WRITE)
                eng_regions_chunk(rc->regs, c)->flags |= ENG_CHUNK_DIRTY;
            eng_place_touch(rc->place, c);
        }
        if (eng_place_resident(rc->place) > r->peak_resident)
            r->peak_resident = eng_place_resident(rc->place);
        count_launch(r, h, "demand", e->task, e->time_ns, now, e->slice != last_slice);
        last_slice = e->slice;
        eng_timeline_pop(rc->tl);
    }
    return GMUX_OK;
}

/*
 * A mispredicted chunk (or missing blocks of a chunk a fault brought in part
 * of) is faulted in by the kernel on a GPU: the engine moves the blocks the
 * fault moves (sim/faults.h: the touched blocks grown by the density rule;
 * the whole chunk with fault_block = chunk, as before) on the host-to-device
 * copy engine at prefetch bandwidth, and the launch waits for that fill. The
 * copy engine is busy for the copy only; what the demand-paging rate costs
 * beyond it (fault servicing) stalls the launch: charge the difference
 * between the two rates for those bytes.
 */
static uint64_t fault_extra(const sim_fault_model_t *fm, const sim_params_t *p,
                            const eng_step_t *step)
{
    if (p->fault_bps >= p->h2d_bps)
        return 0;
    uint64_t ns = 0;
    for (uint32_t k = 0; k < step->faults; k++) {
        double bytes = (double)sim_fault_bytes(fm, step->fault_moved[k]);
        ns = sim_ns_add(ns, div_ceil_ns(bytes, p->fault_bps) - div_ceil_ns(bytes, p->h2d_bps));
    }
    return ns;
}

static uint32_t engine_fault_blocks(void *ctx, uint32_t resident, uint32_t touched)
{
    return sim_fault_blocks(ctx, resident, touched);
}

/* The engine on the simulated device. */
static gmux_status_t run_engine(const sim_params_t *p, const sim_hooks_t *h, sim_policy_t pol,
                                uint64_t capacity, sim_result_t *r, char *err, size_t errlen)
{
    if ((uint64_t)p->fault_reserve >= capacity / (uint64_t)p->chunk_bytes) {
        snprintf(err, errlen,
                 "fault_reserve (%.0f chunks) leaves no room in a device of %" PRIu64 " chunks",
                 p->fault_reserve, capacity / (uint64_t)p->chunk_bytes);
        return GMUX_ERR_RANGE;
    }
    sim_source_t *src = NULL;
    gmux_status_t st = h->open(h->open_ctx, &src, err, errlen);
    if (st != GMUX_OK)
        return st;
    st = result_init(r, src->ntasks);
    if (st != GMUX_OK) {
        sim_source_close(src);
        return st;
    }
    sim_device_t dev;
    sim_device_init(&dev, p);
    eng_backend_t be = sim_device_backend(&dev);
    sim_fault_model_t fm;
    sim_fault_model_init(&fm, p);
    sim_feed_t feed = {src, NULL, (uint64_t)p->chunk_bytes};
    eng_engine_params_t ep = {.ntasks = src->ntasks,
                              .policy = pol == SIM_POLICY_PROACTIVE ? ENG_PLACE_OPT : ENG_PLACE_LRU,
                              .capacity_bytes = capacity,
                              .chunk_size = (uint64_t)p->chunk_bytes,
                              .lookahead = (uint32_t)p->lookahead,
                              .prefetch_slices = (uint32_t)p->prefetch_slices,
                              .batch_chunks = (uint32_t)p->batch_chunks,
                              .reserve_chunks = (uint32_t)p->fault_reserve,
                              .quantum_ns = (uint64_t)p->quantum_ns,
                              .feed = {feed_next, &feed},
                              .fault_block = sim_params_fault_block(p),
                              .fault_blocks = engine_fault_blocks,
                              .fault_ctx = &fm};
    if (p->wb_aware != 0) {
        ep.h2d_bps = (uint64_t)p->h2d_bps;
        ep.d2h_bps = (uint64_t)p->d2h_bps;
        ep.wb_slack_ns = (uint64_t)p->wb_slack_ns;
        ep.clean_chunks = (uint32_t)p->wb_clean;
    }
    eng_engine_t *eng = NULL;
    const sim_predictor_hooks_t *ph = h->predictor;
    void *pred = NULL;
    if (ph) {
        st = ph->begin(ph->ctx, src, capacity, &pred, err, errlen);
        if (st != GMUX_OK) {
            sim_source_close(src);
            return st;
        }
        ep.predict = ph->predict;
        ep.predict_ctx = pred;
    }
    st = eng_engine_create(&ep, &be, &eng);
    if (st == GMUX_OK)
        st = apply_classes(eng_engine_sched(eng), h, src->ntasks);
    if (st != GMUX_OK) {
        snprintf(err, errlen, "cannot set up the engine: %s", gmux_status_str(st));
        goto out;
    }
    feed.regs = eng_engine_regions(eng);
    if (ph)
        ph->attach(pred, eng_engine_regions(eng));
    const char *what = sim_policy_name(pol);
    uint64_t batch = (uint64_t)p->fault_batch;
    for (;;) {
        eng_step_t step;
        st = eng_engine_next(eng, &step);
        if (st == GMUX_ERR_NOT_FOUND) {
            st = GMUX_OK;
            break;
        }
        if (st == GMUX_ERR_CAPACITY) {
            snprintf(err, errlen, "a launch touches more chunks than the device holds");
            goto out;
        }
        if (st != GMUX_OK) {
            if (src->error[0])
                snprintf(err, errlen, "%s", src->error);
            else
                snprintf(err, errlen, "%s", gmux_status_str(st));
            goto out;
        }
        uint64_t start = dev.now_ns > step.wait ? dev.now_ns : step.wait;
        start =
            sim_ns_add(start, sim_fault_wait_ns(step.faults, batch, (uint64_t)p->fault_latency_ns));
        start = sim_ns_add(start, fault_extra(&fm, p, &step));
        dev.now_ns = sim_ns_add(start, step.time_ns);
        r->faults += step.faults;
        st = time_check(dev.now_ns, err, errlen);
        if (st != GMUX_OK)
            goto out;
        st = eng_engine_complete(eng, dev.now_ns);
        if (st == GMUX_OK && ph)
            st = ph->done(pred);
        if (st != GMUX_OK)
            goto out;
        uint64_t res = eng_place_resident(eng_engine_placement(eng));
        if (res > r->peak_resident)
            r->peak_resident = res;
        count_launch(r, h, what, step.task, step.time_ns, dev.now_ns, step.switched);
    }
    const eng_migrate_stats_t *ms = eng_engine_stats(eng);
    r->bytes_h2d = ms->bytes_h2d;
    r->bytes_d2h = ms->bytes_d2h;
    r->replans = eng_engine_replan_stats(eng)->replans;
    r->replan_positions = eng_engine_replan_stats(eng)->positions;
    r->busy_h2d_ns = dev.busy_ns[ENG_DIR_H2D];
    r->busy_d2h_ns = dev.busy_ns[ENG_DIR_D2H];
    r->clean_bytes = ms->bytes_clean;
    r->clean_rewritten_bytes = ms->clean_rewritten;
    r->clean_freed_bytes = ms->clean_freed;
    r->clean_dropped_bytes = ms->clean_dropped;
out:
    eng_engine_destroy(eng);
    if (ph)
        ph->end(pred, r);
    sim_source_close(src);
    return st;
}

gmux_status_t sim_run(const sim_params_t *p, const sim_hooks_t *h, sim_policy_t pol,
                      uint64_t capacity_bytes, sim_result_t *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    if (capacity_bytes < (uint64_t)p->chunk_bytes) {
        snprintf(err, errlen, "device memory below one chunk");
        return GMUX_ERR_RANGE;
    }
    uint64_t cap_chunks = capacity_bytes / (uint64_t)p->chunk_bytes;
    gmux_status_t st;
    if (pol == SIM_POLICY_PROACTIVE || pol == SIM_POLICY_PROACTIVE_LRU) {
        st = run_engine(p, h, pol, cap_chunks * (uint64_t)p->chunk_bytes, r, err, errlen);
    } else if (pol == SIM_POLICY_DEMAND) {
        run_ctx_t rc;
        st = ctx_open(&rc, p, h, 1, sim_params_fault_block(p), err, errlen);
        if (st != GMUX_OK)
            return st;
        st = result_init(r, rc.src->ntasks);
        if (st == GMUX_OK)
            st = run_demand(&rc, p, h, cap_chunks, r, err, errlen);
        ctx_close(&rc);
    } else if (pol == SIM_POLICY_ORACLE) {
        sim_params_t q = *p;
        q.bound_max_refs = 0; /* the reference string is not needed */
        sim_profile_t prof;
        st = sim_profile_run(&q, h, &prof, err, errlen);
        if (st == GMUX_OK) {
            *r = prof.oracle;
            prof.oracle.tasks = NULL;
            sim_profile_clear(&prof);
        }
    } else {
        snprintf(err, errlen, "unknown policy");
        return GMUX_ERR_INVALID;
    }
    if (st != GMUX_OK)
        sim_result_clear(r);
    return st;
}
