/* net_boot: see boot.h; the wire format is in boot_proto.h. */
#include "net/boot.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "net/boot_proto.h"
#include "net/sock.h"

/* A DEAD frame (h, its payload p): the rank is gone, and said how. The
 * server says it twice only of a rank it announced as left that then
 * failed (rdv.c, announce_dead). */
static void mark_dead(net_boot_t *boot, const net_boot_hdr_t *h, const void *p)
{
    uint32_t why = 0;
    if (h->len >= sizeof(why))
        memcpy(&why, p, sizeof(why));
    if (h->rank < (uint32_t)boot->size) {
        if (!atomic_exchange(&boot->dead[h->rank], true))
            COM_WARN(NET, "rank %d: rank %u %s", boot->rank, h->rank,
                     why == NET_BOOT_GONE_LEFT ? "left after a death" : "died");
        else if (why != NET_BOOT_GONE_LEFT)
            COM_WARN(NET, "rank %d: rank %u, which had left after a death, failed", boot->rank,
                     h->rank);
    }
    atomic_store(&boot->any_dead, true);
}

static void mark_lost(net_boot_t *boot)
{
    if (!atomic_exchange(&boot->lost, true))
        COM_WARN(NET, "rank %d: lost the launcher connection", boot->rank);
    for (int r = 0; r < boot->size; r++)
        if (r != boot->rank)
            atomic_store(&boot->dead[r], true);
    atomic_store(&boot->any_dead, true);
}

static gmux_status_t send_frame(net_boot_t *boot, uint16_t type, const void *p, uint32_t len,
                                uint64_t deadline_ns)
{
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, type, (uint32_t)boot->rank, len};
    gmux_status_t st = net_sock_write_all(boot->fd, &h, sizeof(h), deadline_ns);
    if (st == GMUX_OK && len)
        st = net_sock_write_all(boot->fd, p, len, deadline_ns);
    return st;
}

gmux_status_t net_boot_open(int rank, int size, const char *hostport, uint64_t deadline_ns,
                            net_boot_t **boot_p)
{
    gmux_status_t st = GMUX_ERR_NOMEM;
    net_boot_t *boot = calloc(1, sizeof(*boot));
    if (!boot)
        return st;
    boot->dead = calloc((size_t)size, sizeof(*boot->dead));
    if (!boot->dead)
        goto free_boot;
    boot->rank = rank;
    boot->size = size;
    pthread_mutex_init(&boot->lock, NULL);
    st = net_sock_connect(hostport, deadline_ns, &boot->fd);
    if (st != GMUX_OK)
        goto destroy_lock;
    uint32_t sz = (uint32_t)size;
    st = send_frame(boot, NET_BOOT_HELLO, &sz, sizeof(sz), deadline_ns);
    if (st != GMUX_OK)
        goto close_fd;
    *boot_p = boot;
    return GMUX_OK;
close_fd:
    close(boot->fd);
destroy_lock:
    pthread_mutex_destroy(&boot->lock);
    free(boot->dead);
free_boot:
    free(boot);
    return st;
}

void net_boot_close(net_boot_t *boot, bool bye)
{
    if (!boot)
        return;
    if (bye && !atomic_load(&boot->lost) && !boot->broken)
        send_frame(boot, NET_BOOT_BYE, NULL, 0, com_deadline_after_ns(COM_NS_PER_S));
    close(boot->fd);
    pthread_mutex_destroy(&boot->lock);
    free(boot->dead);
    free(boot);
}

/* Reads one frame (header and payload into *payload_p, malloc'd when len > 0).
 * LOCKING: boot->lock held. */
static gmux_status_t read_frame(net_boot_t *boot, net_boot_hdr_t *h, void **payload_p,
                                uint64_t deadline_ns)
{
    gmux_status_t st = net_sock_read_all(boot->fd, h, sizeof(*h), deadline_ns);
    if (st != GMUX_OK)
        return st;
    if (h->magic != NET_BOOT_MAGIC || h->version != NET_BOOT_VERSION || h->len > NET_BOOT_MAX_LEN)
        return GMUX_ERR_VERSION;
    *payload_p = NULL;
    if (h->len == 0)
        return GMUX_OK;
    void *p = malloc(h->len);
    if (!p)
        return GMUX_ERR_NOMEM;
    st = net_sock_read_all(boot->fd, p, h->len, deadline_ns);
    if (st != GMUX_OK) {
        free(p);
        return st;
    }
    *payload_p = p;
    return GMUX_OK;
}

/* Whether fd holds a whole frame, or what it holds can only end in a
 * failure (closed, a header not ours): read then, and read_frame says
 * which at once. Else the rest is still on its way (the server writes a
 * header and its payload apart, and may be descheduled between them): the
 * next poll looks again, rather than wait for it and take a late byte for
 * a lost connection. */
