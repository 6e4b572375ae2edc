/* Symmetric globals and statics: initialised data, bss, a static inside a
 * function and a global array are remotely accessible by their own
 * addresses; shmem_addr_accessible and shmem_ptr agree. The program asks for
 * SHMEM_THREAD_FUNNELED (all it needs): shmem_query_thread reports the level
 * shmem_init_thread provided. */
#include "shtest.h"

long g_data = 17;       /* .data */
long g_bss[256];        /* .bss */
static int s_file = -3; /* file-scope static */
double g_arr[4] = {1, 2, 3, 4};

static long *fn_static(void)
{
    static long inside;
    return &inside;
}

int main(void)
{
    int provided = -1, queried = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_FUNNELED, &provided) == 0);
    CHECK(provided >= SHMEM_THREAD_SINGLE && provided <= SHMEM_THREAD_MULTIPLE);
    shmem_query_thread(&queried);
    CHECK(queried == provided);
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    long on_stack = 0;
    CHECK(shmem_addr_accessible(&g_data, next));
    CHECK(shmem_addr_accessible(g_bss, next));
    CHECK(shmem_addr_accessible(fn_static(), next));
    CHECK(!shmem_addr_accessible(&on_stack, next));
    CHECK(shmem_ptr(&g_data, me) == &g_data);
    CHECK(shmem_ptr(&on_stack, me) == NULL);
    CHECK(shmem_pe_accessible(next) && !shmem_pe_accessible(n));

    CHECK(shmem_long_g(&g_data, next) == 17);
    shmem_barrier_all();
    shmem_long_p(&g_data, 100 + me, next);
    long v[256];
    for (int i = 0; i < 256; i++)
        v[i] = me * 1000 + i;
    shmem_long_put(g_bss, v, 256, next);
    shmem_int_p(&s_file, me, next);
    shmem_long_atomic_add(fn_static(), me + 1, 0);
    shmem_double_put(&g_arr[1], &g_arr[0], 1, next); /* g_arr[1] = 1 on next */
    shmem_barrier_all();
    CHECK(g_data == 100 + prev);
    for (int i = 0; i < 256; i++)
        CHECK(g_bss[i] == prev * 1000 + i);
    CHECK(s_file == prev);
    CHECK(g_arr[1] == 1.0 && g_arr[2] == 3.0);
    if (me == 0)
        CHECK(*fn_static() == (long)n * (n + 1) / 2);
    long got[256];
    shmem_long_get(got, g_bss, 256, next);
    CHECK(got[255] == me * 1000 + 255);

    shmem_barrier_all();
    shmem_finalize();
    if (me == 0)
        printf("globals: ok on %d PEs\n", n);
    return 0;
}
