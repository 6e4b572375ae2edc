/*
 * Teams: the world and strided subsets, and the barrier over them. The
 * barrier is a dissemination barrier over the net itself: in round k each
 * member signals (rank + 2^k) mod size on a reserved signal word of the team
 * and waits for its own word to reach the barrier's epoch. Reserved words
 * sit before the user's signals: team id * NET_BARRIER_ROUNDS + round.
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

GMUX_API gmux_status_t gmux_team_split_strided(gmux_team_t *parent, int start, int stride, int size,
                                               gmux_team_t **team_p)
{
    if (!parent || !team_p || start < 0 || stride < 1 || size < 1 ||
        start + (int64_t)(size - 1) * stride >= parent->size)
        return GMUX_ERR_INVALID;
    gmux_comm_t *comm = parent->comm;
    /* ids are handed out in call order, the same on every member */
    if (comm->nteams >= NET_MAX_TEAMS)
        return GMUX_ERR_CAPACITY;
    int id = comm->nteams++;
    parent->splits++;
    *team_p = NULL;
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
