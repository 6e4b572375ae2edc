/*
 * Tests of the template database: round trip through a file, kernel identity
 * (name and layout), and truncated or corrupt files giving a clear error while
 * the predictor goes on learning online.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/template_db.h"

#define BUF  (1ull << 34)
#define BUF2 (1ull << 35)

static bool find(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size)
{
    (void)ctx;
    uint64_t b = addr >= BUF2 ? BUF2 : BUF;
    if (addr < BUF || addr - b >= (1ull << 30))
        return false;
    *base = b;
    *size = 1ull << 30;
    return true;
}

static const eng_region_lookup_t rl = {find, NULL};

/* Kernel 0 "saxpy": T2 on both pointers. Kernel 1 "gather k": indirect (irregular). */
static void teach(eng_predictor_t *p, unsigned launches)
{
    assert_int_equal(eng_predictor_name_kernel(p, 0, "saxpy"), GMUX_OK);
    assert_int_equal(eng_predictor_name_kernel(p, 1, "gather k<%>"), GMUX_OK);
    for (unsigned i = 0; i < launches; i++) {
        uint64_t n = 100 + 37 * i;
        eng_arg_t a[3] = {{ENG_ARG_PTR, BUF + 4096 * i}, {ENG_ARG_PTR, BUF2}, {ENG_ARG_VAL, n}};
        eng_range_t t[2] = {{a[0].value, 4 * n, 1}, {BUF2, 4 * n, 2}};
        eng_launch_t l = {0, {1, 1, 1}, {128, 1, 1}, 3, a};
        assert_int_equal(eng_predictor_observe(p, &l, t, 2, &rl), GMUX_OK);
        eng_arg_t g[2] = {{ENG_ARG_PTR, BUF}, {ENG_ARG_VAL, 2}};
        eng_range_t gt[3] = {{BUF + 64 * ((i * 7919) % 1000), 64, 1},
                             {BUF + 64 * 1000 + 64 * ((i * 104729) % 997), 64, 1},
                             {BUF + 64 * 2000 + 64 * ((i * 31 + 5) % 500), 64, 1}};
        eng_launch_t gl = {1, {1, 1, 1}, {32, 1, 1}, 2, g};
        assert_int_equal(eng_predictor_observe(p, &gl, gt, 3, &rl), GMUX_OK);
    }
}

static char *db_text(const eng_predictor_t *p, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    assert_int_equal(eng_tpl_db_write(p, f), GMUX_OK);
    fclose(f);
    return buf;
}

static void test_round_trip(void **state)
{
    (void)state;
    eng_predictor_t *p, *q;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    teach(p, 12);
    char path[] = "/tmp/gmux-test-db-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256] = "";
    assert_int_equal(eng_tpl_db_save(p, path, err, sizeof(err)), GMUX_OK);

    assert_int_equal(eng_predictor_create(&q), GMUX_OK);
    assert_int_equal(eng_tpl_db_load(q, path, err, sizeof(err)), GMUX_OK);
    unlink(path);
    /* Bound by name and layout on first sight: predictions equal without any sample. */
    assert_int_equal(eng_predictor_name_kernel(q, 5, "saxpy"), GMUX_OK);
    eng_arg_t a[3] = {{ENG_ARG_PTR, BUF + 999424}, {ENG_ARG_PTR, BUF2 + 64}, {ENG_ARG_VAL, 5000}};
    eng_launch_t l = {0, {1, 1, 1}, {128, 1, 1}, 3, a};
    eng_launch_t lq = l;
    lq.kernel = 5;
    assert_int_equal(eng_predictor_prepare(q, &lq), GMUX_OK);
    eng_span_t sp[4], sq[4];
    size_t np, nq;
    assert_int_equal(eng_predictor_predict(p, &l, &rl, sp, 4, &np), GMUX_OK);
    assert_int_equal(eng_predictor_predict(q, &lq, &rl, sq, 4, &nq), GMUX_OK);
    assert_int_equal(np, 2);
    assert_int_equal(nq, 2);
    assert_memory_equal(sp, sq, 2 * sizeof(sp[0]));
    assert_int_equal(sq[0].len, 20000);
    eng_pred_kernel_info_t ki;
    assert_int_equal(eng_predictor_kernel_info(q, 5, &ki), GMUX_OK);
    assert_true(ki.from_db);
    /* The indirect kernel's fallback survives too, name escapes included. */
    assert_int_equal(eng_predictor_name_kernel(q, 1, "gather k<%>"), GMUX_OK);
    eng_arg_t g[2] = {{ENG_ARG_PTR, BUF}, {ENG_ARG_VAL, 2}};
    eng_launch_t gl = {1, {1, 1, 1}, {32, 1, 1}, 2, g};
    assert_int_equal(eng_predictor_prepare(q, &gl), GMUX_OK);
    eng_pred_arg_info_t ai;
    assert_int_equal(eng_predictor_arg_info(q, 1, 0, &ai), GMUX_OK);
    assert_int_equal(ai.state, ENG_PRED_FALLBACK);
    assert_int_equal(ai.reason, ENG_PRED_WHY_IRREGULAR);
    /* Same text again after a load (kernel 5 is saxpy in q, 0 in p: same entries). */
    size_t lp, lqn;
    char *tp = db_text(p, &lp), *tq = db_text(q, &lqn);
    assert_string_equal(tp, tq);
    assert_non_null(strstr(tp, "kernel gather%20k<%25> pv\n"));
    free(tp);
    free(tq);
    /* A different layout under the same name is another kernel: not bound. */
    assert_int_equal(eng_predictor_name_kernel(q, 6, "saxpy"), GMUX_OK);
    eng_arg_t b[2] = {{ENG_ARG_PTR, BUF}, {ENG_ARG_PTR, BUF2}};
    eng_launch_t lb = {6, {1, 1, 1}, {128, 1, 1}, 2, b};
    assert_int_equal(eng_predictor_prepare(q, &lb), GMUX_OK);
    assert_int_equal(eng_predictor_kernel_info(q, 6, &ki), GMUX_OK);
    assert_false(ki.from_db);
    eng_predictor_destroy(p);
    eng_predictor_destroy(q);
}

