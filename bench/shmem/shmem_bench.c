/*
 * OpenSHMEM micro-benchmark: put and get latency and bandwidth, atomic
 * latency, between PE 0 and PE 1. Written to the OpenSHMEM 1.4 subset that
 * both gmux's libgmux-shmem and Open MPI's oshmem provide, so the same file
 * compiles with either oshcc. PE 0 prints one line per figure:
 *   <metric> <bytes> <value> <unit>
 * Latencies are the median of 5 timed batches (microseconds per op);
 * bandwidths the best of 5 (MB/s, 10^6 bytes).
 */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 5
#define WINDOW  4 /* non-blocking ops in flight per quiet */
#define MAXSZ   (1 << 20)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v)
{
    qsort(v, BATCHES, sizeof(double), cmp_double);
    return v[BATCHES / 2];
}

static int iters_for(size_t size)
{
    return size <= 4096 ? 200 : size <= 65536 ? 50 : 10;
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    if (shmem_n_pes() < 2) {
        if (me == 0)
            fprintf(stderr, "shmem_bench needs 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    char *remote = shmem_malloc((size_t)MAXSZ * WINDOW);
    long *counter = shmem_malloc(sizeof(long));
    char *local = malloc(MAXSZ);
    memset(local, 1, MAXSZ);
    *counter = 0;
    shmem_barrier_all();
    static const size_t sizes[] = {8, 64, 1024, 8192, 65536, 1 << 20};
    double t[BATCHES];
    if (me == 0) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            size_t size = sizes[s];
            int it = iters_for(size);
            for (int b = 0; b < BATCHES; b++) {
                double t0 = now_us();
                for (int i = 0; i < it; i++) {
                    shmem_putmem(remote, local, size, 1);
                    shmem_quiet();
                }
                t[b] = (now_us() - t0) / it;
            }
            printf("put_lat %zu %.2f us\n", size, median(t));
            for (int b = 0; b < BATCHES; b++) {
                double t0 = now_us();
                for (int i = 0; i < it; i++)
                    shmem_getmem(local, remote, size, 1);
                t[b] = (now_us() - t0) / it;
            }
            printf("get_lat %zu %.2f us\n", size, median(t));
            if (size < 1024)
                continue;
            double best = 0;
            for (int b = 0; b < BATCHES; b++) {
                int reps = size >= (1 << 20) ? 2 : 8;
                double t0 = now_us();
                for (int r = 0; r < reps; r++) {
                    for (int w = 0; w < WINDOW; w++)
                        shmem_putmem_nbi(remote + (size_t)w * size, local, size, 1);
                    shmem_quiet();
                }
                double mbs = (double)size * WINDOW * reps / (now_us() - t0);
                if (mbs > best)
                    best = mbs;
            }
            printf("put_bw %zu %.1f MB/s\n", size, best);
            best = 0;
            for (int b = 0; b < BATCHES; b++) {
                int reps = size >= (1 << 20) ? 2 : 8;
                double t0 = now_us();
                for (int r = 0; r < reps; r++) {
                    for (int w = 0; w < WINDOW; w++)
                        shmem_getmem_nbi(local, remote + (size_t)w * size, size, 1);
                    shmem_quiet();
                }
                double mbs = (double)size * WINDOW * reps / (now_us() - t0);
                if (mbs > best)
                    best = mbs;
            }
            printf("get_bw %zu %.1f MB/s\n", size, best);
        }
        for (int b = 0; b < BATCHES; b++) {
            double t0 = now_us();
            for (int i = 0; i < 200; i++)
                shmem_long_atomic_fetch_add(counter, 1, 1);
            t[b] = (now_us() - t0) / 200;
        }
        printf("amo_fadd_lat 8 %.2f us\n", median(t));
        for (int b = 0; b < BATCHES; b++) {
            double t0 = now_us();
            for (int i = 0; i < 200; i++)
                shmem_long_atomic_compare_swap(counter, -1, 0, 1);
            t[b] = (now_us() - t0) / 200;
        }
        printf("amo_cswap_lat 8 %.2f us\n", median(t));
        fflush(stdout);
    }
    shmem_barrier_all();
    if (me == 1 && *counter != 200 * BATCHES)
        fprintf(stderr, "shmem_bench: counter %ld, expected %d\n", *counter, 200 * BATCHES);
    shmem_free(counter);
    shmem_free(remote);
    free(local);
    shmem_finalize();
    return 0;
}
