/*
 * Tests of the workload generators: determinism, settings, and the access
 * patterns the predictor (issue 4) must meet in each workload: pointers into
 * the middle of allocations, fixed-size ranges (T1), ranges linear in one
 * launch value or a product of two (T2), strided sets (T3), and indirect
 * kernels whose touched ranges do not follow from the arguments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim/trace_check.h"
#include "sim_test_util.h"

static void test_deterministic_files(void **state)
{
    (void)state;
    const char *names[] = {"llm-decode", "dl-train", "sci-stencil", "sci-sparse"};
    const char *set[] = {"instances=2",      "tokens=2", "layers=2", "tasks=2",      "steps=1",
                         "seq=128",          "nz=64",    "slab=32",  "iterations=2", "rows=65536",
                         "block-rows=16384", "nx=32",    "ny=32",    "prompt=32"};
    for (size_t i = 0; i < 4; i++) {
        /* keep only the settings this workload knows */
        const char *mine[16];
        size_t n = 0;
        for (size_t j = 0; j < sizeof(set) / sizeof(set[0]); j++) {
            char err[256];
            sim_source_t *src;
            if (sim_workload_open(names[i], &set[j], 1, 1, &src, err, sizeof(err)) == GMUX_OK) {
                mine[n++] = set[j];
                sim_source_close(src);
            }
        }
        char a[64], b[64], c[64];
        tmp_path(a, sizeof(a), "det-a");
        tmp_path(b, sizeof(b), "det-b");
        tmp_path(c, sizeof(c), "det-c");
        assert_int_equal(write_workload(names[i], mine, n, 42, a, SIM_TRACE_BINARY), GMUX_OK);
        assert_int_equal(write_workload(names[i], mine, n, 42, b, SIM_TRACE_BINARY), GMUX_OK);
        assert_true(files_equal(a, b));
        if (strcmp(names[i], "sci-sparse") == 0 || strcmp(names[i], "llm-decode") == 0) {
            /* their data-dependent parts follow the seed */
            assert_int_equal(write_workload(names[i], mine, n, 43, c, SIM_TRACE_BINARY), GMUX_OK);
            assert_false(files_equal(a, c));
        }
        remove(a), remove(b), remove(c);
    }
}

static void expect_error(const char *name, const char *kv, const char *needle)
{
    char err[512] = "";
    sim_source_t *src = NULL;
    const char *set[1] = {kv};
    gmux_status_t st = sim_workload_open(name, set, kv ? 1 : 0, 1, &src, err, sizeof(err));
    assert_int_not_equal(st, GMUX_OK);
    if (!strstr(err, needle))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, needle);
    assert_non_null(strstr(err, needle));
}

static void test_settings_rejected(void **state)
{
    (void)state;
    expect_error("llm-decode", "frob=1", "unknown setting 'frob'");
    expect_error("llm-decode", "instances=0", "setting instances wants a whole number in [1, ");
    expect_error("llm-decode", "instances=many", "], not 'many'");
    /* the choices are named (the message said only "not one of the choices") */
    expect_error("llm-decode", "model=gpt5",
                 "setting model wants llama2-7b, llama2-13b or llama2-70b, not 'gpt5'");
    expect_error("llm-decode", "tokens", "is not key=value");
    expect_error("llm-decode", "hidden=5001", "multiple of heads");
    expect_error("dl-train", "seq=1", "setting seq");
    expect_error("sci-stencil", "slab=9999", "slab (9999) larger than nz");
    expect_error("sci-sparse", "far=-1", "setting far");
    expect_error("sci-sparse", "sci-stencil.nz=64", "unknown setting 'nz'");
    expect_error("sci-stencil+sci-sparse", "dl-train.steps=1", "unknown setting 'steps'");
    expect_error("sci-stencil+nope", NULL, "unknown workload 'nope'");
    expect_error("llm-decode", "seed=x", "setting seed");
    /* and good ones are taken, scoped ones only by their workload */
    char err[256];
    sim_source_t *src;
    const char *ok[] = {"sci-stencil.tasks=3", "tasks=1", "seed=5"};
    assert_int_equal(sim_workload_open("sci-sparse+sci-stencil", ok, 3, 1, &src, err, sizeof(err)),
                     GMUX_OK);
    assert_int_equal(src->ntasks, 1 + 1); /* tasks=1 applies to both, after the scoped one */
    assert_string_equal(src->task_names[1], "sci-stencil.0");
    sim_source_close(src);
    /* the same workload twice: one kernel table, distinct task names */
    const char *twice[] = {"tasks=2", "nz=64", "slab=32"};
    assert_int_equal(
        sim_workload_open("sci-stencil+sci-stencil", twice, 3, 1, &src, err, sizeof(err)), GMUX_OK);
    assert_int_equal(src->ntasks, 4);
    assert_int_equal(src->nkernels, 3);
    assert_string_equal(src->task_names[3], "sci-stencil.3");
    sim_source_close(src);
    const char *ok2[] = {"tasks=1", "sci-stencil.tasks=3"};
    assert_int_equal(sim_workload_open("sci-sparse+sci-stencil", ok2, 2, 1, &src, err, sizeof(err)),
                     GMUX_OK);
    assert_int_equal(src->ntasks, 4);
    sim_source_close(src);
}

