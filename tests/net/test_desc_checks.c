/*
 * Descriptors that must be refused, on each path that delivers one to the
 * executor (src/net/proxy.c, exec_desc):
 *   - the API: gmux_put / put_value / signal refuse bad arguments before
 *     any descriptor exists (what lets the direct path skip its own checks
 *     of the comm's fixed bounds);
 *   - the direct path (net_progress_direct): still checks the window, which
 *     a deregistration may have taken away since the API looked;
 *   - the ring path (net_ring_try_push, as a device ring or the device
 *     service delivers them): every field is checked at execution;
 *   - the coalesced path (coalesce.c, through the proxy's batch_peek): a
 *     bad descriptor right after a put that starts a batch, where a merge
 *     would take it (contiguous, same stream, or a signal to fold), is
 *     neither gathered nor folded and is refused on its own. Batches form
 *     only towards another rank over a fabric, so that test runs two ranks
 *     (forked, their rendezvous served here, shm over the loopback).
 * A refused descriptor writes nothing, bumps nothing, and fails its context
 * (GMUX_ERR_INVALID at the next quiet); an unknown context fails context 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <gmux/net.h>

#include "common/clock.h"
#include "net/internal.h"
#include "net/rdv.h"
#include "tproc.h"

enum { WSZ = 256, NSIGS = 4, NCNT = 2, NCTX = 2 };

static gmux_comm_t *comm;
static uint8_t win[WSZ];
static uint8_t src[WSZ];
static gmux_window_t w;

static int setup(void **state)
{
    (void)state;
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.start_proxy = 0; /* progress only where this test drives it */
    p.num_contexts = NCTX;
    p.num_signals = NSIGS;
    p.num_counters = NCNT;
    p.timeout_s = 5;
    if (gmux_comm_init(&p, &comm) != GMUX_OK)
        return -1;
    memset(src, 0xa5, sizeof(src));
    return gmux_window_register(comm, win, WSZ, &w) == GMUX_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    gmux_window_deregister(comm, w);
    return gmux_comm_finalize(comm) == GMUX_OK ? 0 : -1;
}

static net_desc_t good_put(void)
{
    net_desc_t d = {.version = NET_PROTO_VERSION,
                    .opcode = NET_OP_PUT,
                    .window = (uint16_t)w,
                    .ctx = 0,
                    .peer = 0,
                    .offset = 0,
                    .src = (uint64_t)(uintptr_t)src,
                    .size = 16,
                    .signal_op = GMUX_SIGNAL_ADD,
                    .signal_id = NET_SIG_RESERVED + 1,
                    .signal_value = 1,
                    .flags = NET_DESC_F_COUNTER,
                    .counter_id = 1};
    return d;
}

/* The bad variants of good_put: each breaks one field. */
enum {
    BAD_PEER,
    BAD_CTX,
    BAD_SIGNAL,
    BAD_COUNTER,
    BAD_WINDOW,
    BAD_RANGE,
    BAD_VALUE_SIZE,
    BAD_STREAM, /* valid, but context 1's, pushed into context 0's ring */
    NBAD
};

static net_desc_t bad_put(int which)
{
    net_desc_t d = good_put();
    switch (which) {
    case BAD_PEER:
        d.peer = 1;
        break;
    case BAD_CTX:
        d.ctx = NCTX;
        break;
    case BAD_SIGNAL:
        d.signal_id = comm->nsig_all;
        break;
    case BAD_COUNTER:
        d.counter_id = NCNT;
        break;
    case BAD_WINDOW:
        d.window = (uint16_t)(w + 1);
        break;
    case BAD_RANGE:
        d.offset = WSZ - 8;
        break;
    case BAD_VALUE_SIZE:
        d.opcode = NET_OP_PUT_VALUE;
        d.src = 0x1122334455667788ull;
        d.size = 9;
        break;
    case BAD_STREAM:
        d.ctx = 1;
        break;
    }
    return d;
}

/* Nothing was written or bumped, and the descriptor's context (0 for an
 * unknown one) reports the refusal once. */
static void assert_refused(int which)
{
    uint8_t zero[WSZ] = {0};
    assert_memory_equal(win, zero, WSZ);
    assert_true(gmux_signal_read(comm, 1) == 0);
    assert_true(gmux_counter_read(comm, 1) == 0);
    uint32_t ctx = which == BAD_CTX ? 0 : good_put().ctx;
    assert_int_equal(gmux_quiet(comm, ctx), GMUX_ERR_INVALID);
    assert_int_equal(gmux_quiet(comm, ctx), GMUX_OK);
}

