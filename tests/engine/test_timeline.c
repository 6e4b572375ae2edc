/* Tests of the timeline: plan order, next uses, window size, predictor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/timeline.h"
#include "tfeed.h"
#include "trand.h"

#define CH 4096u

static tfeed_t feed;

typedef struct setup {
    eng_regions_t *regs;
    eng_sched_t *sched;
    eng_timeline_t *tl;
} setup_t;

static void open_tl(setup_t *s, uint32_t ntasks, uint64_t quantum, uint32_t lookahead,
                    eng_predict_fn predict)
{
    assert_int_equal(eng_regions_create(ntasks, CH, &s->regs), GMUX_OK);
    assert_int_equal(eng_sched_create(ntasks, quantum, &s->sched), GMUX_OK);
    eng_timeline_params_t p = {
        .lookahead = lookahead, .feed = tfeed_feed(&feed), .predict = predict};
    assert_int_equal(eng_timeline_create(&p, s->regs, s->sched, &s->tl), GMUX_OK);
}

static void close_tl(setup_t *s)
{
    eng_timeline_destroy(s->tl);
    eng_sched_destroy(s->sched);
    eng_regions_destroy(s->regs);
}

static void test_plan_order_and_next_use(void **state)
{
    (void)state;
    /* two tasks, 6 launches each of 100 ns, quantum 200 ns: slices of 2 launches */
    tfeed_init(&feed, 2);
    for (uint32_t t = 0; t < 2; t++) {
        tfeed_alloc(&feed, t, 1, 1ull << 20, 8 * CH);
        for (uint32_t k = 0; k < 6; k++)
            tfeed_launch_mask(&feed, t, 1ull << 20, CH, 1u << (k % 3), 0, 100);
    }
    setup_t s;
    open_tl(&s, 2, 200, 4, NULL);
    uint32_t tasks[12], chunks[12];
    uint64_t slices[12];
    uint64_t n = 0;
    for (;;) {
        assert_int_equal(eng_timeline_fill(s.tl), GMUX_OK);
        assert_true(eng_timeline_count(s.tl) <= 4); /* the window stays bounded */
        const eng_entry_t *e = eng_timeline_peek(s.tl, 0);
        if (!e)
            break;
        assert_int_equal(e->pos, n);
        assert_int_equal(e->nrefs, 1);
        tasks[n] = e->task;
        slices[n] = e->slice;
        chunks[n] = ENG_REF_CHUNK(eng_timeline_refs(s.tl, e)[0]);
        /* the next use of this launch's chunk is this position */
        assert_int_equal(eng_regions_chunk(s.regs, chunks[n])->next_use, n);
        eng_timeline_pop(s.tl);
        n++;
    }
    assert_int_equal(n, 12);
    assert_true(eng_timeline_done(s.tl));
    const uint32_t want_tasks[12] = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1};
    assert_memory_equal(tasks, want_tasks, sizeof(want_tasks));
    for (uint32_t i = 0; i < 12; i++)
        assert_int_equal(slices[i], 1 + i / 2);
    /* task 0 and task 1 have different chunks for the same offsets */
    assert_int_not_equal(chunks[0], chunks[2]);
    close_tl(&s);
}

