/*
 * LD_PRELOAD shim for test_launch: in the process that loads it, the N-th
 * call of fork() fails with EAGAIN (GMUX_TEST_FORK_FAIL=N), as when a user's
 * process limit is reached, and says so on stderr so that a test can tell
 * the shim was in effect. A sanitizer runtime (gcc's libasan/libtsan, or
 * clang's linked into the program) intercepts fork() first, but its
 * interceptor calls the next definition after the program's own, found with
 * dlsym(RTLD_NEXT): this preloaded one, ahead of libc's. So the injection
 * works in the sanitizer builds too (ASAN_OPTIONS=verify_asan_link_order=0
 * lets a preload come before libasan). Both variables are removed on
 * load: the children, and what they run, get neither.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int fail_at, calls;

__attribute__((constructor)) static void fork_fail_init(void)
{
    const char *v = getenv("GMUX_TEST_FORK_FAIL");
    fail_at = v ? atoi(v) : 0;
    unsetenv("GMUX_TEST_FORK_FAIL");
    unsetenv("LD_PRELOAD");
}

/* default visibility: the project builds with -fvisibility=hidden */
__attribute__((visibility("default"))) pid_t fork(void)
{
    static pid_t (*real_fork)(void);
    if (++calls == fail_at) {
        fprintf(stderr, "fork_fail: fork call %d fails\n", calls);
        errno = EAGAIN;
        return -1;
    }
    if (!real_fork)
        *(void **)&real_fork = dlsym(RTLD_NEXT, "fork");
    if (!real_fork) {
        errno = ENOSYS;
        return -1;
    }
    return real_fork();
}
