/*
 * net_rdv's frame I/O (rdv.c is the server): one connection's incoming
 * frame, gathered as its bytes arrive (rdv_rx_t), and a rank's queue of
 * outgoing frames, written as its socket takes them (rdv_tx_t). Neither
 * ever waits for a socket: the server has one thread, and a peer that stops
 * reading or writing halfway holds nobody else. The frames are boot_proto.h's.
 *
 * Every allocation of the server goes through net_rdv_malloc/_calloc/
 * _realloc, so that tests/net/test_rdv_alloc.c (which builds rdv.c and this
 * file with NET_RDV_TEST_ALLOC) can fail any of them.
 *
 * Thread-safety: none (the launcher's loop, as rdv.c).
 */
#ifndef NET_RDV_FRAME_H
#define NET_RDV_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "net/boot_proto.h"
#include "net/rdv.h"

/* the defaults of how long a frame may take to arrive once its first byte
 * did, and a connection to say HELLO, and of a send's deadline */
#define RDV_IO_NS (5 * COM_NS_PER_S)

/* The server's clock (net_rdv_set_clock); where one is given as NULL,
 * com_clock_ns. */
typedef struct rdv_clock {
    net_rdv_clock_fn now;
    void *arg;
} rdv_clock_t;

/* The time on clk now, and ns from now (UINT64_MAX for ns == UINT64_MAX:
 * never). */
uint64_t net_rdv_clock_now(const rdv_clock_t *clk);
uint64_t net_rdv_clock_after(const rdv_clock_t *clk, uint64_t ns);

void *net_rdv_malloc(size_t n);
void *net_rdv_calloc(size_t n, size_t sz);
void *net_rdv_realloc(void *p, size_t n);

/* What a read of a connection gave: part of a frame, a whole frame, or a
 * connection that is unusable (rx_feed). */
enum rdv_rx_result { RDV_RX_MORE, RDV_RX_FRAME, RDV_RX_BAD };

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
 * when its queue passes txq_max bytes, or when it has read nothing for
 * send_ns while frames wait. A rank that reads slowly but steadily is
 * kept: a 64 MiB result may take it longer than send_ns, and only it waits
 * for it (the next collective needs its contribution, sent after). Reading
 * shows as bytes its socket takes, or as bytes the socket held that the
 * rank's kernel acknowledged (SIOCOUTQ falls): a rank with a small receive
 * buffer frees little at a time, and the socket may have no room for a
 * write for longer than send_ns while the rank reads. */
typedef struct rdv_tx {
    rdv_out_t *q; /* q[head .. head + n) */
    uint32_t head, n, cap;
    uint32_t off; /* bytes of q[head] written */
    size_t bytes; /* bytes queued and not written */
    /* while frames wait: when the rank must have read a byte, renewed by
     * every write and every fall of unacked, set when the queue stops being
     * empty */
    uint64_t dl;
    /* the bytes the socket held unacknowledged at the last look (SIOCOUTQ) */
    size_t unacked;
    /* a frame could not be queued (full, or no memory): the rank is
     * dropped before anything else is sent */
    bool failed;
} rdv_tx_t;

/* Frees the payload of rx and readies it for the next frame. */
void net_rdv_rx_clear(rdv_rx_t *rx);

/* Takes what fd holds of the frame in rx, whose payload may be max_len bytes
 * at most, without waiting (see rdv_frame.c); the frame must be whole within
 * wait_ns of its first byte, on clk. */
enum rdv_rx_result net_rdv_rx_feed(int fd, rdv_rx_t *rx, uint32_t max_len, uint64_t wait_ns,
                                   const rdv_clock_t *clk);

/* Drops a reference to b (NULL: nothing); the last frees it. */
void net_rdv_buf_put(rdv_buf_t *b);

/* Forgets every queued frame; keeps the array. */
void net_rdv_tx_clear(rdv_tx_t *tx);

/* Queues the frame h for rank (p: h->len bytes, or NULL), taking a
 * reference to p; queue_max bounds the bytes queued, send_ns is how long
 * (on clk) the socket may then take nothing. Sends nothing and drops
 * nobody: a frame that cannot be queued marks the queue failed (and is said
 * so, naming rank). */
void net_rdv_tx_push(rdv_tx_t *tx, int rank, const net_boot_hdr_t *h, rdv_buf_t *p,
                     size_t queue_max, uint64_t send_ns, const rdv_clock_t *clk);

/* Writes what fd takes now, without waiting, renewing the send deadline by
 * send_ns (on clk) with every write and when the peer has acknowledged
 * bytes since the last look; false when the connection is unusable. */
bool net_rdv_tx_flush(rdv_tx_t *tx, int fd, uint64_t send_ns, const rdv_clock_t *clk);

#endif /* NET_RDV_FRAME_H */
