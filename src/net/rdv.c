/* net_rdv: see rdv.h; the wire format is in boot_proto.h. */
#include "net/rdv.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "net/boot_proto.h"
#include "net/sock.h"

#define RDV_MAX_PENDING 256
#define RDV_IO_NS       (5 * COM_NS_PER_S)
/* what a rank may leave queued and unread: the largest frame it accepts
 * (an allgather's result) and room for notices behind it */
#define RDV_TXQ_MAX   ((size_t)NET_BOOT_MAX_LEN + ((size_t)1 << 20))
#define RDV_TXQ_SLOTS 8u /* frames a queue holds before it grows */

#ifdef NET_RDV_TEST_ALLOC
/* the seam tests/net/test_rdv_alloc.c fails allocations with; other builds
 * have none */
bool net_rdv_test_alloc_fails(size_t n);
#else
#define net_rdv_test_alloc_fails(n) false
#endif

/* Every allocation of the server goes through these, so a test can fail
 * any of them. */
static void *rdv_malloc(size_t n)
{
    return net_rdv_test_alloc_fails(n) ? NULL : malloc(n);
}

static void *rdv_calloc(size_t n, size_t sz)
{
    return net_rdv_test_alloc_fails(n * sz) ? NULL : calloc(n, sz);
}

static void *rdv_realloc(void *p, size_t n)
{
    return net_rdv_test_alloc_fails(n) ? NULL : realloc(p, n);
}

/* What a read of a connection gave: part of a frame, a whole frame, or a
 * connection that is unusable (rx_feed). */
enum rx_result { RX_MORE, RX_FRAME, RX_BAD };

/* A frame being gathered from one connection. The server has one thread:
 * it takes what a socket holds and goes back to poll, so a peer that stops
 * halfway through a frame (stopped, slow, hostile) holds nobody else's
 * HELLO, collective or death notice. */
typedef struct rdv_rx {
    net_boot_hdr_t h;
    void *p;      /* payload, allocated once the header is judged */
    uint32_t got; /* bytes of header, then payload, received */
    /* the payload could not be allocated: it is read and thrown away, so
     * that the connection stays in step and the failure can be answered */
    bool skip;
    /* a HELLO's payload: a connection that is not yet a rank costs no
     * allocation */
    char small[4];
    /* set by the frame's first byte and not renewed by later ones: a peer
     * trickling bytes would otherwise keep its frame open for good */
    uint64_t dl;
} rdv_rx_t;

/* A payload sent to several ranks (an allgather's result), freed when the
 * last queue holding it has written it. */
typedef struct rdv_buf {
    unsigned refs;
    char bytes[];
} rdv_buf_t;

/* A frame queued for a rank. */
typedef struct rdv_out {
    net_boot_hdr_t h;
    rdv_buf_t *p; /* h.len bytes; NULL when h.len is 0 */
} rdv_out_t;

/* The frames a rank has not taken from its socket yet. The server never
 * waits for a socket to take them: they leave as poll says it is
 * writable, so a rank that stops reading holds nobody else; it is dropped
 * when its queue passes txq_max bytes, or when its socket has taken nothing
 * for send_ns while frames wait. A rank that reads slowly but steadily is
 * kept: a 64 MiB result may take it longer than send_ns, and only it waits
 * for it (the next collective needs its contribution, sent after). */
typedef struct rdv_tx {
    rdv_out_t *q; /* q[head .. head + n) */
    uint32_t head, n, cap;
    uint32_t off; /* bytes of q[head] written */
    size_t bytes; /* bytes queued and not written */
    /* while frames wait: when the socket must have taken a byte, renewed
     * by every write and set when the queue stops being empty */
    uint64_t dl;
    /* a frame could not be queued (full, or no memory): the rank is
     * dropped before anything else is sent */
    bool failed;
} rdv_tx_t;

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
    net_rdv_gone_fn on_gone; /* may be NULL */
    void *on_gone_arg;
};

static void rx_clear(rdv_rx_t *rx)
{
    free(rx->p);
    rx->p = NULL;
    rx->got = 0;
    rx->skip = false;
}

static void pend_close(rdv_pend_t *c)
{
    rx_clear(&c->rx);
    close(c->fd);
}

static void buf_put(rdv_buf_t *b)
{
    if (b && --b->refs == 0)
        free(b);
}

