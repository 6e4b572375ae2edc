/* The names OpenSHMEM 1.2 to 1.4 deprecated, which 1.5 still requires
 * ("must be supported"): start_pes, _my_pe/_num_pes, shmalloc/shfree/
 * shrealloc/shmemalign, the old AMO names (typed and generic), shmem_wait
 * and shmem_TYPENAME_wait, the cache calls (no-ops) and the _SHMEM_*
 * constants. Each must act as the name that replaced it. */
#include <string.h>

#include "shtest.h"

static long lsig, lval, lctr;
static int ival;
static double dval;
static long pSync[_SHMEM_BARRIER_SYNC_SIZE];

int main(void)
{
    for (int i = 0; i < _SHMEM_BARRIER_SYNC_SIZE; i++)
        pSync[i] = _SHMEM_SYNC_VALUE;
    start_pes(0);
    int me = _my_pe(), n = _num_pes();
    CHECK(me == shmem_my_pe() && n == shmem_n_pes());
    CHECK(_SHMEM_MAJOR_VERSION == 1 && _SHMEM_MINOR_VERSION == 5);
    CHECK(_SHMEM_CMP_EQ == SHMEM_CMP_EQ && _SHMEM_CMP_GE == SHMEM_CMP_GE);
    CHECK(_SHMEM_BCAST_SYNC_SIZE == SHMEM_BCAST_SYNC_SIZE);
    CHECK(_SHMEM_COLLECT_SYNC_SIZE == SHMEM_COLLECT_SYNC_SIZE);
    CHECK(_SHMEM_REDUCE_SYNC_SIZE == SHMEM_REDUCE_SYNC_SIZE);
    CHECK(_SHMEM_REDUCE_MIN_WRKDATA_SIZE == SHMEM_REDUCE_MIN_WRKDATA_SIZE);
    CHECK(_SHMEM_MAX_NAME_LEN == SHMEM_MAX_NAME_LEN);
    CHECK(strcmp(_SHMEM_VENDOR_STRING, SHMEM_VENDOR_STRING) == 0);

    /* memory: the same offsets as the current names give */
    long *a = shmalloc(4 * sizeof(long));
    CHECK(a != NULL);
    long *b = shmemalign(4096, sizeof(long));
    CHECK(b != NULL && (uintptr_t)b % 4096 == 0);
    a = shrealloc(a, 64 * sizeof(long));
    CHECK(a != NULL);
    a[63] = me;
    shmem_barrier_all();
    CHECK(shmem_long_g(&a[63], (me + 1) % n) == (me + 1) % n);
    shmem_barrier_all();
    shfree(b);
    shfree(a);

    /* the deprecated AMO names on the next PE's words */
    int next = (me + 1) % n;
    shmem_barrier_all();
    shmem_long_add(&lctr, 5, next);
    shmem_long_inc(&lctr, next);
    shmem_barrier_all();
    CHECK(lctr == 6);
    shmem_barrier_all();
    CHECK(shmem_long_fadd(&lctr, 10, next) == 6);
    CHECK(shmem_long_finc(&lctr, next) == 16);
    CHECK(shmem_long_cswap(&lctr, 17, 40, next) == 17);
    CHECK(shmem_long_cswap(&lctr, 17, 99, next) == 40); /* no swap */
    CHECK(shmem_long_swap(&lctr, 7, next) == 40);
    CHECK(shmem_long_fetch(&lctr, next) == 7);
    shmem_int_set(&ival, 3, next);
    shmem_double_set(&dval, 2.5, next);
    CHECK(shmem_double_swap(&dval, 4.5, next) == 2.5);
    CHECK(shmem_double_fetch(&dval, next) == 4.5);
    CHECK(shmem_int_fetch(&ival, next) == 3);
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
    /* the deprecated generic names pick the type from the pointer */
    CHECK(shmem_fadd(&ival, 2, next) == 3);
    CHECK(shmem_finc(&ival, next) == 5);
    shmem_add(&ival, 1, next);
    shmem_inc(&ival, next);
    CHECK(shmem_cswap(&ival, 8, 9, next) == 8);
    CHECK(shmem_swap(&ival, 1, next) == 9);
    shmem_set(&dval, 1.0, next);
    CHECK(shmem_fetch(&dval, next) == 1.0);
    CHECK(shmem_fetch(&ival, next) == 1);
#endif

    /* shmem_wait / shmem_TYPENAME_wait: until the value differs */
    shmem_barrier_all();
    shmem_long_p(&lsig, 1, next);
    shmem_wait(&lsig, 0);
    CHECK(lsig == 1);
    shmem_long_p(&lval, 2, next);
    shmem_long_wait(&lval, 0);
    CHECK(lval == 2);
    shmem_barrier_all();

    /* the cache calls do nothing (and must exist) */
    shmem_clear_cache_inv();
    shmem_set_cache_inv();
    shmem_clear_cache_line_inv(&lval);
    shmem_set_cache_line_inv(&lval);
    shmem_udcflush();
    shmem_udcflush_line(&lval);
    shmem_barrier(0, 0, n, pSync);
    shmem_finalize();
    if (me == 0)
        printf("deprecated: ok on %d PEs\n", n);
    return 0;
}
