/* net_rdv: see rdv.h; the wire format is in boot_proto.h. */
#include "net/rdv.h"

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "net/boot_proto.h"
#include "net/rdv_frame.h"
#include "net/sock.h"

#define RDV_MAX_PENDING 256
/* what a rank may leave queued and unread: the largest frame it accepts
 * (an allgather's result) and room for notices behind it */
#define RDV_TXQ_MAX   ((size_t)NET_BOOT_MAX_LEN + ((size_t)1 << 20))
#define RDV_TXQ_SLOTS 8u /* frames a queue holds before it grows */

typedef struct rdv_pend {
    int fd;
    /* when it must have said HELLO: a connection that never does (not a
     * rank) would otherwise hold its place for good, and a full table keeps
     * every rank out */
    uint64_t dl;
    rdv_rx_t rx;
} rdv_pend_t;

struct net_rdv {
    int lfd, port, size;
    int *fd;       /* per rank, -1 until HELLO, -2 once its connection closed */
    bool *bye;     /* per rank */
    bool *dead;    /* per rank, announced */
    bool *left;    /* per rank: announced as having left after a death, not died */
    void **blob;   /* per rank, this round's allgather contribution */
    uint32_t *len; /* per rank */
    bool *in;      /* per rank, contributed this round */
    rdv_rx_t *rx;  /* per rank */
    rdv_tx_t *tx;  /* per rank */
    int nin;
    /* GMUX_OK, or why this round fails on every rank when it completes (a
     * contribution the server could not hold) */
    gmux_status_t round_st;
    uint64_t send_ns;
    uint64_t recv_ns; /* a HELLO, or a frame once begun, must be whole within it */
    size_t txq_max;
    rdv_pend_t pend[RDV_MAX_PENDING]; /* connected, no HELLO yet */
    int npend;
    /* poll's arrays, sized once: the loop allocates nothing */
    struct pollfd *pfd;
    int *who;
    /* the payload of a DEAD frame for a rank that left after a death
     * (boot_proto.h), made once and shared by every such frame: a notice
     * is queued without memory */
    rdv_buf_t *left_note;
    rdv_clock_t clk;         /* net_rdv_set_clock; its now NULL: com_clock_ns */
    net_rdv_gone_fn on_gone; /* may be NULL */
    void *on_gone_arg;
};

static void pend_close(rdv_pend_t *c)
{
    net_rdv_rx_clear(&c->rx);
    close(c->fd);
}

gmux_status_t net_rdv_create(const char *addr, int size, net_rdv_t **rdv_p, char *why,
                             size_t why_cap)
{
    if (why && why_cap)
        snprintf(why, why_cap, "out of memory");
    net_rdv_t *r = net_rdv_calloc(1, sizeof(*r));
    if (!r)
        return GMUX_ERR_NOMEM;
    r->size = size;
    r->send_ns = RDV_IO_NS;
    r->recv_ns = RDV_IO_NS;
    r->txq_max = RDV_TXQ_MAX;
    r->lfd = -1;
    r->fd = net_rdv_malloc((size_t)size * sizeof(int));
    r->bye = net_rdv_calloc((size_t)size, sizeof(bool));
    r->dead = net_rdv_calloc((size_t)size, sizeof(bool));
    r->left = net_rdv_calloc((size_t)size, sizeof(bool));
    r->blob = net_rdv_calloc((size_t)size, sizeof(void *));
    r->len = net_rdv_calloc((size_t)size, sizeof(uint32_t));
    r->in = net_rdv_calloc((size_t)size, sizeof(bool));
    r->rx = net_rdv_calloc((size_t)size, sizeof(rdv_rx_t));
    r->tx = net_rdv_calloc((size_t)size, sizeof(rdv_tx_t));
    r->pfd = net_rdv_calloc(1 + (size_t)size + RDV_MAX_PENDING, sizeof(*r->pfd));
    r->who = net_rdv_calloc(1 + (size_t)size + RDV_MAX_PENDING, sizeof(int));
    r->left_note = net_rdv_malloc(sizeof(rdv_buf_t) + sizeof(uint32_t));
    if (!r->fd || !r->bye || !r->dead || !r->left || !r->blob || !r->len || !r->in || !r->rx ||
        !r->tx || !r->pfd || !r->who || !r->left_note)
        goto destroy;
    r->left_note->refs = 1; /* the server's own, until destroy */
    uint32_t gone_why = NET_BOOT_GONE_LEFT;
    memcpy(r->left_note->bytes, &gone_why, sizeof(gone_why));
    for (int i = 0; i < size; i++) {
        r->fd[i] = -1;
        /* queues exist before any rank joins: a death notice or a round's
         * failure can be queued without memory */
        r->tx[i].q = net_rdv_malloc(RDV_TXQ_SLOTS * sizeof(rdv_out_t));
        if (!r->tx[i].q)
            goto destroy;
        r->tx[i].cap = RDV_TXQ_SLOTS;
    }
    gmux_status_t st = net_sock_listen(addr, &r->lfd, &r->port, why, why_cap);
    if (st != GMUX_OK) {
        net_rdv_destroy(r);
        return st;
    }
    *rdv_p = r;
    return GMUX_OK;
destroy:
    net_rdv_destroy(r);
    return GMUX_ERR_NOMEM;
}

