/* Tests of the engine's cleaning: what became of each chunk cleaned
 * (eng_migrate_stats_t.clean_*), on small constructed reference strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "tfeed.h"

#define CH 4096u

static tfeed_t feed;

/* Runs the engine over the feed with cleaning on (write-backs 3.7x dearer
 * than fills, up to 4 chunks a launch, the copy engine back to the host
 * always idle); returns its stats. */
static eng_migrate_stats_t run_cleaning(uint32_t ntasks, uint32_t cap, uint32_t lookahead)
{
    tfeed_rewind(&feed);
    tback_t tb;
    eng_backend_t be = tback_backend(&tb, CH);
    tb.d2h_idle = true;
    eng_engine_params_t p = {.ntasks = ntasks,
                             .policy = ENG_PLACE_OPT,
                             .capacity_bytes = (uint64_t)cap * CH,
                             .chunk_size = CH,
                             .lookahead = lookahead,
                             .prefetch_slices = 2,
                             .batch_chunks = 3,
                             .quantum_ns = 100,
                             .h2d_bps = 44,
                             .d2h_bps = 12,
                             .clean_chunks = 4,
                             .feed = tfeed_feed(&feed)};
    eng_engine_t *e;
    assert_int_equal(eng_engine_create(&p, &be, &e), GMUX_OK);
    uint64_t now = 0;
    for (;;) {
        eng_step_t st;
        gmux_status_t rc = eng_engine_next(e, &st);
        if (rc == GMUX_ERR_NOT_FOUND)
            break;
        assert_int_equal(rc, GMUX_OK);
        now = (now > st.wait ? now : st.wait) + st.time_ns;
        assert_int_equal(eng_engine_complete(e, now), GMUX_OK);
        tb.now_ns = now;
    }
    assert_int_equal(tb.errors, 0);
    eng_migrate_stats_t ms = *eng_engine_stats(e);
    eng_engine_destroy(e);
    assert_int_equal(ms.bytes_clean, ms.cleans * CH);
    assert_true(ms.clean_rewritten + ms.clean_freed + ms.clean_dropped <= ms.bytes_clean);
    return ms;
}

/* Capacity 3, nothing evicted; a window of 2 launches. Task 0: L0 writes a0
 * (region 1), L1-L5 read b0 (region 3), then L6 writes a0 (WRITE: written
 * again after its cleaning), or region 1 is freed after L5 (FREE), or
 * neither (NONE: a0 stays on the device, its cleaning unused); task 1 reads
 * d0 at each step. Beyond the window at L0's cleaning, neither the write nor
 * the free is known. (A cleaning an eviction drops: test_cmd_sim's JSON.) */
static void test_clean_fates(void **state)
{
    (void)state;
    enum { WRITE, FREE, NONE };
    eng_migrate_stats_t ms[3];
    for (int how = WRITE; how <= NONE; how++) {
        tfeed_init(&feed, 2);
        tfeed_alloc(&feed, 0, 1, 1ull << 30, CH);
        tfeed_alloc(&feed, 0, 3, 3ull << 30, CH);
        tfeed_alloc(&feed, 1, 2, 2ull << 30, CH);
        for (uint32_t k = 0; k < 8; k++) {
            if (k == 0 || (how == WRITE && k == 6))
                tfeed_launch_mask(&feed, 0, 1ull << 30, CH, 1, 1, 100);
            else if (k < 6)
                tfeed_launch_mask(&feed, 0, 3ull << 30, CH, 1, 0, 100);
            if (how == FREE && k == 5)
                tfeed_free(&feed, 0, 1);
            tfeed_launch_mask(&feed, 1, 2ull << 30, CH, 1, 0, 100);
        }
        ms[how] = run_cleaning(2, 3, 2);
        assert_int_equal(ms[how].writebacks, 0);
        assert_int_equal(ms[how].clean_dropped, 0);
        assert_true(ms[how].bytes_clean >= CH);
    }
    assert_int_equal(ms[WRITE].clean_rewritten, CH);
    assert_int_equal(ms[WRITE].clean_freed, 0);
    assert_int_equal(ms[FREE].clean_freed, CH);
    assert_int_equal(ms[FREE].clean_rewritten, 0);
    assert_int_equal(ms[NONE].clean_rewritten + ms[NONE].clean_freed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_fates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