static void test_next_after_and_frees(void **state)
{
    (void)state;
    tfeed_init(&feed, 1);
    tfeed_alloc(&feed, 0, 1, 0, 4 * CH);
    const uint32_t masks[6] = {1, 2, 1, 4, 2, 1};
    for (int k = 0; k < 6; k++)
        tfeed_launch_mask(&feed, 0, 0, CH, masks[k], 0, 10);
    tfeed_free(&feed, 0, 1);
    tfeed_alloc(&feed, 0, 2, 0, CH);
    tfeed_launch_mask(&feed, 0, 0, CH, 1, 1, 10);
    setup_t s;
    open_tl(&s, 1, 1000, 100, NULL);
    assert_int_equal(eng_timeline_fill(s.tl), GMUX_OK);
    assert_int_equal(eng_timeline_count(s.tl), 8); /* 6 launches, the free, 1 launch */
    const eng_entry_t *e0 = eng_timeline_peek(s.tl, 0);
    uint32_t c0 = ENG_REF_CHUNK(eng_timeline_refs(s.tl, e0)[0]);
    assert_int_equal(eng_timeline_next_after(s.tl, c0, 0), 2);
    assert_int_equal(eng_timeline_next_after(s.tl, c0, 2), 5);
    assert_int_equal(eng_timeline_next_after(s.tl, c0, 5), ENG_POS_INF);
    const eng_entry_t *fr = eng_timeline_peek(s.tl, 6);
    assert_int_equal(fr->kind, ENG_ITEM_FREE);
    const eng_entry_t *last = eng_timeline_peek(s.tl, 7);
    uint32_t cl = ENG_REF_CHUNK(eng_timeline_refs(s.tl, last)[0]);
    assert_int_not_equal(cl, c0); /* ids of a region are reused only after its free ran */
    assert_true(eng_timeline_refs(s.tl, last)[0] & ENG_REF_WRITE);
    close_tl(&s);
}

static eng_range_t pred_out[1];

static gmux_status_t predict_first_chunk(void *ctx, uint32_t task, const eng_launch_t *l,
                                         const eng_range_t *rec, uint32_t nrec,
                                         const eng_range_t **r_p, uint32_t *n_p)
{
    (void)ctx;
    (void)task;
    (void)l;
    (void)rec;
    (void)nrec;
    pred_out[0] = (eng_range_t){0, CH, ENG_ACCESS_READ};
    *r_p = pred_out;
    *n_p = 1;
    return GMUX_OK;
}

/* Ranges per planned launch: L0 reads c0, L1 reads then writes it (two
 * ranges, one reference), L2 reads it, L3 writes it. */
static eng_range_t rw_out[2];
static uint32_t rw_calls;

static gmux_status_t predict_rw(void *ctx, uint32_t task, const eng_launch_t *l,
                                const eng_range_t *rec, uint32_t nrec, const eng_range_t **r_p,
                                uint32_t *n_p)
{
    (void)ctx;
    (void)task;
    (void)l;
    (void)rec;
    (void)nrec;
    uint32_t k = rw_calls++;
    uint32_t n = 0;
    if (k != 3)
        rw_out[n++] = (eng_range_t){0, CH / 2, ENG_ACCESS_READ};
    if (k == 1 || k == 3)
        rw_out[n++] = (eng_range_t){CH / 2, CH / 2, ENG_ACCESS_WRITE};
    *r_p = rw_out;
    *n_p = n;
    return GMUX_OK;
}

/* ENG_CHUNK_NEXTW follows the chunk's next planned use as launches run. */
static void test_next_use_writes_flag(void **state)
{
    (void)state;
    tfeed_init(&feed, 1);
    tfeed_alloc(&feed, 0, 1, 0, CH);
    for (int k = 0; k < 4; k++)
        tfeed_launch_mask(&feed, 0, 0, CH, 1, 0, 10);
    rw_calls = 0;
    setup_t s;
    open_tl(&s, 1, 1000, 100, predict_rw);
    assert_int_equal(eng_timeline_fill(s.tl), GMUX_OK);
    assert_int_equal(eng_timeline_count(s.tl), 4);
    const eng_entry_t *e0 = eng_timeline_peek(s.tl, 0);
    eng_chunk_t *c = eng_regions_chunk(s.regs, ENG_REF_CHUNK(eng_timeline_refs(s.tl, e0)[0]));
    const bool want[5] = {false, true, false, true, false}; /* next use L0..L3, then none */
    for (int k = 0; k < 5; k++) {
        assert_int_equal((c->flags & ENG_CHUNK_NEXTW) != 0, want[k]);
        if (k < 4)
            eng_timeline_pop(s.tl);
    }
    assert_int_equal(c->next_use, ENG_POS_INF);
    close_tl(&s);
}