/* Forgets every queued frame; keeps the array. */
static void tx_clear(rdv_tx_t *tx)
{
    for (uint32_t i = 0; i < tx->n; i++)
        buf_put(tx->q[tx->head + i].p);
    tx->head = tx->n = tx->off = 0;
    tx->bytes = 0;
    tx->failed = false;
}

gmux_status_t net_rdv_create(const char *addr, int size, net_rdv_t **rdv_p)
{
    net_rdv_t *r = rdv_calloc(1, sizeof(*r));
    if (!r)
        return GMUX_ERR_NOMEM;
    r->size = size;
    r->send_ns = RDV_IO_NS;
    r->txq_max = RDV_TXQ_MAX;
    r->lfd = -1;
    r->fd = rdv_malloc((size_t)size * sizeof(int));
    r->bye = rdv_calloc((size_t)size, sizeof(bool));
    r->dead = rdv_calloc((size_t)size, sizeof(bool));
    r->left = rdv_calloc((size_t)size, sizeof(bool));
    r->blob = rdv_calloc((size_t)size, sizeof(void *));
    r->len = rdv_calloc((size_t)size, sizeof(uint32_t));
    r->in = rdv_calloc((size_t)size, sizeof(bool));
    r->rx = rdv_calloc((size_t)size, sizeof(rdv_rx_t));
    r->tx = rdv_calloc((size_t)size, sizeof(rdv_tx_t));
    r->pfd = rdv_calloc(1 + (size_t)size + RDV_MAX_PENDING, sizeof(*r->pfd));
    r->who = rdv_calloc(1 + (size_t)size + RDV_MAX_PENDING, sizeof(int));
    r->left_note = rdv_malloc(sizeof(rdv_buf_t) + sizeof(uint32_t));
    if (!r->fd || !r->bye || !r->dead || !r->left || !r->blob || !r->len || !r->in || !r->rx ||
        !r->tx || !r->pfd || !r->who || !r->left_note)
        goto destroy;
    r->left_note->refs = 1; /* the server's own, until destroy */
    uint32_t why = NET_BOOT_GONE_LEFT;
    memcpy(r->left_note->bytes, &why, sizeof(why));
    for (int i = 0; i < size; i++) {
        r->fd[i] = -1;
        /* queues exist before any rank joins: a death notice or a round's
         * failure can be queued without memory */
        r->tx[i].q = rdv_malloc(RDV_TXQ_SLOTS * sizeof(rdv_out_t));
        if (!r->tx[i].q)
            goto destroy;
        r->tx[i].cap = RDV_TXQ_SLOTS;
    }
    gmux_status_t st = net_sock_listen(addr, &r->lfd, &r->port);
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
        rx_clear(&r->rx[i]);
    for (int i = 0; r->tx && i < r->size; i++) {
        tx_clear(&r->tx[i]);
        free(r->tx[i].q);
    }
    if (r->lfd >= 0)
        close(r->lfd);
    free(r->fd);
    free(r->bye);
    free(r->dead);
    free(r->left);
    buf_put(r->left_note);
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

static enum rx_result take_frame(net_rdv_t *r, int rank);

static void close_rank(net_rdv_t *r, int rank)
{
    close(r->fd[rank]);
    r->fd[rank] = -2; /* joined once: net_rdv_joined */
    rx_clear(&r->rx[rank]);
    tx_clear(&r->tx[rank]);
}

/* Queues a frame for rank (p: h.len bytes, or NULL), taking a reference to
 * p. Sends nothing and drops nobody: a frame that cannot be queued marks
 * the rank failed, and net_rdv_step drops it once every frame of the event
 * at hand is queued (so the others get, say, a round's result before the
 * notice that the rank died). */
static void tx_push(net_rdv_t *r, int rank, uint16_t type, uint32_t hrank, rdv_buf_t *p,
                    uint32_t len)
{
    rdv_tx_t *tx = &r->tx[rank];
    if (r->fd[rank] < 0 || tx->failed)
        return;
    size_t frame = sizeof(net_boot_hdr_t) + len;
    if (tx->bytes + frame > r->txq_max) {
        COM_WARN(NET, "rendezvous: rank %d has left %zu bytes unread; dropping it", rank,
                 tx->bytes);
        tx->failed = true;
        return;
    }
    if (tx->head + tx->n == tx->cap) {
        if (tx->head > 0) {
            memmove(tx->q, tx->q + tx->head, tx->n * sizeof(rdv_out_t));
            tx->head = 0;
        } else {
            rdv_out_t *q = rdv_realloc(tx->q, 2 * (size_t)tx->cap * sizeof(rdv_out_t));
            if (!q) {
                COM_WARN(NET, "rendezvous: no memory to queue a frame for rank %d; dropping it",
                         rank);
                tx->failed = true;
                return;
            }
            tx->q = q;
            tx->cap *= 2;
        }
    }
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, type, hrank, len};
    if (tx->n == 0)
        tx->dl = com_deadline_after_ns(r->send_ns);
    tx->q[tx->head + tx->n++] = (rdv_out_t){h, p};
    if (p)
        p->refs++;
    tx->bytes += frame;
}

