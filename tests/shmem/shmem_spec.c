/* Clauses of OpenSHMEM 1.5 a porting program leans on, one check each:
 * allocation corner cases (zero sizes, overflow, realloc, align), shmem_ptr
 * and the accessibility queries, invalid team and context handles, the
 * split_2d rules, the fairness of wait_until_any / test_any, and (last,
 * because it uses up the team ids) a split_2d that fails half-way; with
 * an argument, shmem_global_exit's status. */
#include <stdint.h>
#include <string.h>

#include "shtest.h"

static long flags[2];

static void check_memory(int me)
{
    CHECK(shmem_malloc(0) == NULL);
    CHECK(shmem_align(64, 0) == NULL);
    CHECK(shmem_calloc(SIZE_MAX / 2 + 1, 2) == NULL); /* count * size overflows */
    shmem_free(NULL);

    /* "an aligned symmetric address whose value is a multiple of alignment" */
    for (size_t a = 4096; a <= (size_t)1 << 24; a <<= 1) {
        char *p = shmem_align(a, 100);
        CHECK(p != NULL);
        if ((uintptr_t)p % a != 0)
            fprintf(stderr, "PE %d: shmem_align(%zu) gave %p\n", me, a, (void *)p);
        CHECK((uintptr_t)p % a == 0);
        shmem_free(p);
    }

    int *p = shmem_realloc(NULL, 4 * sizeof(int)); /* as shmem_malloc */
    CHECK(p != NULL);
    for (int i = 0; i < 4; i++)
        p[i] = me * 10 + i;
    p = shmem_realloc(p, 4096 * sizeof(int));
    CHECK(p != NULL);
    for (int i = 0; i < 4; i++)
        CHECK(p[i] == me * 10 + i); /* contents kept up to the smaller size */
    CHECK(shmem_realloc(p, 0) == NULL);

    long *h = shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
    CHECK(h != NULL);
    shmem_free(h);
}

static void check_access(int me, int n)
{
    long local = 0;
    CHECK(shmem_ptr(flags, me) == flags);
    CHECK(shmem_ptr(flags, n) == NULL);
    CHECK(shmem_ptr(flags, -1) == NULL);
    CHECK(shmem_ptr(&local, me) == NULL);
    CHECK(shmem_addr_accessible(flags, me) && shmem_addr_accessible(flags, (me + 1) % n));
    CHECK(!shmem_addr_accessible(&local, me));
    CHECK(!shmem_addr_accessible(flags, n) && !shmem_addr_accessible(flags, -1));
    CHECK(shmem_pe_accessible(me) && !shmem_pe_accessible(n) && !shmem_pe_accessible(-1));
    int major = 0, minor = 0;
    shmem_info_get_version(&major, &minor);
    CHECK(major == 1 && minor == 5 && SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION == 5);
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_name(name);
    CHECK(name[0] && strlen(name) < SHMEM_MAX_NAME_LEN);
}

static void check_invalid_handles(int n)
{
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1);
    CHECK(shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_INVALID) == -1);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, n, SHMEM_TEAM_WORLD) == -1);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, -1, SHMEM_TEAM_WORLD) == -1);
    shmem_team_config_t cfg = {7};
    CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &cfg) != 0);
    CHECK(cfg.num_contexts == 7);
    CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0);
    shmem_team_destroy(SHMEM_TEAM_INVALID); /* no operation */

    shmem_team_t t = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &t) != 0);
    CHECK(t == SHMEM_TEAM_INVALID);
    t = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n, 1, 1, NULL, 0, &t) != 0);
    CHECK(t == SHMEM_TEAM_INVALID);

    /* shmem_team_create_ctx: "a nonzero value is returned and ctx is set to
     * SHMEM_CTX_INVALID" */
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &ctx) != 0);
    CHECK(ctx == SHMEM_CTX_INVALID);
    shmem_team_t team = SHMEM_TEAM_WORLD;
    CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &team) != 0);
    CHECK(team == SHMEM_TEAM_INVALID);
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &team) == 0 && team == SHMEM_TEAM_WORLD);
    shmem_ctx_destroy(SHMEM_CTX_INVALID); /* no operation */
}