static void test_predictor_drives_refs(void **state)
{
    (void)state;
    tfeed_init(&feed, 1);
    tfeed_alloc(&feed, 0, 1, 0, 4 * CH);
    tfeed_launch_mask(&feed, 0, 0, CH, 6, 0, 10);
    setup_t s;
    open_tl(&s, 1, 1000, 10, predict_first_chunk);
    assert_int_equal(eng_timeline_fill(s.tl), GMUX_OK);
    const eng_entry_t *e = eng_timeline_peek(s.tl, 0);
    assert_int_equal(e->nrefs, 1);  /* predicted: chunk 0 */
    assert_int_equal(e->ntrefs, 2); /* recorded: chunks 1 and 2 */
    uint32_t p0 = ENG_REF_CHUNK(eng_timeline_refs(s.tl, e)[0]);
    uint32_t t0 = ENG_REF_CHUNK(eng_timeline_truth(s.tl, e)[0]);
    assert_int_equal(t0, p0 + 1);
    assert_int_equal(eng_regions_chunk(s.regs, p0)->next_use, 0);
    assert_int_equal(eng_regions_chunk(s.regs, t0)->next_use, ENG_POS_INF);
    close_tl(&s);
}

/* A feed of one task: one allocation of 4 chunks at 0, then one launch over `ranges`. */
static const eng_range_t *blk_ranges;
static uint32_t blk_nranges, blk_next;

static gmux_status_t blk_feed(void *ctx, uint32_t task, eng_item_t *it)
{
    (void)ctx;
    (void)task;
    memset(it, 0, sizeof(*it));
    if (blk_next == 0) {
        it->kind = ENG_ITEM_ALLOC;
        it->id = 1;
        it->size = 4 * CH;
    } else if (blk_next == 1) {
        it->kind = ENG_ITEM_LAUNCH;
        it->time_ns = 10;
        it->ranges = blk_ranges;
        it->nranges = blk_nranges;
    } else {
        return GMUX_ERR_NOT_FOUND;
    }
    blk_next++;
    return GMUX_OK;
}

/* Touched-block masks beside the truth refs: ranges spanning blocks and
 * chunks, several ranges on one chunk merged (blocks and write flag). */
static void test_block_masks(void **state)
{
    (void)state;
    const eng_range_t rg[] = {
        {0, 1, ENG_ACCESS_READ},              /* chunk 0, block 0 */
        {1500, 3000, ENG_ACCESS_READ},        /* chunk 0 blocks 1-3, chunk 1 block 0 */
        {2 * CH + 2048, 1, ENG_ACCESS_WRITE}, /* chunk 2, block 2, written */
        {2 * CH, 1, ENG_ACCESS_READ},         /* chunk 2, block 0 */
        {2 * CH + 1023, 2, ENG_ACCESS_READ},  /* chunk 2, blocks 0 and 1 */
    };
    blk_ranges = rg;
    blk_nranges = 5;
    blk_next = 0;
    setup_t s;
    assert_int_equal(eng_regions_create(1, CH, &s.regs), GMUX_OK);
    assert_int_equal(eng_sched_create(1, 1000, &s.sched), GMUX_OK);
    eng_timeline_params_t p = {.lookahead = 4, .feed = {blk_feed, NULL}, .block_size = 3000};
    assert_int_equal(eng_timeline_create(&p, s.regs, s.sched, &s.tl), GMUX_ERR_INVALID);
    p.block_size = CH / 64; /* 64 blocks: more than a mask holds */
    assert_int_equal(eng_timeline_create(&p, s.regs, s.sched, &s.tl), GMUX_ERR_INVALID);
    p.block_size = CH / 4;
    assert_int_equal(eng_timeline_create(&p, s.regs, s.sched, &s.tl), GMUX_OK);
    assert_int_equal(eng_timeline_fill(s.tl), GMUX_OK);
    const eng_entry_t *e = eng_timeline_peek(s.tl, 0);
    assert_non_null(e);
    assert_int_equal(e->ntrefs, 3);
    const uint32_t *tr = eng_timeline_truth(s.tl, e);
    const uint32_t *tb = eng_timeline_blocks(s.tl, e);
    assert_non_null(tb);
    uint32_t c0 = ENG_REF_CHUNK(tr[0]);
    assert_int_equal(ENG_REF_CHUNK(tr[1]), c0 + 1);
    assert_int_equal(ENG_REF_CHUNK(tr[2]), c0 + 2);
    assert_int_equal(tb[0], 0xfu);
    assert_int_equal(tb[1], 0x1u);
    assert_int_equal(tb[2], 0x7u);
    assert_int_equal(tr[0] & ENG_REF_WRITE, 0);
    assert_int_equal(tr[2] & ENG_REF_WRITE, ENG_REF_WRITE);
    close_tl(&s);
    /* without a block size there are no masks */
    blk_next = 0;
    p.block_size = 0;
    assert_int_equal(eng_regions_create(1, CH, &s.regs), GMUX_OK);
    assert_int_equal(eng_sched_create(1, 1000, &s.sched), GMUX_OK);
    assert_int_equal(eng_timeline_create(&p, s.regs, s.sched, &s.tl), GMUX_OK);
    assert_int_equal(eng_timeline_fill(s.tl), GMUX_OK);
    e = eng_timeline_peek(s.tl, 0);
    assert_null(eng_timeline_blocks(s.tl, e));
    assert_int_equal(e->ntrefs, 3);
    close_tl(&s);
}

