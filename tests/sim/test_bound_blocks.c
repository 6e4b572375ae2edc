/* The transfer bound with faults that move blocks of a chunk: no policy (demand
 * paging, the engine on recorded or learned prediction) goes below it on random
 * workloads whose launches touch parts of chunks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine/launch.h"
#include "bound_test_util.h"
#include "sim/bound.h"
#include "sim/device.h"
#include "sim/predict.h"
#include "sim/run.h"
#include "trand.h"
#include "tsource.h"

#define CHUNK 65536u

/* One workload of sparse touches: a launch reads one 4 KiB block of each of
 * n chunks, twice over, on a device of cap chunks. */
static void sparse_spec(tsrc_spec_t *spec, uint32_t n)
{
    tsrc_spec_init(spec, 1);
    tsrc_alloc(spec, 0, 1, 1ull << 32, (uint64_t)n * CHUNK);
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < n; i++) {
            sim_range_t r = {(1ull << 32) + (uint64_t)i * CHUNK, 8, ENG_ACCESS_READ};
            tsrc_launch(spec, 0, 1000, 1, &r);
        }
}

static void params(sim_params_t *p, uint64_t cap_chunks, uint64_t block)
{
    sim_params_default(p);
    p->chunk_bytes = CHUNK;
    p->fault_block = (double)block;
    p->hbm_bytes = (double)(cap_chunks * CHUNK);
    p->quantum_ns = 200000;
    p->lookahead = 64;
    p->batch_chunks = 4;
}

/* The bound as it was before its block-level terms: the chunk-level fetch and
 * write-back terms, the compute and the released write-back term. */
static uint64_t chunk_bound(const sim_profile_t *prof, const sim_params_t *p, uint64_t cap,
                            const sim_bound_t *b)
{
    uint64_t f, w;
    assert_int_equal(opt_chunks(prof->refs, cap, &f, &w), GMUX_OK);
    uint64_t ns = b->compute_ns;
    double in_bps = p->fault_bps > p->h2d_bps ? p->fault_bps : p->h2d_bps;
    uint64_t tf = sim_ns_ceil((double)(f * CHUNK) * 1e9 / in_bps);
    uint64_t tw = sim_ns_ceil((double)(w * CHUNK) * 1e9 / p->d2h_bps);
    ns = tf > ns ? tf : ns;
    ns = tw > ns ? tw : ns;
    return b->wb_released_ns > ns ? b->wb_released_ns : ns;
}

/* Runs every policy (the engine with recorded and with learned prediction) and
 * checks makespan, fetched and written-back bytes against the bound. *raised_p
 * (optional) counts whether the bound is above its chunk-level terms. */
static unsigned check_all_raised(const sim_params_t *p, tsrc_spec_t *spec, uint64_t cap,
                                 bool verbose, unsigned *raised_p)
{
    sim_hooks_t h = {.open = tsrc_open, .open_ctx = spec};
    char err[256];
    sim_profile_t prof;
    assert_int_equal(sim_profile_run(p, &h, &prof, err, sizeof(err)), GMUX_OK);
    sim_bound_t b;
    assert_int_equal(sim_bound_compute(&prof, p, cap * CHUNK, &b), GMUX_OK);
    assert_true(b.exact);
    if (raised_p)
        *raised_p += b.bound_ns > chunk_bound(&prof, p, cap, &b);
    unsigned beaten = 0;
    sim_predict_opts_t po = {0};
    sim_predictor_hooks_t ph;
    sim_predict_hooks(&po, &ph);
    for (int run = 0; run <= SIM_POLICY_COUNT; run++) {
        sim_policy_t pol = run == SIM_POLICY_COUNT ? SIM_POLICY_PROACTIVE : (sim_policy_t)run;
        if (pol == SIM_POLICY_ORACLE)
            continue;
        sim_hooks_t hr = h;
        if (run == SIM_POLICY_COUNT)
            hr.predictor = &ph; /* learned: misses fault in blocks */
        sim_result_t r;
        assert_int_equal(sim_run(p, &hr, pol, cap * CHUNK, &r, err, sizeof(err)), GMUX_OK);
        bool below = r.makespan_ns < b.bound_ns || r.bytes_h2d < b.fetch_bytes ||
                     r.bytes_d2h < b.writeback_bytes;
        if (below && verbose)
            fprintf(stderr, "%s%s: makespan %lu (bound %lu) h2d %lu (%lu) d2h %lu (%lu)\n",
                    sim_policy_name(pol), run == SIM_POLICY_COUNT ? " (learned)" : "",
                    (unsigned long)r.makespan_ns, (unsigned long)b.bound_ns,
                    (unsigned long)r.bytes_h2d, (unsigned long)b.fetch_bytes,
                    (unsigned long)r.bytes_d2h, (unsigned long)b.writeback_bytes);
        beaten += below;
        assert_true(r.peak_resident <= cap);
        assert_int_equal(r.launches, prof.oracle.launches);
        sim_result_clear(&r);
    }
    sim_profile_clear(&prof);
    return beaten;
}

