/*
 * MoE dispatch/combine with CPU threads over include/gmux/net.h (one rank,
 * started by `gmux launch`): each token is put to the ranks of its top-k
 * experts, followed by one count signal per (expert, source); every rank runs
 * its experts on what arrived and puts the weighted outputs back; each rank
 * sums them and checks the result exactly against the serial reference.
 * See moe_core.h for the layout.
 *
 *   moe_cpu [--tokens T] [--hidden H] [--experts-per-rank EL] [--topk K]
 *           [--iters N] [--json]
 * Exit 0 when every value equals the reference in every iteration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gmux/net.h>

#include "moe_core.h"
#include "moe_main.h"

typedef struct moe_rank {
    gmux_comm_t *comm;
    moe_params_t p;
    int me;
    uint32_t nctx;
    gmux_window_t win;
    float *window; /* [recv | comb] */
    float *send;   /* [t][k][msg] */
    float *res;    /* [le][src][slot][H] */
    float *out;    /* [t][H] */
    int *route;    /* route[t*K + k]: expert */
    float *weight; /* weight[t*K + k] */
} moe_rank_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t disp_ctx(const moe_rank_t *m, int le)
{
    return (uint32_t)le % (m->nctx > 1 ? m->nctx - 1 : 1);
}

static uint32_t comb_ctx(const moe_rank_t *m)
{
    return m->nctx - 1;
}

static gmux_status_t dispatch(moe_rank_t *m, int iter)
{
    const moe_params_t *p = &m->p;
    int E = moe_experts(p);
    uint32_t counts[MOE_MAX_RANKS * 64] = {0};
    size_t msg = moe_msg_floats(p);
    gmux_status_t st = GMUX_OK;
    for (int t = 0; t < p->tokens && st == GMUX_OK; t++) {
        for (int k = 0; k < p->topk && st == GMUX_OK; k++) {
            int e = m->route[t * p->topk + k], q = e / p->local_exp, le = e % p->local_exp;
            float *s = m->send + ((size_t)t * (size_t)p->topk + (size_t)k) * msg;
            s[0] = (float)t;
            s[1] = (float)k;
            s[2] = m->weight[t * p->topk + k];
            for (int j = 0; j < p->hidden; j++)
                s[MOE_META + j] = moe_input(m->me, t, j, iter, p);
            uint32_t slot = counts[e]++;
            st = gmux_put(m->comm, disp_ctx(m, le), q, m->win,
                          moe_recv_off(p, le, m->me, (int)slot) * sizeof(float), s,
                          msg * sizeof(float), NULL);
        }
    }
    /* one count signal per expert, after its tokens on the same (ctx, peer) */
    for (int e = 0; e < E && st == GMUX_OK; e++) {
        int q = e / p->local_exp, le = e % p->local_exp;
        st = gmux_signal(m->comm, disp_ctx(m, le), q,
                         (uint32_t)(MOE_SIG_DISP + le * p->ranks + m->me), GMUX_SIGNAL_SET,
                         moe_sig_value(iter, counts[e]));
    }
    return st;
}

static gmux_status_t experts(moe_rank_t *m, int iter)
{
    const moe_params_t *p = &m->p;
    size_t msg = moe_msg_floats(p);
    uint64_t want = moe_sig_value(iter, 0);
    for (int src = 0; src < p->ranks; src++) {
        uint32_t back = 0;
        for (int le = 0; le < p->local_exp; le++) {
            uint64_t v = 0;
            gmux_status_t st =
                gmux_signal_wait(m->comm, (uint32_t)(MOE_SIG_DISP + le * p->ranks + src), want, &v);
            if (st != GMUX_OK)
                return st;
            if ((v >> 32) != (uint64_t)iter + 1)
                return GMUX_ERR_STATE; /* a signal of another iteration */
            uint32_t count = (uint32_t)v;
            if (count > (uint32_t)p->tokens)
                return GMUX_ERR_RANGE;
            int e = m->me * p->local_exp + le;
            for (uint32_t i = 0; i < count; i++) {
                const float *in = m->window + moe_recv_off(p, le, src, (int)i);
                int t = (int)in[0], k = (int)in[1];
                float w = in[2];
                if (t < 0 || t >= p->tokens || k < 0 || k >= p->topk)
                    return GMUX_ERR_PARSE;
                float *y = m->res + moe_recv_off(p, le, src, (int)i) / msg * (size_t)p->hidden;
                for (int j = 0; j < p->hidden; j++)
                    y[j] = w * moe_expert(e, in[MOE_META + j]);
                st = gmux_put(m->comm, comb_ctx(m), src, m->win,
                              moe_comb_off(p, t, k) * sizeof(float), y,
                              (size_t)p->hidden * sizeof(float), NULL);
                if (st != GMUX_OK)
                    return st;
                back++;
            }
        }
        gmux_status_t st = gmux_signal(m->comm, comb_ctx(m), src, (uint32_t)(MOE_SIG_COMB + m->me),
                                       GMUX_SIGNAL_SET, moe_sig_value(iter, back));
        if (st != GMUX_OK)
            return st;
    }
    return GMUX_OK;
}

static gmux_status_t combine(moe_rank_t *m, int iter)
{
    const moe_params_t *p = &m->p;
    for (int q = 0; q < p->ranks; q++) {
        gmux_status_t st =
            gmux_signal_wait(m->comm, (uint32_t)(MOE_SIG_COMB + q), moe_sig_value(iter, 0), NULL);
        if (st != GMUX_OK)
            return st;
    }
    for (int t = 0; t < p->tokens; t++)
        for (int j = 0; j < p->hidden; j++) {
            float sum = 0.0f;
            for (int k = 0; k < p->topk; k++)
                sum += m->window[moe_comb_off(p, t, k) + (size_t)j];
            m->out[(size_t)t * (size_t)p->hidden + (size_t)j] = sum;
        }
    return GMUX_OK;
}

