/*
 * The communicator's internals, shared by the net modules (comm.c, ops.c,
 * proxy.c, team.c). Not installed.
 *
 * LOCKING: comm->progress_lock serialises everything that touches libfabric,
 * the consumer side of the rings, the outgoing stream state (out[]), the
 * incoming ordering state (in[]) and the op pool. Producers (any thread)
 * touch only the rings' producer side and the atomics. Lock order:
 * progress_lock, then boot->lock.
 */
#ifndef NET_INTERNAL_H
#define NET_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <gmux/net.h>
#include <gmux/net_ext.h>

#include "net/boot.h"
#include "net/boot_proto.h"
#include "net/coalesce.h"
#include "net/fab.h"
#include "net/order.h"
#include "net/ring.h"
#include "net/shmguard.h"

#define NET_MAX_WINDOWS    64
#define NET_MAX_TEAMS      16
#define NET_BARRIER_ROUNDS 16 /* dissemination rounds: 2^16 > the 4096 ranks CQ data allows */
#define NET_RX_BUFS        256
#define NET_MAX_SIGNALS    (1u << 24) /* signal words and counters per rank at most */
/* Timeouts from this many seconds up (about 31 years) mean "never": past
 * 2^64 ns (584 years) seconds do not convert to a uint64_t (undefined; x86
 * gives 0, a deadline of now). comm->timeout_s is clamped to it. */
#define NET_TIMEOUT_MAX_S 1e9
/* Signal words: the teams' barrier words (NET_SIG_RESERVED of them), then the
 * user's nsig, so that barrier increments and low user ids fit in a write's
 * CQ data; then the teams' split agreement words (NET_AGREE_SIGNALS, always
 * SET with values too large for CQ data, so they sit last). */
#define NET_SIG_RESERVED  (NET_MAX_TEAMS * NET_BARRIER_ROUNDS)
#define NET_AGREE_WORDS   2 /* words per agreement round: 4 fields of 12 bits each */
#define NET_AGREE_SIGNALS (NET_AGREE_WORDS * NET_MAX_TEAMS * NET_BARRIER_ROUNDS)
/* An agreement's epoch (team.c) is 1 + its number modulo this: the 16 bits
 * above the fields of an agreement word, never 0 (the words' first value). */
#define NET_AGREE_EPOCHS 0xffffu

/* One posted operation awaiting its local completion. */
typedef struct net_op {
    struct fi_context2 fctx; /* first: the CQ entry's op_context points here */
    uint64_t id;             /* per-context issue number */
    uint32_t ctx;
    uint32_t peer;
    uint32_t counter; /* GMUX_NO_COUNTER or a counter to bump */
    uint64_t value;   /* the source of a PUT_VALUE posted without inject */
    /* A fetch (fetch.c): the provider writes fetch_buf, which the op owns
     * (amo[2] for atomics, else allocated), and reads its operands from
     * amo[0..1]; the result is copied to fetch_dst on success only, so a
     * caller that gave up (fetch_dst set to NULL) is never written later. */
    void *fetch_dst;
    void *fetch_buf;
    size_t fetch_len; /* 0: not a fetch */
    uint64_t amo[3];  /* operand, compare, result */
    bool in_use;
    bool heap;                /* allocated alone (a replacement), not part of the first block */
    struct net_op *next_free; /* the free list, or the list of orphans */
} net_op_t;

/* What this rank asked of libfabric, counted under the progress lock
 * (`gmux bench net --calls` compares them with raw libfabric's). */
typedef struct net_stats {
    uint64_t writes;     /* fi_writedata / fi_inject_writedata calls that posted */
    uint64_t eagain;     /* of those calls, the ones refused with -FI_EAGAIN */
    uint64_t msgs;       /* fi_inject of control messages that posted */
    uint64_t cq_reads;   /* fi_cq_read calls */
    uint64_t cq_entries; /* completions they returned */
    uint64_t descs;      /* descriptors consumed from the rings or executed directly */
    uint64_t dev_writes; /* writes posted from a registered device source, with its descriptor */
    /* How ops ended (net_rank deadops tells the paths apart with them): */
    uint64_t ops_done;       /* completed by the provider, successfully */
    uint64_t ops_failed;     /* completed by the provider with an error */
    uint64_t ops_taken_back; /* taken back, unreported, after their peer died (orphans) */
} net_stats_t;