static void test_api_refuses(void **state)
{
    (void)state;
    gmux_op_opts_t sig = {GMUX_SIGNAL_ADD, 1, 1, 1};
    assert_int_equal(gmux_put(comm, 0, 1, w, 0, src, 16, &sig), GMUX_ERR_INVALID);
    assert_int_equal(gmux_put(comm, NCTX, 0, w, 0, src, 16, &sig), GMUX_ERR_INVALID);
    gmux_op_opts_t badsig = {GMUX_SIGNAL_ADD, NSIGS, 1, GMUX_NO_COUNTER};
    assert_int_equal(gmux_put(comm, 0, 0, w, 0, src, 16, &badsig), GMUX_ERR_INVALID);
    gmux_op_opts_t badop = {(gmux_signal_op_t)(GMUX_SIGNAL_SET + 1), 1, 1, GMUX_NO_COUNTER};
    assert_int_equal(gmux_put(comm, 0, 0, w, 0, src, 16, &badop), GMUX_ERR_INVALID);
    gmux_op_opts_t badcnt = {GMUX_SIGNAL_NONE, 0, 0, NCNT};
    assert_int_equal(gmux_put(comm, 0, 0, w, 0, src, 16, &badcnt), GMUX_ERR_INVALID);
    assert_int_equal(gmux_put(comm, 0, 0, w + 1, 0, src, 16, NULL), GMUX_ERR_INVALID);
    assert_int_equal(gmux_put(comm, 0, 0, w, WSZ - 8, src, 16, NULL), GMUX_ERR_RANGE);
    assert_int_equal(gmux_put_value(comm, 0, 0, w, 0, 1, 9, NULL), GMUX_ERR_INVALID);
    assert_int_equal(gmux_signal(comm, 0, 0, NSIGS, GMUX_SIGNAL_ADD, 1), GMUX_ERR_INVALID);
    assert_int_equal(gmux_signal(comm, 0, 1, 0, GMUX_SIGNAL_ADD, 1), GMUX_ERR_INVALID);
    assert_int_equal(gmux_signal(comm, NCTX, 0, 0, GMUX_SIGNAL_ADD, 1), GMUX_ERR_INVALID);
    uint8_t zero[WSZ] = {0};
    assert_memory_equal(win, zero, WSZ);
    assert_true(gmux_signal_read(comm, 1) == 0);
    assert_true(gmux_counter_read(comm, 1) == 0);
    for (uint32_t c = 0; c < NCTX; c++)
        assert_int_equal(gmux_quiet(comm, c), GMUX_OK);
}

/* A good descriptor goes through each path: the checks refuse only what
 * they must. */
static void run_good(bool direct)
{
    net_desc_t d = good_put();
    if (direct) {
        assert_true(net_progress_direct(comm, 0, &d));
    } else {
        assert_int_equal(net_ring_try_push(&comm->rings[0], &d), GMUX_OK);
        while (net_ring_pending(&comm->rings[0]))
            net_progress_try(comm);
    }
    assert_memory_equal(win, src, 16);
    assert_true(gmux_signal_read(comm, 1) == 1);
    assert_true(gmux_counter_read(comm, 1) == 1);
    assert_int_equal(gmux_quiet(comm, 0), GMUX_OK);
    memset(win, 0, sizeof(win));
    gmux_signal_reset(comm, 1);
    gmux_counter_reset(comm, 1);
}

static void test_direct_refuses_a_window_gone(void **state)
{
    (void)state;
    run_good(true);
    /* what the API could not have seen: the window deregistered (or another
     * one in its place) after its check */
    net_desc_t d = bad_put(BAD_WINDOW);
    assert_true(net_progress_direct(comm, 0, &d));
    assert_refused(BAD_WINDOW);
    d = bad_put(BAD_RANGE);
    assert_true(net_progress_direct(comm, 0, &d));
    assert_refused(BAD_RANGE);
    run_good(true);
}

static void test_ring_refuses_every_bad_field(void **state)
{
    (void)state;
    run_good(false);
    for (int which = 0; which < NBAD; which++) {
        net_desc_t d = bad_put(which);
        net_ring_t *ring = &comm->rings[0];
        assert_int_equal(net_ring_try_push(ring, &d), GMUX_OK);
        while (net_ring_pending(ring))
            net_progress_try(comm);
        assert_refused(which);
    }
    run_good(false);
}

/* ---- the coalesced path: two ranks ---- */

#define PAIR_TIMEOUT_S 60.0

/* A failed check in a rank process (no cmocka there): says which line and
 * exits 1. */
