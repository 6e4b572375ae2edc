/*
 * libgmux.so's initialisation against the dynamic loader's lock: one thread
 * makes the process's first driver call (the shim fills its table, which
 * loads libcuda.so.1) while another is inside dlopen of a library whose
 * constructor makes a driver call of its own. The shim must not wait for
 * its init lock while holding the loader's, or the loader's while holding
 * its own: either order against the other thread is a deadlock. Run with
 * LD_PRELOAD=libgmux.so and the driver double.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#include "tproc.h"

typedef CUresult (*mem_info_fn)(size_t *, size_t *);

static void *load_ctor_lib(void *arg)
{
    (void)arg;
    return dlopen(INIT_CTOR_LIB, RTLD_NOW | RTLD_LOCAL);
}

/* The child: 0 when both threads got through, else a code naming the step. */
static int race(int index, void *arg)
{
    (void)index;
    (void)arg;
    int p[2];
    if (pipe(p) != 0)
        return 10;
    char fd_s[16];
    snprintf(fd_s, sizeof(fd_s), "%d", p[1]);
    setenv("INIT_CTOR_FD", fd_s, 1);
    /* libgmux.so's export, found before anything initialises the shim */
    mem_info_fn info = (mem_info_fn)dlsym(RTLD_DEFAULT, "cuMemGetInfo_v2");
    if (!info)
        return 11;
    pthread_t loader;
    if (pthread_create(&loader, NULL, load_ctor_lib, NULL) != 0)
        return 12;
    char c;
    if (read(p[0], &c, 1) != 1) /* the constructor runs, under the loader's lock */
        return 13;
    size_t free_b = 0, total_b = 0;
    (void)info(&free_b, &total_b); /* the first call: the shim initialises */
    void *lib = NULL;
    if (pthread_join(loader, &lib) != 0)
        return 14;
    return lib ? 0 : 15;
}

static void test_init_beside_constructor(void **state)
{
    (void)state;
    int status = 0;
    /* a deadlock is a timeout */
    assert_int_equal(tproc_fork_all(1, race, NULL, 30.0, &status), 0);
    assert_int_equal(status, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_beside_constructor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
