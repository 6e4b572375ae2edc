/*
 * libFuzzer harness for a rank's side of the bootstrap (boot.c), which reads
 * whatever the address in GMUX_BOOTSTRAP answers: the harness plays the
 * rendezvous server on a loopback port and sends the input's bytes as its
 * stream. The input:
 *
 *   byte 0  bits 0-1: the job's size - 1; bits 2-3: the rank (mod size);
 *           bit 4: the rank polls once while the stream is still open (a
 *           frame may be half there); bit 5: the stream ends with a reset
 *           (RST) rather than an end of file; bit 6: the rank tries to say BYE (to a
 *           server that is gone by then)
 *   byte 1  four ops, two bits each from the lowest: 0 poll, 1 barrier,
 *           2 allgather of 8 bytes, 3 allgather of 24 bytes (a join's card)
 *   rest    what the server sends, all of it before the first op
 *
 * The stream always ends before the ops, so no read may wait for its
 * deadline (libFuzzer's -timeout catches one that does). No input may crash
 * the rank or leak (ASan); a collective that succeeds hands back size blobs
 * of its length, and once one failed part-way, every later one fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "net/boot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the most of the stream sent: well within a loopback socket's buffers */
#define STREAM_MAX 8192

static int lfd = -1;
static char hostport[32];

static void listen_once(void)
{
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t sl = sizeof(sa);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 8) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0)
        abort();
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
}

static void reset_close(int fd)
{
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close(fd);
}

/* The server's end of the rank's connection. A connect that a signal
 * interrupts (libFuzzer's timer) is tried again on a new socket, and the
 * first may have got into the backlog: such strays are reset. */
static int accept_rank(int rank_fd)
{
    struct sockaddr_in me;
    socklen_t ml = sizeof(me);
    if (getsockname(rank_fd, (struct sockaddr *)&me, &ml) != 0)
        abort();
    for (;;) {
        struct sockaddr_in peer;
        socklen_t pl = sizeof(peer);
        int fd = accept(lfd, (struct sockaddr *)&peer, &pl);
        if (fd < 0)
            abort();
        if (peer.sin_port == me.sin_port)
            return fd;
        reset_close(fd);
    }
}

static gmux_status_t collective(net_boot_t *b, int op, int size)
{
    uint64_t dl = com_deadline_after_ns(10 * COM_NS_PER_S);
    if (op == 1)
        return net_boot_barrier(b, dl);
    uint8_t mine[24];
    uint32_t len = op == 2 ? 8 : 24;
    memset(mine, 0x5a, sizeof(mine));
    void *all = NULL;
    gmux_status_t st = net_boot_allgather(b, mine, len, &all, dl);
    if (st == GMUX_OK) {
        if (!all)
            abort();
        /* every byte of the result is there (ASan reads them) */
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < (size_t)len * (size_t)size; i++)
            sum ^= ((uint8_t *)all)[i];
        (void)sum;
    }
    free(all);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    if (lfd < 0)
        listen_once();
    int nranks = 1 + (data[0] & 3), rank = ((data[0] >> 2) & 3) % nranks;
    net_boot_t *b;
    if (net_boot_open(rank, nranks, hostport, com_deadline_after_ns(10 * COM_NS_PER_S), &b) !=
        GMUX_OK)
        abort(); /* the listener is there: the connection is in its backlog */
    int sfd = accept_rank(b->fd);
    size_t n = size - 2 < STREAM_MAX ? size - 2 : STREAM_MAX;
    if (n)
        (void)!send(sfd, data + 2, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (data[0] & 0x10)
        net_boot_poll(b);
    if (data[0] & 0x20) {
        reset_close(sfd);
        sfd = -1;
    } else {
        shutdown(sfd, SHUT_WR);
    }
    for (int k = 0; k < 4; k++) {
        int op = (data[1] >> (2 * k)) & 3;
        if (op == 0) {
            net_boot_poll(b);
            continue;
        }
        bool broken = b->broken;
        gmux_status_t st = collective(b, op, nranks);
        if (broken && st == GMUX_OK)
            abort(); /* a broken connection must refuse every later collective */
    }
    /* the server's end goes first, and by a reset: neither end stays in
     * TIME_WAIT, which millions of inputs would fill the ports with */
    if (sfd >= 0)
        reset_close(sfd);
    net_boot_close(b, (data[0] & 0x40) != 0);
    return 0;
}