typedef struct net_rx {
    struct fi_context2 fctx;
    net_msg_t msg;
} net_rx_t;

/* The state of the outgoing stream (ctx, peer), consumer side. */
typedef struct net_out {
    uint32_t wseq;          /* writes issued */
    uint32_t nsig;          /* signals issued */
    uint32_t quiet_wseq;    /* as of the last quiet */
    uint64_t quiet_token;   /* last token sent */
    _Atomic uint64_t acked; /* last token acknowledged */
} net_out_t;

typedef struct net_win {
    bool used;
    uint8_t mem; /* gmux_mem_kind_t registered (GMUX_MEM_HOST after a fallback) */
    void *base;
    size_t size;
    struct fid_mr *mr;
    uint64_t *raddr; /* per rank: address (or 0 for offset-addressed providers) */
    uint64_t *key;   /* per rank */
} net_win_t;

/* A put source in memory the provider reaches through FI_HMEM. */
#define NET_MAX_HSRC 16
typedef struct net_hsrc {
    uint64_t base, size;
    uint8_t mem; /* gmux_mem_kind_t: GMUX_MEM_CUDA or GMUX_MEM_HOST_HMEM */
    struct fid_mr *mr;
    void *desc; /* fi_mr_desc(mr): passed with every transfer from it */
} net_hsrc_t;

struct gmux_team {
    gmux_comm_t *comm;
    int id;
    int start, stride, size; /* world ranks start + k*stride */
    int rank;                /* this rank's team rank */
    uint64_t epoch;          /* barriers completed */
    uint64_t agreements;     /* split agreements run over this team */
};

struct gmux_comm {
    int rank, size;
    /* Read by every thread that waits or posts (the proxy's too) and
     * changed by gmux_comm_set_timeout at any time: read it with
     * net_timeout_s. */
    _Atomic double timeout_s;
    uint32_t nctx, nsig, ncnt, ring_slots;
    const char *provider; /* "shm", "tcp;ofi_rxm" or "self" */
    net_boot_t *boot;     /* NULL for a one-rank job */
    bool have_fab;
    net_fab_t fab;
    net_shmguard_t *guard; /* shm only: releases region locks left by a dead rank */

    net_ring_t *rings;         /* [ctx * size + peer] */
    net_out_t *out;            /* [ctx * size + peer] */
    net_order_t *in;           /* [src * nctx + ctx] */
    _Atomic uint64_t *signals; /* barrier words, user words, agreement words */
    uint32_t nsig_all;         /* NET_SIG_RESERVED + nsig + NET_AGREE_SIGNALS */
    _Atomic uint64_t *counters;
    _Atomic int *ctx_error; /* per ctx: first failure since the last flush/quiet */
    uint64_t *ctx_issued;   /* per ctx: ops posted (under the lock) */

    net_win_t win[NET_MAX_WINDOWS];
    net_hsrc_t hsrc[NET_MAX_HSRC]; /* [0, nhsrc): registered device sources */
    uint32_t nhsrc;                /* written under progress_lock */
    uint64_t hsrc_keys;            /* source registrations made (their keys) */
    gmux_mem_copy_fn mem_copy;     /* self puts involving CUDA memory (may be NULL) */
    void *mem_copy_arg;
    uint64_t *scratch; /* [0]: target of lone signals' carriers; [1]: their source */
    struct fid_mr *scratch_mr;
    uint64_t *scratch_raddr; /* per rank */
    uint64_t *scratch_key;   /* per rank */
    int nteams;
    gmux_team_t world;

    pthread_mutex_t progress_lock;
    /* The op pool: nops slots. An op taken back while the provider may still
     * hold it (its peer died) becomes an orphan: it is never handed out again,
     * so a completion that arrives for it late finds it not in use and is
     * dropped instead of completing whatever took its place; a fresh op
     * replaces it in its slot. Orphans (and the provider memory they own)
     * are freed with the communicator. */
    net_op_t *op_block; /* the first nops ops */
    net_op_t **ops;     /* [nops]: the ops of the pool */
    net_op_t *free_ops;
    net_op_t *orphans;  /* linked by next_free */
    net_batch_t *batch; /* the proxy's coalescing buffer */
    bool coalesce;      /* GMUX_NET_COALESCE */
    net_stats_t stats;  /* libfabric calls made (benchmarks count them) */
    uint32_t nops;
    net_rx_t *rx;
    uint64_t boot_poll_ns;
    uint32_t boot_poll_calls; /* the clock is read on every 16th call only */
    uint64_t next_token;
    bool ack_backlog;            /* a quiet ack waits for tx resources */
    bool rx_warned;              /* a failed receive was logged (once) */
    _Atomic uint64_t blocked_ns; /* last net_progress_blocked pass */
    uint8_t *peer_warned;        /* per rank: a failed operation to it was logged */
    uint8_t *peer_reclaimed;     /* per rank: its ops were taken back after its death */

