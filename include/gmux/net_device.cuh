/*
 * gmux net device API: the operations of include/gmux/net.h issued from CUDA
 * kernels (CUDA C++, include with nvcc).
 *
 * A kernel gets a gmux_dev_handle_t (include/gmux/net_device.h) by value and
 * calls these functions. Each operation is encoded as the 64-byte version-1
 * descriptor of src/net/net_proto.h and written into the ring of its
 * (context, peer), the very rings CPU threads use; the proxy executes it.
 *
 * Forms:
 *   gmux_dev_X(...)        thread form: the calling thread issues.
 *   gmux_dev_X_warp(...)   warp form: the whole warp calls (all 32 lanes);
 *                          lane 0 issues after a __syncwarp, so payload
 *                          written by any lane before the call is covered;
 *                          every lane gets lane 0's status.
 *   gmux_dev_X_block(...)  block form: the whole block calls; thread 0
 *                          issues between two __syncthreads; every thread
 *                          gets the status; a wait returns to every thread
 *                          only once thread 0 has seen the value.
 * Thread forms are also __host__: compiled as host code they run on CPU
 * threads against a handle from gmux_dev_handle_create_host (this is how CI
 * tests the protocol without a GPU).
 *
 * Memory ordering (see docs/net-device.md):
 *   claim    system-scope CAS on the ring's tail (a ticket), after an acquire
 *            load of head: the proxy's clearing of the slot happened before.
 *            Both reads come from the ring's device-memory hints while they
 *            suffice (the hinted head is one some thread acquired, published
 *            with a device-scope release), so one bus round trip per push.
 *   publish  a system-scope release fence, then the eight words with relaxed
 *            system-scope stores; each word carries its valid flag, so the
 *            proxy never takes a slot half written, whatever order the PCIe
 *            writes arrive in, and when it sees a word it also sees every
 *            write the issuing thread (or its group, through the group
 *            barrier) made before the call, the put's payload included.
 *   waits    system-scope acquire loads of the signal/counter word: data the
 *            signal covers is visible once the value is seen.
 *
 * Addresses: `src` of a put is read by the proxy on the host, so it is the
 * host address of pinned memory (for cudaHostAlloc'd memory under unified
 * addressing, the same pointer the kernel uses). Windows are addressed by
 * (window, offset) as on the host.
 *
 * Timeouts: waits take nanoseconds (0: the communicator's timeout); a full
 * ring is retried up to the communicator's timeout. Device time is
 * %globaltimer.
 */
#ifndef GMUX_NET_DEVICE_CUH
#define GMUX_NET_DEVICE_CUH

#include <stdint.h>

#include <cuda/atomic>

#include <gmux/net_device.h>

#ifndef __CUDA_ARCH__
#include <sched.h>
#include <time.h>
#endif

#define GMUX_DEV_FN static __host__ __device__ inline

typedef cuda::atomic_ref<uint64_t, cuda::thread_scope_system> gmux_dev_sysref_t;
/* the ring hints: shared by the device's threads only (or a process's CPU threads) */
typedef cuda::atomic_ref<uint64_t, cuda::thread_scope_device> gmux_dev_devref_t;

/* Descriptor format, version 1 (must match src/net/net_proto.h). */
#define GMUX_DEV_PROTO_VERSION 1u
#define GMUX_DEV_DESC_VALID    (1ull << 63)
#define GMUX_DEV_DESC_MAGIC    0x5aull
#define GMUX_DEV_OP_NOP        0u /* consumed and ignored: a slot given back */
#define GMUX_DEV_OP_PUT        1u
#define GMUX_DEV_OP_PUT_VALUE  2u
#define GMUX_DEV_OP_SIGNAL     3u
#define GMUX_DEV_F_COUNTER     0x1u

typedef struct gmux_dev_desc {
    uint8_t opcode, signal_op, flags;
    uint16_t window, ctx;
    uint32_t counter_id, peer, signal_id;
    uint64_t offset, src, size, signal_value;
} gmux_dev_desc_t;

