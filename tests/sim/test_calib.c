/* Tests of the calibration reader (gmux sim --calibration). */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/calib.h"

static gmux_status_t apply(sim_params_t *p, const char *text, char *applied, char *err)
{
    return sim_calib_apply_text(p, text, strlen(text), applied, 512, err, 256);
}

static void test_full_file_sets_measured_parameters(void **state)
{
    (void)state;
    sim_params_t p;
    sim_params_default(&p);
    char applied[512], err[256];
    const char *text =
        "{\"gmux_calibration\": 1, \"gpu\": \"X\", \"cupti\": true, \"hbm_bytes\": 150000000000,"
        " \"prefetch_h2d_GBps\": 25.0, \"prefetch_d2h_GBps\": 40.0, \"demand_ms\": 100.0,"
        " \"buffer_bytes\": 2000000000, \"demand_fault_records\": 1000, \"note\": null}";
    assert_int_equal(apply(&p, text, applied, err), GMUX_OK);
    assert_true(p.hbm_bytes == 150000000000.0);
    assert_true(p.h2d_bps == 25e9);
    assert_true(p.d2h_bps == 40e9);
    /* 2e9 bytes demand-paged in 100 ms: 20 GB/s; the batch latency is left alone */
    assert_true(p.fault_bps > 19.999e9 && p.fault_bps < 20.001e9);
    sim_params_t def;
    sim_params_default(&def);
    assert_true(p.fault_latency_ns == def.fault_latency_ns);
    assert_non_null(strstr(applied, "h2d_gbps=25.000"));
    assert_non_null(strstr(applied, "fault_gbps=20.000"));
}

static void test_missing_measurements_leave_defaults(void **state)
{
    (void)state;
    sim_params_t p, def;
    sim_params_default(&p);
    sim_params_default(&def);
    char applied[512], err[256];
    assert_int_equal(
        apply(&p, "{\"gmux_calibration\": 1, \"prefetch_d2h_GBps\": 12.5}", applied, err), GMUX_OK);
    assert_true(p.d2h_bps == 12.5e9);
    assert_true(p.h2d_bps == def.h2d_bps);
    assert_true(p.fault_bps == def.fault_bps);
    assert_string_equal(applied, "d2h_gbps=12.500");
}

static void test_rejects_other_documents(void **state)
{
    (void)state;
    sim_params_t p;
    sim_params_default(&p);
    char err[256];
    assert_int_equal(apply(&p, "{\"h2d\": 3}", NULL, err), GMUX_ERR_VERSION);
    assert_non_null(strstr(err, "gmux_calibration"));
}

static void test_malformed_names_offset_and_changes_nothing(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *offset;
    } bad[] = {
        {"", "byte 0"},
        {"{\"gmux_calibration\": 1,}", "byte 23"},
        {"{\"gmux_calibration\": 1} x", "byte 24"},
        {"{\"a\": {\"b\": 1}}", "byte 6"},
        {"{\"a\": \"unterminated}", "byte 20"},
        {"{\"a\" 1}", "byte 5"},
        {"{\"a\": 1e999}", "byte"},
        {"{\"a\": tru}", "byte 6"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sim_params_t p, def;
        sim_params_default(&p);
        sim_params_default(&def);
        char err[256] = "";
        assert_int_equal(apply(&p, bad[i].text, NULL, err), GMUX_ERR_PARSE);
        assert_non_null(strstr(err, bad[i].offset));
        assert_memory_equal(&p, &def, sizeof(p));
    }
}

static void test_out_of_range_rejected_whole(void **state)
{
    (void)state;
    sim_params_t p, def;
    sim_params_default(&p);
    sim_params_default(&def);
    char err[256];
    assert_int_equal(apply(&p,
                           "{\"gmux_calibration\": 1, \"prefetch_h2d_GBps\": 30,"
                           " \"prefetch_d2h_GBps\": 1e-12}",
                           NULL, err),
                     GMUX_ERR_RANGE);
    assert_memory_equal(&p, &def, sizeof(p)); /* not even the good h2d value */
}

static void test_file_errors_name_the_file(void **state)
{
    (void)state;
    sim_params_t p;
    sim_params_default(&p);
    char err[512];
    assert_int_equal(sim_calib_apply_file(&p, "/nonexistent/calib.json", NULL, 0, err, sizeof(err)),
                     GMUX_ERR_IO);
    assert_non_null(strstr(err, "/nonexistent/calib.json"));
    /* a folder opens, but reading it fails: not "larger than 16 KiB" */
    assert_int_equal(sim_calib_apply_file(&p, "/tmp", NULL, 0, err, sizeof(err)), GMUX_ERR_IO);
    assert_non_null(strstr(err, "/tmp: Is a directory"));
    assert_int_equal(sim_calib_apply_file(&p, CORPUS_DIR "/full.json", NULL, 0, err, sizeof(err)),
                     GMUX_OK);
    assert_true(p.h2d_bps == 25e9);
}

/* A NUL byte after a number's digits is no part of it: the file is
 * malformed (the reader took the bytes 1, NUL, 2.5 for the number 1 and
 * accepted the file). */
static void test_nul_in_number_rejected(void **state)
{
    (void)state;
    sim_params_t p, def;
    sim_params_default(&p);
    def = p;
    char applied[512], err[256];
    static const char text[] = "{\"gmux_calibration\": 1, \"prefetch_h2d_GBps\": 1\0002.5}";
    assert_int_equal(sim_calib_apply_text(&p, text, sizeof(text) - 1, applied, sizeof(applied), err,
                                          sizeof(err)),
                     GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "at byte 46"));
    assert_true(p.h2d_bps == def.h2d_bps);
}

/* The limit is 16 KiB: a file of exactly 16384 bytes is read (it was
 * refused as larger than 16 KiB, the reader seeing no end of file after a
 * full buffer), and one byte more is refused. */
static void test_file_of_exactly_16_kib_is_read(void **state)
{
    (void)state;
    char path[] = "/tmp/gmux-test-calib-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static char text[16385];
    const char *doc = "{\"gmux_calibration\": 1, \"prefetch_h2d_GBps\": 30.0}";
    memset(text, ' ', sizeof(text));
    memcpy(text, doc, strlen(doc));
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, 16384, f), 16384);
    assert_int_equal(fclose(f), 0);
    sim_params_t p;
    sim_params_default(&p);
    char err[512] = "", err2[512] = "";
    gmux_status_t st = sim_calib_apply_file(&p, path, NULL, 0, err, sizeof(err));
    double h2d = p.h2d_bps;
    f = fopen(path, "ab");
    bool grown = f && fputc(' ', f) == ' ' && fclose(f) == 0;
    gmux_status_t st2 = sim_calib_apply_file(&p, path, NULL, 0, err2, sizeof(err2));
    unlink(path);
    if (st != GMUX_OK)
        print_message("%s\n", err);
    assert_int_equal(st, GMUX_OK);
    assert_true(h2d == 30e9);
    assert_true(grown);
    assert_int_equal(st2, GMUX_ERR_RANGE);
    assert_non_null(strstr(err2, "16 KiB"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_file_sets_measured_parameters),
        cmocka_unit_test(test_missing_measurements_leave_defaults),
        cmocka_unit_test(test_rejects_other_documents),
        cmocka_unit_test(test_malformed_names_offset_and_changes_nothing),
        cmocka_unit_test(test_out_of_range_rejected_whole),
        cmocka_unit_test(test_file_errors_name_the_file),
        cmocka_unit_test(test_nul_in_number_rejected),
        cmocka_unit_test(test_file_of_exactly_16_kib_is_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
