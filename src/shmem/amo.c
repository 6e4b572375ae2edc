/*
 * Atomics on symmetric objects over gmux_atomic: every one (also the
 * non-fetching and _nbi forms) returns once the provider executed it at the
 * target, so quiet has nothing left to wait for. Values travel as their
 * 4- or 8-byte bit patterns; floating point only moves (fetch, set, swap).
 */
#include <string.h>

#include "shmem/internal.h"

static uint64_t amo_impl(shmem_ctx_t ctx, const void *dest, gmux_amo_op_t op, size_t size,
                         const void *operand, const void *compare, int pe, const char *call)
{
    uint64_t v = 0, c = 0;
    if (operand)
        memcpy(&v, operand, size);
    if (compare)
        memcpy(&c, compare, size);
    uint32_t nc = shm_ctx_net(ctx, call);
    int wpe = shm_ctx_pe(ctx, pe, call);
    if ((uintptr_t)dest % size)
        shm_die(call, "address %p is not aligned for a %zu-byte atomic", dest, size);
    return shm_amo(nc, wpe, (void *)dest, op, (unsigned)size, v, c, call);
}

#define SHM_RET(T, bits)                                                                           \
    do {                                                                                           \
        uint64_t b_ = (bits);                                                                      \
        T r_;                                                                                      \
        memcpy(&r_, &b_, sizeof(T));                                                               \
        return r_;                                                                                 \
    } while (0)

#define SHM_AMO_PAIR(T, N, NAME, RET, RK, PARAMS, ARGS, BODY)                                      \
    GMUX_API RET shmem_ctx_##N##_atomic_##NAME(shmem_ctx_t ctx, PARAMS)                            \
    {                                                                                              \
        static const char call[] = "shmem_" #N "_atomic_" #NAME;                                   \
        BODY                                                                                       \
    }                                                                                              \
    GMUX_API RET shmem_##N##_atomic_##NAME(PARAMS)                                                 \
    {                                                                                              \
        RK shmem_ctx_##N##_atomic_##NAME(SHMEM_CTX_DEFAULT, ARGS);                                 \
    }

#define SHM_P(...) __VA_ARGS__

#define SHM_DEF_AMO_EXT(T, N)                                                                      \
    SHM_AMO_PAIR(                                                                                  \
        T, N, fetch, T, return, SHM_P(const T *source, int pe), SHM_P(source, pe),                 \
        SHM_RET(T, amo_impl(ctx, source, GMUX_AMO_FETCH, sizeof(T), NULL, NULL, pe, call));)       \
    SHM_AMO_PAIR(T, N, fetch_nbi, void, , SHM_P(T *fetch, const T *source, int pe),                \
                 SHM_P(fetch, source, pe), *fetch = shmem_ctx_##N##_atomic_fetch(ctx, source, pe); \
                 (void)call;)                                                                      \
    SHM_AMO_PAIR(T, N, set, void, , SHM_P(T *dest, T value, int pe), SHM_P(dest, value, pe),       \
                 amo_impl(ctx, dest, GMUX_AMO_SET, sizeof(T), &value, NULL, pe, call);)            \
    SHM_AMO_PAIR(                                                                                  \
        T, N, swap, T, return, SHM_P(T * dest, T value, int pe), SHM_P(dest, value, pe),           \
        SHM_RET(T, amo_impl(ctx, dest, GMUX_AMO_SET, sizeof(T), &value, NULL, pe, call));)         \
    SHM_AMO_PAIR(T, N, swap_nbi, void, , SHM_P(T *fetch, T *dest, T value, int pe),                \
                 SHM_P(fetch, dest, value, pe),                                                    \
                 *fetch = shmem_ctx_##N##_atomic_swap(ctx, dest, value, pe);                       \
                 (void)call;)
GMUX_SHMEM_AMO_EXT_TYPES(SHM_DEF_AMO_EXT)