/* Random launches over a few allocations against a per-block reference:
 * chunks in first-touch order, deduplicated within a launch, write flags and
 * touched blocks merged; ranges partly or wholly outside any allocation. */
#define RND_REGS     4
#define RND_LAUNCHES 120
#define RND_RANGES   6

static const uint64_t rnd_base[RND_REGS] = {1ull << 20, (1ull << 20) + 9 * CH, 3ull << 20,
                                            (3ull << 20) + 40 * CH + 100};
static const uint64_t rnd_size[RND_REGS] = {9 * CH, 5 * CH + 7, 40 * CH + 100, 17 * CH - 1};
static eng_range_t rnd_rg[RND_LAUNCHES][RND_RANGES];
static uint32_t rnd_n[RND_LAUNCHES], rnd_next;

static gmux_status_t rnd_feed(void *ctx, uint32_t task, eng_item_t *it)
{
    (void)ctx;
    (void)task;
    memset(it, 0, sizeof(*it));
    if (rnd_next < RND_REGS) {
        it->kind = ENG_ITEM_ALLOC;
        it->id = rnd_next + 1;
        it->base = rnd_base[rnd_next];
        it->size = rnd_size[rnd_next];
    } else if (rnd_next < RND_REGS + RND_LAUNCHES) {
        it->kind = ENG_ITEM_LAUNCH;
        it->time_ns = 1;
        it->ranges = rnd_rg[rnd_next - RND_REGS];
        it->nranges = rnd_n[rnd_next - RND_REGS];
    } else {
        return GMUX_ERR_NOT_FOUND;
    }
    rnd_next++;
    return GMUX_OK;
}

/* The predicted ranges: the recorded ones from the second on. */
static gmux_status_t rnd_predict(void *ctx, uint32_t task, const eng_launch_t *launch,
                                 const eng_range_t *rec, uint32_t nrec, const eng_range_t **out,
                                 uint32_t *nout)
{
    (void)ctx;
    (void)task;
    (void)launch;
    *out = nrec ? rec + 1 : rec;
    *nout = nrec ? nrec - 1 : 0;
    return GMUX_OK;
}

/* The reference: every block of every chunk tested for overlap on its own. */
static uint32_t rnd_expect(const eng_regions_t *regs, const eng_range_t *rg, uint32_t n,
                           uint64_t bs, uint32_t *refs, uint32_t *masks)
{
    uint32_t nref = 0;
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t r = 0; r < RND_REGS; r++) {
            uint64_t b0 = rnd_base[r], e0 = b0 + rnd_size[r];
            if (rg[i].len == 0 || rg[i].addr < b0 || rg[i].addr >= e0)
                continue;
            uint64_t lo = rg[i].addr, hi = rg[i].addr + rg[i].len < e0 ? lo + rg[i].len : e0;
            uint32_t first = eng_regions_get(regs, eng_regions_find(regs, 0, b0))->first_chunk;
            for (uint64_t k = 0; b0 + k * CH < e0; k++) {
                uint32_t m = 0;
                bool hit = false;
                for (uint64_t j = 0; j * (bs ? bs : CH) < CH; j++) {
                    uint64_t s = b0 + k * CH + j * (bs ? bs : CH), e = s + (bs ? bs : CH);
                    if (s < hi && e > lo) {
                        hit = true;
                        m |= bs ? 1u << j : 0;
                    }
                }
                if (!hit)
                    continue;
                uint32_t c = first + (uint32_t)k,
                         w = rg[i].mode & ENG_ACCESS_WRITE ? ENG_REF_WRITE : 0;
                uint32_t at = 0;
                while (at < nref && ENG_REF_CHUNK(refs[at]) != c)
                    at++;
                if (at == nref) {
                    refs[nref] = c;
                    masks[nref++] = 0;
                }
                refs[at] |= w;
                masks[at] |= m;
            }
        }
    }
    return nref;
}

