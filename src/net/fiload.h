/*
 * net_fi: libfabric's exported functions, bound at first use.
 *
 * libgmux-net does not link libfabric: loading it costs every process about
 * 210 ms before its first instruction runs (Debian's libfabric 1.17 needs
 * libinfinipath and libpsm2, whose constructors each spend 100 ms in a
 * usleep loop calibrating a clock; docs/net.md, "Transports"). A process
 * that never joins a fabric (a one-rank job, a unit test of the rings) then
 * never pays it; a rank that joins pays it in its first net_fab_open.
 *
 * Only the few functions libfabric exports are bound here, each once, at
 * the symbol version the headers of 1.17 link against; everything else of
 * its API is inline and calls through the objects' operation tables.
 *
 * Thread-safety: net_fi_load may be called from any thread, any number of
 * times (it loads once); net_fi_getinfo, _allocinfo, _freeinfo and _fabric
 * only after it returned GMUX_OK.
 */
#ifndef NET_FILOAD_H
#define NET_FILOAD_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include <gmux/status.h>

/* Opens libfabric.so.1 and binds its functions. GMUX_ERR_UNSUPPORTED (said
 * once) when it is missing or lacks one of them. */
gmux_status_t net_fi_load(void);

/* Whether this process has loaded libfabric, by us or otherwise. */
bool net_fi_loaded(void);

int net_fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);
struct fi_info *net_fi_allocinfo(void);
void net_fi_freeinfo(struct fi_info *info);
int net_fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
/* These two load libfabric if need be; 0 and a sentence saying so when it
 * cannot be. */
const char *net_fi_strerror(int errnum);
uint32_t net_fi_version(void);

#endif /* NET_FILOAD_H */
