/*
 * GPU test (label gpu): kernel-initiated put+signal between two ranks, in
 * the thread, warp and block forms, with counters, flush and quiet issued
 * from the kernel; then a staged handle: a put from device memory into a
 * device-memory window, checked in device memory once the signal shows. Runs under `gmux launch -n
 * 2`; exit 77 without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include <gmux/net.h>
#include <gmux/net_device.cuh>

#define WIN_WORDS 4096
#define SIG_T     0 /* thread form */
#define SIG_W     1 /* warp form */
#define SIG_B     2 /* block form */

static int me;

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "rank %d: %s: %s\n", me, #call, cudaGetErrorString(e_));               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* win layout (words): [0] thread-form value, [64..96) warp payload,
 * [1024..1536) block payload. src mirrors it. errors[i] counts failures. */
__global__ static void k_thread(gmux_dev_handle_t h, gmux_window_t w, const uint64_t *win,
                                int *errors)
{
    int peer = 1 - h.rank;
    gmux_op_opts_t o = {GMUX_SIGNAL_ADD, SIG_T, 5, 0 /* counter 0 */};
    errors[0] += gmux_dev_put_value(h, 0, peer, w, 0, 1000u + (uint64_t)h.rank, 8, &o) != GMUX_OK;
    errors[0] += gmux_dev_signal_wait(h, SIG_T, 5, 0, NULL) != GMUX_OK;
    errors[0] += ((volatile const uint64_t *)win)[0] != 1000u + (uint64_t)peer;
    errors[0] += gmux_dev_quiet(h, 0) != GMUX_OK;
}

__global__ static void k_warp(gmux_dev_handle_t h, gmux_window_t w, const uint64_t *win,
                              uint64_t *src, const uint64_t *src_host, int *errors)
{
    int peer = 1 - h.rank, lane = threadIdx.x;
    src[64 + lane] = ((uint64_t)h.rank << 32) | (uint64_t)lane * 3u;
    gmux_op_opts_t o = {GMUX_SIGNAL_INC, SIG_W, 0, 1 /* counter 1 */};
    gmux_status_t st = gmux_dev_put_warp(h, 1, peer, w, 64 * 8, src_host + 64, 32 * 8, &o);
    st = st != GMUX_OK ? st : gmux_dev_counter_wait_warp(h, 1, 1, 0, NULL);
    st = st != GMUX_OK ? st : gmux_dev_signal_wait_warp(h, SIG_W, 1, 0, NULL);
    if (lane == 0 && st != GMUX_OK)
        atomicAdd(&errors[1], 1);
    if (((volatile const uint64_t *)win)[64 + lane] !=
        (((uint64_t)peer << 32) | (uint64_t)lane * 3u))
        atomicAdd(&errors[1], 1);
}

__global__ static void k_block(gmux_dev_handle_t h, gmux_window_t w, const uint64_t *win,
                               uint64_t *src, const uint64_t *src_host, int *errors)
{
    int peer = 1 - h.rank;
    for (int i = threadIdx.x; i < 512; i += blockDim.x)
        src[1024 + i] = ((uint64_t)h.rank << 40) ^ (uint64_t)i * 2654435761u;
    gmux_op_opts_t o = {GMUX_SIGNAL_SET, SIG_B, 77, GMUX_NO_COUNTER};
    gmux_status_t st = gmux_dev_put_block(h, 2, peer, w, 1024 * 8, src_host + 1024, 512 * 8, &o);
    st = st != GMUX_OK ? st : gmux_dev_flush_block(h, 2);
    st = st != GMUX_OK ? st : gmux_dev_signal_wait_block(h, SIG_B, 77, 0, NULL);
    if (threadIdx.x == 0 && st != GMUX_OK)
        atomicAdd(&errors[2], 1);
    for (int i = threadIdx.x; i < 512; i += blockDim.x)
        if (((volatile const uint64_t *)win)[1024 + i] !=
            (((uint64_t)peer << 40) ^ (uint64_t)i * 2654435761u))
            atomicAdd(&errors[2], 1);
    st = gmux_dev_quiet_block(h, 2);
    if (threadIdx.x == 0 && st != GMUX_OK)
        atomicAdd(&errors[2], 1);
}

#define SIG_S  3 /* staged */
#define SIG_BT 4 /* batched puts */

/* Five puts of 8..40 words into [2048..), claimed together, the signal on
 * the last. */
