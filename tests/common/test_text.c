/* Tests of help text wrapping (common/text.h): widths, indents, long words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/text.h"

/* What com_text_wrap writes after a prefix of col characters ("x" each). */
static char *wrapped(const char *text, size_t col, size_t width)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    for (size_t i = 0; i < col; i++)
        fputc('x', f);
    com_text_wrap(f, text, col, width);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void test_fits_on_one_line(void **state)
{
    (void)state;
    char *s = wrapped("fixed cost of one call", 10, 80);
    assert_string_equal(s, "xxxxxxxxxxfixed cost of one call\n");
    free(s);
}

static void test_breaks_under_the_column(void **state)
{
    (void)state;
    /* room for 20 columns after the prefix of 10 */
    char *s = wrapped("aaaa bbbb cccc dddd eeee ffff", 10, 30);
    assert_string_equal(s, "xxxxxxxxxxaaaa bbbb cccc dddd\n"
                           "          eeee ffff\n");
    free(s);
    /* a word ending exactly at the width stays; one more column breaks */
    s = wrapped("aaaa bbbb cccc ddddd", 10, 30);
    assert_string_equal(s, "xxxxxxxxxxaaaa bbbb cccc ddddd\n");
    free(s);
    s = wrapped("aaaa bbbb cccc dddddd", 10, 30);
    assert_string_equal(s, "xxxxxxxxxxaaaa bbbb cccc\n"
                           "          dddddd\n");
    free(s);
}

/* Words of s (runs of non-blanks) up to end. */
static size_t count_words(const char *s, const char *end)
{
    size_t n = 0;
    for (const char *w = s; w < end; w++)
        n += w[0] != ' ' && w[0] != '\n' && (w == s || w[-1] == ' ' || w[-1] == '\n');
    return n;
}

static void test_every_line_within_width(void **state)
{
    (void)state;
    const char *text = "UVM: a faulted region moves whole once over this % of it is resident "
                       "or touched (driver's prefetch threshold; 100: never)";
    char *s = wrapped(text, 35, 80);
    size_t lines = 0, words = 0;
    for (char *line = s, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        assert_non_null(end);
        assert_true(end - line <= 80);
        if (lines++ > 0) /* continuation: 35 blanks, then a word */
            assert_true(strspn(line, " ") == 35);
        words += count_words(line + 35, end);
    }
    assert_int_equal(lines, 3);
    /* every word of the text, none lost or cut */
    assert_int_equal(words, count_words(text, text + strlen(text)));
    assert_int_equal(words, 21);
    free(s);
}

static void test_long_word_alone(void **state)
{
    (void)state;
    char *s = wrapped("a verylongwordthatcannotfit b", 4, 24);
    assert_string_equal(s, "xxxxa\n"
                           "    verylongwordthatcannotfit\n"
                           "    b\n");
    free(s);
}

static void test_blanks_collapse(void **state)
{
    (void)state;
    char *s = wrapped("  one   two  ", 2, 80);
    assert_string_equal(s, "xxone two\n");
    free(s);
    s = wrapped("", 2, 80);
    assert_string_equal(s, "xx\n");
    free(s);
}

static void test_no_room_goes_below(void **state)
{
    (void)state;
    char *s = wrapped("some words here", 65, 80);
    assert_string_equal(s, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
                           "    some words here\n");
    free(s);
    s = wrapped("some words here", 60, 80); /* 20 columns left: still beside */
    assert_non_null(strstr(s, "xsome words here\n"));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits_on_one_line),
        cmocka_unit_test(test_breaks_under_the_column),
        cmocka_unit_test(test_every_line_within_width),
        cmocka_unit_test(test_long_word_alone),
        cmocka_unit_test(test_blanks_collapse),
        cmocka_unit_test(test_no_room_goes_below),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
