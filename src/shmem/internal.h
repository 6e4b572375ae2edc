/*
 * libgmux-shmem internals: the state of the one OpenSHMEM job this process
 * belongs to, and the helpers every family uses (address translation, PE
 * checks, failing loudly). Not installed.
 *
 * Failure policy: OpenSHMEM calls return nothing to check, so a misuse (an
 * invalid PE, an address that is not symmetric, a call before shmem_init)
 * or a failed communication (a PE died, a timeout) prints one line on
 * stderr naming the call and ends the process with a non-zero status
 * (shmem_global_exit semantics: the launcher then stops the other PEs).
 *
 * LOCKING: shm_state.lock guards the context table, the lists of the
 * program's contexts and teams, and the heap allocator
 * (collective calls are single-threaded by the specification, the lock only
 * keeps a misbehaving program from corrupting them). Everything else is
 * written once in shmem_init and read-only afterwards.
 */
#ifndef SHM_INTERNAL_H
#define SHM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/net.h>
#include <gmux/net_ext.h>
#include <shmem.h>

#include "common/export.h"

#define SHM_NET_CONTEXTS 16   /* net contexts (NET_CQD_MAX_CTX): 0 is SHMEM_CTX_DEFAULT */
#define SHM_SCRATCH      4096 /* internal symmetric bytes at heap offset 0 */
/* Their words: the status a shmem_global_exit of another PE left
 * (SHM_EXIT_MARK | status), and the byte count of the PE's last collect
 * contribution on a team, one word per net team id (threads may run
 * collects on different teams at once; an active set's collect keeps its
 * count in its pSync, SHM_PSYNC_COLLECT) */
#define SHM_SCRATCH_EXIT    8
#define SHM_SCRATCH_COLLECT 64
#define SHM_COLLECT_WORDS   16 /* net team ids are below 16 */
#define SHM_EXIT_MARK       ((uint64_t)1 << 32)
#define SHM_ALIGN           64 /* default alignment of shmem_malloc */
/* The heap starts at a multiple of this, so an offset aligned to a power of
 * two up to it is an address aligned to it on every PE (shmem_align). */
#define SHM_ALIGN_MAX ((size_t)1 << 30)
#define SHM_PUT_CHUNK (1u << 20)

struct shmem_ctx_s {
    uint32_t netctx;
    shmem_team_t team; /* PE numbers of the context's operations are team ranks */
    long options;
    bool used;
    struct shmem_ctx_s *next; /* shm_state.ctxs: those shmem_finalize destroys */
};

struct shmem_team_s {
    gmux_team_t *net;
    shmem_team_config_t config;
    bool predefined;
    struct shmem_team_s *next; /* shm_state.teams: those shmem_finalize destroys */
};

/* A symmetric address, translated. */
typedef struct shm_addr {
    gmux_window_t win;
    uint64_t off;
} shm_addr_t;

typedef struct shm_state {
    bool initialized, finalized;
    int me, npes;
    int thread_level;
    gmux_comm_t *comm;
    char *heap;
    size_t heap_size;
    gmux_window_t heap_win;
    char *data; /* the main program's writable data and bss */
    size_t data_size;
    gmux_window_t data_win;
    bool have_data;
    double wait_timeout_s;
    /* per net context: the shmem contexts on it (0: free); [0] is the
     * default context's and never taken by shmem_ctx_create */
    uint32_t ctx_users[SHM_NET_CONTEXTS];
    uint32_t next_shared; /* contexts beyond the net's are shared round robin */
    shmem_ctx_t ctxs;     /* the program's contexts and teams not yet destroyed */
    shmem_team_t teams;
    pthread_mutex_t lock;
} shm_state_t;

extern shm_state_t shm_state;

