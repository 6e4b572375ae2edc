/*
 * The communicator: joining the job (bootstrap, transport choice, address
 * exchange), the windows, and finalisation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "common/clock.h"
#include "common/export.h"
#include "common/log.h"
#include "common/settings.h"
#include "net/boot_proto.h"
#include "net/internal.h"

GMUX_API void gmux_comm_params_init(gmux_comm_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->struct_size = sizeof(*p);
    p->num_contexts = 4;
    p->num_signals = 1024;
    p->num_counters = 1024;
    p->start_proxy = 1;
}

GMUX_API int gmux_comm_rank(const gmux_comm_t *comm)
{
    return comm->rank;
}

GMUX_API int gmux_comm_size(const gmux_comm_t *comm)
{
    return comm->size;
}

GMUX_API const char *gmux_comm_provider(const gmux_comm_t *comm)
{
    return comm->provider;
}

GMUX_API double gmux_comm_timeout(const gmux_comm_t *comm)
{
    return comm ? net_timeout_s(comm) : 0;
}

GMUX_API gmux_status_t gmux_comm_set_timeout(gmux_comm_t *comm, double timeout_s)
{
    if (!comm || !(timeout_s > 0)) /* NaN too */
        return GMUX_ERR_INVALID;
    if (!(timeout_s < NET_TIMEOUT_MAX_S))
        timeout_s = NET_TIMEOUT_MAX_S;
    atomic_store_explicit(&comm->timeout_s, timeout_s, memory_order_relaxed);
    return GMUX_OK;
}

static uint64_t timeout_ns(const gmux_comm_t *comm)
{
    return (uint64_t)(net_timeout_s(comm) * 1e9);
}

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x < 0 || x > (1 << 20) ? -1 : (int)x;
}

void net_shm_name(int rank, const char *suffix, char *out, size_t len)
{
    const char *job = getenv(NET_ENV_JOB);
    if (job && *job && strlen(job) < 64)
        snprintf(out, len, "%s%s-%d%s", NET_SHM_PREFIX, job, rank, suffix);
    else
        snprintf(out, len, "%s%d-%d%s", NET_SHM_PREFIX, (int)getpid(), rank, suffix);
}

/* Resolves the setting into a provider, or "auto-hosts" (the best fabric
 * present for a multi-host job, see join_fabric); NULL when unknown. */
static const char *choose_provider(const gmux_comm_params_t *p)
{
    const char *want = p->provider ? p->provider : COM_SETTING_STRING(NET_PROVIDER);
    static const char *const known[] = {"shm", "tcp", "verbs;ofi_rxm", "efa", "cxi"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(want, known[i]) == 0)
            return known[i];
    if (strcmp(want, "tcp;ofi_rxm") == 0)
        return "tcp";
    if (strcmp(want, "auto") != 0)
        return NULL;
    return env_int("GMUX_NNODES", 1) > 1 ? "auto-hosts" : "shm";
}

/* Frees what an op still owns (a fetch never completed, or orphaned) and
 * the op itself if it was allocated alone. */
static void op_free(net_op_t *op)
{
    if (!op)
        return;
    if (op->fetch_len && op->fetch_buf != &op->amo[2])
        free(op->fetch_buf);
    if (op->heap)
        free(op);
}