/* ---- access-pattern classes ---- */
enum { C_MID, C_T1, C_T2, C_T3, C_INDIRECT, C_N };
static const char *const class_names[C_N] = {"mid-pointer", "T1", "T2", "T3", "indirect"};

#define MAXK 32
typedef struct kstat {
    /* per pointer argument index (< 16): a range starting there and its length */
    int seen;
    uint64_t first_len[16];
    int const_len[16]; /* every launch had the same length at this pointer */
    int has_at[16];    /* every launch had a range at this pointer */
    int linear[16];    /* every launch's length there = e * value (or product of two) */
    uint64_t args_hash[64];
    uint64_t ranges_hash[64];
    int nsamples;
} kstat_t;

/* Whether len is e*v[j] or e*v[j]*v[k] for e in {1,2,4,8} and some values. */
static int linear_in_args(const sim_launch_ev_t *l, uint64_t len)
{
    static const uint64_t es[] = {1, 2, 4, 8};
    for (uint32_t j = 0; j < l->nargs; j++) {
        if (l->args[j].kind != ENG_ARG_VAL || l->args[j].value < 2)
            continue;
        for (int e = 0; e < 4; e++) {
            if (es[e] * l->args[j].value == len)
                return 1;
            for (uint32_t k = 0; k < l->nargs; k++)
                if (l->args[k].kind == ENG_ARG_VAL && l->args[k].value > 1 &&
                    es[e] * l->args[j].value * l->args[k].value == len)
                    return 1;
        }
    }
    return 0;
}

/* A strided set: >= 2 ranges of one length at p + i*s, i < n, s = e*value, n a value. */
static int strided(const sim_launch_ev_t *l)
{
    for (uint32_t a = 0; a < l->nargs; a++) {
        if (l->args[a].kind != ENG_ARG_PTR)
            continue;
        for (uint32_t i = 0; i + 1 < l->nranges; i++) {
            const sim_range_t *r0 = &l->ranges[i], *r1 = &l->ranges[i + 1];
            if (r0->addr != l->args[a].value || r1->len != r0->len || r1->addr <= r0->addr)
                continue;
            uint64_t s = r1->addr - r0->addr, n = 1;
            while (i + n < l->nranges && l->ranges[i + n].addr == r0->addr + n * s &&
                   l->ranges[i + n].len == r0->len)
                n++;
            int s_ok = 0, n_ok = 0;
            for (uint32_t j = 0; j < l->nargs; j++) {
                uint64_t v = l->args[j].value;
                if (l->args[j].kind != ENG_ARG_VAL)
                    continue;
                s_ok |= v == s || 8 * v == s;
                n_ok |= v == n;
            }
            if (n >= 2 && s_ok && n_ok)
                return 1;
        }
    }
    return 0;
}

static uint64_t hash_args(const sim_launch_ev_t *l)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint32_t i = 0; i < l->nargs; i++)
        h = hash_bytes(h, &l->args[i].value, 8);
    return h;
}

static uint64_t hash_ranges(const sim_launch_ev_t *l)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint32_t i = 0; i < l->nranges; i++)
        h = hash_bytes(hash_bytes(h, &l->ranges[i].addr, 8), &l->ranges[i].len, 8);
    return h;
}

