/*
 * OpenSHMEM 1.5 over gmux net (libgmux-shmem).
 *
 * The C API of the OpenSHMEM 1.5 specification: setup and query, symmetric
 * memory (the symmetric heap and the program's global and static
 * variables), RMA, signals, point-to-point synchronisation, atomics,
 * ordering, collectives on teams, contexts and teams, and the C11 generic
 * selection macros. See docs/shmem.md for what maps onto what and the
 * limits. Build programs with `oshcc`, run them with `oshrun -n N prog`.
 *
 * The typed families are declared from the type tables of the
 * specification (GMUX_SHMEM_*_TYPES below: X(TYPE, TYPENAME)).
 *
 * Thread-safety: SHMEM_THREAD_MULTIPLE is provided; collective calls
 * (allocation, teams, collectives) follow the specification's rules.
 */
#ifndef GMUX_SHMEM_H
#define GMUX_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_MAJOR_VERSION  1
#define SHMEM_MINOR_VERSION  5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN   256
#define SHMEM_VENDOR_STRING  "gmux OpenSHMEM over gmux net"

#define SHMEM_THREAD_SINGLE     0
#define SHMEM_THREAD_FUNNELED   1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE   3

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

#define SHMEM_CTX_PRIVATE    (1L << 0)
#define SHMEM_CTX_SERIALIZED (1L << 1)
#define SHMEM_CTX_NOSTORE    (1L << 2)

#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE  (1L << 1)

#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* Legacy constants still found in 1.5 programs. */
#define SHMEM_SYNC_VALUE              0L
#define SHMEM_SYNC_SIZE               64
#define SHMEM_BCAST_SYNC_SIZE         SHMEM_SYNC_SIZE
#define SHMEM_BARRIER_SYNC_SIZE       SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE        SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE       SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE      SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE     SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 16

/* The _SHMEM_* spellings deprecated in 1.3 (still part of 1.5). */
#define _SHMEM_MAX_NAME_LEN            SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING           SHMEM_VENDOR_STRING
#define _SHMEM_SYNC_VALUE              SHMEM_SYNC_VALUE
#define _SHMEM_SYNC_SIZE               SHMEM_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE         SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE       SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE        SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE       SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE      SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_ALLTOALLS_SYNC_SIZE     SHMEM_ALLTOALLS_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE
#define _SHMEM_CMP_EQ                  SHMEM_CMP_EQ
#define _SHMEM_CMP_NE                  SHMEM_CMP_NE
#define _SHMEM_CMP_GT                  SHMEM_CMP_GT
#define _SHMEM_CMP_GE                  SHMEM_CMP_GE
#define _SHMEM_CMP_LT                  SHMEM_CMP_LT
#define _SHMEM_CMP_LE                  SHMEM_CMP_LE

typedef struct shmem_ctx_s *shmem_ctx_t;
typedef struct shmem_team_s *shmem_team_t;

typedef struct {
    int num_contexts;
} shmem_team_config_t;

/* The predefined handles: addresses of objects inside the library. */
extern struct shmem_ctx_s shmem_ctx_default_obj_;
extern struct shmem_team_s shmem_team_world_obj_;
extern struct shmem_team_s shmem_team_shared_obj_;
#define SHMEM_CTX_DEFAULT  (&shmem_ctx_default_obj_)
#define SHMEM_CTX_INVALID  ((shmem_ctx_t)0)
#define SHMEM_TEAM_WORLD   (&shmem_team_world_obj_)
#define SHMEM_TEAM_SHARED  (&shmem_team_shared_obj_)
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)

/* --- type tables of the specification ---------------------------------- */

#define GMUX_SHMEM_RMA_TYPES(X)                                                                    \
    X(float, float)                                                                                \
    X(double, double)                                                                              \
    X(long double, longdouble)                                                                     \
    X(char, char)                                                                                  \
    X(signed char, schar)                                                                          \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned char, uchar)                                                                        \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int8_t, int8)                                                                                \
    X(int16_t, int16)                                                                              \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint8_t, uint8)                                                                              \
    X(uint16_t, uint16)                                                                            \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

/* Standard AMO types (inc, add, compare_swap and their fetch forms). */
#define GMUX_SHMEM_AMO_STD_TYPES(X)                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

/* Extended AMO types (fetch, set, swap). */
#define GMUX_SHMEM_AMO_EXT_TYPES(X)                                                                \
    GMUX_SHMEM_AMO_STD_TYPES(X)                                                                    \
    X(float, float)                                                                                \
    X(double, double)

/* Bitwise AMO types (and, or, xor and their fetch forms). */
#define GMUX_SHMEM_AMO_BIT_TYPES(X)                                                                \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)

/* Point-to-point synchronisation types. */
#define GMUX_SHMEM_SYNC_TYPES(X)                                                                   \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

