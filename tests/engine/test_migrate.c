/* Tests of migration plans: write-backs before the fills that need their
 * slots, runs merged, fills taking slots in the order they free up, and
 * transfers of chunks on the device in part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/migrate.h"
#include "engine/placement.h"

#define CH 4096u

/* A backend that records every transfer with the wait in force for its
 * direction when it was issued; tickets count up from 1000 per direction. */
typedef struct call {
    eng_dir_t dir;
    uint64_t addr, len;
    eng_ticket_t waited, ticket;
} call_t;

typedef struct rec {
    call_t calls[64];
    uint32_t n;
    eng_ticket_t wait[2], next[2];
    uint32_t discards;
} rec_t;

static gmux_status_t xfer(rec_t *b, eng_dir_t dir, uint64_t addr, uint64_t len, eng_ticket_t *t)
{
    b->next[dir] += 1000;
    *t = b->next[dir] + (dir == ENG_DIR_D2H ? 100000 : 0);
    b->calls[b->n++] = (call_t){dir, addr, len, b->wait[dir], *t};
    return GMUX_OK;
}

static gmux_status_t r_prefetch(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                                eng_ticket_t *t)
{
    (void)task;
    return xfer(ctx, ENG_DIR_H2D, addr, len, t);
}

static gmux_status_t r_evict(void *ctx, uint32_t task, uint64_t addr, uint64_t len, eng_ticket_t *t)
{
    (void)task;
    return xfer(ctx, ENG_DIR_D2H, addr, len, t);
}

static gmux_status_t r_fence(void *ctx, eng_ticket_t t)
{
    (void)ctx;
    (void)t;
    return GMUX_OK;
}

static uint64_t r_now(void *ctx)
{
    (void)ctx;
    return 0;
}

static gmux_status_t r_wait(void *ctx, eng_dir_t dir, eng_ticket_t t)
{
    rec_t *b = ctx;
    if (t > b->wait[dir])
        b->wait[dir] = t;
    return GMUX_OK;
}

static gmux_status_t r_discard(void *ctx, uint32_t task, uint64_t addr, uint64_t len)
{
    (void)task;
    (void)addr;
    (void)len;
    ((rec_t *)ctx)->discards++;
    return GMUX_OK;
}

static const eng_backend_ops_t r_ops = {.prefetch = r_prefetch,
                                        .evict = r_evict,
                                        .fence = r_fence,
                                        .now = r_now,
                                        .wait = r_wait,
                                        .discard = r_discard};

/* One region of 16 chunks at 1 GiB: chunks 0-3 to fill, 8 and 12 dirty
 * victims (last used at 6 and 5), 10 a clean victim (last used at 7), and one
 * free slot, as one batch of 4; b gets the recorded calls. */
static void run_batch(rec_t *b, bool slot_order)
{
    eng_regions_t *regs;
    uint32_t reg;
    assert_int_equal(eng_regions_create(1, CH, &regs), GMUX_OK);
    assert_int_equal(eng_regions_alloc(regs, 0, 1, 1ull << 30, 16 * CH, &reg), GMUX_OK);
    *b = (rec_t){0};
    eng_backend_t be = {&r_ops, b};
    eng_migrate_t *m;
    assert_int_equal(eng_migrate_create(regs, &be, 4, &m), GMUX_OK);
    eng_migrate_set_slot_order(m, slot_order);
    uint32_t first = eng_regions_get(regs, reg)->first_chunk;
    assert_int_equal(eng_migrate_add(m, first + 0, first + 8, true, 6), GMUX_OK);
    assert_int_equal(eng_migrate_add(m, first + 1, first + 10, false, 7), GMUX_OK);
    assert_int_equal(eng_migrate_add(m, first + 2, ENG_NONE, false, 0), GMUX_OK);
    assert_int_equal(b->n, 0); /* not a full batch yet */
    assert_int_equal(eng_migrate_add(m, first + 3, first + 12, true, 5), GMUX_OK);
    if (slot_order) {
        /* a full batch: its write-backs go now, its fills at the end of the round */
        assert_int_equal(b->n, 2);
        assert_int_equal(eng_migrate_stats(m)->fills, 0);
        assert_int_equal(eng_migrate_flush(m), GMUX_OK);
    }
    const eng_migrate_stats_t *st = eng_migrate_stats(m);
    assert_int_equal(st->fills, 4);
    assert_int_equal(st->writebacks, 2);
    assert_int_equal(st->drops, 1);
    assert_int_equal(st->bytes_h2d, 4 * CH);
    assert_int_equal(st->bytes_d2h, 2 * CH);
    assert_int_equal(b->discards, 1);
    for (uint32_t i = 0; i < 4; i++) /* every fill's ticket is its transfer's */
        assert_true(eng_regions_chunk(regs, first + i)->fill_ticket >= 1000);
    eng_migrate_destroy(m);
    eng_regions_destroy(regs);
}

