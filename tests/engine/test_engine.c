/* Tests of the engine: OPT against exhaustive search, capacity, working sets
 * present before launches run, bytes conserved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "tfeed.h"
#include "trand.h"

#define CH 4096u

static tfeed_t feed;

typedef struct outcome {
    uint64_t fills;
    uint64_t writebacks;
    uint64_t faults;
    uint64_t cleans;
    uint64_t bytes_d2h; /* written back and cleaned */
} outcome_t;

/* A wrong predictor: drops the last recorded range, adds a chunk never touched
 * (use_wrong 1); or predicts only chunks the launch does not touch, shifted by
 * 3 chunks within the allocation, or nothing for every third launch (2). */
static eng_range_t wrong_out[16];
static int use_wrong;
static uint32_t wrong_calls;
static uint32_t reserve;
static uint64_t wrong_seed;     /* use_wrong 3: each recorded range kept or not, one chunk added */
static uint64_t bw_h2d, bw_d2h; /* the engine's copy bandwidths (0: unknown) */
static uint32_t clean_max;      /* chunks cleaned per launch while device-to-host is idle */

static gmux_status_t wrong_predict(void *ctx, uint32_t task, const eng_launch_t *l,
                                   const eng_range_t *rec, uint32_t nrec, const eng_range_t **r_p,
                                   uint32_t *n_p)
{
    (void)ctx;
    (void)task;
    (void)l;
    uint32_t n = 0;
    if (use_wrong == 3) {
        for (uint32_t i = 0; i < nrec && n < 15; i++)
            if (trand_next(&wrong_seed) % 3 != 0)
                wrong_out[n++] = rec[i];
        if (nrec > 0)
            wrong_out[n++] = (eng_range_t){(rec[0].addr & ~(uint64_t)(8 * CH - 1)) +
                                               trand_next(&wrong_seed) % 8 * CH,
                                           8, ENG_ACCESS_READ};
        *r_p = wrong_out;
        *n_p = n;
        return GMUX_OK;
    }
    if (use_wrong == 2) {
        for (uint32_t i = 0; i < nrec && n < 16 && ++wrong_calls % 3 != 0; i++) {
            uint64_t base = rec[i].addr & ~(uint64_t)(8 * CH - 1);
            wrong_out[n++] =
                (eng_range_t){base + (rec[i].addr - base + 3 * CH) % (8 * CH), 8, ENG_ACCESS_READ};
        }
        *r_p = wrong_out;
        *n_p = n;
        return GMUX_OK;
    }
    for (uint32_t i = 0; i + 1 < nrec && n < 15; i++)
        wrong_out[n++] = rec[i];
    if (nrec > 0)
        wrong_out[n++] =
            (eng_range_t){(rec[0].addr & ~(uint64_t)(CH - 1)) ^ (5 * CH), 8, ENG_ACCESS_READ};
    *r_p = wrong_out;
    *n_p = n;
    return GMUX_OK;
}

