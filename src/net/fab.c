/* net_fab: see fab.h. */
#include "net/fab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "common/log.h"
#include "net/fiload.h"

/* writes, and (net_ext) reads and atomics */
#define NET_FAB_MR_ACCESS (FI_REMOTE_WRITE | FI_WRITE | FI_REMOTE_READ | FI_READ)

gmux_status_t net_fab_status(int fi_ret)
{
    switch (fi_ret) {
    case 0:
        return GMUX_OK;
    case -FI_EAGAIN:
        return GMUX_ERR_BUSY;
    case -FI_ENOMEM:
        return GMUX_ERR_NOMEM;
    case -FI_EINVAL:
        return GMUX_ERR_INVALID;
    case -FI_ENODATA:
    case -FI_ENOSYS:
    case -FI_EOPNOTSUPP:
        return GMUX_ERR_UNSUPPORTED;
    case -FI_ETIMEDOUT:
        return GMUX_ERR_TIMEOUT;
    case -FI_ECONNREFUSED:
    case -FI_ECONNRESET:
    case -FI_ECONNABORTED:
    case -FI_EHOSTUNREACH:
    case -FI_ENOTCONN:
        return GMUX_ERR_PEER;
    default:
        return GMUX_ERR_TRANSPORT;
    }
}

static struct fi_info *make_hints(const char *prov_name, bool hmem, bool atomics)
{
    struct fi_info *h = net_fi_allocinfo();
    if (!h)
        return NULL;
    h->caps = FI_RMA | FI_MSG | FI_WRITE | FI_REMOTE_WRITE | FI_SEND | FI_RECV;
    h->caps |= FI_READ | FI_REMOTE_READ | FI_ATOMIC; /* net_ext: get and remote atomics */
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    if (hmem) {
        /* device memory registered with its interface; its local buffers
         * carry their registration's descriptor (FI_MR_HMEM) */
        h->caps |= FI_HMEM;
        h->domain_attr->mr_mode |= FI_MR_HMEM;
    }
    if (!atomics)
        h->caps &= ~(uint64_t)FI_ATOMIC;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->fabric_attr->prov_name = strdup(prov_name);
    return h;
}

