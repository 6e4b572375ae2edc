/* Error paths: argv[1] names one misuse; the program must not return from
 * it: the library prints a message naming the call and exits non-zero. */
#include <string.h>

#include "shtest.h"

static long target;

int main(int argc, char **argv)
{
    shmem_init();
    int n = shmem_n_pes();
    long local = 0, v = 1;
    const char *what = argc > 1 ? argv[1] : "";
    shmem_barrier_all();
    if (strcmp(what, "pe") == 0)
        shmem_long_p(&target, 1, n); /* one past the last PE */
    else if (strcmp(what, "negpe") == 0)
        shmem_long_get(&v, &target, 1, -1);
    else if (strcmp(what, "addr") == 0)
        shmem_long_put(&local, &v, 1, 0); /* a stack address is not symmetric */
    else if (strcmp(what, "amo_addr") == 0)
        shmem_long_atomic_add(&local, 1, 0);
    else if (strcmp(what, "get_addr") == 0)
        shmem_long_get(&v, (long *)malloc(8), 1, 0);
    else if (strcmp(what, "free") == 0)
        shmem_free(&local);
    else
        return 3;
    printf("returned from a misuse of %s\n", what);
    shmem_finalize();
    return 0;
}