static void comm_free(gmux_comm_t *comm)
{
    uint32_t nrings = comm->nctx * (uint32_t)comm->size;
    for (uint32_t i = 0; comm->rings && i < nrings; i++)
        if (comm->rings[i].mem)
            net_ring_destroy(&comm->rings[i]);
    for (uint32_t i = 0; comm->in && i < nrings; i++)
        net_order_fini(&comm->in[i]);
    for (int w = 0; w < NET_MAX_WINDOWS; w++) {
        if (comm->win[w].mr)
            fi_close(&comm->win[w].mr->fid);
        free(comm->win[w].raddr);
        free(comm->win[w].key);
    }
    for (uint32_t i = 0; i < comm->nhsrc; i++)
        fi_close(&comm->hsrc[i].mr->fid);
    if (comm->scratch_mr)
        fi_close(&comm->scratch_mr->fid);
    if (comm->have_fab)
        net_fab_close(&comm->fab);
    free(comm->scratch);
    free(comm->scratch_raddr);
    free(comm->scratch_key);
    free(comm->rings);
    free(comm->out);
    free(comm->in);
    free((void *)comm->signals);
    free((void *)comm->counters);
    free((void *)comm->ctx_error);
    free(comm->ctx_issued);
    for (uint32_t i = 0; comm->ops && i < comm->nops; i++)
        op_free(comm->ops[i]);
    while (comm->orphans) {
        net_op_t *op = comm->orphans;
        comm->orphans = op->next_free;
        op_free(op);
    }
    free(comm->ops);
    free(comm->op_block);
    free(comm->rx);
    free(comm->batch);
    free(comm->peer_warned);
    free(comm->peer_reclaimed);
    net_shmguard_close(comm->guard);
    pthread_mutex_destroy(&comm->progress_lock);
    free(comm);
}

static gmux_status_t comm_alloc(gmux_comm_t *comm)
{
    uint32_t nrings = comm->nctx * (uint32_t)comm->size;
    comm->nsig_all = NET_SIG_RESERVED + comm->nsig + NET_AGREE_SIGNALS;
    comm->rings = calloc(nrings, sizeof(*comm->rings));
    comm->out = calloc(nrings, sizeof(*comm->out));
    comm->in = calloc(nrings, sizeof(*comm->in));
    comm->signals = calloc(comm->nsig_all, sizeof(*comm->signals));
    comm->counters = calloc(comm->ncnt ? comm->ncnt : 1, sizeof(*comm->counters));
    comm->ctx_error = calloc(comm->nctx, sizeof(*comm->ctx_error));
    comm->ctx_issued = calloc(comm->nctx, sizeof(*comm->ctx_issued));
    comm->nops = 1024;
    comm->op_block = calloc(comm->nops, sizeof(*comm->op_block));
    comm->ops = calloc(comm->nops, sizeof(*comm->ops));
    comm->rx = calloc(NET_RX_BUFS, sizeof(*comm->rx));
    comm->batch = calloc(1, sizeof(*comm->batch));
    comm->peer_warned = calloc((size_t)comm->size, sizeof(*comm->peer_warned));
    comm->peer_reclaimed = calloc((size_t)comm->size, sizeof(*comm->peer_reclaimed));
    comm->scratch = calloc(8, sizeof(uint64_t));
    comm->scratch_raddr = calloc((size_t)comm->size, sizeof(uint64_t));
    comm->scratch_key = calloc((size_t)comm->size, sizeof(uint64_t));
    if (!comm->scratch || !comm->scratch_raddr || !comm->scratch_key || !comm->rings ||
        !comm->out || !comm->in || !comm->signals || !comm->counters || !comm->ctx_error ||
        !comm->ctx_issued || !comm->ops || !comm->op_block || !comm->rx || !comm->peer_warned ||
        !comm->batch || !comm->peer_reclaimed)
        return GMUX_ERR_NOMEM;
    for (uint32_t i = 0; i < nrings; i++) {
        net_order_init(&comm->in[i]);
        gmux_status_t st = net_ring_create(comm->ring_slots, &comm->rings[i]);
        if (st != GMUX_OK)
            return st;
    }
    for (uint32_t i = 0; i < comm->nops; i++) {
        comm->ops[i] = &comm->op_block[i];
        comm->ops[i]->next_free = comm->free_ops;
        comm->free_ops = comm->ops[i];
    }
    return GMUX_OK;
}

/* Opens the transport and exchanges endpoint addresses. */
/* What every rank of a job must have alike: a peer's operations name its
 * contexts and signal words, and go over one provider with the same
 * capabilities. Exchanged when joining, so that a rank started with other
 * parameters (or other GMUX_NET_* settings) fails the job at once, on every
 * rank, instead of its peers' operations failing later one by one. */
typedef struct net_shape {
    char provider[32];
    uint32_t nctx, nsig;
    uint32_t atomics; /* remote atomics offered (GMUX_NET_HMEM=rma trades them away) */
} net_shape_t;

