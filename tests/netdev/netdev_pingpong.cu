/*
 * Put+signal ping-pong between two ranks, CPU threads and CUDA kernels side
 * by side in one run (tests/gpu/netdev_checks.sh runs it on one GPU).
 *
 *   netdev_pingpong [--iters N] [--max-bytes B] [--staged]
 *
 * For each size (8 bytes, then powers of 4 up to B): rank 0 puts `size`
 * bytes with a signal ADD 1 to rank 1, which waits for it and puts back; the
 * round trip is timed over N iterations (fewer for large sizes), once with
 * the host API on a CPU thread and once from a single-thread kernel through
 * the device API, and once with a kernel on rank 0 answered by a CPU thread on
 * rank 1 (path "kernel_cpu": only one GPU context spins, so the two processes
 * do not take turns on the GPU as two spinning kernels do without MPS).
 * Every received message is checked (its first and last
 * words carry the round number). Rank 0 prints one JSON line per (path,
 * size): {"check":"netdev_pingpong","path":"cpu"|"kernel"|"kernel_cpu","bytes":..,
 * "rtt_us":..,"gbps":..}; the kernel paths add "issue_us", the time the
 * kernel spent inside its put call per round. With --staged, the kernel loop runs again with
 * window and source in device memory (path "kernel_staged"; its "direct" says whether the
 * provider reached them (FI_HMEM) or they were staged through
 * pinned memory). Exit 77 without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include <gmux/net.h>
#include <gmux/net_device.cuh>

#define SIG_CPU    0
#define SIG_KERNEL 1
#define SIG_MIXED  2 /* rank 0 a kernel, rank 1 a CPU thread */

