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
#include "sim/predict.h"
#include "sim/run.h"
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

/* Runs every policy (the engine with recorded and with learned prediction) and
 * checks makespan, fetched and written-back bytes against the bound. */
static unsigned check_all(const sim_params_t *p, tsrc_spec_t *spec, uint64_t cap, bool verbose)
{
    sim_hooks_t h = {.open = tsrc_open, .open_ctx = spec};
    char err[256];
    sim_profile_t prof;
    assert_int_equal(sim_profile_run(p, &h, &prof, err, sizeof(err)), GMUX_OK);
    sim_bound_t b;
    assert_int_equal(sim_bound_compute(&prof, p, cap * CHUNK, &b), GMUX_OK);
    assert_true(b.exact);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparse_touches_within_bound),
        cmocka_unit_test(test_random_within_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