static net_shape_t comm_shape(const gmux_comm_t *comm)
{
    net_shape_t s = {.nctx = comm->nctx, .nsig = comm->nsig, .atomics = comm->fab.atomics};
    snprintf(s.provider, sizeof(s.provider), "%s", comm->provider);
    return s;
}

/* Rank r's shape against rank 0's; every rank compares the same pairs, so
 * all come to the same verdict. Rank 0 says what differs. */
static gmux_status_t join_check(const gmux_comm_t *comm, const net_shape_t *first,
                                const net_shape_t *other, int r)
{
    char what[160] = "";
    if (strncmp(first->provider, other->provider, sizeof(first->provider)) != 0)
        snprintf(what, sizeof(what),
                 "provider %.31s on rank 0, %.31s on rank %d (GMUX_NET_PROVIDER)", first->provider,
                 other->provider, r);
    else if (first->nctx != other->nctx)
        snprintf(what, sizeof(what), "%u contexts on rank 0, %u on rank %d (num_contexts)",
                 first->nctx, other->nctx, r);
    else if (first->nsig != other->nsig)
        snprintf(what, sizeof(what), "%u signal words on rank 0, %u on rank %d (num_signals)",
                 first->nsig, other->nsig, r);
    else if (first->atomics != other->atomics)
        snprintf(what, sizeof(what),
                 "remote atomics %s rank 0 but %s rank %d (GMUX_NET_HMEM: rma gives them up)",
                 first->atomics ? "on" : "not on", other->atomics ? "on" : "not on", r);
    else
        return GMUX_OK;
    if (comm->rank == 0)
        COM_ERROR(NET, "ranks of one job differ: %s; every rank must join alike", what);
    return GMUX_ERR_INVALID;
}

static gmux_status_t join_fabric(gmux_comm_t *comm, const char *prov, uint64_t deadline)
{
    bool loopback = env_int("GMUX_NNODES", 1) <= 1;
    char shm_name[128];
    net_shm_name(comm->rank, "", shm_name, sizeof(shm_name));
    const char *hs = COM_SETTING_STRING(NET_HMEM);
    net_fab_hmem_t hmem = strcmp(hs, "off") == 0   ? NET_FAB_HMEM_OFF
                          : strcmp(hs, "rma") == 0 ? NET_FAB_HMEM_RMA
                                                   : NET_FAB_HMEM_AUTO;
    if (hmem == NET_FAB_HMEM_AUTO && strcmp(hs, "auto") != 0)
        COM_WARN(NET, "GMUX_NET_HMEM=%s: not auto, rma or off; using auto", hs);
    gmux_status_t st;
    if (strcmp(prov, "auto-hosts") == 0) {
        /* across hosts: a cluster fabric where present, else tcp. Every rank
         * must pick the same; ranks of one job run the same software stack. */
        static const char *const order[] = {"cxi", "efa", "verbs;ofi_rxm", "tcp"};
        st = GMUX_ERR_UNSUPPORTED;
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && st != GMUX_OK; i++)
            st = net_fab_open(order[i], loopback, shm_name, hmem, &comm->fab);
    } else {
        st = net_fab_open(prov, loopback, shm_name, hmem, &comm->fab);
    }
    if (st != GMUX_OK)
        return st;
    comm->have_fab = true;
    comm->provider = comm->fab.prov_name;
    /* what a peer needs: the endpoint's address and the scratch word's key;
     * and what every rank must have alike (join_check) */
    struct card {
        char name[NET_FAB_NAME_MAX];
        uint64_t raddr, key;
        net_shape_t shape;
    } mine = {{0}, 0, 0, comm_shape(comm)};
    uint64_t key;
    st = net_fab_mr_reg(&comm->fab, comm->scratch, 8 * sizeof(uint64_t), NET_MAX_WINDOWS + 1,
                        &comm->scratch_mr, &key);
    if (st != GMUX_OK)
        return st;
    memcpy(mine.name, comm->fab.name, comm->fab.namelen);
    mine.raddr = comm->fab.virt_addr ? (uint64_t)(uintptr_t)comm->scratch : 0;
    mine.key = key;
    struct card *all = NULL;
    st = net_boot_allgather(comm->boot, &mine, sizeof(mine), (void **)&all, deadline);
    if (st != GMUX_OK)
        return st;
    char *names = malloc((size_t)comm->size * NET_FAB_NAME_MAX);
    if (!names) {
        free(all);
        return GMUX_ERR_NOMEM;
    }
    for (int r = 0; r < comm->size && st == GMUX_OK; r++) {
        memcpy(names + (size_t)r * NET_FAB_NAME_MAX, all[r].name, NET_FAB_NAME_MAX);
        comm->scratch_raddr[r] = all[r].raddr;
        comm->scratch_key[r] = all[r].key;
        st = join_check(comm, &all[0].shape, &all[r].shape, r);
    }
    free(all);
    if (st != GMUX_OK) {
        free(names);
        return st;
    }
    st = net_fab_insert(&comm->fab, names, comm->size);
    if (st == GMUX_OK && strcmp(comm->fab.prov_name, "shm") == 0 &&
        COM_SETTING_BOOL(NET_SHM_GUARD) &&
        net_shmguard_open(names, NET_FAB_NAME_MAX, comm->size, comm->rank, &comm->guard) != GMUX_OK)
        COM_INFO(NET,
                 "rank %d: no shm guard for this libfabric; a rank dying inside it may "
                 "strand the others until the launcher's grace ends",
                 comm->rank);
    free(names);
    if (st != GMUX_OK)
        return st;
    pthread_mutex_lock(&comm->progress_lock);
    st = net_proxy_post_rx(comm);
    pthread_mutex_unlock(&comm->progress_lock);
    return st;
}

