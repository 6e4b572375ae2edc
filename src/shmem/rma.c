/*
 * RMA and signals: put (blocking: source reusable on return; _nbi: until
 * quiet), get, p, g, iput, iget, put_signal, over gmux_put / gmux_put_value
 * (through the descriptor rings) and gmux_get. The typed and sized families
 * are generated from the type tables of shmem.h.
 */
#include <string.h>

#include "shmem/internal.h"

uint32_t shm_ctx_net(shmem_ctx_t ctx, const char *call)
{
    shm_need_init(call);
    if (!ctx || !ctx->used)
        shm_die(call, "invalid or destroyed context");
    return ctx->netctx;
}

int shm_ctx_pe(shmem_ctx_t ctx, int pe, const char *call)
{
    shmem_team_t team = ctx->team ? ctx->team : SHMEM_TEAM_WORLD;
    int n = gmux_team_size(team->net);
    if (pe < 0 || pe >= n)
        shm_die(call, "invalid PE %d (the %s has %d PEs)", pe,
                team == SHMEM_TEAM_WORLD ? "job" : "context's team", n);
    return gmux_team_world_rank(team->net, pe);
}

void shm_put_bytes(uint32_t netctx, int wpe, void *dest, const void *src, size_t n, bool nbi,
                   const char *call)
{
    shm_addr_t a = shm_translate(dest, n, call);
    gmux_comm_t *comm = shm_state.comm;
    if (n == 0)
        return;
    if (n <= 8) {
        /* inline: nothing to keep, no flush */
        uint64_t v = 0;
        memcpy(&v, src, n);
        shm_check(gmux_put_value(comm, netctx, wpe, a.win, a.off, v, (unsigned)n, NULL), call);
        return;
    }
    for (size_t done = 0; done < n; done += SHM_PUT_CHUNK) {
        size_t len = n - done < SHM_PUT_CHUNK ? n - done : SHM_PUT_CHUNK;
        shm_check(
            gmux_put(comm, netctx, wpe, a.win, a.off + done, (const char *)src + done, len, NULL),
            call);
    }
    if (!nbi)
        shm_check(gmux_flush(comm, netctx), call);
}

void shm_get_bytes(uint32_t netctx, int wpe, void *dest, const void *src, size_t n,
                   const char *call)
{
    shm_addr_t a = shm_translate(src, n, call);
    if (n)
        shm_check(gmux_get(shm_state.comm, netctx, wpe, a.win, a.off, dest, n), call);
}

uint64_t shm_amo(uint32_t netctx, int wpe, void *dest, gmux_amo_op_t op, unsigned bytes,
                 uint64_t operand, uint64_t compare, const char *call)
{
    shm_addr_t a = shm_translate(dest, bytes, call);
    uint64_t old = 0;
    shm_check(
        gmux_atomic(shm_state.comm, netctx, wpe, a.win, a.off, op, bytes, operand, compare, &old),
        call);
    return old;
}

static void put_impl(shmem_ctx_t ctx, void *dest, const void *src, size_t bytes, int pe, bool nbi,
                     const char *call)
{
    uint32_t nc = shm_ctx_net(ctx, call);
    shm_put_bytes(nc, shm_ctx_pe(ctx, pe, call), dest, src, bytes, nbi, call);
}

static void get_impl(shmem_ctx_t ctx, void *dest, const void *src, size_t bytes, int pe,
                     const char *call)
{
    uint32_t nc = shm_ctx_net(ctx, call);
    shm_get_bytes(nc, shm_ctx_pe(ctx, pe, call), dest, src, bytes, call);
}

static void iput_impl(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                      size_t nelems, size_t esize, int pe, const char *call)
{
    uint32_t nc = shm_ctx_net(ctx, call);
    int wpe = shm_ctx_pe(ctx, pe, call);
    for (size_t i = 0; i < nelems; i++)
        shm_put_bytes(nc, wpe, (char *)dest + (ptrdiff_t)i * dst * (ptrdiff_t)esize,
                      (const char *)src + (ptrdiff_t)i * sst * (ptrdiff_t)esize, esize, true, call);
    if (esize > 8 && nelems)
        shm_check(gmux_flush(shm_state.comm, nc), call);
}

static void iget_impl(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                      size_t nelems, size_t esize, int pe, const char *call)
{
    uint32_t nc = shm_ctx_net(ctx, call);
    int wpe = shm_ctx_pe(ctx, pe, call);
    for (size_t i = 0; i < nelems; i++)
        shm_get_bytes(nc, wpe, (char *)dest + (ptrdiff_t)i * dst * (ptrdiff_t)esize,
                      (const char *)src + (ptrdiff_t)i * sst * (ptrdiff_t)esize, esize, call);
}

