/*
 * Contexts and teams. A context is a net context (an ordered stream per
 * peer, quieted on its own); SHMEM_CTX_DEFAULT is net context 0. When the
 * net's contexts are all taken, new contexts share them round robin (a
 * quiet of a shared context also completes its sibling's operations, which
 * the specification allows). Teams are net teams (strided subsets of the
 * world).
 */
#include <stdlib.h>

#include "shmem/internal.h"

static int ctx_create(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    shm_need_init("shmem_ctx_create");
    if (!ctx)
        return 1;
    *ctx = SHMEM_CTX_INVALID; /* what a failed creation leaves (OpenSHMEM 1.5) */
    shmem_ctx_t c = calloc(1, sizeof(*c));
    if (!c)
        return 1;
    shm_state_t *s = &shm_state;
    pthread_mutex_lock(&s->lock);
    uint32_t net = 0;
    for (uint32_t i = 1; i < SHM_NET_CONTEXTS && !net; i++)
        if (!s->ctx_users[i])
            net = i;
    if (!net) /* all taken: share */
        net = 1 + s->next_shared++ % (SHM_NET_CONTEXTS - 1);
    s->ctx_users[net]++;
    *c = (struct shmem_ctx_s){net, team, options, true, s->ctxs};
    s->ctxs = c;
    pthread_mutex_unlock(&s->lock);
    *ctx = c;
    return 0;
}

GMUX_API int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
    return ctx_create(SHMEM_TEAM_WORLD, options, ctx);
}

GMUX_API int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    if (!team || !team->net) {
        if (ctx)
            *ctx = SHMEM_CTX_INVALID;
        return 1;
    }
    return ctx_create(team, options, ctx);
}

GMUX_API void shmem_ctx_destroy(shmem_ctx_t ctx)
{
    if (!ctx || ctx == SHMEM_CTX_DEFAULT)
        return;
    uint32_t net = shm_ctx_net(ctx, "shmem_ctx_destroy");
    shm_check(gmux_quiet(shm_state.comm, net), "shmem_ctx_destroy");
    /* free for a new context only when no other context still uses it */
    pthread_mutex_lock(&shm_state.lock);
    if (net != 0 && shm_state.ctx_users[net] > 0)
        shm_state.ctx_users[net]--;
    for (shmem_ctx_t *p = &shm_state.ctxs; *p; p = &(*p)->next)
        if (*p == ctx) {
            *p = ctx->next;
            break;
        }
    pthread_mutex_unlock(&shm_state.lock);
    ctx->used = false;
    free(ctx);
}

GMUX_API int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
    if (!ctx || !team) {
        if (team)
            *team = SHMEM_TEAM_INVALID;
        return 1;
    }
    *team = ctx->team ? ctx->team : SHMEM_TEAM_WORLD;
    return 0;
}

GMUX_API int shmem_team_my_pe(shmem_team_t team)
{
    shm_need_init("shmem_team_my_pe");
    return team && team->net ? gmux_team_rank(team->net) : -1;
}

GMUX_API int shmem_team_n_pes(shmem_team_t team)
{
    shm_need_init("shmem_team_n_pes");
    return team && team->net ? gmux_team_size(team->net) : -1;
}

GMUX_API int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)
{
    if (!team || !team->net || !config)
        return 1;
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS)
        config->num_contexts = team->config.num_contexts;
    return 0;
}

GMUX_API int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    shm_need_init("shmem_team_translate_pe");
    if (!src_team || !src_team->net || !dest_team || !dest_team->net)
        return -1;
    int w = gmux_team_world_rank(src_team->net, src_pe);
    if (w < 0)
        return -1;
    int n = gmux_team_size(dest_team->net);
    for (int r = 0; r < n; r++) /* teams are small; a scan is clear */
        if (gmux_team_world_rank(dest_team->net, r) == w)
            return r;
    return -1;
}