/* Runs the engine over the feed, checking every invariant on the way. */
static outcome_t run_engine(eng_place_policy_t pol, uint32_t ntasks, uint32_t cap,
                            uint32_t lookahead, uint64_t quantum)
{
    tfeed_rewind(&feed);
    tback_t tb;
    eng_backend_t be = tback_backend(&tb, CH);
    tb.d2h_idle = clean_max > 0;
    eng_engine_params_t p = {.ntasks = ntasks,
                             .policy = pol,
                             .capacity_bytes = (uint64_t)cap * CH,
                             .chunk_size = CH,
                             .lookahead = lookahead,
                             .prefetch_slices = 2,
                             .batch_chunks = 3,
                             .quantum_ns = quantum,
                             .reserve_chunks = reserve,
                             .h2d_bps = bw_h2d,
                             .d2h_bps = bw_d2h,
                             .clean_chunks = clean_max,
                             .predict = use_wrong ? wrong_predict : NULL,
                             .feed = tfeed_feed(&feed)};
    eng_engine_t *e;
    assert_int_equal(eng_engine_create(&p, &be, &e), GMUX_OK);
    eng_regions_t *regs = eng_engine_regions(e);
    uint64_t faults = 0;
    uint64_t now = 0, launches = 0;
    for (;;) {
        eng_step_t st;
        gmux_status_t rc = eng_engine_next(e, &st);
        if (rc == GMUX_ERR_NOT_FOUND)
            break;
        assert_int_equal(rc, GMUX_OK);
        /* the working set is on the device (per the backend) before the launch */
        for (uint32_t i = 0; i < st.nrefs; i++) {
            uint32_t c = ENG_REF_CHUNK(st.refs[i]);
            eng_chunk_t *x = eng_regions_chunk(regs, c);
            assert_true(x->flags & ENG_CHUNK_PRESENT);
            assert_true(tback_has(&tb, st.task, eng_regions_chunk_addr(regs, c)));
            assert_true(st.wait >= x->fill_ticket);
        }
        if (!use_wrong)
            assert_int_equal(st.faults, 0);
        faults += st.faults;
        assert_true(eng_place_resident(eng_engine_placement(e)) <= cap);
        now = (now > st.wait ? now : st.wait) + st.time_ns;
        assert_int_equal(eng_engine_complete(e, now), GMUX_OK);
        tb.now_ns = now;
        launches++;
    }
    assert_int_equal(tb.errors, 0);
    assert_true(tb.max_present <= cap + 0u);
    const eng_migrate_stats_t *ms = eng_engine_stats(e);
    /* bytes conserved: what the engine counts is what the backend moved */
    assert_int_equal(ms->bytes_h2d, tb.bytes_h2d);
    assert_int_equal(ms->bytes_d2h, tb.bytes_d2h);
    assert_int_equal(ms->bytes_h2d, ms->fills * CH);
    assert_int_equal(ms->bytes_d2h, (ms->writebacks + ms->cleans) * CH);
    assert_int_equal(tb.cleans, ms->cleans);
    assert_int_equal(tb.fills, ms->fills);
    assert_true(launches > 0);
    outcome_t o = {ms->fills, ms->writebacks, faults, ms->cleans, ms->bytes_d2h};
    eng_engine_destroy(e);
    return o;
}

static void test_opt_matches_exhaustive_search(void **state)
{
    (void)state;
    uint64_t s = 7;
    for (int round = 0; round < 300; round++) {
        uint32_t nchunks = 4 + (uint32_t)(trand_next(&s) % 5); /* 4..8 */
        uint32_t cap = 2 + (uint32_t)(trand_next(&s) % 3);     /* 2..4 */
        uint32_t n = 6 + (uint32_t)(trand_next(&s) % 14);
        uint32_t masks[32];
        tfeed_init(&feed, 1);
        tfeed_alloc(&feed, 0, 1, 1ull << 30, nchunks * CH);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t m = 0;
            uint32_t ws = 1 + (uint32_t)(trand_next(&s) % cap);
            while ((uint32_t)__builtin_popcount(m) < ws)
                m |= 1u << (trand_next(&s) % nchunks);
            masks[k] = m;
            tfeed_launch_mask(&feed, 0, 1ull << 30, CH, m, (uint32_t)trand_next(&s) & m, 100);
        }
        uint64_t best = tf_exhaustive_min_fetches(masks, n, nchunks, cap);
        outcome_t opt = run_engine(ENG_PLACE_OPT, 1, cap, 64, 1000000);
        outcome_t lru = run_engine(ENG_PLACE_LRU, 1, cap, 64, 1000000);
        assert_int_equal(opt.fills, best); /* OPT with the whole string in view */
        assert_true(lru.fills >= best);
        /* write-back aware with equal bandwidths: only ties go to clean
         * chunks, so still OPT's fetches */
        bw_h2d = bw_d2h = 50;
        outcome_t sym = run_engine(ENG_PLACE_OPT, 1, cap, 64, 1000000);
        assert_int_equal(sym.fills, best);
        /* dearer write-backs: may trade fetches for write-backs */
        bw_d2h = 12;
        outcome_t asym = run_engine(ENG_PLACE_OPT, 1, cap, 64, 1000000);
        assert_true(asym.fills >= best);
        bw_h2d = bw_d2h = 0;
    }
}

/* With write-backs 4x dearer than fills and a write-back already planned, a
 * clean chunk used a little sooner is evicted rather than a dirty one: the
 * same fetches, one write-back fewer. With equal bandwidths (or none given)
 * OPT evicts the dirty chunk used farthest. */