static void test_fills_after_whole_batch(void **state)
{
    (void)state;
    rec_t b;
    run_batch(&b, false);
    /* two write-backs (not adjacent), after the victims' last use, then one fill of 4 */
    assert_int_equal(b.n, 3);
    assert_int_equal(b.calls[0].dir, ENG_DIR_D2H);
    assert_int_equal(b.calls[0].addr, (1ull << 30) + 8 * CH);
    assert_int_equal(b.calls[0].waited, 6);
    assert_int_equal(b.calls[1].addr, (1ull << 30) + 12 * CH);
    assert_int_equal(b.calls[2].dir, ENG_DIR_H2D);
    assert_int_equal(b.calls[2].len, 4 * CH);
    assert_int_equal(b.calls[2].waited, b.calls[1].ticket); /* the last write-back */
}

static void test_fills_in_slot_order(void **state)
{
    (void)state;
    rec_t b;
    run_batch(&b, true);
    assert_int_equal(b.n, 5);
    assert_int_equal(b.calls[0].dir, ENG_DIR_D2H);
    assert_int_equal(b.calls[1].dir, ENG_DIR_D2H);
    /* the free slot and the dropped victim's slot: two fills, after the drop's last use */
    assert_int_equal(b.calls[2].dir, ENG_DIR_H2D);
    assert_int_equal(b.calls[2].addr, 1ull << 30);
    assert_int_equal(b.calls[2].len, 2 * CH);
    assert_int_equal(b.calls[2].waited, 7);
    /* then one fill per written-back slot, each after its write-back */
    assert_int_equal(b.calls[3].len, CH);
    assert_int_equal(b.calls[3].waited, b.calls[0].ticket);
    assert_int_equal(b.calls[4].addr, (1ull << 30) + 3 * CH);
    assert_int_equal(b.calls[4].waited, b.calls[1].ticket);
}

/* Slot order spans the round: a batch whose victims are all written back
 * takes the slots of a later batch's dropped victims first. */
static void test_fills_take_later_batch_slots(void **state)
{
    (void)state;
    eng_regions_t *regs;
    uint32_t reg;
    assert_int_equal(eng_regions_create(1, CH, &regs), GMUX_OK);
    assert_int_equal(eng_regions_alloc(regs, 0, 1, 1ull << 30, 16 * CH, &reg), GMUX_OK);
    rec_t b = {0};
    eng_backend_t be = {&r_ops, &b};
    eng_migrate_t *m;
    assert_int_equal(eng_migrate_create(regs, &be, 2, &m), GMUX_OK);
    eng_migrate_set_slot_order(m, true);
    uint32_t f = eng_regions_get(regs, reg)->first_chunk;
    assert_int_equal(eng_migrate_add(m, f + 0, f + 8, true, 5), GMUX_OK);
    assert_int_equal(eng_migrate_add(m, f + 1, f + 9, true, 5), GMUX_OK);
    assert_int_equal(eng_migrate_add(m, f + 2, f + 10, false, 6), GMUX_OK);
    assert_int_equal(eng_migrate_add(m, f + 3, f + 11, false, 6), GMUX_OK);
    assert_int_equal(b.n, 1); /* chunks 8-9 written back in one transfer */
    assert_int_equal(b.calls[0].len, 2 * CH);
    assert_int_equal(eng_migrate_flush(m), GMUX_OK);
    assert_int_equal(b.n, 3);
    /* the first batch's fills (plan order kept) take the dropped slots */
    assert_int_equal(b.calls[1].addr, 1ull << 30);
    assert_int_equal(b.calls[1].len, 2 * CH);
    assert_int_equal(b.calls[1].waited, 6);
    assert_int_equal(b.calls[2].addr, (1ull << 30) + 2 * CH);
    assert_int_equal(b.calls[2].waited, b.calls[0].ticket);
    assert_int_equal(eng_migrate_stats(m)->fills, 4);
    assert_int_equal(eng_migrate_flush(m), GMUX_OK); /* nothing left */
    assert_int_equal(b.n, 3);
    eng_migrate_destroy(m);
    eng_regions_destroy(regs);
}

