/*
 * The active-set collectives that OpenSHMEM 1.5 deprecates but still
 * requires (deprecated API "must be supported"): shmem_barrier, shmem_sync,
 * shmem_broadcast/collect/fcollect/alltoall/alltoalls 32 and 64, and the
 * TYPENAME_OP_to_all reductions. An active set is the world PEs
 * PE_start + i * 2^logPE_stride for i < PE_size. Its members pass the same
 * symmetric pSync array, every word SHMEM_SYNC_VALUE; the set's barrier
 * uses words 0 (arrivals, at the first member) and 1 (release, at the
 * others), collect32/64 word 2 (the caller's byte count), and each call
 * leaves them as it found them. All the call's state is in its pSync and
 * its arguments, so threads may run collectives on different active sets
 * (each with its own pSync, as the specification asks) at once. The data
 * moves as in the team collectives (coll.c), on the set's members; pWrk is
 * not needed.
 */
#include "shmem/internal.h"

static shm_coll_t aset(int start, int logstride, int size, long *psync, const char *call)
{
    shm_need_init(call);
    const shm_state_t *s = &shm_state;
    if (logstride < 0 || logstride > 30 || size < 1 || start < 0 ||
        start + (int64_t)(size - 1) * ((int64_t)1 << logstride) >= s->npes)
        shm_die(call,
                "invalid active set (PE_start %d, logPE_stride %d, PE_size %d; the job has %d "
                "PEs)",
                start, logstride, size, s->npes);
    int stride = 1 << logstride, d = s->me - start;
    if (d < 0 || d % stride || d / stride >= size)
        shm_die(call, "this PE is not in the active set (PE_start %d, logPE_stride %d, PE_size %d)",
                start, logstride, size);
    shm_translate(psync, 2 * sizeof(*psync), call);
    return (shm_coll_t){size, d / stride, NULL, start, stride, psync, call};
}

struct aset_wait {
    long *word;
    long want;
};

static bool aset_reached(void *p)
{
    const struct aset_wait *w = p;
    return __atomic_load_n(w->word, __ATOMIC_ACQUIRE) >= w->want;
}

static void aset_wait_for(long *word, long want, const char *call)
{
    struct aset_wait w = {word, want};
    if (!aset_reached(&w))
        shm_wait(aset_reached, &w, call);
}

/* The first member counts the others in and then releases each: nobody
 * arrives for the next use of pSync before its release, and the release
 * comes after the count was reset, so back-to-back calls are safe. */
void shm_aset_sync(const shm_coll_t *c, bool quiet)
{
    if (quiet)
        for (uint32_t i = 0; i < SHM_NET_CONTEXTS; i++)
            shm_check(gmux_quiet(shm_state.comm, i), c->call);
    if (c->n == 1)
        return;
    long *arrive = &c->psync[SHM_PSYNC_ARRIVE], *release = &c->psync[SHM_PSYNC_RELEASE];
    if (c->me == 0) {
        aset_wait_for(arrive, c->n - 1, c->call);
        __atomic_store_n(arrive, SHMEM_SYNC_VALUE, __ATOMIC_RELAXED);
        for (int i = 1; i < c->n; i++)
            shm_amo(0, shm_coll_world(c, i), release, GMUX_AMO_SET, sizeof(long), 1, 0, c->call);
    } else {
        shm_amo(0, shm_coll_world(c, 0), arrive, GMUX_AMO_ADD, sizeof(long), 1, 0, c->call);
        aset_wait_for(release, 1, c->call);
        __atomic_store_n(release, SHMEM_SYNC_VALUE, __ATOMIC_RELAXED);
    }
}

GMUX_API void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    shm_coll_t c = aset(PE_start, logPE_stride, PE_size, pSync, "shmem_barrier");
    shm_aset_sync(&c, true);
}

GMUX_API void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    shm_coll_t c = aset(PE_start, logPE_stride, PE_size, pSync, "shmem_sync");
    shm_aset_sync(&c, false);
}