static void test_dirty_victim_spared(void **state)
{
    (void)state;
    /* capacity 2: L0 writes c0, L1 writes c1, L2 reads c2 (evicts c0, used
     * at L6, written back), L3 reads c3: c1 dirty used at L5, c2 clean used
     * at L4; then L4 reads c2, L5 c1, L6 c0 */
    static const uint32_t masks[7] = {1, 2, 4, 8, 4, 2, 1};
    tfeed_init(&feed, 1);
    tfeed_alloc(&feed, 0, 1, 1ull << 30, 4 * CH);
    for (uint32_t k = 0; k < 7; k++)
        tfeed_launch_mask(&feed, 0, 1ull << 30, CH, masks[k], k < 2 ? masks[k] : 0, 100);
    uint64_t best = tf_exhaustive_min_fetches(masks, 7, 4, 2);
    outcome_t plain = run_engine(ENG_PLACE_OPT, 1, 2, 64, 1000000);
    assert_int_equal(plain.fills, best);
    assert_int_equal(plain.writebacks, 2);
    bw_h2d = bw_d2h = 40;
    outcome_t sym = run_engine(ENG_PLACE_OPT, 1, 2, 64, 1000000);
    assert_int_equal(sym.fills, best);
    assert_int_equal(sym.writebacks, 2);
    bw_d2h = 10;
    outcome_t aware = run_engine(ENG_PLACE_OPT, 1, 2, 64, 1000000);
    assert_int_equal(aware.fills, best);
    assert_int_equal(aware.writebacks, 1);
    bw_h2d = bw_d2h = 0;
}

/* Write-backs 3.7x dearer than fills: up to 4 chunks cleaned per launch (off: defaults). */
static void cleaning_on(void)
{
    bw_h2d = 44;
    bw_d2h = 12;
    clean_max = 4;
}

static void cleaning_off(void)
{
    bw_h2d = bw_d2h = 0;
    clean_max = 0;
}

/* A dirty chunk kept while the copy engine back to the host is idle is
 * cleaned, and its later eviction is a drop: the same bytes move, no
 * write-back waits for the victim's slot. Without the idle engine (or the
 * bandwidths) it is written back at its eviction. */
static void test_idle_cleaning(void **state)
{
    (void)state;
    /* capacity 2, a window of 3 launches: L0 writes c3, L1-L4 read c1, L5
     * reads c2 (c3 and c1 have no use in the window: OPT takes c3, the
     * higher id), L6 reads c1 */
    static const uint32_t masks[7] = {8, 2, 2, 2, 2, 4, 2};
    tfeed_init(&feed, 1);
    tfeed_alloc(&feed, 0, 1, 1ull << 30, 4 * CH);
    for (uint32_t k = 0; k < 7; k++)
        tfeed_launch_mask(&feed, 0, 1ull << 30, CH, masks[k], k == 0 ? masks[0] : 0, 100);
    outcome_t plain = run_engine(ENG_PLACE_OPT, 1, 2, 3, 1000000);
    assert_int_equal(plain.writebacks, 1);
    assert_int_equal(plain.cleans, 0);
    clean_max = 4;
    outcome_t off = run_engine(ENG_PLACE_OPT, 1, 2, 3, 1000000); /* no bandwidths: no cleaning */
    assert_int_equal(off.cleans, 0);
    cleaning_on();
    outcome_t clean = run_engine(ENG_PLACE_OPT, 1, 2, 3, 1000000);
    assert_int_equal(clean.fills, plain.fills);
    assert_int_equal(clean.cleans, 1);
    assert_int_equal(clean.writebacks, 0);
    cleaning_off();
}

/* Cleaning skips a dirty chunk whose next planned use writes it: that use
 * makes it dirty again while it stays on the device, so the copy would only
 * take device-to-host time. A chunk whose next use reads it is cleaned as
 * before. */