/* A failed load leaves the predictor as it was, and online learning works. */
static void assert_untouched_and_learns(eng_predictor_t *q)
{
    eng_arg_t a[3] = {{ENG_ARG_PTR, BUF}, {ENG_ARG_PTR, BUF2}, {ENG_ARG_VAL, 77}};
    eng_launch_t l = {0, {1, 1, 1}, {128, 1, 1}, 3, a};
    eng_span_t sp[4];
    size_t n;
    assert_int_equal(eng_predictor_prepare(q, &l), GMUX_OK);
    assert_int_equal(eng_predictor_predict(q, &l, &rl, sp, 4, &n), GMUX_OK);
    assert_int_equal(n, 2);
    assert_int_equal(sp[0].len, 1ull << 30); /* no template from the broken file */
    teach(q, 3);
    assert_int_equal(eng_predictor_predict(q, &l, &rl, sp, 4, &n), GMUX_OK);
    assert_int_equal(sp[0].len, 4 * 77);
}

static void test_truncated_everywhere(void **state)
{
    (void)state;
    eng_predictor_t *p;
    assert_int_equal(eng_predictor_create(&p), GMUX_OK);
    teach(p, 12);
    size_t len;
    char *text = db_text(p, &len);
    unsigned lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_true(lines >= 8);
    for (size_t cut = 0; cut < len; cut++) {
        eng_predictor_t *q;
        char err[256] = "";
        assert_int_equal(eng_predictor_create(&q), GMUX_OK);
        assert_int_equal(eng_predictor_name_kernel(q, 0, "saxpy"), GMUX_OK);
        gmux_status_t st = eng_tpl_db_parse(q, text, cut, "db", err, sizeof(err));
        assert_int_equal(st, GMUX_ERR_PARSE);
        /* Names the input, a line and a byte offset within the input. */
        assert_true(strncmp(err, "db:", 3) == 0);
        assert_non_null(strstr(err, "(byte "));
        if (!strstr(err, "truncated"))
            fail_msg("cut at %zu: '%s'", cut, err);
        if (cut == len / 2)
            assert_untouched_and_learns(q);
        eng_predictor_destroy(q);
    }
    free(text);
    eng_predictor_destroy(p);
}

static void expect_error(const char *text, gmux_status_t want, const char *fragment)
{
    eng_predictor_t *q;
    char err[256] = "";
    assert_int_equal(eng_predictor_create(&q), GMUX_OK);
    assert_int_equal(eng_tpl_db_parse(q, text, strlen(text), "t.db", err, sizeof(err)), want);
    if (!strstr(err, fragment))
        fail_msg("error '%s' lacks '%s'", err, fragment);
    eng_predictor_name_kernel(q, 0, "saxpy");
    assert_untouched_and_learns(q);
    eng_predictor_destroy(q);
}