#define SHM_DEF_ASET_COLL(BITS)                                                                    \
    GMUX_API void shmem_broadcast##BITS(void *dest, const void *source, size_t nelems,             \
                                        int PE_root, int PE_start, int logPE_stride, int PE_size,  \
                                        long *pSync)                                               \
    {                                                                                              \
        shm_coll_t c = aset(PE_start, logPE_stride, PE_size, pSync, "shmem_broadcast" #BITS);      \
        /* the active-set form leaves the root's dest alone */                                     \
        shm_coll_bcast(&c, dest, source, nelems *(BITS / 8), PE_root, false);                      \
    }                                                                                              \
    GMUX_API void shmem_collect##BITS(void *dest, const void *source, size_t nelems, int PE_start, \
                                      int logPE_stride, int PE_size, long *pSync)                  \
    {                                                                                              \
        shm_coll_t c = aset(PE_start, logPE_stride, PE_size, pSync, "shmem_collect" #BITS);        \
        shm_coll_collect(&c, dest, source, nelems *(BITS / 8));                                    \
    }                                                                                              \
    GMUX_API void shmem_fcollect##BITS(void *dest, const void *source, size_t nelems,              \
                                       int PE_start, int logPE_stride, int PE_size, long *pSync)   \
    {                                                                                              \
        shm_coll_t c = aset(PE_start, logPE_stride, PE_size, pSync, "shmem_fcollect" #BITS);       \
        shm_coll_fcollect(&c, dest, source, nelems *(BITS / 8));                                   \
    }                                                                                              \
    GMUX_API void shmem_alltoall##BITS(void *dest, const void *source, size_t nelems,              \
                                       int PE_start, int logPE_stride, int PE_size, long *pSync)   \
    {                                                                                              \
        shm_coll_t c = aset(PE_start, logPE_stride, PE_size, pSync, "shmem_alltoall" #BITS);       \
        shm_coll_alltoalls(&c, dest, source, 1, 1, nelems, BITS / 8);                              \
    }                                                                                              \
    GMUX_API void shmem_alltoalls##BITS(void *dest, const void *source, ptrdiff_t dst,             \
                                        ptrdiff_t sst, size_t nelems, int PE_start,                \
                                        int logPE_stride, int PE_size, long *pSync)                \
    {                                                                                              \
        shm_coll_t c = aset(PE_start, logPE_stride, PE_size, pSync, "shmem_alltoalls" #BITS);      \
        shm_coll_alltoalls(&c, dest, source, dst, sst, nelems, BITS / 8);                          \
    }
SHM_DEF_ASET_COLL(32)
SHM_DEF_ASET_COLL(64)

#define SHM_DEF_TO_ALL(T, N, OP)                                                                   \
    SHM_DEF_COMBINE(T, N, OP)                                                                      \
    GMUX_API void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start,   \
                                            int logPE_stride, int PE_size, T *pWrk, long *pSync)   \
    {                                                                                              \
        (void)pWrk; /* the combining happens in private memory */                                  \
        shm_coll_t c =                                                                             \
            aset(PE_start, logPE_stride, PE_size, pSync, "shmem_" #N "_" #OP "_to_all");           \
        if (nreduce < 0)                                                                           \
            shm_die(c.call, "negative nreduce %d", nreduce);                                       \
        shm_coll_reduce(&c, dest, source, (size_t)nreduce, sizeof(T), shm_combine_##N##_##OP);     \
    }
#define SHM_DEF_TO_ALL_BIT(T, N)   GMUX_SHMEM_BIT_OPS(SHM_DEF_TO_ALL, T, N)
#define SHM_DEF_TO_ALL_ARITH(T, N) GMUX_SHMEM_ARITH_OPS(SHM_DEF_TO_ALL, T, N)
GMUX_SHMEM_TO_ALL_BIT_TYPES(SHM_DEF_TO_ALL_BIT)
GMUX_SHMEM_TO_ALL_ARITH_TYPES(SHM_DEF_TO_ALL_ARITH)
#define SHM_DEF_TO_ALL_COMPLEX(T, N) GMUX_SHMEM_COMPLEX_OPS(SHM_DEF_TO_ALL, T, N)
GMUX_SHMEM_REDUCE_COMPLEX_TYPES(SHM_DEF_TO_ALL_COMPLEX)