static unsigned check_all(const sim_params_t *p, tsrc_spec_t *spec, uint64_t cap, bool verbose)
{
    return check_all_raised(p, spec, cap, verbose, NULL);
}

/* Demand paging moved 4 KiB per fault where the bound charged a whole chunk:
 * it ran below the "lower bound". */
static void test_sparse_touches_within_bound(void **state)
{
    (void)state;
    tsrc_spec_t spec;
    sparse_spec(&spec, 16);
    sim_params_t p;
    params(&p, 4, 4096);
    assert_int_equal(check_all(&p, &spec, 4, true), 0);
    tsrc_spec_free(&spec);
}

/* Random workloads (partial touches of random chunks, writes, frees) with 16
 * blocks per chunk: no policy below the bound in any term. */
static void test_random_within_bound(void **state)
{
    (void)state;
    unsigned beaten = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        tsrc_spec_t spec;
        tsrc_random(&spec, seed, 1 + seed % 3, 4, 6, 40, 6, CHUNK);
        sim_params_t p;
        uint64_t cap = 6 + seed % 10;
        params(&p, cap, 4096);
        if (seed % 2) { /* transfers slower than compute: the transfer terms decide */
            p.h2d_bps /= 50;
            p.d2h_bps = p.h2d_bps / 4;
        }
        beaten += check_all(&p, &spec, cap, beaten < 5);
        tsrc_spec_free(&spec);
    }
    assert_int_equal(beaten, 0);
}

/* Reads of one 4 KiB block of 16 chunks, twice over, with transfers slower
 * than compute: every reference is partial, so the chunk-level terms are 0 and
 * the bound was the compute alone; over blocks the 16 blocks read must be
 * fetched, and the bound is their transfer time. No policy goes below it. */
static void test_partial_bound_higher(void **state)
{
    (void)state;
    tsrc_spec_t spec;
    sparse_spec(&spec, 16);
    sim_params_t p;
    params(&p, 4, 4096);
    p.h2d_bps = p.fault_bps = 4096.0 * 1e9 / 1e4; /* a block in 10 us, 1 us of compute */
    sim_hooks_t h = {.open = tsrc_open, .open_ctx = &spec};
    char err[256];
    sim_profile_t prof;
    assert_int_equal(sim_profile_run(&p, &h, &prof, err, sizeof(err)), GMUX_OK);
    sim_bound_t b;
    assert_int_equal(sim_bound_compute(&prof, &p, 4 * CHUNK, &b), GMUX_OK);
    uint64_t old = chunk_bound(&prof, &p, 4, &b);
    assert_int_equal(old, b.compute_ns);
    assert_int_equal(b.fetch_bytes, 16 * 4096);
    assert_true(b.bound_ns > old);
    assert_int_equal(b.bound_ns, 160000);
    sim_profile_clear(&prof);
    assert_int_equal(check_all(&p, &spec, 4, true), 0);
    tsrc_spec_free(&spec);
}

/* Random workloads of mostly small touches: each launch touches 1..6 ranges,
 * three in four of 1 to 3 blocks of 4 KiB at a random block, the others whole
 * chunks; random modes, some frees and reallocations; two tasks on odd seeds. */
