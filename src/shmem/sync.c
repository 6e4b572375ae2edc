/*
 * Point-to-point synchronisation (wait_until, test and their _all, _any,
 * _some and _vector forms), signals read at the target, and ordering
 * (fence, quiet, barrier_all, sync_all).
 *
 * Waits poll the local symmetric words with acquire loads while driving
 * net progress; they fail (message, non-zero exit) when a PE dies or after
 * GMUX_SHMEM_WAIT_TIMEOUT seconds, never hang forever.
 */
#include "shmem/internal.h"

void shm_wait(bool (*cond)(void *), void *arg, const char *call)
{
    shm_need_init(call);
    gmux_status_t st = gmux_wait_cond(shm_state.comm, cond, arg, shm_state.wait_timeout_s);
    if (st == GMUX_ERR_TIMEOUT)
        shm_die(call, "nothing satisfied the wait within GMUX_SHMEM_WAIT_TIMEOUT=%g s",
                shm_state.wait_timeout_s);
    shm_check(st, call);
}

/* One wait/test over an array: kind 0 all, 1 any, 2 some. */
enum { SHM_ALL, SHM_ANY, SHM_SOME };

/* Where the calling thread's next wait_until_any (or test_any) scan
 * starts: one past the index the last one returned, so a series of calls
 * returns every satisfied entry in turn ("must eventually return i",
 * OpenSHMEM 1.5), not always the first. The waits and the tests keep
 * their own, so alternating the two cannot pin either to one entry. */
static _Thread_local size_t shm_any_next[2]; /* [wait] */
static _Thread_local size_t *shm_any_cur;    /* the one of the running call */

