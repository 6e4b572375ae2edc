/*
 * A library whose constructor calls into libgmux.so, for test_shim_init:
 * constructors run inside dlopen with the dynamic loader's lock held, as a
 * CUDA-using library's static initialisers do. It tells the test (a byte on
 * the pipe named by INIT_CTOR_FD) that it holds that lock, gives the test's
 * other thread time to start the shim's initialisation, then makes its own
 * first driver call.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

typedef CUresult (*mem_info_fn)(size_t *, size_t *);

__attribute__((constructor)) static void init_ctor(void)
{
    const char *fd_s = getenv("INIT_CTOR_FD");
    if (!fd_s)
        return;
    int fd = atoi(fd_s);
    if (write(fd, "c", 1) != 1)
        _exit(40);
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    mem_info_fn info = (mem_info_fn)dlsym(RTLD_DEFAULT, "cuMemGetInfo_v2");
    size_t free_b = 0, total_b = 0;
    if (!info)
        _exit(41);
    (void)info(&free_b, &total_b);
}
