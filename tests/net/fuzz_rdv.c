/*
 * libFuzzer harness for the rendezvous server (rdv.c), which reads frames
 * from any process that connects to its port. The input scripts a job:
 *
 *   byte 0          the job's size - 1 (mod 4)
 *   then ops, each one byte h, slot = h & 3, op = (h >> 2) & 3:
 *     0  write the next n bytes (n: the byte after h) on connection slot
 *     1  reset connection slot (RST) and open a new one in its place
 *     2  the launcher sees rank (h >> 4) % size exit (failed when h & 0x80)
 *     3  a well-formed HELLO of rank (h >> 4) % size on connection slot (so
 *        that mutated inputs get past joining; the size is the job's
 *        unless h & 0x80)
 *   after each op the server takes a few steps, none of which may wait.
 * (net_rdv_drain is left out: on a rank that has not exited it waits
 * 100 ms for an end of file, by design.)
 *
 * No input may crash the server, leak (ASan) or make a step block; what
 * the server sends back is read and checked to be whole frames of ours.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/boot_proto.h"
#include "net/rdv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SLOTS 4

/* A connection to the server, and what it has been sent so far (the start
 * of the frame being received: its header). */
typedef struct conn {
    int fd;
    uint8_t hdr[sizeof(net_boot_hdr_t)];
    uint32_t got;  /* bytes of the current frame received */
    uint64_t left; /* payload bytes of it still to come */
} conn_t;

static int conn_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Closes with a reset: no TIME_WAIT left behind by millions of inputs. */
static void conn_reset(conn_t *c)
{
    if (c->fd < 0)
        return;
    struct linger l = {1, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close(c->fd);
    c->fd = -1;
}

/* Reads what the server sent and checks it is a sequence of its frames. */
static void conn_read(conn_t *c)
{
    uint8_t buf[4096];
    for (;;) {
        ssize_t n = c->fd >= 0 ? recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT) : -1;
        if (n <= 0)
            return;
        for (ssize_t i = 0; i < n;) {
            if (c->left) {
                uint64_t take = (uint64_t)(n - i) < c->left ? (uint64_t)(n - i) : c->left;
                c->left -= take;
                i += (ssize_t)take;
                continue;
            }
            c->hdr[c->got++] = buf[i++];
            if (c->got < sizeof(c->hdr))
                continue;
            net_boot_hdr_t h;
            memcpy(&h, c->hdr, sizeof(h));
            if (h.magic != NET_BOOT_MAGIC || h.version != NET_BOOT_VERSION ||
                h.len > NET_BOOT_MAX_LEN ||
                (h.type != NET_BOOT_ALLGATHER && h.type != NET_BOOT_DEAD &&
                 h.type != NET_BOOT_ERROR))
                abort(); /* the server sent something that is not a frame of ours */
            c->got = 0;
            c->left = h.len;
        }
    }
}

static void steps(net_rdv_t *r, conn_t *c)
{
    for (int i = 0; i < 3; i++) {
        net_rdv_step(r, 0);
        for (int k = 0; k < SLOTS; k++)
            conn_read(&c[k]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int nranks = 1 + data[0] % 4;
    net_rdv_t *r;
    if (net_rdv_create("127.0.0.1", nranks, &r, NULL, 0) != GMUX_OK)
        return 0;
    int port = net_rdv_port(r);
    conn_t c[SLOTS];
    for (int k = 0; k < SLOTS; k++)
        c[k] = (conn_t){.fd = conn_open(port)};
    steps(r, c);
    for (size_t i = 1; i < size;) {
        uint8_t h = data[i++];
        conn_t *cn = &c[h & 3];
        int rank = (h >> 4) % nranks;
        switch ((h >> 2) & 3) {
        case 0: {
            size_t n = i < size ? data[i++] : 0;
            n = n < size - i ? n : size - i;
            if (cn->fd >= 0 && n)
                (void)!send(cn->fd, data + i, n, MSG_NOSIGNAL | MSG_DONTWAIT);
            i += n;
            break;
        }
        case 1:
            conn_reset(cn);
            *cn = (conn_t){.fd = conn_open(port)};
            break;
        case 2:
            net_rdv_rank_exited(r, rank, (h & 0x80) != 0);
            break;
        default: {
            struct {
                net_boot_hdr_t h;
                uint32_t size;
            } m = {{NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_HELLO, (uint32_t)rank, 4},
                   (uint32_t)nranks + ((h & 0x80) ? 1u : 0u)};
            if (cn->fd >= 0)
                (void)!send(cn->fd, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT);
            break;
        }
        }
        steps(r, c);
    }
    for (int k = 0; k < SLOTS; k++)
        conn_reset(&c[k]);
    steps(r, c);
    net_rdv_destroy(r);
    return 0;
}
