/*
 * Randomised properties of simulated runs: laws docs/sim.md and
 * docs/sim-bound.md state for every policy and run, checked on many small
 * random workloads (tsource.h) at random chunk and fault-block sizes,
 * bandwidths and capacities. test_run.c already checks that no policy beats
 * the bound and that the peak residency stays within the capacity; these are
 * the other laws. Seeded and reproducible: GMUX_PROP_SEED=S runs case S
 * alone (GMUX_PROP_CASES=N runs N cases from it); a failure prints its case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/predict.h"
#include "sim/run.h"
#include "tsource.h"

/* One random case: the workload and the simulator's parameters. */
typedef struct pcase {
    uint64_t seed;
    tsrc_spec_t spec;
    sim_params_t p;
} pcase_t;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void case_make(pcase_t *c, uint64_t seed)
{
    uint64_t s = seed;
    c->seed = seed;
    static const double chunks[] = {65536.0, 2097152.0};
    static const double blocks[] = {4096.0, 16384.0, 65536.0, 2097152.0};
    sim_params_default(&c->p);
    c->p.chunk_bytes = chunks[splitmix(&s) % 2];
    c->p.fault_block = blocks[splitmix(&s) % 4];
    c->p.quantum_ns = 50000.0 * (double)(1 + splitmix(&s) % 8);
    c->p.lookahead = (double)(8 + splitmix(&s) % 64);
    c->p.batch_chunks = (double)(1 + splitmix(&s) % 8);
    c->p.fault_batch = (double)(1 + splitmix(&s) % 8);
    c->p.prefetch_slices = (double)(splitmix(&s) % 3);
    /* bandwidths from 1/100 of the defaults up, write-backs slower or faster,
     * faults slower or (at times) faster than copies */
    c->p.h2d_bps /= (double)(1 + splitmix(&s) % 100);
    c->p.d2h_bps = c->p.h2d_bps / (0.5 + (double)(splitmix(&s) % 8) / 2.0);
    c->p.fault_bps = c->p.h2d_bps / (0.5 + (double)(splitmix(&s) % 20) / 2.0);
    if (splitmix(&s) % 2)
        c->p.xfer_call_ns = 0;
    uint32_t ntasks = 1 + (uint32_t)(splitmix(&s) % 3);
    uint32_t nregions = 1 + (uint32_t)(splitmix(&s) % 4);
    uint32_t max_chunks = 1 + (uint32_t)(splitmix(&s) % 5);
    uint32_t nlaunch = 10 + (uint32_t)(splitmix(&s) % 40);
    uint32_t max_ws = 1 + (uint32_t)(splitmix(&s) % 5);
    tsrc_random(&c->spec, splitmix(&s), ntasks, nregions, max_chunks, nlaunch, max_ws,
                (uint64_t)c->p.chunk_bytes);
}

static int g_failed;

/* A law that does not hold: say the case (to rerun it alone) and what broke. */
#define LAW(c, cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "case %" PRIu64 " (GMUX_PROP_SEED=%" PRIu64 "): %s: ", (c)->seed,      \
                    (c)->seed, #cond);                                                             \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            g_failed++;                                                                            \
        }                                                                                          \
    } while (0)

/* Distinct chunk lifetimes the workload touches (a chunk of a region freed and
 * allocated again counts again), and the distinct fault blocks among them. */
