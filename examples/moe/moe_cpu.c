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

static gmux_status_t dispatch(moe_rank_t *m, int iter)
{
    const moe_params_t *p = &m->p;
    int E = moe_experts(p);
    uint32_t counts[MOE_MAX_RANKS * 64] = {0};
    size_t msg = moe_msg_floats(p);
    gmux_status_t st = GMUX_OK;
    for (int t = 0; t < p->tokens && st == GMUX_OK; t++) {
        for (int k = 0; k < p->topk && st == GMUX_OK; k++) {
            int e = m->route[t * p->topk + k], q, le;
            moe_expert_home(p, e, &q, &le);
            float *s = m->send + moe_send_off(p, t, k);
            moe_msg_build(p, m->me, t, k, m->weight[t * p->topk + k], iter, s, 0, 1);
            uint32_t slot = counts[e]++;
            st = gmux_put(m->comm, moe_disp_ctx(m->nctx, le), q, m->win,
                          moe_recv_off(p, le, m->me, (int)slot) * sizeof(float), s,
                          msg * sizeof(float), NULL);
        }
    }
    /* one count signal per expert, after its tokens on the same (ctx, peer) */
    for (int e = 0; e < E && st == GMUX_OK; e++) {
        int q, le;
        moe_expert_home(p, e, &q, &le);
        st = gmux_signal(m->comm, moe_disp_ctx(m->nctx, le), q, moe_sig_disp(p, le, m->me),
                         GMUX_SIGNAL_SET, moe_sig_value(iter, counts[e]));
    }
    return st;
}

static gmux_status_t experts(moe_rank_t *m, int iter)
{
    const moe_params_t *p = &m->p;
    uint64_t want = moe_sig_value(iter, 0);
    for (int src = 0; src < p->ranks; src++) {
        uint32_t back = 0;
        for (int le = 0; le < p->local_exp; le++) {
            uint64_t v = 0;
            uint32_t count = 0;
            gmux_status_t st = gmux_signal_wait(m->comm, moe_sig_disp(p, le, src), want, &v);
            if (st == GMUX_OK)
                st = moe_count_parse(p, iter, v, &count);
            int e = m->me * p->local_exp + le;
            for (uint32_t i = 0; i < count && st == GMUX_OK; i++) {
                size_t off = 0;
                float *y = NULL;
                st = moe_expert_msg(p, m->window, m->res, e, le, src, (int)i, 0, 1, &off, &y);
                if (st == GMUX_OK)
                    st = gmux_put(m->comm, moe_comb_ctx(m->nctx), src, m->win, off, y,
                                  (size_t)p->hidden * sizeof(float), NULL);
                back++;
            }
            if (st != GMUX_OK)
                return st;
        }
        gmux_status_t st = gmux_signal(m->comm, moe_comb_ctx(m->nctx), src, moe_sig_comb(m->me),
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
        gmux_status_t st = gmux_signal_wait(m->comm, moe_sig_comb(q), moe_sig_value(iter, 0), NULL);
        if (st != GMUX_OK)
            return st;
    }
    for (int t = 0; t < p->tokens; t++)
        moe_combine_token(p, m->window, m->out, t, 0, 1);
    return GMUX_OK;
}

static int run(moe_rank_t *m, int json)
{
    const moe_params_t *p = &m->p;
    double total = 0.0;
    long bad = 0;
    for (int iter = 0; iter < p->iters; iter++) {
        memset(m->window + moe_recv_floats(p), 0xff, moe_comb_floats(p) * sizeof(float));
        double t0 = moe_now_s();
        gmux_status_t st = dispatch(m, iter);
        if (st == GMUX_OK)
            st = experts(m, iter);
        if (st == GMUX_OK)
            st = combine(m, iter);
        for (uint32_t c = 0; c < m->nctx && st == GMUX_OK; c++)
            st = gmux_flush(m->comm, c); /* send and result buffers are reused */
        if (st == GMUX_OK)               /* receive buffers are reused */
            st = gmux_barrier(gmux_team_world(m->comm));
        double t1 = moe_now_s();
        if (st != GMUX_OK) {
            fprintf(stderr, "moe rank %d: iteration %d: %s\n", m->me, iter, gmux_status_name(st));
            return 1;
        }
        if (iter > 0 || p->iters == 1)
            total += t1 - t0;
        bad += moe_check(p, m->me, iter, m->out);
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
        moe_route_table(&p, m.me, m.route, m.weight);
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
    gmux_comm_t *comm = moe_comm_open("moe");
    if (!comm)
        return 1;
    p.ranks = gmux_comm_size(comm);
    int rc = 1;
    if (moe_params_check(&p) == 0)
        rc = setup_and_run(comm, p, json);
    return moe_comm_close(comm, rc);
}
