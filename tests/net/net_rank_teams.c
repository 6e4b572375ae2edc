/*
 * net_rank teams: barriers over the world and strided teams, splits of
 * splits, and splits whose members pass invalid or different arguments
 * (every member refused at once; one-member splits past the agreement
 * epoch's wrap, reached through the team's internals).
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "net/internal.h"
#include "net_rank.h"

/* Rounds of: every member writes its tag into every member's slot of w, a
 * barrier, then every slot of the team holds this round's tag. */
static void team_rounds(gmux_team_t *t, gmux_window_t w, const uint64_t *win, uint64_t tag)
{
    CHECK(t, "not a member");
    for (uint64_t r = 1; r <= 10; r++) {
        for (int k = 0; k < gmux_team_size(t); k++)
            OK(gmux_put_value(comm, 2, gmux_team_world_rank(t, k), w, (uint64_t)me * 8, tag + r, 8,
                              NULL));
        OK(gmux_barrier(t));
        for (int k = 0; k < gmux_team_size(t); k++) {
            int p = gmux_team_world_rank(t, k);
            CHECK(win[p] == tag + r, "tag %" PRIu64 " round %" PRIu64 ": slot %d is %" PRIu64, tag,
                  r, p, win[p]);
        }
        OK(gmux_barrier(t));
    }
}

/* The warning a refused split is expected to log, while one is: the sink
 * counts the lines that carry it instead of printing them (they are the
 * test working); every other line goes to stderr as usual. */
static _Atomic(const char *) warn_expected;
static atomic_int warn_matched;

static void teams_sink(com_log_level_t level, com_log_subsys_t subsys, const char *line, void *arg)
{
    (void)arg;
    const char *e = atomic_load(&warn_expected);
    if (e && level == COM_LOG_WARN && subsys == COM_SUBSYS_NET && strstr(line, e)) {
        atomic_fetch_add(&warn_matched, 1);
        return;
    }
    fprintf(stderr, "%s\n", line);
}

/* A split that must be refused (INVALID, no team) with exactly one warning
 * on this member, containing `warning`. */
static void split_refused(gmux_team_t *parent, int start, int stride, int size, bool no_ptr,
                          const char *warning, const char *what)
{
    gmux_team_t *t = NULL;
    atomic_store(&warn_matched, 0);
    atomic_store(&warn_expected, warning);
    gmux_status_t st = gmux_team_split_strided(parent, start, stride, size, no_ptr ? NULL : &t);
    atomic_store(&warn_expected, NULL);
    CHECK(st == GMUX_ERR_INVALID && !t, "%s: %s", what, gmux_status_name(st));
    CHECK(atomic_load(&warn_matched) == 1, "%s: %d warnings saying '%s'", what,
          atomic_load(&warn_matched), warning);
}

/* Splits whose members pass invalid or different arguments fail on every
 * member at once, take no team id, and leave the parent usable: a valid
 * split after them works. Each member says why, once (counted, not
 * printed). "At once" is not timed: the timeout is an hour meanwhile, so a
 * split that waited for it would outlast the launcher's --timeout. */
static void team_disagreements(gmux_team_t *world, gmux_window_t w, const uint64_t *win)
{
    gmux_team_t *self = NULL, *all = NULL;
    double keep = gmux_comm_timeout(comm);
    OK(gmux_comm_set_timeout(comm, 3600));
    int last = n - 1;
    const char *other_bad = "another member passed invalid arguments";
    com_log_set_sink(teams_sink, NULL);
    split_refused(world, 0, 1, me == last ? n - 1 : n, false, "different sizes", "sizes differ");
    split_refused(world, 0, 1, me == 0 ? 1 : 2, false, "different sizes",
                  "one member asks a one-member team");
    split_refused(world, 0, 1, n, me == last, me == last ? "no team pointer" : other_bad,
                  "no team pointer on the last rank");
    split_refused(world, 0, 1, me == 0 ? n + 1 : n, false,
                  me == 0 ? "not a subset of the team" : other_bad,
                  "rank 0 asks more members than there are");
    if (n > 2) {
        split_refused(world, me == last ? 1 : 0, 1, 2, false, "different starts", "starts differ");
        split_refused(world, 0, me == 0 ? 2 : 1, 2, false, "different strides", "strides differ");
    }
    OK(gmux_comm_set_timeout(comm, keep));
    /* past the wrap of the agreement words' 16-bit epoch: agreements, with
     * a disagreement now and then (two at the wrap itself), stay right. The
     * world's count of agreements (the same on every member) jumps to just
     * before the wrap: reaching it split by split takes 65535 of them, about
     * 12 s on tcp and well over the job's timeout under TSan on a busy host.
     * Only up to 4 ranks: the epoch arithmetic does not depend on the team's
     * size, and at 8 ranks (3 rounds per agreement, 16 threads on a 2-core
     * host) the 120 splits took 4-6 s of the 13-15 s an 8-rank teams job
     * ran under TSan on a loaded host (about 3 s of 9 on tcp, 1.5 of 7 on
     * shm, at lower load); every other split here and above still runs at 8. */
    enum { WRAP_SPLITS = 120, BEFORE_WRAP = WRAP_SPLITS / 2 };
    int wrap_splits = n <= 4 ? WRAP_SPLITS : 0;
    CHECK(world->agreements < NET_AGREE_EPOCHS - BEFORE_WRAP, "%" PRIu64 " agreements so far",
          world->agreements);
    if (wrap_splits)
        world->agreements = NET_AGREE_EPOCHS - BEFORE_WRAP;
    for (int i = 0; i < wrap_splits; i++) {
        bool differ = i % 29 == 0 || i == BEFORE_WRAP - 1 || i == BEFORE_WRAP;
        bool two = differ && me == 1; /* asks for ranks 0 and 1, the others for themselves */
        if (differ) {
            char what[32];
            snprintf(what, sizeof(what), "split %d", i);
            split_refused(world, two ? 0 : me, 1, two ? 2 : 1, false, "different sizes", what);
            continue;
        }
        gmux_status_t st = gmux_team_split_strided(world, me, 1, 1, &self);
        CHECK(st == GMUX_OK && self, "split %d: %s", i, gmux_status_name(st));
        gmux_team_destroy(self);
        self = NULL;
    }
    com_log_set_sink(NULL, NULL);
    CHECK(!wrap_splits || world->agreements == NET_AGREE_EPOCHS + WRAP_SPLITS - BEFORE_WRAP,
          "the wrap not passed");
    /* one-member teams: each member its own start */
    OK(gmux_team_split_strided(world, me, 1, 1, &self));
    CHECK(self && gmux_team_size(self) == 1 && gmux_team_world_rank(self, 0) == me, "own team");
    OK(gmux_barrier(self));
    OK(gmux_team_split_strided(world, 0, 1, n, &all));
    team_rounds(all, w, win, 3000);
    gmux_team_destroy(self);
    gmux_team_destroy(all);
    OK(gmux_barrier(world));
}

