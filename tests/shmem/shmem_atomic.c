/* Atomics: every PE hammers counters on PE 0 (including PE 0 itself), so
 * lost updates between ranks would show; then each form once with its
 * expected old and new values, typed and generic, blocking and _nbi. */
#include "shtest.h"

static long counter;         /* a symmetric global */
static unsigned int bits;    /* bitwise target */
static int cswap_owner = -1; /* claimed once by compare_swap */

#define ROUNDS 200

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    uint64_t *u64 = shmem_calloc(1, sizeof(uint64_t));
    int32_t *i32 = shmem_calloc(1, sizeof(int32_t));
    double *dd = shmem_calloc(1, sizeof(double));
    float *ff = shmem_calloc(1, sizeof(float));
    CHECK(u64 && i32 && dd && ff);
    shmem_barrier_all();

    /* contention: fetch_add and inc from all PEs on PE 0 */
    long seen_max = -1;
    for (int i = 0; i < ROUNDS; i++) {
        long old = shmem_long_atomic_fetch_add(&counter, 2, 0);
        CHECK(old >= 0 && old % 2 == 0);
        if (old > seen_max)
            seen_max = old;
        shmem_atomic_inc(i32, 0);
    }
    shmem_barrier_all();
    if (me == 0) {
        CHECK(counter == 2L * ROUNDS * n);
        CHECK(*i32 == ROUNDS * n);
    }
    CHECK(shmem_long_atomic_fetch(&counter, 0) == 2L * ROUNDS * n);

    /* compare_swap: exactly one PE wins */
    int old = shmem_int_atomic_compare_swap(&cswap_owner, -1, me, 0);
    int won = old == -1;
    int *wins = shmem_calloc(1, sizeof(int));
    shmem_barrier_all();
    shmem_int_atomic_add(wins, won, 0);
    shmem_barrier_all();
    if (me == 0)
        CHECK(*wins == 1 && cswap_owner >= 0 && cswap_owner < n);

    /* set / fetch / swap on the next PE, integer and floating point */
    shmem_uint64_atomic_set(u64, 1000u + (uint64_t)me, next);
    shmem_double_atomic_set(dd, 0.5 * me, next);
    shmem_atomic_set(ff, 1.25f * me, next);
    shmem_barrier_all();
    CHECK(*u64 == 1000u + (uint64_t)prev);
    CHECK(*dd == 0.5 * prev);
    CHECK(*ff == 1.25f * prev);
    CHECK(shmem_atomic_fetch(u64, next) == 1000u + (uint64_t)me);
    shmem_barrier_all();
    uint64_t was = shmem_uint64_atomic_swap(u64, 7u, next);
    CHECK(was == 1000u + (uint64_t)me);
    double dwas = shmem_atomic_swap(dd, -1.0, next);
    CHECK(dwas == 0.5 * me);
    shmem_barrier_all();
    CHECK(*u64 == 7u && *dd == -1.0);

    /* fetch_inc and the bitwise forms */
    shmem_barrier_all();
    if (me == 0)
        bits = 0xf0u;
    shmem_barrier_all();
    if (me == 1 % n) {
        CHECK(shmem_uint_atomic_fetch_or(&bits, 0x0fu, 0) == 0xf0u);
        CHECK(shmem_uint_atomic_fetch_and(&bits, 0x3cu, 0) == 0xffu);
        CHECK(shmem_uint_atomic_fetch_xor(&bits, 0xffu, 0) == 0x3cu);
        shmem_uint_atomic_xor(&bits, 0x01u, 0);
        shmem_atomic_or(&bits, 0x100u, 0);
        shmem_uint_atomic_and(&bits, 0x1ffu, 0);
    }
    shmem_barrier_all();
    if (me == 0)
        CHECK(bits == ((0xc3u ^ 0x01u) | 0x100u));

    /* non-blocking fetch forms complete by quiet */
    shmem_barrier_all();
    *u64 = 10;
    shmem_barrier_all();
    uint64_t f1 = 0, f2 = 0, f3 = 0;
    if (me == 0) {
        shmem_uint64_atomic_fetch_inc_nbi(&f1, u64, next);
        shmem_atomic_fetch_add_nbi(&f2, u64, (uint64_t)5, next);
        shmem_uint64_atomic_compare_swap_nbi(&f3, u64, 16u, 99u, next);
        shmem_quiet();
        CHECK(f1 == 10 && f2 == 11 && f3 == 16);
        uint64_t f4 = 0;
        shmem_uint64_atomic_fetch_nbi(&f4, u64, next);
        shmem_quiet();
        CHECK(f4 == 99);
    }
    shmem_barrier_all();

    /* context forms */
    shmem_ctx_long_atomic_add(SHMEM_CTX_DEFAULT, &counter, 1, 0);
    shmem_barrier_all();
    if (me == 0)
        CHECK(counter == 2L * ROUNDS * n + n);

    shmem_free(wins);
    shmem_free(ff);
    shmem_free(dd);
    shmem_free(i32);
    shmem_free(u64);
    shmem_finalize();
    if (me == 0)
        printf("atomic: ok on %d PEs (max old %ld)\n", n, seen_max);
    return 0;
}