/* shm: once every rank has joined, every region is mapped (libfabric 1.17
 * maps a peer's when its address is inserted) and every guard page exists;
 * each rank maps the others' pages and, after one more barrier, unlinks its
 * own region and page: nothing of the job stays in /dev/shm, whoever dies
 * later (a rank, or the launcher that removes the leftovers of killed ranks,
 * SIGKILLed). The barrier is every shm job's, guard or not: collectives are
 * matched by order. The region goes guard or not: whether it may depends on
 * libfabric alone (net_fab_shm_unlink); until 2026-12-02 only the guard
 * unlinked it, and without the guard it outlived a rank that did not
 * finalize once its launcher was gone (test_net_orphan). */
static gmux_status_t unlink_shm_names(gmux_comm_t *comm, uint64_t deadline)
{
    if (strcmp(comm->provider, "shm") != 0)
        return GMUX_OK;
    net_shmguard_map_pages(comm->guard);
    gmux_status_t st = net_boot_barrier(comm->boot, deadline);
    if (st == GMUX_OK) {
        net_fab_shm_unlink(&comm->fab);
        net_shmguard_unlink(comm->guard);
    }
    return st;
}

/* Whether the job and the parameters can be joined with; if not, logs why. */
static bool init_args_ok(const gmux_comm_params_t *p, int rank, int size, const char *bootaddr,
                         const char *prov, int64_t slots)
{
    if (size < 1 || size > (int)NET_CQD_MAX_RANKS)
        COM_ERROR(NET, "GMUX_SIZE='%s' is not 1 to %u ranks", getenv(NET_ENV_SIZE),
                  NET_CQD_MAX_RANKS);
    else if (rank < 0 || rank >= size)
        COM_ERROR(NET, "GMUX_RANK='%s' is not a rank of the %d of GMUX_SIZE (0 to %d)",
                  getenv(NET_ENV_RANK), size, size - 1);
    else if (size > 1 && !bootaddr)
        COM_ERROR(NET, "a job of %d ranks without GMUX_BOOTSTRAP (gmux launch sets it)", size);
    else if (!prov)
        COM_ERROR(NET, "unknown provider '%s' (shm, tcp, verbs;ofi_rxm, efa, cxi or auto)",
                  p->provider ? p->provider : COM_SETTING_STRING(NET_PROVIDER));
    else if (p->num_contexts == 0 || p->num_contexts > NET_CQD_MAX_CTX ||
             p->num_signals > NET_MAX_SIGNALS || p->num_counters > NET_MAX_SIGNALS)
        COM_ERROR(NET, "num_contexts %u (1 to %u), num_signals %u or num_counters %u (at most %u)",
                  p->num_contexts, NET_CQD_MAX_CTX, p->num_signals, p->num_counters,
                  NET_MAX_SIGNALS);
    else if (slots < 2 || slots > (1 << 20) || (slots & (slots - 1)))
        COM_ERROR(NET, "%s %lld is not a power of two from 2 to 2^20",
                  p->ring_slots ? "ring_slots" : "GMUX_NET_RING_SLOTS", (long long)slots);
    else
        return true;
    return false;
}