GMUX_DEV_FN void gmux_dev_desc_encode(const gmux_dev_desc_t *d, uint32_t ticket, uint64_t w[8])
{
    uint64_t f[7];
    f[0] = (uint64_t)GMUX_DEV_PROTO_VERSION | (uint64_t)d->opcode << 8 |
           (uint64_t)d->signal_op << 16 | (uint64_t)d->flags << 24 | (uint64_t)d->window << 32 |
           (uint64_t)d->ctx << 48;
    f[1] = (uint64_t)ticket | (uint64_t)d->counter_id << 32;
    f[2] = (uint64_t)d->peer | (uint64_t)d->signal_id << 32;
    f[3] = d->offset;
    f[4] = d->src;
    f[5] = d->size;
    f[6] = d->signal_value;
    uint64_t top = 0;
    for (int i = 0; i < 7; i++) {
        top |= (f[i] >> 63) << i;
        w[i] = f[i] | GMUX_DEV_DESC_VALID;
    }
    w[7] = top | GMUX_DEV_DESC_MAGIC << 8 | GMUX_DEV_DESC_VALID;
}

GMUX_DEV_FN uint64_t gmux_dev_now_ns(void)
{
#ifdef __CUDA_ARCH__
    uint64_t t;
    /* "memory": loads and stores stay on their side of the read, so a span
     * timed between two reads covers what was issued inside it */
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : : "memory");
    return t;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* Backs off inside a polling loop (i counts the polls). */
GMUX_DEV_FN void gmux_dev_pause_(unsigned i)
{
#ifdef __CUDA_ARCH__
    if (i > 16)
        __nanosleep(i > 1024 ? 1000 : 100);
#else
    if (i > 64)
        sched_yield();
#endif
}

/* Whether the calling thread drives progress itself: a CPU thread with a
 * handle that says so; never a kernel. */
GMUX_DEV_FN bool gmux_dev_self_progress_(const gmux_dev_handle_t &h)
{
#ifdef __CUDA_ARCH__
    (void)h;
    return false;
#else
    return h.host_progress != 0;
#endif
}

/* One progress pass on a CPU thread that drives its own (else nothing). */
GMUX_DEV_FN int gmux_dev_host_progress_(const gmux_dev_handle_t &h)
{
#ifdef __CUDA_ARCH__
    (void)h;
    return 0;
#else
    return h.host_progress ? gmux_dev_progress(&h) : 0;
#endif
}

/* Whether a death flag of the handle (peer_dead[r], any_dead) is set; NULL:
 * no bootstrap, nobody dies. The net core sets the flag (release) once it
 * read the notice, whichever of its threads did; a relaxed read suffices:
 * nothing else is read on the strength of it. */
GMUX_DEV_FN bool gmux_dev_dead_(const uint8_t *flag)
{
    if (!flag)
        return false;
#ifdef __CUDA_ARCH__
    return *(const volatile uint8_t *)flag != 0;
#else
    return __atomic_load_n(flag, __ATOMIC_RELAXED) != 0;
#endif
}

GMUX_DEV_FN const uint8_t *gmux_dev_peer_dead_flag_(const gmux_dev_handle_t &h, uint32_t peer)
{
    return h.peer_dead ? h.peer_dead + peer : nullptr;
}

GMUX_DEV_FN bool gmux_dev_expired_(uint64_t *deadline, uint64_t timeout_ns)
{
    uint64_t now = gmux_dev_now_ns();
    if (*deadline == 0) {
        *deadline = now + timeout_ns;
        return false;
    }
    return now >= *deadline;
}

/* A number that differs between threads and calls (seeds the backoff). */
GMUX_DEV_FN uint64_t gmux_dev_seed_(void)
{
#ifdef __CUDA_ARCH__
    uint64_t who = ((uint64_t)blockIdx.z << 48) ^ ((uint64_t)blockIdx.y << 32) ^
                   ((uint64_t)blockIdx.x << 12) ^ ((uint64_t)threadIdx.z << 20) ^
                   ((uint64_t)threadIdx.y << 10) ^ threadIdx.x;
#else
    int local = 0;
    uint64_t who = (uint64_t)(uintptr_t)&local; /* the thread's stack */
#endif
    return who * 0x9e3779b97f4a7c15ull ^ gmux_dev_now_ns();
}

