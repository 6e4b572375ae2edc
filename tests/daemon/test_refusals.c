/* Unit tests of gmuxd's rate-limited refusal log (src/daemon/refusals.c),
 * on a made-up clock: the first refusal of a kind is said at once, the next
 * ones within its interval are counted, and one summary line says how many
 * once the interval has passed; a kind's interval is a second unless it sets
 * a longer one (a client of another protocol version retries every second). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "daemon/refusals.h"

static struct {
    int lines;
    char last[256];
} seen;

static void capture(com_log_level_t level, com_log_subsys_t subsys, const char *line, void *arg)
{
    (void)level, (void)subsys, (void)arg;
    seen.lines++;
    snprintf(seen.last, sizeof(seen.last), "%s", line);
}

static int setup(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof(seen));
    com_log_set_sink(capture, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    com_log_set_sink(NULL, NULL);
    return 0;
}

#define T0 (1000 * COM_NS_PER_S)

/* Default interval: a second. */
static void test_a_line_a_second(void **state)
{
    (void)state;
    dmn_refusals_t r = {.what = "things"};
    assert_true(dmn_refusal_say(&r, T0));
    assert_false(dmn_refusal_say(&r, T0 + 100 * COM_NS_PER_MS));
    assert_false(dmn_refusal_say(&r, T0 + 200 * COM_NS_PER_MS));
    dmn_refusals_flush(&r, 1, T0 + 900 * COM_NS_PER_MS);
    assert_int_equal(seen.lines, 0);
    dmn_refusals_flush(&r, 1, T0 + COM_NS_PER_S);
    assert_int_equal(seen.lines, 1);
    assert_non_null(
        strstr(seen.last, "things: 2 more refused in the last 1000 ms (3 refused so far)"));
    dmn_refusals_flush(&r, 1, T0 + 5 * COM_NS_PER_S); /* nothing new: nothing said */
    assert_int_equal(seen.lines, 1);
    assert_true(dmn_refusal_say(&r, T0 + 5 * COM_NS_PER_S)); /* a second after the summary */
}

/* A minute: a try every second is one line, then one summary a minute. */
static void test_longer_interval(void **state)
{
    (void)state;
    dmn_refusals_t r = {.what = "peers of another protocol version", .every_ns = 60 * COM_NS_PER_S};
    int said = 0;
    for (uint64_t t = 0; t < 150; t++) { /* the server's loop: flush, then new peers */
        dmn_refusals_flush(&r, 1, T0 + t * COM_NS_PER_S);
        said += dmn_refusal_say(&r, T0 + t * COM_NS_PER_S);
    }
    assert_int_equal(said, 1);
    assert_int_equal(seen.lines, 2); /* at 60 s and 120 s */
    assert_non_null(strstr(seen.last, "peers of another protocol version: 60 more refused in the "
                                      "last 60000 ms (120 refused so far)"));
    assert_int_equal(r.total, 150);
    assert_int_equal(r.unsaid, 30);
}

/* A kind of dropped peers says what was done to them (closed, dropped),
 * not "refused"; a peer that reconnects and stalls every few seconds costs
 * the first line, then a summary a minute. */
static void test_drops_say_their_verb(void **state)
{
    (void)state;
    dmn_refusals_t r = {
        .what = "silent connections", .verb = "closed", .every_ns = 60 * COM_NS_PER_S};
    int said = 0;
    for (uint64_t t = 0; t < 70; t += 5) {
        dmn_refusals_flush(&r, 1, T0 + t * COM_NS_PER_S);
        said += dmn_refusal_say(&r, T0 + t * COM_NS_PER_S);
    }
    assert_int_equal(said, 1);
    assert_int_equal(seen.lines, 1);
    assert_non_null(strstr(
        seen.last, "silent connections: 11 more closed in the last 60000 ms (12 closed so far)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_line_a_second, setup, teardown),
        cmocka_unit_test_setup_teardown(test_longer_interval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drops_say_their_verb, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
