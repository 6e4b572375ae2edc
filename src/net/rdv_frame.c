/* net_rdv's frame I/O: see rdv_frame.h; the server is rdv.c. */
#include "net/rdv_frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common/log.h"

#ifdef NET_RDV_TEST_ALLOC
/* the seam tests/net/test_rdv_alloc.c fails allocations with; other builds
 * have none */
bool net_rdv_test_alloc_fails(size_t n);
#else
#define net_rdv_test_alloc_fails(n) false
#endif

uint64_t net_rdv_clock_now(const rdv_clock_t *clk)
{
    return clk && clk->now ? clk->now(clk->arg) : com_clock_ns();
}

uint64_t net_rdv_clock_after(const rdv_clock_t *clk, uint64_t ns)
{
    uint64_t now = net_rdv_clock_now(clk);
    return ns == UINT64_MAX || ns > UINT64_MAX - now ? UINT64_MAX : now + ns;
}

void *net_rdv_malloc(size_t n)
{
    return net_rdv_test_alloc_fails(n) ? NULL : malloc(n);
}

void *net_rdv_calloc(size_t n, size_t sz)
{
    return net_rdv_test_alloc_fails(n * sz) ? NULL : calloc(n, sz);
}

void *net_rdv_realloc(void *p, size_t n)
{
    return net_rdv_test_alloc_fails(n) ? NULL : realloc(p, n);
}

void net_rdv_rx_clear(rdv_rx_t *rx)
{
    free(rx->p);
    rx->p = NULL;
    rx->got = 0;
    rx->skip = false;
}

/* Whether the whole header in rx is one of ours, with a payload of max_len
 * bytes at most. */
static bool header_ok(const rdv_rx_t *rx, uint32_t max_len)
{
    return rx->h.magic == NET_BOOT_MAGIC && rx->h.version == NET_BOOT_VERSION &&
           rx->h.len <= max_len;
}

/* Takes what fd holds of the frame in rx, whose payload may be max_len bytes
 * at most, without waiting; RDV_RX_FRAME when the frame is complete (rx->p is
 * then the caller's; rx->skip says its payload could not be allocated and
 * was read past; a payload of max_len <= 4 bytes is in rx->small), RDV_RX_BAD
 * when the connection is unusable (closed, or a frame that is not ours).
 * Reads no byte past the frame: the next one may belong to the rank a HELLO
 * makes of the connection. A header judged bad stays bad: a later call (the
 * server's drop reads what a connection still holds) reads nothing more,
 * where it used to read the payload that header announced into rx->p, NULL
 * (or into rx->small, past its 4 bytes, for a HELLO's max_len). */
enum rdv_rx_result net_rdv_rx_feed(int fd, rdv_rx_t *rx, uint32_t max_len, uint64_t wait_ns,
                                   const rdv_clock_t *clk)
{
    const uint32_t hsz = (uint32_t)sizeof(rx->h);
    const bool in_small = max_len <= sizeof(rx->small);
    char sink[4096];
    if (rx->got >= hsz && !header_ok(rx, max_len))
        return RDV_RX_BAD;
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
            return RDV_RX_BAD;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? RDV_RX_MORE
                                                                             : RDV_RX_BAD;
        if (rx->got == 0)
            rx->dl = net_rdv_clock_after(clk, wait_ns);
        rx->got += (uint32_t)n;
        if (rx->got == hsz) {
            /* judged before any payload is taken: a length no frame of ours
             * has would otherwise be allocated and waited for */
            if (!header_ok(rx, max_len))
                return RDV_RX_BAD;
            if (rx->h.len && !in_small && !(rx->p = net_rdv_malloc(rx->h.len)))
                rx->skip = true;
        }
        if (rx->got >= hsz && rx->got - hsz == rx->h.len)
            return RDV_RX_FRAME;
    }
}

void net_rdv_buf_put(rdv_buf_t *b)
{
    if (b && --b->refs == 0)
        free(b);
}

/* Forgets every queued frame; keeps the array. */
void net_rdv_tx_clear(rdv_tx_t *tx)
{
    for (uint32_t i = 0; i < tx->n; i++)
        net_rdv_buf_put(tx->q[tx->head + i].p);
    tx->head = tx->n = tx->off = 0;
    tx->bytes = 0;
    tx->unacked = 0;
    tx->failed = false;
}

void net_rdv_tx_push(rdv_tx_t *tx, int rank, const net_boot_hdr_t *h, rdv_buf_t *p,
                     size_t queue_max, uint64_t send_ns, const rdv_clock_t *clk)
{
    if (tx->failed)
        return;
    size_t frame = sizeof(net_boot_hdr_t) + h->len;
    if (tx->bytes + frame > queue_max) {
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
            rdv_out_t *q = net_rdv_realloc(tx->q, 2 * (size_t)tx->cap * sizeof(rdv_out_t));
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
    if (tx->n == 0)
        tx->dl = net_rdv_clock_after(clk, send_ns);
    tx->q[tx->head + tx->n++] = (rdv_out_t){*h, p};
    if (p)
        p->refs++;
    tx->bytes += frame;
}

/* Notes what the peer of fd has read since the last look: bytes the socket
 * held unacknowledged then that its kernel has taken since (it takes them
 * only as the peer reads, once its receive buffer is full). */
static void tx_watch(rdv_tx_t *tx, int fd, uint64_t send_ns, const rdv_clock_t *clk)
{
    int unacked;
    if (ioctl(fd, SIOCOUTQ, &unacked) != 0 || unacked < 0)
        return;
    if ((size_t)unacked < tx->unacked && tx->n)
        tx->dl = net_rdv_clock_after(clk, send_ns);
    tx->unacked = (size_t)unacked;
}

bool net_rdv_tx_flush(rdv_tx_t *tx, int fd, uint64_t send_ns, const rdv_clock_t *clk)
{
    const uint32_t hsz = (uint32_t)sizeof(net_boot_hdr_t);
    while (tx->n > 0) {
        rdv_out_t *o = &tx->q[tx->head];
        const char *src =
            tx->off < hsz ? (const char *)&o->h + tx->off : o->p->bytes + (tx->off - hsz);
        size_t want = tx->off < hsz ? hsz - tx->off : (size_t)o->h.len + hsz - tx->off;
        ssize_t n = send(fd, src, want, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return false;
        if (n <= 0)
            break;
        tx->off += (uint32_t)n;
        tx->bytes -= (size_t)n;
        tx->dl = net_rdv_clock_after(clk, send_ns);
        if (tx->off == hsz + o->h.len) {
            net_rdv_buf_put(o->p);
            tx->head++;
            tx->n--;
            tx->off = 0;
            if (tx->n == 0)
                tx->head = 0;
        }
    }
    tx_watch(tx, fd, send_ns, clk);
    return true;
}