static void test_corrupt(void **state)
{
    (void)state;
    const char *head = "gmux-templates 1\nkernel saxpy ppv\n";
    char buf[512];
    expect_error("gmux-templates 2\ntotal 0\n", GMUX_ERR_VERSION, "t.db:1: database version 2");
    expect_error("GMUX-templates 1\ntotal 0\n", GMUX_ERR_PARSE, "t.db:1 (byte 0): not a gmux");
    snprintf(buf, sizeof(buf), "%sarg 0 T2 off=0 len=4*a2 mode=r\narg 1 T9\nend\ntotal 1\n", head);
    expect_error(buf, GMUX_ERR_PARSE, "t.db:4 (byte 65): malformed template 'T9'");
    snprintf(buf, sizeof(buf), "%sarg 2 T1 off=0 len=8\nend\ntotal 1\n", head);
    expect_error(buf, GMUX_ERR_PARSE, "t.db:3 (byte 34): argument 2 is a value");
    snprintf(buf, sizeof(buf), "%sarg 0 learning\nend\ntotal 1\n", head);
    expect_error(buf, GMUX_ERR_PARSE, "t.db:4 (byte 49): kernel ends without pointer argument 1");
    snprintf(buf, sizeof(buf), "%sarg 0 learning\narg 0 learning\n", head);
    expect_error(buf, GMUX_ERR_PARSE, "t.db:4 (byte 49): argument 0 given twice");
    snprintf(buf, sizeof(buf), "%sarg 0 learning\narg 1 whole sideways\nend\ntotal 1\n", head);
    expect_error(buf, GMUX_ERR_PARSE, "unknown fallback reason 'sideways'");
    snprintf(buf, sizeof(buf), "%sarg 0 learning\narg 1 learning\nend\ntotal 2\n", head);
    expect_error(buf, GMUX_ERR_PARSE, "t.db:6 (byte 68): 'total' says 2 kernels");
    expect_error("gmux-templates 1\nkernel a%zz p\n", GMUX_ERR_PARSE, "malformed kernel name");
    expect_error("gmux-templates 1\nkernel a pq\n", GMUX_ERR_PARSE, "layout 'pq'");
    expect_error("gmux-templates 1\ntotal 0\nkernel x p\n", GMUX_ERR_PARSE, "after the 'total'");
    expect_error("gmux-templates 1\ntotal 0", GMUX_ERR_PARSE, "t.db:2 (byte 17): truncated");
    /* Comments and blank lines are fine. */
    eng_predictor_t *q;
    char err[256];
    const char *ok = "gmux-templates 1\n# made by hand\n\nkernel saxpy ppv\narg 1 T1 off=0 "
                     "len=16 mode=w\narg 0 whole no-fit\nend\ntotal 1\n";
    assert_int_equal(eng_predictor_create(&q), GMUX_OK);
    assert_int_equal(eng_tpl_db_parse(q, ok, strlen(ok), "ok", err, sizeof(err)), GMUX_OK);
    eng_predictor_destroy(q);
}

static void test_missing_file(void **state)
{
    (void)state;
    eng_predictor_t *q;
    char err[256];
    assert_int_equal(eng_predictor_create(&q), GMUX_OK);
    assert_int_equal(eng_tpl_db_load(q, "/nonexistent/gmux.db", err, sizeof(err)),
                     GMUX_ERR_NOT_FOUND);
    assert_non_null(strstr(err, "/nonexistent/gmux.db"));
    eng_predictor_destroy(q);
}

/* A file larger than any database is refused after reading at most the limit
 * (eng_tpl_db_load read the whole file into memory first: a trace passed by
 * mistake was loaded whole, and --templates /dev/zero grew to 2.6 GB in 15 s
 * without end). */
static void test_oversized_file(void **state)
{
    (void)state;
    char path[] = "/tmp/gmux-tpl-big-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)ENG_TPL_DB_MAX_BYTES + 1), 0);
    close(fd);
    eng_predictor_t *q;
    char err[256];
    assert_int_equal(eng_predictor_create(&q), GMUX_OK);
    assert_int_equal(eng_tpl_db_load(q, path, err, sizeof(err)), GMUX_ERR_RANGE);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "larger than"));
    assert_int_equal(eng_tpl_db_load(q, "/dev/zero", err, sizeof(err)), GMUX_ERR_RANGE);
    assert_non_null(strstr(err, "/dev/zero: larger than"));
    eng_predictor_destroy(q);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_corrupt),        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_oversized_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