int mode_teams(void)
{
    enum { ROUNDS = 20 };
    uint64_t *win = calloc((size_t)n, sizeof(uint64_t));
    gmux_window_t w;
    OK(gmux_window_register(comm, win, (size_t)n * sizeof(uint64_t), &w));
    gmux_team_t *world = gmux_team_world(comm);
    CHECK(gmux_team_size(world) == n && gmux_team_rank(world) == me, "world team");
    /* after each barrier, every rank's write of this round is visible */
    for (uint64_t r = 1; r <= ROUNDS; r++) {
        for (int p = 0; p < n; p++)
            OK(gmux_put_value(comm, (uint32_t)(p % 4), p, w, (uint64_t)me * 8, r, 8, NULL));
        OK(gmux_barrier(world));
        for (int p = 0; p < n; p++)
            CHECK(win[p] == r, "round %" PRIu64 ": slot %d is %" PRIu64, r, p, win[p]);
        OK(gmux_barrier(world));
    }
    /* strided split: even and odd ranks */
    gmux_team_t *even = NULL, *odd = NULL;
    OK(gmux_team_split_strided(world, 0, 2, (n + 1) / 2, &even));
    OK(gmux_team_split_strided(world, 1, 2, n / 2, &odd));
    gmux_team_t *mine = me % 2 ? odd : even;
    CHECK(mine && (me % 2 ? even : odd) == NULL, "membership");
    CHECK(gmux_team_rank(mine) == me / 2, "team rank %d", gmux_team_rank(mine));
    CHECK(gmux_team_world_rank(mine, gmux_team_rank(mine)) == me, "translation");
    for (uint64_t r = 1; r <= ROUNDS; r++) {
        for (int k = 0; k < gmux_team_size(mine); k++) {
            int p = gmux_team_world_rank(mine, k);
            OK(gmux_put_value(comm, 1, p, w, (uint64_t)me * 8, 1000 + r, 8, NULL));
        }
        OK(gmux_barrier(mine));
        for (int k = 0; k < gmux_team_size(mine); k++) {
            int p = gmux_team_world_rank(mine, k);
            CHECK(win[p] == 1000 + r, "team round %" PRIu64 " slot %d", r, p);
        }
        OK(gmux_barrier(mine));
    }
    /* splits of splits: each half splits itself (every other member, so
     * world stride 4), and the even half splits once more, so that the two
     * halves have made different numbers of splits; then a world split that
     * mixes both halves must still give its members one id */
    int msize = gmux_team_size(mine);
    gmux_team_t *quarter = NULL, *rest = NULL, *mixed = NULL;
    OK(gmux_team_split_strided(mine, 0, 2, (msize + 1) / 2, &quarter));
    CHECK((quarter != NULL) == (me % 4 < 2), "quarter membership");
    if (quarter) {
        CHECK(gmux_team_rank(quarter) == me / 4, "quarter rank %d", gmux_team_rank(quarter));
        for (int k = 0; k < gmux_team_size(quarter); k++)
            CHECK(gmux_team_world_rank(quarter, k) == me % 4 + 4 * k, "quarter translation");
    }
    if (me % 2 == 0 && msize > 1) {
        OK(gmux_team_split_strided(mine, 1, 1, msize - 1, &rest)); /* evens past rank 0 */
        CHECK((rest != NULL) == (me > 0), "rest membership");
    }
    int msz = n > 2 ? n / 2 + 1 : n;
    OK(gmux_team_split_strided(world, 0, 1, msz, &mixed));
    CHECK((mixed != NULL) == (me < msz), "mixed membership");
    uint64_t tag = 2000;
    if (quarter)
        team_rounds(quarter, w, win, tag);
    if (rest)
        team_rounds(rest, w, win, tag + 100);
    OK(gmux_barrier(world));
    if (mixed)
        team_rounds(mixed, w, win, tag + 200);
    gmux_team_destroy(quarter);
    gmux_team_destroy(rest);
    gmux_team_destroy(mixed);
    gmux_team_destroy(mine);
    OK(gmux_barrier(world));
    team_disagreements(world, w, win);
    OK(gmux_window_deregister(comm, w));
    free(win);
    printf("rank %d: teams ok\n", me);
    return 0;
}