/* Number of values that differ from the reference. */
static long check(const moe_rank_t *m, int iter)
{
    long bad = 0;
    for (int t = 0; t < m->p.tokens; t++)
        for (int j = 0; j < m->p.hidden; j++)
            bad += m->out[(size_t)t * (size_t)m->p.hidden + (size_t)j] !=
                   moe_reference(m->me, t, j, iter, &m->p);
    return bad;
}

static int run(moe_rank_t *m, int json)
{
    const moe_params_t *p = &m->p;
    double total = 0.0;
    long bad = 0;
    for (int iter = 0; iter < p->iters; iter++) {
        memset(m->window + moe_recv_floats(p), 0xff, moe_comb_floats(p) * sizeof(float));
        double t0 = now_s();
        gmux_status_t st = dispatch(m, iter);
        if (st == GMUX_OK)
            st = experts(m, iter);
        if (st == GMUX_OK)
            st = combine(m, iter);
        for (uint32_t c = 0; c < m->nctx && st == GMUX_OK; c++)
            st = gmux_flush(m->comm, c); /* send and result buffers are reused */
        if (st == GMUX_OK)               /* receive buffers are reused */
            st = gmux_barrier(gmux_team_world(m->comm));
        double t1 = now_s();
        if (st != GMUX_OK) {
            fprintf(stderr, "moe rank %d: iteration %d: %s\n", m->me, iter, gmux_status_name(st));
            return 1;
        }
        if (iter > 0 || p->iters == 1)
            total += t1 - t0;
        bad += check(m, iter);
    }
    if (bad) {
        fprintf(stderr, "moe rank %d: %ld values differ from the reference\n", m->me, bad);
        return 1;
    }
    if (m->me == 0) {
        int timed = p->iters > 1 ? p->iters - 1 : 1;
        double us = total / timed * 1e6;
        if (json)
            printf("{\"check\":\"moe_cpu\",\"ranks\":%d,\"provider\":\"%s\",\"tokens\":%d,"
                   "\"hidden\":%d,\"experts\":%d,\"topk\":%d,\"iters\":%d,\"us_per_iter\":%.1f,"
                   "\"exact\":true}\n",
                   p->ranks, gmux_comm_provider(m->comm), p->tokens, p->hidden, moe_experts(p),
                   p->topk, p->iters, us);
        else
            printf("moe cpu: %d ranks over %s, %d tokens/rank x %d, %d experts, top-%d:\n"
                   "  %.1f us per dispatch+combine (mean of %d), results exact\n",
                   p->ranks, gmux_comm_provider(m->comm), p->tokens, p->hidden, moe_experts(p),
                   p->topk, us, timed);
        fflush(stdout);
    }
    return 0;
}

static int setup_and_run(gmux_comm_t *comm, moe_params_t p, int json)
{
    moe_rank_t m = {.comm = comm, .p = p, .me = gmux_comm_rank(comm), .nctx = 4};
    int rc = 1;
    size_t wbytes = (moe_recv_floats(&p) + moe_comb_floats(&p)) * sizeof(float);
    size_t msg = moe_msg_floats(&p);
    m.window = calloc(1, wbytes);
    m.send = calloc((size_t)p.tokens * (size_t)p.topk * msg, sizeof(float));
    m.res = calloc(moe_recv_floats(&p) / msg * (size_t)p.hidden, sizeof(float));
    m.out = calloc((size_t)p.tokens * (size_t)p.hidden, sizeof(float));
    m.route = calloc((size_t)p.tokens * (size_t)p.topk, sizeof(int));
    m.weight = calloc((size_t)p.tokens * (size_t)p.topk, sizeof(float));
    if (!m.window || !m.send || !m.res || !m.out || !m.route || !m.weight) {
        fprintf(stderr, "moe rank %d: cannot allocate %zu bytes\n", m.me, moe_rank_bytes(&p));
        free(m.window); /* a NULL window: the registration fails on every rank */
        m.window = NULL;
    } else {
        for (int t = 0; t < p.tokens; t++)
            moe_route(m.me, t, &p, &m.route[t * p.topk], &m.weight[t * p.topk]);
    }
    gmux_status_t st = gmux_window_register(comm, m.window, wbytes, &m.win);
    if (st != GMUX_OK) {
        fprintf(stderr, "moe rank %d: window of %zu bytes: %s\n", m.me, wbytes,
                gmux_status_name(st));
        goto free_bufs;
    }
    rc = run(&m, json);
    gmux_window_deregister(comm, m.win);
free_bufs:
    free(m.window);
    free(m.send);
    free(m.res);
    free(m.out);
    free(m.route);
    free(m.weight);
    return rc;
}

int main(int argc, char **argv)
{
    moe_params_t p;
    int json = 0;
    int args = moe_parse_args(argc, argv, &p, &json);
    if (args != 0)
        return args > 0 ? 0 : 2;
    gmux_comm_params_t cp;
    gmux_comm_params_init(&cp);
    gmux_comm_t *comm = NULL;
    gmux_status_t st = gmux_comm_init(&cp, &comm);
    if (st != GMUX_OK) {
        fprintf(stderr, "moe: gmux_comm_init: %s\n", gmux_status_name(st));
        return 1;
    }
    p.ranks = gmux_comm_size(comm);
    int rc = 1;
    if (moe_params_check(&p) == 0)
        rc = setup_and_run(comm, p, json);
    st = gmux_comm_finalize(comm);
    return rc == 0 && st != GMUX_OK ? 1 : rc;
}
