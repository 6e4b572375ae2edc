/* The block-level terms (sim_refuses_opt_blocks) against a plain reference
 * implementation: per block, Belady's farthest next use found by scanning the
 * string ahead, and the write-back sweep over a list of open intervals. Random
 * strings of up to 32 blocks per chunk, mostly whole references (where the
 * passes keep one value per chunk) mixed with partial ones, writes and frees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bound_test_util.h"
#include "sim/bound.h"
#include "trand.h"

#define NCH  12
#define MAXL 80
#define MAXB 32

/* One launch: per chunk the blocks touched (0: none), write marks, then the
 * chunks freed after it. */
typedef struct launch {
    uint32_t mask[NCH];
    bool write[NCH];
    uint32_t order[NCH], n; /* chunks in reference order */
    uint32_t freed;         /* chunk bits freed after the launch */
} launch_t;

/* The next launch at or after `from` touching block b of c, before c is freed
 * (a free after launch j ends the lifetime); MAXL + 1: none. */
static uint32_t next_use(const launch_t *L, uint32_t nl, uint32_t from, uint32_t c, uint32_t b)
{
    for (uint32_t j = from; j < nl; j++) {
        if (L[j].mask[c] & (1u << b))
            return j;
        if (L[j].freed & (1u << c))
            break;
    }
    return MAXL + 1;
}

/* Belady over blocks, one block at a time; false when a launch cannot fit. */
static bool naive_fetches(const launch_t *L, uint32_t nl, uint32_t cap, uint64_t *f_p)
{
    static uint32_t res[NCH]; /* resident blocks per chunk */
    memset(res, 0, sizeof(res));
    uint64_t held = 0, f = 0;
    for (uint32_t k = 0; k < nl; k++) {
        for (uint32_t i = 0; i < L[k].n; i++) {
            uint32_t c = L[k].order[i];
            for (uint32_t x = L[k].mask[c] & ~res[c]; x; x &= x - 1) {
                if (held == cap) { /* evict the farthest next use (k: pinned) */
                    uint32_t bc = 0, bb = 0, far = 0;
                    for (uint32_t d = 0; d < NCH; d++)
                        for (uint32_t y = res[d]; y; y &= y - 1) {
                            uint32_t u = next_use(L, nl, k, d, (uint32_t)__builtin_ctz(y));
                            if (u > far) {
                                far = u;
                                bc = d;
                                bb = (uint32_t)__builtin_ctz(y);
                            }
                        }
                    if (far <= k)
                        return false;
                    res[bc] &= ~(1u << bb);
                    held--;
                }
                res[c] |= x & -x;
                held++;
                f++;
            }
        }
        for (uint32_t c = 0; c < NCH; c++)
            if (L[k].freed & (1u << c)) {
                held -= (uint64_t)__builtin_popcount(res[c]);
                res[c] = 0;
            }
    }
    *f_p = f;
    return true;
}

/* Where the dirty interval of block b of c written at launch k ends: the next
 * write touching b, else b's last reference, in c's lifetime; 0: no interval. */
static uint32_t iv_end(const launch_t *L, uint32_t nl, uint32_t k, uint32_t c, uint32_t b)
{
    uint32_t last = 0;
    for (uint32_t j = k + 1; j < nl && !(L[j - 1].freed & (1u << c)); j++) {
        if (!(L[j].mask[c] & (1u << b)))
            continue;
        if (L[j].write[c])
            return j;
        last = j;
    }
    return last;
}