GMUX_API gmux_status_t gmux_comm_init(const gmux_comm_params_t *params, gmux_comm_t **comm_p)
{
    if (!comm_p)
        return GMUX_ERR_INVALID;
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    if (params) {
        if (params->struct_size < sizeof(uint32_t) || params->struct_size > sizeof(p))
            return GMUX_ERR_VERSION;
        memcpy(&p, params, params->struct_size);
    }
    char err[512];
    bool proxy_stuck = false;
    /* err is empty when all that fails was said already (GMUX_LOG) */
    if (com_settings_init_scoped(COM_SCOPE_NET, err, sizeof(err)) != GMUX_OK && err[0])
        COM_WARN(NET, "settings: %s", err);
    int rank = env_int(NET_ENV_RANK, 0), size = env_int(NET_ENV_SIZE, 1);
    const char *bootaddr = getenv(NET_ENV_BOOTSTRAP);
    const char *prov = choose_provider(&p);
    int64_t slots = p.ring_slots ? p.ring_slots : COM_SETTING_INT(NET_RING_SLOTS);
    if (!init_args_ok(&p, rank, size, bootaddr, prov, slots))
        return GMUX_ERR_INVALID;
    gmux_comm_t *comm = calloc(1, sizeof(*comm));
    if (!comm)
        return GMUX_ERR_NOMEM;
    pthread_mutex_init(&comm->progress_lock, NULL);
    comm->rank = rank;
    comm->size = size;
    comm->nctx = p.num_contexts;
    comm->nsig = p.num_signals;
    comm->ncnt = p.num_counters;
    comm->ring_slots = (uint32_t)slots;
    double timeout_s = p.timeout_s > 0 ? p.timeout_s : COM_SETTING_DOUBLE(NET_TIMEOUT);
    if (!(timeout_s < NET_TIMEOUT_MAX_S)) /* every "* 1e9" below stays in range */
        timeout_s = NET_TIMEOUT_MAX_S;
    atomic_init(&comm->timeout_s, timeout_s);
    comm->idle_max_ns = (uint64_t)COM_SETTING_INT(NET_PROXY_IDLE_US) * COM_NS_PER_US;
    if (comm->idle_max_ns < COM_NS_PER_US)
        comm->idle_max_ns = COM_NS_PER_US;
    comm->provider = "self";
    atomic_init(&comm->inline_progress, COM_SETTING_BOOL(NET_INLINE_PROGRESS));
    comm->coalesce = COM_SETTING_BOOL(NET_COALESCE);
    comm->direct = COM_SETTING_BOOL(NET_DIRECT);
    uint64_t deadline = com_deadline_after_ns(timeout_ns(comm));
    gmux_status_t st = comm_alloc(comm);
    if (st != GMUX_OK)
        goto free_comm;
    if (bootaddr && size > 1) {
        st = net_boot_open(rank, size, bootaddr, deadline, &comm->boot);
        if (st != GMUX_OK)
            goto free_comm;
        st = join_fabric(comm, prov, deadline);
        if (st != GMUX_OK)
            goto close_boot;
    }
    comm->world = (gmux_team_t){.comm = comm, .stride = 1, .size = size, .rank = rank};
    comm->nteams = 1;
    if (p.start_proxy) {
        st = net_proxy_start(comm);
        if (st != GMUX_OK)
            goto close_boot;
    }
    if (comm->boot) {
        st = net_boot_barrier(comm->boot, deadline);
        if (st == GMUX_OK)
            st = unlink_shm_names(comm, deadline);
        if (st != GMUX_OK)
            goto stop_proxy;
    }
    COM_INFO(NET, "rank %d/%d joined over %s", rank, size, comm->provider);
    *comm_p = comm;
    return GMUX_OK;
stop_proxy:
    proxy_stuck = !net_proxy_stop(comm);
close_boot:
    net_boot_close(comm->boot, false);
free_comm:
    COM_ERROR(NET, "rank %d: joining the job failed: %s", rank, gmux_status_str(st));
    if (!proxy_stuck)
        comm_free(comm); /* else the stuck proxy still uses it: leaked, as in finalize */
    return st;
}