static void classify(const char *name, const char *const *set, size_t nset, int found[C_N])
{
    char err[512];
    sim_source_t *src;
    assert_int_equal(sim_workload_open(name, set, nset, 9, &src, err, sizeof(err)), GMUX_OK);
    assert_true(src->nkernels <= MAXK);
    memset(found, 0, C_N * sizeof(int));
    for (uint32_t t = 0; t < src->ntasks; t++) {
        kstat_t ks[MAXK] = {0};
        sim_check_t chk;
        sim_check_init(&chk, src->nkernels);
        sim_event_t ev;
        gmux_status_t st;
        while ((st = sim_source_next(src, t, &ev)) == GMUX_OK) {
            char why[200];
            assert_int_equal(sim_check_event(&chk, &ev, why, sizeof(why)), GMUX_OK);
            if (ev.kind != SIM_EV_LAUNCH)
                continue;
            const sim_launch_ev_t *l = &ev.u.launch;
            kstat_t *k = &ks[l->kernel];
            /* every touched range lies in an allocation one of the pointers points into, so
             * a whole-allocation prediction never misses a byte */
            for (uint32_t i = 0; i < l->nranges; i++) {
                const sim_region_t *r = sim_check_find(&chk, l->ranges[i].addr, 1);
                int covered = 0;
                for (uint32_t a = 0; r && a < l->nargs; a++)
                    covered |= l->args[a].kind == ENG_ARG_PTR && l->args[a].value >= r->base &&
                               l->args[a].value < r->base + r->size;
                if (!covered)
                    fprintf(stderr, "%s: %s range %u outside its pointers' allocations\n", name,
                            src->kernel_names[l->kernel], i);
                assert_true(covered);
            }
            found[C_T3] |= strided(l);
            for (uint32_t a = 0; a < l->nargs && a < 16; a++) {
                if (l->args[a].kind != ENG_ARG_PTR)
                    continue;
                const sim_region_t *r = sim_check_find(&chk, l->args[a].value, 1);
                found[C_MID] |= r && r->base != l->args[a].value;
                int at = 0;
                uint64_t len = 0;
                for (uint32_t i = 0; i < l->nranges && !at; i++)
                    if (l->ranges[i].addr == l->args[a].value)
                        at = 1, len = l->ranges[i].len;
                if (!k->seen) {
                    k->has_at[a] = at, k->first_len[a] = len, k->const_len[a] = 1;
                    k->linear[a] = at && linear_in_args(l, len);
                } else {
                    k->has_at[a] &= at;
                    k->const_len[a] &= len == k->first_len[a];
                    k->linear[a] &= at && linear_in_args(l, len);
                }
            }
            if (k->nsamples < 64) {
                uint64_t ha = hash_args(l), hr = hash_ranges(l);
                for (int i = 0; i < k->nsamples; i++)
                    found[C_INDIRECT] |= k->args_hash[i] == ha && k->ranges_hash[i] != hr;
                k->args_hash[k->nsamples] = ha;
                k->ranges_hash[k->nsamples++] = hr;
            }
            k->seen++;
        }
        assert_int_equal(st, GMUX_ERR_NOT_FOUND);
        assert_int_equal(chk.n, 0); /* every allocation freed at the end */
        for (uint32_t k = 0; k < src->nkernels; k++) {
            if (ks[k].seen < 2)
                continue;
            for (int a = 0; a < 16; a++) {
                found[C_T1] |= ks[k].has_at[a] && ks[k].const_len[a];
                found[C_T2] |= ks[k].has_at[a] && !ks[k].const_len[a] && ks[k].linear[a];
            }
        }
        sim_check_fini(&chk);
    }
    sim_source_close(src);
}

static void expect_classes(const char *name, const char *const *set, size_t nset, const int *want,
                           size_t nwant)
{
    int found[C_N];
    classify(name, set, nset, found);
    for (size_t i = 0; i < nwant; i++) {
        if (!found[want[i]])
            fprintf(stderr, "%s lacks %s\n", name, class_names[want[i]]);
        assert_true(found[want[i]]);
    }
}

static void test_access_pattern_classes(void **state)
{
    (void)state;
    const char *llm[] = {"instances=1", "tokens=3", "layers=2", "prompt=64"};
    const int llm_w[] = {C_MID, C_T1, C_T2, C_T3, C_INDIRECT};
    expect_classes("llm-decode", llm, 4, llm_w, 5);
    const char *tr[] = {"tasks=1", "layers=2", "steps=2", "seq=128"};
    const int tr_w[] = {C_MID, C_T1, C_T2, C_INDIRECT};
    expect_classes("dl-train", tr, 4, tr_w, 4);
    const char *st[] = {"tasks=1", "nx=64", "ny=64", "nz=200", "slab=64", "iterations=2"};
    const int st_w[] = {C_MID, C_T1, C_T2, C_T3};
    expect_classes("sci-stencil", st, 6, st_w, 4);
    const char *sp[] = {"tasks=1", "rows=1000000", "block-rows=300000", "iterations=10",
                        "band=1000"};
    const int sp_w[] = {C_MID, C_T1, C_T2, C_INDIRECT};
    expect_classes("sci-sparse", sp, 5, sp_w, 4);
}

