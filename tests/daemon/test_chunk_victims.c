/* Unit tests of the victims' merge (src/daemon/chunk_victims.c) against a
 * brute force: every candidate chunk with its key, sorted, the best taken. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "daemon/chunk_victims.h"

#define SH    12
#define CH    (1ull << SH)
#define TASKS 5
#define PER   40 /* chunk slots per list */
#define MAXCH (TASKS * 3 * PER)

typedef struct cand {
    uint64_t pos, addr;
    uint32_t task;
} cand_t;

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static int cand_desc(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos > y->pos ? -1 : 1;
    if (x->addr != y->addr)
        return x->addr > y->addr ? -1 : 1;
    return x->task > y->task ? -1 : x->task < y->task;
}

static int seg_cmp(const void *a, const void *b)
{
    const dmn_seg_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* A list of random disjoint runs in [base, base + PER chunks): inside runs
 * get a working-set interval starting at or below them and a rank. */
static uint64_t make_list(dmn_runs_t *r, uint64_t base, int inside, uint64_t *seed)
{
    uint64_t n = 0;
    r->n = 0;
    for (uint64_t c = 0; c < PER;) {
        uint64_t len = 1 + rnd(seed) % 4;
        if (c + len > PER)
            len = PER - c;
        if (rnd(seed) % 3) {
            dmn_seg_t s = {base + c * CH, base + (c + len) * CH, 0, DMN_RUNS_NONE, 0};
            if (inside) {
                s.wlo = s.lo - (rnd(seed) % 3) * CH;
                s.wrank = rnd(seed) % 64;
                s.key = dmn_cv_rank(&s, s.hi - CH, SH);
            }
            assert_int_equal(dmn_runs_push(r, s), GMUX_OK);
            n += len;
        }
        c += len + rnd(seed) % 2;
    }
    qsort(r->v, r->n, sizeof(*r->v), seg_cmp);
    return n;
}

/* Random lists of several tasks, kinds and turns (ties included), any need:
 * the chunks taken are the need best by key, and the lists keep the rest,
 * in order. */
static void test_take_matches_brute_force(void **state)
{
    (void)state;
    uint64_t seed = 11;
    for (int round = 0; round < 400; round++) {
        dmn_cv_t cv;
        memset(&cv, 0, sizeof(cv));
        cv.chunk = CH;
        cv.shift = SH;
        dmn_runs_t lists[TASKS * 3] = {{0}}, vict = {0};
        cand_t all[MAXCH];
        size_t na = 0, nl = 0;
        for (uint32_t t = 1; t <= TASKS; t++) {
            uint32_t turn = (uint32_t)(rnd(&seed) % 3);
            for (int kind = DMN_CV_OUT; kind <= DMN_CV_RES; kind++) {
                if (rnd(&seed) % 4 == 0)
                    continue;
                dmn_runs_t *r = &lists[nl++];
                uint64_t base = ((uint64_t)t << 32) + (uint64_t)kind * PER * CH;
                uint64_t n = make_list(r, base, kind == DMN_CV_IN, &seed);
                uint64_t slice = kind == DMN_CV_RES ? 0 : (uint64_t)turn << DMN_CV_SLICE_SH;
                for (size_t i = 0; i < r->n; i++)
                    for (uint64_t a = r->v[i].lo; a < r->v[i].hi; a += CH)
                        all[na++] = (cand_t){r->v[i].wrank == DMN_RUNS_NONE
                                                 ? DMN_RUNS_NONE
                                                 : slice | dmn_cv_rank(&r->v[i], a, SH),
                                             a, t};
                dmn_cv_add(&cv, r, t, kind, kind == DMN_CV_RES ? 0 : turn, rnd(&seed) % 2 ? n : 0);
            }
        }
        qsort(all, na, sizeof(*all), cand_desc);
        uint64_t need = na ? rnd(&seed) % (na + 2) : 0;
        assert_int_equal(dmn_cv_take(&cv, need, &vict), GMUX_OK);
        dmn_cv_settle(&cv);
        assert_int_equal(cv.n_srcs, 0);
        /* Taken: exactly the first min(need, na) of the brute force. */
        size_t taken = 0;
        for (size_t i = 0; i < vict.n; i++) {
            for (uint64_t a = vict.v[i].lo; a < vict.v[i].hi; a += CH) {
                size_t k = 0;
                while (k < na && !(all[k].addr == a && all[k].task == vict.v[i].key))
                    k++;
                assert_true(k < (need < na ? need : na));
                taken++;
            }
        }
        assert_int_equal(taken, need < na ? need : na);
        /* Kept: every list in (key, lo) order, none of its runs empty, and
         * its chunks with those taken make up what it had. */
        size_t kept = 0;
        for (size_t l = 0; l < nl; l++) {
            for (size_t i = 0; i < lists[l].n; i++) {
                const dmn_seg_t *s = &lists[l].v[i];
                assert_true(s->hi > s->lo);
                if (s->wrank != DMN_RUNS_NONE)
                    assert_int_equal(s->key, dmn_cv_rank(s, s->hi - CH, SH));
                if (i > 0)
                    assert_true(seg_cmp(&lists[l].v[i - 1], s) < 0);
                kept += (s->hi - s->lo) / CH;
            }
            dmn_runs_free(&lists[l]);
        }
        assert_int_equal(kept + taken, na);
        dmn_runs_free(&vict);
        dmn_cv_fini(&cv);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_take_matches_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
