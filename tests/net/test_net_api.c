/* Tests of the public API in a one-rank job (no launcher): the same rings
 * and proxy, executing operations addressed to the rank itself. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <gmux/net.h>

#include "common/clock.h"

static gmux_comm_t *open_comm(int proxy)
{
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.start_proxy = proxy;
    p.ring_slots = 8; /* small, so back-pressure is exercised */
    p.num_signals = 16;
    p.num_counters = 4;
    p.timeout_s = 5;
    gmux_comm_t *c = NULL;
    assert_int_equal(gmux_comm_init(&p, &c), GMUX_OK);
    assert_int_equal(gmux_comm_rank(c), 0);
    assert_int_equal(gmux_comm_size(c), 1);
    assert_string_equal(gmux_comm_provider(c), "self");
    return c;
}

static void run_ops(int proxy)
{
    gmux_comm_t *c = open_comm(proxy);
    enum { SZ = 4096 };
    uint8_t *win = calloc(1, SZ), src[SZ];
    gmux_window_t w;
    assert_int_equal(gmux_window_register(c, win, SZ, &w), GMUX_OK);
    for (int i = 0; i < SZ; i++)
        src[i] = (uint8_t)(i * 7);
    /* more puts than ring slots: producers wait under back-pressure */
    for (int i = 0; i < 64; i++) {
        gmux_op_opts_t o = {GMUX_SIGNAL_ADD, 2, 3, 1};
        assert_int_equal(
            gmux_put(c, (uint32_t)(i % 4), 0, w, (uint64_t)i * 64, src + i * 64, 64, &o), GMUX_OK);
    }
    uint64_t seen = 0;
    assert_int_equal(gmux_signal_wait(c, 2, 192, &seen), GMUX_OK);
    assert_true(seen == 192);
    assert_int_equal(memcmp(win, src, SZ), 0);
    assert_int_equal(gmux_counter_wait(c, 1, 64, NULL), GMUX_OK);
    for (uint32_t ctx = 0; ctx < 4; ctx++) {
        assert_int_equal(gmux_flush(c, ctx), GMUX_OK);
        assert_int_equal(gmux_quiet(c, ctx), GMUX_OK);
    }
    assert_true(gmux_counter_read(c, 1) == 64);
    gmux_counter_reset(c, 1);
    assert_true(gmux_counter_read(c, 1) == 0);
    /* put_value, SET and INC */
    assert_int_equal(gmux_put_value(c, 0, 0, w, 8, 0x1122334455667788ull, 3, NULL), GMUX_OK);
    assert_int_equal(gmux_signal(c, 0, 0, 5, GMUX_SIGNAL_SET, 40), GMUX_OK);
    assert_int_equal(gmux_signal(c, 0, 0, 5, GMUX_SIGNAL_INC, 0), GMUX_OK);
    assert_int_equal(gmux_signal_wait(c, 5, 41, &seen), GMUX_OK);
    assert_true(seen == 41);
    assert_int_equal(win[8], 0x88);
    assert_int_equal(win[9], 0x77);
    assert_int_equal(win[10], 0x66);
    assert_int_equal(win[11], src[11]); /* only 3 bytes written */
    gmux_signal_reset(c, 5);
    assert_true(gmux_signal_read(c, 5) == 0);
    /* a wait that nobody satisfies times out, roughly on time */
    uint64_t t0 = com_clock_ns();
    assert_int_equal(gmux_signal_wait_timeout(c, 6, 1, 0.05, &seen), GMUX_ERR_TIMEOUT);
    assert_true(com_clock_ns() - t0 >= 40 * COM_NS_PER_MS);
    assert_int_equal(gmux_counter_wait_timeout(c, 0, 1, 0.01, NULL), GMUX_ERR_TIMEOUT);
    /* argument checks */
    assert_int_equal(gmux_put(c, 4, 0, w, 0, src, 1, NULL), GMUX_ERR_INVALID);
    assert_int_equal(gmux_put(c, 0, 1, w, 0, src, 1, NULL), GMUX_ERR_INVALID);
    assert_int_equal(gmux_put(c, 0, 0, w, SZ - 1, src, 2, NULL), GMUX_ERR_RANGE);
    assert_int_equal(gmux_put(c, 0, 0, w + 1, 0, src, 1, NULL), GMUX_ERR_INVALID);
    assert_int_equal(gmux_put_value(c, 0, 0, w, 0, 1, 0, NULL), GMUX_ERR_INVALID);
    assert_int_equal(gmux_signal(c, 0, 0, 16, GMUX_SIGNAL_ADD, 1), GMUX_ERR_INVALID);
    assert_int_equal(gmux_signal(c, 0, 0, 1, GMUX_SIGNAL_NONE, 1), GMUX_ERR_INVALID);
    gmux_op_opts_t bad = {GMUX_SIGNAL_NONE, 0, 0, 4};
    assert_int_equal(gmux_put(c, 0, 0, w, 0, src, 1, &bad), GMUX_ERR_INVALID);
    assert_int_equal(gmux_signal_wait_timeout(c, 99, 1, 0.01, NULL), GMUX_ERR_INVALID);
    assert_int_equal(gmux_window_deregister(c, w), GMUX_OK);
    assert_int_equal(gmux_window_deregister(c, w), GMUX_ERR_INVALID);
    assert_int_equal(gmux_comm_finalize(c), GMUX_OK);
    free(win);
}