#define SHM_DEF_SYNC(T, N)                                                                         \
    struct shm_sync_##N {                                                                          \
        T *ivars;                                                                                  \
        size_t nelems;                                                                             \
        const int *status;                                                                         \
        int cmp;                                                                                   \
        T value;                                                                                   \
        const T *values; /* vector forms */                                                        \
        int kind;                                                                                  \
        size_t *indices;                                                                           \
        size_t found; /* all: 1 if satisfied; any: index; some: count */                           \
    };                                                                                             \
    static bool shm_sync_eval_##N(void *p)                                                         \
    {                                                                                              \
        struct shm_sync_##N *a = p;                                                                \
        size_t count = 0, active = 0;                                                              \
        a->found = a->kind == SHM_ANY ? SIZE_MAX : 0;                                              \
        size_t first = a->kind == SHM_ANY && a->nelems ? *shm_any_cur % a->nelems : 0;             \
        for (size_t j = 0; j < a->nelems; j++) {                                                   \
            size_t i = first + j < a->nelems ? first + j : first + j - a->nelems;                  \
            if (a->status && a->status[i])                                                         \
                continue;                                                                          \
            active++;                                                                              \
            T v = __atomic_load_n(&a->ivars[i], __ATOMIC_ACQUIRE);                                 \
            T want = a->values ? a->values[i] : a->value;                                          \
            if (!SHM_CMP(v, a->cmp, want)) {                                                       \
                if (a->kind == SHM_ALL)                                                            \
                    return false;                                                                  \
                continue;                                                                          \
            }                                                                                      \
            if (a->kind == SHM_ANY) {                                                              \
                a->found = i;                                                                      \
                *shm_any_cur = i + 1;                                                              \
                return true;                                                                       \
            }                                                                                      \
            if (a->kind == SHM_SOME)                                                               \
                a->indices[count] = i;                                                             \
            count++;                                                                               \
        }                                                                                          \
        if (a->kind == SHM_ALL) {                                                                  \
            a->found = 1;                                                                          \
            return true;                                                                           \
        }                                                                                          \
        if (a->kind == SHM_SOME)                                                                   \
            a->found = count;                                                                      \
        return count > 0 || active == 0; /* nothing to wait for: return at once */                 \
    }                                                                                              \
    static size_t shm_sync_run_##N(struct shm_sync_##N *a, bool wait, const char *call)            \
    {                                                                                              \
        if (a->cmp < SHMEM_CMP_EQ || a->cmp > SHMEM_CMP_LE)                                        \
            shm_die(call, "invalid comparison %d", a->cmp);                                        \
        shm_any_cur = &shm_any_next[wait];                                                         \
        if (!shm_sync_eval_##N(a) && wait)                                                         \
            shm_wait(shm_sync_eval_##N, a, call);                                                  \
        return a->found;                                                                           \
    }                                                                                              \
    GMUX_API void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value)                            \
    {                                                                                              \
        struct shm_sync_##N a = {ivar, 1, NULL, cmp, cmp_value, NULL, SHM_ALL, NULL, 0};           \
        shm_sync_run_##N(&a, true, "shmem_" #N "_wait_until");                                     \
    }                                                                                              \
    GMUX_API void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp,  \
                                             T cmp_value)                                          \
    {                                                                                              \
        struct shm_sync_##N a = {ivars, nelems, status, cmp, cmp_value, NULL, SHM_ALL, NULL, 0};   \
        shm_sync_run_##N(&a, true, "shmem_" #N "_wait_until_all");                                 \
    }                                                                                              \
    GMUX_API size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status,         \
                                               int cmp, T cmp_value)                               \
    {                                                                                              \
        struct shm_sync_##N a = {ivars, nelems, status, cmp, cmp_value, NULL, SHM_ANY, NULL, 0};   \
        return shm_sync_run_##N(&a, true, "shmem_" #N "_wait_until_any");                          \
    }                                                                                              \
    GMUX_API size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,          \
                                                const int *status, int cmp, T cmp_value)           \
    {                                                                                              \
        struct shm_sync_##N a = {                                                                  \
            ivars, nelems, status, cmp, cmp_value, NULL, SHM_SOME, indices, 0};                    \
        return shm_sync_run_##N(&a, true, "shmem_" #N "_wait_until_some");                         \
    }                                                                                              \
    GMUX_API void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status,    \
                                                    int cmp, T *cmp_values)                        \
    {                                                                                              \
        struct shm_sync_##N a = {ivars, nelems, status, cmp, 0, cmp_values, SHM_ALL, NULL, 0};     \
        shm_sync_run_##N(&a, true, "shmem_" #N "_wait_until_all_vector");                          \
    }                                                                                              \
    GMUX_API size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status,  \
                                                      int cmp, T *cmp_values)                      \
    {                                                                                              \
        struct shm_sync_##N a = {ivars, nelems, status, cmp, 0, cmp_values, SHM_ANY, NULL, 0};     \
        return shm_sync_run_##N(&a, true, "shmem_" #N "_wait_until_any_vector");                   \
    }                                                                                              \
    GMUX_API size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices,   \
                                                       const int *status, int cmp, T *cmp_values)  \
    {                                                                                              \
        struct shm_sync_##N a = {ivars, nelems, status, cmp, 0, cmp_values, SHM_SOME, indices, 0}; \
        return shm_sync_run_##N(&a, true, "shmem_" #N "_wait_until_some_vector");                  \
    }                                                                                              \
    GMUX_API int shmem_##N##_test(T *ivar, int cmp, T cmp_value)                                   \
    {                                                                                              \
        struct shm_sync_##N a = {ivar, 1, NULL, cmp, cmp_value, NULL, SHM_ALL, NULL, 0};           \
        return (int)shm_sync_run_##N(&a, false, "shmem_" #N "_test");                              \
    }                                                                                              \
    GMUX_API int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp,         \
                                      T cmp_value)                                                 \
    {                                                                                              \
        struct shm_sync_##N a = {ivars, nelems, status, cmp, cmp_value, NULL, SHM_ALL, NULL, 0};   \
        return (int)shm_sync_run_##N(&a, false, "shmem_" #N "_test_all");                          \
    }                                                                                              \
    GMUX_API size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp,      \
                                         T cmp_value)                                              \
    {                                                                                              \
        struct shm_sync_##N a = {ivars, nelems, status, cmp, cmp_value, NULL, SHM_ANY, NULL, 0};   \
        return shm_sync_run_##N(&a, false, "shmem_" #N "_test_any");                               \
    }                                                                                              \
    GMUX_API size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices,                \
                                          const int *status, int cmp, T cmp_value)                 \
    {                                                                                              \
        struct shm_sync_##N a = {                                                                  \
            ivars, nelems, status, cmp, cmp_value, NULL, SHM_SOME, indices, 0};                    \
        return shm_sync_run_##N(&a, false, "shmem_" #N "_test_some");                              \
    }                                                                                              \
    GMUX_API int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp,  \
                                             T *cmp_values)                                        \
    {                                                                                              \
        struct shm_sync_##N a = {ivars, nelems, status, cmp, 0, cmp_values, SHM_ALL, NULL, 0};     \
        return (int)shm_sync_run_##N(&a, false, "shmem_" #N "_test_all_vector");                   \
    }                                                                                              \
    GMUX_API size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status,        \
                                                int cmp, T *cmp_values)                            \
    {                                                                                              \
        struct shm_sync_##N a = {ivars, nelems, status, cmp, 0, cmp_values, SHM_ANY, NULL, 0};     \
        return shm_sync_run_##N(&a, false, "shmem_" #N "_test_any_vector");                        \
    }                                                                                              \
    GMUX_API size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,         \
                                                 const int *status, int cmp, T *cmp_values)        \
    {                                                                                              \
        struct shm_sync_##N a = {ivars, nelems, status, cmp, 0, cmp_values, SHM_SOME, indices, 0}; \
        return shm_sync_run_##N(&a, false, "shmem_" #N "_test_some_vector");                       \
    }
GMUX_SHMEM_SYNC_TYPES(SHM_DEF_SYNC)

GMUX_API uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    shm_need_init("shmem_signal_fetch");
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

GMUX_API uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
    shmem_uint64_wait_until(sig_addr, cmp, cmp_value);
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

/* fence orders puts to each PE; a quiet (remote completion) is the
 * strongest form of it and the only one the providers let us rely on. */
GMUX_API void shmem_ctx_fence(shmem_ctx_t ctx)
{
    uint32_t nc = shm_ctx_net(ctx, "shmem_fence");
    shm_check(gmux_quiet(shm_state.comm, nc), "shmem_fence");
}

GMUX_API void shmem_fence(void)
{
    shmem_ctx_fence(SHMEM_CTX_DEFAULT);
}

GMUX_API void shmem_ctx_quiet(shmem_ctx_t ctx)
{
    uint32_t nc = shm_ctx_net(ctx, "shmem_quiet");
    shm_check(gmux_quiet(shm_state.comm, nc), "shmem_quiet");
}

GMUX_API void shmem_quiet(void)
{
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
}

GMUX_API void shmem_barrier_all(void)
{
    shm_need_init("shmem_barrier_all");
    shm_check(gmux_barrier(gmux_team_world(shm_state.comm)), "shmem_barrier_all");
}

GMUX_API void shmem_sync_all(void)
{
    shm_need_init("shmem_sync_all");
    shm_check(gmux_barrier(gmux_team_world(shm_state.comm)), "shmem_sync_all");
}
