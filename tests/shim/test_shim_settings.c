/*
 * libgmux.so checks the settings it reads at initialisation: a malformed
 * variable of the shim's own is reported, one that only another part of
 * gmux reads (gmuxd, the net library) is not the program's concern and is
 * not mentioned. Run with LD_PRELOAD=libgmux.so and the driver double; each
 * case initialises the shim in a child of its own.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#include "tproc.h"

typedef CUresult (*mem_info_fn)(size_t *, size_t *);

typedef struct child_case {
    const char *name, *value;
    char path[64]; /* the child's stderr */
} child_case_t;

static int first_call(int index, void *arg)
{
    (void)index;
    child_case_t *c = arg;
    if (!freopen(c->path, "w", stderr))
        return 10;
    setenv("GMUX_GATE", "0", 1);
    setenv(c->name, c->value, 1);
    mem_info_fn info = (mem_info_fn)dlsym(RTLD_DEFAULT, "cuMemGetInfo_v2");
    if (!info)
        return 11;
    size_t free_b = 0, total_b = 0;
    (void)info(&free_b, &total_b); /* the shim initialises */
    fflush(stderr);
    return 0;
}

/* What the shim writes to stderr at its start with name=value set. */
static void shim_stderr(const char *name, const char *value, char *buf, size_t len)
{
    child_case_t c = {name, value, "/tmp/gmux_shim_settings_XXXXXX"};
    int fd = mkstemp(c.path);
    assert_true(fd >= 0);
    int status = -1;
    assert_int_equal(tproc_fork_all(1, first_call, &c, 30.0, &status), 0);
    assert_int_equal(status, 0);
    ssize_t n = read(fd, buf, len - 1);
    assert_true(n >= 0);
    buf[n] = '\0';
    close(fd);
    unlink(c.path);
}

static void test_own_settings_only(void **state)
{
    (void)state;
    char out[2048];
    shim_stderr("GMUX_DAEMON_QUANTUM_MS", "soon", out, sizeof(out));
    assert_null(strstr(out, "GMUX_DAEMON_QUANTUM_MS"));
    shim_stderr("GMUX_NET_TIMEOUT", "abc", out, sizeof(out));
    assert_null(strstr(out, "GMUX_NET_TIMEOUT"));
    shim_stderr("GMUX_BUDGET", "lots", out, sizeof(out));
    assert_non_null(strstr(out, "GMUX_BUDGET='lots'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_settings_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