void net_rdv_destroy(net_rdv_t *r)
{
    if (!r)
        return;
    for (int i = 0; r->fd && i < r->size; i++)
        if (r->fd[i] >= 0)
            close(r->fd[i]);
    for (int i = 0; i < r->npend; i++)
        pend_close(&r->pend[i]);
    for (int i = 0; r->blob && i < r->size; i++)
        free(r->blob[i]);
    for (int i = 0; r->rx && i < r->size; i++)
        net_rdv_rx_clear(&r->rx[i]);
    for (int i = 0; r->tx && i < r->size; i++) {
        net_rdv_tx_clear(&r->tx[i]);
        free(r->tx[i].q);
    }
    if (r->lfd >= 0)
        close(r->lfd);
    free(r->fd);
    free(r->bye);
    free(r->dead);
    free(r->left);
    net_rdv_buf_put(r->left_note);
    free(r->blob);
    free(r->len);
    free(r->in);
    free(r->rx);
    free(r->tx);
    free(r->pfd);
    free(r->who);
    free(r);
}

void net_rdv_set_limits(net_rdv_t *r, uint64_t send_ns, size_t queue_max)
{
    r->send_ns = send_ns ? send_ns : RDV_IO_NS;
    r->txq_max = queue_max ? queue_max : RDV_TXQ_MAX;
}

void net_rdv_set_recv_wait(net_rdv_t *r, uint64_t recv_ns)
{
    r->recv_ns = recv_ns ? recv_ns : RDV_IO_NS;
}

void net_rdv_set_clock(net_rdv_t *r, net_rdv_clock_fn now, void *arg)
{
    r->clk = (rdv_clock_t){now, arg};
}

void net_rdv_on_gone(net_rdv_t *r, net_rdv_gone_fn fn, void *arg)
{
    r->on_gone = fn;
    r->on_gone_arg = arg;
}

int net_rdv_port(const net_rdv_t *r)
{
    return r->port;
}

bool net_rdv_said_bye(const net_rdv_t *r, int rank)
{
    return r->bye[rank];
}

bool net_rdv_joined(const net_rdv_t *r, int rank)
{
    return r->fd[rank] != -1;
}

static enum rdv_rx_result take_frame(net_rdv_t *r, int rank);

/* Queues a frame for rank (p: len bytes, or NULL); see net_rdv_tx_push. A
 * queue that fails is dropped by net_rdv_step once every frame of the event
 * at hand is queued (so the others get, say, a round's result before the
 * notice that the rank died). */
static void tx_push(net_rdv_t *r, int rank, uint16_t type, uint32_t hrank, rdv_buf_t *p,
                    uint32_t len)
{
    if (r->fd[rank] < 0)
        return;
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, type, hrank, len};
    net_rdv_tx_push(&r->tx[rank], rank, &h, p, r->txq_max, r->send_ns, &r->clk);
}

static void close_rank(net_rdv_t *r, int rank)
{
    close(r->fd[rank]);
    r->fd[rank] = -2; /* joined once: net_rdv_joined */
    net_rdv_rx_clear(&r->rx[rank]);
    net_rdv_tx_clear(&r->tx[rank]);
}

/* Queues for rank `to` the notice that rank is gone: a DEAD frame, with
 * the reason when it left after a death (boot_proto.h). */