GMUX_API gmux_status_t gmux_comm_finalize(gmux_comm_t *comm)
{
    if (!comm)
        return GMUX_ERR_INVALID;
    gmux_status_t st = GMUX_OK;
    if (!net_boot_any_dead(comm->boot)) {
        for (uint32_t c = 0; c < comm->nctx; c++) {
            gmux_status_t s = gmux_quiet(comm, c);
            if (s != GMUX_OK && st == GMUX_OK)
                st = s;
        }
    }
    /* no rank closes its endpoint while others may still write to it */
    if (comm->boot && st == GMUX_OK && !net_boot_any_dead(comm->boot))
        st = net_boot_barrier(comm->boot, com_deadline_after_ns(timeout_ns(comm)));
    bool stopped = net_proxy_stop(comm);
    if (stopped)
        COM_DEBUG(NET,
                  "rank %d: %llu descriptors, %llu writes, %llu messages, %llu CQ reads "
                  "(%llu entries), %llu EAGAIN",
                  comm->rank, (unsigned long long)comm->stats.descs,
                  (unsigned long long)comm->stats.writes, (unsigned long long)comm->stats.msgs,
                  (unsigned long long)comm->stats.cq_reads,
                  (unsigned long long)comm->stats.cq_entries,
                  (unsigned long long)comm->stats.eagain);
    if (net_boot_any_dead(comm->boot) && st == GMUX_OK)
        st = GMUX_ERR_PEER;
    if (!stopped && st == GMUX_OK)
        st = GMUX_ERR_TIMEOUT;
    /* BYE tells the launcher this rank ended in order. A peer's death
     * (GMUX_ERR_PEER) is that peer's failure, already counted: without BYE
     * the launcher named every survivor of a death as a rank that exited
     * without finalizing. Only a failure of this rank's own (its proxy would
     * not stop) is left to count as one. */
    net_boot_close(comm->boot, st == GMUX_OK || st == GMUX_ERR_PEER);
    comm->boot = NULL;
    if (stopped)
        comm_free(comm); /* else the stuck proxy still uses it: leaked on purpose */
    return st;
}

/* Registers base with the provider as memory *mem (NULL: host) under key_req;
 * GMUX_ERR_UNSUPPORTED where the provider cannot reach that memory. */
static gmux_status_t mem_reg(gmux_comm_t *comm, void *base, size_t size, const gmux_mem_t *mem,
                             uint64_t key_req, struct fid_mr **mr_p, uint64_t *key_p, void **desc_p)
{
    *desc_p = NULL;
    if (!mem || mem->kind == GMUX_MEM_HOST)
        return net_fab_mr_reg(&comm->fab, base, size, key_req, mr_p, key_p);
    if (mem->kind != GMUX_MEM_CUDA && mem->kind != GMUX_MEM_HOST_HMEM)
        return GMUX_ERR_INVALID;
    enum fi_hmem_iface iface = mem->kind == GMUX_MEM_CUDA ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
    return net_fab_mr_reg_hmem(&comm->fab, base, size, iface, mem->device, key_req, mr_p, key_p,
                               desc_p);
}

