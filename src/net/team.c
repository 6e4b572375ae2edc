/*
 * Teams: the world and strided subsets, and the barrier over them. The
 * barrier is a dissemination barrier over the net itself: in round k each
 * member signals (rank + 2^k) mod size on a reserved signal word of the team
 * and waits for its own word to reach the barrier's epoch. Reserved words
 * sit before the user's signals: team id * NET_BARRIER_ROUNDS + round; the
 * agreement words a split uses to check its arguments and agree on the
 * child's id follow the user's.
 */
#include <stdlib.h>

#include "common/export.h"
#include "common/log.h"
#include "net/internal.h"

gmux_status_t net_signal_any(gmux_comm_t *comm, uint32_t ctx, int peer, uint32_t signal_id,
                             gmux_signal_op_t op, uint64_t value);
gmux_status_t net_wait_signal_any(gmux_comm_t *comm, uint32_t id, uint64_t value);

GMUX_API gmux_team_t *gmux_team_world(gmux_comm_t *comm)
{
    return comm ? &comm->world : NULL;
}

GMUX_API int gmux_team_rank(const gmux_team_t *team)
{
    return team ? team->rank : -1;
}

GMUX_API int gmux_team_size(const gmux_team_t *team)
{
    return team ? team->size : 0;
}

GMUX_API int gmux_team_world_rank(const gmux_team_t *team, int r)
{
    if (!team || r < 0 || r >= team->size)
        return -1;
    return team->start + r * team->stride;
}

/* Split agreement: every member of the parent contributes AGREE_FIELDS
 * fields of 12 bits and learns the largest of each over all members; a
 * field sent together with its complement (0xfff - v) gives the smallest
 * too. It is a dissemination all-reduce (max is idempotent, so overlapping
 * coverage for sizes that are not powers of two does no harm): round k
 * SETs the running maxima, packed four to a word under a 16-bit epoch, on
 * the agreement words of round k of (rank + 2^k) mod size, and waits until
 * its own words carry this epoch. A barrier over the team closes it, so no
 * member's next agreement overwrites a word another has not read yet; that
 * also makes the epoch's wrap harmless (a word holds this agreement's epoch
 * or the last one's). */
#define AGREE_FIELD_MAX 0xfffu
#define AGREE_PER_WORD  4
#define AGREE_FIELDS    (NET_AGREE_WORDS * AGREE_PER_WORD)

struct agree_wait {
    _Atomic uint64_t *word;
    uint64_t epoch;
};

static bool agree_arrived(gmux_comm_t *comm, void *arg)
{
    (void)comm;
    struct agree_wait *a = arg;
    return atomic_load_explicit(a->word, memory_order_acquire) >> 48 == a->epoch;
}

static uint32_t agree_word(const gmux_team_t *team, int round, int w)
{
    const gmux_comm_t *comm = team->comm;
    return NET_SIG_RESERVED + comm->nsig +
           ((uint32_t)team->id * NET_BARRIER_ROUNDS + (uint32_t)round) * NET_AGREE_WORDS +
           (uint32_t)w;
}

static gmux_status_t team_agree_max(gmux_team_t *team, uint32_t f[AGREE_FIELDS])
{
    gmux_comm_t *comm = team->comm;
    uint64_t epoch = team->agreements++ % NET_AGREE_EPOCHS + 1; /* never 0 */
    gmux_status_t st = GMUX_OK;
    for (int k = 0, dist = 1; dist < team->size && st == GMUX_OK; k++, dist *= 2) {
        int to = gmux_team_world_rank(team, (team->rank + dist) % team->size);
        for (int w = 0; w < NET_AGREE_WORDS && st == GMUX_OK; w++) {
            uint64_t v = epoch << 48;
            for (int i = 0; i < AGREE_PER_WORD; i++)
                v |= (uint64_t)(f[w * AGREE_PER_WORD + i] & AGREE_FIELD_MAX) << (12 * i);
            st = net_signal_any(comm, 0, to, agree_word(team, k, w), GMUX_SIGNAL_SET, v);
        }
        for (int w = 0; w < NET_AGREE_WORDS && st == GMUX_OK; w++) {
            struct agree_wait a = {&comm->signals[agree_word(team, k, w)], epoch};
            st = net_wait(comm, agree_arrived, &a, net_timeout_s(comm), true);
            if (st != GMUX_OK)
                break;
            uint64_t v = atomic_load_explicit(a.word, memory_order_acquire);
            for (int i = 0; i < AGREE_PER_WORD; i++) {
                uint32_t got = (uint32_t)(v >> (12 * i)) & AGREE_FIELD_MAX;
                uint32_t *mine = &f[w * AGREE_PER_WORD + i];
                *mine = got > *mine ? got : *mine;
            }
        }
    }
    return st == GMUX_OK ? gmux_barrier(team) : st;
}

