/* Collectives on SHMEM_TEAM_WORLD and on a strided team: broadcast,
 * collect (varying sizes), fcollect, alltoall, alltoalls and the seven
 * reductions, typed and generic, including an in-place reduction. */
#include <string.h>

#include "shtest.h"

#define M 8

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *src = shmem_malloc(M * (size_t)n * sizeof(long));
    long *dst = shmem_malloc(M * (size_t)n * sizeof(long) * 2);
    int *isrc = shmem_malloc(M * sizeof(int));
    int *idst = shmem_malloc(M * sizeof(int));
    double *dsrc = shmem_malloc(M * sizeof(double));
    double *ddst = shmem_malloc(M * sizeof(double));
    CHECK(src && dst && isrc && idst && dsrc && ddst);
    for (int i = 0; i < M * n; i++)
        src[i] = me * 1000 + i;

    /* broadcast from the last PE */
    memset(dst, 0, M * sizeof(long));
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, M, n - 1) == 0);
    for (int i = 0; i < M; i++)
        CHECK(dst[i] == (n - 1) * 1000 + i);
    CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, dst, src, 2, 0) == 0);
    CHECK(dst[0] == 0 && dst[1] == 1);

    /* fcollect: M each */
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, M) == 0);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < M; i++)
            CHECK(dst[p * M + i] == p * 1000 + i);

    /* collect: PE p contributes p+1 elements */
    CHECK(shmem_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)me + 1) == 0);
    int at = 0;
    for (int p = 0; p < n; p++)
        for (int i = 0; i <= p; i++)
            CHECK(dst[at++] == p * 1000 + i);

    /* alltoall: block j of PE i lands as block i on PE j */
    CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, 2) == 0);
    for (int p = 0; p < n; p++)
        for (int k = 0; k < 2; k++)
            CHECK(dst[p * 2 + k] == p * 1000 + me * 2 + k);
    /* alltoalls with strides: dst stride 2, src stride 1, one element */
    for (int i = 0; i < 2 * n; i++)
        dst[i] = -1;
    CHECK(shmem_long_alltoalls(SHMEM_TEAM_WORLD, dst, src, 2, 1, 1) == 0);
    for (int p = 0; p < n; p++)
        CHECK(dst[2 * p] == p * 1000 + me && dst[2 * p + 1] == -1);

    /* reductions */
    for (int i = 0; i < M; i++) {
        isrc[i] = (me + 1) * (i + 1);
        dsrc[i] = 0.5 * (me + 1);
    }
    long nn = n;
    CHECK(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, idst, isrc, M) == 0);
    for (int i = 0; i < M; i++)
        CHECK(idst[i] == (int)(nn * (nn + 1) / 2 * (i + 1)));
    CHECK(shmem_int_max_reduce(SHMEM_TEAM_WORLD, idst, isrc, M) == 0);
    CHECK(idst[2] == n * 3);
    CHECK(shmem_min_reduce(SHMEM_TEAM_WORLD, idst, isrc, M) == 0);
    CHECK(idst[2] == 3);
    CHECK(shmem_double_prod_reduce(SHMEM_TEAM_WORLD, ddst, dsrc, M) == 0);
    double prod = 1;
    for (int p = 0; p < n; p++)
        prod *= 0.5 * (p + 1);
    CHECK(ddst[M - 1] == prod);
    unsigned int *u = (unsigned int *)isrc, *ud = (unsigned int *)idst;
    for (int i = 0; i < M; i++)
        u[i] = 1u << me | 0x100u;
    CHECK(shmem_uint_or_reduce(SHMEM_TEAM_WORLD, ud, u, M) == 0);
    CHECK(ud[0] == (((1u << n) - 1) | 0x100u));
    CHECK(shmem_uint_and_reduce(SHMEM_TEAM_WORLD, ud, u, M) == 0);
    CHECK(ud[0] == 0x100u);
    CHECK(shmem_uint_xor_reduce(SHMEM_TEAM_WORLD, ud, u, M) == 0);
    CHECK(ud[0] == (((1u << n) - 1) | (n % 2 ? 0x100u : 0u)));
    /* in place */
    for (int i = 0; i < M; i++)
        src[i] = me + i;
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, src, src, M) == 0);
    CHECK(src[0] == nn * (nn - 1) / 2 && src[1] == nn * (nn - 1) / 2 + nn);

    /* on the team of even PEs */
    shmem_team_t even;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even) == 0);
    if (me % 2 == 0) {
        CHECK(even != SHMEM_TEAM_INVALID);
        isrc[0] = me;
        CHECK(shmem_int_sum_reduce(even, idst, isrc, 1) == 0);
        int want = 0;
        for (int p = 0; p < n; p += 2)
            want += p;
        CHECK(idst[0] == want);
        CHECK(shmem_int_broadcast(even, idst, isrc, 1, shmem_team_n_pes(even) - 1) == 0);
        CHECK(idst[0] == 2 * (shmem_team_n_pes(even) - 1));
        shmem_team_destroy(even);
    } else {
        CHECK(even == SHMEM_TEAM_INVALID);
    }

    shmem_barrier_all();
    shmem_free(ddst);
    shmem_free(dsrc);
    shmem_free(idst);
    shmem_free(isrc);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    if (me == 0)
        printf("coll: ok on %d PEs\n", n);
    return 0;
}
