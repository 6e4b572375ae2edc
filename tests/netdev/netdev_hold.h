/*
 * For netdev_rank deadstall: holds a communicator's progress lock from a
 * thread of its own, standing in for a progress pass stuck inside the
 * provider (a call waiting for a shm region lock that a dead rank left held,
 * until the shm guard frees it, or for good). Plain C (the lock is the net
 * core's, in src/net/internal.h), callable from CUDA host code.
 */
#ifndef NETDEV_HOLD_H
#define NETDEV_HOLD_H

#include <gmux/net.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Returns once the lock is held (0), or -1 if the thread cannot start. */
int netdev_hold_progress(gmux_comm_t *comm);
/* Lets the lock go and joins the thread. */
void netdev_release_progress(void);

#ifdef __cplusplus
}
#endif

#endif /* NETDEV_HOLD_H */
