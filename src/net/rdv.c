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

/* A frame being gathered from one connection. The server has one thread:
 * it takes what a socket holds and goes back to poll, so a peer that stops
 * halfway through a frame (stopped, slow, hostile) holds nobody else's
 * HELLO, collective or death notice. */
typedef struct rdv_rx {
    net_boot_hdr_t h;
    void *p;      /* payload, allocated once the header is judged */
    uint32_t got; /* bytes of header, then payload, received */
    /* set by the frame's first byte and not renewed by later ones: a peer
     * trickling bytes would otherwise keep its frame open for good */
    uint64_t dl;
} rdv_rx_t;

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
    int *fd;       /* per rank, -1 until HELLO */
    bool *bye;     /* per rank */
    bool *dead;    /* per rank, announced */
    void **blob;   /* per rank, this round's allgather contribution */
    uint32_t *len; /* per rank */
    bool *in;      /* per rank, contributed this round */
    rdv_rx_t *rx;  /* per rank */
    int nin;
    rdv_pend_t pend[RDV_MAX_PENDING]; /* connected, no HELLO yet */
    int npend;
};

static void rx_clear(rdv_rx_t *rx)
{
    free(rx->p);
    rx->p = NULL;
    rx->got = 0;
}

static void pend_close(rdv_pend_t *c)
{
    rx_clear(&c->rx);
    close(c->fd);
}

gmux_status_t net_rdv_create(const char *addr, int size, net_rdv_t **rdv_p)
{
    net_rdv_t *r = calloc(1, sizeof(*r));
    if (!r)
        return GMUX_ERR_NOMEM;
    r->size = size;
    r->fd = malloc((size_t)size * sizeof(int));
    r->bye = calloc((size_t)size, sizeof(bool));
    r->dead = calloc((size_t)size, sizeof(bool));
    r->blob = calloc((size_t)size, sizeof(void *));
    r->len = calloc((size_t)size, sizeof(uint32_t));
    r->in = calloc((size_t)size, sizeof(bool));
    r->rx = calloc((size_t)size, sizeof(rdv_rx_t));
    if (!r->fd || !r->bye || !r->dead || !r->blob || !r->len || !r->in || !r->rx) {
        net_rdv_destroy(r);
        return GMUX_ERR_NOMEM;
    }
    for (int i = 0; i < size; i++)
        r->fd[i] = -1;
    r->lfd = -1;
    gmux_status_t st = net_sock_listen(addr, &r->lfd, &r->port);
    if (st != GMUX_OK) {
        net_rdv_destroy(r);
        return st;
    }
    *rdv_p = r;
    return GMUX_OK;
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
    if (r->lfd >= 0)
        close(r->lfd);
    free(r->fd);
    free(r->bye);
    free(r->dead);
    free(r->blob);
    free(r->len);
    free(r->in);
    free(r->rx);
    free(r);
}

int net_rdv_port(const net_rdv_t *r)
{
    return r->port;
}

bool net_rdv_said_bye(const net_rdv_t *r, int rank)
{
    return r->bye[rank];
}

static void close_rank(net_rdv_t *r, int rank)
{
    close(r->fd[rank]);
    r->fd[rank] = -1;
    rx_clear(&r->rx[rank]);
}

static void send_to(net_rdv_t *r, int rank, uint16_t type, uint32_t hrank, const void *p,
                    uint32_t len)
{
    if (r->fd[rank] < 0)
        return;
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, type, hrank, len};
    uint64_t dl = com_deadline_after_ns(RDV_IO_NS);
    if (net_sock_write_all(r->fd[rank], &h, sizeof(h), dl) != GMUX_OK ||
        (len && net_sock_write_all(r->fd[rank], p, len, dl) != GMUX_OK))
        close_rank(r, rank);
}

static void announce_dead(net_rdv_t *r, int rank)
{
    if (r->dead[rank])
        return;
    r->dead[rank] = true;
    COM_INFO(NET, "rendezvous: rank %d died; telling the others", rank);
    for (int i = 0; i < r->size; i++)
        if (i != rank)
            send_to(r, i, NET_BOOT_DEAD, (uint32_t)rank, NULL, 0);
}

void net_rdv_rank_exited(net_rdv_t *r, int rank, bool failed)
{
    if (rank < 0 || rank >= r->size)
        return;
    if (failed || !r->bye[rank])
        announce_dead(r, rank);
}

static void complete_allgather(net_rdv_t *r)
{
    size_t total = 0;
    for (int i = 0; i < r->size; i++)
        total += 4 + r->len[i];
    char *buf = malloc(total ? total : 1);
    if (!buf)
        return;
    char *q = buf;
    for (int i = 0; i < r->size; i++) {
        memcpy(q, &r->len[i], 4);
        if (r->len[i])
            memcpy(q + 4, r->blob[i], r->len[i]);
        q += 4 + r->len[i];
    }
    for (int i = 0; i < r->size; i++)
        send_to(r, i, NET_BOOT_ALLGATHER, 0, buf, (uint32_t)total);
    free(buf);
    for (int i = 0; i < r->size; i++) {
        free(r->blob[i]);
        r->blob[i] = NULL;
        r->in[i] = false;
    }
    r->nin = 0;
}

