/*
 * net_fab: the libfabric objects of one rank (fabric, domain, RDM endpoint,
 * address vector, one completion queue) and the provider's properties the
 * proxy needs. -FI_E* codes become gmux_status_t here. The first
 * net_fab_open of a process loads libfabric (net/fiload.h).
 *
 * Providers: "shm" (one host) and "tcp;ofi_rxm" (across hosts; pinned to
 * the loopback interface for single-host jobs). Both are asked for RMA,
 * messages and remote CQ data; neither is asked for ordering.
 *
 * Ownership: net_fab_open fills a caller-owned struct, net_fab_close
 * releases what it opened. Thread-safety: FI_THREAD_DOMAIN; the holder of
 * the communicator's progress lock is the only user.
 */
#ifndef NET_FAB_H
#define NET_FAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <gmux/status.h>

#define NET_FAB_NAME_MAX 256

typedef struct net_fab {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_av *av;
    struct fid_cq *cq;
    fi_addr_t *peers;            /* per rank */
    char name[NET_FAB_NAME_MAX]; /* this endpoint's address */
    size_t namelen;
    bool virt_addr;         /* remote addresses are virtual addresses (else offsets) */
    bool prov_key;          /* the provider chooses keys */
    bool hmem;              /* FI_HMEM: device memory may be registered (FI_MR_HMEM) */
    bool atomics;           /* FI_ATOMIC: remote atomics (net_ext) */
    size_t inject_size;     /* messages (fi_inject) */
    size_t rma_inject_size; /* writes (fi_inject_writedata); 0: never inject writes */
    size_t max_msg;
    size_t tx_size;
    const char *prov_name;
} net_fab_t;

/* The -FI_E* code of a libfabric call, converted. */
gmux_status_t net_fab_status(int fi_ret);

/* Opens provider "shm", "tcp" (tcp;ofi_rxm), or for multi-host jobs
 * "verbs;ofi_rxm", "efa" or "cxi"; loopback pins tcp to lo and 127.0.0.1. shm_name (may be NULL)
 * names the shm endpoint; its region is /dev/shm/<shm_name>:..., so a launcher can remove those of
 * killed ranks. hmem: whether to ask for FI_HMEM as well (fab->hmem says whether it was granted;
 * where it is not, the endpoint opens without it). */
typedef enum net_fab_hmem {
    NET_FAB_HMEM_OFF,  /* never */
    NET_FAB_HMEM_AUTO, /* with everything else, or not at all */
    NET_FAB_HMEM_RMA,  /* also at the price of remote atomics (fab->atomics false) */
} net_fab_hmem_t;
gmux_status_t net_fab_open(const char *provider, bool loopback, const char *shm_name,
                           net_fab_hmem_t hmem, net_fab_t *fab);
void net_fab_close(net_fab_t *fab);

/* Inserts the n ranks' addresses (n * NET_FAB_NAME_MAX bytes). */
gmux_status_t net_fab_insert(net_fab_t *fab, const char *names, int n);

/* /dev/shm/NAME followed by suffix, for a shm endpoint name given with or
 * without its "fi_shm://" prefix; false when it does not fit in len or is
 * not a plain file name. */
bool net_fab_shm_path(const char *name, const char *suffix, char *path, size_t len);

/* shm: unlinks this endpoint's region from /dev/shm, where that is known to
 * be safe: call once every rank has inserted every address (a barrier after
 * net_fab_insert on every rank), with libfabric 1.17, whose shm maps a
 * peer's region when its address is inserted and never opens it by name
 * again; the mapping stays valid. Returns whether it unlinked (false with
 * another provider or libfabric, where the region stays named until the
 * endpoint closes). */
bool net_fab_shm_unlink(net_fab_t *fab);

/* Registers memory for remote writes; key_req is used when the provider
 * does not choose keys. */
gmux_status_t net_fab_mr_reg(net_fab_t *fab, void *base, size_t size, uint64_t key_req,
                             struct fid_mr **mr_p, uint64_t *key_p);

/* Whether CUDA memory is registered with the provider directly (else the
 * device API stages it through pinned host memory): where FI_HMEM was granted,
 * except on shm unless shm_cuda_direct (GMUX_NET_SHM_CUDA_DIRECT). libfabric
 * 1.17's shm moves CUDA memory inside its progress calls with cudaMemcpy,
 * then cudaDeviceSynchronize where one side is its own bounce buffer: that
 * waits for the kernel spinning in a device-API wait, which never ends before
 * its timeout (docs/net-device.md). */
bool net_fab_cuda_direct(const net_fab_t *fab, bool shm_cuda_direct);

/* Registers [base, base+size) of memory interface iface (device: the CUDA
 * ordinal) for remote writes and as a local source; *desc_p is what local
 * transfers from it pass. GMUX_ERR_UNSUPPORTED when the provider lacks
 * FI_HMEM or refuses the registration (a libfabric built without CUDA). */
gmux_status_t net_fab_mr_reg_hmem(net_fab_t *fab, void *base, size_t size, enum fi_hmem_iface iface,
                                  int device, uint64_t key_req, struct fid_mr **mr_p,
                                  uint64_t *key_p, void **desc_p);

#endif /* NET_FAB_H */
