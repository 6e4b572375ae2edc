/*
 * gmux net: one-sided communication that compute code issues itself.
 *
 * A communicator (gmux_comm_t) joins the ranks started by `gmux launch`. Each
 * rank registers symmetric windows collectively and then addresses a peer's
 * window by (window, offset). Operations are issued on a context: a context
 * is an ordered stream per peer. Every operation becomes a 64-byte descriptor
 * in a ring (one per context and peer); a proxy thread, or a CPU thread that
 * waits, drains the rings over libfabric.
 *
 * Semantics:
 *   put / put_value   write bytes into a peer's window.
 *   signal            add, inc or set a 64-bit signal word at the peer. A
 *                     signal becomes visible only after the payload of every
 *                     earlier put on the same context to the same peer (and
 *                     of the put it is attached to).
 *   counter           a local 64-bit word incremented once a put's source
 *                     buffer has been consumed (reusable).
 *   flush             every earlier operation of the context has its source
 *                     consumed (local completion).
 *   quiet             every earlier operation of the context is complete at
 *                     its target: data visible, signals applied.
 *   waits             block until a signal or counter reaches a value; they
 *                     fail with GMUX_ERR_PEER when a rank of the communicator
 *                     died and with GMUX_ERR_TIMEOUT after their timeout.
 *
 * Thread-safety: every function may be called from any thread once init has
 * returned, except init and finalize (one thread, no concurrent calls) and
 * window registration and team creation (collective: every rank calls them in
 * the same order, one thread per rank).
 */
#ifndef GMUX_NET_H
#define GMUX_NET_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gmux_comm gmux_comm_t;
typedef struct gmux_team gmux_team_t;
typedef uint32_t gmux_window_t;

/* Parameters of gmux_comm_init; fill with gmux_comm_params_init first, so a
 * field added later keeps its default. */
typedef struct gmux_comm_params {
    uint32_t struct_size;  /* sizeof(gmux_comm_params_t), set by params_init */
    uint32_t num_contexts; /* ordered streams per peer (default 4) */
    uint32_t num_signals;  /* signal words per rank (default 1024, at most 2^24) */
    uint32_t num_counters; /* local counters (default 1024, at most 2^24) */
    uint32_t ring_slots;   /* descriptors per (context, peer) ring, power of 2; 0: setting */
    int start_proxy;       /* 1: start the proxy thread (default); 0: callers progress */
    const char *provider;  /* "shm", "tcp", "auto" or NULL for GMUX_NET_PROVIDER */
    double timeout_s;      /* failure detection / default wait timeout; <= 0: setting */
} gmux_comm_params_t;

void gmux_comm_params_init(gmux_comm_params_t *params);

/* Joins the job described by the launcher's environment (GMUX_RANK,
 * GMUX_SIZE, GMUX_BOOTSTRAP); without it, a job of one rank. Collective. */
gmux_status_t gmux_comm_init(const gmux_comm_params_t *params, gmux_comm_t **comm_p);

/* Completes outstanding work (bounded by the timeout), synchronises with the
 * live ranks and frees everything. Always returns; the status says whether
 * everything completed. Collective. */
gmux_status_t gmux_comm_finalize(gmux_comm_t *comm);

int gmux_comm_rank(const gmux_comm_t *comm);
int gmux_comm_size(const gmux_comm_t *comm);
/* The libfabric provider in use ("shm", "tcp;ofi_rxm", or "self"). */
const char *gmux_comm_provider(const gmux_comm_t *comm);
/* The communicator's timeout (params.timeout_s), and a new one for the calls
 * that start after it: any thread, at any time, while others wait (the
 * proxy thread reads it too). GMUX_ERR_INVALID unless timeout_s > 0; values
 * of 1e9 s and more mean never. */
double gmux_comm_timeout(const gmux_comm_t *comm);
gmux_status_t gmux_comm_set_timeout(gmux_comm_t *comm, double timeout_s);

/* Registers [base, base+size) as window of this rank; every rank calls it
 * with its own buffer of the same size. Collective. */
gmux_status_t gmux_window_register(gmux_comm_t *comm, void *base, size_t size,
                                   gmux_window_t *win_p);
/* Collective (a barrier, then the provider's deregistration). GMUX_ERR_TIMEOUT
 * when the progress lock stayed taken for the communicator's timeout (its
 * holder stuck inside the provider): the window then stays registered. */
gmux_status_t gmux_window_deregister(gmux_comm_t *comm, gmux_window_t win);

