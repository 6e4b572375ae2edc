/*
 * examples/moe/moe_core.h: the per-token steps moe_cpu and moe_cuda's
 * kernels share (routing, slots, the message and its checks, the expert on
 * one token, the combine's sum), run here on the host. A whole
 * dispatch/experts/combine is simulated over in-memory windows, in one lane
 * and split over several lanes as the kernels' threads split it, and
 * compared exactly with the serial reference; then the edges: ties in the
 * top-k, tokens kept at home, counts at and past the T slots, malformed
 * messages.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "moe_core.h"

/* R ranks' windows, results and signals in one process; a put is a memcpy. */
typedef struct sim {
    moe_params_t p;
    float *win[MOE_MAX_RANKS], *res[MOE_MAX_RANKS], *out[MOE_MAX_RANKS];
    uint64_t sig[MOE_MAX_RANKS][MOE_SIG_DISP + 64 * MOE_MAX_RANKS];
} sim_t;

static void sim_init(sim_t *s, moe_params_t p)
{
    memset(s, 0, sizeof(*s));
    s->p = p;
    size_t msg = moe_msg_floats(&p);
    for (int r = 0; r < p.ranks; r++) {
        s->win[r] = calloc(moe_recv_floats(&p) + moe_comb_floats(&p), sizeof(float));
        s->res[r] = calloc(moe_recv_floats(&p) / msg * (size_t)p.hidden, sizeof(float));
        s->out[r] = calloc((size_t)p.tokens * (size_t)p.hidden, sizeof(float));
        assert_non_null(s->win[r]);
        assert_non_null(s->res[r]);
        assert_non_null(s->out[r]);
    }
}

static void sim_free(sim_t *s)
{
    for (int r = 0; r < s->p.ranks; r++) {
        free(s->win[r]);
        free(s->res[r]);
        free(s->out[r]);
    }
}

/* Rank me's dispatch for iteration iter, each message built by `lanes`
 * lanes; counts[e] as k_dispatch's atomics leave them. */
static void sim_dispatch(sim_t *s, int me, int iter, int lanes)
{
    const moe_params_t *p = &s->p;
    uint32_t counts[64 * MOE_MAX_RANKS] = {0};
    float *msg = calloc(moe_msg_floats(p), sizeof(float));
    assert_non_null(msg);
    for (int t = 0; t < p->tokens; t++) {
        int ex[MOE_MAX_K];
        float w[MOE_MAX_K];
        moe_route(me, t, p, ex, w);
        for (int k = 0; k < p->topk; k++) {
            int q, le;
            moe_expert_home(p, ex[k], &q, &le);
            for (int lane = 0; lane < lanes; lane++)
                moe_msg_build(p, me, t, k, w[k], iter, msg, lane, lanes);
            uint32_t slot = counts[ex[k]]++;
            memcpy(s->win[q] + moe_recv_off(p, le, me, (int)slot), msg,
                   moe_msg_floats(p) * sizeof(float));
        }
    }
    for (int e = 0; e < moe_experts(p); e++) {
        int q, le;
        moe_expert_home(p, e, &q, &le);
        s->sig[q][moe_sig_disp(p, le, me)] = moe_sig_value(iter, counts[e]);
    }
    free(msg);
}

/* Rank me's experts: every status GMUX_OK, and what went back to each
 * source as its combine signal counts. */
static void sim_experts(sim_t *s, int me, int iter, int lanes)
{
    const moe_params_t *p = &s->p;
    for (int src = 0; src < p->ranks; src++) {
        uint32_t back = 0;
        for (int le = 0; le < p->local_exp; le++) {
            uint32_t count = 0;
            assert_int_equal(moe_count_parse(p, iter, s->sig[me][moe_sig_disp(p, le, src)], &count),
                             GMUX_OK);
            for (uint32_t i = 0; i < count; i++) {
                size_t off = 0;
                float *y = NULL;
                for (int lane = 0; lane < lanes; lane++)
                    assert_int_equal(moe_expert_msg(p, s->win[me], s->res[me],
                                                    me * p->local_exp + le, le, src, (int)i, lane,
                                                    lanes, &off, &y),
                                     GMUX_OK);
                memcpy((char *)s->win[src] + off, y, (size_t)p->hidden * sizeof(float));
            }
            back += count;
        }
        s->sig[src][moe_sig_comb(me)] = moe_sig_value(iter, back);
    }
}

/* Runs iterations 0..iters-1 on every rank; returns the values that differ
 * from the reference, and checks that every rank got T*K results back. */
