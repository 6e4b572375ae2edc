/* A rank's end of a rendezvous connection played by a test with a plain
 * socket, and the server's end of it found among the test's descriptors
 * (test_rdv_queue, test_rdv_clock); include after cmocka.h. */
#ifndef GMUX_TESTS_NET_TRDV_H
#define GMUX_TESTS_NET_TRDV_H

#include <stdint.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/boot_proto.h"

/* a plain socket connected to the server on loopback, with a receive
 * buffer of rcvbuf bytes (fixed: no autotuning) */
static inline int plain_connect(int port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* rank's HELLO, for a job of size ranks, written into fd */
static inline void say_hello(int fd, int rank, int size)
{
    struct {
        net_boot_hdr_t h;
        uint32_t size;
    } m = {{NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_HELLO, (uint32_t)rank, 4}, (uint32_t)size};
    assert_int_equal(write(fd, &m, sizeof(m)), (ssize_t)sizeof(m));
}

/* a rank's plain socket with a receive buffer of rcvbuf bytes, HELLO said */
static inline int rank_connect(int port, int rank, int size, int rcvbuf)
{
    int fd = plain_connect(port, rcvbuf);
    say_hello(fd, rank, size);
    return fd;
}

/* The server's end of a rank's connection, found among this process's
 * descriptors: a connected (not listening) TCP socket on the server's port. */
static inline int server_end(int port, int client_fd)
{
    struct sockaddr_in peer;
    socklen_t plen = sizeof(peer);
    assert_int_equal(getsockname(client_fd, (struct sockaddr *)&peer, &plen), 0);
    for (int fd = 3; fd < 1024; fd++) {
        struct sockaddr_in here, other;
        socklen_t hl = sizeof(here), ol = sizeof(other);
        int listening = 0;
        socklen_t ll = sizeof(listening);
        if (fd == client_fd || getsockname(fd, (struct sockaddr *)&here, &hl) != 0 ||
            here.sin_family != AF_INET || ntohs(here.sin_port) != port ||
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) != 0 || listening ||
            getpeername(fd, (struct sockaddr *)&other, &ol) != 0 || other.sin_port != peer.sin_port)
            continue;
        return fd;
    }
    return -1;
}

#endif /* GMUX_TESTS_NET_TRDV_H */
