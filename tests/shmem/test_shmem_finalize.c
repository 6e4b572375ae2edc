/*
 * shmem_finalize releases the teams the program made (OpenSHMEM 1.5: it
 * destroys all teams created by the program, and with them their shareable
 * contexts), also those the program never destroyed. One PE in process, no
 * launcher. The test stands between libgmux-shmem and libgmux-net: its own
 * gmux_team_split_strided and gmux_team_destroy record every net team made
 * and destroyed, then call the library's.
 */

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <gmux/net.h>
#include <shmem.h>

#define MAXT 64
static gmux_team_t *made[MAXT], *gone[MAXT];
static int nmade, ngone;

/* exported, so they stand in for libgmux-net's in libgmux-shmem's calls */
#define EXPORTED __attribute__((visibility("default")))

EXPORTED gmux_status_t gmux_team_split_strided(gmux_team_t *parent, int start, int stride, int size,
                                               gmux_team_t **team_p)
{
    gmux_status_t (*real)(gmux_team_t *, int, int, int, gmux_team_t **) = (gmux_status_t(*)(
        gmux_team_t *, int, int, int, gmux_team_t **))dlsym(RTLD_NEXT, "gmux_team_split_strided");
    gmux_status_t st = real(parent, start, stride, size, team_p);
    if (st == GMUX_OK && team_p && *team_p && nmade < MAXT)
        made[nmade++] = *team_p;
    return st;
}

EXPORTED void gmux_team_destroy(gmux_team_t *team)
{
    void (*real)(gmux_team_t *) = (void (*)(gmux_team_t *))dlsym(RTLD_NEXT, "gmux_team_destroy");
    if (team && ngone < MAXT)
        gone[ngone++] = team;
    real(team);
}

static int destroyed(const gmux_team_t *t)
{
    int k = 0;
    for (int i = 0; i < ngone; i++)
        k += gone[i] == t;
    return k;
}

static void test_finalize_destroys_teams(void **state)
{
    (void)state;
    shmem_init();
    assert_int_equal(shmem_n_pes(), 1);
    int before = nmade; /* SHMEM_TEAM_SHARED's */
    shmem_team_t kept, dropped, x, y;
    assert_int_equal(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 1, NULL, 0, &kept), 0);
    assert_int_equal(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 1, NULL, 0, &dropped), 0);
    assert_int_equal(shmem_team_split_2d(kept, 1, NULL, 0, &x, NULL, 0, &y), 0);
    shmem_ctx_t ctx; /* a shareable context of a team left to finalize */
    assert_int_equal(shmem_team_create_ctx(dropped, 0, &ctx), 0);
    shmem_team_destroy(kept); /* one destroyed by the program: not twice */
    int nuser = nmade - before;
    assert_int_equal(nuser, 4);
    shmem_finalize();
    for (int i = 0; i < nmade; i++) {
        if (destroyed(made[i]) != 1)
            fprintf(stderr, "net team %d of %d destroyed %d times\n", i, nmade, destroyed(made[i]));
        assert_int_equal(destroyed(made[i]), 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finalize_destroys_teams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