#define RANK_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: %s:%d: %s failed\n", prank, __FILE__, __LINE__, #cond);      \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

static int prank;
static uint8_t pwin[WSZ];
static uint8_t psrc[2 * WSZ]; /* past WSZ too: an unchecked merge would read it */

/* What follows the head of a batch (a 16-byte put at offset 0 that may
 * start one): F_GOOD a contiguous put and a signal folded onto it, the
 * others a descriptor that a merge would take along were it not checked. */
enum {
    F_GOOD,
    F_RANGE,       /* contiguous put running past the window */
    F_COUNTER,     /* contiguous put with an unknown counter */
    F_VALUE_SIZE,  /* contiguous put_value of 9 bytes */
    F_FOLD_SIGNAL, /* a signal to fold, with an unknown id */
    F_PUT_SIGNAL,  /* contiguous put whose signal has an unknown id */
    F_WINDOW,      /* contiguous offset in a window that does not exist */
    F_PEER,        /* a rank that does not exist */
    F_CTX,         /* a context that does not exist */
    F_OTHER_CTX,   /* valid, but of context 1's stream, not this ring's */
    F_OTHER_PEER,  /* valid, but addressed to this rank, not this ring's peer */
    NFOLLOW
};

static net_desc_t pair_put(gmux_window_t pw, uint64_t off, uint64_t size)
{
    net_desc_t d = {.version = NET_PROTO_VERSION,
                    .opcode = NET_OP_PUT,
                    .window = (uint16_t)pw,
                    .ctx = 0,
                    .peer = 1,
                    .offset = off,
                    .src = (uint64_t)(uintptr_t)(psrc + off),
                    .size = size,
                    .flags = NET_DESC_F_COUNTER,
                    .counter_id = 0};
    return d;
}

static net_desc_t follower(gmux_comm_t *c, gmux_window_t pw, int which)
{
    net_desc_t d = pair_put(pw, 16, 16);
    switch (which) {
    case F_RANGE:
        d.size = WSZ;
        break;
    case F_COUNTER:
        d.counter_id = NCNT;
        break;
    case F_VALUE_SIZE:
        d.opcode = NET_OP_PUT_VALUE;
        d.src = 0x1122334455667788ull;
        d.size = 9;
        break;
    case F_GOOD:
    case F_FOLD_SIGNAL:
        d = (net_desc_t){.version = NET_PROTO_VERSION,
                         .opcode = NET_OP_SIGNAL,
                         .peer = 1,
                         .signal_op = GMUX_SIGNAL_ADD,
                         .signal_id = which == F_GOOD ? NET_SIG_RESERVED + 1 : c->nsig_all,
                         .signal_value = 1};
        break;
    case F_PUT_SIGNAL:
        d.signal_op = GMUX_SIGNAL_ADD;
        d.signal_id = c->nsig_all;
        d.signal_value = 1;
        break;
    case F_WINDOW:
        d.window = (uint16_t)(pw + 1);
        break;
    case F_PEER:
        d.peer = 2;
        break;
    case F_CTX:
        d.ctx = NCTX;
        break;
    case F_OTHER_CTX:
        d = pair_put(pw, 64, 16);
        d.ctx = 1;
        break;
    case F_OTHER_PEER:
        d = pair_put(pw, 64, 16);
        d.peer = 0;
        break;
    }
    return d;
}

/* Rank 0 pushes the head, the follower and a good put at 16 (F_GOOD: the
 * put, then the signal) into its ring to rank 1 on context 0, then drains
 * it with the proxy's pass; rank 1 checks what landed. */