static int me;

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "rank %d: %s: %s\n", me, #call, cudaGetErrorString(e_));               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define OK(call)                                                                                   \
    do {                                                                                           \
        gmux_status_t st_ = (call);                                                                \
        if (st_ != GMUX_OK) {                                                                      \
            fprintf(stderr, "rank %d: %s: %s\n", me, #call, gmux_status_name(st_));                \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Stamps round r into the first and last word of a message. */
__host__ __device__ static void stamp(uint64_t *msg, uint64_t bytes, uint64_t r)
{
    msg[0] = r;
    msg[bytes / 8 - 1] = r;
}

__host__ __device__ static bool stamped(const volatile uint64_t *msg, uint64_t bytes, uint64_t r)
{
    return msg[0] == r && msg[bytes / 8 - 1] == r;
}

/* One round trip per iteration; returns seconds per round trip, or < 0 when a
 * message was wrong. `base` is the signal value before the first round. */
static double cpu_pingpong(gmux_comm_t *comm, gmux_window_t w, uint64_t *win, uint64_t *src,
                           uint64_t bytes, int iters, uint64_t base, uint32_t sig)
{
    int peer = 1 - me;
    gmux_op_opts_t o = {GMUX_SIGNAL_ADD, sig, 1, GMUX_NO_COUNTER};
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
        uint64_t r = base + (uint64_t)i + 1;
        if (me == 1) {
            OK(gmux_signal_wait(comm, sig, r, NULL));
            if (!stamped(win, bytes, r))
                return -1.0;
        }
        if (bytes == 8) { /* the 8-byte case carries its value inline, as the kernel's */
            OK(gmux_put_value(comm, 0, peer, w, 0, r, 8, &o));
        } else {
            OK(gmux_flush(comm, 0)); /* src is rewritten below */
            stamp(src, bytes, r);
            OK(gmux_put(comm, 0, peer, w, 0, src, bytes, &o));
        }
        if (me == 0) {
            OK(gmux_signal_wait(comm, sig, r, NULL));
            if (!stamped(win, bytes, r))
                return -1.0;
        }
    }
    return (now_s() - t0) / iters;
}

/* The same loop in one GPU thread; ns_p[0] gets the elapsed %globaltimer ns,
 * ns_p[1] the part spent inside the put calls (claiming a slot, writing the
 * descriptor, publishing it: the kernel's own cost, the rest is waiting for
 * the proxy, the transport and the peer), *bad_p the number of wrong
 * messages.
 *
 * Every message is checked, but after the reply to it is issued: where the
 * window is host memory, reading it is a bus round trip from a GPU thread,
 * and a check that stalls before the put would add one to each one-way
 * trip, where the CPU loop's check costs a cache hit. The source is
 * stamped only when it is sent, as in the CPU loop: a store to it would hold
 * up the put's system-scope publish fence. */
__global__ static void k_pingpong(gmux_dev_handle_t h, gmux_window_t w, uint64_t *win,
                                  uint64_t *src, uint64_t bytes, int iters, uint64_t base,
                                  unsigned long long *ns_p, int *bad_p, uint32_t sig)
{
    int me = h.rank, peer = 1 - me, bad = 0;
    gmux_op_opts_t o = {GMUX_SIGNAL_ADD, sig, 1, GMUX_NO_COUNTER};
    const volatile uint64_t *vwin = win;
    uint64_t issue = 0, got0 = 0, got1 = 0, want = 0; /* want 0: nothing to check */
    uint64_t t0 = gmux_dev_now_ns();
    for (int i = 0; i < iters && !bad; i++) {
        uint64_t r = base + (uint64_t)i + 1;
        if (me == 1) {
            bad |= gmux_dev_signal_wait(h, sig, r, 0, NULL) != GMUX_OK;
            got0 = vwin[0];
            got1 = vwin[bytes / 8 - 1];
            want = r;
        }
        if (bytes > 8) {
            bad |= gmux_dev_flush(h, 0) != GMUX_OK;
            stamp(src, bytes, r);
        }
        uint64_t p0 = gmux_dev_now_ns();
        if (bytes == 8)
            bad |= gmux_dev_put_value(h, 0, peer, w, 0, r, 8, &o) != GMUX_OK;
        else
            bad |= gmux_dev_put(h, 0, peer, w, 0, src, bytes, &o) != GMUX_OK;
        issue += gmux_dev_now_ns() - p0;
        if (want) {
            bad |= got0 != want || got1 != want;
            want = 0;
        }
        if (me == 0) {
            bad |= gmux_dev_signal_wait(h, sig, r, 0, NULL) != GMUX_OK;
            got0 = vwin[0];
            got1 = vwin[bytes / 8 - 1];
            want = r;
        }
    }
    if (want)
        bad |= got0 != want || got1 != want;
    ns_p[0] = gmux_dev_now_ns() - t0;
    ns_p[1] = issue;
    *bad_p = bad;
}

/* The kernel ping-pong over a staged handle: window and source in device
 * memory (cudaMalloc), staged through pinned memory by the service thread.
 * The window is sized to the message, since the target copies whole windows. */
static int staged_run(gmux_comm_t *comm, uint64_t max_bytes, int iters, unsigned long long *ns,
                      int *bad, uint64_t base)
{
    gmux_dev_handle_t h;
    OK(gmux_dev_handle_create_staged(comm, &h));
    uint64_t *dsrc;
    CUDA_OK(cudaMalloc((void **)&dsrc, max_bytes));
    OK(gmux_dev_source_register(&h, dsrc, max_bytes));
    int rc = 0;
    for (uint64_t bytes = 8; bytes <= max_bytes && rc == 0; bytes = bytes < 64 ? 64 : bytes * 4) {
        int n = bytes <= 4096 ? iters : (int)(iters * 4096 / bytes) + 10;
        uint64_t *dwin;
        CUDA_OK(cudaMalloc((void **)&dwin, bytes));
        CUDA_OK(cudaMemset(dwin, 0, bytes));
        gmux_window_t w;
        OK(gmux_dev_window_register(&h, dwin, bytes, &w));
        bool direct = gmux_dev_is_direct(&h, dwin) == 1 && gmux_dev_is_direct(&h, dsrc) == 1;
        double kt = 0.0;
        for (int pass = 0; pass < 2; pass++) {
            int kn = pass == 0 ? 10 : n;
            k_pingpong<<<1, 1, 0, 0>>>(h, w, dwin, dsrc, bytes, kn, base, ns, bad, SIG_KERNEL);
            CUDA_OK(cudaDeviceSynchronize());
            base += (uint64_t)kn;
            rc |= *bad;
            kt = (double)ns[0] * 1e-9 / kn;
        }
        OK(gmux_barrier(gmux_team_world(comm)));
        OK(gmux_dev_window_deregister(&h, w));
        CUDA_OK(cudaFree(dwin));
        if (me == 0) {
            printf("{\"check\":\"netdev_pingpong\",\"path\":\"kernel_staged\",\"provider\":"
                   "\"%s\",\"direct\":%s,\"bytes\":%llu,\"iters\":%d,\"rtt_us\":%.2f,"
                   "\"gbps\":%.3f,\"ok\":%s}\n",
                   gmux_comm_provider(comm), direct ? "true" : "false", (unsigned long long)bytes,
                   n, kt * 1e6, kt > 0 ? 2.0 * (double)bytes / kt * 1e-9 : 0.0,
                   rc == 0 ? "true" : "false");
            fflush(stdout);
        }
    }
    OK(gmux_dev_source_deregister(&h, dsrc));
    gmux_dev_handle_destroy(&h);
    CUDA_OK(cudaFree(dsrc));
    return rc;
}

int main(int argc, char **argv)
{
    int iters = 2000;
    uint64_t max_bytes = 4u << 20;
    bool staged = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--staged") == 0)
            staged = true;
        else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc)
            max_bytes = strtoull(argv[++i], NULL, 0);
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "netdev_pingpong: no GPU: skipped\n");
        return 77;
    }
    gmux_comm_params_t cp;
    gmux_comm_params_init(&cp);
    gmux_comm_t *comm = NULL;
    OK(gmux_comm_init(&cp, &comm));
    me = gmux_comm_rank(comm);
    if (gmux_comm_size(comm) != 2) {
        fprintf(stderr, "netdev_pingpong: needs 2 ranks\n");
        return 2;
    }
    uint64_t *win, *src;
    CUDA_OK(cudaHostAlloc((void **)&win, max_bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    CUDA_OK(cudaHostAlloc((void **)&src, max_bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    memset(win, 0, max_bytes);
    void *dwin = NULL, *dsrc = NULL;
    CUDA_OK(cudaHostGetDevicePointer(&dwin, win, 0));
    CUDA_OK(cudaHostGetDevicePointer(&dsrc, src, 0));
    gmux_window_t w;
    OK(gmux_window_register(comm, win, max_bytes, &w));
    gmux_dev_handle_t h;
    OK(gmux_dev_handle_create(comm, &h));
    unsigned long long *ns;
    int *bad;
    CUDA_OK(cudaHostAlloc((void **)&ns, 2 * sizeof(*ns), cudaHostAllocMapped));
    CUDA_OK(cudaHostAlloc((void **)&bad, sizeof(*bad), cudaHostAllocMapped));
    int rc = 0;
    uint64_t cpu_base = 0, k_base = 0, m_base = 0;
    for (uint64_t bytes = 8; bytes <= max_bytes; bytes = bytes < 64 ? 64 : bytes * 4) {
        int n = bytes <= 4096 ? iters : (int)(iters * 4096 / bytes) + 10;
        /* warm-up rounds, then the timed ones; both paths alternate per size */
        OK(gmux_barrier(gmux_team_world(comm)));
        if (cpu_pingpong(comm, w, win, src, bytes, 10, cpu_base, SIG_CPU) < 0)
            rc = 1;
        cpu_base += 10;
        double cpu_rt = cpu_pingpong(comm, w, win, src, bytes, n, cpu_base, SIG_CPU);
        cpu_base += (uint64_t)n;
        if (cpu_rt < 0)
            rc = 1;
        OK(gmux_barrier(gmux_team_world(comm)));
        double kt = 0.0, ki = 0.0;
        for (int pass = 0; pass < 2; pass++) { /* pass 0: warm-up */
            int kn = pass == 0 ? 10 : n;
            k_pingpong<<<1, 1, 0, 0>>>(h, w, (uint64_t *)dwin, (uint64_t *)dsrc, bytes, kn, k_base,
                                       ns, bad, SIG_KERNEL);
            CUDA_OK(cudaDeviceSynchronize());
            k_base += (uint64_t)kn;
            if (*bad)
                rc = 1;
            kt = (double)ns[0] * 1e-9 / kn;
            ki = (double)ns[1] * 1e-9 / kn;
        }
        OK(gmux_barrier(gmux_team_world(comm)));
        /* kernel on rank 0, CPU thread on rank 1: one GPU context spins, so
         * two processes without MPS do not time-slice the GPU between them */
        double mt = 0.0, mi = 0.0;
        for (int pass = 0; pass < 2; pass++) {
            int kn = pass == 0 ? 10 : n;
            if (me == 0) {
                k_pingpong<<<1, 1, 0, 0>>>(h, w, (uint64_t *)dwin, (uint64_t *)dsrc, bytes, kn,
                                           m_base, ns, bad, SIG_MIXED);
                CUDA_OK(cudaDeviceSynchronize());
                if (*bad)
                    rc = 1;
                mt = (double)ns[0] * 1e-9 / kn;
                mi = (double)ns[1] * 1e-9 / kn;
            } else if (cpu_pingpong(comm, w, win, src, bytes, kn, m_base, SIG_MIXED) < 0) {
                rc = 1;
            }
            m_base += (uint64_t)kn;
        }
        OK(gmux_barrier(gmux_team_world(comm)));
        if (me == 0) {
            printf("{\"check\":\"netdev_pingpong\",\"path\":\"cpu\",\"provider\":\"%s\","
                   "\"bytes\":%llu,\"iters\":%d,\"rtt_us\":%.2f,\"gbps\":%.3f,\"ok\":%s}\n",
                   gmux_comm_provider(comm), (unsigned long long)bytes, n, cpu_rt * 1e6,
                   cpu_rt > 0 ? 2.0 * (double)bytes / cpu_rt * 1e-9 : 0.0,
                   cpu_rt > 0 ? "true" : "false");
            printf("{\"check\":\"netdev_pingpong\",\"path\":\"kernel\",\"provider\":\"%s\","
                   "\"bytes\":%llu,\"iters\":%d,\"rtt_us\":%.2f,\"issue_us\":%.2f,\"gbps\":%.3f,"
                   "\"ok\":%s}\n",
                   gmux_comm_provider(comm), (unsigned long long)bytes, n, kt * 1e6, ki * 1e6,
                   kt > 0 ? 2.0 * (double)bytes / kt * 1e-9 : 0.0, rc == 0 ? "true" : "false");
            printf("{\"check\":\"netdev_pingpong\",\"path\":\"kernel_cpu\",\"provider\":\"%s\","
                   "\"bytes\":%llu,\"iters\":%d,\"rtt_us\":%.2f,\"issue_us\":%.2f,\"gbps\":%.3f,"
                   "\"ok\":%s}\n",
                   gmux_comm_provider(comm), (unsigned long long)bytes, n, mt * 1e6, mi * 1e6,
                   mt > 0 ? 2.0 * (double)bytes / mt * 1e-9 : 0.0, rc == 0 ? "true" : "false");
            fflush(stdout);
        }
        if (rc)
            break;
    }
    gmux_dev_handle_destroy(&h); /* one mapped handle per communicator at a time */
    if (rc == 0 && staged)
        rc = staged_run(comm, max_bytes, iters, ns, bad, k_base);
    OK(gmux_window_deregister(comm, w));
    gmux_status_t st = gmux_comm_finalize(comm);
    return rc ? rc : st != GMUX_OK;
}
