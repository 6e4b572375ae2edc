/*
 * Collectives on teams: broadcast, collect, fcollect, alltoall, alltoalls
 * and the reductions. Each is pull-based: a team barrier (every member's
 * source is ready), gets from the members (the caller writes only its own
 * dest), and a closing barrier (nobody changes a source while others may
 * still read it). So dest may alias source where the specification allows
 * it (reductions), and no internal buffers travel over the net.
 */
#include <stdlib.h>
#include <string.h>

#include "shmem/internal.h"

static gmux_team_t *coll_team(shmem_team_t team, const char *call)
{
    shm_need_init(call);
    if (!team || !team->net)
        shm_die(call, "invalid team");
    return team->net;
}

static void coll_sync(gmux_team_t *t, const char *call)
{
    shm_check(gmux_barrier(t), call);
}

static int bcast(shmem_team_t team, void *dest, const void *source, size_t bytes, int root,
                 const char *call)
{
    gmux_team_t *t = coll_team(team, call);
    if (root < 0 || root >= gmux_team_size(t))
        shm_die(call, "invalid root PE %d (the team has %d PEs)", root, gmux_team_size(t));
    shm_translate(dest, bytes, call);
    coll_sync(t, call);
    if (gmux_team_rank(t) != root)
        shm_get_bytes(0, gmux_team_world_rank(t, root), dest, source, bytes, call);
    else if (dest != source)
        memmove(dest, source, bytes);
    coll_sync(t, call);
    return 0;
}

static int fcollect(shmem_team_t team, void *dest, const void *source, size_t bytes,
                    const char *call)
{
    gmux_team_t *t = coll_team(team, call);
    int n = gmux_team_size(t);
    shm_translate(dest, bytes * (size_t)n, call);
    coll_sync(t, call);
    for (int j = 0; j < n; j++)
        shm_get_bytes(0, gmux_team_world_rank(t, j), (char *)dest + (size_t)j * bytes, source,
                      bytes, call);
    coll_sync(t, call);
    return 0;
}

static int collect(shmem_team_t team, void *dest, const void *source, size_t bytes,
                   const char *call)
{
    gmux_team_t *t = coll_team(team, call);
    int n = gmux_team_size(t);
    uint64_t *mine = (uint64_t *)shm_state.heap; /* the scratch word */
    shm_translate(source, bytes, call);
    __atomic_store_n(mine, (uint64_t)bytes, __ATOMIC_RELEASE);
    coll_sync(t, call);
    size_t off = 0;
    for (int j = 0; j < n; j++) {
        uint64_t len;
        int w = gmux_team_world_rank(t, j);
        shm_get_bytes(0, w, &len, mine, sizeof(len), call);
        shm_translate((char *)dest + off, len, call);
        shm_get_bytes(0, w, (char *)dest + off, source, len, call);
        off += len;
    }
    coll_sync(t, call);
    return 0;
}

static int alltoalls(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                     ptrdiff_t sst, size_t nelems, size_t esize, const char *call)
{
    gmux_team_t *t = coll_team(team, call);
    int n = gmux_team_size(t), me = gmux_team_rank(t);
    if (dst < 1 || sst < 1)
        shm_die(call, "strides must be positive");
    coll_sync(t, call);
    for (int j = 0; j < n; j++) {
        int w = gmux_team_world_rank(t, j);
        for (size_t k = 0; k < nelems; k++) {
            size_t si = ((size_t)me * nelems + k) * (size_t)sst;
            size_t di = ((size_t)j * nelems + k) * (size_t)dst;
            if (sst == 1 && dst == 1) { /* one block at once */
                shm_get_bytes(0, w, (char *)dest + di * esize, (const char *)source + si * esize,
                              nelems * esize, call);
                break;
            }
            shm_get_bytes(0, w, (char *)dest + di * esize, (const char *)source + si * esize, esize,
                          call);
        }
    }
    coll_sync(t, call);
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

typedef void (*shm_combine_fn)(void *acc, const void *in, size_t n);

static int reduce(shmem_team_t team, void *dest, const void *source, size_t n, size_t esize,
                  shm_combine_fn combine, const char *call)
{
    gmux_team_t *t = coll_team(team, call);
    int members = gmux_team_size(t), me = gmux_team_rank(t);
    size_t bytes = n * esize;
    shm_translate(dest, bytes, call);
    shm_translate(source, bytes, call);
    char *acc = malloc(bytes ? bytes : 1), *in = malloc(bytes ? bytes : 1);
    if (!acc || !in)
        shm_die(call, "out of memory");
    memcpy(acc, source, bytes);
    coll_sync(t, call);
    for (int j = 0; j < members; j++) {
        if (j == me)
            continue;
        shm_get_bytes(0, gmux_team_world_rank(t, j), in, source, bytes, call);
        combine(acc, in, n);
    }
    coll_sync(t, call); /* every source read: dest (maybe = source) may change */
    memcpy(dest, acc, bytes);
    free(in);
    free(acc);
    return 0;
}

#define SHM_OP_and(a, b)  ((a) & (b))
#define SHM_OP_or(a, b)   ((a) | (b))
#define SHM_OP_xor(a, b)  ((a) ^ (b))
#define SHM_OP_min(a, b)  ((b) < (a) ? (b) : (a))
#define SHM_OP_max(a, b)  ((b) > (a) ? (b) : (a))
#define SHM_OP_sum(a, b)  ((a) + (b))
#define SHM_OP_prod(a, b) ((a) * (b))

#define SHM_DEF_REDUCE(T, N, OP)                                                                   \
    static void shm_combine_##N##_##OP(void *acc, const void *in, size_t n)                        \
    {                                                                                              \
        T *a = acc;                                                                                \
        const T *b = in;                                                                           \
        for (size_t i = 0; i < n; i++)                                                             \
            a[i] = (T)SHM_OP_##OP(a[i], b[i]);                                                     \
    }                                                                                              \
    GMUX_API int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source,            \
                                           size_t nreduce)                                         \
    {                                                                                              \
        return reduce(team, dest, source, nreduce, sizeof(T), shm_combine_##N##_##OP,              \
                      "shmem_" #N "_" #OP "_reduce");                                              \
    }
#define SHM_DEF_REDUCE_BIT(T, N)                                                                   \
    SHM_DEF_REDUCE(T, N, and) SHM_DEF_REDUCE(T, N, or) SHM_DEF_REDUCE(T, N, xor)
#define SHM_DEF_REDUCE_ARITH(T, N)                                                                 \
    SHM_DEF_REDUCE(T, N, min)                                                                      \
    SHM_DEF_REDUCE(T, N, max) SHM_DEF_REDUCE(T, N, sum) SHM_DEF_REDUCE(T, N, prod)
GMUX_SHMEM_REDUCE_BIT_TYPES(SHM_DEF_REDUCE_BIT)
GMUX_SHMEM_REDUCE_ARITH_TYPES(SHM_DEF_REDUCE_ARITH)
