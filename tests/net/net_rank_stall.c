/*
 * net_rank kill with NET_RANK_KILL_STALL set (test_net_multi:
 * test_peer_killed_stalled): rank 0, a survivor, is held inside the barrier
 * of rank_kill_start while the victim leaves it, as a loaded machine may
 * hold it. Rank 0 has posted its first-round signal and waits for the
 * victim's (which enters the barrier late, so that it has not come yet);
 * a thread of rank 0 then keeps the progress lock for STALL_HOLD_S, so that
 * rank 0 reads nothing meanwhile. Before the victim waited for every
 * survivor to leave that barrier, it died RANK_KILL_DELAY_US after its own
 * exit and rank 0 failed there with GMUX_ERR_PEER.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "common/clock.h"
#include "net/internal.h"
#include "net_rank.h"

enum {
    STALL_LATE_US = 500 * 1000, /* the victim enters the barrier this much later */
    STALL_HOLD_S = 2,           /* well past the victim's death, were it not to wait */
    STALL_WAIT_S = 20,          /* for rank 0's first signal of the barrier */
};

static uint32_t stall_from; /* rank 0's writes to rank 1 on context 0 before the barrier */

static void *stall_hold(void *arg)
{
    (void)arg;
    uint64_t end = com_clock_ns() + STALL_WAIT_S * COM_NS_PER_S;
    for (;;) {
        net_progress_lock_wait(comm);
        if (comm->out[1].wseq != stall_from || com_clock_ns() > end)
            break;
        pthread_mutex_unlock(&comm->progress_lock);
        usleep(50);
    }
    /* the barrier's first signal is posted: keep every pass out */
    usleep(STALL_HOLD_S * 1000 * 1000);
    pthread_mutex_unlock(&comm->progress_lock);
    return NULL;
}

static _Atomic bool stall_met; /* the victim: every rank is through its quiets */

/* The victim has no proxy thread: it answers the others' quiets from here
 * while its main thread waits for them at the launcher. */
static void *stall_answer(void *arg)
{
    gmux_comm_t *c = arg;
    while (!atomic_load(&stall_met))
        gmux_signal_wait_timeout(c, 0, UINT64_MAX, 0.01, NULL);
    return NULL;
}

void kill_stall_before_barrier(gmux_comm_t *c)
{
    bool victim = gmux_comm_rank(c) == gmux_comm_size(c) - 1;
    pthread_t answer;
    if (victim)
        CHECK(pthread_create(&answer, NULL, stall_answer, c) == 0, "pthread_create");
    for (int peer = 0; peer < gmux_comm_size(c); peer++) /* connects: adds nothing */
        OK(gmux_signal(c, 0, peer, 0, GMUX_SIGNAL_ADD, 0));
    for (uint32_t ctx = 0; ctx < c->nctx; ctx++)
        OK(gmux_quiet(c, ctx));
    OK(net_boot_barrier(c->boot, com_deadline_after_ns(STALL_WAIT_S * COM_NS_PER_S)));
    if (victim) {
        atomic_store(&stall_met, true);
        pthread_join(answer, NULL);
        usleep(STALL_LATE_US);
        return;
    }
    if (gmux_comm_rank(c) != 0)
        return;
    net_progress_lock_wait(c);
    stall_from = c->out[1].wseq; /* context 0, rank 1 */
    pthread_mutex_unlock(&c->progress_lock);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, stall_hold, NULL) == 0, "pthread_create");
    pthread_detach(t);
}