enum { ARG_SIZE, ARG_START, ARG_STRIDE, NARGS };
static const char *const arg_names[NARGS] = {"size", "start", "stride"};

GMUX_API gmux_status_t gmux_team_split_strided(gmux_team_t *parent, int start, int stride, int size,
                                               gmux_team_t **team_p)
{
    if (!parent)
        return GMUX_ERR_INVALID;
    if (team_p)
        *team_p = NULL;
    bool ok = team_p && start >= 0 && stride >= 1 && size >= 1 &&
              start + (int64_t)(size - 1) * stride < parent->size;
    gmux_comm_t *comm = parent->comm;
    /* The parent's members agree, before anything is created, that their
     * arguments are valid and the same (a one-member team's start and stride
     * may differ: each member makes its own), and on the new team's id,
     * which picks its barrier words: per-rank counters drift apart once
     * subsets split on their own (a split of a split), so the id is the
     * largest next id any member has. One bad member fails them all at once
     * instead of leaving the others to time out. */
    int id = 0;
    if (parent->size > 1) {
        /* fields: next id, invalid here, then each argument (the team's
         * size less one, start, stride: all below the parent's 4096 ranks
         * at most) with its complement */
        uint32_t f[AGREE_FIELDS] = {(uint32_t)comm->nteams, !ok};
        uint32_t arg[NARGS] = {0};
        if (ok) {
            arg[ARG_SIZE] = (uint32_t)size - 1;
            arg[ARG_START] = size > 1 ? (uint32_t)start : 0;
            arg[ARG_STRIDE] = size > 1 ? (uint32_t)stride : 0;
        }
        for (int a = 0; a < NARGS; a++) {
            f[2 + 2 * a] = arg[a];
            f[3 + 2 * a] = AGREE_FIELD_MAX - arg[a];
        }
        gmux_status_t st = team_agree_max(parent, f);
        if (st != GMUX_OK)
            return st;
        if (f[1]) {
            if (ok)
                COM_WARN(NET, "team split: another member passed invalid arguments");
            else
                COM_WARN(NET, "team split (start %d, stride %d, size %d of a %d-member team): %s",
                         start, stride, size, parent->size,
                         team_p ? "not a subset of the team" : "no team pointer");
            return GMUX_ERR_INVALID;
        }
        for (int a = 0; a < NARGS; a++) {
            uint32_t hi = f[2 + 2 * a], lo = AGREE_FIELD_MAX - f[3 + 2 * a];
            if (hi != lo) {
                uint32_t plus = a == ARG_SIZE; /* size was sent less one */
                COM_WARN(NET, "team split: members passed different %ss (%u to %u)", arg_names[a],
                         lo + plus, hi + plus);
                return GMUX_ERR_INVALID;
            }
        }
        if (size > 1) {
            if (f[0] >= NET_MAX_TEAMS)
                return GMUX_ERR_CAPACITY; /* the same answer on every member */
            id = (int)f[0];
            comm->nteams = id + 1;
        }
    } else if (!ok) {
        return GMUX_ERR_INVALID;
    }
    int mine = parent->rank - start;
    if (mine < 0 || mine % stride != 0 || mine / stride >= size)
        return GMUX_OK;
    gmux_team_t *t = calloc(1, sizeof(*t));
    if (!t)
        return GMUX_ERR_NOMEM;
    t->comm = comm;
    t->id = id;
    t->start = gmux_team_world_rank(parent, start);
    t->stride = parent->stride * stride;
    t->size = size;
    t->rank = mine / stride;
    *team_p = t;
    return GMUX_OK;
}

GMUX_API int gmux_team_id(const gmux_team_t *team)
{
    return team->id;
}

GMUX_API void gmux_team_destroy(gmux_team_t *team)
{
    if (team && team != &team->comm->world)
        free(team);
}

GMUX_API gmux_status_t gmux_barrier(gmux_team_t *team)
{
    if (!team)
        return GMUX_ERR_INVALID;
    gmux_comm_t *comm = team->comm;
    gmux_status_t st = GMUX_OK;
    for (uint32_t c = 0; c < comm->nctx && st == GMUX_OK; c++)
        st = gmux_quiet(comm, c);
    if (st != GMUX_OK || team->size == 1)
        return st;
    uint64_t epoch = ++team->epoch;
    uint32_t base = (uint32_t)team->id * NET_BARRIER_ROUNDS;
    for (int k = 0, dist = 1; dist < team->size && st == GMUX_OK; k++, dist *= 2) {
        int to = gmux_team_world_rank(team, (team->rank + dist) % team->size);
        st = net_signal_any(comm, 0, to, base + (uint32_t)k, GMUX_SIGNAL_INC, 1);
        if (st == GMUX_OK)
            st = net_wait_signal_any(comm, base + (uint32_t)k, epoch);
    }
    return st;
}
