/*
 * The communicator: joining the job (bootstrap, transport choice, address
 * exchange) and finalisation; the windows are window.c.
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
#include "net/jobenv.h"

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
    return net_jobenv_count(getenv(name), def);
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
    else if (env_int("GMUX_NNODES", 1) < 1) /* was taken as one host: shm, loopback */
        COM_ERROR(NET, "GMUX_NNODES='%s' is not 1 to %d hosts", getenv("GMUX_NNODES"),
                  NET_JOBENV_COUNT_MAX);
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