static void check_split_2d(int me, int n)
{
    /* an invalid parent or xrange: both handles SHMEM_TEAM_INVALID */
    shmem_team_t x = SHMEM_TEAM_WORLD, y = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_INVALID, 1, NULL, 0, &x, NULL, 0, &y) != 0);
    CHECK(x == SHMEM_TEAM_INVALID && y == SHMEM_TEAM_INVALID);
    x = y = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &x, NULL, 0, &y) != 0);
    CHECK(x == SHMEM_TEAM_INVALID && y == SHMEM_TEAM_INVALID);

    /* xrange beyond the parent's size acts as the parent's size */
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, n + 3, NULL, 0, &x, NULL, 0, &y) == 0);
    CHECK(shmem_team_n_pes(x) == n && shmem_team_my_pe(x) == me);
    CHECK(shmem_team_n_pes(y) == 1 && shmem_team_my_pe(y) == 0);
    shmem_team_destroy(x);
    shmem_team_destroy(y);
}

/* "If an entry i ... satisfies the wait condition, a series of calls to
 * shmem_wait_until_any must eventually return i" (and test_any). */
static void check_any_fairness(void)
{
    flags[0] = flags[1] = 1;
    int seen = 0, tseen = 0;
    for (int i = 0; i < 4; i++) {
        size_t w = shmem_long_wait_until_any(flags, 2, NULL, SHMEM_CMP_EQ, 1);
        size_t t = shmem_long_test_any(flags, 2, NULL, SHMEM_CMP_EQ, 1);
        CHECK(w < 2 && t < 2);
        seen |= 1 << w;
        tseen |= 1 << t;
    }
    CHECK(seen == 3);
    CHECK(tseen == 3);

    int all_out[2] = {1, 1};
    size_t idx[2];
    CHECK(shmem_long_wait_until_any(flags, 2, all_out, SHMEM_CMP_EQ, 1) == SIZE_MAX);
    CHECK(shmem_long_test_any(flags, 2, all_out, SHMEM_CMP_EQ, 1) == SIZE_MAX);
    CHECK(shmem_long_wait_until_some(flags, 2, idx, all_out, SHMEM_CMP_EQ, 1) == 0);
    CHECK(shmem_long_test_all(flags, 0, NULL, SHMEM_CMP_EQ, 1) == 1);
    CHECK(shmem_long_wait_until_some(flags, 2, idx, NULL, SHMEM_CMP_EQ, 1) == 2);
    CHECK(idx[0] == 0 && idx[1] == 1);
}

/* "If any xaxis_team or yaxis_team on any PE cannot be created, then both
 * team handles on all PEs ... SHMEM_TEAM_INVALID" */
static void check_split_2d_fails(int n)
{
    if (n < 2)
        return;
    int made = 0; /* use up the job's team ids (no id is ever reused) */
    for (shmem_team_t t; made < 64; made++) {
        if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) != 0)
            break;
        shmem_team_destroy(t);
    }
    CHECK(made < 64);
    /* rows of one PE need no id and succeed; the column of n PEs fails */
    shmem_team_t x = SHMEM_TEAM_WORLD, y = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 1, NULL, 0, &x, NULL, 0, &y) != 0);
    CHECK(y == SHMEM_TEAM_INVALID);
    CHECK(x == SHMEM_TEAM_INVALID);
}

/* "global_exit=S": PE 0 ends the job with status S while the others wait in
 * a barrier; the job's status must be S, also for 0 ("passing an exit
 * status to the execution environment"). */
static int global_exit(int status)
{
    if (shmem_my_pe() == 0)
        shmem_global_exit(status);
    shmem_barrier_all();
    fprintf(stderr, "PE %d: returned from a barrier with a PE gone\n", shmem_my_pe());
    return 99;
}

int main(int argc, char **argv)
{
    shmem_init();
    if (argc > 1 && strncmp(argv[1], "global_exit=", 12) == 0)
        return global_exit(atoi(argv[1] + 12));
    int me = shmem_my_pe(), n = shmem_n_pes();
    int level = -1;
    shmem_query_thread(&level);
    CHECK(level >= SHMEM_THREAD_SINGLE && level <= SHMEM_THREAD_MULTIPLE);
    check_memory(me);
    check_access(me, n);
    check_invalid_handles(n);
    check_split_2d(me, n);
    check_any_fairness();
    shmem_barrier_all();
    check_split_2d_fails(n);
    shmem_barrier_all();
    shmem_finalize();
    if (me == 0)
        printf("spec: ok on %d PEs\n", n);
    return 0;
}