static void test_ops_with_proxy(void **state)
{
    (void)state;
    run_ops(1);
}

static void test_ops_without_proxy(void **state)
{
    (void)state;
    run_ops(0);
}

/* libgmux-net.so loads libfabric only for a fabric: a one-rank job, which
 * has none, never pays its start-up (about 210 ms of its dependencies'
 * constructors, docs/net.md "Transports"). Runs first, so that nothing
 * else in this process can have loaded it. */
static void test_one_rank_loads_no_libfabric(void **state)
{
    (void)state;
    run_ops(1);
    void *lib = dlopen("libfabric.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib)
        dlclose(lib);
    assert_null(lib);
}

static void test_teams(void **state)
{
    (void)state;
    gmux_comm_t *c = open_comm(1);
    gmux_team_t *world = gmux_team_world(c);
    assert_int_equal(gmux_team_size(world), 1);
    assert_int_equal(gmux_team_rank(world), 0);
    assert_int_equal(gmux_team_world_rank(world, 0), 0);
    assert_int_equal(gmux_team_world_rank(world, 1), -1);
    assert_int_equal(gmux_barrier(world), GMUX_OK);
    gmux_team_t *t = NULL;
    assert_int_equal(gmux_team_split_strided(world, 0, 1, 2, &t), GMUX_ERR_INVALID);
    assert_int_equal(gmux_team_split_strided(world, 0, 1, 1, NULL), GMUX_ERR_INVALID);
    assert_int_equal(gmux_team_split_strided(NULL, 0, 1, 1, &t), GMUX_ERR_INVALID);
    assert_null(t);
    assert_int_equal(gmux_team_split_strided(world, 0, 1, 1, &t), GMUX_OK);
    assert_non_null(t);
    assert_int_equal(gmux_barrier(t), GMUX_OK);
    gmux_team_destroy(t);
    assert_int_equal(gmux_comm_finalize(c), GMUX_OK);
}

/* Sets signal 3 after 100 ms, from another thread. */
static void *late_signal(void *arg)
{
    com_clock_sleep_ns(100 * COM_NS_PER_MS);
    gmux_signal(arg, 0, 0, 3, GMUX_SIGNAL_SET, 1);
    return NULL;
}

static gmux_status_t wait_late_signal(gmux_comm_t *c, double timeout_s)
{
    gmux_signal_reset(c, 3);
    pthread_t th;
    pthread_create(&th, NULL, late_signal, c);
    uint64_t seen = 0;
    gmux_status_t st = timeout_s == 0 ? gmux_signal_wait(c, 3, 1, &seen)
                                      : gmux_signal_wait_timeout(c, 3, 1, timeout_s, &seen);
    pthread_join(th, NULL);
    assert_true(st != GMUX_OK || seen == 1);
    return st;
}

/* Timeouts too long for 64 bits of nanoseconds (about 584 years) mean
 * "never", not "now": they used to be converted to an integer out of range,
 * which gave 0 here, so the wait timed out at once. */
static void test_huge_timeouts(void **state)
{
    (void)state;
    gmux_comm_t *c = open_comm(1);
    assert_int_equal(wait_late_signal(c, 1e12), GMUX_OK);
    assert_int_equal(wait_late_signal(c, INFINITY), GMUX_OK);
    assert_int_equal(wait_late_signal(c, -1), GMUX_OK); /* negative: no timeout */
    assert_int_equal(gmux_comm_finalize(c), GMUX_OK);
    /* the communicator's own timeout, used by the waits without one */
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.timeout_s = 1e12;
    assert_int_equal(gmux_comm_init(&p, &c), GMUX_OK);
    assert_int_equal(wait_late_signal(c, 0), GMUX_OK);
    assert_int_equal(gmux_comm_finalize(c), GMUX_OK);
    p.timeout_s = INFINITY;
    assert_int_equal(gmux_comm_init(&p, &c), GMUX_OK);
    assert_int_equal(wait_late_signal(c, 0), GMUX_OK);
    assert_int_equal(gmux_comm_finalize(c), GMUX_OK);
}

static void test_params_and_environment(void **state)
{
    (void)state;
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    gmux_comm_t *c = NULL;
    p.struct_size = sizeof(p) + 8; /* from a newer, bigger header */
    assert_int_equal(gmux_comm_init(&p, &c), GMUX_ERR_VERSION);
    gmux_comm_params_init(&p);
    p.ring_slots = 6;
    assert_int_equal(gmux_comm_init(&p, &c), GMUX_ERR_INVALID);
    gmux_comm_params_init(&p);
    p.num_signals = (1u << 24) + 1; /* would overflow the signal words' count */
    assert_int_equal(gmux_comm_init(&p, &c), GMUX_ERR_INVALID);
    gmux_comm_params_init(&p);
    p.num_signals = UINT32_MAX;
    assert_int_equal(gmux_comm_init(&p, &c), GMUX_ERR_INVALID);
    gmux_comm_params_init(&p);
    p.provider = "carrier-pigeon";
    assert_int_equal(gmux_comm_init(&p, &c), GMUX_ERR_INVALID);
    /* nowhere to return the communicator: refused before joining, not a
     * crash after it (the pointer was written unchecked on success) */
    gmux_comm_params_init(&p);
    assert_int_equal(gmux_comm_init(&p, NULL), GMUX_ERR_INVALID);
    /* a job of two ranks without a rendezvous address */
    setenv("GMUX_RANK", "0", 1);
    setenv("GMUX_SIZE", "2", 1);
    unsetenv("GMUX_BOOTSTRAP");
    assert_int_equal(gmux_comm_init(NULL, &c), GMUX_ERR_INVALID);
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    assert_null(c);
}

/* Sends stderr to a temporary file until stderr_end, which puts it back
 * and reads what was written there into buf. */
static FILE *stderr_begin(int *saved)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    *saved = dup(2);
    assert_true(*saved >= 0 && dup2(fileno(tmp), 2) == 2);
    return tmp;
}

