/*
 * A rank of gmux bench net (gmux-net-rank bench-net): put+signal round-trip
 * latency, bandwidth against size and 8-byte message rate of gmux, each
 * measured in the same run next to raw libfabric doing the same transfer on
 * a second endpoint of the same provider (fi_writedata / fi_inject_writedata
 * with remote CQ data, the target polling its CQ: the least raw libfabric
 * needs to deliver data plus a notification). The raw side injects exactly
 * where gmux does (fab.rma_inject_size: never on tcp, see docs/net.md), so
 * both columns do the same transfer.
 *
 * `gmux bench net` (bench_net.c) launches two of these ranks per provider;
 * rank 0 prints a table, or with --json one record per line:
 *   {"provider", "op", "bytes", "gmux", "raw", "unit", "ratio", "ratio_min",
 *    "ratio_max", "gmux_best", "raw_best", "reps"}
 * gmux and raw are the medians of REPS alternating runs of each side, ratio
 * the median of the per-run ratios gmux/raw (bench_series.h says why).
 */
#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <gmux/net.h>

#include "bench.h"
#include "bench_series.h"
#include "common/clock.h"
#include "common/parse.h"
#include "net/fab.h"
#include "net/fiload.h"
#include "net/internal.h"
#include "net_rank.h"

/* --- raw libfabric side ----------------------------------------------------- */

#define RAW_CTX 4096

typedef struct raw {
    net_fab_t fab;
    struct fid_mr *mr;
    uint8_t *dst; /* the raw target buffer, registered as mr */
    uint64_t key;
    uint64_t peer_raddr, peer_key;
    fi_addr_t peer;
    uint64_t remote_seen;
    uint64_t tx_out;
    unsigned next_ctx;
    unsigned idle;
    net_stats_t stats; /* the same counts as gmux's (--calls) */
    struct fi_context2 ctx[RAW_CTX];
} raw_t;

struct raw_card {
    char name[NET_FAB_NAME_MAX];
    uint64_t raddr, key;
};

/* Reads completions; like gmux's waits, yields the CPU after a run of idle
 * polls, so both sides keep the same waiting discipline on a busy machine. */
static void raw_poll(raw_t *r)
{
    struct fi_cq_data_entry e[64];
    ssize_t n = fi_cq_read(r->fab.cq, e, 64);
    r->stats.cq_reads++;
    if (n > 0)
        r->stats.cq_entries += (uint64_t)n;
    if (n <= 0 && ++r->idle > 256)
        sched_yield();
    if (n > 0)
        r->idle = 0;
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err = {0};
        fi_cq_readerr(r->fab.cq, &err, 0);
        fprintf(stderr, "bench: raw completion error: %s\n", net_fi_strerror(err.err));
        exit(1);
    }
    for (ssize_t i = 0; i < n; i++) {
        if (e[i].flags & FI_REMOTE_CQ_DATA)
            r->remote_seen++;
        else
            r->tx_out--;
    }
}

static void raw_write(raw_t *r, const void *buf, size_t len, uint64_t data)
{
    bool inject = len <= r->fab.rma_inject_size;
    while (r->tx_out >= RAW_CTX / 4)
        raw_poll(r);
    for (;;) {
        ssize_t ret = inject ? fi_inject_writedata(r->fab.ep, buf, len, data, r->peer,
                                                   r->peer_raddr, r->peer_key)
                             : fi_writedata(r->fab.ep, buf, len, NULL, data, r->peer, r->peer_raddr,
                                            r->peer_key, &r->ctx[r->next_ctx++ % RAW_CTX]);
        if (ret == 0)
            break;
        r->stats.eagain++;
        if (ret != -FI_EAGAIN) {
            fprintf(stderr, "bench: raw write: %s\n", net_fi_strerror((int)-ret));
            exit(1);
        }
        raw_poll(r);
    }
    if (!inject)
        r->tx_out++;
    r->stats.writes++;
}

static void raw_wait_remote(raw_t *r, uint64_t n)
{
    while (r->remote_seen < n)
        raw_poll(r);
}

/* --- the measurements --------------------------------------------------------- */

enum { SIG_PING, SIG_PONG, SIG_BW, SIG_BW_ACK, SIG_XCHG };

