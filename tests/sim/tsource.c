/* In-memory sim source for tests. */
#include "tsource.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trand.h"

typedef struct tsrc {
    sim_source_t base;
    const tsrc_spec_t *spec;
    uint32_t *next; /* per task: next event */
} tsrc_t;

void tsrc_spec_init(tsrc_spec_t *s, uint32_t ntasks)
{
    s->ntasks = ntasks;
    s->tasks = calloc(ntasks, sizeof(*s->tasks));
}

void tsrc_spec_free(tsrc_spec_t *s)
{
    for (uint32_t t = 0; t < s->ntasks; t++) {
        free(s->tasks[t].ev);
        free(s->tasks[t].ranges);
    }
    free(s->tasks);
    memset(s, 0, sizeof(*s));
}

static sim_event_t *push(tsrc_task_t *t)
{
    if (t->nev == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->ev = realloc(t->ev, t->cap * sizeof(*t->ev));
    }
    sim_event_t *e = &t->ev[t->nev++];
    memset(e, 0, sizeof(*e));
    return e;
}

void tsrc_alloc(tsrc_spec_t *s, uint32_t task, uint64_t id, uint64_t base, uint64_t size)
{
    sim_event_t *e = push(&s->tasks[task]);
    e->kind = SIM_EV_ALLOC;
    e->u.alloc = (sim_alloc_ev_t){id, base, size};
}

void tsrc_free(tsrc_spec_t *s, uint32_t task, uint64_t id)
{
    sim_event_t *e = push(&s->tasks[task]);
    e->kind = SIM_EV_FREE;
    e->u.free.id = id;
}

void tsrc_launch(tsrc_spec_t *s, uint32_t task, uint64_t time_ns, uint32_t nr, const sim_range_t *r)
{
    tsrc_task_t *t = &s->tasks[task];
    if (t->nranges + nr > t->rcap) {
        t->rcap = (t->nranges + nr) * 2 + 16;
        t->ranges = realloc(t->ranges, t->rcap * sizeof(*t->ranges));
    }
    memcpy(t->ranges + t->nranges, r, nr * sizeof(*r));
    sim_event_t *e = push(t);
    e->kind = SIM_EV_LAUNCH;
    e->u.launch.time_ns = time_ns;
    e->u.launch.nranges = nr;
    /* ranges pointer is fixed up on replay (the array may move while building) */
    e->u.launch.ranges = (const sim_range_t *)(uintptr_t)t->nranges;
    t->nranges += nr;
}

void tsrc_random(tsrc_spec_t *s, uint64_t seed, uint32_t ntasks, uint32_t nregions,
                 uint32_t max_chunks, uint32_t nlaunch, uint32_t max_ws, uint64_t chunk)
{
    uint64_t st = seed * 2654435761u + 88172645463325252ull;
    tsrc_spec_init(s, ntasks);
    for (uint32_t t = 0; t < ntasks; t++) {
        uint32_t *nch = calloc(nregions, sizeof(*nch));
        uint64_t *ids = calloc(nregions, sizeof(*ids));
        uint64_t next_id = 1;
        for (uint32_t r = 0; r < nregions; r++) {
            nch[r] = 1 + (uint32_t)(trand_next(&st) % max_chunks);
            ids[r] = next_id++;
            tsrc_alloc(s, t, ids[r], (uint64_t)(r + 1) << 32, nch[r] * chunk);
        }
        for (uint32_t l = 0; l < nlaunch; l++) {
            if (trand_next(&st) % 16 == 0) { /* free and reallocate a region */
                uint32_t r = (uint32_t)(trand_next(&st) % nregions);
                tsrc_free(s, t, ids[r]);
                nch[r] = 1 + (uint32_t)(trand_next(&st) % max_chunks);
                ids[r] = next_id++;
                tsrc_alloc(s, t, ids[r], (uint64_t)(r + 1) << 32, nch[r] * chunk);
            }
            sim_range_t rg[16];
            uint32_t n = 1 + (uint32_t)(trand_next(&st) % (max_ws < 16 ? max_ws : 16));
            for (uint32_t i = 0; i < n; i++) {
                uint32_t r = (uint32_t)(trand_next(&st) % nregions);
                uint64_t c = trand_next(&st) % nch[r];
                uint64_t off = trand_next(&st) % chunk;
                rg[i].addr = ((uint64_t)(r + 1) << 32) + c * chunk + off;
                rg[i].len = 1 + trand_next(&st) % (chunk - off);
                rg[i].mode = (uint8_t)(1 + trand_next(&st) % 3);
            }
            tsrc_launch(s, t, 1000 + trand_next(&st) % 100000, n, rg);
        }
        free(nch);
        free(ids);
    }
}

static gmux_status_t tsrc_next(sim_source_t *src, uint32_t task, sim_event_t *ev)
{
    tsrc_t *ts = (tsrc_t *)src;
    if (task >= ts->spec->ntasks)
        return GMUX_ERR_INVALID;
    const tsrc_task_t *t = &ts->spec->tasks[task];
    if (ts->next[task] >= t->nev)
        return GMUX_ERR_NOT_FOUND;
    *ev = t->ev[ts->next[task]++];
    if (ev->kind == SIM_EV_LAUNCH)
        ev->u.launch.ranges = t->ranges + (uintptr_t)ev->u.launch.ranges;
    return GMUX_OK;
}

static void tsrc_close(sim_source_t *src)
{
    tsrc_t *ts = (tsrc_t *)src;
    free(ts->next);
    free(ts);
}

static const sim_source_ops_t tsrc_ops = {tsrc_next, tsrc_close};

gmux_status_t tsrc_open(void *ctx, sim_source_t **src_p, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    tsrc_t *ts = calloc(1, sizeof(*ts));
    ts->spec = ctx;
    ts->next = calloc(ts->spec->ntasks, sizeof(*ts->next));
    ts->base.ops = &tsrc_ops;
    ts->base.ntasks = ts->spec->ntasks;
    *src_p = &ts->base;
    return GMUX_OK;
}
