/* Tests of placement's dead chunks (eng_place_expire under OPT): first
 * victims, and never in the dirty heap's walk that cleaning scans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/placement.h"
#include "tfeed.h"

static eng_regions_t *make_regions(uint32_t nchunks)
{
    eng_regions_t *r = tf_regions_one(nchunks);
    assert_non_null(r);
    return r;
}

/* The entries eng_place_dirty_at walks (what eng_migrate_clean_idle scans)
 * that are in dead[]; *n_p: all entries. */
static uint32_t dirty_walk_dead(const eng_placement_t *p, const bool *dead, uint32_t *n_p)
{
    uint32_t i = 0, nd = 0;
    for (uint32_t c; (c = eng_place_dirty_at(p, i)) != ENG_NONE; i++)
        nd += dead[c];
    *n_p = i;
    return nd;
}

/* Ten dirty chunks on the device; a region's free is planned with 0-5 still
 * resident and no use left. They are the first victims, highest id first;
 * cleaning's walk of the dirty heap sees none of them (until 2026-12-04 all
 * six sat at its top, stepped over one by one at every launch's cleaning). */
static void test_dead_leave_dirty_walk(void **state)
{
    (void)state;
    eng_regions_t *r = make_regions(10);
    eng_placement_t *p;
    assert_int_equal(eng_place_create(r, ENG_PLACE_OPT, 10, &p), GMUX_OK);
    eng_place_set_wb_costs(p, 10.0, 33.0, 0.0);
    bool dead[10] = {false};
    for (uint32_t c = 0; c < 10; c++) {
        eng_chunk_t *x = eng_regions_chunk(r, c);
        x->key = c < 6 ? ENG_POS_INF : 100 + c;
        x->flags |= ENG_CHUNK_DIRTY | ENG_CHUNK_PRESENT;
        assert_int_equal(eng_place_insert(p, c), GMUX_OK);
    }
    for (uint32_t c = 0; c < 6; c++) {
        eng_place_expire(p, c);
        dead[c] = true;
    }
    uint32_t n;
    assert_int_equal(dirty_walk_dead(p, dead, &n), 0);
    assert_int_equal(n, 4);
    uint32_t i = eng_place_dirty_find(p, 0, ENG_CHUNK_DIRTY | ENG_CHUNK_PRESENT);
    assert_int_not_equal(i, ENG_NONE);
    assert_false(dead[eng_place_dirty_at(p, i)]);
    /* cleaned, a dead chunk is still dead: the first victim among the clean */
    eng_regions_chunk(r, 2)->flags &= ~(uint32_t)ENG_CHUNK_DIRTY;
    eng_place_key_changed(p, 2);
    assert_int_equal(eng_place_victim(p, 10), 2);
    assert_int_equal(eng_place_evict(p, 10), 2);
    for (uint32_t want = 5; want != UINT32_MAX; want--) {
        if (want == 2)
            continue;
        assert_int_equal(eng_place_evict(p, 10), want);
    }
    assert_int_equal(eng_place_evict(p, 10), 9); /* then OPT */
    assert_int_equal(dirty_walk_dead(p, dead, &n), 0);
    assert_int_equal(n, 3);
    /* a fresh fill of a dead chunk's id is live */
    eng_regions_chunk(r, 0)->key = 50;
    eng_regions_chunk(r, 0)->flags |= ENG_CHUNK_DIRTY;
    assert_int_equal(eng_place_insert(p, 0), GMUX_OK);
    dead[0] = false;
    assert_int_equal(dirty_walk_dead(p, dead, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(eng_place_victim(p, 10), 8);
    eng_place_destroy(p);
    eng_regions_destroy(r);
}

/* The victim as the placement chose it before dead chunks left the heaps
 * (plain OPT): the farthest (key, id) after pos, a dead chunk keyed
 * ENG_POS_INF, a chunk with no use in the window one below. */
static uint32_t ref_victim(eng_regions_t *r, const bool *dead, uint32_t n, uint64_t pos)
{
    uint32_t best = ENG_NONE;
    uint64_t bk = 0;
    for (uint32_t c = 0; c < n; c++) {
        const eng_chunk_t *x = eng_regions_chunk(r, c);
        if (!(x->flags & ENG_CHUNK_RESIDENT))
            continue;
        uint64_t k = dead[c] ? ENG_POS_INF : x->key == ENG_POS_INF ? ENG_POS_INF - 1 : x->key;
        if (k > pos && (best == ENG_NONE || k > bk || (k == bk && c > best))) {
            best = c;
            bk = k;
        }
    }
    return best;
}

/* Random inserts, removals, key changes, writes and cleanings, and frees
 * planned (expire): plain OPT victims stay what they were with the dead
 * chunks in the heaps, and the dirty walk holds every resident chunk to
 * write back that is not dead, and no other. */
static void test_dead_random_matches_reference(void **state)
{
    (void)state;
    enum { N = 64 };
    eng_regions_t *r = make_regions(N);
    eng_placement_t *p;
    assert_int_equal(eng_place_create(r, ENG_PLACE_OPT, 48, &p), GMUX_OK);
    bool dead[N] = {false};
    uint64_t s = 4242, pos = 10;
    uint32_t dead_steps = 0, dead_victims = 0, live_victims = 0;
    for (uint32_t step = 0; step < 50000; step++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t c = (uint32_t)((s >> 33) % N);
        eng_chunk_t *x = eng_regions_chunk(r, c);
        bool res = (x->flags & ENG_CHUNK_RESIDENT) != 0;
        uint64_t key = (s >> 20) % 8 == 0 ? ENG_POS_INF : pos + (s >> 22) % 40;
        switch ((s >> 45) % 8) {
        case 0:
            if (!res && eng_place_resident(p) < 48) {
                x->key = key;
                x->flags = (s >> 50) & 1 ? ENG_CHUNK_DIRTY : 0;
                assert_int_equal(eng_place_insert(p, c), GMUX_OK);
                dead[c] = false;
            }
            break;
        case 1:
            if ((s >> 50) % 4 == 0) {
                eng_place_remove(p, c);
                dead[c] = false;
            }
            break;
        case 2: /* a new next use (none: it stays dead if it was) */
            if (res) {
                x->key = key;
                eng_place_key_changed(p, c);
                dead[c] = dead[c] && key == ENG_POS_INF;
            }
            break;
        case 3: /* written, or cleaned */
            if (res) {
                x->flags ^= ENG_CHUNK_DIRTY;
                eng_place_key_changed(p, c);
            }
            break;
        case 4: /* a region's free planned: its last uses placed, then the free */
            for (uint32_t k = c; k < c + 6 && k < N; k++) {
                eng_chunk_t *y = eng_regions_chunk(r, k);
                if (!((s >> (k - c)) & 1)) { /* else a use left: it stays live */
                    y->key = ENG_POS_INF;
                    eng_place_key_changed(p, k);
                }
                eng_place_expire(p, k);
                dead[k] = dead[k] || ((y->flags & ENG_CHUNK_RESIDENT) && y->key == ENG_POS_INF);
            }
            break;
        case 5:
            pos += (s >> 30) % 3;
            break;
        default: {
            uint32_t want = ref_victim(r, dead, N, pos);
            assert_int_equal(eng_place_victim(p, pos), want);
            if (want != ENG_NONE)
                *(dead[want] ? &dead_victims : &live_victims) += 1;
            if (want != ENG_NONE && (s >> 50) % 2 == 0) {
                assert_int_equal(eng_place_evict(p, pos), want);
                dead[want] = false;
            }
            break;
        }
        }
        uint32_t n, want_n = 0, any_dead = 0;
        for (uint32_t k = 0; k < N; k++) {
            const eng_chunk_t *y = eng_regions_chunk(r, k);
            any_dead += dead[k];
            want_n += (y->flags & ENG_CHUNK_RESIDENT) && (y->flags & ENG_CHUNK_DIRTY) && !dead[k];
        }
        assert_int_equal(dirty_walk_dead(p, dead, &n), 0);
        assert_int_equal(n, want_n);
        dead_steps += any_dead > 2;
    }
    print_message("more than 2 dead chunks resident in %u of 50000 steps; victims %u dead, %u "
                  "live\n",
                  dead_steps, dead_victims, live_victims);
    assert_true(dead_steps > 1500 && dead_victims > 2000 && live_victims > 2000);
    eng_place_destroy(p);
    eng_regions_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_leave_dirty_walk),
        cmocka_unit_test(test_dead_random_matches_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
