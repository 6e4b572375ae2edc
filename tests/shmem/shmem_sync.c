/* Point-to-point synchronisation: wait_until, test and the _all, _any,
 * _some and _vector forms, with status masks, against values written by
 * other PEs with p and atomics. */
#include "shtest.h"

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n;
    long *flag = shmem_calloc(1, sizeof(long));
    int *ivars = shmem_calloc((size_t)n, sizeof(int));
    uint64_t *u = shmem_calloc(4, sizeof(uint64_t));
    CHECK(flag && ivars && u);
    shmem_barrier_all();

    /* wait_until on a value the previous PE writes */
    CHECK(shmem_long_test(flag, SHMEM_CMP_EQ, 0));
    shmem_barrier_all(); /* everyone tested before anyone writes */
    shmem_long_p(flag, 5, next);
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, 5);
    shmem_wait_until(flag, SHMEM_CMP_GE, 5L);
    CHECK(shmem_test(flag, SHMEM_CMP_GT, 4L));
    CHECK(!shmem_long_test(flag, SHMEM_CMP_LT, 5));
    CHECK(shmem_long_test(flag, SHMEM_CMP_NE, 4) && shmem_long_test(flag, SHMEM_CMP_LE, 5));

    /* every PE sets its slot on PE 0: wait_until_all / some / any */
    shmem_barrier_all();
    shmem_int_p(&ivars[me], me + 1, 0);
    if (me == 0) {
        shmem_int_wait_until_all(ivars, (size_t)n, NULL, SHMEM_CMP_GT, 0);
        for (int p = 0; p < n; p++)
            CHECK(ivars[p] == p + 1);
        size_t idx[64];
        size_t k = shmem_int_wait_until_some(ivars, (size_t)n, idx, NULL, SHMEM_CMP_GE, 2);
        CHECK(k == (size_t)(n - 1) && idx[0] == 1);
        int status[64] = {0};
        status[0] = 1; /* exclude slot 0 */
        size_t any = shmem_int_wait_until_any(ivars, (size_t)n, status, SHMEM_CMP_EQ, 2);
        CHECK(any == 1);
        CHECK(shmem_int_test_any(ivars, (size_t)n, status, SHMEM_CMP_EQ, 1) == SIZE_MAX);
        CHECK(shmem_int_test_all(ivars, (size_t)n, status, SHMEM_CMP_GE, 2));
        CHECK(shmem_int_test_some(ivars, (size_t)n, idx, NULL, SHMEM_CMP_GT, n) == 0);
        int want[64];
        for (int p = 0; p < n; p++)
            want[p] = p + 1;
        shmem_int_wait_until_all_vector(ivars, (size_t)n, NULL, SHMEM_CMP_EQ, want);
        CHECK(shmem_int_test_all_vector(ivars, (size_t)n, NULL, SHMEM_CMP_EQ, want));
        want[1] = 99;
        CHECK(!shmem_int_test_all_vector(ivars, (size_t)n, NULL, SHMEM_CMP_EQ, want));
        CHECK(shmem_int_test_any_vector(ivars, (size_t)n, NULL, SHMEM_CMP_EQ, want) == 0);
        CHECK(shmem_int_test_some_vector(ivars, (size_t)n, idx, NULL, SHMEM_CMP_NE, want) == 1 &&
              idx[0] == 1);
        CHECK(shmem_int_wait_until_any_vector(ivars, (size_t)n, NULL, SHMEM_CMP_NE, want) == 1);
        CHECK(shmem_int_wait_until_some_vector(ivars, (size_t)n, idx, NULL, SHMEM_CMP_EQ, want) ==
              (size_t)(n - 1));
    }

    /* a counter raised by atomics from everyone */
    shmem_barrier_all();
    shmem_uint64_atomic_inc(&u[0], 0);
    if (me == 0)
        shmem_uint64_wait_until(&u[0], SHMEM_CMP_EQ, (uint64_t)n);
    shmem_barrier_all();
    CHECK(shmem_uint64_atomic_fetch(&u[0], 0) == (uint64_t)n);

    shmem_sync_all();
    shmem_free(u);
    shmem_free(ivars);
    shmem_free(flag);
    shmem_finalize();
    if (me == 0)
        printf("sync: ok on %d PEs\n", n);
    return 0;
}