/* The partial op: (kind, range, bytes) of the last partial transfer. */
static eng_xfer_kind_t part_kind[8];
static uint64_t part_len[8], part_bytes[8];
static uint32_t nparts;

static gmux_status_t r_partial(void *ctx, eng_xfer_kind_t kind, uint32_t task, uint64_t addr,
                               uint64_t len, uint64_t bytes, eng_ticket_t *t)
{
    (void)task;
    part_kind[nparts] = kind;
    part_len[nparts] = len;
    part_bytes[nparts++] = bytes;
    return xfer(ctx, kind == ENG_XFER_PREFETCH ? ENG_DIR_H2D : ENG_DIR_D2H, addr, bytes, t);
}

static const eng_backend_ops_t p_ops = {.prefetch = r_prefetch,
                                        .evict = r_evict,
                                        .fence = r_fence,
                                        .now = r_now,
                                        .wait = r_wait,
                                        .discard = r_discard,
                                        .partial = r_partial};

/* Chunks on the device in part: a run whose bytes fall short of its length
 * goes through the partial op with those bytes (and counts them); a run of
 * whole chunks, or a backend without the op, moves whole ranges. */
static void test_partial_bytes(void **state)
{
    (void)state;
    for (int with_op = 0; with_op < 2; with_op++) {
        eng_regions_t *regs;
        uint32_t reg;
        assert_int_equal(eng_regions_create(1, CH, &regs), GMUX_OK);
        assert_int_equal(eng_regions_alloc(regs, 0, 1, 1ull << 30, 16 * CH, &reg), GMUX_OK);
        rec_t b = {0};
        nparts = 0;
        eng_backend_t be = {with_op ? &p_ops : &r_ops, &b};
        eng_migrate_t *m;
        assert_int_equal(eng_migrate_create(regs, &be, 4, &m), GMUX_OK);
        uint32_t f = eng_regions_get(regs, reg)->first_chunk;
        /* chunk 0 gets a quarter (a fault), chunk 1 whole: one run; the dirty
         * victim 8 holds half of itself; chunk 4 and victim 12 are whole */
        assert_int_equal(eng_migrate_add_bytes(m, f + 0, CH / 4, f + 8, true, CH / 2, 3), GMUX_OK);
        assert_int_equal(eng_migrate_add_bytes(m, f + 1, CH, ENG_NONE, false, 0, 0), GMUX_OK);
        assert_int_equal(eng_migrate_add(m, f + 4, f + 12, true, 3), GMUX_OK);
        assert_int_equal(eng_migrate_flush(m), GMUX_OK);
        const eng_migrate_stats_t *st = eng_migrate_stats(m);
        assert_int_equal(st->fills, 3);
        assert_int_equal(st->writebacks, 2);
        assert_int_equal(b.n, 4); /* write-backs 8 and 12, fills 0-1 and 4 */
        if (with_op) {
            assert_int_equal(nparts, 2);
            assert_int_equal(part_kind[0], ENG_XFER_EVICT);
            assert_int_equal(part_len[0], CH);
            assert_int_equal(part_bytes[0], CH / 2);
            assert_int_equal(part_kind[1], ENG_XFER_PREFETCH);
            assert_int_equal(part_len[1], 2 * CH);
            assert_int_equal(part_bytes[1], CH / 4 + CH);
            assert_int_equal(st->bytes_h2d, CH / 4 + 2 * CH);
            assert_int_equal(st->bytes_d2h, CH / 2 + CH);
        } else {
            assert_int_equal(nparts, 0);
            assert_int_equal(st->bytes_h2d, 3 * CH);
            assert_int_equal(st->bytes_d2h, 2 * CH);
        }
        eng_migrate_destroy(m);
        eng_regions_destroy(regs);
    }
}