typedef struct touched {
    uint64_t chunks;
    uint64_t blocks;
} touched_t;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static touched_t count_touched(const pcase_t *c)
{
    uint64_t cs = (uint64_t)c->p.chunk_bytes, bs = sim_params_fault_block(&c->p);
    size_t n = 0, cap = 64;
    uint64_t *keys = malloc(cap * sizeof(*keys));
    for (uint32_t t = 0; t < c->spec.ntasks; t++) {
        const tsrc_task_t *tk = &c->spec.tasks[t];
        uint64_t ids[64] = {0}; /* the live allocation at each base (r + 1) << 32 */
        for (uint32_t i = 0; i < tk->nev; i++) {
            const sim_event_t *e = &tk->ev[i];
            if (e->kind == SIM_EV_ALLOC) {
                ids[(e->u.alloc.base >> 32) % 64] = e->u.alloc.id;
                continue;
            }
            if (e->kind != SIM_EV_LAUNCH)
                continue;
            const sim_range_t *r = tk->ranges + (uintptr_t)e->u.launch.ranges;
            for (uint32_t k = 0; k < e->u.launch.nranges; k++) {
                uint64_t off = r[k].addr & 0xffffffffull;
                uint64_t id = ids[(r[k].addr >> 32) % 64];
                for (uint64_t b = off / bs; b <= (off + r[k].len - 1) / bs; b++) {
                    if (n == cap)
                        keys = realloc(keys, (cap *= 2) * sizeof(*keys));
                    /* task, allocation, chunk, block within it */
                    keys[n++] =
                        (uint64_t)t << 56 | id << 32 | (b * bs / cs) << 8 | (b * bs % cs / bs);
                }
            }
        }
    }
    qsort(keys, n, sizeof(*keys), cmp_u64);
    touched_t tc = {0, 0};
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && keys[i] == keys[i - 1])
            continue;
        tc.blocks++;
        if (i == 0 || keys[i] >> 8 != keys[i - 1] >> 8)
            tc.chunks++;
    }
    free(keys);
    return tc;
}

typedef struct prun {
    const char *name;
    sim_policy_t pol;
    int wb_aware;
    int learned;
} prun_t;

static const prun_t g_runs[] = {
    {"demand", SIM_POLICY_DEMAND, 1, 0},
    {"proactive", SIM_POLICY_PROACTIVE, 1, 0},
    {"proactive-lru", SIM_POLICY_PROACTIVE_LRU, 1, 0},
    {"proactive wb_aware=0", SIM_POLICY_PROACTIVE, 0, 0},
    {"proactive learned", SIM_POLICY_PROACTIVE, 1, 1},
};
#define NRUNS (sizeof(g_runs) / sizeof(g_runs[0]))

static gmux_status_t run_one(const pcase_t *c, const prun_t *pr, uint64_t cap, sim_result_t *r)
{
    sim_params_t q = c->p;
    q.wb_aware = pr->wb_aware;
    sim_predict_opts_t o = {.share_unit = sim_params_fault_block(&q)};
    sim_predictor_hooks_t ph;
    sim_predict_hooks(&o, &ph);
    sim_hooks_t h = {.open = tsrc_open, .open_ctx = (void *)&c->spec};
    if (pr->learned)
        h.predictor = &ph;
    char err[256];
    gmux_status_t st = sim_run(&q, &h, pr->pol, cap, r, err, sizeof(err));
    if (st != GMUX_OK && st != GMUX_ERR_CAPACITY)
        fprintf(stderr, "case %" PRIu64 " %s: %s\n", c->seed, pr->name, err);
    return st;
}

static int results_equal(const sim_result_t *a, const sim_result_t *b)
{
    if (a->makespan_ns != b->makespan_ns || a->bytes_h2d != b->bytes_h2d ||
        a->bytes_d2h != b->bytes_d2h || a->faults != b->faults || a->launches != b->launches ||
        a->slices != b->slices || a->peak_resident != b->peak_resident || a->ntasks != b->ntasks ||
        a->busy_h2d_ns != b->busy_h2d_ns || a->busy_d2h_ns != b->busy_d2h_ns ||
        a->replans != b->replans || a->pred_bytes != b->pred_bytes ||
        a->pred_hit_bytes != b->pred_hit_bytes || a->clean_bytes != b->clean_bytes ||
        a->clean_rewritten_bytes != b->clean_rewritten_bytes ||
        a->clean_freed_bytes != b->clean_freed_bytes ||
        a->clean_dropped_bytes != b->clean_dropped_bytes)
        return 0;
    return memcmp(a->tasks, b->tasks, a->ntasks * sizeof(*a->tasks)) == 0;
}