static void stderr_end(FILE *tmp, int saved, char *buf, size_t len)
{
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, len - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
}

/* What gmux_comm_init writes to stderr with `name` set to `value`. */
static void init_stderr(const char *name, const char *value, char *buf, size_t len)
{
    setenv(name, value, 1);
    int saved;
    FILE *tmp = stderr_begin(&saved);
    gmux_comm_t *c = open_comm(0);
    assert_int_equal(gmux_comm_finalize(c), GMUX_OK);
    stderr_end(tmp, saved, buf, len);
    unsetenv(name);
}

/* What a gmux_comm_init of params that fails with GMUX_ERR_INVALID writes
 * to stderr, into buf. */
static void init_fails_saying(const gmux_comm_params_t *p, char *buf, size_t len)
{
    int saved;
    FILE *tmp = stderr_begin(&saved);
    gmux_comm_t *c = NULL;
    gmux_status_t st = gmux_comm_init(p, &c);
    stderr_end(tmp, saved, buf, len);
    assert_int_equal(st, GMUX_ERR_INVALID);
    assert_null(c);
}

/* A job or parameters gmux_comm_init cannot join with are said, naming
 * what is wrong: its status is only "invalid argument", and until
 * 2026-12-03 a rank started with GMUX_RANK past GMUX_SIZE, without
 * GMUX_BOOTSTRAP, with an unknown provider or ring size said nothing more
 * (a malformed GMUX_BOOTSTRAP was already said, in src/net/sock.c). */