/* Writes what rank's socket takes now, without waiting; false when the
 * connection is unusable. Bounded: each pass writes bytes or returns. */
static bool tx_flush(net_rdv_t *r, int rank)
{
    rdv_tx_t *tx = &r->tx[rank];
    const uint32_t hsz = (uint32_t)sizeof(net_boot_hdr_t);
    while (tx->n > 0) {
        rdv_out_t *o = &tx->q[tx->head];
        const char *src =
            tx->off < hsz ? (const char *)&o->h + tx->off : o->p->bytes + (tx->off - hsz);
        size_t want = tx->off < hsz ? hsz - tx->off : (size_t)o->h.len + hsz - tx->off;
        ssize_t n = send(r->fd[rank], src, want, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0)
            return n == 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        tx->off += (uint32_t)n;
        tx->bytes -= (size_t)n;
        tx->dl = com_deadline_after_ns(r->send_ns);
        if (tx->off == hsz + o->h.len) {
            buf_put(o->p);
            tx->head++;
            tx->n--;
            tx->off = 0;
            if (tx->n == 0)
                tx->head = 0;
        }
    }
    return true;
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
    for (int i = 0; i < 64 && take_frame(r, rank) == RX_FRAME; i++)
        ;
    close_rank(r, rank);
    if (gone_counts(r, rank))
        announce_dead(r, rank, r->bye[rank]);
}

/* Drops every rank whose queue failed, whose socket has taken nothing past
 * the send deadline, or whose incoming frame is past its deadline. A drop queues
 * death notices, which may fail other queues: repeated until none is left;
 * each pass drops a rank or ends, so at most size + 1 passes. */