static long sim_run(moe_params_t p, int iters, int lanes)
{
    sim_t *s = malloc(sizeof(*s));
    assert_non_null(s);
    sim_init(s, p);
    long bad = 0;
    for (int iter = 0; iter < iters; iter++) {
        for (int r = 0; r < p.ranks; r++)
            memset(s->win[r] + moe_recv_floats(&p), 0xff, moe_comb_floats(&p) * sizeof(float));
        for (int r = 0; r < p.ranks; r++)
            sim_dispatch(s, r, iter, lanes);
        for (int r = 0; r < p.ranks; r++)
            sim_experts(s, r, iter, lanes);
        for (int r = 0; r < p.ranks; r++) {
            uint32_t back = 0;
            for (int q = 0; q < p.ranks; q++) {
                assert_int_equal(s->sig[r][moe_sig_comb(q)] >> 32, (uint64_t)iter + 1);
                back += (uint32_t)s->sig[r][moe_sig_comb(q)];
            }
            assert_int_equal(back, (uint32_t)(p.tokens * p.topk));
            for (int t = 0; t < p.tokens; t++)
                for (int lane = 0; lane < lanes; lane++)
                    moe_combine_token(&p, s->win[r], s->out[r], t, lane, lanes);
            for (int t = 0; t < p.tokens; t++)
                for (int j = 0; j < p.hidden; j++)
                    bad += s->out[r][(size_t)t * (size_t)p.hidden + (size_t)j] !=
                           moe_reference(r, t, j, iter, &p);
        }
    }
    sim_free(s);
    free(s);
    return bad;
}

/* ranks, tokens, hidden, experts per rank, top-k, iters */
static void test_sim_matches_reference(void **state)
{
    (void)state;
    static const moe_params_t cases[] = {
        {2, 64, 32, 3, 2, 2},                      /* the moe_cpu_2 shape */
        {4, 48, 16, 2, 3, 2},  {8, 5, 3, 1, 8, 2}, /* every token to every rank: top-8 of 8 */
        {2, 1, 1, 64, 1, 2},                       /* 126 of 128 experts get nothing */
        {1, 7, 1, 3, 3, 2},                        /* one rank: everything stays home, K = E */
        {3, 70, 129, 2, 5, 2},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (int lanes = 1; lanes <= 4; lanes += 3) /* one lane; 4, as threads split H */
            assert_int_equal(sim_run(cases[c], cases[c].iters, lanes), 0);
}

/* Ties: the hash gives some token the same expert for two of its k; the
 * route still holds K distinct experts in 0..E-1 and weights 1..3, also with
 * K = E (every probe taken). */
static void test_route_ties(void **state)
{
    (void)state;
    long ties = 0;
    for (int R = 1; R <= MOE_MAX_RANKS; R++)
        for (int EL = 1; EL <= 3; EL++) {
            moe_params_t p = {R, 40, 1, EL, 0, 1};
            p.topk = moe_experts(&p) < MOE_MAX_K ? moe_experts(&p) : MOE_MAX_K;
            for (int r = 0; r < R; r++)
                for (int t = 0; t < p.tokens; t++) {
                    int ex[MOE_MAX_K];
                    float w[MOE_MAX_K];
                    moe_route(r, t, &p, ex, w);
                    uint32_t g = (uint32_t)(r * p.tokens + t);
                    for (int k = 0; k < p.topk; k++) {
                        assert_in_range(ex[k], 0, moe_experts(&p) - 1);
                        assert_true(w[k] == 1.0f || w[k] == 2.0f || w[k] == 3.0f);
                        int raw = (int)(moe_hash(g * 977u + (uint32_t)k * 131u + 7u) %
                                        (uint32_t)moe_experts(&p));
                        for (int i = 0; i < k; i++) {
                            assert_int_not_equal(ex[i], ex[k]);
                            ties += raw == ex[i];
                        }
                    }
                }
        }
    assert_true(ties > 0); /* the probing past a repeated id ran */
}

/* A token whose experts are all on its own rank: its messages go to its own
 * window, under its own source index, and come back to it. */
static void test_token_at_home(void **state)
{
    (void)state;
    moe_params_t p = {2, 64, 4, 8, 2, 1};
    int home = -1;
    for (int t = 0; t < p.tokens && home < 0; t++) {
        int ex[MOE_MAX_K], q0, q1, le;
        float w[MOE_MAX_K];
        moe_route(1, t, &p, ex, w);
        moe_expert_home(&p, ex[0], &q0, &le);
        moe_expert_home(&p, ex[1], &q1, &le);
        if (q0 == 1 && q1 == 1)
            home = t;
    }
    assert_true(home >= 0);
    assert_int_equal(sim_run(p, 2, 1), 0);
    int q, le;
    moe_expert_home(&p, 15, &q, &le);
    assert_int_equal(q, 1);
    assert_int_equal(le, 7);
}

/* The T slots of (expert, source): a count of T passes, T+1 is refused as a
 * range error, a signal of another iteration as a state error; *count is
 * left alone unless it passes. */
static void test_count_capacity(void **state)
{
    (void)state;
    moe_params_t p = {2, 5, 1, 1, 1, 1};
    uint32_t count = 99;
    assert_int_equal(moe_count_parse(&p, 3, moe_sig_value(3, 5), &count), GMUX_OK);
    assert_int_equal(count, 5);
    assert_int_equal(moe_count_parse(&p, 3, moe_sig_value(3, 0), &count), GMUX_OK);
    assert_int_equal(count, 0);
    count = 99;
    assert_int_equal(moe_count_parse(&p, 3, moe_sig_value(3, 6), &count), GMUX_ERR_RANGE);
    assert_int_equal(moe_count_parse(&p, 3, moe_sig_value(3, UINT32_MAX), &count), GMUX_ERR_RANGE);
    assert_int_equal(moe_count_parse(&p, 3, moe_sig_value(2, 1), &count), GMUX_ERR_STATE);
    assert_int_equal(moe_count_parse(&p, 3, moe_sig_value(4, 1), &count), GMUX_ERR_STATE);
    assert_int_equal(moe_count_parse(&p, 0, 0, &count), GMUX_ERR_STATE);
    assert_int_equal(count, 99);
}

/* A message's token and k: integers in 0..T-1 and 0..K-1, else a parse
 * error (NaN and huge values included, never converted); the expert step
 * refuses it before writing anything. */
static void test_msg_parse(void **state)
{
    (void)state;
    moe_params_t p = {1, 4, 2, 3, 3, 1};
    float in[MOE_META + 2] = {3.0f, 2.0f, 2.0f, 1.0f, -1.0f};
    int t = -7, k = -7;
    float w = -7.0f;
    assert_int_equal(moe_msg_parse(&p, in, &t, &k, &w), GMUX_OK);
    assert_int_equal(t, 3);
    assert_int_equal(k, 2);
    assert_true(w == 2.0f);
    static const float bad[][2] = {
        {4.0f, 0.0f},     {-1.0f, 0.0f},     {0.0f, 3.0f}, {0.0f, -1.0f},
        {1.5f, 0.0f},     {0.0f, 0.5f},      {NAN, 0.0f},  {0.0f, NAN},
        {INFINITY, 0.0f}, {-INFINITY, 0.0f}, {3e9f, 0.0f}, {0.0f, -3e9f},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        in[0] = bad[i][0];
        in[1] = bad[i][1];
        t = k = -7;
        w = -7.0f;
        assert_int_equal(moe_msg_parse(&p, in, &t, &k, &w), GMUX_ERR_PARSE);
        assert_int_equal(t, -7);
        assert_int_equal(k, -7);
        assert_true(w == -7.0f);
    }
    /* the same message in a window: the expert step writes no result */
    float *win = calloc(moe_recv_floats(&p) + moe_comb_floats(&p), sizeof(float));
    float res[3 * 4 * 2];
    assert_non_null(win);
    memcpy(win + moe_recv_off(&p, 2, 0, 3), in, sizeof(in));
    for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++)
        res[i] = 5.0f;
    size_t off = 1;
    float *y = NULL;
    assert_int_equal(moe_expert_msg(&p, win, res, 2, 2, 0, 3, 0, 1, &off, &y), GMUX_ERR_PARSE);
    assert_int_equal(off, 1);
    assert_null(y);
    for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++)
        assert_true(res[i] == 5.0f);
    free(win);
}