/* The laws of one run of a policy against the oracle and the bound. */
static void check_run(const pcase_t *c, const prun_t *pr, uint64_t cap_chunks,
                      const sim_profile_t *prof, const sim_result_t *r)
{
    const sim_result_t *o = &prof->oracle;
    /* every policy runs the same plan: the same launches and compute per task */
    LAW(c, r->ntasks == o->ntasks, "%s", pr->name);
    uint64_t last = 0;
    for (uint32_t t = 0; t < r->ntasks && t < o->ntasks; t++) {
        LAW(c, r->tasks[t].launches == o->tasks[t].launches, "%s cap %" PRIu64 " task %u", pr->name,
            cap_chunks, t);
        LAW(c, r->tasks[t].compute_ns == o->tasks[t].compute_ns, "%s cap %" PRIu64 " task %u",
            pr->name, cap_chunks, t);
        LAW(c, r->tasks[t].finish_ns >= o->tasks[t].finish_ns, "%s cap %" PRIu64 " task %u",
            pr->name, cap_chunks, t);
        if (r->tasks[t].finish_ns > last)
            last = r->tasks[t].finish_ns;
    }
    /* the makespan is the end of the last launch */
    LAW(c, r->makespan_ns == last, "%s cap %" PRIu64 ": makespan %" PRIu64 " last %" PRIu64,
        pr->name, cap_chunks, r->makespan_ns, last);
    LAW(c, r->peak_resident <= cap_chunks, "%s", pr->name);
    if (pr->pol == SIM_POLICY_DEMAND)
        return;
    /* the copy engines' busy time is their bytes at their bandwidth, plus a
     * call cost per transfer (none for faults) and a rounding up each */
    double th = (double)r->bytes_h2d * 1e9 / c->p.h2d_bps;
    double td = (double)r->bytes_d2h * 1e9 / c->p.d2h_bps;
    LAW(c, (double)r->busy_h2d_ns + 1 >= th, "%s cap %" PRIu64 ": busy %" PRIu64 " bytes %.0f ns",
        pr->name, cap_chunks, r->busy_h2d_ns, th);
    LAW(c, (double)r->busy_d2h_ns + 1 >= td, "%s cap %" PRIu64 ": busy %" PRIu64 " bytes %.0f ns",
        pr->name, cap_chunks, r->busy_d2h_ns, td);
    if (c->p.xfer_call_ns == 0) {
        uint64_t bs = sim_params_fault_block(&c->p);
        LAW(c, (double)r->busy_h2d_ns <= th + (double)(r->bytes_h2d / bs) + 1,
            "%s cap %" PRIu64 ": busy %" PRIu64 " bytes %.0f ns", pr->name, cap_chunks,
            r->busy_h2d_ns, th);
        LAW(c, (double)r->busy_d2h_ns <= td + (double)(r->bytes_d2h / bs) + 1,
            "%s cap %" PRIu64 ": busy %" PRIu64 " bytes %.0f ns", pr->name, cap_chunks,
            r->busy_d2h_ns, td);
    }
    /* cleaning's bytes are written back; each cleaning ends at most once,
     * written again, freed or dropped (docs/sim.md, "Cleaning") */
    uint64_t ends = r->clean_rewritten_bytes + r->clean_freed_bytes + r->clean_dropped_bytes;
    LAW(c, ends <= r->clean_bytes && r->clean_bytes <= r->bytes_d2h,
        "%s cap %" PRIu64 ": cleaned %" PRIu64 " ended %" PRIu64 " written back %" PRIu64, pr->name,
        cap_chunks, r->clean_bytes, ends, r->bytes_d2h);
    /* every fill precedes the launch that needs it: host to device is busy
     * within the makespan */
    LAW(c, r->busy_h2d_ns <= r->makespan_ns,
        "%s cap %" PRIu64 ": busy %" PRIu64 " makespan %" PRIu64, pr->name, cap_chunks,
        r->busy_h2d_ns, r->makespan_ns);
    /* the recorded ranges as the prediction: nothing to fault */
    if (!pr->learned)
        LAW(c, r->faults == 0, "%s cap %" PRIu64 ": %" PRIu64 " faults", pr->name, cap_chunks,
            r->faults);
}

/* With the whole footprint on the device nothing is evicted: each touched
 * byte moves in once and nothing moves out (docs/sim.md, "Model"). */