/* How long a claim that lost its compare-and-swap `losses` times backs off:
 * a random time in [w/2, w] with w = base << min(losses - 2, 8), at most
 * 1 ms; 0 for the first loss (mostly a stale tail hint, and the failed CAS
 * has just returned the real tail) and with base 0. Many producers racing
 * for one tail over the bus otherwise pay one failed atomic each per winner;
 * spread out, they pay about one each. */
GMUX_DEV_FN uint64_t gmux_dev_backoff_ns_(uint32_t base_ns, unsigned losses, uint64_t seed)
{
    if (base_ns == 0 || losses < 2)
        return 0;
    uint64_t w = (uint64_t)base_ns << (losses - 2 > 8 ? 8 : losses - 2);
    if (w > 1000000)
        w = 1000000;
    uint64_t x = seed + losses * 0x9e3779b97f4a7c15ull; /* splitmix64's mix */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return w / 2 + x % (w - w / 2 + 1);
}

GMUX_DEV_FN void gmux_dev_backoff_(uint32_t base_ns, unsigned losses, uint64_t seed)
{
    uint64_t ns = gmux_dev_backoff_ns_(base_ns, losses, seed);
    if (ns == 0)
        return;
#ifdef __CUDA_ARCH__
    __nanosleep((unsigned)ns);
#else
    for (uint64_t end = gmux_dev_now_ns() + ns; gmux_dev_now_ns() < end;)
        ;
#endif
}

/* Adds to the claim statistics, if the handle keeps them. */
GMUX_DEV_FN void gmux_dev_claim_count_(const gmux_dev_handle_t &h, uint64_t other)
{
    if (!h.claim_stats)
        return;
    gmux_dev_sysref_t(h.claim_stats[0]).fetch_add(1, cuda::memory_order_relaxed);
    if (other)
        gmux_dev_sysref_t(h.claim_stats[1]).fetch_add(other, cuda::memory_order_relaxed);
}

/* The fetch-and-add claim (GMUX_DEV_CLAIM_FAA): waits without claiming while
 * the hints (then the real head) show no room for n, takes n tickets with one
 * atomic, then waits until the consumer has freed their slots (only when
 * other producers raced it past the free ones). */
GMUX_DEV_FN gmux_status_t gmux_dev_claim_faa_(const gmux_dev_handle_t &h, gmux_dev_ring_t *r,
                                              int32_t *ctx_error, const uint8_t *dead, uint64_t n,
                                              uint64_t *t_p)
{
    gmux_dev_sysref_t tail(*r->tail), head(*r->head);
    gmux_dev_devref_t tail_hint(r->tail_hint), head_hint(r->head_hint);
    uint64_t th = tail_hint.load(cuda::memory_order_relaxed);
    uint64_t hd = head_hint.load(cuda::memory_order_acquire);
    uint64_t deadline = 0;
    /* th may lag behind hd (another thread's claim not yet in the hint):
     * compare without subtracting them */
    for (unsigned i = 0; th > hd + (h.nslots - n); i++) {
        hd = head.load(cuda::memory_order_acquire);
        head_hint.fetch_max(hd, cuda::memory_order_acq_rel);
        if (th <= hd + (h.nslots - n))
            break;
        if (gmux_dev_dead_(dead))
            return GMUX_ERR_PEER; /* nothing claimed; the proxy may never drain it */
        if (gmux_dev_expired_(&deadline, h.timeout_ns))
            return GMUX_ERR_TIMEOUT; /* nothing claimed */
        gmux_dev_pause_(i);
    }
    /* relaxed, like the CAS claim's (see there) */
    uint64_t t = tail.fetch_add(n, cuda::memory_order_relaxed);
    tail_hint.fetch_max(t + n, cuda::memory_order_relaxed);
    bool waited = false;
    deadline = 0;
    for (unsigned i = 0; t + n - hd > h.nslots; i++) {
        hd = head.load(cuda::memory_order_acquire);
        head_hint.fetch_max(hd, cuda::memory_order_acq_rel);
        if (t + n - hd <= h.nslots)
            break;
        waited = true;
        bool peer_dead = (i & 15) == 0 && gmux_dev_dead_(dead);
        if (peer_dead || gmux_dev_expired_(&deadline, h.timeout_ns)) {
            /* the tickets are abandoned and the ring stalls at them (one to
             * a dead rank takes nothing any more): say so in the context's
             * error word (first failure only) */
            gmux_status_t st = peer_dead ? GMUX_ERR_PEER : GMUX_ERR_TIMEOUT;
            int32_t none = 0;
            cuda::atomic_ref<int32_t, cuda::thread_scope_system>(*ctx_error)
                .compare_exchange_strong(none, (int32_t)st, cuda::memory_order_relaxed);
            return st;
        }
        gmux_dev_pause_(i);
    }
    gmux_dev_claim_count_(h, waited);
    *t_p = t;
    return GMUX_OK;
}

