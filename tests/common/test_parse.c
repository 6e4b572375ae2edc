/* Tests of the scalar parsers used by settings and the CLI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/parse.h"

static uint64_t size_ok(const char *text)
{
    uint64_t v = 12345;
    assert_int_equal(com_parse_size(text, &v), GMUX_OK);
    return v;
}

static void test_size_units(void **state)
{
    (void)state;
    assert_int_equal(size_ok("0"), 0);
    assert_int_equal(size_ok("4096"), 4096);
    assert_int_equal(size_ok("4096B"), 4096);
    assert_int_equal(size_ok("64KiB"), 65536);
    assert_int_equal(size_ok("64k"), 65536);
    assert_int_equal(size_ok("2MiB"), 2u << 20);
    assert_int_equal(size_ok(" 2 MB "), 2u << 20);
    assert_int_equal(size_ok("141GiB"), 141ull << 30);
    assert_int_equal(size_ok("1.5GiB"), 3ull << 29);
    assert_int_equal(size_ok("1T"), 1ull << 40);
}

static void test_size_rejects(void **state)
{
    (void)state;
    uint64_t v = 7;
    assert_int_equal(com_parse_size("", &v), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_size("MiB", &v), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_size("-1", &v), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_size("12 parsecs", &v), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_size("2MiBx", &v), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_size("0x10", &v), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_size("0.3B", &v), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_size("99999999999999999999", &v), GMUX_ERR_RANGE);
    assert_int_equal(com_parse_size("20000000TiB", &v), GMUX_ERR_RANGE);
    assert_int_equal(com_parse_size(NULL, &v), GMUX_ERR_INVALID);
    assert_int_equal(v, 7); /* untouched on failure */
}

static void test_integers(void **state)
{
    (void)state;
    int64_t i = 0;
    uint64_t u = 0;
    assert_int_equal(com_parse_i64("-42", &i), GMUX_OK);
    assert_int_equal(i, -42);
    assert_int_equal(com_parse_i64(" 0x1f ", &i), GMUX_OK);
    assert_int_equal(i, 31);
    assert_int_equal(com_parse_i64("12a", &i), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_i64("", &i), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_i64("9223372036854775808", &i), GMUX_ERR_RANGE);
    assert_int_equal(com_parse_u64("18446744073709551615", &u), GMUX_OK);
    assert_true(u == UINT64_MAX);
    assert_int_equal(com_parse_u64("-1", &u), GMUX_ERR_PARSE);
}

/* parse.h promises decimal or 0x-hex: a leading zero is not octal, as a
 * person typing "--seed 010" or "GMUX_X=08" means ten or eight. */
static void test_leading_zero_is_decimal(void **state)
{
    (void)state;
    int64_t i = 0;
    uint64_t u = 0;
    assert_int_equal(com_parse_u64("010", &u), GMUX_OK);
    assert_true(u == 10);
    assert_int_equal(com_parse_u64("08", &u), GMUX_OK);
    assert_true(u == 8);
    assert_int_equal(com_parse_i64("-010", &i), GMUX_OK);
    assert_int_equal(i, -10);
    assert_int_equal(com_parse_i64("+09", &i), GMUX_OK);
    assert_int_equal(i, 9);
    assert_int_equal(com_parse_u64("0X1F", &u), GMUX_OK);
    assert_true(u == 31);
    assert_int_equal(com_parse_i64("-0x10", &i), GMUX_OK);
    assert_int_equal(i, -16);
    assert_int_equal(com_parse_u64("0", &u), GMUX_OK);
    assert_true(u == 0);
    assert_int_equal(com_parse_u64("0x", &u), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_u64("0xg", &u), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_u64("0b1", &u), GMUX_ERR_PARSE);
}

static void test_doubles_and_bools(void **state)
{
    (void)state;
    double d = 0;
    bool b = false;
    assert_int_equal(com_parse_double("2.5e3", &d), GMUX_OK);
    assert_true(d == 2500.0);
    assert_int_equal(com_parse_double("nan", &d), GMUX_ERR_RANGE);
    assert_int_equal(com_parse_double("1e999", &d), GMUX_ERR_RANGE);
    assert_int_equal(com_parse_double("1.0x", &d), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_bool("YES", &b), GMUX_OK);
    assert_true(b);
    assert_int_equal(com_parse_bool(" off ", &b), GMUX_OK);
    assert_false(b);
    assert_int_equal(com_parse_bool("2", &b), GMUX_ERR_PARSE);
    assert_int_equal(com_parse_bool("truest", &b), GMUX_ERR_PARSE);
}