/* The fewest dropped block dirty intervals under cap open at a launch's end. */
static uint64_t naive_wbs(const launch_t *L, uint32_t nl, uint32_t cap)
{
    static uint32_t end[NCH][MAXB]; /* 0: no open interval */
    memset(end, 0, sizeof(end));
    uint64_t open = 0, wbs = 0;
    for (uint32_t k = 0; k < nl; k++) {
        for (uint32_t i = 0; i < L[k].n; i++) {
            uint32_t c = L[k].order[i];
            for (uint32_t x = L[k].mask[c]; x; x &= x - 1) {
                uint32_t b = (uint32_t)__builtin_ctz(x);
                if (end[c][b] && end[c][b] <= k) {
                    end[c][b] = 0; /* reached its end: kept */
                    open--;
                }
                if (L[k].write[c]) {
                    uint32_t e = iv_end(L, nl, k, c, b);
                    open += e && !end[c][b];
                    if (e)
                        end[c][b] = e;
                }
            }
        }
        while (open > cap) { /* drop an open interval ending last */
            uint32_t bc = 0, bb = 0, far = 0;
            for (uint32_t c = 0; c < NCH; c++)
                for (uint32_t b = 0; b < MAXB; b++)
                    if (end[c][b] > far) {
                        far = end[c][b];
                        bc = c;
                        bb = b;
                    }
            end[bc][bb] = 0;
            open--;
            wbs++;
        }
        for (uint32_t c = 0; c < NCH; c++)
            if (L[k].freed & (1u << c))
                for (uint32_t b = 0; b < MAXB; b++) {
                    open -= end[c][b] != 0;
                    end[c][b] = 0;
                }
    }
    return wbs;
}

/* 400 random strings: 2..32 blocks per chunk, launches of 1..6 chunks of 12,
 * each whole, or a run of blocks, or scattered blocks; one write in three; a
 * free after one launch in six. Capacities of 6 to 11 chunks. */
static void test_blocks_equal_naive(void **state)
{
    (void)state;
    static launch_t L[MAXL];
    uint64_t s = 0x5eed;
    unsigned partial_seen = 0, wb_seen = 0;
    for (int round = 0; round < 400; round++) {
        uint32_t nb = 2 + (uint32_t)(trand_next(&s) % 31),
                 nl = 10 + (uint32_t)(trand_next(&s) % (MAXL - 10));
        uint32_t cap = 6 + (uint32_t)(trand_next(&s) % 6);
        uint32_t full = nb == 32 ? UINT32_MAX : (1u << nb) - 1;
        sim_refstr_t *rs;
        assert_int_equal(sim_refstr_create(100000, &rs), GMUX_OK);
        sim_refstr_set_blocks(rs, nb);
        memset(L, 0, sizeof(L));
        for (uint32_t k = 0; k < nl; k++) {
            uint32_t want = 1 + (uint32_t)(trand_next(&s) % 6);
            while (L[k].n < want) {
                uint32_t c = (uint32_t)(trand_next(&s) % NCH);
                if (L[k].mask[c])
                    continue;
                uint32_t kind = (uint32_t)(trand_next(&s) % 4), m = full;
                if (kind == 1) { /* a run of blocks */
                    uint32_t at = (uint32_t)(trand_next(&s) % nb),
                             len = 1 + (uint32_t)(trand_next(&s) % 4);
                    m = (uint32_t)((((1ull << len) - 1) << at) & full);
                } else if (kind == 2) { /* scattered blocks */
                    m = (uint32_t)trand_next(&s) & full;
                    m = m ? m : 1;
                }
                L[k].mask[c] = m;
                L[k].write[c] = trand_next(&s) % 3 == 0;
                L[k].order[L[k].n++] = c;
                if (m == full)
                    sim_refstr_ref(rs, c, L[k].write[c]);
                else
                    sim_refstr_ref_part(rs, c, m, L[k].write[c]);
                partial_seen += m != full;
            }
            sim_refstr_end_launch(rs, 0);
            if (trand_next(&s) % 6 == 0) {
                uint32_t c = (uint32_t)(trand_next(&s) % NCH);
                L[k].freed |= 1u << c;
                sim_refstr_free(rs, c);
            }
        }
        uint64_t f, w, nf;
        assert_int_equal(opt_blocks(rs, cap, &f, &w), GMUX_OK);
        assert_true(naive_fetches(L, nl, cap * nb, &nf));
        assert_int_equal(f, nf);
        assert_int_equal(w, naive_wbs(L, nl, cap * nb));
        wb_seen += w > 0;
        sim_refstr_destroy(rs);
    }
    /* the strings exercise both paths and the write-back term */
    assert_true(partial_seen > 1000);
    assert_true(wb_seen > 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_equal_naive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