/* Claims n (1..nslots) consecutive tickets of ring r; *t_p gets the first.
 * The tail and head live in pinned host memory, a bus round trip each from a
 * kernel; the ring's hints (device memory) stand in for both reads, so an
 * uncontended claim crosses the bus once, for the CAS. */
GMUX_DEV_FN gmux_status_t gmux_dev_claim_(const gmux_dev_handle_t &h, gmux_dev_ring_t *r,
                                          int32_t *ctx_error, const uint8_t *dead, uint64_t n,
                                          uint64_t *t_p)
{
    if (n == 0 || n > h.nslots)
        return GMUX_ERR_INVALID;
    if (h.claim_mode == GMUX_DEV_CLAIM_FAA)
        return gmux_dev_claim_faa_(h, r, ctx_error, dead, n, t_p);
    gmux_dev_sysref_t tail(*r->tail), head(*r->head);
    gmux_dev_devref_t tail_hint(r->tail_hint), head_hint(r->head_hint);
    uint64_t t = tail_hint.load(cuda::memory_order_relaxed);
    /* acquire: pairs with the release below, so the proxy's clearing of the
     * slots up to the hinted head happened before this thread writes one */
    uint64_t hd = head_hint.load(cuda::memory_order_acquire);
    uint64_t deadline = 0, seed = 0;
    unsigned losses = 0;
    for (unsigned i = 0;; i++) {
        if (t - hd > h.nslots - n) { /* too full by the hint: read the real head */
            hd = head.load(cuda::memory_order_acquire);
            head_hint.fetch_max(hd, cuda::memory_order_acq_rel);
            if (t - hd > h.nslots - n) {
                uint64_t now_t = tail.load(cuda::memory_order_relaxed);
                if (now_t != t) { /* the guess was stale: not full after all? */
                    t = now_t;
                    continue;
                }
                /* full: the service thread drains it, unless the proxy
                 * is stuck behind the dead peer (a provider call waiting
                 * for a lock the dead rank held) */
                if (gmux_dev_dead_(dead))
                    return GMUX_ERR_PEER;
                if (gmux_dev_expired_(&deadline, h.timeout_ns))
                    return GMUX_ERR_TIMEOUT;
                gmux_dev_pause_(i);
                continue;
            }
        }
        /* a failed CAS (stale guess, another producer) loads the real tail.
         * Relaxed: the slot is known free from the head read with acquire
         * above, and the publish fence orders the claim and the payload
         * before the descriptor. An acq_rel CAS costs a system-scope
         * barrier before it on a GPU (MEMBAR.SYS on sm_90), which also
         * waits for the caller's outstanding bus atomics (the waiter count
         * its last wait released): a bus round trip on every put. */
        if (tail.compare_exchange_weak(t, t + n, cuda::memory_order_relaxed,
                                       cuda::memory_order_relaxed))
            break;
        if (++losses == 2)
            seed = gmux_dev_seed_();
        gmux_dev_backoff_(h.claim_backoff_ns, losses, seed);
    }
    tail_hint.fetch_max(t + n, cuda::memory_order_relaxed);
    gmux_dev_claim_count_(h, losses);
    *t_p = t;
    return GMUX_OK;
}