typedef enum gmux_signal_op {
    GMUX_SIGNAL_NONE = 0,
    GMUX_SIGNAL_ADD = 1, /* word += value */
    GMUX_SIGNAL_INC = 2, /* word += 1 */
    GMUX_SIGNAL_SET = 3, /* word = value */
} gmux_signal_op_t;

#define GMUX_NO_COUNTER UINT32_MAX

/* What happens besides the data movement of a put; NULL means nothing. */
typedef struct gmux_op_opts {
    gmux_signal_op_t signal_op; /* signal applied at the peer after the data */
    uint32_t signal_id;
    uint64_t signal_value;
    uint32_t counter_id; /* local counter bumped when the source is consumed, or GMUX_NO_COUNTER */
} gmux_op_opts_t;

/* Copies size bytes from src into window win of peer at offset. src must
 * stay unchanged until a flush, or the counter, says it was consumed. */
gmux_status_t gmux_put(gmux_comm_t *comm, uint32_t ctx, int peer, gmux_window_t win,
                       uint64_t offset, const void *src, size_t size, const gmux_op_opts_t *opts);

/* Writes the low `bytes` (1..8) bytes of value (little endian); no source to keep. */
gmux_status_t gmux_put_value(gmux_comm_t *comm, uint32_t ctx, int peer, gmux_window_t win,
                             uint64_t offset, uint64_t value, unsigned bytes,
                             const gmux_op_opts_t *opts);

gmux_status_t gmux_signal(gmux_comm_t *comm, uint32_t ctx, int peer, uint32_t signal_id,
                          gmux_signal_op_t op, uint64_t value);

gmux_status_t gmux_flush(gmux_comm_t *comm, uint32_t ctx);
gmux_status_t gmux_quiet(gmux_comm_t *comm, uint32_t ctx);

uint64_t gmux_signal_read(gmux_comm_t *comm, uint32_t signal_id);
void gmux_signal_reset(gmux_comm_t *comm, uint32_t signal_id);
/* Waits until signal >= value; value_p (may be NULL) gets what was seen.
 * gmux_signal_wait uses the communicator's timeout; a negative timeout_s, or
 * one of 1e9 s or more (INFINITY), waits without limit. */
gmux_status_t gmux_signal_wait(gmux_comm_t *comm, uint32_t signal_id, uint64_t value,
                               uint64_t *value_p);
gmux_status_t gmux_signal_wait_timeout(gmux_comm_t *comm, uint32_t signal_id, uint64_t value,
                                       double timeout_s, uint64_t *value_p);

uint64_t gmux_counter_read(gmux_comm_t *comm, uint32_t counter_id);
void gmux_counter_reset(gmux_comm_t *comm, uint32_t counter_id);
gmux_status_t gmux_counter_wait(gmux_comm_t *comm, uint32_t counter_id, uint64_t value,
                                uint64_t *value_p);
gmux_status_t gmux_counter_wait_timeout(gmux_comm_t *comm, uint32_t counter_id, uint64_t value,
                                        double timeout_s, uint64_t *value_p);

/* Teams: the world team of a communicator, and strided subsets
 * {parent rank start + k*stride, k < size}. */
gmux_team_t *gmux_team_world(gmux_comm_t *comm);
/* Collective over the parent: every parent member calls it with the same
 * size (and, for size > 1, the same arguments); members outside the new team
 * get *team_p = NULL. Any team may be split, a split of a split included:
 * the parent's members check over the net that their arguments are valid
 * and agree, agree on the new team's id (which picks its barrier words), and
 * synchronise as a barrier does. Invalid or differing arguments on any
 * member fail every member with GMUX_ERR_INVALID (a warning says which
 * argument differed), not a timeout. At most 15 teams of more than one
 * member besides the world per communicator (GMUX_ERR_CAPACITY); one-member
 * teams take no team id (a parent of one member does not synchronise). */
gmux_status_t gmux_team_split_strided(gmux_team_t *parent, int start, int stride, int size,
                                      gmux_team_t **team_p);
void gmux_team_destroy(gmux_team_t *team);
int gmux_team_rank(const gmux_team_t *team);
int gmux_team_size(const gmux_team_t *team);
/* World rank of team rank r, or -1. */
int gmux_team_world_rank(const gmux_team_t *team, int r);

/* Every earlier operation of every context of the calling rank is complete
 * (quiet) and every team member has reached the barrier. */
gmux_status_t gmux_barrier(gmux_team_t *team);

#ifdef __cplusplus
}
#endif

#endif /* GMUX_NET_H */