/* Reduction types: and/or/xor; min/max/sum/prod. */
#define GMUX_SHMEM_REDUCE_BIT_TYPES(X)                                                             \
    X(unsigned char, uchar)                                                                        \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int8_t, int8)                                                                                \
    X(int16_t, int16)                                                                              \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint8_t, uint8)                                                                              \
    X(uint16_t, uint16)                                                                            \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)

#define GMUX_SHMEM_REDUCE_ARITH_TYPES(X)                                                           \
    X(char, char)                                                                                  \
    X(signed char, schar)                                                                          \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(ptrdiff_t, ptrdiff)                                                                          \
    X(unsigned char, uchar)                                                                        \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int8_t, int8)                                                                                \
    X(int16_t, int16)                                                                              \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint8_t, uint8)                                                                              \
    X(uint16_t, uint16)                                                                            \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(float, float)                                                                                \
    X(double, double)                                                                              \
    X(long double, longdouble)

/* Active-set (to_all) reduction types, deprecated in 1.5 (and complex, below). */
#define GMUX_SHMEM_TO_ALL_BIT_TYPES(X)                                                             \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)
#define GMUX_SHMEM_TO_ALL_ARITH_TYPES(X)                                                           \
    GMUX_SHMEM_TO_ALL_BIT_TYPES(X)                                                                 \
    X(float, float)                                                                                \
    X(double, double)                                                                              \
    X(long double, longdouble)

/* Complex reduction types (sum and prod only; team and to_all forms). C++
 * has no _Complex: declared for C only. */
#ifndef __cplusplus
#define GMUX_SHMEM_REDUCE_COMPLEX_TYPES(X)                                                         \
    X(double _Complex, complexd)                                                                   \
    X(float _Complex, complexf)
#else
#define GMUX_SHMEM_REDUCE_COMPLEX_TYPES(X)
#endif

/* The reduction operators of each kind: X(T, N, OP) for every OP. */
#define GMUX_SHMEM_BIT_OPS(X, T, N)     X(T, N, and) X(T, N, or) X(T, N, xor)
#define GMUX_SHMEM_ARITH_OPS(X, T, N)   X(T, N, min) X(T, N, max) X(T, N, sum) X(T, N, prod)
#define GMUX_SHMEM_COMPLEX_OPS(X, T, N) X(T, N, sum) X(T, N, prod)

/* Sized RMA: X(SIZE in bits) */
#define GMUX_SHMEM_SIZES(X) X(8) X(16) X(32) X(64) X(128)

/* --- setup, query, memory ------------------------------------------------ */

void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_finalize(void);
void shmem_query_thread(int *provided);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);
void shmem_global_exit(int status) __attribute__((noreturn));

void *shmem_malloc(size_t size);
void *shmem_malloc_with_hints(size_t size, long hints);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);

/* --- contexts and teams --------------------------------------------------- */

int shmem_ctx_create(long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
int shmem_team_sync(shmem_team_t team);
void shmem_team_destroy(shmem_team_t team);

/* --- ordering ------------------------------------------------------------- */

void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_barrier_all(void);
void shmem_sync_all(void);

/* --- RMA ------------------------------------------------------------------ */

#define GMUX_SHMEM_DECL_RMA(T, N)                                                                  \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);                         \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);    \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);                     \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,         \
                                 int pe);                                                          \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);                         \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);    \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);                     \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,         \
                                 int pe);                                                          \
    void shmem_##N##_p(T *dest, T value, int pe);                                                  \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);                             \
    T shmem_##N##_g(const T *source, int pe);                                                      \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);                                 \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,   \
                          int pe);                                                                 \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,            \
                              ptrdiff_t sst, size_t nelems, int pe);                               \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,   \
                          int pe);                                                                 \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,            \
                              ptrdiff_t sst, size_t nelems, int pe);                               \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,       \
                                uint64_t signal, int sig_op, int pe);                              \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,      \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);      \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,   \
                                    uint64_t signal, int sig_op, int pe);                          \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,  \
                                        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
GMUX_SHMEM_RMA_TYPES(GMUX_SHMEM_DECL_RMA)

