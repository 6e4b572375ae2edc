/* Tests of simulated runs: the transfer bound is never beaten, capacity is
 * respected, bytes are conserved, reports are deterministic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/launch.h"
#include "sim/device.h"
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
    unsigned released_binds = 0; /* configurations the released write-back term decides */
    for (uint64_t run = 0; run < 300; run++) {
        /* seeds 1-150 at the default bandwidths, then again with transfers
         * slower than compute and writing back 4x slower than fetching, so that
         * the write-back terms decide */
        uint64_t seed = 1 + run % 150;
        tsrc_spec_t spec;
        tsrc_random(&spec, seed, 1 + seed % 4, 4, 6, 60, 6, CHUNK);
        sim_params_t p;
        uint64_t cap = 6 + seed % 12;
        small_params(&p, cap);
        if (run >= 150) {
            p.h2d_bps /= 50;
            p.d2h_bps = p.h2d_bps / 4;
        }
        sim_hooks_t h = {.open = tsrc_open, .open_ctx = &spec};
        char err[256];
        sim_profile_t prof;
        assert_int_equal(sim_profile_run(&p, &h, &prof, err, sizeof(err)), GMUX_OK);
        sim_bound_t b;
        assert_int_equal(sim_bound_compute(&prof, &p, cap * CHUNK, &b), GMUX_OK);
        assert_true(b.exact);
        assert_true(b.bound_ns >= b.compute_ns);
        double tf = (double)b.fetch_bytes * 1e9 / p.h2d_bps;
        double tw = (double)b.writeback_bytes * 1e9 / p.d2h_bps;
        if ((double)b.wb_released_ns > tf + 1 && (double)b.wb_released_ns > tw + 1 &&
            b.wb_released_ns > b.compute_ns)
            released_binds++;
        /* the last round: proactive again with the plain OPT engine (wb_aware 0) */
        for (int pol = 0; pol <= SIM_POLICY_COUNT; pol++) {
            sim_result_t r;
            sim_params_t q = p;
            q.wb_aware = pol == SIM_POLICY_COUNT ? 0 : p.wb_aware;
            sim_policy_t sp = pol == SIM_POLICY_COUNT ? SIM_POLICY_PROACTIVE : (sim_policy_t)pol;
            gmux_status_t st = sim_run(&q, &h, sp, cap * CHUNK, &r, err, sizeof(err));
            assert_int_equal(st, GMUX_OK);
            if (sp != SIM_POLICY_ORACLE) {
                if (r.bytes_h2d < b.fetch_bytes || r.bytes_d2h < b.writeback_bytes ||
                    r.makespan_ns < b.bound_ns)
                    fprintf(stderr,
                            "seed %lu cap %lu %s: h2d %lu (bound %lu) d2h %lu (bound %lu) ms %lu "
                            "(bound %lu)\n",
                            (unsigned long)seed, (unsigned long)cap, sim_policy_name(sp),
                            (unsigned long)r.bytes_h2d, (unsigned long)b.fetch_bytes,
                            (unsigned long)r.bytes_d2h, (unsigned long)b.writeback_bytes,
                            (unsigned long)r.makespan_ns, (unsigned long)b.bound_ns);
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
    /* the term that decides the bound is checked too, not only the others */
    fprintf(stderr, "released write-back term decided %u of 300 bounds\n", released_binds);
    assert_true(released_binds >= 5);
}

/* Demand paging: FIFO-by-migration eviction, fault batches, write-backs. */
static void test_demand_model(void **state)
{
    (void)state;
    tsrc_spec_t spec;
    tsrc_spec_init(&spec, 1);
    tsrc_alloc(&spec, 0, 1, 1ull << 32, 3 * CHUNK);
    const uint64_t b = 1ull << 32;
    sim_range_t a = {b, CHUNK, ENG_ACCESS_WRITE}, bb = {b + CHUNK, 10, ENG_ACCESS_READ},
                c = {b + 2 * CHUNK, 10, ENG_ACCESS_READ}, ar = {b, 10, ENG_ACCESS_READ};
    sim_range_t ab[2] = {a, bb};
    tsrc_launch(&spec, 0, 1000, 2, ab);  /* faults A, B (one batch) */
    tsrc_launch(&spec, 0, 1000, 1, &ar); /* A hit: LRU would keep A, FIFO evicts it */
    tsrc_launch(&spec, 0, 1000, 1, &c);  /* C evicts A (filled first): A is dirty */
    tsrc_launch(&spec, 0, 1000, 1, &ar); /* A again evicts B (clean) */
    sim_params_t p;
    small_params(&p, 2);
    p.fault_batch = 1;
    p.xfer_call_ns = 0;
    sim_hooks_t h = {.open = tsrc_open, .open_ctx = &spec};
    char err[256];
    sim_result_t r;
    assert_int_equal(sim_run(&p, &h, SIM_POLICY_DEMAND, 2 * CHUNK, &r, err, sizeof(err)), GMUX_OK);
    assert_int_equal(r.faults, 4);
    assert_int_equal(r.bytes_h2d, 4 * CHUNK);
    assert_int_equal(r.bytes_d2h, CHUNK);
    /* faulted chunks move at the demand-paging rate, not the prefetch one */
    uint64_t xfer = (uint64_t)(CHUNK * 1e9 / p.fault_bps + 0.999999);
    uint64_t wb = (uint64_t)(CHUNK * 1e9 / p.d2h_bps + 0.999999);
    uint64_t lat = (uint64_t)p.fault_latency_ns;
    /* batch of one fault each: 4 latencies, 4 fills, 1 write-back, 4 launches */
    assert_int_equal(r.makespan_ns, 4 * lat + 4 * xfer + wb + 4000);
    sim_result_clear(&r);
    p.uvm_lru = 1; /* with LRU the third launch evicts B instead, the fourth hits */
    assert_int_equal(sim_run(&p, &h, SIM_POLICY_DEMAND, 2 * CHUNK, &r, err, sizeof(err)), GMUX_OK);
    assert_int_equal(r.faults, 3);
    sim_result_clear(&r);
    tsrc_spec_free(&spec);
}

/* The copy engines' busy time of an engine run: what its bytes take at each
 * engine's rate (one ns of rounding per transfer at most, no call cost here);
 * nothing for the demand policy, which has no copy engines of its own. */
static void test_engine_busy(void **state)
{
    (void)state;
    tsrc_spec_t spec;
    tsrc_spec_init(&spec, 1);
    const uint64_t b = 1ull << 32;
    tsrc_alloc(&spec, 0, 1, b, 3 * CHUNK);
    sim_range_t w[3] = {{b, CHUNK, ENG_ACCESS_WRITE},
                        {b + CHUNK, CHUNK, ENG_ACCESS_WRITE},
                        {b + 2 * CHUNK, CHUNK, ENG_ACCESS_WRITE}};
    for (int i = 0; i < 6; i++) /* three dirty chunks cycling through two slots */
        tsrc_launch(&spec, 0, 1000, 1, &w[i % 3]);
    sim_params_t p;
    small_params(&p, 2);
    p.xfer_call_ns = 0;
    sim_hooks_t h = {.open = tsrc_open, .open_ctx = &spec};
    char err[256];
    sim_result_t r;
    for (int pol = SIM_POLICY_PROACTIVE; pol <= SIM_POLICY_PROACTIVE_LRU; pol++) {
        assert_int_equal(sim_run(&p, &h, (sim_policy_t)pol, 2 * CHUNK, &r, err, sizeof(err)),
                         GMUX_OK);
        assert_true(r.bytes_d2h >= CHUNK); /* some dirty chunk was written back */
        double h2d = (double)r.bytes_h2d * 1e9 / p.h2d_bps;
        double d2h = (double)r.bytes_d2h * 1e9 / p.d2h_bps;
        assert_true((double)r.busy_h2d_ns >= h2d);
        assert_true((double)r.busy_h2d_ns <= h2d + (double)(r.bytes_h2d / CHUNK));
        assert_true((double)r.busy_d2h_ns >= d2h);
        assert_true((double)r.busy_d2h_ns <= d2h + (double)(r.bytes_d2h / CHUNK));
        sim_result_clear(&r);
    }
    assert_int_equal(sim_run(&p, &h, SIM_POLICY_DEMAND, 2 * CHUNK, &r, err, sizeof(err)), GMUX_OK);
    assert_true(r.bytes_h2d > 0);
    assert_int_equal(r.busy_h2d_ns, 0);
    assert_int_equal(r.busy_d2h_ns, 0);
    sim_result_clear(&r);
    tsrc_spec_free(&spec);
}

static void test_params(void **state)
{
    (void)state;
    sim_params_t p;
    char err[1024]; /* as gmux sim's: room for the list of known parameters */
    sim_params_default(&p);
    assert_true(p.hbm_bytes == 141e9);
    assert_true(p.fault_batch == 256);
    assert_true(p.wb_aware == 1); /* the engine weighs write-backs by default */
    assert_int_equal(sim_params_set(&p, "chunk=64KiB", err, sizeof(err)), GMUX_OK);
    assert_true(p.chunk_bytes == 65536);
    assert_int_equal(sim_params_set(&p, "h2d_gbps=25.5", err, sizeof(err)), GMUX_OK);
    assert_true(p.h2d_bps == 25.5e9);
    assert_int_equal(sim_params_set(&p, "fault_latency_us=45", err, sizeof(err)), GMUX_OK);
    assert_true(p.fault_latency_ns == 45000);
    assert_int_equal(sim_params_set(&p, "quantum_ms=2", err, sizeof(err)), GMUX_OK);
    assert_true(p.quantum_ns == 2e6);
    assert_int_equal(sim_params_check(&p, err, sizeof(err)), GMUX_OK);
    assert_int_equal(sim_params_set(&p, "h2d_gbps=-1", err, sizeof(err)), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "h2d_gbps"));
    assert_int_equal(sim_params_set(&p, "bogus=1", err, sizeof(err)), GMUX_ERR_NOT_FOUND);
    assert_non_null(strstr(err, "bogus"));
    /* the known ones named: the first, one in the middle, the last closing the list */
    assert_non_null(strstr(err, "(known: "));
    assert_non_null(strstr(err, " chunk,"));
    assert_non_null(strstr(err, " quantum_ms"));
    assert_int_equal(err[strlen(err) - 1], ')');
    char small[24]; /* a short buffer is cut, still a string */
    assert_int_equal(sim_params_set(&p, "bogus=1", small, sizeof(small)), GMUX_ERR_NOT_FOUND);
    assert_int_equal(strlen(small), sizeof(small) - 1);
    assert_int_equal(sim_params_set(&p, "chunk", err, sizeof(err)), GMUX_ERR_PARSE);
    assert_int_equal(sim_params_set(&p, "fault_latency_us=1e300", err, sizeof(err)), GMUX_OK);
    assert_int_equal(sim_params_check(&p, err, sizeof(err)), GMUX_ERR_RANGE);
    sim_params_default(&p);
    assert_int_equal(sim_params_set(&p, "chunk=3000", err, sizeof(err)), GMUX_OK);
    assert_int_equal(sim_params_check(&p, err, sizeof(err)), GMUX_ERR_RANGE);
}

/* Every value the check accepts converts to the engine's integer type: until
 * 2026-12-01 wb_clean=4294967296 passed and wrapped to 0 (no cleaning at all),
 * and wb_slack_ms had no upper bound (a double beyond 2^64 ns cast to uint64_t). */
static void test_params_engine_ranges(void **state)
{
    (void)state;
    static const struct {
        const char *kv;
        gmux_status_t want;
    } cases[] = {
        {"wb_clean=4294967295", GMUX_OK},
        {"wb_clean=4294967296", GMUX_ERR_RANGE},
        {"wb_clean=18446744073709551615", GMUX_ERR_RANGE},
        {"wb_slack_ms=1e9", GMUX_OK},
        {"wb_slack_ms=1e10", GMUX_ERR_RANGE},
        {"wb_slack_ms=1e300", GMUX_ERR_RANGE},
        /* 2^64 as a double: its cast to uint64_t was undefined (clang UBSan in
         * fuzz_params, 2026-12-03; gcc's code happened to give 0, refused) */
        {"chunk=18446744073709551615", GMUX_ERR_RANGE},
        {"fault_block=18446744073709551615", GMUX_ERR_RANGE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sim_params_t p;
        char err[256] = "";
        sim_params_default(&p);
        assert_int_equal(sim_params_set(&p, cases[i].kv, err, sizeof(err)), GMUX_OK);
        gmux_status_t st = sim_params_check(&p, err, sizeof(err));
        if (st != cases[i].want)
            fail_msg("%s: check gave %d, want %d", cases[i].kv, st, cases[i].want);
        if (st == GMUX_OK) {
            assert_true((double)(uint32_t)p.wb_clean == p.wb_clean);
            assert_true((double)(uint64_t)p.wb_slack_ns == p.wb_slack_ns);
        }
    }
}

/* One allocation past SIM_MAX_CHUNKS (4 KiB chunks, 256 GiB + 4 KiB) is refused
 * with a message naming it, by the profile pass and every policy, before the
 * per-chunk arrays grow. Before 2026-12-01 it was taken (ids ran to 2^30, some
 * 120 GiB of engine state): in a child limited to 2 GiB of address space it
 * failed with "out of memory" instead. ASan reserves more than that for its
 * shadow, so there the child runs without the limit (refused first, it stays
 * small). */
static void test_chunk_ids_bounded(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* not under ASan or TSan: their shadow memory needs more */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
        struct rlimit rl = {2ull << 30, 2ull << 30};
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(3);
#endif
        tsrc_spec_t spec;
        tsrc_spec_init(&spec, 1);
        uint64_t base = 1ull << 40, size = SIM_MAX_CHUNKS * 4096 + 4096;
        tsrc_alloc(&spec, 0, 7, base, size);
        sim_range_t r = {.addr = base, .len = 4096, .mode = ENG_ACCESS_READ};
        tsrc_launch(&spec, 0, 1000, 1, &r);
        tsrc_free(&spec, 0, 7);
        sim_params_t p;
        sim_params_default(&p);
        p.chunk_bytes = 4096;
        p.fault_block = 4096;
        sim_hooks_t h = {.open = tsrc_open, .open_ctx = &spec};
        char err[512] = "";
        sim_profile_t prof;
        gmux_status_t st = sim_profile_run(&p, &h, &prof, err, sizeof(err));
        if (st != GMUX_ERR_RANGE || !strstr(err, "allocation 7") || !strstr(err, "chunk")) {
            fprintf(stderr, "profile: %d '%s'\n", st, err);
            _exit(1);
        }
        for (int pol = 0; pol < SIM_POLICY_ORACLE; pol++) {
            sim_result_t res;
            err[0] = '\0';
            st = sim_run(&p, &h, (sim_policy_t)pol, 1ull << 30, &res, err, sizeof(err));
            if (st != GMUX_ERR_RANGE || !strstr(err, "allocation 7")) {
                fprintf(stderr, "%s: %d '%s'\n", sim_policy_name((sim_policy_t)pol), st, err);
                _exit(2);
            }
        }
        tsrc_spec_free(&spec);
        _exit(0);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
}

/* Simulated time that would pass 2^64 ns: 18000 fetches of a 1 GiB chunk at
 * 1 kB/s (2e22 ns). The bound's fetch term saturates instead of wrapping (it was
 * 18 ms, the compute alone: a double beyond 2^64 cast to uint64_t), and every
 * policy fails with a range error naming the limit (their clocks wrapped to
 * about 2^64 ns, with a copy engine "busy" for 4.8% of it). */
static void test_clock_overflow_refused(void **state)
{
    (void)state;
    const uint64_t gib = 1ull << 30, base = 1ull << 40;
    tsrc_spec_t spec;
    tsrc_spec_init(&spec, 1);
    tsrc_alloc(&spec, 0, 1, base, 2 * gib);
    for (uint32_t i = 0; i < 18000; i++) {
        sim_range_t r = {.addr = base + (i % 2) * gib, .len = 4096, .mode = ENG_ACCESS_READ};
        tsrc_launch(&spec, 0, 1000, 1, &r);
    }
    tsrc_free(&spec, 0, 1);
    sim_params_t p;
    sim_params_default(&p);
    p.chunk_bytes = p.fault_block = (double)gib;
    p.hbm_bytes = (double)gib;
    p.h2d_bps = p.d2h_bps = p.fault_bps = 1e3;
    char err[256];
    assert_int_equal(sim_params_check(&p, err, sizeof(err)), GMUX_OK);
    sim_hooks_t h = {.open = tsrc_open, .open_ctx = &spec};
    sim_profile_t prof;
    assert_int_equal(sim_profile_run(&p, &h, &prof, err, sizeof(err)), GMUX_OK);
    sim_bound_t b;
    assert_int_equal(sim_bound_compute(&prof, &p, gib, &b), GMUX_OK);
    assert_true(b.exact);
    assert_true(b.fetch_bytes == 18000 * gib);
    assert_true(b.bound_ns == UINT64_MAX); /* 2e22 ns, saturated: still a lower bound */
    sim_profile_clear(&prof);
    for (int pol = 0; pol < SIM_POLICY_ORACLE; pol++) {
        sim_result_t r;
        err[0] = '\0';
        gmux_status_t st = sim_run(&p, &h, (sim_policy_t)pol, gib, &r, err, sizeof(err));
        if (st != GMUX_ERR_RANGE || !strstr(err, "2^63 ns"))
            fail_msg("%s: %d '%s' makespan %" PRIu64, sim_policy_name((sim_policy_t)pol), st, err,
                     r.makespan_ns);
    }
    tsrc_spec_free(&spec);
}

/* The fault wait saturates like every other clock: 2^32 faults one at a time at
 * 10^12 ns each wrapped to a small wait. */
static void test_fault_wait_saturates(void **state)
{
    (void)state;
    assert_int_equal(sim_fault_wait_ns(0, 4, 1000), 0);
    assert_int_equal(sim_fault_wait_ns(1, 4, 1000), 1000);
    assert_int_equal(sim_fault_wait_ns(9, 4, 1000), 3000);
    assert_int_equal(sim_fault_wait_ns(UINT32_MAX, 1, 1000000000000ull), UINT64_MAX);
    assert_int_equal(sim_fault_wait_ns(UINT64_MAX, 1, 2), UINT64_MAX);
    assert_int_equal(sim_fault_wait_ns(UINT64_MAX, 1000000000ull, 1),
                     UINT64_MAX / 1000000000ull + 1);
}

/* Progress: the hook hears of every SIM_PROGRESS_EVERY-th launch of a run,
 * with the count so far and the run's name (the CLI decides how often to
 * say it; it said nothing in a 5 s run when this was every 2^20). */
typedef struct {
    unsigned calls;
    uint64_t last;
    char what[32];
} progress_seen_t;

static void progress_hook(void *ctx, const char *what, uint64_t launches)
{
    progress_seen_t *ps = ctx;
    ps->calls++;
    assert_true(launches > ps->last);
    assert_int_equal(launches % SIM_PROGRESS_EVERY, 0);
    ps->last = launches;
    snprintf(ps->what, sizeof(ps->what), "%s", what);
}

static void test_progress_hook(void **state)
{
    (void)state;
    tsrc_spec_t spec;
    tsrc_spec_init(&spec, 1);
    const uint64_t b = 1ull << 32;
    tsrc_alloc(&spec, 0, 1, b, CHUNK);
    sim_range_t r0 = {b, 64, ENG_ACCESS_READ};
    const unsigned n = 2 * SIM_PROGRESS_EVERY + 5;
    for (unsigned i = 0; i < n; i++)
        tsrc_launch(&spec, 0, 100, 1, &r0);
    sim_params_t p;
    small_params(&p, 2);
    progress_seen_t ps = {0};
    sim_hooks_t h = {
        .open = tsrc_open, .open_ctx = &spec, .progress = progress_hook, .progress_ctx = &ps};
    char err[256];
    sim_result_t r;
    assert_int_equal(sim_run(&p, &h, SIM_POLICY_DEMAND, 2 * CHUNK, &r, err, sizeof(err)), GMUX_OK);
    assert_int_equal(r.launches, n);
    assert_int_equal(ps.calls, 2);
    assert_string_equal(ps.what, "demand");
    sim_result_clear(&r);
    tsrc_spec_free(&spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demand_model),
        cmocka_unit_test(test_progress_hook),
        cmocka_unit_test(test_engine_busy),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_params_engine_ranges),
        cmocka_unit_test(test_chunk_ids_bounded),
        cmocka_unit_test(test_clock_overflow_refused),
        cmocka_unit_test(test_fault_wait_saturates),
        cmocka_unit_test(test_bound_never_beaten),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
