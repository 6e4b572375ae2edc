/*
 * Launch gating without a daemon (local mode), in process: the shim
 * preloaded, the driver double as libcuda.so.1, GMUX_SOCKET naming a socket
 * nobody listens on. The watcher thread tries to reconnect now and then; a
 * reconnection can block for seconds on a daemon that is alive but does not
 * answer (stopped). A launch must never wait for one.
 *
 * This program defines connect(2) (exported: the shim's calls bind to it),
 * which holds every connection attempt made by a thread other than the main
 * one, as a daemon that does not answer would, until the main thread has
 * completed a launch during that attempt (or 10 s passed: then the launch
 * waited for the reconnection, and the test fails). The main thread launches
 * only while an attempt is held, and itself never connects after the first
 * launch's registration attempt.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include <cmocka.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "fake_cuda/fake_cuda.h"

#define ROUNDS 8

static pthread_t main_thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
/* under mu */
static int attempts;      /* connection attempts of other threads (the watcher) begun */
static int held;          /* one of them is being held */
static int launched;      /* the main thread completed a launch while it was held */
static int held_timeouts; /* attempts released without such a launch */
static int main_connects; /* attempts of the main thread */

static void deadline_after(struct timespec *ts, int s)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += s;
}

__attribute__((visibility("default"))) int connect(int fd, const struct sockaddr *addr,
                                                   socklen_t len)
{
    int (*real)(int, const struct sockaddr *, socklen_t) =
        (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    pthread_mutex_lock(&mu);
    if (pthread_equal(pthread_self(), main_thread)) {
        main_connects++;
    } else {
        attempts++;
        held = 1;
        launched = 0;
        pthread_cond_broadcast(&cv);
        struct timespec until;
        deadline_after(&until, 10);
        while (!launched && pthread_cond_timedwait(&cv, &mu, &until) != ETIMEDOUT) {
        }
        held_timeouts += !launched;
        held = 0;
    }
    pthread_mutex_unlock(&mu);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(fd, addr, len);
}

static void *get(PFN_cuGetProcAddress_v12000 gpa, const char *base)
{
    void *p = NULL;
    return gpa(base, &p, 12000, 0, NULL) == CUDA_SUCCESS ? p : NULL;
}

static void nop_kernel(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)args;
    (void)grid;
    (void)block;
}

static void test_launch_never_waits_for_reconnect(void **state)
{
    (void)state;
    main_thread = pthread_self();
    void *drv = dlopen("libcuda.so.1", RTLD_NOW);
    assert_non_null(drv);
    PFN_cuGetProcAddress_v12000 gpa =
        (PFN_cuGetProcAddress_v12000)dlsym(drv, "cuGetProcAddress_v2");
    fake_register_kernel_fn reg = (fake_register_kernel_fn)dlsym(drv, "fake_register_kernel");
    assert_non_null(gpa);
    assert_non_null(reg);
    PFN_cuLaunchKernel_v4000 launch = (PFN_cuLaunchKernel_v4000)get(gpa, "cuLaunchKernel");
    assert_non_null(launch);
    CUfunction f = reg("nop", 0, NULL, nop_kernel);
    assert_non_null(f);
    /* the first launch registers (no daemon: local mode) */
    assert_int_equal(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    for (int r = 0; r < ROUNDS; r++) {
        /* wait for an attempt held that no launch has released yet, and launch
         * while it is held. Not "an attempt after the last one seen": the
         * watcher may begin its next attempt between the last launch and this
         * wait (more likely on a loaded machine), and that one would then be
         * held for 10 s with nobody launching (it failed so once). */
        pthread_mutex_lock(&mu);
        struct timespec until;
        deadline_after(&until, 60);
        while ((!held || launched) && pthread_cond_timedwait(&cv, &mu, &until) != ETIMEDOUT) {
        }
        int ok = held && !launched;
        pthread_mutex_unlock(&mu);
        assert_true(ok); /* the watcher tries to reconnect */
        assert_int_equal(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
        pthread_mutex_lock(&mu);
        launched = 1;
        pthread_cond_broadcast(&cv);
        int timeouts = held_timeouts;
        pthread_mutex_unlock(&mu);
        print_message("round %d: %d attempts held in vain\n", r, timeouts);
        assert_int_equal(timeouts, 0); /* the launch did not wait for the reconnection */
    }
    pthread_mutex_lock(&mu);
    int mc = main_connects;
    pthread_mutex_unlock(&mu);
    assert_int_equal(mc, 1); /* only the first launch's registration attempt */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_never_waits_for_reconnect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
