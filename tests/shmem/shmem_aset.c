/* The active-set collectives OpenSHMEM 1.5 deprecates but still requires
 * (what older programs use): shmem_barrier and shmem_sync back to back on
 * one pSync, broadcast64 on the even PEs (the root's dest untouched),
 * collect32 with unequal counts, fcollect64, alltoall64, alltoalls32, and
 * to_all reductions (in place too); pSync is SHMEM_SYNC_VALUE afterwards. */
#include "shtest.h"

static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pSync2[SHMEM_BCAST_SYNC_SIZE];
static long lwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double dwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int iwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long lsrc[8], ldst[64];
static int isrc[8], idst[64];
static double dval[2];

static void check_psync(void)
{
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        CHECK(pSync[i] == SHMEM_SYNC_VALUE);
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
        CHECK(pSync2[i] == SHMEM_SYNC_VALUE);
}

int main(void)
{
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        pSync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
        pSync2[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int r = 0; r < 5; r++) {
        shmem_barrier(0, 0, n, pSync);
        shmem_sync(0, 0, n, pSync);
    }
    check_psync();
    shmem_barrier_all(); /* everybody checked before pSync is used again */

    /* the even PEs: PE_start 0, logPE_stride 1 */
    int evens = (n + 1) / 2;
    for (int i = 0; i < 4; i++)
        lsrc[i] = 100 * me + i, ldst[i] = -1;
    if (me % 2 == 0) {
        shmem_broadcast64(ldst, lsrc, 4, 1 % evens, 0, 1, evens, pSync2);
        int root = 2 * (1 % evens);
        for (int i = 0; i < 4; i++)
            CHECK(ldst[i] == (me == root ? -1 : 100 * root + i));
        shmem_barrier(0, 1, evens, pSync);
    }
    shmem_barrier_all();

    /* collect32: PE p gives p + 1 ints */
    for (int i = 0; i < 8; i++)
        isrc[i] = 1000 * me + i;
    shmem_collect32(idst, isrc, (size_t)me + 1, 0, 0, n, pSync);
    for (int p = 0, k = 0; p < n; p++)
        for (int i = 0; i <= p; i++, k++)
            CHECK(idst[k] == 1000 * p + i);

    shmem_fcollect64(ldst, lsrc, 2, 0, 0, n, pSync2);
    for (int p = 0; p < n; p++)
        CHECK(ldst[2 * p] == 100 * p && ldst[2 * p + 1] == 100 * p + 1);

    for (int p = 0; p < n; p++)
        lsrc[p] = 10 * me + p; /* element p goes to PE p */
    shmem_alltoall64(ldst, lsrc, 1, 0, 0, n, pSync);
    for (int p = 0; p < n; p++)
        CHECK(ldst[p] == 10 * p + me);

    for (int p = 0; p < n; p++)
        isrc[p] = 10 * me + p;
    for (int i = 0; i < 2 * n; i++)
        idst[i] = -1;
    shmem_alltoalls32(idst, isrc, 2, 1, 1, 0, 0, n, pSync2);
    for (int p = 0; p < n; p++)
        CHECK(idst[2 * p] == 10 * p + me && idst[2 * p + 1] == -1);

    /* reductions; the sum in place */
    lsrc[0] = me + 1;
    lsrc[1] = 1L << me;
    shmem_long_sum_to_all(lsrc, lsrc, 1, 0, 0, n, lwrk, pSync);
    CHECK(lsrc[0] == (long)n * (n + 1) / 2);
    shmem_long_or_to_all(ldst, &lsrc[1], 1, 0, 0, n, lwrk, pSync2);
    CHECK(ldst[0] == (1L << n) - 1);
    isrc[0] = me * 7 % 5;
    shmem_int_max_to_all(idst, isrc, 1, 0, 0, n, iwrk, pSync);
    int want = 0;
    for (int p = 0; p < n; p++)
        want = p * 7 % 5 > want ? p * 7 % 5 : want;
    CHECK(idst[0] == want);
    dval[0] = 2.0;
    shmem_double_prod_to_all(&dval[1], &dval[0], 1, 0, 0, n, dwrk, pSync2);
    CHECK(dval[1] == (double)(1L << n));

    shmem_barrier_all();
    check_psync();
    shmem_finalize();
    if (me == 0)
        printf("aset: ok on %d PEs\n", n);
    return 0;
}