/* Cleaning: a backend whose copy engine stays idle for `budget` cleans (what
 * the simulated device's answer depends on: the transfers issued, not how
 * often it is asked), recording the chunks cleaned in order. */
typedef struct cleaner {
    uint64_t now;
    uint32_t budget;
    uint64_t addrs[256];
    uint32_t n;
} cleaner_t;

static gmux_status_t c_clean(void *ctx, uint32_t task, uint64_t addr, uint64_t len, eng_ticket_t *t)
{
    cleaner_t *b = ctx;
    (void)task;
    (void)len;
    assert_true(b->n < 256);
    b->addrs[b->n++] = addr;
    *t = b->now + b->n;
    return GMUX_OK;
}

static bool c_idle(void *ctx, eng_dir_t dir)
{
    cleaner_t *b = ctx;
    return dir == ENG_DIR_D2H && b->n < b->budget;
}

static uint64_t c_now(void *ctx)
{
    return ((cleaner_t *)ctx)->now;
}

static const eng_backend_ops_t c_ops = {.prefetch = r_prefetch,
                                        .evict = r_evict,
                                        .fence = r_fence,
                                        .now = c_now,
                                        .clean = c_clean,
                                        .idle = c_idle};

/* eng_migrate_clean_idle as it was until 2026-12-02: a walk of the whole dirty
 * heap, the backend asked before each chunk whether it is idle. */
static void ref_clean_idle(cleaner_t *b, eng_regions_t *regs, eng_placement_t *p,
                           uint64_t exec_next, uint32_t max)
{
    uint32_t done = 0;
    for (uint32_t i = 0; done < max && c_idle(b, ENG_DIR_D2H);) {
        uint32_t c = eng_place_dirty_at(p, i);
        if (c == ENG_NONE)
            break;
        eng_chunk_t *x = eng_regions_chunk(regs, c);
        if ((x->flags & (ENG_CHUNK_DIRTY | ENG_CHUNK_PRESENT)) !=
                (ENG_CHUNK_DIRTY | ENG_CHUNK_PRESENT) ||
            x->shadow_last >= exec_next || x->last_ticket > b->now) {
            i++;
            continue;
        }
        eng_ticket_t t;
        assert_int_equal(c_clean(b, 0, eng_regions_chunk_addr(regs, c), CH, &t), GMUX_OK);
        x->flags &= ~(uint32_t)(ENG_CHUNK_DIRTY | ENG_CHUNK_WPLAN);
        eng_place_key_changed(p, c);
        done++;
    }
}

/* One world: 96 chunks, 64 slots, its own placement and backend. */
typedef struct world {
    eng_regions_t *regs;
    eng_placement_t *place;
    cleaner_t b;
    eng_migrate_t *m;
    uint32_t first;
} world_t;

static void world_init(world_t *w)
{
    uint32_t reg;
    assert_int_equal(eng_regions_create(1, CH, &w->regs), GMUX_OK);
    assert_int_equal(eng_regions_alloc(w->regs, 0, 1, 1ull << 30, 96 * CH, &reg), GMUX_OK);
    w->first = eng_regions_get(w->regs, reg)->first_chunk;
    assert_int_equal(eng_place_create(w->regs, ENG_PLACE_OPT, 64, &w->place), GMUX_OK);
    w->b = (cleaner_t){.now = 100};
    eng_backend_t be = {&c_ops, &w->b};
    assert_int_equal(eng_migrate_create(w->regs, &be, 8, &w->m), GMUX_OK);
}

static void world_destroy(world_t *w)
{
    eng_migrate_destroy(w->m);
    eng_place_destroy(w->place);
    eng_regions_destroy(w->regs);
}

