/*
 * A rank of the net part of `gmux demo` (gmux-net-rank demo-net; demo_net.c
 * starts the jobs). Each rank passes a 64 KiB token around a ring with
 * put+signal, checking it at every hop, then all ranks exchange
 * values and meet in barriers. Rank 0 prints what happened.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gmux/net.h>

#include "common/clock.h"
#include "net_rank.h"

#define TOKEN (64u << 10)
#define LAPS  200

static int fail(const char *what, gmux_status_t st)
{
    fprintf(stderr, "demo: %s: %s\n", what, gmux_status_str(st));
    return 1;
}

int net_rank_demo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    gmux_comm_t *comm;
    gmux_status_t st = gmux_comm_init(NULL, &comm);
    if (st != GMUX_OK)
        return fail("init", st);
    int me = gmux_comm_rank(comm), n = gmux_comm_size(comm);
    /* window: the token, then one slot per rank for the exchange; the local token copy after */
    uint8_t *win = calloc(3, TOKEN), *token = win + 2 * TOKEN;
    gmux_window_t w;
    if ((st = gmux_window_register(comm, win, 2 * TOKEN, &w)) != GMUX_OK)
        return fail("window", st);
    int next = (me + 1) % n;
    uint64_t t0 = com_clock_ns();
    int bad = 0;
    gmux_op_opts_t inc = {GMUX_SIGNAL_INC, 0, 0, GMUX_NO_COUNTER};
    for (uint64_t lap = 1; lap <= LAPS && st == GMUX_OK; lap++) {
        if (me == 0) {
            /* rank 0 starts each lap with a fresh token, after the last one came back */
            if (lap > 1)
                st = gmux_signal_wait(comm, 0, lap - 1, NULL);
            for (size_t i = 0; i < TOKEN; i += 64) {
                if (lap > 1)
                    bad += win[i] != (uint8_t)((lap - 1) * 7 + i / 64);
                token[i] = (uint8_t)(lap * 7 + i / 64);
            }
        } else {
            st = gmux_signal_wait(comm, 0, lap, NULL);
            memcpy(token, win, TOKEN); /* forward what came in */
            for (size_t i = 0; i < TOKEN; i += 64)
                bad += token[i] != (uint8_t)(lap * 7 + i / 64);
        }
        if (st == GMUX_OK)
            st = gmux_put(comm, 0, next, w, 0, token, TOKEN, &inc);
        if (st == GMUX_OK)
            st = gmux_flush(comm, 0); /* the token buffer is reused next lap */
    }
    if (me == 0 && st == GMUX_OK) {
        st = gmux_signal_wait(comm, 0, LAPS, NULL);
        for (size_t i = 0; i < TOKEN; i += 64)
            bad += win[i] != (uint8_t)(LAPS * 7 + i / 64);
    }
    double hop_us = (double)(com_clock_ns() - t0) / 1e3 / (double)(LAPS * n);
    if (st != GMUX_OK)
        return fail("ring", st);
    /* everyone writes its rank into everyone's window, then a barrier */
    for (int p = 0; p < n && st == GMUX_OK; p++)
        st = gmux_put_value(comm, 1, p, w, TOKEN + 8 * (uint64_t)me, (uint64_t)me + 100, 8, NULL);
    if (st == GMUX_OK)
        st = gmux_barrier(gmux_team_world(comm));
    uint64_t *slots = (uint64_t *)(void *)(win + TOKEN);
    for (int p = 0; p < n; p++)
        bad += slots[p] != (uint64_t)p + 100;
    if (st == GMUX_OK)
        st = gmux_barrier(gmux_team_world(comm));
    if (me == 0)
        printf("   %d ranks over %-11s: a %u KiB token passed %d times around the ring,\n"
               "     %.1f us per hop; %s; all-to-all + barrier done\n",
               n, gmux_comm_provider(comm), TOKEN >> 10, LAPS, hop_us,
               bad ? "DATA MISMATCH" : "token verified at every hop");
    gmux_window_deregister(comm, w);
    gmux_status_t fst = gmux_comm_finalize(comm);
    free(win);
    return st != GMUX_OK ? fail("exchange", st) : fst != GMUX_OK ? fail("finalize", fst) : bad != 0;
}