/* Before publishing: the payload and everything this thread wrote before
 * becomes visible no later than the descriptor words that follow. */
GMUX_DEV_FN void gmux_dev_publish_fence_(void)
{
#ifdef __CUDA_ARCH__
    cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system);
#endif
}

/* Writes d, ticket t, into its slot of r (after gmux_dev_publish_fence_). */
GMUX_DEV_FN void gmux_dev_store_(const gmux_dev_handle_t &h, gmux_dev_ring_t *r,
                                 const gmux_dev_desc_t *d, uint64_t t)
{
    uint64_t w[8];
    gmux_dev_desc_encode(d, (uint32_t)t, w);
    uint64_t *slot = r->slots + (t & (uint64_t)(h.nslots - 1)) * 8;
    /* the words in any order: each carries its valid flag */
    for (int i = 0; i < 8; i++)
#ifdef __CUDA_ARCH__
        gmux_dev_sysref_t(slot[i]).store(w[i], cuda::memory_order_relaxed);
#else
        /* on a CPU thread: a release store per word, as the net core's
         * producer (same guarantee; visible to ThreadSanitizer, which ignores
         * fences) */
        gmux_dev_sysref_t(slot[i]).store(w[i], cuda::memory_order_release);
#endif
}

/* Claims a ticket in the ring of (ctx, peer) and writes d into its slot. */
GMUX_DEV_FN gmux_status_t gmux_dev_push_(const gmux_dev_handle_t &h, const gmux_dev_desc_t *d)
{
    if (d->ctx >= h.nctx || d->peer >= (uint32_t)h.size)
        return GMUX_ERR_INVALID;
    gmux_dev_ring_t *r = &h.rings[(uint32_t)d->ctx * (uint32_t)h.size + d->peer];
    const uint8_t *dead = gmux_dev_peer_dead_flag_(h, d->peer);
    /* read before the claim and looked at after it: from a kernel both
     * cross the bus, and so they do at the same time */
    bool was_dead = gmux_dev_dead_(dead);
    uint64_t t;
    gmux_status_t st = gmux_dev_claim_(h, r, &h.ctx_error[d->ctx], dead, 1, &t);
    if (st != GMUX_OK)
        return st;
    gmux_dev_publish_fence_();
    if (was_dead) { /* the slot goes back as a no-op; nothing is sent */
        gmux_dev_desc_t nop = {};
        nop.opcode = GMUX_DEV_OP_NOP;
        nop.ctx = d->ctx;
        nop.peer = d->peer;
        gmux_dev_store_(h, r, &nop, t);
        return GMUX_ERR_PEER;
    }
    gmux_dev_store_(h, r, d, t);
    gmux_dev_host_progress_(h); /* a CPU thread posts it itself */
    return GMUX_OK;
}

/* The signal and counter of a put (opts may be NULL). */
GMUX_DEV_FN gmux_status_t gmux_dev_opts_(const gmux_dev_handle_t &h, const gmux_op_opts_t *opts,
                                         gmux_dev_desc_t *d)
{
    if (!opts)
        return GMUX_OK;
    if (opts->signal_op != GMUX_SIGNAL_NONE) {
        if ((unsigned)opts->signal_op > GMUX_SIGNAL_SET || opts->signal_id >= h.nsig)
            return GMUX_ERR_INVALID;
        d->signal_op = (uint8_t)opts->signal_op;
        d->signal_id = opts->signal_id + h.sig_base;
        d->signal_value = opts->signal_value;
    }
    if (opts->counter_id != GMUX_NO_COUNTER) {
        if (opts->counter_id >= h.ncnt)
            return GMUX_ERR_INVALID;
        d->flags = GMUX_DEV_F_COUNTER;
        d->counter_id = opts->counter_id;
    }
    return GMUX_OK;
}

/* ---- thread forms ---------------------------------------------------------- */

/* Copies size bytes from src_host (pinned host memory) into window win of
 * peer at offset; opts as on the host (NULL: nothing else). */