__global__ static void k_batch(gmux_dev_handle_t h, gmux_window_t w, const uint64_t *win,
                               uint64_t *src, const uint64_t *src_host, int *errors)
{
    int peer = 1 - h.rank;
    for (int i = 0; i < 256; i++)
        src[2048 + i] = ((uint64_t)h.rank << 48) ^ (uint64_t)i * 40503u;
    uint64_t off[5], size[5];
    const void *srcs[5];
    for (int i = 0; i < 5; i++) {
        off[i] = (2048 + 48 * (uint64_t)i) * 8;
        size[i] = (8 + 8 * (uint64_t)i) * 8;
        srcs[i] = src_host + 2048 + 48 * i;
    }
    gmux_op_opts_t o = {GMUX_SIGNAL_SET, SIG_BT, 9, GMUX_NO_COUNTER};
    uint32_t issued = 0;
    errors[4] += gmux_dev_put_batch(h, 0, peer, w, 5, off, srcs, size, &o, &issued) != GMUX_OK;
    errors[4] += issued != 5;
    errors[4] += gmux_dev_signal_wait(h, SIG_BT, 9, 0, NULL) != GMUX_OK;
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 8 + 8 * i; k++) {
            int at = 2048 + 48 * i + k;
            errors[4] += ((volatile const uint64_t *)win)[at] !=
                         (((uint64_t)peer << 48) ^ (uint64_t)(48 * i + k) * 40503u);
        }
    errors[4] += gmux_dev_quiet(h, 0) != GMUX_OK;
}

/* diag (staged form, for a failure's report): the put's, the wait's and the
 * quiet's status, the first wrong word's index (-1: none) and its value. */
__global__ static void k_staged(gmux_dev_handle_t h, gmux_window_t w, const uint64_t *dwin,
                                uint64_t *dsrc, int *errors, long long *diag)
{
    int peer = 1 - h.rank;
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        dsrc[i] = ((uint64_t)h.rank << 48) + (uint64_t)i * 77u;
    gmux_op_opts_t o = {GMUX_SIGNAL_ADD, SIG_S, 1, GMUX_NO_COUNTER};
    gmux_status_t put = gmux_dev_put_block(h, 0, peer, w, 0, dsrc, 256 * 8, &o);
    gmux_status_t wait = put != GMUX_OK ? put : gmux_dev_signal_wait_block(h, SIG_S, 1, 0, NULL);
    if (threadIdx.x == 0) {
        diag[0] = put;
        diag[1] = wait;
        errors[3] += wait != GMUX_OK;
    }
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        uint64_t got = __ldcv((uint64_t *)&dwin[i]);
        if (got != ((uint64_t)peer << 48) + (uint64_t)i * 77u) {
            atomicAdd(&errors[3], 1);
            if (atomicCAS((unsigned long long *)&diag[3], (unsigned long long)-1ll,
                          (unsigned long long)i) == (unsigned long long)-1ll)
                diag[4] = (long long)got;
        }
    }
    gmux_status_t quiet = gmux_dev_quiet_block(h, 0);
    if (threadIdx.x == 0) {
        diag[2] = quiet;
        errors[3] += quiet != GMUX_OK;
    }
}

