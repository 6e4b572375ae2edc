/* Contexts: private contexts per thread-free stream, operations through
 * shmem_ctx_* forms and the generic macros with a context, quiet and fence
 * per context, a team context with team-relative PE numbers, destroy. */
#include "shtest.h"

#define NCTX 40 /* more than the net's contexts: some are shared */

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    long *buf = shmem_calloc(NCTX, sizeof(long));
    CHECK(buf);
    shmem_ctx_t ctx[NCTX];
    for (int i = 0; i < NCTX; i++)
        CHECK(shmem_ctx_create(i % 2 ? SHMEM_CTX_PRIVATE : 0, &ctx[i]) == 0);
    shmem_barrier_all();
    static long vals[NCTX];
    for (int i = 0; i < NCTX; i++) {
        vals[i] = me * 100 + i;
        shmem_ctx_long_put_nbi(ctx[i], &buf[i], &vals[i], 1, next);
    }
    for (int i = 0; i < NCTX; i++)
        shmem_ctx_quiet(ctx[i]);
    shmem_barrier_all();
    for (int i = 0; i < NCTX; i++) {
        if (buf[i] != prev * 100 + i)
            fprintf(stderr, "PE %d: buf[%d] = %ld\n", me, i, buf[i]);
        CHECK(buf[i] == prev * 100 + i);
    }
    shmem_barrier_all(); /* checked before anyone writes again */

    /* generic forms with a context */
    shmem_p(ctx[3], &buf[0], 77L, next);
    shmem_ctx_fence(ctx[3]);
    shmem_p(ctx[3], &buf[1], 78L, next);
    shmem_ctx_quiet(ctx[3]);
    shmem_barrier_all();
    CHECK(buf[0] == 77 && buf[1] == 78);
    CHECK(shmem_g(ctx[5], &buf[1], next) == 78);
    long got[2];
    shmem_get(ctx[6], got, buf, 2, next);
    CHECK(got[0] == 77 && got[1] == 78);
    CHECK(shmem_atomic_fetch_add(ctx[7], &buf[2], 1L, next) == me * 100 + 2);

    shmem_team_t t;
    CHECK(shmem_ctx_get_team(ctx[0], &t) == 0 && t == SHMEM_TEAM_WORLD);
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD);
    for (int i = 0; i < NCTX; i++)
        shmem_ctx_destroy(ctx[i]);

    /* a context on the team of odd PEs: PE numbers are team ranks */
    shmem_barrier_all();
    shmem_team_t odd;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd) == 0);
    if (odd != SHMEM_TEAM_INVALID) {
        shmem_ctx_t tc;
        CHECK(shmem_team_create_ctx(odd, 0, &tc) == 0);
        CHECK(shmem_ctx_get_team(tc, &t) == 0 && t == odd);
        int tme = shmem_team_my_pe(odd), tn = shmem_team_n_pes(odd);
        long v = 5000 + tme;
        shmem_ctx_long_put(tc, &buf[10], &v, 1, (tme + 1) % tn);
        shmem_ctx_quiet(tc);
        shmem_team_sync(odd);
        CHECK(buf[10] == 5000 + (tme + tn - 1) % tn);
        shmem_ctx_destroy(tc);
        shmem_team_destroy(odd);
    }
    shmem_barrier_all();
    shmem_free(buf);
    shmem_finalize();
    if (me == 0)
        printf("ctx: ok on %d PEs\n", n);
    return 0;
}