gmux_status_t net_fab_open(const char *provider, bool loopback, const char *shm_name,
                           net_fab_hmem_t hmem, net_fab_t *fab)
{
    memset(fab, 0, sizeof(*fab));
    bool tcp = strcmp(provider, "tcp") == 0;
    bool shm = strcmp(provider, "shm") == 0;
    /* cluster fabrics go by their libfabric names (compiled in, not tested here) */
    bool other = strcmp(provider, "verbs;ofi_rxm") == 0 || strcmp(provider, "efa") == 0 ||
                 strcmp(provider, "cxi") == 0;
    if (!tcp && !shm && !other)
        return GMUX_ERR_INVALID;
    if (other && loopback)
        return GMUX_ERR_UNSUPPORTED;  /* single-host jobs stay on shm or loopback tcp */
    gmux_status_t st = net_fi_load(); /* the first fabric of the process pays its load */
    if (st != GMUX_OK)
        return st;
    if (tcp && loopback)
        setenv("FI_TCP_IFACE", "lo", 1); /* the project's loopback-only rule */
    /* what to ask for, in turn, until a provider answers: FI_HMEM with
     * everything else, FI_HMEM without remote atomics (libfabric 1.17's shm
     * offers only that), none */
    static const bool ask_hmem[] = {true, true, false}, ask_atomics[] = {true, false, true};
    const char *node = tcp && loopback ? "127.0.0.1" : NULL;
    uint64_t flags = tcp && loopback ? FI_SOURCE : 0;
    int ret = -FI_ENODATA;
    for (int k = 0; k < 3 && ret == -FI_ENODATA; k++) {
        if ((ask_hmem[k] && hmem == NET_FAB_HMEM_OFF) ||
            (!ask_atomics[k] && hmem != NET_FAB_HMEM_RMA))
            continue;
        struct fi_info *hints =
            make_hints(tcp ? "tcp;ofi_rxm" : provider, ask_hmem[k], ask_atomics[k]);
        if (!hints)
            return GMUX_ERR_NOMEM;
        if (shm && shm_name) {
            /* a name of our own: the default (the pid) collides with the leftovers
             * of a killed process whose pid was recycled */
            char addr[NET_FAB_NAME_MAX];
            int n = snprintf(addr, sizeof(addr), "fi_shm://%s", shm_name);
            hints->addr_format = FI_ADDR_STR;
            hints->src_addr = strdup(addr);
            hints->src_addrlen = (size_t)n + 1;
            if (!hints->src_addr) {
                net_fi_freeinfo(hints);
                return GMUX_ERR_NOMEM;
            }
        }
        ret = net_fi_getinfo(FI_VERSION(1, 17), node, NULL, flags, hints, &fab->info);
        net_fi_freeinfo(hints);
    }
    st = net_fab_status(ret);
    if (st != GMUX_OK) {
        COM_ERROR(NET, "fi_getinfo(%s): %s", provider, net_fi_strerror(-ret));
        return st;
    }
    struct fi_info *fi = fab->info;
    fab->prov_name = fi->fabric_attr->prov_name;
    fab->virt_addr = (fi->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
    fab->prov_key = (fi->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
    fab->hmem = (fi->caps & FI_HMEM) != 0;
    fab->atomics = (fi->caps & FI_ATOMIC) != 0;
    fab->inject_size = fi->tx_attr->inject_size;
    /* libfabric 1.17's tcp provider queues an injected write without marking
     * it as such; when the connection to a dead peer is torn down it reports
     * the queued ones as canceled with no context, and ofi_rxm dereferences
     * that context inside fi_cq_read (SIGSEGV). Writes over tcp therefore
     * always carry a context of ours (docs/net.md, "Peer failure"). */
    fab->rma_inject_size = tcp ? 0 : fab->inject_size;
    fab->max_msg = fi->ep_attr->max_msg_size;
    fab->tx_size = fi->tx_attr->size;
    if (fi->domain_attr->cq_data_size < 8) {
        COM_ERROR(NET, "%s: remote CQ data of %zu bytes, need 8", fab->prov_name,
                  fi->domain_attr->cq_data_size);
        st = GMUX_ERR_UNSUPPORTED;
        goto free_info;
    }
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .size = 8192};
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    if ((ret = net_fi_fabric(fi->fabric_attr, &fab->fabric, NULL)) ||
        (ret = fi_domain(fab->fabric, fi, &fab->domain, NULL)) ||
        (ret = fi_endpoint(fab->domain, fi, &fab->ep, NULL)) ||
        (ret = fi_cq_open(fab->domain, &cq_attr, &fab->cq, NULL)) ||
        (ret = fi_av_open(fab->domain, &av_attr, &fab->av, NULL)) ||
        (ret = fi_ep_bind(fab->ep, &fab->cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (ret = fi_ep_bind(fab->ep, &fab->av->fid, 0)) || (ret = fi_enable(fab->ep))) {
        COM_ERROR(NET, "%s: opening the endpoint: %s", fab->prov_name, net_fi_strerror(-ret));
        st = net_fab_status(ret);
        goto close_objects;
    }
    fab->namelen = sizeof(fab->name);
    if ((ret = fi_getname(&fab->ep->fid, fab->name, &fab->namelen))) {
        COM_ERROR(NET, "fi_getname: %s", net_fi_strerror(-ret));
        st = net_fab_status(ret);
        goto close_objects;
    }
    return GMUX_OK;
close_objects:
    net_fab_close(fab);
    return st;
free_info:
    net_fi_freeinfo(fab->info);
    fab->info = NULL;
    return st;
}

void net_fab_close(net_fab_t *fab)
{
    if (fab->ep)
        fi_close(&fab->ep->fid);
    if (fab->av)
        fi_close(&fab->av->fid);
    if (fab->cq)
        fi_close(&fab->cq->fid);
    if (fab->domain)
        fi_close(&fab->domain->fid);
    if (fab->fabric)
        fi_close(&fab->fabric->fid);
    if (fab->info)
        net_fi_freeinfo(fab->info);
    free(fab->peers);
    memset(fab, 0, sizeof(*fab));
}

bool net_fab_shm_path(const char *name, const char *suffix, char *path, size_t len)
{
    const char *prefix = "fi_shm://";
    if (strncmp(name, prefix, strlen(prefix)) == 0)
        name += strlen(prefix);
    if (strchr(name, '/'))
        return false;
    return snprintf(path, len, "/dev/shm/%s%s", name, suffix) < (int)len;
}

bool net_fab_shm_unlink(net_fab_t *fab)
{
    uint32_t v = net_fi_version();
    if (!fab->prov_name || strcmp(fab->prov_name, "shm") != 0 || FI_MAJOR(v) != 1 ||
        FI_MINOR(v) != 17 || fab->namelen == 0 || fab->namelen > sizeof(fab->name) ||
        fab->name[fab->namelen - 1] != '\0')
        return false;
    char path[NET_FAB_NAME_MAX + 16];
    /* libfabric's own unlink at close then finds nothing: harmless */
    return net_fab_shm_path(fab->name, "", path, sizeof(path)) && unlink(path) == 0;
}

gmux_status_t net_fab_insert(net_fab_t *fab, const char *names, int n)
{
    fab->peers = calloc((size_t)n, sizeof(fi_addr_t));
    if (!fab->peers)
        return GMUX_ERR_NOMEM;
    for (int r = 0; r < n; r++) {
        int ret =
            fi_av_insert(fab->av, names + (size_t)r * NET_FAB_NAME_MAX, 1, &fab->peers[r], 0, NULL);
        if (ret != 1) {
            COM_ERROR(NET, "fi_av_insert(rank %d): %d", r, ret);
            return GMUX_ERR_TRANSPORT;
        }
    }
    return GMUX_OK;
}

gmux_status_t net_fab_mr_reg(net_fab_t *fab, void *base, size_t size, uint64_t key_req,
                             struct fid_mr **mr_p, uint64_t *key_p)
{
    int ret = fi_mr_reg(fab->domain, base, size, NET_FAB_MR_ACCESS, 0, key_req, 0, mr_p, NULL);
    if (ret) {
        COM_ERROR(NET, "fi_mr_reg(%zu bytes): %s", size, net_fi_strerror(-ret));
        return net_fab_status(ret);
    }
    *key_p = fi_mr_key(*mr_p);
    return GMUX_OK;
}

bool net_fab_cuda_direct(const net_fab_t *fab, bool shm_cuda_direct)
{
    if (!fab->hmem || !fab->prov_name)
        return false;
    return strcmp(fab->prov_name, "shm") != 0 || shm_cuda_direct;
}

gmux_status_t net_fab_mr_reg_hmem(net_fab_t *fab, void *base, size_t size, enum fi_hmem_iface iface,
                                  int device, uint64_t key_req, struct fid_mr **mr_p,
                                  uint64_t *key_p, void **desc_p)
{
    if (!fab->hmem)
        return GMUX_ERR_UNSUPPORTED;
    struct iovec iov = {.iov_base = base, .iov_len = size};
    struct fi_mr_attr attr = {.mr_iov = &iov,
                              .iov_count = 1,
                              .access = NET_FAB_MR_ACCESS | FI_SEND,
                              .requested_key = key_req,
                              .iface = iface};
    if (iface == FI_HMEM_CUDA)
        attr.device.cuda = device;
    int ret = fi_mr_regattr(fab->domain, &attr, 0, mr_p);
    if (ret) {
        /* e.g. a libfabric built without that interface: the caller stages */
        COM_INFO(NET, "fi_mr_regattr(%zu bytes, interface %d): %s", size, (int)iface,
                 net_fi_strerror(-ret));
        return GMUX_ERR_UNSUPPORTED;
    }
    *key_p = fi_mr_key(*mr_p);
    *desc_p = fi_mr_desc(*mr_p);
    return GMUX_OK;
}