GMUX_API int shmem_team_split_strided(shmem_team_t parent, int start, int stride, int size,
                                      const shmem_team_config_t *config, long config_mask,
                                      shmem_team_t *new_team)
{
    shm_need_init("shmem_team_split_strided");
    if (!new_team)
        return 1;
    *new_team = SHMEM_TEAM_INVALID;
    if (!parent || !parent->net)
        return 1;
    if (size == 1 && stride == 0)
        stride = 1; /* a one-PE team may give any stride */
    gmux_team_t *t = NULL;
    gmux_status_t st = gmux_team_split_strided(parent->net, start, stride, size, &t);
    /* the split is collective: keep the members in step before use */
    gmux_status_t bs = gmux_barrier(parent->net);
    if (st != GMUX_OK || bs != GMUX_OK) {
        gmux_team_destroy(t);
        return 1;
    }
    if (!t)
        return 0;
    shmem_team_t nt = calloc(1, sizeof(*nt));
    if (!nt) {
        gmux_team_destroy(t);
        return 1;
    }
    nt->net = t;
    if (config && (config_mask & SHMEM_TEAM_NUM_CONTEXTS))
        nt->config.num_contexts = config->num_contexts;
    pthread_mutex_lock(&shm_state.lock);
    nt->next = shm_state.teams;
    shm_state.teams = nt;
    pthread_mutex_unlock(&shm_state.lock);
    *new_team = nt;
    return 0;
}

GMUX_API int shmem_team_split_2d(shmem_team_t parent, int xrange,
                                 const shmem_team_config_t *xaxis_config, long xaxis_mask,
                                 shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                                 long yaxis_mask, shmem_team_t *yaxis_team)
{
    shm_need_init("shmem_team_split_2d");
    if (!xaxis_team || !yaxis_team)
        return 1;
    *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
    if (!parent || !parent->net || xrange < 1)
        return 1;
    int n = gmux_team_size(parent->net);
    if (xrange > n)
        xrange = n;
    int rows = (n + xrange - 1) / xrange;
    int rc = 0;
    shmem_team_t x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
    /* every member calls every split in the same order (collective), and a
     * failed split fails on every member, so all see the same rc */
    for (int r = 0; r < rows; r++) {
        shmem_team_t t;
        int sz = r == rows - 1 ? n - r * xrange : xrange;
        rc |= shmem_team_split_strided(parent, r * xrange, 1, sz, xaxis_config, xaxis_mask, &t);
        if (t)
            x = t;
    }
    for (int c = 0; c < xrange; c++) {
        shmem_team_t t;
        int sz = (n - 1 - c) / xrange + 1;
        rc |= shmem_team_split_strided(parent, c, xrange, sz, yaxis_config, yaxis_mask, &t);
        if (t)
            y = t;
    }
    if (rc) { /* OpenSHMEM 1.5: if any team cannot be made, both are invalid everywhere */
        shmem_team_destroy(x);
        shmem_team_destroy(y);
        return 1;
    }
    *xaxis_team = x;
    *yaxis_team = y;
    return 0;
}

GMUX_API int shmem_team_sync(shmem_team_t team)
{
    shm_need_init("shmem_team_sync");
    if (!team || !team->net)
        return 1;
    shm_check(gmux_barrier(team->net), "shmem_team_sync");
    return 0;
}

GMUX_API void shmem_team_destroy(shmem_team_t team)
{
    if (!team || team->predefined)
        return;
    pthread_mutex_lock(&shm_state.lock);
    for (shmem_team_t *p = &shm_state.teams; *p; p = &(*p)->next)
        if (*p == team) {
            *p = team->next;
            break;
        }
    pthread_mutex_unlock(&shm_state.lock);
    gmux_team_destroy(team->net);
    free(team);
}

void shm_team_fini(void)
{
    shm_state_t *s = &shm_state;
    pthread_mutex_lock(&s->lock);
    shmem_ctx_t c = s->ctxs;
    shmem_team_t t = s->teams;
    s->ctxs = NULL;
    s->teams = NULL;
    for (uint32_t i = 0; i < SHM_NET_CONTEXTS; i++)
        s->ctx_users[i] = 0;
    pthread_mutex_unlock(&s->lock);
    while (c) { /* finalize's barrier completed their operations */
        shmem_ctx_t next = c->next;
        c->used = false;
        free(c);
        c = next;
    }
    while (t) {
        shmem_team_t next = t->next;
        gmux_team_destroy(t->net);
        free(t);
        t = next;
    }
}