static void check_roomy(const pcase_t *c, const prun_t *pr, const touched_t *tc,
                        const sim_result_t *r)
{
    uint64_t cs = (uint64_t)c->p.chunk_bytes, bs = sim_params_fault_block(&c->p);
    /* (write-back-aware cleaning copies dirty chunks back while the
     * device-to-host engine is idle, room or not: docs/sim.md, "Cleaning") */
    LAW(c, r->bytes_d2h == 0 || (pr->pol != SIM_POLICY_DEMAND && pr->wb_aware),
        "%s: %" PRIu64 " bytes written back with room for everything", pr->name, r->bytes_d2h);
    LAW(c, r->bytes_h2d >= tc->blocks * bs && r->bytes_h2d <= tc->chunks * cs,
        "%s: %" PRIu64 " bytes in, touched %" PRIu64 " blocks in %" PRIu64 " chunks", pr->name,
        r->bytes_h2d, tc->blocks, tc->chunks);
    if (pr->pol != SIM_POLICY_DEMAND && !pr->learned)
        LAW(c, r->bytes_h2d == tc->chunks * cs,
            "%s: %" PRIu64 " bytes in, %" PRIu64 " chunks touched", pr->name, r->bytes_h2d,
            tc->chunks);
    if (pr->pol == SIM_POLICY_DEMAND && bs == cs)
        LAW(c, r->faults == tc->chunks && r->bytes_h2d == tc->chunks * cs,
            "%s: %" PRIu64 " faults, %" PRIu64 " chunks touched", pr->name, r->faults, tc->chunks);
}

static void dump_case(const pcase_t *c)
{
    for (uint32_t t = 0; t < c->spec.ntasks; t++) {
        const tsrc_task_t *tk = &c->spec.tasks[t];
        for (uint32_t i = 0; i < tk->nev; i++) {
            const sim_event_t *e = &tk->ev[i];
            if (e->kind == SIM_EV_ALLOC)
                fprintf(stderr, "t%u alloc id %lu base %lx size %lu\n", t,
                        (unsigned long)e->u.alloc.id, (unsigned long)e->u.alloc.base,
                        (unsigned long)e->u.alloc.size);
            else if (e->kind == SIM_EV_FREE)
                fprintf(stderr, "t%u free id %lu\n", t, (unsigned long)e->u.free.id);
            else {
                const sim_range_t *r = tk->ranges + (uintptr_t)e->u.launch.ranges;
                fprintf(stderr, "t%u launch %lu ns:", t, (unsigned long)e->u.launch.time_ns);
                for (uint32_t k = 0; k < e->u.launch.nranges; k++)
                    fprintf(stderr, " %lx+%lu m%u", (unsigned long)r[k].addr,
                            (unsigned long)r[k].len, r[k].mode);
                fprintf(stderr, "\n");
            }
        }
    }
}