/* A step of what the engine does to chunks between cleanings, driven by s:
 * fills and evictions, writes, planned writes, keys, uses run and to come. */
static void world_step(world_t *w, uint64_t s)
{
    uint32_t c = w->first + (uint32_t)((s >> 33) % 96);
    eng_chunk_t *x = eng_regions_chunk(w->regs, c);
    uint64_t v = s >> 40;
    switch ((s >> 20) % 6) {
    case 0:
        if (!(x->flags & ENG_CHUNK_RESIDENT) && eng_place_resident(w->place) < 64) {
            x->key = v % 200;
            x->flags |= ENG_CHUNK_PRESENT;
            assert_int_equal(eng_place_insert(w->place, c), GMUX_OK);
        } else {
            eng_place_remove(w->place, c);
            x->flags &= ~(uint32_t)(ENG_CHUNK_DIRTY | ENG_CHUNK_PRESENT);
        }
        break;
    case 1: /* a launch wrote it: the placement hears of it at its next key */
        x->flags |= ENG_CHUNK_DIRTY;
        break;
    case 2: /* planned write, or a new next use */
        x->flags ^= v & 1 ? ENG_CHUNK_WPLAN : 0;
        x->key = v % 200;
        eng_place_key_changed(w->place, c);
        break;
    case 3:
        x->shadow_last = 90 + v % 20;
        break;
    case 4:
        x->last_ticket = 90 + v % 20;
        break;
    default:
        x->flags ^= v & 1 ? ENG_CHUNK_PRESENT : 0;
        break;
    }
}

/* The cleaning walks only the chunks of the dirty heap that are dirty and on
 * the device, and asks the backend only before the first and after each
 * clean: over random states, budgets (0: busy from the start) and maxima it
 * cleans the chunks the full walk cleaned, in its order, and leaves the same
 * heaps behind. */
static void test_clean_idle_matches_full_walk(void **state)
{
    (void)state;
    world_t a, ref;
    world_init(&a);
    world_init(&ref);
    uint64_t s = 4242, exec_next = 100;
    uint32_t several = 0, none_busy = 0, none_left = 0;
    for (uint32_t round = 0; round < 3000; round++) {
        for (uint32_t k = 0; k < 20; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            world_step(&a, s);
            world_step(&ref, s);
        }
        uint32_t budget = (uint32_t)((s >> 12) % 6), max = 1 + (uint32_t)((s >> 16) % 4);
        exec_next += (s >> 18) % 3 == 0;
        a.b.now = ref.b.now = 100 + (s >> 24) % 8;
        a.b.n = ref.b.n = 0;
        a.b.budget = ref.b.budget = budget;
        assert_int_equal(eng_migrate_clean_idle(a.m, a.place, exec_next, max), GMUX_OK);
        ref_clean_idle(&ref.b, ref.regs, ref.place, exec_next, max);
        assert_int_equal(a.b.n, ref.b.n);
        for (uint32_t k = 0; k < a.b.n; k++)
            assert_int_equal(a.b.addrs[k], ref.b.addrs[k]);
        uint32_t i = 0;
        for (; eng_place_dirty_at(ref.place, i) != ENG_NONE; i++)
            assert_int_equal(eng_place_dirty_at(a.place, i), eng_place_dirty_at(ref.place, i));
        assert_int_equal(eng_place_dirty_at(a.place, i), ENG_NONE);
        several += a.b.n > 1;
        none_busy += budget == 0;
        none_left += budget > 0 && a.b.n == 0;
    }
    print_message("rounds cleaning several %u, busy from the start %u, nothing to clean %u\n",
                  several, none_busy, none_left);
    assert_true(several > 300 && none_busy > 300 && none_left > 300);
    assert_int_equal(eng_migrate_stats(a.m)->calls_d2h, eng_migrate_stats(a.m)->cleans);
    world_destroy(&a);
    world_destroy(&ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fills_after_whole_batch),
        cmocka_unit_test(test_fills_in_slot_order),
        cmocka_unit_test(test_fills_take_later_batch_slots),
        cmocka_unit_test(test_partial_bytes),
        cmocka_unit_test(test_clean_idle_matches_full_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