struct ctx {
    gmux_comm_t *comm;
    int me, peer;
    gmux_window_t win;
    uint8_t *src;
    raw_t *raw;
    bool json, quick, calls;
    const char *same; /* NULL, or "gmux" / "raw": that side in both columns */
    int reps;         /* alternating gmux/raw runs per figure */
    const char *prov;
    FILE *plot; /* rank 0 with --plot-data: one row per bandwidth figure */
};

#define MAX_BYTES (4u << 20)

static void *zalloc(size_t bytes)
{
    void *p = calloc(1, bytes);
    if (!p) {
        fprintf(stderr, "bench: no memory for %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

static void must(gmux_status_t st, const char *what)
{
    if (st != GMUX_OK) {
        fprintf(stderr, "bench: %s: %s\n", what, gmux_status_str(st));
        exit(1);
    }
}

static void report(const struct ctx *c, const char *op, uint64_t bytes, const double *g,
                   const double *r, bool lower_better, const char *unit)
{
    if (c->me != 0)
        return;
    bench_summary_t s = bench_summarize(g, r, c->reps, lower_better);
    if (c->json)
        printf("{\"provider\":\"%s\",\"op\":\"%s\",\"bytes\":%" PRIu64
               ",\"gmux\":%.4g,\"raw\":%.4g,\"unit\":\"%s\",\"ratio\":%.4g,\"ratio_min\":%.4g,"
               "\"ratio_max\":%.4g,\"gmux_best\":%.4g,\"raw_best\":%.4g,\"reps\":%d%s%s%s}\n",
               c->prov, op, bytes, s.gmux, s.raw, unit, s.ratio, s.ratio_min, s.ratio_max,
               s.gmux_best, s.raw_best, s.n, c->same ? ",\"same\":\"" : "", c->same ? c->same : "",
               c->same ? "\"" : "");
    else
        printf("%-12s %-14s %9" PRIu64
               " B  gmux %10.3f  raw %10.3f %-6s  gmux/raw %.2f [%.2f..%.2f]\n",
               c->prov, op, bytes, s.gmux, s.raw, unit, s.ratio, s.ratio_min, s.ratio_max);
    fflush(stdout);
}

static net_stats_t gmux_stats(gmux_comm_t *comm)
{
    net_progress_lock_wait(comm);
    net_stats_t s = comm->stats;
    pthread_mutex_unlock(&comm->progress_lock);
    return s;
}

/* acc + (after - before) */
static net_stats_t stats_acc(net_stats_t acc, net_stats_t before, net_stats_t after)
{
    acc.writes += after.writes - before.writes;
    acc.eagain += after.eagain - before.eagain;
    acc.msgs += after.msgs - before.msgs;
    acc.cq_reads += after.cq_reads - before.cq_reads;
    acc.cq_entries += after.cq_entries - before.cq_entries;
    acc.descs += after.descs - before.descs;
    return acc;
}

/* --calls: libfabric calls per transfer of each side, printed by each rank
 * (both sides of a transfer count). */
static void report_calls(const struct ctx *c, const char *op, uint64_t bytes, uint64_t transfers,
                         net_stats_t g, net_stats_t r)
{
    if (!c->calls)
        return;
    double n = (double)transfers;
    const net_stats_t *s[2] = {&g, &r};
    for (int i = 0; i < 2; i++)
        printf("{\"provider\":\"%s\",\"op\":\"calls_%s\",\"bytes\":%" PRIu64
               ",\"rank\":%d,\"side\":\"%s\",\"per_transfer\":{\"writes\":%.4g,"
               "\"eagain\":%.4g,\"msgs\":%.4g,\"cq_reads\":%.4g,\"cq_entries\":%.4g}}\n",
               c->prov, op, bytes, c->me, i ? "raw" : "gmux", (double)s[i]->writes / n,
               (double)s[i]->eagain / n, (double)s[i]->msgs / n, (double)s[i]->cq_reads / n,
               (double)s[i]->cq_entries / n);
    fflush(stdout);
}

static double latency_gmux(struct ctx *c, uint64_t iters)
{
    gmux_signal_reset(c->comm, SIG_PING);
    gmux_signal_reset(c->comm, SIG_PONG);
    must(gmux_barrier(gmux_team_world(c->comm)), "barrier");
    gmux_op_opts_t ping = {GMUX_SIGNAL_ADD, SIG_PING, 1, GMUX_NO_COUNTER};
    gmux_op_opts_t pong = {GMUX_SIGNAL_ADD, SIG_PONG, 1, GMUX_NO_COUNTER};
    uint64_t t0 = com_clock_ns();
    for (uint64_t i = 1; i <= iters; i++) {
        if (c->me == 0) {
            must(gmux_put_value(c->comm, 0, c->peer, c->win, 0, i, 8, &ping), "put");
            must(gmux_signal_wait(c->comm, SIG_PONG, i, NULL), "wait");
        } else {
            must(gmux_signal_wait(c->comm, SIG_PING, i, NULL), "wait");
            must(gmux_put_value(c->comm, 0, c->peer, c->win, 0, i, 8, &pong), "put");
        }
    }
    return (double)(com_clock_ns() - t0) / (double)iters / 1e3;
}

static double latency_raw(struct ctx *c, uint64_t iters)
{
    must(gmux_barrier(gmux_team_world(c->comm)), "barrier");
    raw_t *r = c->raw;
    uint64_t base = r->remote_seen;
    uint64_t t0 = com_clock_ns();
    for (uint64_t i = 1; i <= iters; i++) {
        if (c->me == 0) {
            raw_write(r, &i, 8, i);
            raw_wait_remote(r, base + i);
        } else {
            raw_wait_remote(r, base + i);
            raw_write(r, &i, 8, i);
        }
    }
    return (double)(com_clock_ns() - t0) / (double)iters / 1e3;
}

/* k puts of size bytes, then one notification back; returns seconds at rank 0.
 * values: 8-byte put_values, all to offset 0, or with run to consecutive
 * offsets (the runs the proxy merges, src/net/coalesce.h). */
static double stream_gmux(struct ctx *c, size_t size, uint64_t k, bool values, bool run)
{
    gmux_signal_reset(c->comm, SIG_BW);
    gmux_signal_reset(c->comm, SIG_BW_ACK);
    must(gmux_barrier(gmux_team_world(c->comm)), "barrier");
    gmux_op_opts_t last = {GMUX_SIGNAL_ADD, SIG_BW, 1, GMUX_NO_COUNTER};
    uint64_t t0 = com_clock_ns();
    if (c->me == 0) {
        for (uint64_t i = 0; i < k; i++) {
            const gmux_op_opts_t *o = i + 1 == k ? &last : NULL;
            uint64_t off = run ? (i * 8) % MAX_BYTES : 0;
            if (values)
                must(gmux_put_value(c->comm, 0, c->peer, c->win, off, i, 8, o), "put_value");
            else
                must(gmux_put(c->comm, 0, c->peer, c->win, 0, c->src, size, o), "put");
        }
        must(gmux_signal_wait(c->comm, SIG_BW_ACK, 1, NULL), "wait");
    } else {
        must(gmux_signal_wait(c->comm, SIG_BW, 1, NULL), "wait");
        must(gmux_signal(c->comm, 0, c->peer, SIG_BW_ACK, GMUX_SIGNAL_ADD, 1), "signal");
        must(gmux_flush(c->comm, 0), "flush");
    }
    return (double)(com_clock_ns() - t0) / 1e9;
}

static double stream_raw(struct ctx *c, size_t size, uint64_t k)
{
    must(gmux_barrier(gmux_team_world(c->comm)), "barrier");
    raw_t *r = c->raw;
    uint64_t base = r->remote_seen;
    uint64_t t0 = com_clock_ns();
    if (c->me == 0) {
        for (uint64_t i = 0; i < k; i++)
            raw_write(r, c->src, size, i);
        raw_wait_remote(r, base + 1);
    } else {
        raw_wait_remote(r, base + k);
        raw_write(r, c->src, 8, 0);
    }
    while (r->tx_out)
        raw_poll(r);
    return (double)(com_clock_ns() - t0) / 1e9;
}

/* One figure: which transfer, and how a run's seconds become its value. */
typedef struct fig {
    enum { FIG_RTT, FIG_BW, FIG_RATE } kind;
    size_t size;      /* bytes per put */
    uint64_t n;       /* round trips, or puts per run */
    bool values, run; /* stream_gmux's put_value forms */
} fig_t;

static double fig_run(struct ctx *c, const fig_t *f, bool gmux, net_stats_t *acc)
{
    if (c->same)
        gmux = strcmp(c->same, "gmux") == 0;
    if (f->kind == FIG_RTT)
        return gmux ? latency_gmux(c, f->n) : latency_raw(c, f->n);
    net_stats_t before = gmux ? gmux_stats(c->comm) : c->raw->stats;
    double s =
        gmux ? stream_gmux(c, f->size, f->n, f->values, f->run) : stream_raw(c, f->size, f->n);
    *acc = stats_acc(*acc, before, gmux ? gmux_stats(c->comm) : c->raw->stats);
    double units =
        f->kind == FIG_BW ? (double)f->size * (double)f->n / (1 << 20) : (double)f->n / 1e6;
    return units / s;
}

/* c->reps pairs of runs, g[i] and r[i] the i-th of each side, after one
 * untimed run of each (the first run of a figure is slower: a cold
 * connection, cold buffers; it used to be always gmux's). The order within
 * a pair alternates (gmux first in even pairs, raw first in odd ones):
 * whatever favours the second run of a pair (measured: up to 0.08 of the
 * tcp 32 KiB ratio) then favours both sides alike. */
static void fig_measure(struct ctx *c, const fig_t *f, double *g, double *r, net_stats_t *gs,
                        net_stats_t *rs)
{
    net_stats_t warm = {0};
    (void)fig_run(c, f, false, &warm);
    (void)fig_run(c, f, true, &warm);
    for (int rep = 0; rep < c->reps; rep++)
        for (int i = 0; i < 2; i++) {
            bool gmux = (i == 0) == (rep % 2 == 0);
            double v = fig_run(c, f, gmux, gmux ? gs : rs);
            if (gmux)
                g[rep] = v;
            else
                r[rep] = v;
        }
}

static void exchange_raw(struct ctx *c)
{
    raw_t *r = zalloc(sizeof(*r));
    const char *prov = strncmp(gmux_comm_provider(c->comm), "tcp", 3) == 0 ? "tcp" : "shm";
    char name[128];
    net_shm_name(c->me, "-raw", name, sizeof(name));
    must(net_fab_open(prov, true, name, NET_FAB_HMEM_OFF, &r->fab), "raw endpoint");
    /* the raw target buffer: a second window-sized region */
    r->dst = zalloc(MAX_BYTES);
    must(net_fab_mr_reg(&r->fab, r->dst, MAX_BYTES, 77, &r->mr, &r->key), "raw mr");
    struct raw_card mine = {{0}, r->fab.virt_addr ? (uint64_t)(uintptr_t)r->dst : 0, r->key};
    memcpy(mine.name, r->fab.name, r->fab.namelen);
    gmux_op_opts_t o = {GMUX_SIGNAL_ADD, SIG_XCHG, 1, GMUX_NO_COUNTER};
    must(gmux_put(c->comm, 0, c->peer, c->win, MAX_BYTES - sizeof(mine), &mine, sizeof(mine), &o),
         "exchange");
    must(gmux_signal_wait(c->comm, SIG_XCHG, 1, NULL), "exchange wait");
    must(gmux_quiet(c->comm, 0), "quiet");
    struct raw_card peer;
    uint8_t *win_base = c->src + MAX_BYTES; /* the window follows src in one block */
    memcpy(&peer, win_base + MAX_BYTES - sizeof(peer), sizeof(peer));
    char names[2][NET_FAB_NAME_MAX];
    memcpy(names[c->me], mine.name, NET_FAB_NAME_MAX);
    memcpy(names[c->peer], peer.name, NET_FAB_NAME_MAX);
    must(net_fab_insert(&r->fab, &names[0][0], 2), "raw av");
    r->peer = r->fab.peers[c->peer];
    r->peer_raddr = peer.raddr;
    r->peer_key = peer.key;
    c->raw = r;
    must(gmux_barrier(gmux_team_world(c->comm)), "barrier");
}

int net_rank_bench(int argc, char **argv)
{
    struct ctx c = {0};
    const char *plot_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            c.json = true;
        else if (strcmp(argv[i], "--quick") == 0)
            c.quick = true;
        else if (strcmp(argv[i], "--calls") == 0)
            c.calls = true;
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            c.reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--same") == 0 && i + 1 < argc)
            c.same = strcmp(argv[++i], "gmux") == 0 ? "gmux" : "raw";
        else if (strcmp(argv[i], "--plot-data") == 0 && i + 1 < argc)
            plot_path = argv[++i];
        else {
            fprintf(stderr, NET_RANK_EXE " bench-net: unexpected argument '%s'\n", argv[i]);
            return NET_RANK_EXIT_USAGE;
        }
    }
    if (c.reps < 1 || c.reps > BENCH_NET_REPS_MAX)
        c.reps = BENCH_NET_REPS;
    must(gmux_comm_init(NULL, &c.comm), "init");
    c.me = gmux_comm_rank(c.comm);
    if (gmux_comm_size(c.comm) != 2) {
        fprintf(stderr, NET_RANK_EXE " bench-net: needs exactly 2 ranks\n");
        return 1;
    }
    c.peer = 1 - c.me;
    if (plot_path && c.me == 0 && !(c.plot = fopen(plot_path, "a"))) {
        fprintf(stderr, NET_RANK_EXE " bench-net: cannot write %s\n", plot_path);
        return 1;
    }
    if (c.same && c.me == 0 && !c.json)
        printf("(--same %s: both columns below run %s)\n", c.same, c.same);
    c.prov = gmux_comm_provider(c.comm);
    c.src = zalloc(2 * MAX_BYTES);
    for (size_t i = 0; i < MAX_BYTES; i++)
        c.src[i] = (uint8_t)i;
    must(gmux_window_register(c.comm, c.src + MAX_BYTES, MAX_BYTES, &c.win), "window");
    exchange_raw(&c);
    bool tcp = strncmp(c.prov, "tcp", 3) == 0;
    /* Every figure is REPS pairs of runs of gmux and raw, in alternating order
     * (fig_measure), summarised by bench_series.h. */
    const int REPS = c.reps;
    double g[BENCH_SERIES_MAX], r[BENCH_SERIES_MAX];
    uint64_t lat_iters = c.quick ? 200 : tcp ? 2000 : 10000;
    net_stats_t none_g = {0}, none_r = {0};
    fig_measure(&c, &(fig_t){.kind = FIG_RTT, .n = lat_iters}, g, r, &none_g, &none_r);
    report(&c, "put_signal_rtt", 8, g, r, true, "us");
    static const size_t sizes[] = {8, 64, 512, 4096, 32768, 262144, 1u << 20, 4u << 20};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        size_t size = sizes[si];
        /* 256 MiB a run (at most 20,000 puts): tens of milliseconds, several
         * scheduler time slices, so that one slice's luck does not decide a
         * run (32 MiB runs on tcp lasted about 8 ms and single 1 MiB runs
         * ranged 0.5-2.1x; docs/bench/net.md) */
        uint64_t total = c.quick ? (4u << 20) : (256u << 20);
        uint64_t k = total / size;
        k = k < 16 ? 16 : k > 20000 ? 20000 : k;
        net_stats_t gs = {0}, rs = {0};
        fig_measure(&c, &(fig_t){.kind = FIG_BW, .size = size, .n = k}, g, r, &gs, &rs);
        report(&c, "put_bw", size, g, r, false, "MiB/s");
        if (c.plot) {
            bench_summary_t bs = bench_summarize(g, r, c.reps, false);
            fprintf(c.plot, "%zu %.6g %.6g %.6g %.6g %.6g\n", size, bs.gmux, bs.raw, bs.ratio,
                    bs.ratio_min, bs.ratio_max);
            fflush(c.plot);
        }
        report_calls(&c, "put_bw", size, k * REPS, gs, rs);
    }
    uint64_t m = c.quick ? 20000 : tcp ? 50000 : 200000;
    for (int mode = 0; mode < 3; mode++) {
        /* mode 1: the proxy thread alone posts (as it must for a GPU producer);
         * mode 2: the same with consecutive offsets, which the proxy merges
         * into writes of up to 64 puts; the raw column stays one inject per put */
        net_comm_set_inline_progress(c.comm, mode == 0);
        net_stats_t gs = {0}, rs = {0};
        fig_t f = {.kind = FIG_RATE, .size = 8, .n = m, .values = true, .run = mode == 2};
        fig_measure(&c, &f, g, r, &gs, &rs);
        const char *op = mode == 2 ? "put_run_proxy" : mode ? "put_rate_proxy" : "put_rate";
        report(&c, op, 8, g, r, false, "Mop/s");
        report_calls(&c, op, 8, m * REPS, gs, rs);
    }
    net_comm_set_inline_progress(c.comm, true);
    must(gmux_barrier(gmux_team_world(c.comm)), "barrier");
    fi_close(&c.raw->mr->fid);
    net_fab_close(&c.raw->fab);
    free(c.raw->dst);
    free(c.raw);
    must(gmux_window_deregister(c.comm, c.win), "deregister");
    must(gmux_comm_finalize(c.comm), "finalize");
    free(c.src);
    if (c.plot)
        fclose(c.plot);
    return 0;
}