    pthread_t proxy;
    bool proxy_running;
    _Atomic bool stop;
    _Atomic uint32_t doorbell;
    _Atomic int proxy_sleeping;
    _Atomic int waiters;
    uint64_t idle_max_ns;
    _Atomic bool inline_progress; /* CPU producers post their own descriptors */
    /* producers' passes that emptied their ring; written under progress_lock */
    _Atomic uint64_t inline_epoch;
    _Atomic bool inline_failed; /* a producer could not post its work itself */
    bool direct;                /* GMUX_NET_DIRECT: inline producers skip an empty ring */
};

/* Turns the producers' inline progress on or off (benchmarks measure the
 * proxy thread alone with it off). */
void net_comm_set_inline_progress(gmux_comm_t *comm, bool on);

/* comm.c: the shm endpoint name of rank (see boot_proto.h) into out. */
void net_shm_name(int rank, const char *suffix, char *out, size_t len);

/* proxy.c */
/* One pass: drains the rings, posts operations, reads completions. Returns
 * how much work it did. LOCKING: progress_lock held. */
int net_progress_locked(gmux_comm_t *comm);
/* A CPU producer's own step after a push: if the lock is free, posts what
 * its ring holds. Returns whether the ring is empty afterwards. */
bool net_progress_inline(gmux_comm_t *comm, uint32_t ring);
/* A CPU producer's direct path: if the lock is free and ring (d's stream)
 * holds no descriptor, executes d at once, without the ring. Returns whether
 * it did; false leaves everything as it was (the caller pushes d). d must
 * come from the API's checks (ops.c): of its fields only the window is
 * checked again (test_desc_checks). */
bool net_progress_direct(gmux_comm_t *comm, uint32_t ring, const net_desc_t *d);
/* Takes the lock if free and progresses; returns work done (0 if busy). */
int net_progress_try(gmux_comm_t *comm);
/* The same, but -1 when another thread holds the lock. */
int net_progress_poll(gmux_comm_t *comm);
/* Like net_progress_poll, but waits up to wait_ns asleep for a lock another
 * thread holds (woken when it is released); -1 when it did not get it. */
int net_progress_sleep(gmux_comm_t *comm, uint64_t wait_ns);
/* proxy_thread.c */
gmux_status_t net_proxy_start(gmux_comm_t *comm);
/* Stops the proxy; false when it did not stop in time (it is then left running
 * and the communicator must not be freed). */
bool net_proxy_stop(gmux_comm_t *comm);
/* Wakes a sleeping proxy after a producer pushed. */
void net_proxy_kick(gmux_comm_t *comm);
/* proxy.c */
/* For a thread that finds the progress lock taken: reads death notices (at
 * most once a millisecond, one thread), and once a rank died lets the shm
 * guard free a lock the dead rank left held (the holder of the progress lock
 * may be spinning on it). Any thread. */
void net_progress_blocked(gmux_comm_t *comm);
/* Takes the progress lock, calling net_progress_blocked while it waits (it
 * reads death notices and runs the shm guard, which frees a holder stuck
 * inside libfabric behind a dead rank's lock). Bounded by the timeout
 * (net_timeout_s): GMUX_ERR_TIMEOUT, logged, when a holder kept it that long
 * (stuck where no guard reaches: no guard, or a lock it cannot judge). */
gmux_status_t net_progress_lock(gmux_comm_t *comm);
/* The same without a bound, for the few callers that must not go on without
 * the lock (a fetch dropping its destination, which the provider would
 * otherwise write later; setters that return nothing). */
