/* RMA: typed, sized and generic put/get/p/g/iput/iget and the _nbi forms,
 * to the next PE and to the calling PE itself, on heap objects. */
#include <string.h>

#include "shtest.h"

#define N 1000

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    long *dst = shmem_malloc(N * sizeof(long));
    long *src = shmem_malloc(N * sizeof(long));
    double *d = shmem_calloc(4, sizeof(double));
    char *bytes = shmem_malloc(3 * 100000);
    long double *ld = shmem_malloc(2 * sizeof(long double));
    CHECK(dst && src && d && bytes && ld);
    for (int i = 0; i < N; i++) {
        src[i] = me * 100000L + i;
        dst[i] = -1;
    }
    shmem_barrier_all();

    /* typed put to the next PE: everyone receives from prev */
    shmem_long_put(dst, src, N, next);
    shmem_barrier_all();
    for (int i = 0; i < N; i++)
        CHECK(dst[i] == prev * 100000L + i);

    /* typed get from the next PE */
    long back[N];
    shmem_long_get(back, src, N, next);
    for (int i = 0; i < N; i++)
        CHECK(back[i] == next * 100000L + i);

    /* p / g, generic forms, also to self */
    shmem_p(&d[0], 1.5 * me, next);
    shmem_double_p(&d[1], 2.5, me);
    shmem_barrier_all();
    CHECK(d[0] == 1.5 * prev);
    CHECK(d[1] == 2.5);
    CHECK(shmem_g(&d[0], next) == 1.5 * me);
    CHECK(shmem_double_g(&d[1], next) == 2.5);

    /* 16-byte elements go through the buffered path */
    ld[0] = 0;
    shmem_barrier_all();
    long double v = 3.25L * (me + 1);
    shmem_longdouble_put(&ld[0], &v, 1, next);
    shmem_barrier_all();
    CHECK(ld[0] == 3.25L * (prev + 1));

    /* large sized puts and gets (several chunks of the ring) */
    char *big = malloc(300000), *chk = malloc(300000);
    CHECK(big && chk);
    for (int i = 0; i < 300000; i++)
        big[i] = (char)(i * 7 + me);
    shmem_putmem(bytes, big, 300000, next);
    shmem_barrier_all();
    for (int i = 0; i < 300000; i++)
        CHECK(bytes[i] == (char)(i * 7 + prev));
    shmem_getmem(chk, bytes, 300000, next);
    for (int i = 0; i < 300000; i++)
        CHECK(chk[i] == (char)(i * 7 + me));
    free(big);
    free(chk);

    /* sized 32 and 64 */
    int32_t s32[4] = {me, me + 1, me + 2, me + 3};
    shmem_put32(dst, s32, 4, next); /* 16 bytes into dst */
    shmem_barrier_all();
    int32_t r32[4];
    memcpy(r32, dst, sizeof(r32));
    CHECK(r32[0] == prev && r32[3] == prev + 3);
    uint64_t g64[2];
    shmem_get64(g64, src, 2, next);
    CHECK(g64[0] == (uint64_t)(next * 100000L) && g64[1] == (uint64_t)(next * 100000L + 1));

    /* strided: every other element of src into consecutive dst slots, and back */
    for (int i = 0; i < N; i++)
        dst[i] = -1;
    shmem_barrier_all();
    shmem_long_iput(dst, src, 1, 2, 10, next); /* dst[k] = src[2k] */
    shmem_barrier_all();
    for (int k = 0; k < 10; k++)
        CHECK(dst[k] == prev * 100000L + 2 * k);
    CHECK(dst[10] == -1);
    long st[30];
    for (int i = 0; i < 30; i++)
        st[i] = -7;
    shmem_iget(st, src, 3, 1, 10, next); /* st[3k] = src[k] */
    for (int k = 0; k < 10; k++)
        CHECK(st[3 * k] == next * 100000L + k && st[3 * k + 1] == -7);

    /* non-blocking: complete at quiet */
    static long nb[64]; /* local buffer, kept until quiet */
    for (int i = 0; i < 64; i++)
        nb[i] = 7000 + me * 64 + i;
    shmem_long_put_nbi(dst + 100, nb, 64, next);
    shmem_quiet();
    shmem_barrier_all();
    for (int i = 0; i < 64; i++)
        CHECK(dst[100 + i] == 7000 + prev * 64 + i);
    long gnb[64];
    shmem_get_nbi(gnb, dst + 100, 64, next);
    shmem_quiet();
    for (int i = 0; i < 64; i++)
        CHECK(gnb[i] == 7000 + me * 64 + i);

    /* put to self */
    long self = 4242;
    shmem_long_put(&dst[500], &self, 1, me);
    shmem_quiet();
    CHECK(dst[500] == 4242);

    shmem_barrier_all();
    shmem_free(ld);
    shmem_free(bytes);
    shmem_free(d);
    shmem_free(src);
    shmem_free(dst);
    shmem_finalize();
    if (me == 0)
        printf("rma: ok on %d PEs\n", n);
    return 0;
}