static void reap(net_rdv_t *r)
{
    for (bool again = true; again;) {
        again = false;
        for (int i = 0; i < r->size; i++) {
            rdv_tx_t *tx = &r->tx[i];
            if (r->fd[i] < 0)
                continue;
            bool late_in = r->rx[i].got && com_deadline_passed(r->rx[i].dl);
            bool late_out = tx->n && com_deadline_passed(tx->dl);
            if (late_out)
                COM_WARN(NET, "rendezvous: rank %d has read nothing for %.1f s; dropping it", i,
                         (double)r->send_ns / COM_NS_PER_S);
            if (tx->failed || late_in || late_out) {
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
    if (st == GMUX_OK && !(b = rdv_malloc(sizeof(*b) + total)))
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
    buf_put(b);
    for (int i = 0; i < r->size; i++) {
        free(r->blob[i]);
        r->blob[i] = NULL;
        r->len[i] = 0;
        r->in[i] = false;
    }
    r->nin = 0;
    r->round_st = GMUX_OK;
}

/* Takes what fd holds of the frame in rx, whose payload may be max_len bytes
 * at most, without waiting; RX_FRAME when the frame is complete (rx->p is
 * then the caller's; rx->skip says its payload could not be allocated and
 * was read past; a payload of max_len <= 4 bytes is in rx->small), RX_BAD
 * when the connection is unusable (closed, or a frame that is not ours).
 * Reads no byte past the frame: the next one may belong to the rank a HELLO
 * makes of the connection. */
static enum rx_result rx_feed(int fd, rdv_rx_t *rx, uint32_t max_len)
{
    const uint32_t hsz = (uint32_t)sizeof(rx->h);
    const bool in_small = max_len <= sizeof(rx->small);
    char sink[4096];
    for (;;) {
        char *dst = (char *)&rx->h + rx->got;
        size_t want = hsz - rx->got;
        if (rx->got >= hsz) {
            want = (size_t)rx->h.len + hsz - rx->got;
            dst = in_small ? rx->small + (rx->got - hsz) : (char *)rx->p + (rx->got - hsz);
            if (rx->skip) {
                dst = sink;
                want = want < sizeof(sink) ? want : sizeof(sink);
            }
        }
        ssize_t n = recv(fd, dst, want, MSG_DONTWAIT);
        if (n == 0)
            return RX_BAD;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? RX_MORE : RX_BAD;
        if (rx->got == 0)
            rx->dl = com_deadline_after_ns(RDV_IO_NS);
        rx->got += (uint32_t)n;
        if (rx->got == hsz) {
            /* judged before any payload is taken: a length no frame of ours
             * has would otherwise be allocated and waited for */
            if (rx->h.magic != NET_BOOT_MAGIC || rx->h.version != NET_BOOT_VERSION ||
                rx->h.len > max_len)
                return RX_BAD;
            if (rx->h.len && !in_small && !(rx->p = rdv_malloc(rx->h.len)))
                rx->skip = true;
        }
        if (rx->got >= hsz && rx->got - hsz == rx->h.len)
            return RX_FRAME;
    }
}

/* Reads what rank's socket holds now (it never waits) and acts on one
 * whole frame: a BYE, or its contribution to the round. */
static enum rx_result take_frame(net_rdv_t *r, int rank)
{
    rdv_rx_t *rx = &r->rx[rank];
    enum rx_result res = rx_feed(r->fd[rank], rx, NET_BOOT_MAX_LEN);
    if (res != RX_FRAME)
        return res;
    net_boot_hdr_t h = rx->h;
    bool lost = rx->skip;
    void *p = rx->p;
    rx->p = NULL;
    rx_clear(rx);
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
    return RX_FRAME;
}

static void handle_rank(net_rdv_t *r, int rank)
{
    if (take_frame(r, rank) == RX_BAD)
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
    enum rx_result res = rx_feed(r->pend[i].fd, &r->pend[i].rx, sizeof(uint32_t));
    if (res == RX_MORE)
        return;
    rdv_pend_t c = pending_take(r, i);
    net_boot_hdr_t h = c.rx.h;
    uint32_t sz = 0;
    if (res == RX_BAD || h.type != NET_BOOT_HELLO || h.len != 4) {
        pend_close(&c);
        return;
    }
    memcpy(&sz, c.rx.small, 4);
    rx_clear(&c.rx);
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

/* Writes what every rank's socket takes now; a connection that fails is
 * dropped by the next reap. */
static void flush_all(net_rdv_t *r)
{
    for (int i = 0; i < r->size; i++)
        if (r->fd[i] >= 0 && r->tx[i].n && !tx_flush(r, i))
            r->tx[i].failed = true;
}

void net_rdv_step(net_rdv_t *r, int timeout_ms)
{
    for (int i = r->npend - 1; i >= 0; i--) {
        if (com_deadline_passed(r->pend[i].dl)) {
            rdv_pend_t c = pending_take(r, i);
            pend_close(&c);
        }
    }
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
    if (poll(pfd, (nfds_t)k, timeout_ms) <= 0)
        return;
    /* pending first, from the end, so that removals do not shift unvisited ones */
    for (int j = k - 1; j >= 1; j--) {
        if (who[j] <= -2) {
            if (pfd[j].revents & (POLLIN | POLLHUP | POLLERR))
                handle_pending(r, -2 - who[j]);
            continue;
        }
        /* the rank's frames go out in flush_all below */
        if ((pfd[j].revents & (POLLIN | POLLHUP | POLLERR)) && r->fd[who[j]] == pfd[j].fd)
            handle_rank(r, who[j]);
    }
    if ((pfd[0].revents & POLLIN) && r->npend < RDV_MAX_PENDING) {
        int fd = net_sock_accept(r->lfd);
        if (fd >= 0)
            r->pend[r->npend++] = (rdv_pend_t){.fd = fd, .dl = com_deadline_after_ns(RDV_IO_NS)};
    }
    /* what this step queued (results, notices) goes out now; the drops it
     * caused queue notices, which go out too */
    flush_all(r);
    reap(r);
    flush_all(r);
}