void net_progress_lock_wait(gmux_comm_t *comm);
/* Posts the resources of the receive side. LOCKING: progress_lock held. */
gmux_status_t net_proxy_post_rx(gmux_comm_t *comm);
/* Sends a quiet request on stream (ctx, peer); *token_p to wait for. LOCKING: held. */
gmux_status_t net_send_quiet_req(gmux_comm_t *comm, uint32_t ctx, int peer, uint64_t *token_p);
/* oppool.c. Records st as ctx's error unless it has one already. */
void net_ctx_set_error(gmux_comm_t *comm, uint32_t ctx, gmux_status_t st);
/* gmux_flush without taking ctx's first error: waits until every descriptor
 * pushed on ctx before the call is consumed and its operations have ended
 * (done or failed), bounded by the comm's timeout. For the library's own
 * waits (devstage.c's arena), which must leave errors to their owners. */
gmux_status_t net_flush_wait(gmux_comm_t *comm, uint32_t ctx);
/* A free op, marked in use, or NULL when all are in flight. LOCKING: held. */
net_op_t *net_op_get(gmux_comm_t *comm);
/* Returns op to the pool. LOCKING: held. */
void net_op_put(gmux_comm_t *comm, net_op_t *op);
/* Ends op: a fetch's result goes to its caller when ok (and the caller still
 * waits), its buffer is released; the op returns to the pool. LOCKING: held. */
void net_op_finish(gmux_comm_t *comm, net_op_t *op, bool ok);
/* Takes back every op in flight to peer: each fails its context with
 * GMUX_ERR_PEER, drops its result and becomes an orphan (its slot gets a
 * fresh op), so that a completion the provider reports for it later is
 * ignored. LOCKING: held. */
void net_ops_take_back(gmux_comm_t *comm, int peer);
/* Handles the local completion of the op whose libfabric context is
 * op_context (ok: succeeded): an op not in use (an orphan) is ignored.
 * LOCKING: held. */
void net_op_completed(gmux_comm_t *comm, void *op_context, bool ok, int err);
/* Whether any op of ctx with id < below is still outstanding; ops to dead
 * peers do not count (the context's error becomes GMUX_ERR_PEER). LOCKING: held. */
bool net_ctx_outstanding_below(gmux_comm_t *comm, uint32_t ctx, uint64_t below);

/* comm.c: takes part in a window registration's collective for a caller
 * that failed (why) before it, so that every rank fails together instead of
 * the others pairing with this rank's next registration. Returns why (or
 * the exchange's failure). */
gmux_status_t net_window_register_failed(gmux_comm_t *comm, size_t size, gmux_status_t why);

/* comm.c: the registered device source holding [src, src+size), or NULL.
 * LOCKING: progress_lock held. */
static inline const net_hsrc_t *net_hsrc_find(const gmux_comm_t *comm, uint64_t src, uint64_t size)
{
    for (uint32_t i = 0; i < comm->nhsrc; i++) {
        const net_hsrc_t *h = &comm->hsrc[i];
        if (src >= h->base && size <= h->size && src - h->base <= h->size - size)
            return h;
    }
    return NULL;
}

/* The registered device source a PUT descriptor reads from, or NULL (also
 * for every other opcode). LOCKING: progress_lock held. */
static inline const net_hsrc_t *net_desc_hsrc(const gmux_comm_t *comm, const net_desc_t *d)
{
    return d->opcode == NET_OP_PUT && comm->nhsrc ? net_hsrc_find(comm, d->src, d->size) : NULL;
}

/* localcopy.c: a copy within this rank between memory of kinds dst_mem and
 * src_mem (gmux_mem_kind_t): through the comm's mem_copy where device memory
 * is involved and one is set, GMUX_ERR_UNSUPPORTED for CUDA memory without
 * one, memmove otherwise. LOCKING: progress_lock held (mem_copy). */
gmux_status_t net_local_copy(gmux_comm_t *comm, void *dst, uint8_t dst_mem, const void *src,
                             uint8_t src_mem, size_t n);

/* ops.c: the waiting discipline of every blocking call. cond returns true
 * when satisfied; the wait drives progress itself. */
typedef bool (*net_cond_fn)(gmux_comm_t *comm, void *arg);
gmux_status_t net_wait(gmux_comm_t *comm, net_cond_fn cond, void *arg, double timeout_s,
                       bool fail_on_any_dead);

/* The communicator's timeout now (gmux_comm_set_timeout may change it). */
static inline double net_timeout_s(const gmux_comm_t *comm)
{
    return atomic_load_explicit(&comm->timeout_s, memory_order_relaxed);
}

static inline bool net_peer_dead(const gmux_comm_t *comm, int peer)
{
    return net_boot_dead(comm->boot, peer);
}

#endif /* NET_INTERNAL_H */