/* Device-memory window and device source through a staged handle. */
static int staged_part(gmux_comm_t *comm, int *derrors)
{
    gmux_dev_handle_t h;
    uint64_t *dwin2, *dsrc2;
    CUDA_OK(cudaMalloc((void **)&dwin2, 4096 * 8));
    CUDA_OK(cudaMalloc((void **)&dsrc2, 4096 * 8));
    CUDA_OK(cudaMemset(dwin2, 0, 4096 * 8));
    gmux_window_t w2;
    if (gmux_dev_handle_create_staged(comm, &h) != GMUX_OK ||
        gmux_dev_window_register(&h, dwin2, 4096 * 8, &w2) != GMUX_OK ||
        gmux_dev_source_register(&h, dsrc2, 4096 * 8) != GMUX_OK) {
        fprintf(stderr, "rank %d: staged handle or device window failed\n", me);
        return 1;
    }
    long long *diag, *ddiag;
    CUDA_OK(cudaHostAlloc((void **)&diag, 5 * sizeof(long long), cudaHostAllocMapped));
    diag[0] = diag[1] = diag[2] = diag[4] = 0;
    diag[3] = -1;
    CUDA_OK(cudaHostGetDevicePointer((void **)&ddiag, diag, 0));
    k_staged<<<1, 256, 0, 0>>>(h, w2, dwin2, dsrc2, derrors, ddiag);
    CUDA_OK(cudaDeviceSynchronize());
    if (diag[0] || diag[1] || diag[2] || diag[3] >= 0)
        fprintf(stderr,
                "rank %d: staged form (%s): put %s, wait %s, quiet %s; first wrong word %lld "
                "(%#llx)\n",
                me, gmux_dev_is_direct(&h, dwin2) == 1 ? "direct" : "staged",
                gmux_status_str((gmux_status_t)diag[0]), gmux_status_str((gmux_status_t)diag[1]),
                gmux_status_str((gmux_status_t)diag[2]), diag[3], (unsigned long long)diag[4]);
    cudaFreeHost(diag);
    gmux_barrier(gmux_team_world(comm));
    gmux_dev_source_deregister(&h, dsrc2);
    gmux_dev_window_deregister(&h, w2);
    gmux_dev_handle_destroy(&h);
    cudaFree(dwin2);
    cudaFree(dsrc2);
    return 0;
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "test_netdev_kernel: no GPU: skipped\n");
        return 77;
    }
    gmux_comm_params_t cp;
    gmux_comm_params_init(&cp);
    gmux_comm_t *comm = NULL;
    if (gmux_comm_init(&cp, &comm) != GMUX_OK || gmux_comm_size(comm) != 2) {
        fprintf(stderr, "test_netdev_kernel: needs 2 ranks under gmux launch\n");
        return 1;
    }
    me = gmux_comm_rank(comm);
    uint64_t *win, *src, *dwin, *dsrc;
    int *errors, *derrors;
    CUDA_OK(cudaHostAlloc((void **)&win, WIN_WORDS * 8, cudaHostAllocMapped));
    CUDA_OK(cudaHostAlloc((void **)&src, WIN_WORDS * 8, cudaHostAllocMapped));
    CUDA_OK(cudaHostAlloc((void **)&errors, 5 * sizeof(int), cudaHostAllocMapped));
    memset(win, 0, WIN_WORDS * 8);
    memset(errors, 0, 5 * sizeof(int));
    CUDA_OK(cudaHostGetDevicePointer((void **)&dwin, win, 0));
    CUDA_OK(cudaHostGetDevicePointer((void **)&dsrc, src, 0));
    CUDA_OK(cudaHostGetDevicePointer((void **)&derrors, errors, 0));
    gmux_window_t w;
    gmux_dev_handle_t h;
    if (gmux_window_register(comm, win, WIN_WORDS * 8, &w) != GMUX_OK ||
        gmux_dev_handle_create(comm, &h) != GMUX_OK) {
        fprintf(stderr, "rank %d: window or device handle failed\n", me);
        return 1;
    }
    k_thread<<<1, 1, 0, 0>>>(h, w, dwin, derrors);
    CUDA_OK(cudaDeviceSynchronize());
    k_warp<<<1, 32, 0, 0>>>(h, w, dwin, dsrc, src, derrors);
    CUDA_OK(cudaDeviceSynchronize());
    k_block<<<1, 256, 0, 0>>>(h, w, dwin, dsrc, src, derrors);
    CUDA_OK(cudaDeviceSynchronize());
    k_batch<<<1, 1, 0, 0>>>(h, w, dwin, dsrc, src, derrors);
    CUDA_OK(cudaDeviceSynchronize());
    gmux_barrier(gmux_team_world(comm));
    gmux_dev_handle_destroy(&h); /* one mapped handle per communicator at a time */
    int rc = staged_part(comm, derrors);
    const char *names[5] = {"thread", "warp", "block", "staged", "batch"};
    for (int i = 0; i < 5; i++) {
        if (errors[i]) {
            fprintf(stderr, "rank %d: %s form: %d errors\n", me, names[i], errors[i]);
            rc = 1;
        }
    }
    if (gmux_counter_read(comm, 0) != 1) {
        fprintf(stderr, "rank %d: counter 0 = %llu, expected 1\n", me,
                (unsigned long long)gmux_counter_read(comm, 0));
        rc = 1;
    }
    gmux_barrier(gmux_team_world(comm));
    gmux_window_deregister(comm, w);
    if (gmux_comm_finalize(comm) != GMUX_OK)
        rc = 1;
    if (rc == 0 && me == 0)
        printf("test_netdev_kernel: thread, warp, block forms, batched puts and staged device "
               "window ok\n");
    return rc;
}
