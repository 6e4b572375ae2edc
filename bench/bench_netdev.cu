/*
 * The device API's software path on CPU threads, beside the host API, in one
 * run: what a kernel-initiated round trip costs before any GPU or PCIe cost.
 *
 *   gmux launch -n 2 -- bench_netdev [--iters N] [--reps R]
 *
 * The functions of include/gmux/net_device.cuh are compiled here as host
 * code, as in tests/netdev/netdev_rank.cu, and run on CPU threads against a
 * host handle. Three 8-byte put+signal ping-pongs (put_value carrying a
 * signal ADD 1, the peer waits and answers the same way):
 *   host         gmux_put_value / gmux_signal_wait on both ranks: the CPU path
 *                (direct execution when the ring is empty, inline progress);
 *   device       gmux_dev_put_value / gmux_dev_signal_wait on both ranks:
 *                every put through its ring, drained by the proxy or the
 *                handle's service thread, every wait polling the signal word
 *                while the service thread progresses (the GPU's path: the
 *                handle's host_progress off, as a kernel has it);
 *   device_host  the device path on rank 0, the host path answering on rank 1
 *                (netdev_pingpong's kernel_cpu on a GPU);
 *   device_cpu   the device API as CPU threads get it by default: the
 *                calling thread posts its put and progresses while it waits
 *                (host_progress on, GMUX_NET_DEV_HOST_PROGRESS).
 * Each is measured in R rounds, the paths' order rotating from round to
 * round; rank 0 prints one JSON line per path: the median round trip over
 * the rounds, and for the device paths the median of the per-round ratios
 * to the host path. Run by `make bench` and by tests/gpu/netdev_checks.sh
 * (on the GPU's host, whose cores these threads then do not share).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>

#include <gmux/net.h>
#include <gmux/net_device.cuh>

#include "../tests/net/rank_check.h" /* OK(call): ends the rank naming the call */

enum { PATHS = 4, REPS_MAX = 64 };
static const char *const path_name[PATHS] = {"host", "device", "device_host", "device_cpu"};

static int me; /* for rank_check.h */

static double now_s(void)
{
    return (double)gmux_dev_now_ns() * 1e-9; /* CLOCK_MONOTONIC on a CPU thread */
}

/* One ping-pong of iters rounds on path p, signal sig counting from base;
 * microseconds per round trip. */
static double pingpong(gmux_comm_t *comm, const gmux_dev_handle_t &h0, gmux_window_t w, int p,
                       int iters, uint32_t sig, uint64_t base)
{
    int peer = 1 - me;
    bool dev = p == 1 || p == 3 || (p == 2 && me == 0);
    gmux_dev_handle_t h = h0;
    h.host_progress = p == 3; /* the kernel's path leaves progress to the service thread */
    gmux_op_opts_t o = {GMUX_SIGNAL_ADD, sig, 1, GMUX_NO_COUNTER};
    OK(gmux_barrier(gmux_team_world(comm)));
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
        uint64_t r = base + (uint64_t)i + 1;
        if (me == 1)
            OK(dev ? gmux_dev_signal_wait(h, sig, r, 0, NULL)
                   : gmux_signal_wait(comm, sig, r, NULL));
        OK(dev ? gmux_dev_put_value(h, 0, peer, w, 0, r, 8, &o)
               : gmux_put_value(comm, 0, peer, w, 0, r, 8, &o));
        if (me == 0)
            OK(dev ? gmux_dev_signal_wait(h, sig, r, 0, NULL)
                   : gmux_signal_wait(comm, sig, r, NULL));
    }
    return (now_s() - t0) / iters * 1e6;
}

static double median(double *v, int n)
{
    std::sort(v, v + n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    int iters = 2000, reps = 6;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            bool help = strcmp(argv[i], "--help") == 0;
            fprintf(help ? stdout : stderr,
                    "usage: gmux launch -n 2 -- bench_netdev [--iters N] [--reps R]\n"
                    "8-byte put+signal round trips, host API and device API on CPU threads\n"
                    "(defaults: 2000 round trips per path and round, 6 rounds)\n");
            return help ? 0 : 2;
        }
    }
    if (iters < 1 || reps < 1 || reps > REPS_MAX) {
        fprintf(stderr, "bench_netdev: --iters >= 1, --reps 1..%d\n", REPS_MAX);
        return 2;
    }
    gmux_comm_t *comm = NULL;
    gmux_status_t st = gmux_comm_init(NULL, &comm);
    if (st != GMUX_OK) {
        fprintf(stderr, "bench_netdev: gmux_comm_init: %s\n", gmux_status_name(st));
        return 1;
    }
    me = gmux_comm_rank(comm);
    if (gmux_comm_size(comm) != 2) {
        fprintf(stderr, "bench_netdev: needs exactly 2 ranks\n");
        return 1;
    }
    gmux_dev_handle_t h;
    OK(gmux_dev_handle_create_host(comm, &h));
    uint64_t *win = (uint64_t *)calloc(8, sizeof(uint64_t));
    gmux_window_t w;
    OK(gmux_window_register(comm, win, 8 * sizeof(uint64_t), &w));
    double us[PATHS][REPS_MAX], ratio[PATHS][REPS_MAX];
    uint64_t base[PATHS] = {0, 0, 0, 0};
    for (int p = 0; p < PATHS; p++) { /* one untimed round of each path */
        pingpong(comm, h, w, p, iters / 10 + 1, (uint32_t)p, base[p]);
        base[p] += (uint64_t)(iters / 10 + 1);
    }
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < PATHS; k++) {
            int p = (k + r) % PATHS; /* each path first in turn */
            us[p][r] = pingpong(comm, h, w, p, iters, (uint32_t)p, base[p]);
            base[p] += (uint64_t)iters;
        }
        for (int p = 0; p < PATHS; p++)
            ratio[p][r] = us[p][r] / us[0][r];
    }
    if (me == 0) {
        for (int p = 0; p < PATHS; p++) {
            double q = median(ratio[p], reps), lo = ratio[p][0], hi = ratio[p][reps - 1];
            printf("{\"bench\":\"netdev_cpu\",\"provider\":\"%s\",\"path\":\"%s\",\"iters\":%d,"
                   "\"reps\":%d,\"rtt_us\":%.3f,\"vs_host\":%.3f,\"vs_host_min\":%.3f,"
                   "\"vs_host_max\":%.3f}\n",
                   gmux_comm_provider(comm), path_name[p], iters, reps, median(us[p], reps), q, lo,
                   hi);
        }
        fflush(stdout);
    }
    OK(gmux_barrier(gmux_team_world(comm)));
    gmux_dev_handle_destroy(&h);
    OK(gmux_window_deregister(comm, w));
    free(win);
    OK(gmux_comm_finalize(comm));
    return 0;
}
