/* The complex-number reductions of OpenSHMEM 1.5: complexd and complexf sum
 * and prod, team form (also generic and in place) and active-set to_all
 * form. PE p contributes (p + 1) + p*I to the sums and (1 + I) * (k + 1)
 * to element k of the products; small integers, so the results are exact. */
#include <complex.h>

#include "shtest.h"

#define M 3
static double _Complex dsrc[M], ddst[M], dwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static float _Complex fsrc[M], fdst[M], fwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long pSync[SHMEM_REDUCE_SYNC_SIZE];

static double _Complex want_sum(int n)
{
    return n * (n + 1) / 2.0 + (n * (n - 1) / 2.0) * I;
}

static double _Complex want_prod(int n, int k)
{
    double _Complex r = 1;
    for (int p = 0; p < n; p++)
        r *= (1 + I) * (k + 1);
    return r;
}

static void fill(int me, int prod)
{
    for (int k = 0; k < M; k++) {
        dsrc[k] = prod ? (1 + I) * (k + 1) : (me + 1) + me * I;
        fsrc[k] = (float _Complex)dsrc[k];
        ddst[k] = fdst[k] = -7;
    }
}

static void check(int n, int prod, int in_place)
{
    for (int k = 0; k < M; k++) {
        double _Complex w = prod ? want_prod(n, k) : want_sum(n);
        double _Complex d = in_place ? dsrc[k] : ddst[k];
        float _Complex f = in_place ? fsrc[k] : fdst[k];
        CHECK(d == w);
        CHECK(f == (float _Complex)w);
    }
}

int main(void)
{
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        pSync[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();

    for (int prod = 0; prod < 2; prod++) {
        fill(me, prod);
        CHECK((prod ? shmem_complexd_prod_reduce : shmem_complexd_sum_reduce)(SHMEM_TEAM_WORLD,
                                                                              ddst, dsrc, M) == 0);
        CHECK((prod ? shmem_complexf_prod_reduce : shmem_complexf_sum_reduce)(SHMEM_TEAM_WORLD,
                                                                              fdst, fsrc, M) == 0);
        check(n, prod, 0);
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
        fill(me, prod); /* generic, in place */
        CHECK((prod ? shmem_prod_reduce(SHMEM_TEAM_WORLD, dsrc, dsrc, M)
                    : shmem_sum_reduce(SHMEM_TEAM_WORLD, dsrc, dsrc, M)) == 0);
        CHECK((prod ? shmem_prod_reduce(SHMEM_TEAM_WORLD, fsrc, fsrc, M)
                    : shmem_sum_reduce(SHMEM_TEAM_WORLD, fsrc, fsrc, M)) == 0);
        check(n, prod, 1);
#endif
        shmem_barrier_all(); /* every PE done reading before the sources change */
        fill(me, prod);
        (prod ? shmem_complexd_prod_to_all : shmem_complexd_sum_to_all)(ddst, dsrc, M, 0, 0, n,
                                                                        dwrk, pSync);
        (prod ? shmem_complexf_prod_to_all : shmem_complexf_sum_to_all)(fdst, fsrc, M, 0, 0, n,
                                                                        fwrk, pSync);
        check(n, prod, 0);
        shmem_barrier_all();
    }
    shmem_finalize();
    if (me == 0)
        printf("complex: ok on %d PEs\n", n);
    return 0;
}