static void test_cleaning_skips_rewritten(void **state)
{
    (void)state;
    /* capacity 3, nothing evicted (task 0 uses c0 and c1, task 1 its own
     * d0). Each launch fills its quantum, so the two tasks alternate a launch
     * a slice and the shadow pass plans 3 slices while the timeline sees
     * every launch. Task 0: L0 writes c0, L1-L5 read c1, L6 uses c0
     * (rewrite: writes it; otherwise reads it), L7 reads c0; task 1 reads d0
     * 8 times. */
    static const uint32_t masks[8] = {1, 2, 2, 2, 2, 2, 1, 1};
    cleaning_on();
    outcome_t o[2];
    for (int rewrite = 0; rewrite < 2; rewrite++) {
        tfeed_init(&feed, 2);
        tfeed_alloc(&feed, 0, 1, 1ull << 30, 2 * CH);
        tfeed_alloc(&feed, 1, 2, 2ull << 30, CH);
        for (uint32_t k = 0; k < 8; k++) {
            tfeed_launch_mask(&feed, 0, 1ull << 30, CH, masks[k],
                              k == 0 || (rewrite && k == 6) ? 1 : 0, 100);
            tfeed_launch_mask(&feed, 1, 2ull << 30, CH, 1, 0, 100);
        }
        o[rewrite] = run_engine(ENG_PLACE_OPT, 2, 3, 64, 100);
        assert_int_equal(o[rewrite].writebacks, 0);
        assert_int_equal(o[rewrite].fills, 3);
    }
    /* read at L6: c0 is cleaned once its write at L0 has run */
    assert_int_equal(o[0].cleans, 1);
    /* written at L6: cleaned only after its last use, L7 (main also cleaned
     * it after L0, a copy L6 made stale: 2) */
    assert_int_equal(o[1].cleans, 1);
    cleaning_off();
}

/* Cleaning skips a dirty chunk whose region's free is planned and that no
 * planned use needs any more: the free discards its data, so a copy to the
 * host would only take device-to-host time (and the free, not an eviction,
 * takes it off the device). Its twin, whose region lives on, is cleaned. */
static void test_cleaning_skips_dead(void **state)
{
    (void)state;
    /* capacity 3, nothing evicted. Task 0: L0 writes a0 (region 1), L1-L6
     * read b0 (region 3), region 1 freed after L3 (freed: the free is in the
     * plan from the start) or never; task 1 reads d0 8 times. */
    cleaning_on();
    outcome_t o[2];
    for (int freed = 0; freed < 2; freed++) {
        tfeed_init(&feed, 2);
        tfeed_alloc(&feed, 0, 1, 1ull << 30, CH);
        tfeed_alloc(&feed, 0, 3, 3ull << 30, CH);
        tfeed_alloc(&feed, 1, 2, 2ull << 30, CH);
        for (uint32_t k = 0; k < 7; k++) {
            tfeed_launch_mask(&feed, 0, k == 0 ? 1ull << 30 : 3ull << 30, CH, 1, k == 0, 100);
            if (freed && k == 3)
                tfeed_free(&feed, 0, 1);
            tfeed_launch_mask(&feed, 1, 2ull << 30, CH, 1, 0, 100);
        }
        o[freed] = run_engine(ENG_PLACE_OPT, 2, 3, 64, 100);
        assert_int_equal(o[freed].writebacks, 0);
        assert_int_equal(o[freed].fills, 3);
    }
    assert_int_equal(o[0].bytes_d2h, CH); /* live: cleaned once L0 has run */
    assert_int_equal(o[1].bytes_d2h, 0);  /* dead: dropped at its free (main: 4096) */
    cleaning_off();
}

static void test_multitask_frees_small_window(void **state)
{
    (void)state;
    uint64_t s = 99, cleans = 0;
    for (int round = 0; round < 60; round++) {
        uint32_t nt = 1 + (uint32_t)(trand_next(&s) % 4);
        tfeed_init(&feed, nt);
        for (uint32_t t = 0; t < nt; t++) {
            uint64_t base = 1ull << 30;
            uint64_t id = 1;
            tfeed_alloc(&feed, t, id, base, 6 * CH);
            for (int k = 0; k < 40; k++) {
                if (trand_next(&s) % 10 == 0) {
                    tfeed_free(&feed, t, id);
                    tfeed_alloc(&feed, t, ++id, base, 6 * CH);
                }
                uint32_t m = (uint32_t)(trand_next(&s) % 63) + 1;
                while (__builtin_popcount(m) > 3)
                    m &= m - 1;
                tfeed_launch_mask(&feed, t, base, CH, m, (uint32_t)trand_next(&s) & m,
                                  50 + trand_next(&s) % 200);
            }
        }
        uint32_t cap = 3 + (uint32_t)(trand_next(&s) % 8);
        uint32_t look = 1 + (uint32_t)(trand_next(&s) % 20);
        bw_h2d = round % 2 ? 44 : 0; /* every other round write-back aware, cleaning */
        bw_d2h = round % 2 ? 12 : 0;
        clean_max = round % 4 == 1 ? 2 : 0;
        outcome_t o = run_engine(ENG_PLACE_OPT, nt, cap, look, 300);
        cleans += o.cleans;
        bw_h2d = bw_d2h = 0;
        clean_max = 0;
        outcome_t l = run_engine(ENG_PLACE_LRU, nt, cap, look, 300);
        assert_true(o.fills > 0 && l.fills > 0);
    }
    assert_true(cleans > 0); /* cleaning ran, under every invariant of run_engine */
}