static void sparse_random(tsrc_spec_t *s, uint64_t seed, uint32_t nlaunch)
{
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
#define RND() trand_next(&st)
    uint32_t ntasks = 1 + (uint32_t)(seed % 2), nreg = 4;
    tsrc_spec_init(s, ntasks);
    for (uint32_t t = 0; t < ntasks; t++) {
        uint32_t nch[4];
        uint64_t ids[4], next_id = 1;
        for (uint32_t r = 0; r < nreg; r++) {
            nch[r] = 1 + (uint32_t)(RND() % 6);
            ids[r] = next_id++;
            tsrc_alloc(s, t, ids[r], (uint64_t)(r + 1) << 32, nch[r] * CHUNK);
        }
        for (uint32_t l = 0; l < nlaunch; l++) {
            if (RND() % 16 == 0) {
                uint32_t r = (uint32_t)(RND() % nreg);
                tsrc_free(s, t, ids[r]);
                nch[r] = 1 + (uint32_t)(RND() % 6);
                ids[r] = next_id++;
                tsrc_alloc(s, t, ids[r], (uint64_t)(r + 1) << 32, nch[r] * CHUNK);
            }
            sim_range_t rg[6];
            uint32_t n = 1 + (uint32_t)(RND() % 6);
            for (uint32_t i = 0; i < n; i++) {
                uint32_t r = (uint32_t)(RND() % nreg);
                uint64_t base = ((uint64_t)(r + 1) << 32) + (RND() % nch[r]) * CHUNK;
                if (RND() % 4 == 0) {
                    rg[i].addr = base;
                    rg[i].len = CHUNK;
                } else {
                    uint64_t blk = RND() % 16, len = 1 + RND() % 3;
                    rg[i].addr = base + blk * 4096 + RND() % 4096;
                    rg[i].len = (blk + len > 16 ? 16 - blk : len) * 4096 - (rg[i].addr % 4096);
                }
                rg[i].mode = (uint8_t)(1 + RND() % 3);
            }
            tsrc_launch(s, t, 1000 + RND() % 20000, n, rg);
        }
    }
#undef RND
}

/* 60 of them, capacities of 6 to 11 chunks, transfers slower than compute on
 * two seeds in three (demand faults slower still, or faster than the copy
 * engine: the fetch term takes the faster rate): no policy below the bound in
 * any term, and the block terms raise the bound in many. */
static void test_sparse_random_within_bound(void **state)
{
    (void)state;
    unsigned beaten = 0, raised = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        tsrc_spec_t spec;
        sparse_random(&spec, seed, 48);
        sim_params_t p;
        uint64_t cap = 6 + seed % 6;
        params(&p, cap, 4096);
        if (seed % 3) {
            p.h2d_bps /= 100;
            p.d2h_bps = p.h2d_bps / (double)(1 + seed % 4);
            p.fault_bps = seed % 3 == 1 ? p.h2d_bps / 4 : p.h2d_bps * 4;
        }
        beaten += check_all_raised(&p, &spec, cap, beaten < 5, &raised);
        tsrc_spec_free(&spec);
    }
    print_message("the block terms raised %u of 60 bounds\n", raised);
    assert_int_equal(beaten, 0);
    assert_true(raised >= 20);
}

/* A sweep's bounds in one call (sim_bound_compute_all: shared passes, lists
 * dropped between the kinds of term) are each capacity's own bound, for
 * capacities in no order, repeated, and too small for a launch. */
static void test_compute_all_equals_each(void **state)
{
    (void)state;
    static const uint64_t caps[] = {12, 3, 7, 1, 9, 7, 6};
    const size_t n = sizeof(caps) / sizeof(caps[0]);
    unsigned released = 0, refused = 0, raised = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        /* whole chunks (the released term), or sparse touches (the block terms);
         * transfers slower than compute, write-backs slower still */
        tsrc_spec_t spec;
        sim_params_t p;
        if (seed % 2) {
            tsrc_random(&spec, seed, 1 + seed % 4, 4, 6, 60, 6, CHUNK);
            params(&p, 8, CHUNK);
        } else {
            sparse_random(&spec, seed, 48);
            params(&p, 8, 4096);
        }
        p.h2d_bps /= 50;
        p.d2h_bps = p.h2d_bps / 4;
        sim_hooks_t h = {.open = tsrc_open, .open_ctx = &spec};
        char err[256];
        sim_profile_t prof;
        assert_int_equal(sim_profile_run(&p, &h, &prof, err, sizeof(err)), GMUX_OK);
        uint64_t bytes[sizeof(caps) / sizeof(caps[0])];
        sim_bound_t all[sizeof(caps) / sizeof(caps[0])];
        gmux_status_t st[sizeof(caps) / sizeof(caps[0])];
        for (size_t i = 0; i < n; i++)
            bytes[i] = caps[i] * CHUNK;
        sim_bound_compute_all(&prof, &p, bytes, n, all, st, NULL);
        for (size_t i = 0; i < n; i++) {
            sim_bound_t one;
            assert_int_equal(sim_bound_compute(&prof, &p, bytes[i], &one), st[i]);
            assert_memory_equal(&one, &all[i], sizeof(one));
            released += st[i] == GMUX_OK && all[i].wb_released_ns > 0;
            refused += st[i] == GMUX_ERR_CAPACITY;
            raised +=
                st[i] == GMUX_OK && all[i].bound_ns > chunk_bound(&prof, &p, caps[i], &all[i]);
        }
        sim_profile_clear(&prof);
        tsrc_spec_free(&spec);
    }
    print_message("released term %u, refused %u, raised by blocks %u of 280\n", released, refused,
                  raised);
    /* the cases the phases differ in all occur */
    assert_true(released > 10);
    assert_true(refused > 10);
    assert_true(raised >= 5);
}