static void test_defaults_are_h200_scale(void **state)
{
    (void)state;
    /* every default workload oversubscribes 141 GB of HBM 2-3x, in tens of thousands of launches */
    const char *names[] = {"llm-decode", "dl-train", "sci-stencil", "sci-sparse"};
    for (int i = 0; i < 4; i++) {
        char err[256];
        sim_source_t *src;
        assert_int_equal(sim_workload_open(names[i], NULL, 0, 1, &src, err, sizeof(err)), GMUX_OK);
        uint64_t peak = 0, launches = 0;
        for (uint32_t t = 0; t < src->ntasks; t++) {
            sim_check_t chk;
            sim_check_init(&chk, src->nkernels);
            sim_event_t ev;
            while (sim_source_next(src, t, &ev) == GMUX_OK) {
                char why[200];
                assert_int_equal(sim_check_event(&chk, &ev, why, sizeof(why)), GMUX_OK);
                launches += ev.kind == SIM_EV_LAUNCH;
            }
            peak += chk.peak_bytes;
            sim_check_fini(&chk);
        }
        double ratio = (double)peak / 141e9;
        fprintf(stderr, "%s: %.2fx of 141 GB, %llu launches\n", names[i], ratio,
                (unsigned long long)launches);
        assert_true(ratio >= 2.0 && ratio <= 3.0);
        assert_true(launches >= 1000 && launches <= 100000);
        sim_source_close(src);
    }
}

/* dl-train's embedding gathers the rows of T = batch*seq random tokens:
 * with the largest settings (T = 2^30) the generator sorted a T-entry array
 * (8 GiB) with a shell sort that did not finish in 100 s even at T = 2^24.
 * Here T = 2^24 draws hit each of the 32000 rows: one range, the table. */
static void test_train_many_tokens(void **state)
{
    (void)state;
    const char *sets[] = {"tasks=1", "steps=1", "layers=1", "seq=1048576", "batch=16"};
    sim_source_t *src;
    char err[256];
    assert_int_equal(sim_workload_open("dl-train", sets, 5, 1, &src, err, sizeof(err)), GMUX_OK);
    sim_event_t ev;
    do
        assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    while (ev.kind != SIM_EV_LAUNCH);
    const sim_launch_ev_t *l = &ev.u.launch;
    assert_string_equal(src->kernel_names[l->kernel], "train_embedding_fwd");
    assert_int_equal(l->nranges, 3); /* tokens, the table's rows, the output */
    assert_int_equal(l->ranges[1].addr, l->args[1].value);
    assert_int_equal(l->ranges[1].len, 32000ull * 4096 * 2);
    sim_source_close(src);
}

/* Settings that size the allocations past what the simulator can hold are
 * refused, naming the settings given, before the allocation that passes the
 * limit is handed out (a KV cache of 4096 sequences of 2^20 tokens made 80 TiB
 * allocations per layer: the simulator ran out of memory). */
static void test_footprint_limit(void **state)
{
    (void)state;
    const char *sets[] = {"instances=1", "batch=4096", "prompt=1048576", "tokens=1"};
    sim_source_t *src;
    char err[256];
    assert_int_equal(sim_workload_open("llm-decode", sets, 4, 1, &src, err, sizeof(err)), GMUX_OK);
    sim_event_t ev;
    gmux_status_t st;
    uint64_t live = 0, n = 0;
    while ((st = sim_source_next(src, 0, &ev)) == GMUX_OK && n++ < 100000)
        if (ev.kind == SIM_EV_ALLOC)
            live += ev.u.alloc.size;
    assert_int_equal(st, GMUX_ERR_RANGE);
    assert_true(live <= SIM_WORKLOAD_MAX_BYTES);
    assert_non_null(strstr(src->error, "llm-decode"));
    assert_non_null(strstr(src->error, "batch=4096"));
    assert_non_null(strstr(src->error, "prompt=1048576"));
    assert_non_null(strstr(src->error, "64.00 TiB"));
    sim_source_close(src);
    /* the limit is on the tasks together: 256 instances of Llama-2 70B pass */
    const char *big[] = {"instances=256", "model=llama2-70b", "tokens=1", "layers=2"};
    assert_int_equal(sim_workload_open("llm-decode", big, 4, 1, &src, err, sizeof(err)), GMUX_OK);
    for (uint32_t t = 0; t < src->ntasks; t++)
        while ((st = sim_source_next(src, t, &ev)) == GMUX_OK)
            ;
    assert_int_equal(st, GMUX_ERR_NOT_FOUND);
    sim_source_close(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_files),
        cmocka_unit_test(test_settings_rejected),
        cmocka_unit_test(test_access_pattern_classes),
        cmocka_unit_test(test_defaults_are_h200_scale),
        cmocka_unit_test(test_train_many_tokens),
        cmocka_unit_test(test_footprint_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