static void test_mispredictions_fault_into_reserve(void **state)
{
    (void)state;
    uint64_t s = 5;
    use_wrong = 1;
    reserve = 3;
    uint64_t faults = 0;
    for (int round = 0; round < 40; round++) {
        uint32_t nt = 1 + (uint32_t)(trand_next(&s) % 3);
        tfeed_init(&feed, nt);
        for (uint32_t t = 0; t < nt; t++) {
            uint64_t base = 1ull << 30, id = 1;
            tfeed_alloc(&feed, t, id, base, 8 * CH);
            for (int k = 0; k < 40; k++) {
                if (trand_next(&s) % 12 == 0) {
                    tfeed_free(&feed, t, id);
                    tfeed_alloc(&feed, t, ++id, base, 8 * CH);
                }
                uint32_t m = (uint32_t)(trand_next(&s) % 255) + 1;
                while (__builtin_popcount(m) > 3)
                    m &= m - 1;
                tfeed_launch_mask(&feed, t, base, CH, m, (uint32_t)trand_next(&s) & m, 100);
            }
        }
        uint32_t cap = 8 + (uint32_t)(trand_next(&s) % 6);
        outcome_t o = run_engine(ENG_PLACE_OPT, nt, cap, 1 + (uint32_t)(trand_next(&s) % 30), 300);
        outcome_t l = run_engine(ENG_PLACE_LRU, nt, cap, 8, 300);
        faults += o.faults + l.faults;
    }
    assert_true(faults > 100); /* the wrong predictor did miss, and every miss was served */
    use_wrong = 0;
    reserve = 0;
}

/* Under-prediction is always survivable, without any reserve: every missed
 * chunk is faulted in (evicting by the policy), the device never overfills,
 * and every byte moved is accounted (run_engine checks it all). */
static void test_wrong_predictor_without_reserve(void **state)
{
    (void)state;
    uint64_t s = 11;
    uint64_t faults[2] = {0, 0};
    for (int mode = 1; mode <= 2; mode++) {
        use_wrong = mode;
        for (int round = 0; round < 30; round++) {
            uint32_t nt = 1 + (uint32_t)(trand_next(&s) % 3);
            tfeed_init(&feed, nt);
            for (uint32_t t = 0; t < nt; t++) {
                uint64_t base = 1ull << 30, id = 1;
                tfeed_alloc(&feed, t, id, base, 8 * CH);
                for (int k = 0; k < 40; k++) {
                    if (trand_next(&s) % 12 == 0) {
                        tfeed_free(&feed, t, id);
                        tfeed_alloc(&feed, t, ++id, base, 8 * CH);
                    }
                    uint32_t m = (uint32_t)(trand_next(&s) % 255) + 1;
                    while (__builtin_popcount(m) > 3)
                        m &= m - 1;
                    tfeed_launch_mask(&feed, t, base, CH, m, (uint32_t)trand_next(&s) & m, 100);
                }
            }
            reserve = (uint32_t)(round % 3 == 2); /* 0 or 1 slot */
            uint32_t cap = 3 + reserve + (uint32_t)(trand_next(&s) % 8);
            bw_h2d = round % 2 ? 44 : 0; /* every other round write-back aware */
            bw_d2h = round % 2 ? 12 : 0;
            clean_max = round % 4 == 1 ? 2 : 0;
            outcome_t o =
                run_engine(ENG_PLACE_OPT, nt, cap, 1 + (uint32_t)(trand_next(&s) % 30), 300);
            bw_h2d = bw_d2h = 0;
            clean_max = 0;
            outcome_t l = run_engine(ENG_PLACE_LRU, nt, cap, 8, 300);
            faults[mode - 1] += o.faults + l.faults;
        }
    }
    assert_true(faults[0] > 100);
    assert_true(faults[1] > 1000); /* nearly every chunk was missed, and served */
    use_wrong = 0;
    reserve = 0;
}