/* The signal is applied after the data: a quiet of the context orders them
 * whatever the provider orders (tcp;ofi_rxm does not order writes before
 * atomics). */
static void put_signal_impl(shmem_ctx_t ctx, void *dest, const void *src, size_t bytes,
                            uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                            const char *call)
{
    if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
        shm_die(call, "invalid signal operation %d", sig_op);
    uint32_t nc = shm_ctx_net(ctx, call);
    int wpe = shm_ctx_pe(ctx, pe, call);
    shm_translate(sig_addr, sizeof(*sig_addr), call);
    shm_put_bytes(nc, wpe, dest, src, bytes, true, call);
    shm_check(gmux_quiet(shm_state.comm, nc), call);
    shm_amo(nc, wpe, sig_addr, sig_op == SHMEM_SIGNAL_SET ? GMUX_AMO_SET : GMUX_AMO_ADD, 8, signal,
            0, call);
}

#define SHM_DEF_RMA_FAMILY(T, PRE, POST, ESIZE, PS, QS)                                            \
    GMUX_API void shmem_ctx_##PRE##put##POST(shmem_ctx_t ctx, T *dest, const T *source,            \
                                             size_t nelems, int pe)                                \
    {                                                                                              \
        put_impl(ctx, dest, source, nelems *(ESIZE), pe, false, "shmem_" PS "put" QS "");          \
    }                                                                                              \
    GMUX_API void shmem_##PRE##put##POST(T *dest, const T *source, size_t nelems, int pe)          \
    {                                                                                              \
        put_impl(SHMEM_CTX_DEFAULT, dest, source, nelems *(ESIZE), pe, false,                      \
                 "shmem_" PS "put" QS "");                                                         \
    }                                                                                              \
    GMUX_API void shmem_ctx_##PRE##put##POST##_nbi(shmem_ctx_t ctx, T *dest, const T *source,      \
                                                   size_t nelems, int pe)                          \
    {                                                                                              \
        put_impl(ctx, dest, source, nelems *(ESIZE), pe, true, "shmem_" PS "put" QS "_nbi");       \
    }                                                                                              \
    GMUX_API void shmem_##PRE##put##POST##_nbi(T *dest, const T *source, size_t nelems, int pe)    \
    {                                                                                              \
        put_impl(SHMEM_CTX_DEFAULT, dest, source, nelems *(ESIZE), pe, true,                       \
                 "shmem_" PS "put" QS "_nbi");                                                     \
    }                                                                                              \
    GMUX_API void shmem_ctx_##PRE##get##POST(shmem_ctx_t ctx, T *dest, const T *source,            \
                                             size_t nelems, int pe)                                \
    {                                                                                              \
        get_impl(ctx, dest, source, nelems *(ESIZE), pe, "shmem_" PS "get" QS "");                 \
    }                                                                                              \
    GMUX_API void shmem_##PRE##get##POST(T *dest, const T *source, size_t nelems, int pe)          \
    {                                                                                              \
        get_impl(SHMEM_CTX_DEFAULT, dest, source, nelems *(ESIZE), pe, "shmem_" PS "get" QS "");   \
    }                                                                                              \
    GMUX_API void shmem_ctx_##PRE##get##POST##_nbi(shmem_ctx_t ctx, T *dest, const T *source,      \
                                                   size_t nelems, int pe)                          \
    {                                                                                              \
        get_impl(ctx, dest, source, nelems *(ESIZE), pe, "shmem_" PS "get" QS "_nbi");             \
    }                                                                                              \
    GMUX_API void shmem_##PRE##get##POST##_nbi(T *dest, const T *source, size_t nelems, int pe)    \
    {                                                                                              \
        get_impl(SHMEM_CTX_DEFAULT, dest, source, nelems *(ESIZE), pe,                             \
                 "shmem_" PS "get" QS "_nbi");                                                     \
    }                                                                                              \
    GMUX_API void shmem_ctx_##PRE##iput##POST(shmem_ctx_t ctx, T *dest, const T *source,           \
                                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) \
    {                                                                                              \
        iput_impl(ctx, dest, source, dst, sst, nelems, (ESIZE), pe, "shmem_" PS "iput" QS "");     \
    }                                                                                              \
    GMUX_API void shmem_##PRE##iput##POST(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,  \
                                          size_t nelems, int pe)                                   \
    {                                                                                              \
        iput_impl(SHMEM_CTX_DEFAULT, dest, source, dst, sst, nelems, (ESIZE), pe,                  \
                  "shmem_" PS "iput" QS "");                                                       \
    }                                                                                              \
    GMUX_API void shmem_ctx_##PRE##iget##POST(shmem_ctx_t ctx, T *dest, const T *source,           \
                                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) \
    {                                                                                              \
        iget_impl(ctx, dest, source, dst, sst, nelems, (ESIZE), pe, "shmem_" PS "iget" QS "");     \
    }                                                                                              \
    GMUX_API void shmem_##PRE##iget##POST(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,  \
                                          size_t nelems, int pe)                                   \
    {                                                                                              \
        iget_impl(SHMEM_CTX_DEFAULT, dest, source, dst, sst, nelems, (ESIZE), pe,                  \
                  "shmem_" PS "iget" QS "");                                                       \
    }                                                                                              \
    GMUX_API void shmem_ctx_##PRE##put##POST##_signal(shmem_ctx_t ctx, T *dest, const T *source,   \
                                                      size_t nelems, uint64_t *sig_addr,           \
                                                      uint64_t signal, int sig_op, int pe)         \
    {                                                                                              \
        put_signal_impl(ctx, dest, source, nelems *(ESIZE), sig_addr, signal, sig_op, pe,          \
                        "shmem_" PS "put" QS "_signal");                                           \
    }                                                                                              \
    GMUX_API void shmem_##PRE##put##POST##_signal(T *dest, const T *source, size_t nelems,         \
                                                  uint64_t *sig_addr, uint64_t signal, int sig_op, \
                                                  int pe)                                          \
    {                                                                                              \
        put_signal_impl(SHMEM_CTX_DEFAULT, dest, source, nelems *(ESIZE), sig_addr, signal,        \
                        sig_op, pe, "shmem_" PS "put" QS "_signal");                               \
    }                                                                                              \
    GMUX_API void shmem_ctx_##PRE##put##POST##_signal_nbi(                                         \
        shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, uint64_t *sig_addr,              \
        uint64_t signal, int sig_op, int pe)                                                       \
    {                                                                                              \
        put_signal_impl(ctx, dest, source, nelems *(ESIZE), sig_addr, signal, sig_op, pe,          \
                        "shmem_" PS "put" QS "_signal_nbi");                                       \
    }                                                                                              \
    GMUX_API void shmem_##PRE##put##POST##_signal_nbi(T *dest, const T *source, size_t nelems,     \
                                                      uint64_t *sig_addr, uint64_t signal,         \
                                                      int sig_op, int pe)                          \
    {                                                                                              \
        put_signal_impl(SHMEM_CTX_DEFAULT, dest, source, nelems *(ESIZE), sig_addr, signal,        \
                        sig_op, pe, "shmem_" PS "put" QS "_signal_nbi");                           \
    }

