/* Signals: put_signal (SET and ADD, blocking and _nbi, typed, sized and
 * generic) delivers the data before the signal: the receiver checks the
 * payload right after its signal_wait_until returns. */
#include "shtest.h"

#define N     4096
#define ROUND 20

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    long *buf = shmem_malloc(N * sizeof(long));
    uint64_t *sig = shmem_calloc(2, sizeof(uint64_t));
    long *src = malloc(N * sizeof(long));
    CHECK(buf && sig && src);
    CHECK(shmem_signal_fetch(sig) == 0); /* nobody signals before the barrier */
    shmem_barrier_all();

    for (int r = 1; r <= ROUND; r++) {
        for (int i = 0; i < N; i++)
            src[i] = (long)r * 1000000 + me * 10000 + i;
        if (r % 2)
            shmem_long_put_signal(buf, src, N, &sig[0], (uint64_t)r, SHMEM_SIGNAL_SET, next);
        else
            shmem_put_signal_nbi(buf, src, N, &sig[0], (uint64_t)r, SHMEM_SIGNAL_SET, next);
        uint64_t got = shmem_signal_wait_until(&sig[0], SHMEM_CMP_GE, (uint64_t)r);
        CHECK(got == (uint64_t)r);
        for (int i = 0; i < N; i += 97)
            CHECK(buf[i] == (long)r * 1000000 + prev * 10000 + i);
        CHECK(buf[N - 1] == (long)r * 1000000 + prev * 10000 + N - 1);
        shmem_quiet();       /* our _nbi source may be reused */
        shmem_barrier_all(); /* buf is free again */
    }

    /* ADD from every PE into PE 0's second word, with a byte payload each */
    char *slot = shmem_calloc((size_t)n, 1);
    char mine = (char)(me + 1);
    shmem_putmem_signal(&slot[me], &mine, 1, &sig[1], 1, SHMEM_SIGNAL_ADD, 0);
    if (me == 0) {
        shmem_signal_wait_until(&sig[1], SHMEM_CMP_EQ, (uint64_t)n);
        for (int p = 0; p < n; p++)
            CHECK(slot[p] == (char)(p + 1));
    }
    shmem_barrier_all();
    CHECK(shmem_signal_fetch(&sig[1]) == (me == 0 ? (uint64_t)n : 0));

    shmem_free(slot);
    shmem_free(sig);
    shmem_free(buf);
    free(src);
    shmem_finalize();
    if (me == 0)
        printf("signal: ok on %d PEs\n", n);
    return 0;
}