#define SHM_DEF_AMO_STD(T, N)                                                                      \
    SHM_AMO_PAIR(                                                                                  \
        T, N, compare_swap, T, return, SHM_P(T * dest, T cond, T value, int pe),                   \
        SHM_P(dest, cond, value, pe),                                                              \
        SHM_RET(T, amo_impl(ctx, dest, GMUX_AMO_CSWAP, sizeof(T), &value, &cond, pe, call));)      \
    SHM_AMO_PAIR(T, N, compare_swap_nbi, void, ,                                                   \
                 SHM_P(T *fetch, T *dest, T cond, T value, int pe),                                \
                 SHM_P(fetch, dest, cond, value, pe),                                              \
                 *fetch = shmem_ctx_##N##_atomic_compare_swap(ctx, dest, cond, value, pe);         \
                 (void)call;)                                                                      \
    SHM_AMO_PAIR(                                                                                  \
        T, N, fetch_add, T, return, SHM_P(T * dest, T value, int pe), SHM_P(dest, value, pe),      \
        SHM_RET(T, amo_impl(ctx, dest, GMUX_AMO_ADD, sizeof(T), &value, NULL, pe, call));)         \
    SHM_AMO_PAIR(T, N, fetch_add_nbi, void, , SHM_P(T *fetch, T *dest, T value, int pe),           \
                 SHM_P(fetch, dest, value, pe),                                                    \
                 *fetch = shmem_ctx_##N##_atomic_fetch_add(ctx, dest, value, pe);                  \
                 (void)call;)                                                                      \
    SHM_AMO_PAIR(T, N, add, void, , SHM_P(T *dest, T value, int pe), SHM_P(dest, value, pe),       \
                 amo_impl(ctx, dest, GMUX_AMO_ADD, sizeof(T), &value, NULL, pe, call);)            \
    SHM_AMO_PAIR(T, N, fetch_inc, T, return, SHM_P(T * dest, int pe), SHM_P(dest, pe), T one = 1;  \
                 SHM_RET(T, amo_impl(ctx, dest, GMUX_AMO_ADD, sizeof(T), &one, NULL, pe, call));)  \
    SHM_AMO_PAIR(T, N, fetch_inc_nbi, void, , SHM_P(T *fetch, T *dest, int pe),                    \
                 SHM_P(fetch, dest, pe), *fetch = shmem_ctx_##N##_atomic_fetch_inc(ctx, dest, pe); \
                 (void)call;)                                                                      \
    SHM_AMO_PAIR(T, N, inc, void, , SHM_P(T *dest, int pe), SHM_P(dest, pe), T one = 1;            \
                 amo_impl(ctx, dest, GMUX_AMO_ADD, sizeof(T), &one, NULL, pe, call);)
GMUX_SHMEM_AMO_STD_TYPES(SHM_DEF_AMO_STD)

#define SHM_DEF_AMO_BIT1(T, N, OP, GOP)                                                            \
    SHM_AMO_PAIR(T, N, fetch_##OP, T, return, SHM_P(T * dest, T value, int pe),                    \
                 SHM_P(dest, value, pe),                                                           \
                 SHM_RET(T, amo_impl(ctx, dest, GOP, sizeof(T), &value, NULL, pe, call));)         \
    SHM_AMO_PAIR(T, N, fetch_##OP##_nbi, void, , SHM_P(T *fetch, T *dest, T value, int pe),        \
                 SHM_P(fetch, dest, value, pe),                                                    \
                 *fetch = shmem_ctx_##N##_atomic_fetch_##OP(ctx, dest, value, pe);                 \
                 (void)call;)                                                                      \
    SHM_AMO_PAIR(T, N, OP, void, , SHM_P(T *dest, T value, int pe), SHM_P(dest, value, pe),        \
                 amo_impl(ctx, dest, GOP, sizeof(T), &value, NULL, pe, call);)
#define SHM_DEF_AMO_BIT(T, N)                                                                      \
    SHM_DEF_AMO_BIT1(T, N, and, GMUX_AMO_AND)                                                      \
    SHM_DEF_AMO_BIT1(T, N, or, GMUX_AMO_OR) SHM_DEF_AMO_BIT1(T, N, xor, GMUX_AMO_XOR)
GMUX_SHMEM_AMO_BIT_TYPES(SHM_DEF_AMO_BIT)
