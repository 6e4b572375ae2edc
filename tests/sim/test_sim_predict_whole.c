/*
 * A trusted template whose prediction is its argument's whole allocation (a
 * kernel that streams every byte of its buffers, `len=16*a1` with a1 the
 * element count) is a prediction like any other: the simulator keeps it,
 * though a whole-region *fallback* of the same size is left to faults. The
 * trace is a small copy of gmux-calibrate's validation chain
 * (docs/gpu/2026-11-30-run2/chain.txt): three buffers, each launch reads one
 * and writes the next, twice round.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/predict.h"
#include "sim/trace_io.h"
#include "sim_test_util.h"

#define MIB (1ull << 20)

static char trace_path[64];

/* Buffers of 48, 16 and 64 MiB: 128 MiB in all, the device of the runs. */
static const uint64_t base[3] = {0x10000000, 0x20000000, 0x30000000};
static const uint64_t size[3] = {48 * MIB, 16 * MIB, 64 * MIB};

static void write_chain(void)
{
    tmp_path(trace_path, sizeof(trace_path), "chain");
    FILE *f = fopen(trace_path, "w");
    assert_non_null(f);
    fprintf(f, "gmux-trace 1\ntask 0 chain\nkernel 0 chain_rw\n");
    for (int b = 0; b < 3; b++)
        fprintf(f, "alloc 0 %d 0x%llx %llu\n", b, (unsigned long long)base[b],
                (unsigned long long)size[b]);
    for (int i = 0; i < 6; i++) {
        int s = i % 3, d = (i + 1) % 3;
        fprintf(f,
                "launch 0 0 grid=64,1,1 block=256,1,1 ns=1000 args=p:0x%llx,v:%llu,p:0x%llx,"
                "v:%llu touch=r:0x%llx+%llu,w:0x%llx+%llu\n",
                (unsigned long long)base[s], (unsigned long long)(size[s] / 16),
                (unsigned long long)base[d], (unsigned long long)(size[d] / 16),
                (unsigned long long)base[s], (unsigned long long)size[s],
                (unsigned long long)base[d], (unsigned long long)size[d]);
    }
    fprintf(f, "end\n");
    assert_int_equal(fclose(f), 0);
}

static gmux_status_t open_chain(void *ctx, sim_source_t **src_p, char *err, size_t errlen)
{
    (void)ctx;
    return sim_trace_open(trace_path, src_p, err, errlen);
}

static void test_trusted_whole_allocation_is_kept(void **state)
{
    (void)state;
    write_chain();
    sim_predict_opts_t o = {0};
    sim_predictor_hooks_t ph;
    sim_predict_hooks(&o, &ph);
    sim_hooks_t h = {.open = open_chain, .predictor = &ph};
    sim_params_t p;
    sim_params_default(&p);
    sim_result_t r;
    char err[256] = "";
    gmux_status_t st = sim_run(&p, &h, SIM_POLICY_PROACTIVE, 128 * MIB, &r, err, sizeof(err));
    unlink(trace_path);
    if (st != GMUX_OK)
        fail_msg("sim_run: %s", err);
    /* Launches 1-3 train and check the templates (2 fitted, 1 held out);
     * launches 4-6 are predicted by them, exactly: at least their 256 MiB are
     * predicted and touched (of 512 MiB touched in all), and nothing else. */
    uint64_t trusted = 0;
    for (int i = 3; i < 6; i++)
        trusted += size[i % 3] + size[(i + 1) % 3];
    printf("predicted %llu touched %llu hit %llu (trusted launches touch %llu)\n",
           (unsigned long long)r.pred_bytes, (unsigned long long)r.pred_touched_bytes,
           (unsigned long long)r.pred_hit_bytes, (unsigned long long)trusted);
    assert_int_equal(r.pred_touched_bytes, 2 * trusted);
    assert_true(r.pred_hit_bytes >= trusted);
    assert_int_equal(r.pred_bytes, r.pred_hit_bytes);
    sim_result_clear(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trusted_whole_allocation_is_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