static void test_init_says_what_is_invalid(void **state)
{
    (void)state;
    static const struct {
        const char *rank, *size, *boot, *says;
    } envs[] = {
        {"2", "2", "127.0.0.1:1", "GMUX_RANK='2' is not a rank of the 2 of GMUX_SIZE (0 to 1)"},
        {"0", "many", "127.0.0.1:1", "GMUX_SIZE='many' is not 1 to 4096 ranks"},
        {"1", "2", NULL, "a job of 2 ranks without GMUX_BOOTSTRAP"},
        {"0", "2", "nowhere", "rendezvous address 'nowhere' (GMUX_BOOTSTRAP) is not IPV4:PORT"},
    };
    char out[2048];
    for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
        setenv("GMUX_RANK", envs[i].rank, 1);
        setenv("GMUX_SIZE", envs[i].size, 1);
        if (envs[i].boot)
            setenv("GMUX_BOOTSTRAP", envs[i].boot, 1);
        else
            unsetenv("GMUX_BOOTSTRAP");
        init_fails_saying(NULL, out, sizeof(out));
        if (!strstr(out, envs[i].says))
            fail_msg("GMUX_RANK=%s GMUX_SIZE=%s: '%s' not said: %s", envs[i].rank, envs[i].size,
                     envs[i].says, out);
    }
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.provider = "carrier-pigeon";
    init_fails_saying(&p, out, sizeof(out));
    assert_non_null(strstr(out, "unknown provider 'carrier-pigeon'"));
    gmux_comm_params_init(&p);
    p.ring_slots = 6;
    init_fails_saying(&p, out, sizeof(out));
    assert_non_null(strstr(out, "ring_slots 6 is not a power of two"));
    gmux_comm_params_init(&p);
    p.num_contexts = 0;
    init_fails_saying(&p, out, sizeof(out));
    assert_non_null(strstr(out, "num_contexts 0 (1 to 16)"));
}

/* GMUX_NNODES (set by gmux launch: how many hosts the ranks run on) that is
 * not a count of hosts is said and refused. Until 2026-12-03 it was read as
 * one host ("two", "2x", "0", "-1" alike): a rank of a multi-host job then
 * chose shm and the loopback address without a word. */
static void test_init_says_bad_nnodes(void **state)
{
    (void)state;
    static const char *const bad[] = {"two", "2x", "0", "-1", "99999999999"};
    char out[2048], says[128];
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("GMUX_NNODES", bad[i], 1);
        init_fails_saying(NULL, out, sizeof(out));
        snprintf(says, sizeof(says), "GMUX_NNODES='%s' is not 1 to 1048576 hosts", bad[i]);
        if (!strstr(out, says))
            fail_msg("'%s' not said: %s", says, out);
    }
    setenv("GMUX_NNODES", "1", 1); /* one host, as gmux launch says it */
    gmux_comm_t *c = open_comm(0);
    assert_int_equal(gmux_comm_finalize(c), GMUX_OK);
    unsetenv("GMUX_NNODES");
}

/* The library checks the settings it reads, not the daemon's or the shim's:
 * a malformed variable of another part is no concern of a rank's. */
static void test_settings_of_net_only(void **state)
{
    (void)state;
    char out[2048];
    init_stderr("GMUX_DAEMON_QUANTUM_MS", "soon", out, sizeof(out));
    assert_null(strstr(out, "GMUX_DAEMON_QUANTUM_MS"));
    init_stderr("GMUX_SHMEM_HEAP", "lots", out, sizeof(out));
    assert_null(strstr(out, "GMUX_SHMEM_HEAP"));
    init_stderr("GMUX_NET_TIMEOUT", "abc", out, sizeof(out));
    assert_non_null(strstr(out, "GMUX_NET_TIMEOUT='abc': expected a finite number"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank_loads_no_libfabric),
        cmocka_unit_test(test_ops_with_proxy),
        cmocka_unit_test(test_ops_without_proxy),
        cmocka_unit_test(test_teams),
        cmocka_unit_test(test_params_and_environment),
        cmocka_unit_test(test_huge_timeouts),
        cmocka_unit_test(test_settings_of_net_only),
        cmocka_unit_test(test_init_says_what_is_invalid),
        cmocka_unit_test(test_init_says_bad_nnodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