/* The collective behind both window registrations: this rank registers base
 * as *mem, or fallback (host) where that is unsupported; every rank learns
 * the others' addresses, keys, sizes and outcomes, and all fail together:
 * a rank with a bad argument or no free window still takes part in the
 * exchange, so that no rank waits for it until the timeout. */
static gmux_status_t window_register(gmux_comm_t *comm, gmux_status_t local, void *base,
                                     size_t size, const gmux_mem_t *mem, void *fallback,
                                     gmux_window_t *win_p, bool *direct_p)
{
    if (!comm)
        return GMUX_ERR_INVALID;
    int w = 0;
    while (w < NET_MAX_WINDOWS && comm->win[w].used)
        w++;
    gmux_status_t st = GMUX_OK;
    net_win_t *win = NULL;
    if (local != GMUX_OK)
        st = local; /* failed before: only announces it */
    else if ((!base && size) || !win_p)
        st = GMUX_ERR_INVALID;
    else if (w == NET_MAX_WINDOWS)
        st = GMUX_ERR_CAPACITY;
    else
        win = &comm->win[w];
    if (win) {
        win->raddr = calloc((size_t)comm->size, sizeof(uint64_t));
        win->key = calloc((size_t)comm->size, sizeof(uint64_t));
        if (!win->raddr || !win->key)
            st = GMUX_ERR_NOMEM;
    }
    bool direct = mem && mem->kind != GMUX_MEM_HOST;
    uint64_t key = 0;
    void *desc;
    if (st == GMUX_OK && direct && !comm->have_fab)
        st = GMUX_ERR_UNSUPPORTED; /* nothing reaches it but this rank's own copies */
    if (st == GMUX_OK && comm->have_fab) {
        net_progress_lock(comm);
        st = mem_reg(comm, base, size ? size : 1, mem, (uint64_t)w + 1, &win->mr, &key, &desc);
        pthread_mutex_unlock(&comm->progress_lock);
        if (st != GMUX_OK)
            win->mr = NULL;
    }
    if (st == GMUX_ERR_UNSUPPORTED && direct && fallback) {
        direct = false;
        base = fallback;
        st = GMUX_OK;
        if (comm->have_fab) {
            net_progress_lock(comm);
            st = mem_reg(comm, base, size ? size : 1, NULL, (uint64_t)w + 1, &win->mr, &key, &desc);
            pthread_mutex_unlock(&comm->progress_lock);
            if (st != GMUX_OK)
                win->mr = NULL;
        }
    }
    /* address, key, size, outcome */
    uint64_t mine[4] = {comm->have_fab && comm->fab.virt_addr ? (uint64_t)(uintptr_t)base : 0, key,
                        size, (uint64_t)(-(int64_t)st)};
    uint64_t *all = NULL;
    if (comm->boot) {
        gmux_status_t xs = net_boot_allgather(comm->boot, mine, sizeof(mine), (void **)&all,
                                              com_deadline_after_ns(timeout_ns(comm)));
        if (xs != GMUX_OK)
            st = xs;
    }
    for (int r = 0; all && r < comm->size; r++) {
        if (st == GMUX_OK && all[4 * r + 3] != 0)
            st = (gmux_status_t)(-(int64_t)all[4 * r + 3]); /* that rank's failure */
        if (st == GMUX_OK && all[4 * r + 2] != size)
            st = GMUX_ERR_INVALID; /* not symmetric */
        if (win && win->raddr) {
            win->raddr[r] = all[4 * r];
            win->key[r] = all[4 * r + 1];
        }
    }
    free(all);
    if (st != GMUX_OK)
        goto undo;
    if (!comm->boot) {
        win->raddr[comm->rank] = mine[0];
        win->key[comm->rank] = mine[1];
    }
    win->base = base;
    win->size = size;
    win->mem = (uint8_t)(direct ? mem->kind : GMUX_MEM_HOST);
    win->used = true;
    *win_p = (gmux_window_t)w;
    if (direct_p)
        *direct_p = direct;
    return GMUX_OK;
undo:
    if (win) {
        if (win->mr)
            fi_close(&win->mr->fid);
        win->mr = NULL;
        free(win->raddr);
        free(win->key);
        win->raddr = win->key = NULL;
    }
    return st;
}