/* One run's transfers and steps, in order. */
typedef struct logged {
    uint64_t log[2 * 8192];
    uint64_t steps[4 * 1024];
    uint32_t nlog, nsteps;
    eng_replan_stats_t rs;
    uint64_t faults;
} logged_t;

static logged_t run_a, run_b;

static void run_logged(logged_t *out, eng_place_policy_t pol, uint32_t ntasks, uint32_t cap,
                       uint32_t lookahead, uint64_t quantum, bool full, uint64_t seed)
{
    tfeed_rewind(&feed);
    wrong_calls = 0;
    wrong_seed = seed;
    tback_t tb;
    eng_backend_t be = tback_backend(&tb, CH);
    tb.log = out->log;
    tb.log_cap = sizeof(out->log) / sizeof(out->log[0]) / 2;
    eng_engine_params_t p = {.ntasks = ntasks,
                             .policy = pol,
                             .capacity_bytes = (uint64_t)cap * CH,
                             .chunk_size = CH,
                             .lookahead = lookahead,
                             .prefetch_slices = 1 + (uint32_t)(seed % 3),
                             .batch_chunks = 1 + (uint32_t)(seed % 4),
                             .quantum_ns = quantum,
                             .reserve_chunks = reserve,
                             .predict = wrong_predict,
                             .replan_full = full,
                             .feed = tfeed_feed(&feed)};
    eng_engine_t *e;
    assert_int_equal(eng_engine_create(&p, &be, &e), GMUX_OK);
    uint64_t now = 0;
    out->nsteps = 0;
    out->faults = 0;
    for (;;) {
        eng_step_t st;
        gmux_status_t rc = eng_engine_next(e, &st);
        if (rc == GMUX_ERR_NOT_FOUND)
            break;
        assert_int_equal(rc, GMUX_OK);
        assert_true(out->nsteps + 4 <= sizeof(out->steps) / sizeof(out->steps[0]));
        out->steps[out->nsteps++] = st.pos;
        out->steps[out->nsteps++] = st.wait;
        out->steps[out->nsteps++] = st.faults;
        out->steps[out->nsteps++] = eng_place_resident(eng_engine_placement(e));
        out->faults += st.faults;
        now = (now > st.wait ? now : st.wait) + st.time_ns;
        assert_int_equal(eng_engine_complete(e, now), GMUX_OK);
    }
    assert_int_equal(tb.errors, 0);
    assert_true(tb.max_present <= cap);
    assert_true(tb.nlog <= tb.log_cap);
    out->nlog = tb.nlog;
    out->rs = *eng_engine_replan_stats(e);
    eng_engine_destroy(e);
}

/* run_a (incremental re-plans) did what run_b (full walks) did. */
static void assert_same_runs(void)
{
    assert_int_equal(run_a.nlog, run_b.nlog);
    for (uint32_t i = 0; i < 2 * run_a.nlog; i++)
        assert_int_equal(run_a.log[i], run_b.log[i]);
    assert_int_equal(run_a.nsteps, run_b.nsteps);
    for (uint32_t i = 0; i < run_a.nsteps; i++)
        assert_int_equal(run_a.steps[i], run_b.steps[i]);
    assert_int_equal(run_a.rs.replans, run_b.rs.replans);
    assert_int_equal(run_a.rs.repls, run_b.rs.repls);
    assert_int_equal(run_a.rs.positions, run_b.rs.positions);
    assert_true(run_a.rs.chunks <= run_b.rs.chunks);
}

/* The incremental re-plan after a miss gives exactly the plan of the full
 * walk over every chunk: the same transfers in the same order, the same
 * steps, the same re-plans; and it visits fewer chunks. */
