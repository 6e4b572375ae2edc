/*
 * Collectives on teams: broadcast, collect, fcollect, alltoall, alltoalls
 * and the reductions. Each is pull-based: a team barrier (every member's
 * source is ready), gets from the members (the caller writes only its own
 * dest), and a closing barrier (nobody changes a source while others may
 * still read it). The cores take the members of the call (shm_coll_t), so
 * the deprecated active-set forms (aset.c) run the same code. So dest may alias source where the
 * specification allows it (reductions), and no internal buffers travel over the net.
 */
#include <stdlib.h>
#include <string.h>

#include "shmem/internal.h"

int shm_coll_world(const shm_coll_t *c, int i)
{
    return c->team ? gmux_team_world_rank(c->team, i) : c->start + i * c->stride;
}

void shm_coll_sync(const shm_coll_t *c)
{
    if (c->team)
        shm_check(gmux_barrier(c->team), c->call);
    else
        shm_aset_sync(c, false);
}

static shm_coll_t coll_team(shmem_team_t team, const char *call)
{
    shm_need_init(call);
    if (!team || !team->net)
        shm_die(call, "invalid team");
    return (shm_coll_t){
        gmux_team_size(team->net), gmux_team_rank(team->net), team->net, 0, 0, NULL, call};
}

void shm_coll_bcast(const shm_coll_t *c, void *dest, const void *source, size_t bytes, int root,
                    bool root_dest)
{
    if (root < 0 || root >= c->n)
        shm_die(c->call, "invalid root PE %d (%d PEs take part)", root, c->n);
    shm_translate(dest, bytes, c->call);
    shm_coll_sync(c);
    if (c->me != root)
        shm_get_bytes(0, shm_coll_world(c, root), dest, source, bytes, c->call);
    else if (root_dest && dest != source)
        memmove(dest, source, bytes);
    shm_coll_sync(c);
}

void shm_coll_fcollect(const shm_coll_t *c, void *dest, const void *source, size_t bytes)
{
    shm_translate(dest, bytes * (size_t)c->n, c->call);
    shm_coll_sync(c);
    for (int j = 0; j < c->n; j++)
        shm_get_bytes(0, shm_coll_world(c, j), (char *)dest + (size_t)j * bytes, source, bytes,
                      c->call);
    shm_coll_sync(c);
}

/* Where the caller keeps its contribution's byte count for the others to
 * read: a word per net team id in the scratch area, or word
 * SHM_PSYNC_COLLECT of an active set's pSync, which the specification gives
 * each concurrent active-set collective of its own. */
static uint64_t *coll_size_word(const shm_coll_t *c)
{
    if (!c->team) {
        long *w = &c->psync[SHM_PSYNC_COLLECT];
        shm_translate(w, sizeof(*w), c->call);
        return (uint64_t *)w;
    }
    int id = gmux_team_id(c->team);
    if (id < 0 || id >= SHM_COLLECT_WORDS)
        shm_die(c->call, "team id %d out of range", id);
    return (uint64_t *)(shm_state.heap + SHM_SCRATCH_COLLECT) + id;
}

void shm_coll_collect(const shm_coll_t *c, void *dest, const void *source, size_t bytes)
{
    /* the size word of the call: its team's, or its active set's in the
     * caller's pSync; a collect of another team or active set may run in
     * another thread at the same time; a team of one reads no word */
    uint64_t *mine = coll_size_word(c);
    shm_translate(source, bytes, c->call);
    if (c->n > 1)
        __atomic_store_n(mine, (uint64_t)bytes, __ATOMIC_RELEASE);
    shm_coll_sync(c);
    size_t off = 0;
    for (int j = 0; j < c->n; j++) {
        uint64_t len = bytes;
        int w = shm_coll_world(c, j);
        if (j != c->me)
            shm_get_bytes(0, w, &len, mine, sizeof(len), c->call);
        shm_translate((char *)dest + off, len, c->call);
        shm_get_bytes(0, w, (char *)dest + off, source, len, c->call);
        off += len;
    }
    shm_coll_sync(c);
    if (!c->team) /* every member has read it: pSync as it was found */
        __atomic_store_n(mine, (uint64_t)SHMEM_SYNC_VALUE, __ATOMIC_RELAXED);
}

void shm_coll_alltoalls(const shm_coll_t *c, void *dest, const void *source, ptrdiff_t dst,
                        ptrdiff_t sst, size_t nelems, size_t esize)
{
    if (dst < 1 || sst < 1)
        shm_die(c->call, "strides must be positive");
    shm_coll_sync(c);
    for (int j = 0; j < c->n; j++) {
        int w = shm_coll_world(c, j);
        for (size_t k = 0; k < nelems; k++) {
            size_t si = ((size_t)c->me * nelems + k) * (size_t)sst;
            size_t di = ((size_t)j * nelems + k) * (size_t)dst;
            if (sst == 1 && dst == 1) { /* one block at once */
                shm_get_bytes(0, w, (char *)dest + di * esize, (const char *)source + si * esize,
                              nelems * esize, c->call);
                break;
            }
            shm_get_bytes(0, w, (char *)dest + di * esize, (const char *)source + si * esize, esize,
                          c->call);
        }
    }
    shm_coll_sync(c);
}

