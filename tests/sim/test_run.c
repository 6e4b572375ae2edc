/* Tests of simulated runs: the transfer bound is never beaten, capacity is
 * respected, bytes are conserved, reports are deterministic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sim/run.h"
#include "tsource.h"

#define CHUNK 65536u

static void small_params(sim_params_t *p, uint64_t cap_chunks)
{
    sim_params_default(p);
    p->chunk_bytes = CHUNK;
    p->hbm_bytes = (double)(cap_chunks * CHUNK);
    p->quantum_ns = 200000; /* a few launches per slice */
    p->lookahead = 64;
    p->batch_chunks = 4;
}

/* Every policy on many random workloads: never below the bound, in any term. */
static void test_bound_never_beaten(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 150; seed++) {
        tsrc_spec_t spec;
        tsrc_random(&spec, seed, 1 + seed % 4, 4, 6, 60, 6, CHUNK);
        sim_params_t p;
        uint64_t cap = 6 + seed % 12;
        small_params(&p, cap);
        sim_hooks_t h = {.open = tsrc_open, .open_ctx = &spec};
        char err[256];
        sim_profile_t prof;
        assert_int_equal(sim_profile_run(&p, &h, &prof, err, sizeof(err)), GMUX_OK);
        sim_bound_t b;
        assert_int_equal(sim_bound_compute(&prof, &p, cap * CHUNK, &b), GMUX_OK);
        assert_true(b.exact);
        assert_true(b.bound_ns >= b.compute_ns);
        for (int pol = 0; pol < SIM_POLICY_COUNT; pol++) {
            sim_result_t r;
            gmux_status_t st =
                sim_run(&p, &h, (sim_policy_t)pol, cap * CHUNK, &r, err, sizeof(err));
            assert_int_equal(st, GMUX_OK);
            if (pol != SIM_POLICY_ORACLE) {
                if (r.bytes_h2d < b.fetch_bytes || r.bytes_d2h < b.writeback_bytes ||
                    r.makespan_ns < b.bound_ns)
                    fprintf(stderr,
                            "seed %lu cap %lu %s: h2d %lu (bound %lu) d2h %lu (bound %lu) ms %lu "
                            "(bound %lu)\n",
                            (unsigned long)seed, (unsigned long)cap,
                            sim_policy_name((sim_policy_t)pol), (unsigned long)r.bytes_h2d,
                            (unsigned long)b.fetch_bytes, (unsigned long)r.bytes_d2h,
                            (unsigned long)b.writeback_bytes, (unsigned long)r.makespan_ns,
                            (unsigned long)b.bound_ns);
                assert_true(r.bytes_h2d >= b.fetch_bytes);
                assert_true(r.bytes_d2h >= b.writeback_bytes);
                assert_true(r.makespan_ns >= b.bound_ns);
                assert_true(r.peak_resident <= cap);
            } else {
                assert_int_equal(r.makespan_ns, b.compute_ns);
            }
            assert_int_equal(r.launches, prof.oracle.launches);
            sim_result_clear(&r);
        }
        sim_profile_clear(&prof);
        tsrc_spec_free(&spec);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_never_beaten),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
