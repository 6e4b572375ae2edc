/* Teams: world and shared, split_strided (members and non-members),
 * my_pe / n_pes / translate_pe / team_sync / get_config, split_2d, and
 * splits with invalid or disagreeing arguments. */
#include "shtest.h"

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me);
    CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == n);
    CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) >= 1);
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1);

    /* the upper half: PEs n/2 .. n-1 */
    shmem_team_t upper;
    shmem_team_config_t cfg = {.num_contexts = 2};
    int half = n / 2;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, half, 1, n - half, &cfg,
                                   SHMEM_TEAM_NUM_CONTEXTS, &upper) == 0);
    if (me >= half) {
        CHECK(upper != SHMEM_TEAM_INVALID);
        CHECK(shmem_team_my_pe(upper) == me - half);
        CHECK(shmem_team_n_pes(upper) == n - half);
        CHECK(shmem_team_translate_pe(upper, 0, SHMEM_TEAM_WORLD) == half);
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, upper) == me - half);
        CHECK(shmem_team_sync(upper) == 0);
        shmem_team_config_t got = {0};
        CHECK(shmem_team_get_config(upper, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0);
        CHECK(got.num_contexts == 2);
    } else {
        CHECK(upper == SHMEM_TEAM_INVALID);
    }
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_SHARED) == (me == 0 ? 0 : -1));

    /* nested: every second PE of the upper half */
    shmem_team_t sub = SHMEM_TEAM_INVALID;
    if (upper != SHMEM_TEAM_INVALID) {
        CHECK(shmem_team_split_strided(upper, 0, 2, (n - half + 1) / 2, NULL, 0, &sub) == 0);
        if ((me - half) % 2 == 0) {
            CHECK(sub != SHMEM_TEAM_INVALID);
            CHECK(shmem_team_translate_pe(sub, shmem_team_my_pe(sub), SHMEM_TEAM_WORLD) == me);
            CHECK(shmem_team_sync(sub) == 0);
            shmem_team_destroy(sub);
        }
        shmem_team_destroy(upper);
    }

    /* 2d: rows of 2 */
    shmem_barrier_all();
    shmem_team_t x, y;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &y) == 0);
    CHECK(x != SHMEM_TEAM_INVALID && y != SHMEM_TEAM_INVALID);
    CHECK(shmem_team_my_pe(x) == me % 2 && shmem_team_my_pe(y) == me / 2);
    CHECK(shmem_team_translate_pe(y, 0, SHMEM_TEAM_WORLD) == me % 2);
    shmem_team_destroy(x);
    shmem_team_destroy(y);

    /* invalid arguments fail without ending the job */
    shmem_team_t bad;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0, &bad) != 0);
    CHECK(bad == SHMEM_TEAM_INVALID);
    /* PEs that disagree (PE 0 asks a team of itself, the rest of all PEs) are all
     * refused at once, and the next split works */
    if (n > 1) {
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, me == 0 ? 1 : n, NULL, 0, &bad) !=
              0);
        CHECK(bad == SHMEM_TEAM_INVALID);
        shmem_team_t all;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &all) == 0);
        CHECK(shmem_team_n_pes(all) == n && shmem_team_sync(all) == 0);
        shmem_team_destroy(all);
    }

    shmem_barrier_all();
    shmem_finalize();
    if (me == 0)
        printf("team: ok on %d PEs\n", n);
    return 0;
}