static int bcast(shmem_team_t team, void *dest, const void *source, size_t bytes, int root,
                 const char *call)
{
    shm_coll_t c = coll_team(team, call);
    shm_coll_bcast(&c, dest, source, bytes, root, true); /* 1.5: the root's dest too */
    return 0;
}

static int fcollect(shmem_team_t team, void *dest, const void *source, size_t bytes,
                    const char *call)
{
    shm_coll_t c = coll_team(team, call);
    shm_coll_fcollect(&c, dest, source, bytes);
    return 0;
}

static int collect(shmem_team_t team, void *dest, const void *source, size_t bytes,
                   const char *call)
{
    shm_coll_t c = coll_team(team, call);
    shm_coll_collect(&c, dest, source, bytes);
    return 0;
}

static int alltoalls(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                     ptrdiff_t sst, size_t nelems, size_t esize, const char *call)
{
    shm_coll_t c = coll_team(team, call);
    shm_coll_alltoalls(&c, dest, source, dst, sst, nelems, esize);
    return 0;
}

#define SHM_DEF_COLL(T, N)                                                                         \
    GMUX_API int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems, \
                                       int PE_root)                                                \
    {                                                                                              \
        return bcast(team, dest, source, nelems * sizeof(T), PE_root, "shmem_" #N "_broadcast");   \
    }                                                                                              \
    GMUX_API int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems)   \
    {                                                                                              \
        return collect(team, dest, source, nelems * sizeof(T), "shmem_" #N "_collect");            \
    }                                                                                              \
    GMUX_API int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems)  \
    {                                                                                              \
        return fcollect(team, dest, source, nelems * sizeof(T), "shmem_" #N "_fcollect");          \
    }                                                                                              \
    GMUX_API int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems)  \
    {                                                                                              \
        return alltoalls(team, dest, source, 1, 1, nelems, sizeof(T), "shmem_" #N "_alltoall");    \
    }                                                                                              \
    GMUX_API int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, \
                                       ptrdiff_t sst, size_t nelems)                               \
    {                                                                                              \
        return alltoalls(team, dest, source, dst, sst, nelems, sizeof(T),                          \
                         "shmem_" #N "_alltoalls");                                                \
    }
GMUX_SHMEM_RMA_TYPES(SHM_DEF_COLL)

GMUX_API int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                                int PE_root)
{
    return bcast(team, dest, source, nelems, PE_root, "shmem_broadcastmem");
}

GMUX_API int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return collect(team, dest, source, nelems, "shmem_collectmem");
}

GMUX_API int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return fcollect(team, dest, source, nelems, "shmem_fcollectmem");
}

GMUX_API int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return alltoalls(team, dest, source, 1, 1, nelems, 1, "shmem_alltoallmem");
}

GMUX_API int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                                ptrdiff_t sst, size_t nelems)
{
    return alltoalls(team, dest, source, dst, sst, nelems, 1, "shmem_alltoallsmem");
}

/* --- reductions ----------------------------------------------------------- */

void shm_coll_reduce(const shm_coll_t *c, void *dest, const void *source, size_t n, size_t esize,
                     shm_combine_fn combine)
{
    size_t bytes = n * esize;
    shm_translate(dest, bytes, c->call);
    shm_translate(source, bytes, c->call);
    char *acc = malloc(bytes ? bytes : 1), *in = malloc(bytes ? bytes : 1);
    if (!acc || !in)
        shm_die(c->call, "out of memory");
    memcpy(acc, source, bytes);
    shm_coll_sync(c);
    for (int j = 0; j < c->n; j++) {
        if (j == c->me)
            continue;
        shm_get_bytes(0, shm_coll_world(c, j), in, source, bytes, c->call);
        combine(acc, in, n);
    }
    shm_coll_sync(c); /* every source read: dest (maybe = source) may change */
    memcpy(dest, acc, bytes);
    free(in);
    free(acc);
}

static int reduce(shmem_team_t team, void *dest, const void *source, size_t n, size_t esize,
                  shm_combine_fn combine, const char *call)
{
    shm_coll_t c = coll_team(team, call);
    shm_coll_reduce(&c, dest, source, n, esize, combine);
    return 0;
}

#define SHM_DEF_REDUCE(T, N, OP)                                                                   \
    SHM_DEF_COMBINE(T, N, OP)                                                                      \
    GMUX_API int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source,            \
                                           size_t nreduce)                                         \
    {                                                                                              \
        return reduce(team, dest, source, nreduce, sizeof(T), shm_combine_##N##_##OP,              \
                      "shmem_" #N "_" #OP "_reduce");                                              \
    }
#define SHM_DEF_REDUCE_BIT(T, N)   GMUX_SHMEM_BIT_OPS(SHM_DEF_REDUCE, T, N)
#define SHM_DEF_REDUCE_ARITH(T, N) GMUX_SHMEM_ARITH_OPS(SHM_DEF_REDUCE, T, N)
GMUX_SHMEM_REDUCE_BIT_TYPES(SHM_DEF_REDUCE_BIT)
GMUX_SHMEM_REDUCE_ARITH_TYPES(SHM_DEF_REDUCE_ARITH)
#define SHM_DEF_REDUCE_COMPLEX(T, N) GMUX_SHMEM_COMPLEX_OPS(SHM_DEF_REDUCE, T, N)
GMUX_SHMEM_REDUCE_COMPLEX_TYPES(SHM_DEF_REDUCE_COMPLEX)
