/*
 * The names OpenSHMEM 1.2 to 1.4 deprecated and 1.5 still requires: each is
 * a thin wrapper over the name that replaced it (start_pes, _my_pe,
 * shmalloc, the old AMO names, shmem_wait), or does nothing where 1.5 says
 * so (the cache calls: memory here is always coherent).
 */
#include "shmem/internal.h"

GMUX_API void start_pes(int npes)
{
    (void)npes; /* unused, as it always was */
    shmem_init();
}

GMUX_API int _my_pe(void)
{
    return shmem_my_pe();
}

GMUX_API int _num_pes(void)
{
    return shmem_n_pes();
}

GMUX_API void *shmalloc(size_t size)
{
    return shmem_malloc(size);
}

GMUX_API void shfree(void *ptr)
{
    shmem_free(ptr);
}

GMUX_API void *shrealloc(void *ptr, size_t size)
{
    return shmem_realloc(ptr, size);
}

GMUX_API void *shmemalign(size_t alignment, size_t size)
{
    return shmem_align(alignment, size);
}

/* The cache calls: no-ops (OpenSHMEM 1.5 keeps them for old programs). */
GMUX_API void shmem_clear_cache_inv(void)
{
}
GMUX_API void shmem_set_cache_inv(void)
{
}
GMUX_API void shmem_udcflush(void)
{
}
GMUX_API void shmem_clear_cache_line_inv(void *dest)
{
    (void)dest;
}
GMUX_API void shmem_set_cache_line_inv(void *dest)
{
    (void)dest;
}
GMUX_API void shmem_udcflush_line(void *dest)
{
    (void)dest;
}

/* shmem_TYPENAME_wait: until the value differs from cmp_value. */
#define SHM_DEF_WAIT(T, N)                                                                         \
    GMUX_API void shmem_##N##_wait(T *ivar, T cmp_value)                                           \
    {                                                                                              \
        shmem_##N##_wait_until(ivar, SHMEM_CMP_NE, cmp_value);                                     \
    }
GMUX_SHMEM_SYNC_TYPES(SHM_DEF_WAIT)

/* The name is also the C11 generic macro: parentheses keep it a function. */
GMUX_API void(shmem_wait)(long *ivar, long cmp_value)
{
    shmem_long_wait(ivar, cmp_value);
}

/* The old AMO names: shmem_TYPENAME_OLD over shmem_TYPENAME_atomic_NEW. */
#define SHM_DEF_OLD_AMO(T, N, OLD, NEW, RK, RET, PARAMS, ARGS)                                     \
    GMUX_API RET shmem_##N##_##OLD(PARAMS)                                                         \
    {                                                                                              \
        RK shmem_##N##_atomic_##NEW(ARGS);                                                         \
    }
#define SHM_DEF_OLD_AMO_EXT(T, N)                                                                  \
    SHM_DEF_OLD_AMO(T, N, fetch, fetch, return, T, SHM_P(const T *source, int pe),                 \
                    SHM_P(source, pe))                                                             \
    SHM_DEF_OLD_AMO(T, N, set, set, , void, SHM_P(T *dest, T value, int pe),                       \
                    SHM_P(dest, value, pe))                                                        \
    SHM_DEF_OLD_AMO(T, N, swap, swap, return, T, SHM_P(T * dest, T value, int pe),                 \
                    SHM_P(dest, value, pe))
#define SHM_DEF_OLD_AMO_STD(T, N)                                                                  \
    SHM_DEF_OLD_AMO(T, N, cswap, compare_swap, return, T,                                          \
                    SHM_P(T * dest, T cond, T value, int pe), SHM_P(dest, cond, value, pe))        \
    SHM_DEF_OLD_AMO(T, N, fadd, fetch_add, return, T, SHM_P(T * dest, T value, int pe),            \
                    SHM_P(dest, value, pe))                                                        \
    SHM_DEF_OLD_AMO(T, N, finc, fetch_inc, return, T, SHM_P(T * dest, int pe), SHM_P(dest, pe))    \
    SHM_DEF_OLD_AMO(T, N, add, add, , void, SHM_P(T *dest, T value, int pe),                       \
                    SHM_P(dest, value, pe))                                                        \
    SHM_DEF_OLD_AMO(T, N, inc, inc, , void, SHM_P(T *dest, int pe), SHM_P(dest, pe))
#define SHM_P(...) __VA_ARGS__
GMUX_SHMEM_AMO_EXT_TYPES(SHM_DEF_OLD_AMO_EXT)
GMUX_SHMEM_AMO_STD_TYPES(SHM_DEF_OLD_AMO_STD)
