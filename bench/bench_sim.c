/*
 * Simulator speed: simulated launches per second on one core for a
 * 10-million-launch trace streamed from a generator (never stored), and the
 * process's peak memory after 1 million and after 10 million launches (it
 * must not grow with launches). One JSON line per measurement.
 *
 * The trace: 8 tasks, each with 16 regions of 64 chunks of 2 MiB (16 GiB in
 * all), launches of 20 us touching 2 chunks (a sweep through the task's
 * regions plus one scattered read), device memory for half of the footprint.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/clock.h"
#include "sim/run.h"

#define NTASKS   8
#define NREGIONS 16
#define NCHUNKS  64
#define CHUNK    (2ull << 20)

typedef struct gen {
    sim_source_t base;
    uint64_t per_task; /* launches per task */
    uint64_t done[NTASKS];
    uint32_t allocs[NTASKS];
    uint64_t rng[NTASKS];
    sim_range_t ranges[NTASKS][2];
} gen_t;

static gmux_status_t gen_next(sim_source_t *src, uint32_t task, sim_event_t *ev)
{
    gen_t *g = (gen_t *)src;
    if (g->allocs[task] < NREGIONS) {
        uint32_t r = g->allocs[task]++;
        ev->kind = SIM_EV_ALLOC;
        ev->u.alloc = (sim_alloc_ev_t){r, ((uint64_t)r + 1) << 40, NCHUNKS * CHUNK};
        return GMUX_OK;
    }
    if (g->done[task] >= g->per_task)
        return GMUX_ERR_NOT_FOUND;
    uint64_t k = g->done[task]++;
    uint64_t *s = &g->rng[task];
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t seq = k % (NREGIONS * NCHUNKS);
    uint64_t rnd = (*s >> 33) % (NREGIONS * NCHUNKS);
    g->ranges[task][0] =
        (sim_range_t){((seq / NCHUNKS + 1) << 40) + (seq % NCHUNKS) * CHUNK, CHUNK, ENG_ACCESS_RW};
    g->ranges[task][1] =
        (sim_range_t){((rnd / NCHUNKS + 1) << 40) + (rnd % NCHUNKS) * CHUNK, 4096, ENG_ACCESS_READ};
    memset(ev, 0, sizeof(*ev));
    ev->kind = SIM_EV_LAUNCH;
    ev->u.launch.time_ns = 20000;
    ev->u.launch.nranges = 2;
    ev->u.launch.ranges = g->ranges[task];
    return GMUX_OK;
}

static void gen_close(sim_source_t *src)
{
    free(src);
}

static const sim_source_ops_t gen_ops = {gen_next, gen_close};

static gmux_status_t gen_open(void *ctx, sim_source_t **src_p, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    gen_t *g = calloc(1, sizeof(*g));
    if (!g)
        return GMUX_ERR_NOMEM;
    g->base.ops = &gen_ops;
    g->base.ntasks = NTASKS;
    g->per_task = *(const uint64_t *)ctx / NTASKS;
    for (int t = 0; t < NTASKS; t++)
        g->rng[t] = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1);
    *src_p = &g->base;
    return GMUX_OK;
}

static long peak_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int measure(uint64_t launches, sim_policy_t pol)
{
    sim_params_t p;
    sim_params_default(&p);
    p.bound_max_refs = 0;
    sim_hooks_t h = {.open = gen_open, .open_ctx = &launches};
    uint64_t cap = NTASKS * NREGIONS * NCHUNKS * CHUNK / 2;
    sim_result_t r;
    char err[256];
    uint64_t t0 = com_clock_ns();
    gmux_status_t st = sim_run(&p, &h, pol, cap, &r, err, sizeof(err));
    uint64_t dt = com_clock_ns() - t0;
    if (st != GMUX_OK) {
        fprintf(stderr, "bench_sim: %s\n", err);
        return 1;
    }
    printf("{\"bench\":\"sim_speed\",\"policy\":\"%s\",\"launches\":%" PRIu64
           ",\"wall_s\":%.3f,\"launches_per_s\":%.0f,\"peak_rss_kib\":%ld,"
           "\"simulated_makespan_s\":%.3f,\"bytes_h2d\":%" PRIu64 "}\n",
           sim_policy_name(pol), r.launches, (double)dt / 1e9,
           (double)r.launches / ((double)dt / 1e9), peak_kib(), (double)r.makespan_ns / 1e9,
           r.bytes_h2d);
    fflush(stdout);
    sim_result_clear(&r);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t big = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000ull;
    int rc = 0;
    /* 1M first, then 10M: the second peak shows whether memory grows with launches */
    rc |= measure(big / 10, SIM_POLICY_PROACTIVE);
    rc |= measure(big, SIM_POLICY_PROACTIVE);
    rc |= measure(big, SIM_POLICY_DEMAND);
    rc |= measure(big, SIM_POLICY_ORACLE);
    return rc;
}
