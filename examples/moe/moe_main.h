/*
 * Command line of the MoE examples (moe_cpu, moe_cuda): the same options and
 * limits for both, and the host-side steps they share (routes, the check
 * against the reference, the clock).
 */
#ifndef MOE_MAIN_H
#define MOE_MAIN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gmux/net.h>

#include "moe_core.h"

static int moe_parse_int(const char *opt, const char *v, int lo, int hi, int *out)
{
    char *end = NULL;
    long x = v ? strtol(v, &end, 10) : 0;
    /* strtol skips leading blanks and takes a '+': digits only, or a '-' */
    int digits = v && (*v == '-' || (*v >= '0' && *v <= '9'));
    if (!digits || *end != '\0' || x < lo || x > hi) {
        fprintf(stderr, "moe: bad value for %s: '%s' (%d..%d)\n", opt, v ? v : "", lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static void moe_usage(const char *prog)
{
    printf("Usage: gmux launch -n RANKS -- %s [--tokens T] [--hidden H]\n"
           "           [--experts-per-rank E] [--topk K] [--iters N] [--json]\n\n"
           "MoE dispatch (each token to the ranks of its top-K experts) and combine (the\n"
           "weighted sum back to the token's rank) over gmux net, every value checked\n"
           "against a serial reference; prints the time per dispatch+combine.\n"
           "RANKS 1..%d (without gmux launch: one rank).\n\n"
           "  --tokens T            tokens per rank (default 128, 1..65536)\n"
           "  --hidden H            values per token (default 64, 1..16384)\n"
           "  --experts-per-rank E  experts on each rank (default 2, 1..64)\n"
           "  --topk K              distinct experts per token (default 2, 1..%d,\n"
           "                        at most RANKS x E)\n"
           "  --iters N             iterations; the first is not timed (default 20, 1..100000)\n"
           "  --json                one JSON line instead of the sentence\n\n"
           "Each rank needs about 4 x (2 x E x RANKS x T x (H + 3) + 2 x T x K x H) bytes of\n"
           "memory; more than the machine has is refused. Exit 0 when every value is\n"
           "exact, 1 on a failure or limit, 2 on a bad option (moe_cuda: 77 without a GPU).\n",
           prog, MOE_MAX_RANKS, MOE_MAX_K);
}

/* Defaults: 128 tokens of 64 values per rank, 2 experts per rank, top-2, 20
 * iterations. Returns 0, -1 on a bad option (said on stderr) or 1 after
 * --help (usage on stdout). */
static int moe_parse_args(int argc, char **argv, moe_params_t *p, int *json)
{
    moe_params_t d = {0, 128, 64, 2, 2, 20};
    *p = d;
    *json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            moe_usage(argv[0]);
            return 1;
        } else if (strcmp(a, "--json") == 0) {
            *json = 1;
            continue;
        } else if (strcmp(a, "--tokens") == 0) {
            rc = moe_parse_int(a, v, 1, 1 << 16, &p->tokens);
        } else if (strcmp(a, "--hidden") == 0) {
            rc = moe_parse_int(a, v, 1, 1 << 14, &p->hidden);
        } else if (strcmp(a, "--experts-per-rank") == 0) {
            rc = moe_parse_int(a, v, 1, 64, &p->local_exp);
        } else if (strcmp(a, "--topk") == 0) {
            rc = moe_parse_int(a, v, 1, MOE_MAX_K, &p->topk);
        } else if (strcmp(a, "--iters") == 0) {
            rc = moe_parse_int(a, v, 1, 100000, &p->iters);
        } else {
            fprintf(stderr, "moe: unknown option '%s' (--help lists them)\n", a);
            return -1;
        }
        if (rc != 0)
            return -1;
        i++;
    }
    return 0;
}

/* Bytes one rank allocates: the window [recv | comb], the messages sent, the
 * expert results, the outputs, the routes and weights. */
static size_t moe_rank_bytes(const moe_params_t *p)
{
    size_t tk = (size_t)p->tokens * (size_t)p->topk;
    size_t floats = moe_recv_floats(p) + moe_comb_floats(p) + tk * moe_msg_floats(p) +
                    moe_recv_floats(p) / moe_msg_floats(p) * (size_t)p->hidden +
                    (size_t)p->tokens * (size_t)p->hidden + tk;
    return floats * sizeof(float) + tk * sizeof(int);
}

/* Physical memory of this machine in bytes, 0 when unknown. */
static double moe_machine_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : 0.0;
}

/* Limits that need the rank count or the machine. */
static int moe_params_check(const moe_params_t *p)
{
    if (p->ranks < 1 || p->ranks > MOE_MAX_RANKS) {
        fprintf(stderr, "moe: %d ranks; 1..%d supported\n", p->ranks, MOE_MAX_RANKS);
        return -1;
    }
    if (p->topk > moe_experts(p)) {
        fprintf(stderr, "moe: --topk %d is more than the %d experts (%d ranks x %d)\n", p->topk,
                moe_experts(p), p->ranks, p->local_exp);
        return -1;
    }
    double need = (double)moe_rank_bytes(p), have = moe_machine_bytes();
    if (have > 0 && need > have) {
        fprintf(stderr,
                "moe: %.1f GiB of memory per rank needed, more than the %.1f GiB of this "
                "machine (smaller --tokens, --hidden or --experts-per-rank)\n",
                need / (1u << 30), have / (1u << 30));
        return -1;
    }
    return 0;
}

static double moe_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The routes and weights of rank me's tokens: [t * K + k]. */
static void moe_route_table(const moe_params_t *p, int me, int *route, float *weight)
{
    for (int t = 0; t < p->tokens; t++)
        moe_route(me, t, p, &route[t * p->topk], &weight[t * p->topk]);
}

/* Number of values of out[t][j] (rank me, iteration iter) that differ from
 * the serial reference. */
static long moe_check(const moe_params_t *p, int me, int iter, const float *out)
{
    long bad = 0;
    for (int t = 0; t < p->tokens; t++)
        for (int j = 0; j < p->hidden; j++)
            bad +=
                out[(size_t)t * (size_t)p->hidden + (size_t)j] != moe_reference(me, t, j, iter, p);
    return bad;
}

/* This rank's communicator (gmux launch's, or one rank alone), or
 * NULL after a line on stderr that names prog. */
static gmux_comm_t *moe_comm_open(const char *prog)
{
    gmux_comm_params_t cp;
    gmux_comm_params_init(&cp);
    gmux_comm_t *comm = NULL;
    gmux_status_t st = gmux_comm_init(&cp, &comm);
    if (st != GMUX_OK) {
        fprintf(stderr, "%s: gmux_comm_init: %s\n", prog, gmux_status_name(st));
        return NULL;
    }
    return comm;
}

/* Finalizes comm; the exit status: rc, or 1 when only the finalize failed. */
static int moe_comm_close(gmux_comm_t *comm, int rc)
{
    gmux_status_t st = gmux_comm_finalize(comm);
    return rc == 0 && st != GMUX_OK ? 1 : rc;
}

#endif /* MOE_MAIN_H */