GMUX_DEV_FN gmux_status_t gmux_dev_put(const gmux_dev_handle_t &h, uint32_t ctx, int peer,
                                       gmux_window_t win, uint64_t offset, const void *src_host,
                                       uint64_t size, const gmux_op_opts_t *opts)
{
    gmux_dev_desc_t d = {};
    d.opcode = GMUX_DEV_OP_PUT;
    d.window = (uint16_t)win;
    d.ctx = (uint16_t)ctx;
    d.peer = (uint32_t)peer;
    d.offset = offset;
    d.src = (uint64_t)(uintptr_t)src_host;
    d.size = size;
    gmux_status_t st = gmux_dev_opts_(h, opts, &d);
    return st != GMUX_OK ? st : gmux_dev_push_(h, &d);
}

/* Puts the low `bytes` (1..8) bytes of value; no source to keep. */
GMUX_DEV_FN gmux_status_t gmux_dev_put_value(const gmux_dev_handle_t &h, uint32_t ctx, int peer,
                                             gmux_window_t win, uint64_t offset, uint64_t value,
                                             unsigned bytes, const gmux_op_opts_t *opts)
{
    if (bytes == 0 || bytes > 8)
        return GMUX_ERR_INVALID;
    gmux_dev_desc_t d = {};
    d.opcode = GMUX_DEV_OP_PUT_VALUE;
    d.window = (uint16_t)win;
    d.ctx = (uint16_t)ctx;
    d.peer = (uint32_t)peer;
    d.offset = offset;
    d.src = value;
    d.size = bytes;
    gmux_status_t st = gmux_dev_opts_(h, opts, &d);
    return st != GMUX_OK ? st : gmux_dev_push_(h, &d);
}

/* n puts to window win of peer on one context: put i copies sizes[i] bytes
 * from srcs[i] (pinned host memory) to offsets[i]. Their ring slots are
 * claimed together, one claim per up to half a ring of puts, so a kernel
 * pays one bus round trip per batch instead of one per put; they are
 * executed in index order. opts (NULL: none) goes with the last put only: a
 * signal there covers the whole batch. On an error the puts of earlier
 * pieces stay issued (*issued_p, optional, says how many). */
GMUX_DEV_FN gmux_status_t gmux_dev_put_batch(const gmux_dev_handle_t &h, uint32_t ctx, int peer,
                                             gmux_window_t win, uint32_t n, const uint64_t *offsets,
                                             const void *const *srcs, const uint64_t *sizes,
                                             const gmux_op_opts_t *opts, uint32_t *issued_p)
{
    if (issued_p)
        *issued_p = 0;
    if (ctx >= h.nctx || peer < 0 || peer >= h.size || n == 0)
        return n == 0 ? GMUX_OK : GMUX_ERR_INVALID;
    gmux_dev_desc_t last = {};
    gmux_status_t st = gmux_dev_opts_(h, opts, &last);
    if (st != GMUX_OK)
        return st;
    gmux_dev_ring_t *r = &h.rings[ctx * (uint32_t)h.size + (uint32_t)peer];
    const uint8_t *dead = gmux_dev_peer_dead_flag_(h, (uint32_t)peer);
    uint32_t piece_max = h.nslots > 1 ? h.nslots / 2 : 1;
    for (uint32_t at = 0; at < n;) {
        uint32_t piece = n - at < piece_max ? n - at : piece_max;
        bool was_dead = gmux_dev_dead_(dead); /* as in gmux_dev_push_ */
        uint64_t t;
        if ((st = gmux_dev_claim_(h, r, &h.ctx_error[ctx], dead, piece, &t)) != GMUX_OK)
            return st;
        gmux_dev_publish_fence_();
        for (uint32_t i = 0; i < piece; i++) {
            gmux_dev_desc_t d = at + i == n - 1 ? last : gmux_dev_desc_t{};
            d.opcode = was_dead ? GMUX_DEV_OP_NOP : GMUX_DEV_OP_PUT;
            d.window = (uint16_t)win;
            d.ctx = (uint16_t)ctx;
            d.peer = (uint32_t)peer;
            d.offset = offsets[at + i];
            d.src = (uint64_t)(uintptr_t)srcs[at + i];
            d.size = sizes[at + i];
            gmux_dev_store_(h, r, &d, t + i);
        }
        if (was_dead) /* the slots went back as no-ops */
            return GMUX_ERR_PEER;
        at += piece;
        if (issued_p)
            *issued_p = at;
        gmux_dev_host_progress_(h);
    }
    return GMUX_OK;
}