static void pair_case(gmux_comm_t *c, gmux_team_t *world, gmux_window_t pw, int which)
{
    uint8_t zero[WSZ] = {0};
    RANK_CHECK(gmux_barrier(world) == GMUX_OK);
    if (prank == 0) {
        net_ring_t *ring = &c->rings[0 * 2 + 1];
        net_desc_t d[3] = {pair_put(pw, 0, 16), follower(c, pw, which), pair_put(pw, 16, 16)};
        if (which == F_GOOD) { /* the signal last, to fold */
            net_desc_t sig = d[1];
            d[1] = d[2];
            d[2] = sig;
        }
        for (int i = 0; i < 3; i++)
            RANK_CHECK(net_ring_try_push(ring, &d[i]) == GMUX_OK);
        uint64_t writes = c->stats.writes;
        while (net_ring_pending(ring))
            net_progress_try(c);
        /* good: one gathered write with the signal on it; bad: the head
         * and the last put each alone, the follower refused */
        RANK_CHECK(c->stats.writes - writes == (which == F_GOOD ? 1u : 2u));
        RANK_CHECK(gmux_quiet(c, 0) == (which == F_GOOD ? GMUX_OK : GMUX_ERR_INVALID));
        RANK_CHECK(gmux_quiet(c, 0) == GMUX_OK);
        RANK_CHECK(gmux_quiet(c, 1) == GMUX_OK);
        RANK_CHECK(gmux_counter_read(c, 0) == 2);
        RANK_CHECK(gmux_counter_read(c, 1) == 0);
        RANK_CHECK(memcmp(pwin, zero, WSZ) == 0);
        gmux_counter_reset(c, 0);
    }
    RANK_CHECK(gmux_barrier(world) == GMUX_OK);
    if (prank == 1) {
        RANK_CHECK(memcmp(pwin, psrc, 32) == 0);
        RANK_CHECK(memcmp(pwin + 32, zero, WSZ - 32) == 0);
        RANK_CHECK(gmux_signal_read(c, 1) == (which == F_GOOD ? 1u : 0u));
        memset(pwin, 0, sizeof(pwin));
        gmux_signal_reset(c, 1);
    }
}

static int pair_rank(void)
{
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.start_proxy = 0; /* the rings fill up before anything drains them */
    p.num_contexts = NCTX;
    p.num_signals = NSIGS;
    p.num_counters = NCNT;
    p.timeout_s = 20;
    gmux_comm_t *c;
    RANK_CHECK(gmux_comm_init(&p, &c) == GMUX_OK);
    RANK_CHECK(c->coalesce && c->fab.rma_inject_size >= 64); /* shm: gathers */
    gmux_window_t pw;
    RANK_CHECK(gmux_window_register(c, pwin, WSZ, &pw) == GMUX_OK);
    gmux_team_t *world = gmux_team_world(c);
    for (int which = 0; which < NFOLLOW; which++)
        pair_case(c, world, pw, which);
    RANK_CHECK(gmux_barrier(world) == GMUX_OK);
    RANK_CHECK(gmux_window_deregister(c, pw) == GMUX_OK);
    RANK_CHECK(gmux_comm_finalize(c) == GMUX_OK);
    return 0;
}

static pid_t pair_start(int rank, int port)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char v[64];
    prank = rank;
    snprintf(v, sizeof(v), "%d", rank);
    setenv("GMUX_RANK", v, 1);
    setenv("GMUX_SIZE", "2", 1);
    snprintf(v, sizeof(v), "127.0.0.1:%d", port);
    setenv("GMUX_BOOTSTRAP", v, 1);
    snprintf(v, sizeof(v), "descchk%dp%d", (int)getppid(), port);
    setenv("GMUX_JOB", v, 1);
    setenv("GMUX_NET_PROVIDER", "shm", 1);
    setenv("GMUX_NET_COALESCE", "1", 1);
    for (size_t i = 0; i < sizeof(psrc); i++)
        psrc[i] = (uint8_t)(i * 7 + 1);
    _exit(pair_rank());
}

static void test_batch_refuses_what_it_would_merge(void **state)
{
    (void)state;
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", 2, &rdv, NULL, 0), GMUX_OK);
    pid_t pid[2] = {0, 0};
    int status[2] = {-1, -1};
    for (int r = 0; r < 2; r++) {
        pid[r] = pair_start(r, net_rdv_port(rdv));
        assert_true(pid[r] > 0);
    }
    uint64_t deadline = com_deadline_after_ns((uint64_t)(PAIR_TIMEOUT_S * 1e9));
    int left = 2;
    while (left > 0 && !com_deadline_passed(deadline)) {
        net_rdv_step(rdv, 20);
        for (int r = 0; r < 2; r++) {
            int ws;
            if (pid[r] > 0 && waitpid(pid[r], &ws, WNOHANG) == pid[r]) {
                status[r] = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
                pid[r] = 0;
                left--;
                net_rdv_drain(rdv, r);
                net_rdv_rank_exited(rdv, r, status[r] != 0);
            }
        }
    }
    for (int r = 0; r < 2; r++)
        tproc_kill_reap(&pid[r]);
    net_rdv_destroy(rdv);
    assert_int_equal(status[0], 0);
    assert_int_equal(status[1], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_refuses),
        cmocka_unit_test(test_direct_refuses_a_window_gone),
        cmocka_unit_test(test_ring_refuses_every_bad_field),
        cmocka_unit_test(test_batch_refuses_what_it_would_merge),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
