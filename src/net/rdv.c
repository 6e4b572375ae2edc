/* net_rdv: see rdv.h; the wire format is in boot_proto.h. */
#include "net/rdv.h"

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

struct net_rdv {
    int lfd, port, size;
    int *fd;       /* per rank, -1 until HELLO */
    bool *bye;     /* per rank */
    bool *dead;    /* per rank, announced */
    void **blob;   /* per rank, this round's allgather contribution */
    uint32_t *len; /* per rank */
    bool *in;      /* per rank, contributed this round */
    int nin;
    int pend[RDV_MAX_PENDING]; /* connected, no HELLO yet */
    /* when each must have said HELLO: a connection that never does (not a
     * rank) would otherwise hold its place for good, and a full table keeps
     * every rank out */
    uint64_t pend_dl[RDV_MAX_PENDING];
    int npend;
};

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
    if (!r->fd || !r->bye || !r->dead || !r->blob || !r->len || !r->in) {
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
        close(r->pend[i]);
    for (int i = 0; r->blob && i < r->size; i++)
        free(r->blob[i]);
    if (r->lfd >= 0)
        close(r->lfd);
    free(r->fd);
    free(r->bye);
    free(r->dead);
    free(r->blob);
    free(r->len);
    free(r->in);
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

static void send_to(net_rdv_t *r, int rank, uint16_t type, uint32_t hrank, const void *p,
                    uint32_t len)
{
    if (r->fd[rank] < 0)
        return;
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, type, hrank, len};
    uint64_t dl = com_deadline_after_ns(RDV_IO_NS);
    if (net_sock_write_all(r->fd[rank], &h, sizeof(h), dl) != GMUX_OK ||
        (len && net_sock_write_all(r->fd[rank], p, len, dl) != GMUX_OK)) {
        close(r->fd[rank]);
        r->fd[rank] = -1;
    }
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

/* Reads one frame of at most max_len payload bytes from fd; returns false
 * when the connection is unusable. The header is judged before the payload
 * is read: the server has one thread, and a payload that is not coming
 * would stall it until the deadline. */
static bool read_frame(int fd, net_boot_hdr_t *h, void **p, uint32_t max_len)
{
    uint64_t dl = com_deadline_after_ns(RDV_IO_NS);
    *p = NULL;
    if (net_sock_read_all(fd, h, sizeof(*h), dl) != GMUX_OK || h->magic != NET_BOOT_MAGIC ||
        h->version != NET_BOOT_VERSION || h->len > max_len)
        return false;
    if (h->len == 0)
        return true;
    *p = malloc(h->len);
    if (!*p || net_sock_read_all(fd, *p, h->len, dl) != GMUX_OK) {
        free(*p);
        *p = NULL;
        return false;
    }
    return true;
}

static void handle_rank(net_rdv_t *r, int rank)
{
    net_boot_hdr_t h;
    void *p;
    if (!read_frame(r->fd[rank], &h, &p, NET_BOOT_MAX_LEN)) {
        close(r->fd[rank]);
        r->fd[rank] = -1;
        if (!r->bye[rank])
            announce_dead(r, rank);
        return;
    }
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
static int pending_take(net_rdv_t *r, int i)
{
    int fd = r->pend[i];
    r->npend--;
    r->pend[i] = r->pend[r->npend];
    r->pend_dl[i] = r->pend_dl[r->npend];
    return fd;
}

static void handle_pending(net_rdv_t *r, int i)
{
    int fd = pending_take(r, i);
    net_boot_hdr_t h;
    void *p;
    uint32_t sz = 0;
    if (!read_frame(fd, &h, &p, 4) || h.type != NET_BOOT_HELLO || h.len != 4) {
        free(p);
        close(fd);
        return;
    }
    memcpy(&sz, p, 4);
    free(p);
    /* a rank joins once: one that died or left keeps its place empty */
    if (sz != (uint32_t)r->size || h.rank >= (uint32_t)r->size || r->fd[h.rank] >= 0 ||
        r->dead[h.rank] || r->bye[h.rank]) {
        COM_WARN(NET, "rendezvous: bad HELLO (rank %u, size %u)", h.rank, sz);
        close(fd);
        return;
    }
    r->fd[h.rank] = fd;
}

void net_rdv_step(net_rdv_t *r, int timeout_ms)
{
    for (int i = r->npend - 1; i >= 0; i--)
        if (com_deadline_passed(r->pend_dl[i]))
            close(pending_take(r, i));
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
        pfd[k].fd = r->pend[i];
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
        if (fd >= 0) {
            r->pend_dl[r->npend] = com_deadline_after_ns(RDV_IO_NS);
            r->pend[r->npend++] = fd;
        }
    }
free_all:
    free(pfd);
    free(who);
}