/* Adds, increments or sets signal_id at peer, after every earlier put of the
 * context to that peer has landed. */
GMUX_DEV_FN gmux_status_t gmux_dev_signal(const gmux_dev_handle_t &h, uint32_t ctx, int peer,
                                          uint32_t signal_id, gmux_signal_op_t op, uint64_t value)
{
    if (op == GMUX_SIGNAL_NONE || (unsigned)op > GMUX_SIGNAL_SET || signal_id >= h.nsig)
        return GMUX_ERR_INVALID;
    gmux_dev_desc_t d = {};
    d.opcode = GMUX_DEV_OP_SIGNAL;
    d.signal_op = (uint8_t)op;
    d.ctx = (uint16_t)ctx;
    d.peer = (uint32_t)peer;
    d.signal_id = signal_id + h.sig_base;
    d.signal_value = value;
    return gmux_dev_push_(h, &d);
}

/* The word kernels read a signal from: the mirror of a staged handle. */
GMUX_DEV_FN uint64_t *gmux_dev_sigword_(const gmux_dev_handle_t &h, uint32_t id)
{
    return h.sigview ? &h.sigview[id] : &h.signals[id];
}

GMUX_DEV_FN uint64_t gmux_dev_signal_read(const gmux_dev_handle_t &h, uint32_t id)
{
    return gmux_dev_sysref_t(*gmux_dev_sigword_(h, id)).load(cuda::memory_order_acquire);
}

GMUX_DEV_FN void gmux_dev_signal_reset(const gmux_dev_handle_t &h, uint32_t id)
{
    gmux_dev_sysref_t(h.signals[id]).store(0, cuda::memory_order_relaxed);
    if (h.sigview)
        gmux_dev_sysref_t(h.sigview[id]).store(0, cuda::memory_order_relaxed);
}

GMUX_DEV_FN uint64_t gmux_dev_counter_read(const gmux_dev_handle_t &h, uint32_t id)
{
    return gmux_dev_sysref_t(h.counters[id]).load(cuda::memory_order_acquire);
}

GMUX_DEV_FN void gmux_dev_counter_reset(const gmux_dev_handle_t &h, uint32_t id)
{
    gmux_dev_sysref_t(h.counters[id]).store(0, cuda::memory_order_relaxed);
}

/* Polls word until >= value, as a registered waiter (the service thread
 * drives progress meanwhile), or, on a CPU thread that drives its own
 * progress, progressing between polls. svc: the word is the service
 * thread's answer to a request, so it must run either way. on_death: fail
 * with GMUX_ERR_PEER once any rank of the communicator is known dead, as
 * the host API's waits do (the value may then never come). */
GMUX_DEV_FN gmux_status_t gmux_dev_wait_word_(const gmux_dev_handle_t &h, uint64_t *word,
                                              uint64_t value, uint64_t timeout_ns,
                                              uint64_t *value_p, bool svc = false,
                                              bool on_death = true)
{
    gmux_dev_sysref_t w(*word);
    uint64_t v = w.load(cuda::memory_order_acquire);
    gmux_status_t st = GMUX_OK;
    if (v < value) {
        bool self = gmux_dev_self_progress_(h);
        gmux_dev_sysref_t waiters(h.svc[GMUX_DEV_SVC_WAITERS]);
        if (!self || svc)
            waiters.fetch_add(1, cuda::memory_order_relaxed);
        uint64_t deadline = 0;
        for (unsigned i = 0, idle = 0; (v = w.load(cuda::memory_order_acquire)) < value; i++) {
            if ((i & 15) == 0 && on_death && gmux_dev_dead_(h.any_dead)) {
                st = GMUX_ERR_PEER;
                break;
            }
            if ((i & 15) == 0 &&
                gmux_dev_expired_(&deadline, timeout_ns ? timeout_ns : h.timeout_ns)) {
                st = GMUX_ERR_TIMEOUT;
                break;
            }
            if (!self)
                gmux_dev_pause_(i);
            else if (gmux_dev_host_progress_(h) > 0)
                idle = 0;
            else
                gmux_dev_pause_(++idle); /* yields once the passes stop finding work */
        }
        if (!self || svc)
            waiters.fetch_sub(1, cuda::memory_order_relaxed);
    }
    if (value_p)
        *value_p = v;
    return st;
}

