/*
 * Teams: the world and strided subsets, and the barrier over them. The
 * barrier is a dissemination barrier over the net itself: in round k each
 * member signals (rank + 2^k) mod size on a reserved signal word of the team
 * and waits for its own word to reach the barrier's epoch. Reserved words
 * sit before the user's signals: team id * NET_BARRIER_ROUNDS + round, then
 * the agreement words a split uses to agree on the child's id.
 */
#include <stdlib.h>

#include "common/export.h"
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

/* The largest v of the team's members: a dissemination all-reduce (max is
 * idempotent, so overlapping coverage for sizes that are not powers of two
 * does no harm). Round k SETs (epoch << 16 | running max) on the agreement
 * word k of (rank + 2^k) mod size and waits for its own to carry this epoch.
 * A barrier over the team closes it, so that no member's next agreement
 * overwrites a word another has not read yet. */
static gmux_status_t team_agree_max(gmux_team_t *team, uint32_t v, uint32_t *max_p)
{
    gmux_comm_t *comm = team->comm;
    uint64_t epoch = ++team->agreements;
    uint32_t base = NET_AGREE_BASE + (uint32_t)team->id * NET_BARRIER_ROUNDS;
    uint32_t m = v;
    gmux_status_t st = GMUX_OK;
    for (int k = 0, dist = 1; dist < team->size && st == GMUX_OK; k++, dist *= 2) {
        int to = gmux_team_world_rank(team, (team->rank + dist) % team->size);
        st = net_signal_any(comm, 0, to, base + (uint32_t)k, GMUX_SIGNAL_SET, epoch << 16 | m);
        if (st == GMUX_OK)
            st = net_wait_signal_any(comm, base + (uint32_t)k, epoch << 16);
        if (st == GMUX_OK) {
            uint64_t w =
                atomic_load_explicit(&comm->signals[base + (uint32_t)k], memory_order_acquire);
            if ((w & 0xffff) > m)
                m = (uint32_t)(w & 0xffff);
        }
    }
    if (st == GMUX_OK)
        st = gmux_barrier(team);
    if (st == GMUX_OK)
        *max_p = m;
    return st;
}

GMUX_API gmux_status_t gmux_team_split_strided(gmux_team_t *parent, int start, int stride, int size,
                                               gmux_team_t **team_p)
{
    if (!parent || !team_p || start < 0 || stride < 1 || size < 1 ||
        start + (int64_t)(size - 1) * stride >= parent->size)
        return GMUX_ERR_INVALID;
    gmux_comm_t *comm = parent->comm;
    *team_p = NULL;
    /* A team's id picks its barrier words, so its members must agree on it.
     * Per-rank counters drift apart once subsets split on their own (a
     * split of a split): the parent's members agree on the largest next id
     * any of them has. A one-member team never signals and needs none. */
    int id = 0;
    if (size > 1) {
        uint32_t next = 0;
        gmux_status_t st = team_agree_max(parent, (uint32_t)comm->nteams, &next);
        if (st != GMUX_OK)
            return st;
        if (next >= NET_MAX_TEAMS)
            return GMUX_ERR_CAPACITY; /* the same answer on every member */
        id = (int)next;
        comm->nteams = id + 1;
    }
    parent->splits++;
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