static void check_case(uint64_t seed)
{
    pcase_t c;
    case_make(&c, seed);
    if (getenv("GMUX_PROP_DUMP"))
        dump_case(&c);
    sim_hooks_t h = {.open = tsrc_open, .open_ctx = &c.spec};
    char err[256];
    sim_profile_t prof;
    assert_int_equal(sim_profile_run(&c.p, &h, &prof, err, sizeof(err)), GMUX_OK);
    uint64_t cs = (uint64_t)c.p.chunk_bytes;
    uint64_t foot = prof.footprint_bytes / cs;
    uint64_t lo = prof.max_ws_chunks ? prof.max_ws_chunks : 1;
    touched_t tc = count_touched(&c);
    /* the oracle is the sum of compute times */
    uint64_t compute = 0;
    for (uint32_t t = 0; t < prof.oracle.ntasks; t++)
        compute += prof.oracle.tasks[t].compute_ns;
    LAW(&c, prof.oracle.makespan_ns == compute, "oracle %" PRIu64 " compute %" PRIu64,
        prof.oracle.makespan_ns, compute);
    LAW(&c, prof.oracle.bytes_h2d == 0 && prof.oracle.bytes_d2h == 0 && prof.oracle.faults == 0,
        "oracle moved data");
    sim_bound_t prev = {0};
    for (uint64_t cap = lo; cap <= foot + 1; cap++) {
        sim_bound_t b;
        assert_int_equal(sim_bound_compute(&prof, &c.p, cap * cs, &b), GMUX_OK);
        LAW(&c, b.compute_ns == compute, "cap %" PRIu64, cap);
        /* more memory never makes the bound, or its fetch and write-back
         * minima, rise */
        if (cap > lo) {
            LAW(&c, b.fetch_bytes <= prev.fetch_bytes,
                "cap %" PRIu64 ": fetch %" PRIu64 " > %" PRIu64 " at one chunk less", cap,
                b.fetch_bytes, prev.fetch_bytes);
            LAW(&c, b.writeback_bytes <= prev.writeback_bytes,
                "cap %" PRIu64 ": write-back %" PRIu64 " > %" PRIu64 " at one chunk less", cap,
                b.writeback_bytes, prev.writeback_bytes);
            LAW(&c, b.bound_ns <= prev.bound_ns,
                "cap %" PRIu64 ": bound %" PRIu64 " > %" PRIu64 " at one chunk less", cap,
                b.bound_ns, prev.bound_ns);
        }
        if (cap >= foot) {
            /* room for everything: cold misses only, no write-back */
            LAW(&c, b.writeback_bytes == 0, "cap %" PRIu64 ": %" PRIu64, cap, b.writeback_bytes);
            LAW(&c,
                b.fetch_bytes <= tc.chunks * cs &&
                    b.fetch_bytes >= tc.blocks * sim_params_fault_block(&c.p),
                "cap %" PRIu64 ": %" PRIu64, cap, b.fetch_bytes);
        }
        prev = b;
        /* the policies at a few sizes: the smallest, the footprint, one between */
        if (cap != lo && cap != foot && cap != (lo + foot) / 2 && cap != foot + 1)
            continue;
        for (size_t i = 0; i < NRUNS; i++) {
            sim_result_t r, r2;
            gmux_status_t st = run_one(&c, &g_runs[i], cap * cs, &r);
            LAW(&c, st == GMUX_OK, "%s cap %" PRIu64 ": status %d", g_runs[i].name, cap, st);
            if (st != GMUX_OK)
                continue;
            check_run(&c, &g_runs[i], cap, &prof, &r);
            if (cap >= foot)
                check_roomy(&c, &g_runs[i], &tc, &r);
            /* determinism: the same input gives the same result */
            if (cap == lo) {
                assert_int_equal(run_one(&c, &g_runs[i], cap * cs, &r2), GMUX_OK);
                LAW(&c, results_equal(&r, &r2), "%s cap %" PRIu64 ": two runs differ",
                    g_runs[i].name, cap);
                sim_result_clear(&r2);
            }
            sim_result_clear(&r);
        }
    }
    sim_profile_clear(&prof);
    tsrc_spec_free(&c.spec);
}

static void test_laws_hold(void **state)
{
    (void)state;
    const char *s = getenv("GMUX_PROP_SEED"), *n = getenv("GMUX_PROP_CASES");
    uint64_t first = s ? strtoull(s, NULL, 0) : 1;
    uint64_t cases = n ? strtoull(n, NULL, 0) : s ? 1 : 300;
    for (uint64_t i = 0; i < cases; i++)
        check_case(first + i);
    fprintf(stderr, "%" PRIu64 " cases from seed %" PRIu64 ", %d laws broken\n", cases, first,
            g_failed);
    assert_int_equal(g_failed, 0);
}

/* A region freed while another chunk, used again only beyond the window,
 * sits on the device: with room for everything nothing is evicted, so no
 * chunk moves twice. Until 2026-12-04 the shadow pass kept the freed chunk
 * among its candidates as if it were live and, at plain OPT's tie (no use in
 * the window: both keyed "never"), evicted the live chunk of the higher id,
 * wrote it back and fetched it again (case 115 of test_laws_hold). */