/* What sim_bound_compute_all reported of its steps (sim_bound_progress_t). */
struct steps {
    char terms[64][32];
    size_t i[64], n[64], count;
};

static void record_step(void *ctx, const char *term, size_t i, size_t n)
{
    struct steps *s = ctx;
    assert_true(s->count < 64);
    snprintf(s->terms[s->count], sizeof(s->terms[0]), "%s", term);
    s->i[s->count] = i;
    s->n[s->count++] = n;
}

/* A sweep's bound reports each pass over the string before it runs: the
 * shared lists, then each kind of term at every capacity in order (the
 * block-level ones where some reference is partial), so that a long one can
 * show progress; the bounds are those computed without it. */
static void test_compute_all_progress(void **state)
{
    (void)state;
    static const uint64_t caps[] = {12, 3, 7, 9};
    const size_t n = sizeof(caps) / sizeof(caps[0]);
    tsrc_spec_t spec;
    sim_params_t p;
    sparse_random(&spec, 2, 48);
    params(&p, 8, 4096);
    sim_hooks_t h = {.open = tsrc_open, .open_ctx = &spec};
    char err[256];
    sim_profile_t prof;
    assert_int_equal(sim_profile_run(&p, &h, &prof, err, sizeof(err)), GMUX_OK);
    assert_true(sim_refstr_partial_refs(prof.refs) > 0);
    uint64_t bytes[4];
    sim_bound_t quiet[4], told[4];
    gmux_status_t st[4], st2[4];
    for (size_t i = 0; i < n; i++)
        bytes[i] = caps[i] * CHUNK;
    struct steps s = {.count = 0};
    sim_bound_progress_t pr = {.fn = record_step, .ctx = &s};
    sim_bound_compute_all(&prof, &p, bytes, n, quiet, st, NULL);
    sim_bound_compute_all(&prof, &p, bytes, n, told, st2, &pr);
    assert_memory_equal(quiet, told, sizeof(quiet));
    assert_memory_equal(st, st2, sizeof(st));
    assert_true(s.count >= 1 + 2 * n);
    assert_string_equal(s.terms[0], "reference string");
    assert_true(s.i[0] == 0 && s.n[0] == 1);
    for (size_t k = 0; k < n; k++) { /* then every capacity's chunk-level terms, in order */
        assert_string_equal(s.terms[1 + k], "chunk-level terms");
        assert_true(s.i[1 + k] == k && s.n[1 + k] == n);
    }
    size_t blocks = 0;
    for (size_t k = 1 + n; k < s.count; k++) {
        blocks += strcmp(s.terms[k], "block-level terms") == 0;
        assert_true(s.i[k] < s.n[k]);
    }
    assert_true(blocks > 0);
    sim_profile_clear(&prof);
    tsrc_spec_free(&spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparse_touches_within_bound),
        cmocka_unit_test(test_random_within_bound),
        cmocka_unit_test(test_partial_bound_higher),
        cmocka_unit_test(test_sparse_random_within_bound),
        cmocka_unit_test(test_compute_all_equals_each),
        cmocka_unit_test(test_compute_all_progress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