static void test_random_ranges(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (uint32_t l = 0; l < RND_LAUNCHES; l++) {
        rnd_n[l] = (uint32_t)(trand_next(&x) % (RND_RANGES + 1));
        for (uint32_t i = 0; i < rnd_n[l]; i++) {
            uint32_t r = (uint32_t)(trand_next(&x) % RND_REGS);
            uint64_t off = trand_next(&x) % (rnd_size[r] + 2 * CH);
            uint64_t len =
                trand_next(&x) % 4 == 0 ? trand_next(&x) % 64 : trand_next(&x) % (12 * CH);
            rnd_rg[l][i] = (eng_range_t){
                .addr = rnd_base[r] + off - CH,
                .len = len,
                .mode = (uint8_t)(trand_next(&x) % 2 ? ENG_ACCESS_WRITE : ENG_ACCESS_READ)};
        }
    }
    const uint64_t sizes[] = {0, CH / 32, CH / 8, CH / 2, CH};
    for (uint32_t v = 0; v < 10; v++) {
        uint64_t bs = sizes[v % 5];
        rnd_next = 0;
        setup_t s;
        assert_int_equal(eng_regions_create(1, CH, &s.regs), GMUX_OK);
        assert_int_equal(eng_sched_create(1, 1u << 30, &s.sched), GMUX_OK);
        eng_timeline_params_t p = {.lookahead = 2 * RND_LAUNCHES,
                                   .feed = {rnd_feed, NULL},
                                   .block_size = bs,
                                   .predict = v >= 5 ? rnd_predict : NULL};
        assert_int_equal(eng_timeline_create(&p, s.regs, s.sched, &s.tl), GMUX_OK);
        assert_int_equal(eng_timeline_fill(s.tl), GMUX_OK);
        assert_int_equal(eng_timeline_count(s.tl), RND_LAUNCHES);
        for (uint32_t l = 0; l < RND_LAUNCHES; l++) {
            const eng_entry_t *e = eng_timeline_peek(s.tl, l);
            uint32_t want[128], wmask[128];
            uint32_t n = rnd_expect(s.regs, rnd_rg[l], rnd_n[l], bs, want, wmask);
            assert_int_equal(e->ntrefs, n);
            assert_memory_equal(eng_timeline_truth(s.tl, e), want, n * sizeof(*want));
            const uint32_t *b = eng_timeline_blocks(s.tl, e);
            if (bs)
                assert_memory_equal(b, wmask, n * sizeof(*wmask));
            else
                assert_null(b);
            if (v >= 5) {
                uint32_t m = rnd_n[l] ? rnd_n[l] - 1 : 0;
                n = rnd_expect(s.regs, rnd_rg[l] + (rnd_n[l] ? 1 : 0), m, bs, want, wmask);
            }
            assert_int_equal(e->nrefs, n);
            assert_memory_equal(eng_timeline_refs(s.tl, e), want, n * sizeof(*want));
        }
        close_tl(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_order_and_next_use),
        cmocka_unit_test(test_next_after_and_frees),
        cmocka_unit_test(test_next_use_writes_flag),
        cmocka_unit_test(test_predictor_drives_refs),
        cmocka_unit_test(test_block_masks),
        cmocka_unit_test(test_random_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
