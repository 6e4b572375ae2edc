/* Tests of net_jobenv (src/net/jobenv.c): the counts GMUX_RANK, GMUX_SIZE,
 * GMUX_NNODES and the address of GMUX_BOOTSTRAP as a rank reads them. They
 * pin the edge cases. The numbers are read as com_parse_i64 reads every
 * integer a user types (src/common/parse.h): blanks around it and a sign
 * taken, decimal or 0x hex, nothing else after the digits. Until
 * 2026-12-04 they were strtol's, decimal only, which took a leading blank
 * and refused a trailing one ("4 ", "127.0.0.1:80\n"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "net/jobenv.h"

static void test_counts(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int want;
    } cases[] = {
        {"0", 0},
        {"4", 4},
        {"007", 7},
        {" 4", 4}, /* strtol skips leading blanks */
        {"\t4", 4},
        {"+4", 4}, /* and takes a sign */
        {"-0", 0},
        {"1048576", 1 << 20},
        {"1048577", -1}, /* above NET_JOBENV_COUNT_MAX */
        {"99999999999", -1},
        {"99999999999999999999999", -1}, /* past a long: ERANGE, LONG_MAX */
        {"-1", -1},
        {"-99999999999999999999999", -1},
        {"4 ", 4}, /* a trailing blank too, as com_parse_i64 */
        {"4\n", 4},
        {" 4\t", 4},
        {"4x", -1},
        {"4 x", -1},
        {"0x10", 16}, /* 0x hex, as com_parse_i64 */
        {"0x100001", -1},
        {"0x", -1},
        {"1e3", -1},
        {"4.0", -1},
        {" ", -1}, /* blanks alone: no digits, not the default */
        {"+", -1},
        {"-", -1},
        {"abc", -1},
        {"inf", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = net_jobenv_count(cases[i].text, 9);
        if (got != cases[i].want)
            fail_msg("'%s': %d, not %d", cases[i].text, got, cases[i].want);
    }
    assert_int_equal(net_jobenv_count(NULL, 9), 9); /* unset */
    assert_int_equal(net_jobenv_count("", 9), 9);   /* set empty: as unset */
}

static void test_hostports(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *addr; /* NULL: refused */
        int port;
    } cases[] = {
        {"127.0.0.1:80", "127.0.0.1", 80},
        {"10.1.2.3:65535", "10.1.2.3", 65535},
        {"0.0.0.0:1", "0.0.0.0", 1},
        {"127.0.0.1: 80", "127.0.0.1", 80}, /* blanks around the port */
        {"127.0.0.1:80 ", "127.0.0.1", 80},
        {"127.0.0.1:80\n", "127.0.0.1", 80},
        {"127.0.0.1:0x50", "127.0.0.1", 80}, /* 0x hex, as com_parse_i64 */
        {"127.0.0.1:+80", "127.0.0.1", 80},  /* and sign */
        {"127.0.0.1:080", "127.0.0.1", 80},
        {"127.0.0.1:0", NULL, 0},
        {"127.0.0.1:-0", NULL, 0},
        {"127.0.0.1:65536", NULL, 0},
        {"127.0.0.1:-80", NULL, 0},
        {"127.0.0.1:99999999999", NULL, 0},
        {"127.0.0.1:99999999999999999999999", NULL, 0},
        {"127.0.0.1:", NULL, 0}, /* no port */
        {"127.0.0.1: ", NULL, 0},
        {"127.0.0.1", NULL, 0}, /* no colon */
        {"", NULL, 0},
        {":80", NULL, 0},           /* no host */
        {"127.0.0.1:80x", NULL, 0}, /* trailing junk */
        {"127.0.0.1:80 x", NULL, 0},
        {"127.0.0.1:0x10000", NULL, 0},
        {"127.0.0.1:8e1", NULL, 0},
        {" 127.0.0.1:80", NULL, 0}, /* inet_pton takes no blank */
        {"127.0.0.1 :80", NULL, 0},
        {"127.0.0.1:80:80", NULL, 0}, /* the last ':' parts them */
        {"1.2.3:80", NULL, 0},        /* a dotted quad only */
        {"1.2.3.256:80", NULL, 0},
        {"0x7f.0.0.1:80", NULL, 0},
        {"localhost:80", NULL, 0}, /* no host names */
        {"host.example:80", NULL, 0},
        {"[::1]:80", NULL, 0}, /* no IPv6 */
        {"::1:80", NULL, 0},
        {"::ffff:127.0.0.1:80", NULL, 0},
        {"1234567890123456789012345678901234567890123456789012345678901234:80", NULL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sockaddr_in sa;
        memset(&sa, 0xab, sizeof(sa));
        gmux_status_t st = net_jobenv_hostport(cases[i].text, &sa);
        if (!cases[i].addr) {
            if (st != GMUX_ERR_INVALID)
                fail_msg("'%s' taken (%d)", cases[i].text, st);
            assert_int_equal(sa.sin_port, 0xabab); /* untouched */
            continue;
        }
        if (st != GMUX_OK)
            fail_msg("'%s' refused (%d)", cases[i].text, st);
        char addr[INET_ADDRSTRLEN];
        assert_non_null(inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof(addr)));
        assert_int_equal(sa.sin_family, AF_INET);
        assert_string_equal(addr, cases[i].addr);
        assert_int_equal(ntohs(sa.sin_port), cases[i].port);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_hostports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