/* Prints "gmux shmem: CALL: message" and exits with status 1 (or `status`). */
void shm_die(const char *call, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
/* Dies unless st is GMUX_OK, naming the call and the status. */
void shm_check(gmux_status_t st, const char *call);
/* Dies unless shmem_init ran. */
void shm_need_init(const char *call);

/* Translates a symmetric address of `len` bytes; dies naming the call when
 * it is not symmetric. */
shm_addr_t shm_translate(const void *addr, size_t len, const char *call);
/* Whether [addr, addr+len) is symmetric, without dying. */
bool shm_is_symmetric(const void *addr, size_t len, shm_addr_t *out);

/* The world rank of `pe` of ctx's team; dies on an invalid PE. */
int shm_ctx_pe(shmem_ctx_t ctx, int pe, const char *call);
uint32_t shm_ctx_net(shmem_ctx_t ctx, const char *call);

/* symheap.c */
gmux_status_t shm_heap_init(size_t size);
void shm_heap_fini(void);
/* Offsets are the same on every PE for the same sequence of calls. */
void *shm_heap_alloc(size_t size, size_t align);
void shm_heap_free(void *p);
size_t shm_heap_block_size(const void *p); /* 0 if p is not the start of a block */
gmux_status_t shm_data_find(char **base_p, size_t *size_p);

/* Blocking core operations on world ranks. */
void shm_put_bytes(uint32_t netctx, int wpe, void *dest, const void *src, size_t n, bool nbi,
                   const char *call);
void shm_get_bytes(uint32_t netctx, int wpe, void *dest, const void *src, size_t n,
                   const char *call);
uint64_t shm_amo(uint32_t netctx, int wpe, void *dest, gmux_amo_op_t op, unsigned bytes,
                 uint64_t operand, uint64_t compare, const char *call);

/* The members of one collective call: a team, or an active set of the
 * deprecated pSync-based collectives (world ranks start + i * stride). */
typedef struct shm_coll {
    int n, me;         /* members, the caller's index */
    gmux_team_t *team; /* team-based; NULL for an active set */
    int start, stride; /* active set */
    long *psync;       /* active set: the caller's symmetric pSync */
    const char *call;
} shm_coll_t;

/* coll.c: pull-based cores (sync, gets into the caller's own dest, sync) */
int shm_coll_world(const shm_coll_t *c, int i);
void shm_coll_sync(const shm_coll_t *c);
void shm_coll_bcast(const shm_coll_t *c, void *dest, const void *source, size_t bytes, int root,
                    bool root_dest);
void shm_coll_fcollect(const shm_coll_t *c, void *dest, const void *source, size_t bytes);
void shm_coll_collect(const shm_coll_t *c, void *dest, const void *source, size_t bytes);
void shm_coll_alltoalls(const shm_coll_t *c, void *dest, const void *source, ptrdiff_t dst,
                        ptrdiff_t sst, size_t nelems, size_t esize);
typedef void (*shm_combine_fn)(void *acc, const void *in, size_t n);
void shm_coll_reduce(const shm_coll_t *c, void *dest, const void *source, size_t n, size_t esize,
                     shm_combine_fn combine);
/* The words of an active set's pSync: its barrier's arrivals (at the first
 * member) and release (at the others), and a collect's byte count. Each is
 * SHMEM_SYNC_VALUE again when the call returns. */
#define SHM_PSYNC_ARRIVE  0
#define SHM_PSYNC_RELEASE 1
#define SHM_PSYNC_COLLECT 2
/* aset.c: a barrier of an active set over its pSync words ARRIVE and
 * RELEASE, after a quiet of every context when `quiet` */
void shm_aset_sync(const shm_coll_t *c, bool quiet);

/* team.c: destroys the contexts and teams the program left (shmem_finalize,
 * after its barrier: OpenSHMEM 1.5 destroys every team the program made and
 * with them their shareable contexts; private ones left are undefined
 * behaviour, so they go too). */
void shm_team_fini(void);

/* Reduction operators and the element-wise combine of one (T, N, OP). */
#define SHM_OP_and(a, b)  ((a) & (b))
#define SHM_OP_or(a, b)   ((a) | (b))
#define SHM_OP_xor(a, b)  ((a) ^ (b))
#define SHM_OP_min(a, b)  ((b) < (a) ? (b) : (a))
#define SHM_OP_max(a, b)  ((b) > (a) ? (b) : (a))
#define SHM_OP_sum(a, b)  ((a) + (b))
#define SHM_OP_prod(a, b) ((a) * (b))
#define SHM_DEF_COMBINE(T, N, OP)                                                                  \
    static void shm_combine_##N##_##OP(void *acc, const void *in, size_t n)                        \
    {                                                                                              \
        T *a = acc;                                                                                \
        const T *b = in;                                                                           \
        for (size_t i = 0; i < n; i++)                                                             \
            a[i] = (T)SHM_OP_##OP(a[i], b[i]);                                                     \
    }

/* Compares per SHMEM_CMP_*. */
#define SHM_CMP(a, cmp, b)                                                                         \
    ((cmp) == SHMEM_CMP_EQ   ? (a) == (b)                                                          \
     : (cmp) == SHMEM_CMP_NE ? (a) != (b)                                                          \
     : (cmp) == SHMEM_CMP_GT ? (a) > (b)                                                           \
     : (cmp) == SHMEM_CMP_GE ? (a) >= (b)                                                          \
     : (cmp) == SHMEM_CMP_LT ? (a) < (b)                                                           \
                             : (a) <= (b))

/* Waits until cond(arg), driving progress, up to the wait timeout. */
void shm_wait(bool (*cond)(void *), void *arg, const char *call);

#endif /* SHM_INTERNAL_H */
