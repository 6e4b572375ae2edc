/* gmux_net_static, the static kind of the net library (gmux-net-rank,
 * net_rank), loads libfabric only for a fabric, like libgmux-net.so
 * (test_net_api's test_one_rank_loads_no_libfabric): a one-rank program
 * linking it never pays libfabric's start-up (about 210 ms of its
 * dependencies' constructors, docs/net.md "Transports"). Until 2026-12-01
 * the static library linked libfabric and gmux-net-rank and net_rank called
 * fi_strerror themselves, so both loaded it before main (NEEDED). Its own
 * binary: nothing else here may load libfabric. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gmux/net.h>

#include "net/fiload.h"

static void test_one_rank_static_loads_no_libfabric(void **state)
{
    (void)state;
    assert_false(net_fi_loaded()); /* not at start: no link to it */
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.start_proxy = 1;
    p.num_signals = 4;
    p.timeout_s = 5;
    gmux_comm_t *c = NULL;
    assert_int_equal(gmux_comm_init(&p, &c), GMUX_OK);
    assert_int_equal(gmux_comm_size(c), 1);
    assert_string_equal(gmux_comm_provider(c), "self");
    uint8_t win[64] = {0}, src[64];
    memset(src, 0x3c, sizeof(src));
    gmux_window_t w;
    assert_int_equal(gmux_window_register(c, win, sizeof(win), &w), GMUX_OK);
    gmux_op_opts_t o = {GMUX_SIGNAL_ADD, 1, 1, GMUX_NO_COUNTER};
    assert_int_equal(gmux_put(c, 0, 0, w, 0, src, sizeof(src), &o), GMUX_OK);
    assert_int_equal(gmux_signal_wait(c, 1, 1, NULL), GMUX_OK);
    assert_memory_equal(win, src, sizeof(src));
    assert_int_equal(gmux_quiet(c, 0), GMUX_OK);
    assert_int_equal(gmux_window_deregister(c, w), GMUX_OK);
    assert_int_equal(gmux_comm_finalize(c), GMUX_OK);
    assert_false(net_fi_loaded()); /* nor after a whole job */
}

/* Whether the ELF file at path names libfabric among its NEEDED libraries
 * (readelf -d); fails the test when readelf cannot read it. */
static bool needs_libfabric(const char *path)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "readelf -d '%s'", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    bool needed = false;
    int lines = 0;
    while (fgets(line, sizeof(line), p)) {
        lines++;
        if (strstr(line, "(NEEDED)") && strstr(line, "libfabric"))
            needed = true;
    }
    assert_int_equal(pclose(p), 0);
    assert_true(lines > 0);
    return needed;
}

/* The programs of the static kind: loading them loads no libfabric. */
static void test_static_programs_need_no_libfabric(void **state)
{
    (void)state;
    assert_false(needs_libfabric(NET_RANK_PATH));
    assert_false(needs_libfabric(GMUX_NET_RANK_PATH));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank_static_loads_no_libfabric),
        cmocka_unit_test(test_static_programs_need_no_libfabric),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
