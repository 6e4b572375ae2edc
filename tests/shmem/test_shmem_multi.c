/*
 * Multi-process tests of libgmux-shmem over loopback: every OpenSHMEM test
 * program runs under oshrun (gmux launch) with 2 and 4 PEs on the provider
 * this binary was built for (SHMEM_PROVIDER), and every misuse of
 * shmem_errors must end the job with a non-zero status and a message that
 * names the call, never a crash (signal) or a hang.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tproc.h"

static char out[1 << 16], err[1 << 16];

/* Runs `oshrun -n N --timeout 100 PROG [ARG]`; returns the status. */
static int run(int n, const char *prog, const char *arg)
{
    char nbuf[16];
    snprintf(nbuf, sizeof(nbuf), "%d", n);
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", SHMEM_TEST_DIR, prog);
    char *argv[] = {OSHRUN_PATH, "-n", nbuf, "--timeout", "100", path, (char *)arg, NULL};
    char *env[] = {"GMUX_NET_PROVIDER=" SHMEM_PROVIDER, NULL};
    int st = tproc_capture(argv, env, 150.0, out, sizeof(out), err, sizeof(err));
    return st;
}

static void run_ok(const char *prog, const char *banner)
{
    for (int n = 2; n <= 4; n += 2) {
        int st = run(n, prog, NULL);
        if (st != 0)
            fprintf(stderr, "%s (n=%d) status %d\nstdout:\n%s\nstderr:\n%s\n", prog, n, st, out,
                    err);
        assert_int_equal(st, 0);
        char want[64];
        snprintf(want, sizeof(want), "%s: ok on %d PEs", banner, n);
        assert_non_null(strstr(out, want));
    }
}

static void test_rma(void **state)
{
    (void)state;
    run_ok("shmem_rma", "rma");
}

static void test_signal(void **state)
{
    (void)state;
    run_ok("shmem_signal", "signal");
}

static void test_sync(void **state)
{
    (void)state;
    run_ok("shmem_sync", "sync");
}

static void test_atomic(void **state)
{
    (void)state;
    run_ok("shmem_atomic", "atomic");
}

static void test_coll(void **state)
{
    (void)state;
    run_ok("shmem_coll", "coll");
}

static void test_ctx(void **state)
{
    (void)state;
    run_ok("shmem_ctx", "ctx");
}

static void test_team(void **state)
{
    (void)state;
    run_ok("shmem_team", "team");
}

static void test_globals(void **state)
{
    (void)state;
    run_ok("shmem_globals", "globals");
}

static void test_spec(void **state)
{
    (void)state;
    run_ok("shmem_spec", "spec");
}

/* shmem_global_exit(S) on PE 0 while the others wait: the job ends with S. */
static void test_global_exit(void **state)
{
    (void)state;
    static const struct {
        int n;
        const char *arg;
        int want;
    } cases[] = {{2, "global_exit=0", 0}, {4, "global_exit=0", 0}, {4, "global_exit=3", 3}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int st = run(cases[i].n, "shmem_spec", cases[i].arg);
        if (st != cases[i].want)
            fprintf(stderr, "%s (n=%d): status %d\nstderr:\n%s\n", cases[i].arg, cases[i].n, st,
                    err);
        assert_int_equal(st, cases[i].want);
    }
}

static void test_aset(void **state)
{
    (void)state;
    run_ok("shmem_aset", "aset");
}

static void test_deprecated(void **state)
{
    (void)state;
    run_ok("shmem_deprecated", "deprecated");
}

static void test_threads(void **state)
{
    (void)state;
    run_ok("shmem_threads", "threads");
}

static void test_aset_threads(void **state)
{
    (void)state;
    run_ok("shmem_aset_threads", "aset_threads");
}

static void test_complex(void **state)
{
    (void)state;
    run_ok("shmem_complex", "complex");
}

/* A misuse: non-zero exit, not by a signal, the call named on stderr. */
static void misuse(const char *what, const char *call, const char *reason)
{
    int st = run(2, "shmem_errors", what);
    if (st <= 0 || st >= 128 || !strstr(err, call) || !strstr(err, reason))
        fprintf(stderr, "misuse %s: status %d\nstdout:\n%s\nstderr:\n%s\n", what, st, out, err);
    assert_true(st > 0 && st < 128);
    assert_non_null(strstr(err, call));
    assert_non_null(strstr(err, reason));
    assert_null(strstr(out, "returned from a misuse"));
}

static void test_errors(void **state)
{
    (void)state;
    misuse("pe", "shmem_long_p", "invalid PE 2");
    misuse("negpe", "shmem_long_get", "invalid PE -1");
    misuse("addr", "shmem_long_put", "is not symmetric");
    misuse("amo_addr", "shmem_long_atomic_add", "is not symmetric");
    misuse("get_addr", "shmem_long_get", "is not symmetric");
    misuse("free", "shmem_free", "not returned by shmem_malloc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rma),        cmocka_unit_test(test_signal),
        cmocka_unit_test(test_sync),       cmocka_unit_test(test_atomic),
        cmocka_unit_test(test_coll),       cmocka_unit_test(test_ctx),
        cmocka_unit_test(test_team),       cmocka_unit_test(test_globals),
        cmocka_unit_test(test_spec),       cmocka_unit_test(test_aset),
        cmocka_unit_test(test_deprecated), cmocka_unit_test(test_threads),
        cmocka_unit_test(test_complex),    cmocka_unit_test(test_global_exit),
        cmocka_unit_test(test_errors),     cmocka_unit_test(test_aset_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