static void push_gone(net_rdv_t *r, int to, int rank)
{
    if (r->left[rank])
        tx_push(r, to, NET_BOOT_DEAD, (uint32_t)rank, r->left_note, sizeof(uint32_t));
    else
        tx_push(r, to, NET_BOOT_DEAD, (uint32_t)rank, NULL, 0);
}

/* left: the rank said BYE and did not fail (it finalized after a death).
 * A rank announced as left when its socket closed may fail after that (a
 * non-zero exit the launcher reports later): it is announced again, as
 * died, so that nobody keeps it as one that ended in order. */
static void announce_dead(net_rdv_t *r, int rank, bool left)
{
    if (r->dead[rank] && (left || !r->left[rank]))
        return;
    bool again = r->dead[rank];
    r->dead[rank] = true;
    r->left[rank] = left;
    COM_INFO(NET, "rendezvous: rank %d %s; telling the others", rank,
             again  ? "failed after it left"
             : left ? "left after a death"
                    : "died");
    if (!again && r->on_gone)
        r->on_gone(r->on_gone_arg, rank);
    for (int i = 0; i < r->size; i++)
        if (i != rank)
            push_gone(r, i, rank);
}

/* Whether the others must hear that rank is gone: it left without BYE (a
 * death), or it left after a death. A survivor's finalize says BYE but no
 * longer waits in a barrier for the others, who may still address it: told,
 * their calls to it fail with GMUX_ERR_PEER at once instead of waiting for
 * an endpoint that is closed (on tcp, reconnecting until the timeout). A
 * rank that leaves a job with no death did so after the finalize barrier:
 * nobody talks to it any more, and nobody's finalize must see a death. */
static bool gone_counts(const net_rdv_t *r, int rank)
{
    if (!r->bye[rank])
        return true;
    for (int i = 0; i < r->size; i++)
        if (r->dead[i])
            return true;
    return false;
}

/* The rank's connection is gone (or the server gave up on it): without a
 * BYE that is a death; after one, announced as one (gone_counts). What the
 * socket still holds is read first: a rank whose notices could not be
 * sent (it closed its socket with some unread) may have said BYE before
 * closing, and the launcher, reaping it later, must hear it. */
static void drop_rank(net_rdv_t *r, int rank)
{
    for (int i = 0; i < 64 && take_frame(r, rank) == RDV_RX_FRAME; i++)
        ;
    close_rank(r, rank);
    if (gone_counts(r, rank))
        announce_dead(r, rank, r->bye[rank]);
}

/* Whether rank is to be dropped: its queue failed, or at `now` it is past
 * a deadline even after a last look at its socket. The server's own loop
 * may have been away longer than a deadline (a stalled launcher, a loaded
 * host) while the rank went on: what it read or sent meanwhile counts, and
 * now is read before that look, so that the server's absence is never
 * blamed on the rank. */
static bool rank_late(net_rdv_t *r, int rank, uint64_t now)
{
    rdv_rx_t *rx = &r->rx[rank];
    rdv_tx_t *tx = &r->tx[rank];
    if (rx->got && now >= rx->dl && take_frame(r, rank) == RDV_RX_BAD)
        return true;
    if (tx->n && now >= tx->dl && !tx->failed &&
        !net_rdv_tx_flush(tx, r->fd[rank], r->send_ns, &r->clk))
        tx->failed = true;
    if (tx->n && now >= tx->dl)
        COM_WARN(NET, "rendezvous: rank %d has read nothing for %.1f s; dropping it", rank,
                 (double)r->send_ns / COM_NS_PER_S);
    return tx->failed || (rx->got && now >= rx->dl) || (tx->n && now >= tx->dl);
}

/* Drops every rank whose queue failed, or that has read nothing past the
 * send deadline, or whose incoming frame is past its deadline. A drop
 * queues death notices, which may fail other queues: repeated until none
 * is left; each pass drops a rank or ends, so at most size + 1 passes. */
static void reap(net_rdv_t *r)
{
    for (bool again = true; again;) {
        again = false;
        for (int i = 0; i < r->size; i++) {
            if (r->fd[i] >= 0 && rank_late(r, i, net_rdv_clock_now(&r->clk))) {
                drop_rank(r, i);
                again = true;
            }
        }
    }
}

void net_rdv_rank_exited(net_rdv_t *r, int rank, bool failed)
{
    if (rank < 0 || rank >= r->size)
        return;
    if (failed || gone_counts(r, rank))
        announce_dead(r, rank, r->bye[rank] && !failed);
}