static void test_freed_chunk_is_first_victim(void **state)
{
    (void)state;
    const uint64_t cs = 65536, A = 1ull << 32, B = 2ull << 32, C = 3ull << 32, D = 4ull << 32,
                   E = 5ull << 32;
    tsrc_spec_t s;
    tsrc_spec_init(&s, 1);
    tsrc_alloc(&s, 0, 1, A, cs);
    tsrc_alloc(&s, 0, 3, D, cs);
    tsrc_alloc(&s, 0, 2, B, cs); /* the highest chunk id: plain OPT's tie went to it */
    sim_range_t wb = {B, cs, ENG_ACCESS_WRITE}, ra = {A, cs, ENG_ACCESS_READ},
                rc = {C, cs, ENG_ACCESS_READ}, rb = {B, cs, ENG_ACCESS_READ},
                rd = {D, cs, ENG_ACCESS_READ}, re = {E, cs, ENG_ACCESS_READ};
    tsrc_launch(&s, 0, 1000, 1, &wb);
    tsrc_launch(&s, 0, 1000, 1, &ra);
    tsrc_launch(&s, 0, 1000, 1, &rd);
    tsrc_free(&s, 0, 1);
    tsrc_alloc(&s, 0, 4, C, cs);
    tsrc_launch(&s, 0, 1000, 1, &rc);
    tsrc_free(&s, 0, 3);
    tsrc_alloc(&s, 0, 5, E, cs);
    for (int i = 0; i < 10; i++)
        tsrc_launch(&s, 0, 1000, 1, &re);
    tsrc_launch(&s, 0, 1000, 1, &rb);
    /* the window (4 launches) ends before B's next use */
    for (int pol = SIM_POLICY_PROACTIVE; pol <= SIM_POLICY_PROACTIVE_LRU; pol++) {
        sim_params_t p;
        sim_params_default(&p);
        p.chunk_bytes = (double)cs;
        p.lookahead = 4;
        p.prefetch_slices = 0;
        p.quantum_ns = 4000; /* four launches a slice */
        p.wb_aware = 0;
        sim_hooks_t h = {.open = tsrc_open, .open_ctx = &s};
        char err[256];
        sim_profile_t prof;
        assert_int_equal(sim_profile_run(&p, &h, &prof, err, sizeof(err)), GMUX_OK);
        sim_result_t r;
        assert_int_equal(
            sim_run(&p, &h, (sim_policy_t)pol, prof.footprint_bytes, &r, err, sizeof(err)),
            GMUX_OK);
        fprintf(stderr, "%s: footprint %" PRIu64 " chunks, %" PRIu64 " bytes in, %" PRIu64 " out\n",
                sim_policy_name((sim_policy_t)pol), prof.footprint_bytes / cs, r.bytes_h2d,
                r.bytes_d2h);
        assert_int_equal(r.bytes_h2d, 5 * cs); /* each chunk once */
        assert_int_equal(r.bytes_d2h, 0);
        sim_result_clear(&r);
        sim_profile_clear(&prof);
    }
    tsrc_spec_free(&s);
    /* plain OPT: the case the laws found (a tie with a live chunk of a
     * higher id); with room for all 6 chunks each moves once */
    pcase_t c;
    case_make(&c, 115);
    c.p.wb_aware = 0;
    sim_hooks_t h = {.open = tsrc_open, .open_ctx = &c.spec};
    char err[256];
    sim_profile_t prof;
    assert_int_equal(sim_profile_run(&c.p, &h, &prof, err, sizeof(err)), GMUX_OK);
    sim_result_t r;
    assert_int_equal(
        sim_run(&c.p, &h, SIM_POLICY_PROACTIVE, prof.footprint_bytes, &r, err, sizeof(err)),
        GMUX_OK);
    fprintf(stderr,
            "case 115: footprint %" PRIu64 " chunks, %" PRIu64 " bytes in, %" PRIu64 " out\n",
            prof.footprint_bytes / (uint64_t)c.p.chunk_bytes, r.bytes_h2d, r.bytes_d2h);
    assert_int_equal(r.bytes_h2d, 6 * (uint64_t)c.p.chunk_bytes);
    assert_int_equal(r.bytes_d2h, 0);
    sim_result_clear(&r);
    sim_profile_clear(&prof);
    tsrc_spec_free(&c.spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_freed_chunk_is_first_victim),
        cmocka_unit_test(test_laws_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