GMUX_API gmux_status_t gmux_window_register(gmux_comm_t *comm, void *base, size_t size,
                                            gmux_window_t *win_p)
{
    return window_register(comm, GMUX_OK, base, size, NULL, NULL, win_p, NULL);
}

gmux_status_t net_window_register_failed(gmux_comm_t *comm, size_t size, gmux_status_t why)
{
    gmux_window_t unused;
    gmux_status_t st = window_register(comm, why, NULL, size, NULL, NULL, &unused, NULL);
    return st != GMUX_OK ? st : why;
}

GMUX_API gmux_status_t gmux_window_register_mem(gmux_comm_t *comm, void *base, size_t size,
                                                const gmux_mem_t *mem, void *fallback,
                                                gmux_window_t *win_p, bool *direct_p)
{
    if (!mem) /* still part of the collective, as every failure before it */
        return comm ? net_window_register_failed(comm, size, GMUX_ERR_INVALID) : GMUX_ERR_INVALID;
    return window_register(comm, GMUX_OK, base, size, mem, fallback, win_p, direct_p);
}

GMUX_API gmux_status_t gmux_source_register_mem(gmux_comm_t *comm, void *base, size_t size,
                                                const gmux_mem_t *mem)
{
    if (!comm || !base || size == 0 || !mem || mem->kind == GMUX_MEM_HOST)
        return GMUX_ERR_INVALID;
    if (!comm->have_fab)
        return GMUX_ERR_UNSUPPORTED;
    net_progress_lock(comm);
    gmux_status_t st = GMUX_ERR_CAPACITY;
    if (comm->nhsrc < NET_MAX_HSRC) {
        net_hsrc_t h = {.base = (uint64_t)(uintptr_t)base, .size = size, .mem = (uint8_t)mem->kind};
        uint64_t key;
        /* sources are never addressed remotely; keys past the windows' and scratch's */
        st = mem_reg(comm, base, size, mem, NET_MAX_WINDOWS + 2 + comm->hsrc_keys++, &h.mr, &key,
                     &h.desc);
        if (st == GMUX_OK)
            comm->hsrc[comm->nhsrc++] = h;
    }
    pthread_mutex_unlock(&comm->progress_lock);
    return st;
}

GMUX_API gmux_status_t gmux_source_deregister(gmux_comm_t *comm, void *base)
{
    if (!comm || !base)
        return GMUX_ERR_INVALID;
    gmux_status_t st = GMUX_ERR_NOT_FOUND;
    /* under the lock: the proxy posts from it only while holding it, and
     * what it posted earlier completes before the caller's flush returns */
    net_progress_lock(comm);
    for (uint32_t i = 0; i < comm->nhsrc && st != GMUX_OK; i++) {
        if (comm->hsrc[i].base == (uint64_t)(uintptr_t)base) {
            fi_close(&comm->hsrc[i].mr->fid);
            comm->hsrc[i] = comm->hsrc[--comm->nhsrc];
            st = GMUX_OK;
        }
    }
    pthread_mutex_unlock(&comm->progress_lock);
    return st;
}

GMUX_API void gmux_comm_set_mem_copy(gmux_comm_t *comm, gmux_mem_copy_fn copy, void *arg)
{
    if (!comm)
        return;
    net_progress_lock(comm);
    comm->mem_copy = copy;
    comm->mem_copy_arg = arg;
    pthread_mutex_unlock(&comm->progress_lock);
}

GMUX_API gmux_status_t gmux_window_deregister(gmux_comm_t *comm, gmux_window_t w)
{
    if (!comm || w >= NET_MAX_WINDOWS || !comm->win[w].used)
        return GMUX_ERR_INVALID;
    gmux_status_t st = gmux_barrier(&comm->world);
    net_progress_lock(comm);
    net_win_t *win = &comm->win[w];
    if (win->mr)
        fi_close(&win->mr->fid);
    free(win->raddr);
    free(win->key);
    memset(win, 0, sizeof(*win));
    pthread_mutex_unlock(&comm->progress_lock);
    return st;
}