/* Every rank contributed: each gets the result, or, when it cannot be
 * made, the reason, so that no rank waits for a round that will not come. */
static void complete_allgather(net_rdv_t *r)
{
    gmux_status_t st = r->round_st;
    size_t total = 0;
    for (int i = 0; i < r->size; i++)
        total += 4 + r->len[i];
    rdv_buf_t *b = NULL;
    if (st == GMUX_OK && total > NET_BOOT_MAX_LEN)
        st = GMUX_ERR_CAPACITY; /* more than a rank accepts */
    if (st == GMUX_OK && !(b = net_rdv_malloc(sizeof(*b) + total)))
        st = GMUX_ERR_NOMEM;
    if (b) {
        b->refs = 1; /* ours, until every queue has its own */
        char *q = b->bytes;
        for (int i = 0; i < r->size; i++) {
            memcpy(q, &r->len[i], 4);
            if (r->len[i])
                memcpy(q + 4, r->blob[i], r->len[i]);
            q += 4 + r->len[i];
        }
    }
    if (st != GMUX_OK)
        COM_WARN(NET, "rendezvous: an allgather fails on every rank: %s", gmux_status_str(st));
    for (int i = 0; i < r->size; i++) {
        if (st == GMUX_OK)
            tx_push(r, i, NET_BOOT_ALLGATHER, 0, b, (uint32_t)total);
        else
            tx_push(r, i, NET_BOOT_ERROR, (uint32_t)-st, NULL, 0);
    }
    net_rdv_buf_put(b);
    for (int i = 0; i < r->size; i++) {
        free(r->blob[i]);
        r->blob[i] = NULL;
        r->len[i] = 0;
        r->in[i] = false;
    }
    r->nin = 0;
    r->round_st = GMUX_OK;
}

/* Reads what rank's socket holds now (it never waits) and acts on one
 * whole frame: a BYE, or its contribution to the round. */
static enum rdv_rx_result take_frame(net_rdv_t *r, int rank)
{
    rdv_rx_t *rx = &r->rx[rank];
    enum rdv_rx_result res =
        net_rdv_rx_feed(r->fd[rank], rx, NET_BOOT_MAX_LEN, r->recv_ns, &r->clk);
    if (res != RDV_RX_FRAME)
        return res;
    net_boot_hdr_t h = rx->h;
    bool lost = rx->skip;
    void *p = rx->p;
    rx->p = NULL;
    net_rdv_rx_clear(rx);
    if (h.type == NET_BOOT_BYE) {
        r->bye[rank] = true;
    } else if (h.type == NET_BOOT_ALLGATHER && !r->in[rank]) {
        if (lost) {
            /* the round goes on without it and fails on every rank: the
             * rank is alive and in step, and hears why */
            COM_WARN(NET, "rendezvous: no memory for rank %d's %u bytes", rank, h.len);
            r->round_st = GMUX_ERR_NOMEM;
        }
        r->blob[rank] = p;
        r->len[rank] = lost ? 0 : h.len;
        r->in[rank] = true;
        p = NULL;
        if (++r->nin == r->size)
            complete_allgather(r);
    }
    free(p);
    return RDV_RX_FRAME;
}

static void handle_rank(net_rdv_t *r, int rank)
{
    if (take_frame(r, rank) == RDV_RX_BAD)
        drop_rank(r, rank);
}