#define GMUX_SHMEM_DECL_SIZED(S)                                                                   \
    void shmem_put##S(void *dest, const void *source, size_t nelems, int pe);                      \
    void shmem_ctx_put##S(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_put##S##_nbi(void *dest, const void *source, size_t nelems, int pe);                \
    void shmem_ctx_put##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,    \
                                int pe);                                                           \
    void shmem_get##S(void *dest, const void *source, size_t nelems, int pe);                      \
    void shmem_ctx_get##S(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_get##S##_nbi(void *dest, const void *source, size_t nelems, int pe);                \
    void shmem_ctx_get##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,    \
                                int pe);                                                           \
    void shmem_iput##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,               \
                       size_t nelems, int pe);                                                     \
    void shmem_ctx_iput##S(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,         \
                           ptrdiff_t sst, size_t nelems, int pe);                                  \
    void shmem_iget##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,               \
                       size_t nelems, int pe);                                                     \
    void shmem_ctx_iget##S(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,         \
                           ptrdiff_t sst, size_t nelems, int pe);                                  \
    void shmem_put##S##_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,  \
                               uint64_t signal, int sig_op, int pe);                               \
    void shmem_ctx_put##S##_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                                   uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);       \
    void shmem_put##S##_signal_nbi(void *dest, const void *source, size_t nelems,                  \
                                   uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);       \
    void shmem_ctx_put##S##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,            \
                                       size_t nelems, uint64_t *sig_addr, uint64_t signal,         \
                                       int sig_op, int pe);
GMUX_SHMEM_SIZES(GMUX_SHMEM_DECL_SIZED)
GMUX_SHMEM_DECL_SIZED(mem)

uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* --- atomics -------------------------------------------------------------- */

#define GMUX_SHMEM_DECL_AMO_EXT(T, N)                                                              \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                                           \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);                      \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);                          \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, int pe);     \
    void shmem_##N##_atomic_set(T *dest, T value, int pe);                                         \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe);                    \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe);                                           \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe);                      \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);                          \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
GMUX_SHMEM_AMO_EXT_TYPES(GMUX_SHMEM_DECL_AMO_EXT)

#define GMUX_SHMEM_DECL_AMO_STD(T, N)                                                              \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);                           \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, int pe);      \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value, int pe);          \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T cond,       \
                                                 T value, int pe);                                 \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe);                                               \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);                          \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);                              \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest, int pe);         \
    void shmem_##N##_atomic_inc(T *dest, int pe);                                                  \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);                             \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe);                                      \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe);                 \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe);                     \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value,         \
                                              int pe);                                             \
    void shmem_##N##_atomic_add(T *dest, T value, int pe);                                         \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe);
GMUX_SHMEM_AMO_STD_TYPES(GMUX_SHMEM_DECL_AMO_STD)

#define GMUX_SHMEM_DECL_AMO_BIT1(T, N, OP)                                                         \
    T shmem_##N##_atomic_fetch_##OP(T *dest, T value, int pe);                                     \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);                \
    void shmem_##N##_atomic_fetch_##OP##_nbi(T *fetch, T *dest, T value, int pe);                  \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value,      \
                                                 int pe);                                          \
    void shmem_##N##_atomic_##OP(T *dest, T value, int pe);                                        \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);
#define GMUX_SHMEM_DECL_AMO_BIT(T, N)                                                              \
    GMUX_SHMEM_DECL_AMO_BIT1(T, N, and)                                                            \
    GMUX_SHMEM_DECL_AMO_BIT1(T, N, or) GMUX_SHMEM_DECL_AMO_BIT1(T, N, xor)
GMUX_SHMEM_AMO_BIT_TYPES(GMUX_SHMEM_DECL_AMO_BIT)

/* --- point-to-point synchronisation -------------------------------------- */

#define GMUX_SHMEM_DECL_SYNC(T, N)                                                                 \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                                    \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp,           \
                                    T cmp_value);                                                  \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status, int cmp,         \
                                      T cmp_value);                                                \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,                   \
                                       const int *status, int cmp, T cmp_value);                   \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, int cmp,    \
                                           T *cmp_values);                                         \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, int cmp,  \
                                             T *cmp_values);                                       \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices,            \
                                              const int *status, int cmp, T *cmp_values);          \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                                           \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value);    \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices, const int *status,      \
                                 int cmp, T cmp_value);                                            \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp,           \
                                    T *cmp_values);                                                \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp,        \
                                       T *cmp_values);                                             \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,                  \
                                        const int *status, int cmp, T *cmp_values);
GMUX_SHMEM_SYNC_TYPES(GMUX_SHMEM_DECL_SYNC)

/* --- collectives ---------------------------------------------------------- */

#define GMUX_SHMEM_DECL_COLL(T, N)                                                                 \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems,          \
                              int PE_root);                                                        \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems);           \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems);          \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems);          \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst,          \
                              ptrdiff_t sst, size_t nelems);
GMUX_SHMEM_RMA_TYPES(GMUX_SHMEM_DECL_COLL)

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);

