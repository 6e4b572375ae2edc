/* SHMEM_THREAD_MULTIPLE: two threads of every PE run collects at once, each
 * on its own team (the world and a team of the same PEs), with different
 * contribution sizes; every result must be the members' contributions in
 * order. A collect that kept its size in one word per PE mixed up the two
 * threads' sizes. */
#include <pthread.h>

#include "shtest.h"

#define ITERS 300
#define MAXC  8 /* ints a PE contributes at most */

typedef struct {
    shmem_team_t team;
    int tag;
    int *src, *dst;
} job_t;

static int count(int tag, int pe, int it)
{
    return 1 + (pe + tag * 3 + it) % MAXC;
}

static void *run(void *arg)
{
    job_t *j = arg;
    int me = shmem_team_my_pe(j->team), n = shmem_team_n_pes(j->team);
    for (int it = 0; it < ITERS; it++) {
        int c = count(j->tag, me, it);
        for (int k = 0; k < c; k++)
            j->src[k] = j->tag * 100000 + me * 1000 + it % 1000;
        CHECK(shmem_int_collect(j->team, j->dst, j->src, (size_t)c) == 0);
        int off = 0;
        for (int p = 0; p < n; p++)
            for (int k = 0; k < count(j->tag, p, it); k++, off++)
                CHECK(j->dst[off] == j->tag * 100000 + p * 1000 + it % 1000);
    }
    return NULL;
}

int main(void)
{
    int provided;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0);
    CHECK(provided == SHMEM_THREAD_MULTIPLE);
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_t dup;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &dup) == 0);
    job_t jobs[2] = {{SHMEM_TEAM_WORLD, 1, NULL, NULL}, {dup, 2, NULL, NULL}};
    for (int t = 0; t < 2; t++) {
        jobs[t].src = shmem_malloc(MAXC * sizeof(int));
        jobs[t].dst = shmem_malloc((size_t)n * MAXC * sizeof(int));
        CHECK(jobs[t].src && jobs[t].dst);
    }
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        CHECK(pthread_create(&th[t], NULL, run, &jobs[t]) == 0);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    shmem_barrier_all();
    shmem_team_destroy(dup);
    shmem_finalize();
    if (me == 0)
        printf("threads: ok on %d PEs\n", n);
    return 0;
}