#define SHM_DEF_RMA(T, N)                                                                          \
    SHM_DEF_RMA_FAMILY(T, N##_, , sizeof(T), #N "_", "")                                           \
    GMUX_API void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe)                     \
    {                                                                                              \
        put_impl(ctx, dest, &value, sizeof(T), pe, false, "shmem_" #N "_p");                       \
    }                                                                                              \
    GMUX_API void shmem_##N##_p(T *dest, T value, int pe)                                          \
    {                                                                                              \
        put_impl(SHMEM_CTX_DEFAULT, dest, &value, sizeof(T), pe, false, "shmem_" #N "_p");         \
    }                                                                                              \
    GMUX_API T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe)                         \
    {                                                                                              \
        T v;                                                                                       \
        get_impl(ctx, &v, source, sizeof(T), pe, "shmem_" #N "_g");                                \
        return v;                                                                                  \
    }                                                                                              \
    GMUX_API T shmem_##N##_g(const T *source, int pe)                                              \
    {                                                                                              \
        return shmem_ctx_##N##_g(SHMEM_CTX_DEFAULT, source, pe);                                   \
    }
GMUX_SHMEM_RMA_TYPES(SHM_DEF_RMA)

#define SHM_DEF_SIZED(S) SHM_DEF_RMA_FAMILY(void, , S, (S) / 8, "", #S)
GMUX_SHMEM_SIZES(SHM_DEF_SIZED)
SHM_DEF_RMA_FAMILY(void, , mem, 1, "", "mem")