enum rx_result { RX_MORE, RX_FRAME, RX_BAD };

/* Takes what fd holds of the frame in rx, whose payload may be max_len bytes
 * at most, without waiting; RX_FRAME when the frame is complete (rx->p is
 * then the caller's), RX_BAD when the connection is unusable (closed, or a
 * frame that is not ours). Reads no byte past the frame: the next one may
 * belong to the rank a HELLO makes of the connection. */
static enum rx_result rx_feed(int fd, rdv_rx_t *rx, uint32_t max_len)
{
    const uint32_t hsz = (uint32_t)sizeof(rx->h);
    for (;;) {
        char *dst = rx->got < hsz ? (char *)&rx->h + rx->got : (char *)rx->p + (rx->got - hsz);
        size_t want = rx->got < hsz ? hsz - rx->got : (size_t)rx->h.len + hsz - rx->got;
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
            if (rx->h.len && !(rx->p = malloc(rx->h.len)))
                return RX_BAD;
        }
        if (rx->got >= hsz && rx->got - hsz == rx->h.len)
            return RX_FRAME;
    }
}

/* The rank's connection is gone: without a BYE that is a death. */
static void drop_rank(net_rdv_t *r, int rank)
{
    close_rank(r, rank);
    if (!r->bye[rank])
        announce_dead(r, rank);
}

static void handle_rank(net_rdv_t *r, int rank)
{
    rdv_rx_t *rx = &r->rx[rank];
    enum rx_result res = rx_feed(r->fd[rank], rx, NET_BOOT_MAX_LEN);
    if (res == RX_BAD)
        drop_rank(r, rank);
    if (res != RX_FRAME)
        return;
    net_boot_hdr_t h = rx->h;
    void *p = rx->p;
    rx->p = NULL;
    rx_clear(rx);
    if (h.type == NET_BOOT_BYE) {
        r->bye[rank] = true;
    } else if (h.type == NET_BOOT_ALLGATHER && !r->in[rank]) {
        r->blob[rank] = p;
        r->len[rank] = h.len;
        r->in[rank] = true;
        p = NULL;
        if (++r->nin == r->size)
            complete_allgather(r);
    }
    free(p);
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
    enum rx_result res = rx_feed(r->pend[i].fd, &r->pend[i].rx, 4);
    if (res == RX_MORE)
        return;
    rdv_pend_t c = pending_take(r, i);
    net_boot_hdr_t h = c.rx.h;
    uint32_t sz = 0;
    if (res == RX_BAD || h.type != NET_BOOT_HELLO || h.len != 4) {
        pend_close(&c);
        return;
    }
    memcpy(&sz, c.rx.p, 4);
    rx_clear(&c.rx);
    /* a rank joins once: one that died or left keeps its place empty */
    if (sz != (uint32_t)r->size || h.rank >= (uint32_t)r->size || r->fd[h.rank] >= 0 ||
        r->dead[h.rank] || r->bye[h.rank]) {
        COM_WARN(NET, "rendezvous: bad HELLO (rank %u, size %u)", h.rank, sz);
        close(c.fd);
        return;
    }
    r->fd[h.rank] = c.fd;
}

void net_rdv_step(net_rdv_t *r, int timeout_ms)
{
    for (int i = r->npend - 1; i >= 0; i--) {
        if (com_deadline_passed(r->pend[i].dl)) {
            rdv_pend_t c = pending_take(r, i);
            pend_close(&c);
        }
    }
    for (int i = 0; i < r->size; i++)
        if (r->fd[i] >= 0 && r->rx[i].got && com_deadline_passed(r->rx[i].dl))
            drop_rank(r, i);
    int n = 1 + r->size + r->npend;
    struct pollfd *pfd = calloc((size_t)n, sizeof(*pfd));
    int *who = calloc((size_t)n, sizeof(int));
    if (!pfd || !who)
        goto free_all;
    int k = 0;
    pfd[k].fd = r->lfd;
    pfd[k].events = POLLIN;
    who[k++] = -1;
    for (int i = 0; i < r->size; i++) {
        if (r->fd[i] < 0)
            continue;
        pfd[k].fd = r->fd[i];
        pfd[k].events = POLLIN;
        who[k++] = i;
    }
    int npend = r->npend;
    for (int i = 0; i < npend; i++) {
        pfd[k].fd = r->pend[i].fd;
        pfd[k].events = POLLIN;
        who[k++] = -2 - i;
    }
    if (poll(pfd, (nfds_t)k, timeout_ms) <= 0)
        goto free_all;
    /* pending first, from the end, so that removals do not shift unvisited ones */
    for (int j = k - 1; j >= 1; j--) {
        if (!(pfd[j].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        if (who[j] <= -2)
            handle_pending(r, -2 - who[j]);
        else if (r->fd[who[j]] == pfd[j].fd)
            handle_rank(r, who[j]);
    }
    if ((pfd[0].revents & POLLIN) && r->npend < RDV_MAX_PENDING) {
        int fd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            r->pend[r->npend++] = (rdv_pend_t){.fd = fd, .dl = com_deadline_after_ns(RDV_IO_NS)};
    }
free_all:
    free(pfd);
    free(who);
}
