/* SHMEM_THREAD_MULTIPLE with the deprecated active-set collectives: three
 * threads of every PE run them at once, each on its own active set with its
 * own pSync (the whole job; the pair 2k, 2k + 1; the PEs of the caller's
 * parity). Every round a thread runs collect32 or collect64 with a count
 * that differs per PE, set and round, then fcollect64, broadcast32 and
 * long_sum_to_all, and checks every element of every result. With 2 PEs the
 * pair is the whole job (a second call on the same set at once, with its
 * own pSync) and the parity sets have one PE each. A collect that kept its
 * size in one word per PE mixed up the threads' sizes. pSync is
 * SHMEM_SYNC_VALUE at the end. */
#include <pthread.h>
#include <stdint.h>

#include "shtest.h"

#define SETS  3
#define ITERS 40
#define MAXC  7 /* elements a PE contributes to a collect at most */

typedef struct {
    int tag, start, log, size;
    int64_t *src, *dst; /* symmetric: MAXC and n * MAXC elements */
} set_t;

static long pSync[SETS][SHMEM_SYNC_SIZE];
static long pWrk[SETS][SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long sum_src[SETS], sum_dst[SETS];

static int count(int tag, int pe, int it)
{
    return 1 + (5 * pe + 3 * tag + it) % MAXC;
}

/* element k of PE pe's contribution to set tag in round it */
static int64_t value(int tag, int pe, int it, int k)
{
    return tag * 1000000 + pe * 10000 + (it % 100) * 100 + k;
}

static int member(const set_t *s, int i)
{
    return s->start + (i << s->log);
}

static void check_collect(const set_t *s, int it, int wide)
{
    int32_t *d32 = (int32_t *)s->dst;
    for (int i = 0, off = 0; i < s->size; i++) {
        int pe = member(s, i);
        for (int k = 0; k < count(s->tag, pe, it); k++, off++)
            CHECK((wide ? s->dst[off] : d32[off]) == value(s->tag, pe, it, k));
    }
}

static void round_of(set_t *s, int me, int it)
{
    int c = count(s->tag, me, it), wide = it % 2;
    int32_t *s32 = (int32_t *)s->src, *d32 = (int32_t *)s->dst;
    for (int k = 0; k < c; k++) {
        if (wide)
            s->src[k] = value(s->tag, me, it, k);
        else
            s32[k] = (int32_t)value(s->tag, me, it, k);
    }
    if (wide)
        shmem_collect64(s->dst, s->src, (size_t)c, s->start, s->log, s->size, pSync[s->tag]);
    else
        shmem_collect32(s->dst, s->src, (size_t)c, s->start, s->log, s->size, pSync[s->tag]);
    check_collect(s, it, wide);

    s->src[0] = value(s->tag, me, it, 0);
    s->src[1] = value(s->tag, me, it, 1);
    shmem_fcollect64(s->dst, s->src, 2, s->start, s->log, s->size, pSync[s->tag]);
    for (int i = 0; i < s->size; i++)
        for (int k = 0; k < 2; k++)
            CHECK(s->dst[2 * i + k] == value(s->tag, member(s, i), it, k));

    int root = it % s->size;
    s32[0] = (int32_t)value(s->tag, me, it, 3);
    d32[0] = -1;
    shmem_broadcast32(d32, s32, 1, root, s->start, s->log, s->size, pSync[s->tag]);
    CHECK(d32[0] == (me == member(s, root) ? -1 : value(s->tag, member(s, root), it, 3)));

    sum_src[s->tag] = value(s->tag, me, it, 0);
    shmem_long_sum_to_all(&sum_dst[s->tag], &sum_src[s->tag], 1, s->start, s->log, s->size,
                          pWrk[s->tag], pSync[s->tag]);
    long want = 0;
    for (int i = 0; i < s->size; i++)
        want += (long)value(s->tag, member(s, i), it, 0);
    CHECK(sum_dst[s->tag] == want);
}

static void *run(void *arg)
{
    set_t *s = arg;
    int me = shmem_my_pe();
    for (int it = 0; it < ITERS; it++)
        round_of(s, me, it);
    return NULL;
}

int main(void)
{
    for (int t = 0; t < SETS; t++)
        for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
            pSync[t][i] = SHMEM_SYNC_VALUE;
    int provided;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0);
    CHECK(provided == SHMEM_THREAD_MULTIPLE);
    int me = shmem_my_pe(), n = shmem_n_pes();
    int pair = me & ~1, parity = me % 2;
    set_t sets[SETS] = {
        {0, 0, 0, n, NULL, NULL},
        {1, pair, 0, pair + 1 < n ? 2 : 1, NULL, NULL},
        {2, parity, 1, (n - parity + 1) / 2, NULL, NULL},
    };
    for (int t = 0; t < SETS; t++) {
        sets[t].src = shmem_malloc(MAXC * sizeof(int64_t));
        sets[t].dst = shmem_malloc((size_t)n * MAXC * sizeof(int64_t));
        CHECK(sets[t].src && sets[t].dst);
    }
    pthread_t th[SETS];
    for (int t = 0; t < SETS; t++)
        CHECK(pthread_create(&th[t], NULL, run, &sets[t]) == 0);
    for (int t = 0; t < SETS; t++)
        pthread_join(th[t], NULL);
    shmem_barrier_all();
    for (int t = 0; t < SETS; t++)
        for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
            CHECK(pSync[t][i] == SHMEM_SYNC_VALUE);
    for (int t = 0; t < SETS; t++) {
        shmem_free(sets[t].dst);
        shmem_free(sets[t].src);
    }
    shmem_finalize();
    if (me == 0)
        printf("aset_threads: ok on %d PEs\n", n);
    return 0;
}