void net_rdv_drain(net_rdv_t *r, int rank)
{
    /* the rank has exited: what it wrote is in the socket, then EOF; the
     * bounds only guard against a child of it keeping the socket open */
    for (int i = 0; i < 64 && rank >= 0 && rank < r->size && r->fd[rank] >= 0; i++) {
        struct pollfd p = {.fd = r->fd[rank], .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            break;
        handle_rank(r, rank);
    }
}

/* Forgets pending connection i (moves the last one into its place). */
static rdv_pend_t pending_take(net_rdv_t *r, int i)
{
    rdv_pend_t c = r->pend[i];
    r->npend--;
    r->pend[i] = r->pend[r->npend];
    return c;
}

static void handle_pending(net_rdv_t *r, int i)
{
    enum rdv_rx_result res =
        net_rdv_rx_feed(r->pend[i].fd, &r->pend[i].rx, sizeof(uint32_t), r->recv_ns, &r->clk);
    if (res == RDV_RX_MORE)
        return;
    rdv_pend_t c = pending_take(r, i);
    net_boot_hdr_t h = c.rx.h;
    uint32_t sz = 0;
    if (res == RDV_RX_BAD || h.type != NET_BOOT_HELLO || h.len != 4) {
        pend_close(&c);
        return;
    }
    memcpy(&sz, c.rx.small, 4);
    net_rdv_rx_clear(&c.rx);
    /* a rank joins once: one that died or left keeps its place empty */
    if (sz != (uint32_t)r->size || h.rank >= (uint32_t)r->size || r->fd[h.rank] >= 0 ||
        r->dead[h.rank] || r->bye[h.rank]) {
        COM_WARN(NET, "rendezvous: bad HELLO (rank %u, size %u)", h.rank, sz);
        close(c.fd);
        return;
    }
    r->fd[h.rank] = c.fd;
    /* the notices sent so far went to the ranks connected then: a rank
     * that joins late would wait for a dead one in its first collective */
    for (int i = 0; i < r->size; i++)
        if (r->dead[i])
            push_gone(r, (int)h.rank, i);
}

/* Writes what every rank's socket takes now and notes what each rank has
 * read; a connection that fails is dropped by the next reap. */
static void flush_all(net_rdv_t *r)
{
    for (int i = 0; i < r->size; i++)
        if (r->fd[i] >= 0 && r->tx[i].n &&
            !net_rdv_tx_flush(&r->tx[i], r->fd[i], r->send_ns, &r->clk))
            r->tx[i].failed = true;
}

/* Closes the connections that have not said HELLO by their deadline; what
 * one sent while the server's loop was away is read first (see rank_late). */
static void expire_pending(net_rdv_t *r)
{
    for (int i = r->npend - 1; i >= 0; i--) {
        if (net_rdv_clock_now(&r->clk) < r->pend[i].dl)
            continue;
        int fd = r->pend[i].fd;
        handle_pending(r, i); /* may take it, moving a visited one into i */
        if (i < r->npend && r->pend[i].fd == fd) {
            rdv_pend_t c = pending_take(r, i);
            pend_close(&c);
        }
    }
}

void net_rdv_step(net_rdv_t *r, int timeout_ms)
{
    expire_pending(r);
    reap(r);
    struct pollfd *pfd = r->pfd;
    int *who = r->who;
    int k = 0;
    pfd[k] = (struct pollfd){.fd = r->lfd, .events = POLLIN};
    who[k++] = -1;
    for (int i = 0; i < r->size; i++) {
        if (r->fd[i] < 0)
            continue;
        /* writable only matters while frames wait: else poll would return
         * at once, always */
        short ev = POLLIN | (r->tx[i].n ? POLLOUT : 0);
        pfd[k] = (struct pollfd){.fd = r->fd[i], .events = ev};
        who[k++] = i;
    }
    int npend = r->npend;
    for (int i = 0; i < npend; i++) {
        pfd[k] = (struct pollfd){.fd = r->pend[i].fd, .events = POLLIN};
        who[k++] = -2 - i;
    }
    int ready = poll(pfd, (nfds_t)k, timeout_ms);
    /* pending first, from the end, so that removals do not shift unvisited ones */
    for (int j = k - 1; ready > 0 && j >= 1; j--) {
        if (who[j] <= -2) {
            if (pfd[j].revents & (POLLIN | POLLHUP | POLLERR))
                handle_pending(r, -2 - who[j]);
            continue;
        }
        /* the rank's frames go out in flush_all below */
        if ((pfd[j].revents & (POLLIN | POLLHUP | POLLERR)) && r->fd[who[j]] == pfd[j].fd)
            handle_rank(r, who[j]);
    }
    if (ready > 0 && (pfd[0].revents & POLLIN) && r->npend < RDV_MAX_PENDING) {
        int fd = net_sock_accept(r->lfd);
        if (fd >= 0)
            r->pend[r->npend++] =
                (rdv_pend_t){.fd = fd, .dl = net_rdv_clock_after(&r->clk, r->recv_ns)};
    }
    /* what this step queued (results, notices) goes out now; the drops it
     * caused queue notices, which go out too. Every step, poll's answer or
     * not: a rank reads while its socket has no room for a write */
    flush_all(r);
    reap(r);
    flush_all(r);
}