/* Slots, results, sends and signals never overlap and fill what is sized. */
static void test_layout(void **state)
{
    (void)state;
    moe_params_t p = {3, 5, 7, 2, 3, 1};
    size_t msg = moe_msg_floats(&p), next = 0;
    for (int le = 0; le < p.local_exp; le++)
        for (int src = 0; src < p.ranks; src++)
            for (int slot = 0; slot < p.tokens; slot++) {
                assert_int_equal(moe_recv_off(&p, le, src, slot), next);
                assert_int_equal(moe_res_off(&p, le, src, slot), next / msg * (size_t)p.hidden);
                next += msg;
            }
    assert_int_equal(next, moe_recv_floats(&p));
    for (int t = 0; t < p.tokens; t++)
        for (int k = 0; k < p.topk; k++) {
            assert_int_equal(moe_comb_off(&p, t, k),
                             next + ((size_t)t * (size_t)p.topk + (size_t)k) * (size_t)p.hidden);
            assert_int_equal(moe_send_off(&p, t, k),
                             ((size_t)t * (size_t)p.topk + (size_t)k) * msg);
        }
    /* combine ids below the dispatch ids, dispatch ids distinct */
    assert_true(moe_sig_comb(MOE_MAX_RANKS - 1) < MOE_SIG_DISP);
    moe_params_t big = {MOE_MAX_RANKS, 1, 1, 64, 1, 1};
    static unsigned char seen[MOE_SIG_DISP + 64 * MOE_MAX_RANKS];
    for (int le = 0; le < 64; le++)
        for (int src = 0; src < MOE_MAX_RANKS; src++) {
            uint32_t id = moe_sig_disp(&big, le, src);
            assert_in_range(id, MOE_SIG_DISP, sizeof(seen) - 1);
            assert_int_equal(seen[id]++, 0);
        }
    /* contexts: dispatch on all but the last, the results on the last */
    assert_int_equal(moe_disp_ctx(4, 4), 1);
    assert_int_equal(moe_comb_ctx(4), 3);
    assert_int_equal(moe_disp_ctx(1, 5), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_matches_reference),
        cmocka_unit_test(test_route_ties),
        cmocka_unit_test(test_token_at_home),
        cmocka_unit_test(test_count_capacity),
        cmocka_unit_test(test_msg_parse),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