static void test_incremental_replan_matches_full(void **state)
{
    (void)state;
    uint64_t s = 23;
    uint64_t replans = 0, faults = 0, visited_inc = 0, visited_full = 0;
    for (int round = 0; round < 240; round++) {
        use_wrong = 1 + round % 3;
        uint32_t nt = 1 + (uint32_t)(trand_next(&s) % 4);
        tfeed_init(&feed, nt);
        for (uint32_t t = 0; t < nt; t++) {
            uint64_t base = 1ull << 30, id = 1;
            tfeed_alloc(&feed, t, id, base, 8 * CH);
            tfeed_alloc(&feed, t, 1000, base + 64 * CH, 4 * CH);
            for (int k = 0; k < 48; k++) {
                if (trand_next(&s) % 12 == 0) {
                    tfeed_free(&feed, t, id);
                    tfeed_alloc(&feed, t, ++id, base, 8 * CH);
                }
                uint32_t m = (uint32_t)(trand_next(&s) % 255) + 1;
                while (__builtin_popcount(m) > 3)
                    m &= m - 1;
                tfeed_launch_mask(&feed, t, base, CH, m, (uint32_t)trand_next(&s) & m,
                                  50 + trand_next(&s) % 150);
                if (trand_next(&s) % 4 == 0)
                    tfeed_launch_mask(&feed, t, base + 64 * CH, CH, 1u << (trand_next(&s) % 4), 1,
                                      80);
            }
        }
        reserve = (uint32_t)(trand_next(&s) % 3);
        uint32_t cap = 4 + reserve + (uint32_t)(trand_next(&s) % 10);
        uint32_t look = 1 + (uint32_t)(trand_next(&s) % 40);
        uint64_t quantum = 200 + trand_next(&s) % 800;
        uint64_t seed = trand_next(&s);
        eng_place_policy_t pol = round % 4 == 3 ? ENG_PLACE_LRU : ENG_PLACE_OPT;
        run_logged(&run_a, pol, nt, cap, look, quantum, false, seed);
        run_logged(&run_b, pol, nt, cap, look, quantum, true, seed);
        assert_same_runs();
        replans += run_a.rs.replans;
        faults += run_a.faults;
        visited_inc += run_a.rs.chunks;
        visited_full += run_b.rs.chunks;
    }
    assert_true(replans > 500); /* the cases did re-plan, often */
    assert_true(faults > replans);
    assert_true(visited_inc < visited_full);
    use_wrong = 0;
    reserve = 0;
}

/* The end of a round of the wide re-plan tests: the reserve, capacity,
 * lookahead (look_min and up) and seed drawn from *s, then run_a (incremental
 * re-plans) and run_b (full walks), which must agree. */
static void wide_round(uint64_t *s, int round, uint32_t nt, uint32_t look_min)
{
    reserve = (uint32_t)(trand_next(s) % 3);
    uint32_t cap = 16 + reserve + (uint32_t)(trand_next(s) % 24);
    uint32_t look = look_min + (uint32_t)(trand_next(s) % 40);
    uint64_t seed = trand_next(s);
    eng_place_policy_t pol = round % 4 == 3 ? ENG_PLACE_LRU : ENG_PLACE_OPT;
    run_logged(&run_a, pol, nt, cap, look, 500, false, seed);
    run_logged(&run_b, pol, nt, cap, look, 500, true, seed);
    assert_same_runs();
}

/* The same with regions of 400 chunks, launches of up to 12 of them and long
 * lookaheads: the re-plans list dozens of chunks with ids past 256 (sorted
 * by id by insertion below 32, by 8-bit digits from there). */
static void test_incremental_replan_matches_full_many(void **state)
{
    (void)state;
    uint64_t s = 41;
    int long_lists = 0;
    for (int round = 0; round < 24; round++) {
        use_wrong = 1 + round % 3;
        uint32_t nt = 1 + (uint32_t)(trand_next(&s) % 2);
        tfeed_init(&feed, nt);
        for (uint32_t t = 0; t < nt; t++) {
            uint64_t base = 1ull << 30;
            tfeed_alloc(&feed, t, 1, base, 400 * CH);
            for (int k = 0; k < 50; k++) {
                uint32_t m = (uint32_t)trand_next(&s);
                while (__builtin_popcount(m) > 12)
                    m &= m - 1;
                uint64_t at = base + (trand_next(&s) % (400 - 32)) * CH;
                tfeed_launch_mask(&feed, t, at, CH, m | 1, (uint32_t)trand_next(&s) & m,
                                  50 + trand_next(&s) % 150);
            }
        }
        wide_round(&s, round, nt, 20);
        long_lists += run_a.rs.replans > 0 && run_a.rs.chunks > 32 * run_a.rs.replans;
    }
    print_message("re-plans listing 32 chunks a time on average in %d of 24 rounds\n", long_lists);
    assert_true(long_lists > 12);
    use_wrong = 0;
    reserve = 0;
}