static bool whole_frame_in(int fd, short revents)
{
    int avail = 0;
    if (ioctl(fd, FIONREAD, &avail) != 0 || avail <= 0)
        return true; /* end of file, or the socket failed */
    bool closing = (revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    net_boot_hdr_t h;
    if ((size_t)avail < sizeof(h))
        return closing;
    if (recv(fd, &h, sizeof(h), MSG_PEEK) != (ssize_t)sizeof(h))
        return true;
    if (h.magic != NET_BOOT_MAGIC || h.version != NET_BOOT_VERSION || h.len > NET_BOOT_MAX_LEN)
        return true;
    return closing || (size_t)avail >= sizeof(h) + h.len;
}

void net_boot_poll(net_boot_t *boot)
{
    if (!boot || atomic_load_explicit(&boot->lost, memory_order_relaxed))
        return;
    if (pthread_mutex_trylock(&boot->lock) != 0)
        return;
    for (int i = 0; !boot->broken && i < 1024; i++) {
        struct pollfd pfd = {.fd = boot->fd, .events = POLLIN | POLLRDHUP};
        if (poll(&pfd, 1, 0) <= 0 || !whole_frame_in(boot->fd, pfd.revents))
            break;
        net_boot_hdr_t h;
        void *p;
        gmux_status_t st = read_frame(boot, &h, &p, com_deadline_after_ns(COM_NS_PER_S));
        if (st != GMUX_OK) {
            mark_lost(boot);
            break;
        }
        if (h.type == NET_BOOT_DEAD)
            mark_dead(boot, &h, p);
        free(p);
    }
    pthread_mutex_unlock(&boot->lock);
}

/* The status an ERROR frame carries, negated in its rank field; one this
 * build does not know reads as GMUX_ERR_PEER. */
static gmux_status_t error_status(uint32_t code)
{
    if (code == 0 || code > 4096)
        return GMUX_ERR_PEER;
    gmux_status_t st = (gmux_status_t)(-(int)code);
    return strcmp(gmux_status_name(st), "GMUX_STATUS_UNKNOWN") != 0 ? st : GMUX_ERR_PEER;
}

gmux_status_t net_boot_allgather(net_boot_t *boot, const void *mine, uint32_t len, void **all_p,
                                 uint64_t deadline_ns)
{
    if (atomic_load(&boot->any_dead))
        return GMUX_ERR_PEER;
    pthread_mutex_lock(&boot->lock);
    if (boot->broken) {
        pthread_mutex_unlock(&boot->lock);
        return GMUX_ERR_STATE;
    }
    /* io: the socket's failure; st: the collective's */
    gmux_status_t io = send_frame(boot, NET_BOOT_ALLGATHER, mine, len, deadline_ns);
    gmux_status_t st = GMUX_OK;
    void *p = NULL;
    uint32_t plen = 0;
    while (io == GMUX_OK) {
        net_boot_hdr_t h;
        io = read_frame(boot, &h, &p, deadline_ns);
        if (io != GMUX_OK)
            break;
        if (h.type == NET_BOOT_DEAD) {
            mark_dead(boot, &h, p);
            free(p);
            p = NULL;
            st = GMUX_ERR_PEER;
            break;
        }
        if (h.type == NET_BOOT_ALLGATHER) {
            plen = h.len;
            break;
        }
        free(p);
        p = NULL;
        if (h.type == NET_BOOT_ERROR) {
            st = error_status(h.rank);
            COM_WARN(NET, "rank %d: the rendezvous failed this collective on every rank: %s",
                     boot->rank, gmux_status_str(st));
            break;
        }
    }
    if (io == GMUX_ERR_CLOSED || io == GMUX_ERR_VERSION) {
        mark_lost(boot);
        st = GMUX_ERR_PEER;
    } else if (io != GMUX_OK) {
        /* part of a frame may be read or written, and the result is still
         * to come: the next collective would take it for its own */
        COM_WARN(NET,
                 "rank %d: a bootstrap collective failed part-way (%s); the connection "
                 "is out of step and no further collective will run",
                 boot->rank, gmux_status_str(io));
        boot->broken = true;
        st = io;
    }
    pthread_mutex_unlock(&boot->lock);
    if (st != GMUX_OK)
        return st;
    /* payload: per rank, u32 length then blob; all lengths must equal len */
    if (plen != (size_t)boot->size * (4 + (size_t)len)) {
        free(p);
        return GMUX_ERR_PARSE;
    }
    char *out = malloc(len ? (size_t)len * (size_t)boot->size : 1);
    if (!out) {
        free(p);
        return GMUX_ERR_NOMEM;
    }
    const char *q = p;
    for (int r = 0; r < boot->size && st == GMUX_OK; r++) {
        uint32_t l;
        memcpy(&l, q, 4);
        if (l != len) {
            st = GMUX_ERR_PARSE;
            break;
        }
        memcpy(out + (size_t)r * len, q + 4, len);
        q += 4 + len;
    }
    free(p);
    if (st != GMUX_OK) {
        free(out);
        return st;
    }
    *all_p = out;
    return GMUX_OK;
}

gmux_status_t net_boot_barrier(net_boot_t *boot, uint64_t deadline_ns)
{
    void *all = NULL;
    gmux_status_t st = net_boot_allgather(boot, NULL, 0, &all, deadline_ns);
    free(all);
    return st;
}