#define GMUX_SHMEM_DECL_REDUCE(T, N, OP)                                                           \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define GMUX_SHMEM_DECL_REDUCE_BIT(T, N)   GMUX_SHMEM_BIT_OPS(GMUX_SHMEM_DECL_REDUCE, T, N)
#define GMUX_SHMEM_DECL_REDUCE_ARITH(T, N) GMUX_SHMEM_ARITH_OPS(GMUX_SHMEM_DECL_REDUCE, T, N)
GMUX_SHMEM_REDUCE_BIT_TYPES(GMUX_SHMEM_DECL_REDUCE_BIT)
GMUX_SHMEM_REDUCE_ARITH_TYPES(GMUX_SHMEM_DECL_REDUCE_ARITH)
#define GMUX_SHMEM_DECL_REDUCE_COMPLEX(T, N) GMUX_SHMEM_COMPLEX_OPS(GMUX_SHMEM_DECL_REDUCE, T, N)
GMUX_SHMEM_REDUCE_COMPLEX_TYPES(GMUX_SHMEM_DECL_REDUCE_COMPLEX)

/* --- active-set collectives (deprecated in 1.5, still part of it) -------- */

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);
#define GMUX_SHMEM_DECL_ASET(B)                                                                    \
    void shmem_broadcast##B(void *dest, const void *source, size_t nelems, int PE_root,            \
                            int PE_start, int logPE_stride, int PE_size, long *pSync);             \
    void shmem_collect##B(void *dest, const void *source, size_t nelems, int PE_start,             \
                          int logPE_stride, int PE_size, long *pSync);                             \
    void shmem_fcollect##B(void *dest, const void *source, size_t nelems, int PE_start,            \
                           int logPE_stride, int PE_size, long *pSync);                            \
    void shmem_alltoall##B(void *dest, const void *source, size_t nelems, int PE_start,            \
                           int logPE_stride, int PE_size, long *pSync);                            \
    void shmem_alltoalls##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,          \
                            size_t nelems, int PE_start, int logPE_stride, int PE_size,            \
                            long *pSync);
GMUX_SHMEM_DECL_ASET(32)
GMUX_SHMEM_DECL_ASET(64)
#define GMUX_SHMEM_DECL_TO_ALL(T, N, OP)                                                           \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start,            \
                                   int logPE_stride, int PE_size, T *pWrk, long *pSync);
#define GMUX_SHMEM_DECL_TO_ALL_BIT(T, N)   GMUX_SHMEM_BIT_OPS(GMUX_SHMEM_DECL_TO_ALL, T, N)
#define GMUX_SHMEM_DECL_TO_ALL_ARITH(T, N) GMUX_SHMEM_ARITH_OPS(GMUX_SHMEM_DECL_TO_ALL, T, N)
GMUX_SHMEM_TO_ALL_BIT_TYPES(GMUX_SHMEM_DECL_TO_ALL_BIT)
GMUX_SHMEM_TO_ALL_ARITH_TYPES(GMUX_SHMEM_DECL_TO_ALL_ARITH)
#define GMUX_SHMEM_DECL_TO_ALL_COMPLEX(T, N) GMUX_SHMEM_COMPLEX_OPS(GMUX_SHMEM_DECL_TO_ALL, T, N)
GMUX_SHMEM_REDUCE_COMPLEX_TYPES(GMUX_SHMEM_DECL_TO_ALL_COMPLEX)

/* --- names deprecated in 1.2 to 1.4 (still part of 1.5) ------------------- */

void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);
/* no-ops */
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);
/* wait until *ivar != cmp_value; shmem_wait is the long one (C11: generic) */
void shmem_wait(long *ivar, long cmp_value);
#define GMUX_SHMEM_DECL_OLD_WAIT(T, N) void shmem_##N##_wait(T *ivar, T cmp_value);
GMUX_SHMEM_SYNC_TYPES(GMUX_SHMEM_DECL_OLD_WAIT)
/* the AMO names before _atomic_: fetch, set, swap, cswap, fadd, finc, add, inc */
#define GMUX_SHMEM_DECL_OLD_AMO_EXT(T, N)                                                          \
    T shmem_##N##_fetch(const T *source, int pe);                                                  \
    void shmem_##N##_set(T *dest, T value, int pe);                                                \
    T shmem_##N##_swap(T *dest, T value, int pe);
GMUX_SHMEM_AMO_EXT_TYPES(GMUX_SHMEM_DECL_OLD_AMO_EXT)
#define GMUX_SHMEM_DECL_OLD_AMO_STD(T, N)                                                          \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe);                                         \
    T shmem_##N##_fadd(T *dest, T value, int pe);                                                  \
    T shmem_##N##_finc(T *dest, int pe);                                                           \
    void shmem_##N##_add(T *dest, T value, int pe);                                                \
    void shmem_##N##_inc(T *dest, int pe);
GMUX_SHMEM_AMO_STD_TYPES(GMUX_SHMEM_DECL_OLD_AMO_STD)

#ifdef __cplusplus
}
#endif

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
#include <shmem_generic.h>
#endif

#endif /* GMUX_SHMEM_H */