/* The same with chunk ids spread over 9,000 a task, launches straddling
 * multiples of 64 and 4,096 ids, and a second region of 5,000 chunks
 * allocated part-way (the highest id grows after the first re-plans). */
static void test_incremental_replan_matches_full_wide(void **state)
{
    (void)state;
    static const uint64_t spots[] = {0, 48, 4080, 4100, 8176, 8968};
    uint64_t s = 59, replans = 0, rounds = 0;
    for (int round = 0; round < 16; round++) {
        use_wrong = 1 + round % 3;
        uint32_t nt = 1 + (uint32_t)(trand_next(&s) % 2);
        tfeed_init(&feed, nt);
        for (uint32_t t = 0; t < nt; t++) {
            uint64_t base = 1ull << 34, base2 = 1ull << 35;
            tfeed_alloc(&feed, t, 1, base, 9000 * CH);
            for (int k = 0; k < 60; k++) {
                if (k == 20)
                    tfeed_alloc(&feed, t, 2, base2, 5000 * CH);
                uint32_t m = (uint32_t)trand_next(&s);
                while (__builtin_popcount(m) > 10)
                    m &= m - 1;
                uint64_t at = base + (spots[trand_next(&s) % 6] + trand_next(&s) % 8) * CH;
                if (k > 20 && trand_next(&s) % 3 == 0)
                    at = base2 + (4060 + trand_next(&s) % 40) * CH;
                tfeed_launch_mask(&feed, t, at, CH, m | 1, (uint32_t)trand_next(&s) & m,
                                  50 + trand_next(&s) % 150);
            }
        }
        wide_round(&s, round, nt, 10);
        replans += run_a.rs.replans;
        rounds += run_a.rs.replans > 0;
    }
    print_message("%" PRIu64 " re-plans, in %" PRIu64 " of 16 rounds\n", replans, rounds);
    assert_true(replans > 100);
    assert_true(rounds > 12);
    use_wrong = 0;
    reserve = 0;
}

static void test_capacity_below_working_set(void **state)
{
    (void)state;
    tfeed_init(&feed, 1);
    tfeed_alloc(&feed, 0, 1, 0, 4 * CH);
    tfeed_launch_mask(&feed, 0, 0, CH, 0xF, 0, 10);
    tback_t tb;
    eng_backend_t be = tback_backend(&tb, CH);
    eng_engine_params_t p = {.ntasks = 1,
                             .policy = ENG_PLACE_OPT,
                             .capacity_bytes = 3 * CH,
                             .chunk_size = CH,
                             .lookahead = 8,
                             .prefetch_slices = 1,
                             .batch_chunks = 4,
                             .quantum_ns = 100,
                             .feed = tfeed_feed(&feed)};
    eng_engine_t *e;
    assert_int_equal(eng_engine_create(&p, &be, &e), GMUX_OK);
    eng_step_t st;
    assert_int_equal(eng_engine_next(e, &st), GMUX_ERR_CAPACITY);
    assert_true(tb.max_present <= 3);
    eng_engine_destroy(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opt_matches_exhaustive_search),
        cmocka_unit_test(test_dirty_victim_spared),
        cmocka_unit_test(test_idle_cleaning),
        cmocka_unit_test(test_cleaning_skips_rewritten),
        cmocka_unit_test(test_cleaning_skips_dead),
        cmocka_unit_test(test_multitask_frees_small_window),
        cmocka_unit_test(test_mispredictions_fault_into_reserve),
        cmocka_unit_test(test_wrong_predictor_without_reserve),
        cmocka_unit_test(test_incremental_replan_matches_full),
        cmocka_unit_test(test_incremental_replan_matches_full_many),
        cmocka_unit_test(test_incremental_replan_matches_full_wide),
        cmocka_unit_test(test_capacity_below_working_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