/* Waits until signal_id >= value; timeout_ns 0: the communicator's timeout. */
GMUX_DEV_FN gmux_status_t gmux_dev_signal_wait(const gmux_dev_handle_t &h, uint32_t signal_id,
                                               uint64_t value, uint64_t timeout_ns,
                                               uint64_t *value_p)
{
    if (signal_id >= h.nsig)
        return GMUX_ERR_INVALID;
    return gmux_dev_wait_word_(h, gmux_dev_sigword_(h, signal_id), value, timeout_ns, value_p);
}

GMUX_DEV_FN gmux_status_t gmux_dev_counter_wait(const gmux_dev_handle_t &h, uint32_t counter_id,
                                                uint64_t value, uint64_t timeout_ns,
                                                uint64_t *value_p)
{
    if (counter_id >= h.ncnt)
        return GMUX_ERR_INVALID;
    return gmux_dev_wait_word_(h, &h.counters[counter_id], value, timeout_ns, value_p);
}

/* A flush or quiet request to the service thread; returns its status.
 * on_death: stop waiting for the answer with GMUX_ERR_PEER once any rank is
 * dead (the answer may be held up behind the dead rank; the request is still
 * served later, and takes the context's error then). */
GMUX_DEV_FN gmux_status_t gmux_dev_svc_request_(const gmux_dev_handle_t &h, uint32_t ctx, int req_w,
                                                int done_w, int status_w, bool on_death)
{
    if (ctx >= h.nctx)
        return GMUX_ERR_INVALID;
    uint64_t *base = h.svc + GMUX_DEV_SVC_CTX0 + GMUX_DEV_SVC_CTX_WORDS * ctx;
    /* release: the descriptors pushed before are seen by whoever sees the request */
    uint64_t mine = gmux_dev_sysref_t(base[req_w]).fetch_add(1, cuda::memory_order_acq_rel) + 1;
    uint64_t seen = 0;
    gmux_status_t st = gmux_dev_wait_word_(h, &base[done_w], mine, 0, &seen, true, on_death);
    if (st != GMUX_OK)
        return st;
    return (gmux_status_t)(int64_t)gmux_dev_sysref_t(base[status_w])
        .load(cuda::memory_order_relaxed);
}

/* Every earlier operation of ctx has its source consumed (reusable). Waits
 * for the answer even after a death: a source may be reused only once the
 * provider is done with it. */
GMUX_DEV_FN gmux_status_t gmux_dev_flush(const gmux_dev_handle_t &h, uint32_t ctx)
{
    return gmux_dev_svc_request_(h, ctx, GMUX_DEV_SVC_FLUSH_REQ, GMUX_DEV_SVC_FLUSH_DONE,
                                 GMUX_DEV_SVC_FLUSH_STATUS, false);
}

/* Every earlier operation of ctx is complete at its target; GMUX_ERR_PEER
 * once a rank is dead and the answer has not come yet. */
GMUX_DEV_FN gmux_status_t gmux_dev_quiet(const gmux_dev_handle_t &h, uint32_t ctx)
{
    return gmux_dev_svc_request_(h, ctx, GMUX_DEV_SVC_QUIET_REQ, GMUX_DEV_SVC_QUIET_DONE,
                                 GMUX_DEV_SVC_QUIET_STATUS, true);
}

/* ---- warp and block forms (device only) ------------------------------------ */
#include <gmux/net_device_group.cuh>

#endif /* GMUX_NET_DEVICE_CUH */