static void test_format_size(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(com_format_size(512, buf, sizeof(buf)), "512 B");
    assert_string_equal(com_format_size(3ull << 29, buf, sizeof(buf)), "1.50 GiB");
    assert_string_equal(com_format_size(2u << 20, buf, sizeof(buf)), "2.00 MiB");
}

/* The count a short form shows: its number times base to the power of its
 * unit letter's place in units (units[0]: the letter of the number alone,
 * or a blank); -1 for a letter not in units. */
static double shown(const char *text, const char *units, double base)
{
    char *unit;
    double v = strtod(text, &unit);
    const char *u = *unit ? strchr(units, *unit) : units;
    if (!u || (*unit && unit[1]))
        return -1;
    for (; u > units; u--)
        v *= base;
    return v;
}

/* The short forms for table columns: at most 4 (sizes) and 5 (counts)
 * characters, within 5% of the count. */
static void test_format_short(void **state)
{
    (void)state;
    char buf[32];
    static const struct {
        uint64_t v;
        const char *size, *count;
    } cases[] = {
        {0, "0B", "0"},
        {999, "999B", "999"},
        {1000, "1.0K", "1000"},
        {1536, "1.5K", "1536"},
        {99999, "98K", "99999"},
        {100000, "98K", "100k"},
        {999499, "976K", "999k"},
        {999500, "976K", "1.0M"},
        {1023ull << 10, "1.0M", "1.0M"},
        {300ull << 20, "300M", "315M"},
        {1536ull << 20, "1.5G", "1.6G"},
        {40ull << 30, "40G", "43G"},
        {UINT64_MAX, "16E", "18E"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_string_equal(com_format_size_short(cases[i].v, buf, sizeof(buf)), cases[i].size);
        assert_string_equal(com_format_count_short(cases[i].v, buf, sizeof(buf)), cases[i].count);
    }
    for (uint64_t v = 1; v < (UINT64_MAX >> 1); v += v / 7 + 1) {
        assert_true(strlen(com_format_count_short(v, buf, sizeof(buf))) <= 5);
        com_format_size_short(v, buf, sizeof(buf));
        assert_true(strlen(buf) <= 4);
        double err = (shown(buf, "BKMGTPE", 1024.0) - (double)v) / (double)v;
        assert_true(err < 0.05 && err > -0.05);
        com_format_count_short(v, buf, sizeof(buf));
        err = (shown(buf, " kMGTPE", 1000.0) - (double)v) / (double)v;
        assert_true(err < 0.05 && err > -0.05);
    }
}

/* Durations: two units, cut below, never "60" of a unit. */
static void test_format_duration(void **state)
{
    (void)state;
    static const struct {
        uint64_t ns;
        const char *text;
    } cases[] = {
        {0, "0.0 s"},
        {99999999, "0.0 s"},
        {2500000000ull, "2.5 s"},
        {59999999999ull, "59.9 s"},
        {60000000000ull, "1m00s"},
        {3599999999999ull, "59m59s"},
        {3600000000000ull, "1h00m"},
        {(3600ull * 2 + 60 * 7 + 59) * 1000000000ull, "2h07m"},
        {86399999999999ull, "23h59m"},
        {86400000000000ull, "1d00h"},
        {(86400ull * 40 + 3600 * 23) * 1000000000ull, "40d23h"},
        {UINT64_MAX, "213503d23h"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_string_equal(com_format_duration(cases[i].ns, buf, sizeof(buf)), cases[i].text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_duration),
        cmocka_unit_test(test_size_units),
        cmocka_unit_test(test_size_rejects),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_leading_zero_is_decimal),
        cmocka_unit_test(test_doubles_and_bools),
        cmocka_unit_test(test_format_size),
        cmocka_unit_test(test_format_short),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
